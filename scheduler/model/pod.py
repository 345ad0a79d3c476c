"""Pod (core/v1): the fields a scheduler reads, and the pod's effective resource requests.

``effective_requests`` follows kube-scheduler's ``resource.PodRequests`` (component-helpers
``resource/helpers.go``, v1.37): the sum of the app containers, raised to the largest
init-container request (restartable "sidecar" init containers are added to everything
that starts after them), plus ``spec.overhead``; every pod also uses one ``pods`` slot.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cached_property
from typing import Annotated

from pydantic import AfterValidator, Field, field_validator, model_validator

from scheduler.model.base import ConditionFields, Int32, KubeModel, ObjectMeta, Time
from scheduler.model.base import LabelSelector as LabelSelector  # re-exported: metav1, moved to base
from scheduler.model.base import LabelSelectorRequirement as LabelSelectorRequirement
from scheduler.model.coscheduling import API_GROUP as COSCHEDULING_API_GROUP
from scheduler.model.coscheduling import label_link
from scheduler.model.quantity import (
    CPU,
    HUGEPAGES_PREFIX,
    MEMORY,
    PODS,
    ContainerResourceName,
    NonNegativeQuantity,
    Quantity,
    ResourceList,
    add,
    fractional_extended,
    maximum,
    resource_list,
)
from scheduler.model.scheduling import API_GROUP as WORKLOAD_API_GROUP
from scheduler.model.scheduling import PreemptionPolicy
from scheduler.model.volume import Volume

SUCCEEDED = "Succeeded"
FAILED = "Failed"

DISRUPTION_TARGET = "DisruptionTarget"
"""Pod condition type: the pod is about to be terminated by a disruption (core/v1 ``DisruptionTarget``)."""
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
"""``DisruptionTarget`` reason when a scheduler preempts the pod (core/v1 ``PodReasonPreemptionByScheduler``,
staging/src/k8s.io/api/core/v1/types.go, v1.37)."""
NEVER = "Never"
"""``preemptionPolicy: Never``: the pod (or group) waits instead of preempting (core/v1 ``PreemptNever``)."""


class ResourceRequirements(KubeModel):
    """``core/v1 ResourceRequirements`` of a container or a pod spec; quantities kept as the API
    strings, each ≥ 0 (the API server rejects a negative request or limit)."""

    requests: dict[str, NonNegativeQuantity] = Field(default_factory=dict)
    limits: dict[str, NonNegativeQuantity] = Field(default_factory=dict)


class ContainerResources(KubeModel):
    """``core/v1 ResourceRequirements`` of a container: as :class:`ResourceRequirements`, every resource
    name one a container may ask for (:data:`~scheduler.model.quantity.ContainerResourceName`), and an extended
    resource asked for in whole units (:func:`~scheduler.model.quantity.fractional_extended`)."""

    requests: dict[ContainerResourceName, NonNegativeQuantity] = Field(default_factory=dict)
    limits: dict[ContainerResourceName, NonNegativeQuantity] = Field(default_factory=dict)

    @field_validator("requests", "limits")
    @classmethod
    def _whole_extended(cls, resources: dict[str, str | int | float]) -> dict[str, str | int | float]:
        if (name := fractional_extended(resources)) is not None:
            raise ValueError(f"{name}: must be an integer (got {resources[name]!r})")
        return resources


class ActuatedResources(KubeModel):
    """``core/v1 ResourceRequirements`` as the kubelet reports it in a container status.

    Signs are not checked here: the API server has no such rule for status, and the scheduler
    only takes the larger of these and the (checked) spec, so a negative one never counts.
    """

    requests: dict[str, Quantity] = Field(default_factory=dict)
    limits: dict[str, Quantity] = Field(default_factory=dict)


class ContainerPort(KubeModel):
    """``core/v1 ContainerPort``: what NodePorts reads (``hostPort`` > 0 takes the port on the node's
    ``hostIP``, default ``0.0.0.0``, for ``protocol``, default ``TCP``)."""

    container_port: Int32 = 0
    host_port: Int32 | None = None
    host_ip: str = Field("", alias="hostIP")
    protocol: str = "TCP"


class Container(KubeModel):
    """``core/v1 Container``: name, resources, ``ports`` and (for init containers) ``restartPolicy``."""

    name: str = ""
    resources: ContainerResources = ContainerResources()
    restart_policy: str | None = None
    ports: tuple[ContainerPort, ...] = ()

    def requests(self) -> ResourceList:
        """Requests in integer units; a limit with no request counts as the request (API defaulting)."""
        merged = {**self.resources.limits, **self.resources.requests}
        return resource_list(merged)


class NodeSelectorRequirement(KubeModel):
    """``core/v1 NodeSelectorRequirement``: ``key``, ``operator`` and ``values``."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


class NodeSelectorTerm(KubeModel):
    """``core/v1 NodeSelectorTerm``: requirements on labels and on fields, ANDed."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()


class NodeSelector(KubeModel):
    """``core/v1 NodeSelector``: terms ORed."""

    node_selector_terms: tuple[NodeSelectorTerm, ...] = ()


class PreferredSchedulingTerm(KubeModel):
    """``core/v1 PreferredSchedulingTerm``: a node selector term and its ``weight`` (1–100)."""

    weight: Int32 = 0
    preference: NodeSelectorTerm = NodeSelectorTerm()


class NodeAffinity(KubeModel):
    """``core/v1 NodeAffinity``: the required part filters, the preferred part scores."""

    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: tuple[PreferredSchedulingTerm, ...] = ()


class PodAffinityTerm(KubeModel):
    """``core/v1 PodAffinityTerm``: pods matching ``labelSelector`` (None matches no pod) in ``namespaces``
    / namespaces matching ``namespaceSelector`` (both unset: the pod's own), per ``topologyKey`` domain."""

    label_selector: LabelSelector | None = None
    namespaces: tuple[str, ...] = ()
    topology_key: str = Field(min_length=1)
    """Required and not empty (core ``validatePodAffinityTerm``: "can not be empty")."""
    namespace_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()


class WeightedPodAffinityTerm(KubeModel):
    """``core/v1 WeightedPodAffinityTerm``: a preferred term and its ``weight`` (1–100)."""

    weight: Int32 = 0
    pod_affinity_term: PodAffinityTerm


class PodAffinity(KubeModel):
    """``core/v1 PodAffinity`` (and, with the same shape, ``PodAntiAffinity``)."""

    required_during_scheduling_ignored_during_execution: tuple[PodAffinityTerm, ...] = ()
    preferred_during_scheduling_ignored_during_execution: tuple[WeightedPodAffinityTerm, ...] = ()


class Affinity(KubeModel):
    """``core/v1 Affinity``: node affinity, pod affinity and pod anti-affinity."""

    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class TopologySpreadConstraint(KubeModel):
    """``core/v1 TopologySpreadConstraint``. Unset policies are kube's defaults: ``nodeAffinityPolicy``
    Honor, ``nodeTaintsPolicy`` Ignore, ``minDomains`` 1 (read by the PodTopologySpread plugin)."""

    max_skew: Annotated[Int32, Field(ge=1)] = 1
    topology_key: str = Field(min_length=1)
    when_unsatisfiable: str = ""
    """Neither DoNotSchedule nor ScheduleAnyway: reported as not honoured (``scheduler.solver.unsupported``)."""
    label_selector: LabelSelector | None = None
    min_domains: Annotated[Int32, Field(ge=1)] | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _min_domains_with_do_not_schedule(self) -> TopologySpreadConstraint:
        """``minDomains`` not with ``ScheduleAnyway`` (core ``validateMinDomains``)."""
        if self.min_domains is not None and self.when_unsatisfiable == "ScheduleAnyway":
            raise ValueError("minDomains can only be set when whenUnsatisfiable is DoNotSchedule")
        return self


class Toleration(KubeModel):
    """``core/v1 Toleration``."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class PodSchedulingGroup(KubeModel):
    """``core/v1 PodSchedulingGroup`` (v1.37, gate GenericWorkload): the pod's leaf PodGroup."""

    pod_group_name: str = Field(min_length=1)
    """Required: the one member of a one-of, a DNS subdomain (an empty ``schedulingGroup`` is refused)."""


class PodResourceClaim(KubeModel):
    """``core/v1 PodResourceClaim``."""

    name: str
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


def _claim_names_unique(claims: tuple[PodResourceClaim, ...]) -> tuple[PodResourceClaim, ...]:
    """Each of a pod's ``resourceClaims`` entries named once, as the API server requires (``ValidatePodSpec``:
    "Duplicate value"): two entries of one name would be one claim allocated twice. Raises ValueError."""
    names = [c.name for c in claims]
    if len(set(names)) != len(names):
        twice = next(n for i, n in enumerate(names) if n in names[:i])
        raise ValueError(f"entry name {twice!r} is used more than once")
    return claims


class PodSchedulingGate(KubeModel):
    """``core/v1 PodSchedulingGate``."""

    name: str


class PodSpec(KubeModel):
    """``core/v1 PodSpec``: the scheduling-relevant fields."""

    scheduler_name: str = "default-scheduler"
    node_name: str = ""
    scheduling_group: PodSchedulingGroup | None = None
    priority: Int32 | None = None
    priority_class_name: str = ""
    preemption_policy: PreemptionPolicy | None = None
    termination_grace_period_seconds: int | None = None
    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    overhead: dict[str, NonNegativeQuantity] = Field(default_factory=dict)
    node_selector: dict[str, str] = Field(default_factory=dict)
    affinity: Affinity | None = None
    tolerations: tuple[Toleration, ...] = ()
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...] = ()
    host_network: bool = False
    resource_claims: Annotated[tuple[PodResourceClaim, ...], AfterValidator(_claim_names_unique)] = ()
    scheduling_gates: tuple[PodSchedulingGate, ...] = ()
    resources: ResourceRequirements | None = None
    """Pod-level requests and limits (KEP-2837, PodLevelResources)."""
    volumes: tuple[Volume, ...] = ()
    """PVCs, generic ephemeral volumes and legacy inline disks (``scheduler.model.volume``)."""


class PodCondition(ConditionFields):
    """``core/v1 PodCondition``."""

    observed_generation: int | None = None


class PodResourceClaimStatus(KubeModel):
    """``core/v1 PodResourceClaimStatus``: the claim generated for a pod's claim entry."""

    name: str
    resource_claim_name: str | None = None


class ContainerStatus(KubeModel):
    """``core/v1 ContainerStatus``: what the kubelet actuated (in-place resize, KEP-1287)."""

    name: str = ""
    allocated_resources: dict[str, Quantity] = Field(default_factory=dict)
    resources: ActuatedResources | None = None

    def actuated(self) -> ResourceList:
        """Per resource, the larger of ``allocatedResources`` and ``resources.requests``."""
        requests = resource_list(self.resources.requests) if self.resources else {}
        return maximum(resource_list(self.allocated_resources), requests)


class PodStatus(KubeModel):
    """``core/v1 PodStatus``: the scheduling-relevant fields."""

    phase: str = "Pending"
    container_statuses: tuple[ContainerStatus, ...] = ()
    init_container_statuses: tuple[ContainerStatus, ...] = ()
    conditions: tuple[PodCondition, ...] = ()
    nominated_node_name: str | None = None
    resource_claim_statuses: tuple[PodResourceClaimStatus, ...] = ()
    start_time: Time | None = None
    """When the kubelet acknowledged the pod (``status.startTime``): preemption evicts younger pods first."""


class PodReads:
    """What the scheduler reads of any pod beyond its fields, over ``metadata``, ``spec`` and ``status``: shared by
    :class:`Pod` and the cache's compact bound pod (:class:`~scheduler.model.lean_pod.LeanPod`), which have the
    same attribute paths."""

    __slots__ = ()
    metadata: ObjectMeta
    spec: PodSpec
    status: PodStatus

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.metadata.namespace}/{self.metadata.name}"

    @property
    def group_name(self) -> str | None:
        """The leaf PodGroup the pod joins (same namespace), if any: ``spec.schedulingGroup.podGroupName`` (a
        ``scheduling.k8s.io`` PodGroup), else the scheduler-plugins label (a ``scheduling.x-k8s.io`` one,
        :func:`~scheduler.model.coscheduling.label_link`); :attr:`group_api` says which."""
        sg = self.spec.scheduling_group
        if sg and sg.pod_group_name:
            return sg.pod_group_name
        return label_link(self.metadata.labels)

    @property
    def group_api(self) -> str | None:
        """The API group of the PodGroup :attr:`group_name` names: ``scheduling.k8s.io`` when the pod links by
        ``spec.schedulingGroup`` (which wins over the label), ``scheduling.x-k8s.io`` when by the label."""
        sg = self.spec.scheduling_group
        if sg and sg.pod_group_name:
            return WORKLOAD_API_GROUP
        return COSCHEDULING_API_GROUP if label_link(self.metadata.labels) else None

    @property
    def is_bound(self) -> bool:
        """``spec.nodeName`` is set."""
        return bool(self.spec.node_name)

    @property
    def is_terminal(self) -> bool:
        """Phase Succeeded or Failed: the pod no longer uses node resources."""
        return self.status.phase in (SUCCEEDED, FAILED)

    @property
    def is_terminating(self) -> bool:
        """``metadata.deletionTimestamp`` is set: binding is refused, the pod is going away."""
        return self.metadata.deletion_timestamp is not None

    @property
    def terminating_by_preemption(self) -> bool:
        """Being deleted, and its first ``DisruptionTarget`` condition is True with reason
        ``PreemptionByScheduler`` (kube-scheduler ``PodTerminatingByPreemption``, pkg/scheduler/util, v1.37)."""
        if not self.is_terminating:
            return False
        cond = next((c for c in self.status.conditions if c.type == DISRUPTION_TARGET), None)
        return cond is not None and cond.is_true and cond.reason == REASON_PREEMPTION_BY_SCHEDULER

    @property
    def is_gated(self) -> bool:
        """``spec.schedulingGates`` is non-empty: binding is rejected until they are removed."""
        return bool(self.spec.scheduling_gates)

    @property
    def awaits_placement(self) -> bool:
        """Neither bound (nor assumed) nor gated: a pod a scheduling cycle may place, listed as pending in its group's
        tree."""
        return not self.is_bound and not self.is_gated


class Pod(KubeModel, PodReads):
    """``core/v1 Pod``."""

    api_version: str = "v1"
    kind: str = "Pod"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus = Field(default_factory=PodStatus)

    @cached_property
    def key(self) -> str:
        """``namespace/name``, read once per object (every part of the cycle looks pods up by it; a copy keeps its
        metadata's name and namespace). The compact bound pod computes it per read: it has no ``__dict__``."""
        return f"{self.metadata.namespace}/{self.metadata.name}"

    @cached_property
    def requests(self) -> ResourceList:
        """Effective requests in integer units (milli-cpu, bytes, counts), including one ``pods``."""
        return effective_requests(self.spec, self.status)

    def resource_quantities(self) -> Iterator[tuple[str, str, str | int | float]]:
        """``(field path, resource, quantity)`` of each resource quantity the spec gives — its containers' and init
        containers' requests and limits, the pod-level resources, the overhead — as written (for
        :func:`~scheduler.model.quantity.locate`)."""
        spec = self.spec
        for field_name, containers in (("containers", spec.containers), ("initContainers", spec.init_containers)):
            for i, c in enumerate(containers):
                for part, values in (("requests", c.resources.requests), ("limits", c.resources.limits)):
                    yield from ((f"spec.{field_name}[{i}].resources.{part}.{r}", r, v) for r, v in values.items())
        if spec.resources is not None:
            for part, values in (("requests", spec.resources.requests), ("limits", spec.resources.limits)):
                yield from ((f"spec.resources.{part}.{r}", r, v) for r, v in values.items())
        yield from ((f"spec.overhead.{r}", r, v) for r, v in spec.overhead.items())

    @cached_property
    def asks(self) -> frozenset[str]:
        """Which rules beyond resources the spec asks for: :data:`ASKS_VOLUMES` (a volume the volume plugins
        judge, :attr:`~scheduler.model.volume.Volume.judged`: not the token volume every pod has),
        :data:`ASKS_PORTS` (a container declares ports; only host ports matter, which NodePorts checks),
        :data:`ASKS_SPREAD`,
        :data:`ASKS_POD_AFFINITY` (pod affinity or anti-affinity), :data:`ASKS_PREFERRED_NODE_AFFINITY`.

        Read once per pod object, not once per solve: the scheduling profile's gates ask it of every
        pending pod of a root on every solve (kube-scheduler's ``PodInfo`` likewise parses a pod's terms
        once, when it is queued). The group index reads it when a pod is set, so it is ready before any
        solve. A copy made with a changed ``spec.nodeName`` or ``status`` asks the same."""
        return spec_asks(self.spec)


ASKS_VOLUMES = "volumes"
ASKS_PORTS = "ports"
ASKS_SPREAD = "spread"
ASKS_POD_AFFINITY = "pod-affinity"
ASKS_PREFERRED_NODE_AFFINITY = "preferred-node-affinity"


def spec_asks(spec: PodSpec) -> frozenset[str]:
    """What :attr:`Pod.asks` says of a pod with ``spec`` (any object with :class:`PodSpec`'s attributes)."""
    found: list[str] = []
    if any(v.judged for v in spec.volumes):
        found.append(ASKS_VOLUMES)
    if any(c.ports for c in spec.containers) or any(c.ports for c in spec.init_containers):
        found.append(ASKS_PORTS)
    if spec.topology_spread_constraints:
        found.append(ASKS_SPREAD)
    affinity = spec.affinity
    if affinity is not None:
        if affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None:
            found.append(ASKS_POD_AFFINITY)
        node = affinity.node_affinity
        if node is not None and node.preferred_during_scheduling_ignored_during_execution:
            found.append(ASKS_PREFERRED_NODE_AFFINITY)
    return frozenset(found)


def raw_group_name(raw: object) -> str:
    """The PodGroup a raw pod names, read defensively — a pod that could not be decoded still says which gang it was
    for: ``spec.schedulingGroup.podGroupName``, else scheduler-plugins' pod group label (:func:`label_link`, as
    :attr:`Pod.group_name` reads them); empty when neither is a string."""
    spec = raw.get("spec") if isinstance(raw, Mapping) else None
    link = spec.get("schedulingGroup") if isinstance(spec, Mapping) else None
    name = link.get("podGroupName") if isinstance(link, Mapping) else None
    if isinstance(name, str):
        return name
    meta = raw.get("metadata") if isinstance(raw, Mapping) else None
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    if isinstance(labels, Mapping) and all(isinstance(v, str) for v in labels.values()):
        return label_link(labels) or ""
    return ""


def effective_requests(spec: PodSpec, status: PodStatus | None = None) -> ResourceList:
    """The resources a pod holds on its node, per kube-scheduler's ``PodRequests`` (v1.37).

    ``spec``: the pod spec. Returns a resource list in integer units (milli-cpu, bytes,
    counts) that always includes ``pods: 1``.

    Rule (component-helpers ``resource/helpers.go``): app containers add up; init
    containers run one at a time, so the pod needs at least the largest one, but a
    restartable init container (``restartPolicy: Always``, a sidecar) keeps running and
    is added to every container that starts after it; the result is the maximum of the
    two, plus ``spec.overhead``.
    With ``status``, a container's request is the larger of its spec and what the kubelet actuated
    (``status.containerStatuses[].allocatedResources`` / ``.resources.requests``): a pod being
    resized in place holds the old size until the resize is done (kube-scheduler
    ``determineContainerReqs``, InPlacePodVerticalScaling).
    Raises :class:`~scheduler.model.quantity.QuantityError` on a malformed quantity.
    """
    actuated = {s.name: s.actuated() for s in (status.container_statuses if status else ())}
    init_actuated = {s.name: s.actuated() for s in (status.init_container_statuses if status else ())}
    app: ResourceList = {}
    for c in spec.containers:
        app = add(app, maximum(c.requests(), actuated.get(c.name, {})))
    init_peak: ResourceList = {}
    sidecars: ResourceList = {}
    for c in spec.init_containers:
        req = maximum(c.requests(), init_actuated.get(c.name, {}))
        if c.restart_policy == "Always":
            sidecars = add(sidecars, req)
            init_peak = maximum(init_peak, sidecars)
        else:
            init_peak = maximum(init_peak, add(req, sidecars))
    total = maximum(add(app, sidecars), init_peak)
    if spec.resources is not None:  # KEP-2837: pod-level requests replace the containers' sum for their resources
        pod_level = resource_list({**spec.resources.limits, **spec.resources.requests})
        total = {**total, **{r: v for r, v in pod_level.items()
                             if r in (CPU, MEMORY) or r.startswith(HUGEPAGES_PREFIX)}}  # KEP-2837 scope
    total = add(total, resource_list(spec.overhead))
    total[PODS] = 1
    return {k: v for k, v in total.items() if v or k == PODS}
