"""VolumeRestrictions: ReadWriteOncePod claims in use, and legacy inline disks already on a node.

Mirrors kube-scheduler's ``plugins/volumerestrictions/volume_restrictions.go`` (v1.37):

* **ReadWriteOncePod.** A ``persistentVolumeClaim`` volume whose claim has the ReadWriteOncePod access
  mode conflicts when a pod that uses a node — bound, assumed, or placed earlier in this plan —
  names the same claim (``StorageInfos().IsPVCUsedByPods``). The conflict is cluster-wide: every
  node refuses with :data:`RWOP_CONFLICT` (UNSCHEDULABLE: preemption may remove the holder). So two
  members of a gang that name one ReadWriteOncePod claim can never both be placed.
* **Disk conflicts** (``isVolumeConflict``): the same GCE PD (unless every mount is read-only), AWS
  EBS volume, iSCSI IQN (unless read-only) or RBD image (overlapping monitors, same pool and image,
  unless read-only) as a pod on the node — or a pod the plan placed there, or another copy of the
  same signature — refuses that node with :data:`DISK_CONFLICT` (UNSCHEDULABLE).

The disk check comes first, as in kube's Filter. Ephemeral volumes are not ReadWriteOncePod-checked
(kube's ``readWriteOncePodPVCsForPod`` reads ``persistentVolumeClaim`` volumes only).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scheduler.framework.cycle_state import CycleState, Placement, StateKey
from scheduler.framework.events import Action, ClusterEvent
from scheduler.framework.interface import Rejections, Signature
from scheduler.framework.node_table import BoolArray, IntArray
from scheduler.framework.status import Code
from scheduler.model.pod import Pod
from scheduler.model.volume import Volume
from scheduler.solver.plugins.resources_fit import UNLIMITED
from scheduler.solver.plugins.volume_claims import pod_volumes, view_of

NAME = "VolumeRestrictions"
DISK_CONFLICT = "node(s) had no available disk"
RWOP_CONFLICT = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
"""volume_restrictions.go ``ErrReasonDiskConflict``, ``ErrReasonReadWriteOncePodConflict`` (v1.37)."""


def volume_conflict(volume: Volume, other: Volume) -> bool:
    """Whether two inline volumes are the same disk mounted in a conflicting way (``isVolumeConflict``)."""
    a, b = volume.gce_persistent_disk, other.gce_persistent_disk
    if a is not None and b is not None and a.pd_name == b.pd_name and not (a.read_only and b.read_only):
        return True
    c, d = volume.aws_elastic_block_store, other.aws_elastic_block_store
    if c is not None and d is not None and c.volume_id == d.volume_id:
        return True
    e, f = volume.iscsi, other.iscsi
    if e is not None and f is not None and e.iqn == f.iqn and not (e.read_only and f.read_only):
        return True
    g, h = volume.rbd, other.rbd
    return (g is not None and h is not None and bool(set(g.monitors) & set(h.monitors)) and g.pool == h.pool
            and g.image == h.image and not (g.read_only and h.read_only))


def pod_conflicts(volumes: tuple[Volume, ...], other: Pod) -> bool:
    """Whether any of ``volumes`` conflicts with a volume of ``other``."""
    return any(volume_conflict(v, w) for v in volumes for w in other.spec.volumes if w.has_legacy_disk)


@dataclass(frozen=True, slots=True)
class SigRestrictions:
    """Per signature: its legacy disks; whether a ReadWriteOncePod claim of it is in use already; the
    ReadWriteOncePod claims several pods name (``shared``: only one of them may be placed); whether two
    copies of it conflict on one node."""

    disks: tuple[Volume, ...]
    in_use: bool
    shared: tuple[str, ...]
    self_conflict: bool


@dataclass(eq=False)
class VolumeRestrictionsState:
    """The plugin's cycle state: shared ReadWriteOncePod claims the plan placed, and pods with disks per row."""

    claims: Counter[str] = field(default_factory=Counter)
    disks_on: dict[int, list[Pod]] = field(default_factory=dict)


SIG: StateKey[SigRestrictions] = StateKey(f"{NAME}/signature")
CYCLE: StateKey[VolumeRestrictionsState] = StateKey(f"{NAME}/cycle")


def _rwop_claims(state: CycleState, pod: Pod) -> list[str]:
    """Keys of the pod's ``persistentVolumeClaim`` claims that have the ReadWriteOncePod access mode."""
    named = {f"{pod.metadata.namespace}/{v.persistent_volume_claim.claim_name}"
             for v in pod.spec.volumes if v.persistent_volume_claim is not None}
    return sorted(c.key for c in pod_volumes(state, pod).claims if c.key in named and c.read_write_once_pod)


class VolumeRestrictions:
    """PreFilter, Filter and Reserve; see the module docstring."""

    name = NAME

    def signature_key(self, state: CycleState, pod: Pod) -> Hashable:
        if not pod.spec.volumes:
            return ()  # the common case, first: a pod without volumes costs one attribute read
        volumes = pod_volumes(state, pod)
        if not volumes.any or volumes.error is not None:
            return ()
        view = view_of(state)
        rwop = _rwop_claims(state, pod)
        in_use = any(view.used_by_pods(k, state.snapshot.infos, state.table.index) for k in rwop)
        disks = tuple((v.gce_persistent_disk, v.aws_elastic_block_store, v.iscsi, v.rbd) for v in volumes.legacy)
        return in_use, tuple(k for k in rwop if k in view.shared), disks

    def pre_filter(self, state: CycleState, sig: Signature) -> BoolArray | None:
        if not sig.pods[0].spec.volumes:
            return None
        pod = sig.pods[0]
        volumes = pod_volumes(state, pod)
        if volumes.error is not None:
            return None
        rwop = _rwop_claims(state, pod)
        if not rwop and not volumes.legacy:
            return None
        view = view_of(state)
        in_use = any(view.used_by_pods(k, state.snapshot.infos, state.table.index) for k in rwop)
        shared = tuple(k for k in rwop if k in view.shared)
        self_conflict = any(volume_conflict(v, w) for v in volumes.legacy for w in volumes.legacy)
        sig.write(SIG, SigRestrictions(volumes.legacy, in_use, shared, self_conflict))
        return None

    def filter(self, state: CycleState, sig: Signature, rows: IntArray) -> IntArray:
        data: SigRestrictions | None = sig.data.get(SIG.name)
        if data is None:
            return np.full(len(rows), UNLIMITED, dtype=np.int64)
        caps = np.where(self._disk_ok(state, data, rows), UNLIMITED, 0).astype(np.int64)
        if data.self_conflict:
            caps = np.minimum(caps, 1)
        if self._rwop_blocked(state, data):
            return np.zeros(len(rows), dtype=np.int64)
        if data.shared:
            caps = np.minimum(caps, 1)  # one pod of those naming the claim; interacts: the others then see it taken
        return caps

    def _disk_ok(self, state: CycleState, data: SigRestrictions, rows: IntArray) -> BoolArray:
        ok = np.ones(len(rows), dtype=bool)
        if not data.disks:
            return ok
        cycle = state.get(CYCLE)
        infos = state.snapshot.infos
        for i, row in enumerate(rows):
            others = [*infos[int(row)].pods.values(), *(cycle.disks_on.get(int(row), ()) if cycle else ())]
            ok[i] = not any(pod_conflicts(data.disks, p) for p in others)
        return ok

    @staticmethod
    def _rwop_blocked(state: CycleState, data: SigRestrictions) -> bool:
        if data.in_use:
            return True
        cycle = state.get(CYCLE)
        return cycle is not None and any(cycle.claims[k] > 0 for k in data.shared)

    def rejections(self, state: CycleState, sig: Signature, rows: IntArray) -> Rejections:
        """A node with a conflicting disk counts under the disk reason; every other refused node under the
        ReadWriteOncePod one (the order of kube's Filter)."""
        data: SigRestrictions | None = sig.data.get(SIG.name)
        counts: Counter[str] = Counter()
        if data is None or not len(rows):
            return Rejections(counts)
        disk_bad = int((~self._disk_ok(state, data, rows)).sum())
        counts[DISK_CONFLICT] = disk_bad
        if self._rwop_blocked(state, data):
            counts[RWOP_CONFLICT] = len(rows) - disk_bad
        return Rejections(+counts, Code.UNSCHEDULABLE)

    def interacts(self, state: CycleState, sig: Signature) -> bool:
        data: SigRestrictions | None = sig.data.get(SIG.name)
        return data is not None and bool(data.shared)

    def reserve(self, state: CycleState, sig: Signature, row: int, pods: tuple[Pod, ...]) -> tuple[int, Any]:
        data: SigRestrictions | None = sig.data.get(SIG.name)
        if data is None:
            return len(pods), None
        cycle = state.setdefault(CYCLE, VolumeRestrictionsState)
        for key in data.shared:
            cycle.claims[key] += len(pods)
        if data.disks:
            cycle.disks_on.setdefault(row, []).extend(pods)
        return len(pods), True

    def unreserve(self, state: CycleState, placement: Placement, token: Any) -> None:
        if token is None:
            return
        data: SigRestrictions = placement.signature.read(SIG)
        cycle = state.read(CYCLE)
        for key in data.shared:
            cycle.claims[key] -= len(placement.pods)
        if data.disks:
            del cycle.disks_on[placement.row][-len(placement.pods):]


PLUGIN = VolumeRestrictions()


def queueing_hint(event: ClusterEvent) -> bool:
    """A pod that used a node deleted, finished or moved (it may have held the claim or the disk), a claim
    added or changed, or a node added (kube's VolumeRestrictions events)."""
    if event.kind == "Pod":
        old, new = event.old, event.new
        if old is None or not old.is_bound or not old.spec.volumes:
            return False
        return new is None or new.is_terminal or new.spec.node_name != old.spec.node_name
    if event.kind == "PersistentVolumeClaim":
        return event.action is not Action.DELETE
    return event.kind == "Node" and event.action is Action.ADD
