"""The solver's plugins, one concept per module, and the one explicit registry of them.

A :class:`Profile` lists the plugins of each extension point (``scheduler.framework.interface``) in
the order they run — kube-scheduler's scheduling profile. :data:`DEFAULT_PROFILE` is the only one;
nothing discovers plugins at import time.

Static filters run in kube's default-profile order (``apis/config/v1/default_plugins.go``:
NodeUnschedulable, …, TaintToleration, NodeAffinity; our NodeLifecycle right after the cordon
check); the first rejection is the node's reason, as kube's framework stops at the first failing
Filter plugin. Dynamic filters run in the same order: NodePorts, NodeResourcesFit, VolumeRestrictions,
NodeVolumeLimits, VolumeBinding, VolumeZone, PodTopologySpread, InterPodAffinity, DynamicResources — a
node short of cpu is reported as such, and only nodes every other filter allows count as "cannot
allocate all claims". Score plugins carry kube's default weights (TaintToleration 3, NodeAffinity 2,
PodTopologySpread 2, InterPodAffinity 2, DynamicResources 1); DynamicResources' Score shares its name, so its
gate, with its Filter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ClusterEvent
from scheduler.framework.interface import (
    CappedFilterPlugin,
    FilterPlugin,
    OutcomePlugin,
    PreFilterPlugin,
    QuotaFilterPlugin,
    ReservePlugin,
    ScorePlugin,
    SharedResourcePlugin,
    ShortReservePlugin,
    StaticFilterPlugin,
)
from scheduler.framework.plan import PlanFields
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Status
from scheduler.model.node import Node
from scheduler.model.pod import Pod, PodSpec
from scheduler.solver.plugins import (
    dynamic_resources,
    dynamic_resources_score,
    inter_pod_affinity,
    node_affinity,
    node_lifecycle,
    node_ports,
    node_unschedulable,
    node_volume_limits,
    nominated_node,
    pod_topology_spread,
    resources_fit,
    taint_toleration,
    volume_binding,
    volume_restrictions,
    volume_zone,
)

TOPOLOGY = "TopologyPlacement"
"""Rejector name of kube's topology-aware placement: a failed search skipped topology domains too short of room
for a group (room freed, or a node added, there may let it in), no node has the group's key, or its bound
members are in several domains."""


@dataclass(frozen=True, slots=True)
class StaticFilter:
    """A static filter given as a function (``filter_node`` of its module) under its plugin name."""

    name: str
    check: Callable[[PodSpec, Node], Status | None]

    def filter_node(self, spec: PodSpec, node: Node) -> Status | None:
        return self.check(spec, node)


REGISTRY: dict[str, StaticFilterPlugin] = {
    node_unschedulable.NAME: StaticFilter(node_unschedulable.NAME, node_unschedulable.filter_node),
    node_lifecycle.NAME: StaticFilter(node_lifecycle.NAME, node_lifecycle.filter_node),
    taint_toleration.NAME: StaticFilter(taint_toleration.NAME, taint_toleration.filter_node),
    node_affinity.NAME: StaticFilter(node_affinity.NAME, node_affinity.filter_node),
}
"""Every static filter, in the order they run (see the module docstring)."""


def run_filters(spec: PodSpec, node: Node) -> Status | None:
    """Run every static filter in order; return the first rejection, or None (the node passes)."""
    for plugin in REGISTRY.values():
        status = plugin.filter_node(spec, node)
        if status is not None:
            return status
    return None


Gate = Callable[[Snapshot, Sequence[Pod], frozenset[str]], bool]
"""Whether a plugin has anything to judge for a root's pending pods on a snapshot; the third argument is
what those pods ask for together (the union of their :attr:`~scheduler.model.pod.Pod.asks`)."""


@dataclass(frozen=True, slots=True)
class Profile:
    """The plugins of each extension point, in the order they run (kube's scheduling profile).

    ``shared``: the plugins holding what a leaf's members hold in common (DRA's group and shared claims);
    ``outcomes``: the plugins filling the plan's fields and the solve's notes (DRA's claim allocations and
    selector errors, VolumeBinding's PersistentVolumeClaim decisions). The search knows plugins only by these
    Protocols (``scheduler.framework.interface``). ``short_reserve``: the Reserve plugin that may reserve
    fewer copies than the Filters allowed (DRA; when in ``reservers`` it is the first); nodes every Filter
    allowed where nothing was placed count under its reason (kept when gates leave it out). ``gates``:
    (plugin names, :data:`Gate`) pairs; plugins whose gate says no for a solve are left out of every
    extension point of it (kube's PreFilter / PreScore ``Skip``, decided once per solve: no pod of the root
    asks for what they judge). The DRA plugin is gated on the snapshot having a device view, the volume
    plugins on a pending pod naming a volume, so a plain gang's hot path runs only what it needs.
    """

    static_check: Callable[[PodSpec, Node], Status | None]
    pre_filters: tuple[PreFilterPlugin, ...]
    filters: tuple[FilterPlugin, ...]
    scorers: tuple[ScorePlugin, ...]
    reservers: tuple[ReservePlugin, ...]
    shared: tuple[SharedResourcePlugin, ...] = ()
    outcomes: tuple[OutcomePlugin, ...] = ()
    short_reserve: ShortReservePlugin | None = None
    gates: tuple[tuple[frozenset[str], Gate], ...] = ()
    _skipping: dict[frozenset[str], Profile] = field(default_factory=dict, compare=False, repr=False)
    quota_filters: frozenset[str] = field(init=False, compare=False, repr=False)
    """Names of the Filter plugins that can state their rule as a batch quota (:class:`QuotaFilterPlugin`),
    decided once per profile: a ``runtime_checkable`` isinstance check costs microseconds per call."""
    capped_filters: tuple[CappedFilterPlugin, ...] = field(init=False, compare=False, repr=False)
    """The Filter plugins whose rule between copies bounds how many any nodes can hold (:class:`CappedFilterPlugin`),
    decided once per profile, as :attr:`quota_filters`."""

    def __post_init__(self) -> None:
        # a profile made by ``dataclasses.replace`` gets the memo of the one it was made from: start its own, or
        # ``for_pods`` would hand back the other profile's plugins
        object.__setattr__(self, "_skipping", {})
        object.__setattr__(self, "quota_filters",
                           frozenset(p.name for p in self.filters if isinstance(p, QuotaFilterPlugin)))
        object.__setattr__(self, "capped_filters", tuple(p for p in self.filters if isinstance(p, CappedFilterPlugin)))

    def notes(self, state: CycleState) -> tuple[str, ...]:
        """The notes of every Outcome plugin for this solve (the DRA selector errors), for its messages."""
        return tuple(note for plugin in self.outcomes for note in plugin.notes(state))

    def plan_fields(self, state: CycleState) -> PlanFields:
        """The plan's fields every Outcome plugin fills from this solve's state."""
        fields: PlanFields = {}
        for plugin in self.outcomes:
            fields.update(plugin.plan_fields(state))
        return fields

    def for_pods(self, snapshot: Snapshot, pending: Sequence[Pod]) -> Profile:
        """This profile without the plugins whose gate says they have nothing to judge for ``pending`` on
        ``snapshot`` (memoised per set of plugins left out: the same set gives the same profile)."""
        skip: frozenset[str] = frozenset()
        asked = frozenset().union(*(p.asks for p in pending))
        for names, gate in self.gates:
            if not gate(snapshot, pending, asked):
                skip |= names
        if not skip:
            return self
        hit = self._skipping.get(skip)
        if hit is None:
            def keep(plugins: tuple[Any, ...]) -> tuple[Any, ...]:
                return tuple(p for p in plugins if p.name not in skip)
            hit = replace(self, pre_filters=keep(self.pre_filters), filters=keep(self.filters),
                          scorers=keep(self.scorers), reservers=keep(self.reservers), shared=keep(self.shared),
                          outcomes=keep(self.outcomes), gates=(), _skipping={})
            self._skipping[skip] = hit
        return hit


def topology_hint(event: ClusterEvent) -> bool:
    """Whether ``event`` may help a root ``TopologyPlacement`` rejected: room freed (NodeResourcesFit's hint: a
    domain was too short of room), a node added or relabelled (NodeAffinity's hint: it may now carry the
    group's topology key, or join another domain), or a node a domain's room was not counted on made usable —
    uncordoned, untainted, Ready again (the hints of NodeUnschedulable, TaintToleration and the node lifecycle
    filter): a domain's room is counted only on the nodes that pass the static filters."""
    return (resources_fit.queueing_hint(event) or node_affinity.queueing_hint(event)
            or node_unschedulable.queueing_hint(event) or taint_toleration.queueing_hint(event)
            or node_lifecycle.queueing_hint(event))


QUEUEING_HINTS: dict[str, Callable[[ClusterEvent], bool]] = {
    node_unschedulable.NAME: node_unschedulable.queueing_hint,
    node_lifecycle.NAME: node_lifecycle.queueing_hint,
    taint_toleration.NAME: taint_toleration.queueing_hint,
    node_affinity.NAME: node_affinity.queueing_hint,
    resources_fit.NAME: resources_fit.queueing_hint,
    dynamic_resources.NAME: dynamic_resources.queueing_hint,
    volume_restrictions.NAME: volume_restrictions.queueing_hint,
    node_volume_limits.NAME: node_volume_limits.queueing_hint,
    volume_binding.NAME: volume_binding.queueing_hint,
    volume_zone.NAME: volume_zone.queueing_hint,
    node_ports.NAME: node_ports.queueing_hint,
    pod_topology_spread.NAME: pod_topology_spread.queueing_hint,
    inter_pod_affinity.NAME: inter_pod_affinity.queueing_hint,
    TOPOLOGY: topology_hint,
}
"""Plugin name → its queueing hint: which cluster events may make a root it rejected schedulable
(``TopologyPlacement``: :func:`topology_hint`)."""

DEFAULT_PROFILE = Profile(
    static_check=run_filters,
    pre_filters=(dynamic_resources.PLUGIN, volume_restrictions.PLUGIN, node_volume_limits.PLUGIN,
                 volume_binding.PLUGIN, volume_zone.PLUGIN, node_ports.PLUGIN, pod_topology_spread.PLUGIN,
                 inter_pod_affinity.PLUGIN),
    filters=(node_ports.PLUGIN, resources_fit.PLUGIN, volume_restrictions.PLUGIN, node_volume_limits.PLUGIN,
             volume_binding.PLUGIN, volume_zone.PLUGIN, pod_topology_spread.PLUGIN, inter_pod_affinity.PLUGIN,
             dynamic_resources.PLUGIN),
    scorers=(taint_toleration.SCORE, node_affinity.SCORE, pod_topology_spread.SCORE, inter_pod_affinity.SCORE,
             dynamic_resources_score.SCORE),
    reservers=(dynamic_resources.PLUGIN, resources_fit.PLUGIN, node_ports.PLUGIN, volume_restrictions.PLUGIN,
               node_volume_limits.PLUGIN, volume_binding.PLUGIN, pod_topology_spread.PLUGIN,
               inter_pod_affinity.PLUGIN),
    shared=(dynamic_resources.PLUGIN,),
    outcomes=(dynamic_resources.PLUGIN, volume_binding.PLUGIN),
    short_reserve=dynamic_resources.PLUGIN,
    gates=(
        (frozenset({dynamic_resources.NAME}), dynamic_resources.gate),
        (frozenset({volume_restrictions.NAME, node_volume_limits.NAME, volume_binding.NAME, volume_zone.NAME}),
         volume_binding.gate),
        (frozenset({node_ports.NAME}), node_ports.gate),
        (frozenset({pod_topology_spread.NAME}), pod_topology_spread.gate),
        (frozenset({inter_pod_affinity.NAME}), inter_pod_affinity.gate),
        (frozenset({node_affinity.NAME}), node_affinity.score_gate),
        (frozenset({taint_toleration.NAME}), taint_toleration.score_gate),
    ),
)
"""The profile every cycle uses. Volume PreFilters run after DynamicResources' so that a volume rejection
replaces a DRA one: kube's profile runs the volume plugins first and reports the first PreFilter that
rejects. Filters run in kube's order (see the module docstring), each refused node counted under the first
that refuses it."""

NOMINATED_FIRST = replace(DEFAULT_PROFILE, pre_filters=(nominated_node.PLUGIN, *DEFAULT_PROFILE.pre_filters),
                          _skipping={})
"""The default profile with each nominated pod pinned to its ``status.nominatedNodeName``: the first attempt
for a root whose pods preemption nominated (:mod:`~scheduler.solver.plugins.nominated_node`)."""
