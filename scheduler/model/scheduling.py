"""scheduling.k8s.io objects: PodGroup (v1beta1), CompositePodGroup (v1alpha3), Workload (v1beta1),
PriorityClass (v1).

Shapes per the Kubernetes v1.37 API reference (scheduling.k8s.io v1beta1 / v1alpha3) and its OpenAPI schema.
A scheduling policy is a one-of: exactly one of ``basic`` / ``gang`` is set; the validators
here do not enforce that, nor ``minCount`` / ``minGroupCount`` ≥ 1 (the API server does) —
:func:`policy_error` reports those so the tree is marked Invalid with its members, rather than
the group being dropped as if it did not exist. Values of the wrong type or range are refused
when the object is parsed (it is then a load problem, or a cache warning): counts and priorities
are JSON integers within int32 (:data:`~scheduler.model.base.Int32`; ``"2"``, ``true`` and
``10**30`` are not), and a group priority is at most 1e9.
"""

from __future__ import annotations

from typing import Annotated, Literal, NamedTuple

from pydantic import Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from scheduler.model.base import Condition, Int32, KubeModel, ObjectMeta, OwnedObjectMeta

API_GROUP = "scheduling.k8s.io"
PODGROUP_VERSION = "v1beta1"
COMPOSITE_VERSION = "v1alpha3"
WORKLOAD_VERSION = "v1beta1"

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
"""``scheduling.HighestUserDefinablePriority``: the most a PodGroup's or CompositePodGroup's
``priority`` may be (the int32 ``spec.priority`` of ``scheduling.k8s.io/v1beta1`` ``PodGroup`` and ``v1alpha3``
``CompositePodGroup``, ``+k8s:maximum=1000000000``); system priority classes above it are for pods."""

GroupPriority = Annotated[Int32, Field(le=HIGHEST_USER_DEFINABLE_PRIORITY)]
"""``spec.priority`` of a PodGroup / CompositePodGroup: an int32 no larger than 1e9."""

INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"
COMPOSITE_INITIALLY_SCHEDULED = "CompositePodGroupInitiallyScheduled"


class GroupKey(NamedTuple):
    """Identity of a schedulable unit: ``kind`` is PodGroup, CompositePodGroup or Pod."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


class Empty(KubeModel):
    """An empty marker struct (``basic: {}``, ``all: {}``, ``single: {}``)."""


class GangPolicy(KubeModel):
    """``gang: {minCount}`` of a PodGroup."""

    min_count: Int32 | None = None


class CompositeGangPolicy(KubeModel):
    """``gang: {minGroupCount}`` of a CompositePodGroup."""

    min_group_count: Int32 | None = None


class PodGroupSchedulingPolicy(KubeModel):
    """``PodGroupSchedulingPolicy``: one of ``basic`` / ``gang``."""

    basic: Empty | None = None
    gang: GangPolicy | None = None


class CompositePodGroupSchedulingPolicy(KubeModel):
    """``CompositePodGroupSchedulingPolicy``: one of ``basic`` / ``gang``."""

    basic: Empty | None = None
    gang: CompositeGangPolicy | None = None


class TopologyConstraint(KubeModel):
    """``TopologyConstraint``: a node label key whose value all members must share (required, not empty: a
    label key)."""

    key: str = Field(min_length=1)


class SchedulingConstraints(KubeModel):
    """``PodGroupSchedulingConstraints`` / ``CompositePodGroupSchedulingConstraints``: ``topology`` holds at most one
    entry (the API's ``maxItems: 1``: one topology level per group; a tree nests levels by its groups)."""

    topology: tuple[TopologyConstraint, ...] = ()

    @field_validator("topology")
    @classmethod
    def _one_level(cls, topology: tuple[TopologyConstraint, ...]) -> tuple[TopologyConstraint, ...]:
        if len(topology) > 1:  # in the API server's words
            raise PydanticCustomError("too_many", "Too many: {count}: must have at most 1 item",
                                      {"count": len(topology)})
        return topology


PreemptionPolicy = Literal["PreemptLowerPriority", "Never"]
"""A pod's, a group's or a PriorityClass's ``preemptionPolicy``: the API server accepts these two only."""


class DisruptionMode(KubeModel):
    """``DisruptionMode``: one of ``single`` (default) / ``all`` — not both (a one-of the API server enforces)."""

    single: Empty | None = None
    all: Empty | None = None

    @model_validator(mode="after")
    def _one_of(self) -> DisruptionMode:
        if self.single is not None and self.all is not None:
            raise ValueError("must set at most one of single, all")
        return self


class WorkloadReference(KubeModel):
    """``WorkloadReference``: ``{workloadName, templateName}``."""

    workload_name: str = ""
    template_name: str = ""


class PodGroupResourceClaim(KubeModel):
    """``PodGroupResourceClaim``: a claim shared by the whole group (DRAWorkloadResourceClaims)."""

    name: str
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class PodGroupSpec(KubeModel):
    """``scheduling.k8s.io/v1beta1 PodGroupSpec``."""

    parent_composite_pod_group_name: str | None = None
    workload_ref: WorkloadReference | None = None
    scheduling_policy: PodGroupSchedulingPolicy = Field(default_factory=PodGroupSchedulingPolicy)
    scheduling_constraints: SchedulingConstraints | None = None
    resource_claims: tuple[PodGroupResourceClaim, ...] = ()
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str | None = None
    priority: GroupPriority | None = None
    preemption_policy: PreemptionPolicy | None = None


class PodGroupResourceClaimStatus(KubeModel):
    """``PodGroupResourceClaimStatus``: the claim generated for a group claim entry."""

    name: str
    resource_claim_name: str | None = None


class CompositePodGroupStatus(KubeModel):
    """``CompositePodGroupStatus``: conditions only."""

    conditions: tuple[Condition, ...] = ()


class PodGroupStatus(CompositePodGroupStatus):
    """``PodGroupStatus``: conditions and the claims generated for the group's claim entries."""

    resource_claim_statuses: tuple[PodGroupResourceClaimStatus, ...] = ()


class PodGroup(KubeModel):
    """``scheduling.k8s.io/v1beta1 PodGroup``: a leaf of a group tree."""

    api_version: str = f"{API_GROUP}/{PODGROUP_VERSION}"
    kind: str = "PodGroup"
    metadata: OwnedObjectMeta = Field(default_factory=OwnedObjectMeta)
    spec: PodGroupSpec = Field(default_factory=PodGroupSpec)
    status: PodGroupStatus = Field(default_factory=PodGroupStatus)


class CompositePodGroupSpec(KubeModel):
    """``scheduling.k8s.io/v1alpha3 CompositePodGroupSpec``."""

    parent_composite_pod_group_name: str | None = None
    workload_ref: WorkloadReference | None = None
    scheduling_policy: CompositePodGroupSchedulingPolicy = Field(
        default_factory=CompositePodGroupSchedulingPolicy
    )
    scheduling_constraints: SchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str | None = None
    priority: GroupPriority | None = None
    preemption_policy: PreemptionPolicy | None = None


class CompositePodGroup(KubeModel):
    """``scheduling.k8s.io/v1alpha3 CompositePodGroup``: an inner node of a group tree."""

    api_version: str = f"{API_GROUP}/{COMPOSITE_VERSION}"
    kind: str = "CompositePodGroup"
    metadata: OwnedObjectMeta = Field(default_factory=OwnedObjectMeta)
    spec: CompositePodGroupSpec = Field(default_factory=CompositePodGroupSpec)
    status: CompositePodGroupStatus = Field(default_factory=CompositePodGroupStatus)


class TypedLocalObjectReference(KubeModel):
    """``TypedLocalObjectReference`` of a Workload's ``controllerRef`` (``apiGroup``, not ``apiVersion``)."""

    api_group: str | None = None
    kind: str = ""
    name: str = ""


class WorkloadSpec(KubeModel):
    """``scheduling.k8s.io/v1beta1 WorkloadSpec``: read for context only (architecture §1)."""

    controller_ref: TypedLocalObjectReference | None = None


class Workload(KubeModel):
    """``scheduling.k8s.io/v1beta1 Workload``: templates; the scheduler only reports on it."""

    api_version: str = f"{API_GROUP}/{WORKLOAD_VERSION}"
    kind: str = "Workload"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: WorkloadSpec = Field(default_factory=WorkloadSpec)


class PriorityClass(KubeModel):
    """``scheduling.k8s.io/v1 PriorityClass``."""

    api_version: str = f"{API_GROUP}/v1"
    kind: str = "PriorityClass"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    value: Int32 = 0
    global_default: bool = False
    preemption_policy: PreemptionPolicy | None = None


def topology_key(constraints: SchedulingConstraints | None) -> str | None:
    """The one topology key of a group (the API allows at most one), or None."""
    if constraints and constraints.topology:
        return constraints.topology[0].key
    return None


def policy_error(policy: PodGroupSchedulingPolicy | CompositePodGroupSchedulingPolicy) -> str | None:
    """Why a scheduling policy is invalid (not exactly one of basic/gang, or a count < 1), else None."""
    if (policy.basic is None) == (policy.gang is None):
        return "spec.schedulingPolicy must set exactly one of basic, gang"
    gang = policy.gang
    if isinstance(gang, GangPolicy) and (gang.min_count is None or gang.min_count < 1):
        return "spec.schedulingPolicy.gang.minCount must be >= 1"
    if isinstance(gang, CompositeGangPolicy) and (gang.min_group_count is None or gang.min_group_count < 1):
        return "spec.schedulingPolicy.gang.minGroupCount must be >= 1"
    return None
