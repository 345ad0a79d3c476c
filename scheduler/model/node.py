"""Node (core/v1): labels, taints, ``spec.unschedulable``, allocatable and conditions."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property

from pydantic import Field

from scheduler.model.base import ConditionFields, KubeModel, ObjectMeta
from scheduler.model.quantity import NonNegativeQuantity, ResourceList, resource_list


class Taint(KubeModel):
    """``core/v1 Taint``: ``key``, ``value`` and ``effect`` (NoSchedule | PreferNoSchedule | NoExecute)."""

    key: str
    value: str = ""
    effect: str


class NodeSpec(KubeModel):
    """``core/v1 NodeSpec``: the scheduling-relevant fields."""

    unschedulable: bool = False
    taints: tuple[Taint, ...] = ()


class NodeCondition(ConditionFields):
    """``core/v1 NodeCondition``."""


class NodeStatus(KubeModel):
    """``core/v1 NodeStatus``: ``allocatable`` (what pods may request) and ``conditions``.

    Quantities stay the API strings; each is ≥ 0, as the API server's ``ValidateNodeResources`` requires.
    """

    allocatable: dict[str, NonNegativeQuantity] = Field(default_factory=dict)
    capacity: dict[str, NonNegativeQuantity] = Field(default_factory=dict)
    conditions: tuple[NodeCondition, ...] = ()


class Node(KubeModel):
    """``core/v1 Node``."""

    api_version: str = "v1"
    kind: str = "Node"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return self.metadata.name

    @cached_property
    def allocatable(self) -> ResourceList:
        """``status.allocatable`` in integer units (milli-cpu, bytes, counts)."""
        return resource_list(self.status.allocatable)

    def resource_quantities(self) -> Iterator[tuple[str, str, str | int | float]]:
        """``(field path, resource, quantity)`` of ``status.allocatable``, as written (for
        :func:`~scheduler.model.quantity.locate`)."""
        return ((f"status.allocatable.{r}", r, v) for r, v in self.status.allocatable.items())

    def condition(self, type_: str) -> NodeCondition | None:
        """The condition of that type, if the node reports it."""
        return next((c for c in self.status.conditions if c.type == type_), None)
