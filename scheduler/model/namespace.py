"""Namespace (core/v1): only its labels, which pod affinity's ``namespaceSelector`` matches."""

from __future__ import annotations

from pydantic import Field

from scheduler.model.base import KubeModel, ObjectMeta


class Namespace(KubeModel):
    """``core/v1 Namespace``: ``metadata.name`` and ``metadata.labels``."""

    api_version: str = "v1"
    kind: str = "Namespace"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return self.metadata.name
