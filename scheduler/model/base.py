"""The pydantic base for API objects: camelCase aliases, unknown fields ignored, immutable.

Models describe exactly the fields the scheduler reads (design §1); everything else
in an object is ignored so newer servers and extra fields never break parsing.
``tests/unit/model/test_schema.py`` checks every alias against the v1.37 OpenAPI schema.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class KubeModel(BaseModel):
    """Base of every API model: ``snake_case`` attributes, ``camelCase`` on the wire, frozen."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        frozen=True,
    )


class OwnerReference(KubeModel):
    """``metav1.OwnerReference``."""

    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None


class ObjectMeta(KubeModel):
    """``metav1.ObjectMeta``: the identity and bookkeeping fields the scheduler reads."""

    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int | None = None
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner_references: tuple[OwnerReference, ...] = ()


class ConditionFields(KubeModel):
    """The fields every condition shape shares: ``type``, ``status``, ``reason``, ``message``."""

    type: str
    status: str = "Unknown"
    reason: str = ""
    message: str = ""
    last_transition_time: datetime | None = None

    @property
    def is_true(self) -> bool:
        """``status == "True"``."""
        return self.status == "True"


class Condition(ConditionFields):
    """``metav1.Condition``, as on PodGroup / CompositePodGroup status."""

    observed_generation: int | None = None
