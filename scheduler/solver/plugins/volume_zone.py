"""VolumeZone: a bound claim's PV zone and region labels restrict the nodes.

Mirrors kube-scheduler's ``plugins/volumezone/volume_zone.go`` (v1.37). For each bound claim of the
pod, the PV's labels ``topology.kubernetes.io/zone``, ``topology.kubernetes.io/region`` and their
legacy ``failure-domain.beta.kubernetes.io/*`` forms give the values it admits (a value may list
several, separated by ``__``: ``LabelZonesToSet``). A node that has none of the four labels passes
(a single-zone cluster); otherwise it must carry, for every such PV label, one of the values — under
the same key, or for a legacy key on the PV under its GA key on the node (not the other way round).
PV ``spec.nodeAffinity`` is VolumeBinding's, not read here; unbound claims are VolumeBinding's too
(its PreFilter already made a pod with a missing or Immediate-unbound claim wait).

Reason :data:`ZONE_CONFLICT`, UNSCHEDULABLE_AND_UNRESOLVABLE. Vectorised: one mask per signature from
the label domains of the node table.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable

import numpy as np

from scheduler.framework.cycle_state import CycleState, StateKey
from scheduler.framework.events import Action, ClusterEvent
from scheduler.framework.interface import Rejections, Signature
from scheduler.framework.node_table import BoolArray, IntArray, NodeTable
from scheduler.framework.status import Code
from scheduler.model.pod import Pod
from scheduler.model.storage import PersistentVolume, PersistentVolumeClaim
from scheduler.solver.plugins.resources_fit import UNLIMITED
from scheduler.solver.plugins.volume_claims import pod_volumes

NAME = "VolumeZone"
ZONE_CONFLICT = "node(s) had no available volume zone"
"""volume_zone.go ``ErrReasonConflict`` (v1.37)."""

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
"""``volumeZoneLabels``, in kube's order."""
TO_GA = {BETA_ZONE: ZONE, BETA_REGION: REGION}

Topology = tuple[tuple[str, frozenset[str]], ...]

MASK: StateKey[BoolArray] = StateKey(f"{NAME}/mask")


def zones_of(value: str) -> frozenset[str] | None:
    """``LabelZonesToSet``: the values of a zone label, ``__``-separated and trimmed; None when one is empty
    (kube logs it and ignores the label)."""
    parts = [p.strip() for p in value.split("__")]
    return None if any(not p for p in parts) else frozenset(parts)


def topology(bound: tuple[tuple[PersistentVolumeClaim, PersistentVolume | None], ...]) -> Topology:
    """The (label, admitted values) pairs of the bound claims' PVs, sorted; a missing PV adds nothing here
    (VolumeBinding reports it)."""
    out: set[tuple[str, frozenset[str]]] = set()
    for _, pv in bound:
        labels = pv.metadata.labels if pv is not None else {}
        for key in LABELS:
            values = zones_of(labels[key]) if key in labels else None
            if values is not None:
                out.add((key, values))
    return tuple(sorted(out, key=lambda t: (t[0], sorted(t[1]))))


def zone_mask(table: NodeTable, wanted: Topology) -> BoolArray:
    """Nodes that pass: no zone/region label at all, or every PV label's value admitted (see the module docstring)."""
    unlabelled = np.ones(len(table), dtype=bool)
    for key in LABELS:
        unlabelled &= table.domains(key).of_node < 0
    ok = np.ones(len(table), dtype=bool)
    for key, values in wanted:
        value = _admitted(table, key, values)
        ga = TO_GA.get(key)
        if ga is not None:  # a legacy key the node lacks falls back to the node's GA key
            lacks = table.domains(key).of_node < 0
            value |= lacks & _admitted(table, ga, values)
        ok &= value
    return ok | unlabelled


def _admitted(table: NodeTable, key: str, values: frozenset[str]) -> BoolArray:
    doms = table.domains(key)
    wanted = np.array([i for i, v in enumerate(doms.values) if v in values], dtype=np.int32)
    return np.isin(doms.of_node, wanted)


class VolumeZone:
    """PreFilter and Filter; see the module docstring."""

    name = NAME

    def signature_key(self, state: CycleState, pod: Pod) -> Hashable:
        if not pod.spec.volumes:
            return ()  # the common case, first: a pod without volumes costs one attribute read
        volumes = pod_volumes(state, pod)
        return topology(volumes.bound) if volumes.bound and volumes.error is None else ()

    def pre_filter(self, state: CycleState, sig: Signature) -> BoolArray | None:
        if not sig.pods[0].spec.volumes:
            return None
        volumes = pod_volumes(state, sig.pods[0])
        wanted = topology(volumes.bound) if volumes.error is None else ()
        if not wanted:
            return None
        mask = zone_mask(state.table, wanted)
        sig.write(MASK, mask)
        return mask

    def filter(self, state: CycleState, sig: Signature, rows: IntArray) -> IntArray:
        mask: BoolArray | None = sig.data.get(MASK.name)
        if mask is None:
            return np.full(len(rows), UNLIMITED, dtype=np.int64)
        return np.where(mask[rows], UNLIMITED, 0).astype(np.int64)

    def rejections(self, state: CycleState, sig: Signature, rows: IntArray) -> Rejections:
        return Rejections(Counter({ZONE_CONFLICT: len(rows)}) if len(rows) else Counter(),
                          Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def interacts(self, state: CycleState, sig: Signature) -> bool:
        return False



PLUGIN = VolumeZone()


def queueing_hint(event: ClusterEvent) -> bool:
    """A claim added or changed (it may be bound now), a PV added or relabelled, a WaitForFirstConsumer class
    added (kube's VolumeZone events), or a node added or relabelled."""
    match event.kind:
        case "PersistentVolumeClaim":
            return event.action is not Action.DELETE
        case "PersistentVolume":
            return event.action is Action.ADD or (event.action is Action.UPDATE
                                                  and event.old.metadata.labels != event.new.metadata.labels)
        case "StorageClass":
            return event.action is Action.ADD and event.new.delays_binding
        case "Node":
            return event.action is Action.ADD or (event.action is Action.UPDATE
                                                  and event.old.metadata.labels != event.new.metadata.labels)
    return False
