"""The solver's plugins, one concept per module, and the one explicit registry of them.

A :class:`Profile` lists the plugins of each extension point (``scheduler.framework.interface``) in
the order they run — kube-scheduler's scheduling profile. :data:`DEFAULT_PROFILE` is the only one;
nothing discovers plugins at import time.

Static filters run in kube's default-profile order (``apis/config/v1/default_plugins.go``:
NodeUnschedulable, …, TaintToleration, NodeAffinity; our NodeLifecycle right after the cordon
check); the first rejection is the node's reason, as kube's framework stops at the first failing
Filter plugin. Dynamic filters run NodeResourcesFit before DynamicResources, so a node short of
cpu is reported as such and only nodes that fit count as "cannot allocate all claims".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from scheduler.framework.events import ClusterEvent
from scheduler.framework.interface import (
    FilterPlugin,
    PreFilterPlugin,
    ReservePlugin,
    ScorePlugin,
    StaticFilterPlugin,
)
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Status
from scheduler.model.node import Node
from scheduler.model.pod import PodSpec
from scheduler.solver.plugins import (
    dynamic_resources,
    node_affinity,
    node_lifecycle,
    node_unschedulable,
    node_volume_limits,
    resources_fit,
    taint_toleration,
    volume_binding,
    volume_restrictions,
    volume_zone,
)

TOPOLOGY = "TopologyPlacement"
"""Rejector name of a group whose topology domains all lack room (kube's topology-aware placement)."""


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


@dataclass(frozen=True, slots=True)
class Profile:
    """The plugins of each extension point, in the order they run (kube's scheduling profile).

    ``devices``: the DRA plugin, which the search also asks for a leaf's shared claims and the
    plan's claim allocations; it is the first Reserve plugin because it alone may reserve fewer
    copies than its Filter allowed. ``volumes``: the VolumeBinding plugin, which the search asks for
    the plan's PersistentVolumeClaim decisions.
    """

    static_check: Callable[[PodSpec, Node], Status | None]
    pre_filters: tuple[PreFilterPlugin, ...]
    filters: tuple[FilterPlugin, ...]
    scorers: tuple[ScorePlugin, ...]
    reservers: tuple[ReservePlugin, ...]
    devices: dynamic_resources.DynamicResources
    volumes: volume_binding.VolumeBinding
    storage: tuple[object, ...] = ()
    """The volume plugins (VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone): a solve whose
    pending pods name no volume leaves them out (:meth:`for_solve`), as one without a device view leaves out DRA."""

    without_devices: Profile | None = field(default=None, compare=False, repr=False)
    """This profile without the DRA plugin (made once, in ``__post_init__``)."""
    without_storage: Profile | None = field(default=None, compare=False, repr=False)
    """This profile without its volume plugins (made once, in ``__post_init__``)."""

    def __post_init__(self) -> None:
        if self.without_storage is None and self.storage:
            gone = {id(p) for p in self.storage}
            object.__setattr__(self, "without_storage", replace(
                self, storage=(), without_devices=None, without_storage=None,
                pre_filters=tuple(p for p in self.pre_filters if id(p) not in gone),
                filters=tuple(p for p in self.filters if id(p) not in gone),
                reservers=tuple(p for p in self.reservers if id(p) not in gone)))
        if self.without_devices is None and self.devices in (*self.pre_filters, *self.filters, *self.reservers):
            devices = self.devices
            plain = replace(self, without_storage=None,  # it makes its own
                            pre_filters=tuple(p for p in self.pre_filters if p is not devices),
                            filters=tuple(p for p in self.filters if p is not devices),
                            reservers=tuple(p for p in self.reservers if p is not devices))
            object.__setattr__(plain, "without_devices", plain)
            object.__setattr__(self, "without_devices", plain)

    def for_snapshot(self, snapshot: Snapshot) -> Profile:
        """The profile for one solve: without the DRA plugin when the snapshot has no device view (nothing
        can need a device then, and skipping it keeps the hot path of plain gangs as short as before)."""
        if snapshot.dra is not None or self.without_devices is None:
            return self
        return self.without_devices

    def for_solve(self, snapshot: Snapshot, volumes: bool) -> Profile:
        """:meth:`for_snapshot`, and without the volume plugins unless ``volumes`` (some pending pod of the tree
        has ``spec.volumes``): a pod without volumes is never refused by them, so plain gangs pay nothing."""
        profile = self.for_snapshot(snapshot)
        if volumes or profile.without_storage is None:
            return profile
        return profile.without_storage


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
    TOPOLOGY: resources_fit.queueing_hint,
}
"""Plugin name → its queueing hint: which cluster events may make a root it rejected schedulable. A
topology domain short of room (``TopologyPlacement``) is helped by what frees room, like NodeResourcesFit."""

DEFAULT_PROFILE = Profile(
    static_check=run_filters,
    pre_filters=(dynamic_resources.PLUGIN, volume_restrictions.PLUGIN, node_volume_limits.PLUGIN,
                 volume_binding.PLUGIN, volume_zone.PLUGIN),
    filters=(resources_fit.PLUGIN, volume_restrictions.PLUGIN, node_volume_limits.PLUGIN, volume_binding.PLUGIN,
             volume_zone.PLUGIN, dynamic_resources.PLUGIN),
    scorers=(),
    reservers=(dynamic_resources.PLUGIN, resources_fit.PLUGIN, volume_restrictions.PLUGIN, node_volume_limits.PLUGIN,
               volume_binding.PLUGIN),
    devices=dynamic_resources.PLUGIN,
    volumes=volume_binding.PLUGIN,
    storage=(volume_restrictions.PLUGIN, node_volume_limits.PLUGIN, volume_binding.PLUGIN, volume_zone.PLUGIN),
)
"""The profile every cycle uses. Volume PreFilters run after DynamicResources' so that a volume rejection
replaces a DRA one: kube's profile runs the volume plugins first and reports the first PreFilter that
rejects. Filters run in kube's order (NodeResourcesFit, VolumeRestrictions, NodeVolumeLimits, VolumeBinding,
VolumeZone, …, DynamicResources), each refused node counted under the first that refuses it."""
