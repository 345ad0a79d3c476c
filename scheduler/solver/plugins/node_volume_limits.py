"""NodeVolumeLimits: a node takes no more CSI volumes of a driver than its CSINode allows.

Mirrors kube-scheduler's ``plugins/nodevolumelimits/csi.go`` (v1.37 semantics, ``filterAttachableVolumes``
and ``getVolumeLimits``):

* a claim counts as ``driver/handle``: a bound claim's PV ``spec.csi`` (``driver``, ``volumeHandle``);
  an unbound claim (or one whose PV is not known) its class's provisioner with a handle unique to the
  claim; a claim without a class, with a class that does not exist, or bound to a PV that is not CSI
  is not counted;
* a node's limit per driver is ``CSINode.spec.drivers[].allocatable.count`` (the node's
  ``status.allocatable["attachable-volumes-csi-<driver>"]`` where its CSINode gives none); a driver
  without a limit is not limited;
* the node's count is the distinct volumes of the pods using it — bound, assumed, and placed earlier
  in this plan — and a volume the node already has counts once (two pods sharing a claim use one
  slot). A copy fits while ``attached + new ≤ limit`` for every driver (reason :data:`MAX_VOLUME_COUNT`,
  UNSCHEDULABLE: evicting pods frees slots).

Vectorised: per driver a limit vector over nodes (memoised per node table and storage objects); the
attached counts are computed for the limited nodes only, memoised per NodeInfo (a node's pods are
read again only when they change). Not counted (docs/architecture.md, "Volumes"): in-tree volumes
migrated to CSI (``storage.alpha.kubernetes.io/migrated-plugins``), VolumeAttachment objects, and
CSIDriver ``preventPodSchedulingIfMissing``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scheduler.framework.cycle_state import CycleState, Placement, StateKey
from scheduler.framework.events import Action, ClusterEvent
from scheduler.framework.interface import Rejections, Signature
from scheduler.framework.node_info import NodeInfo
from scheduler.framework.node_table import BoolArray, IntArray, NodeTable
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code
from scheduler.framework.storage_view import StorageView, claim_keys
from scheduler.model.pod import Pod
from scheduler.model.storage import PersistentVolumeClaim
from scheduler.solver.plugins.resources_fit import UNLIMITED
from scheduler.solver.plugins.volume_claims import pod_volumes, view_of

NAME = "NodeVolumeLimits"
MAX_VOLUME_COUNT = "node(s) exceed max volume count"
"""csi.go ``ErrReasonMaxVolumeCountExceeded`` (v1.37)."""
ATTACH_LIMIT_PREFIX = "attachable-volumes-csi-"
"""``volumeutil.GetCSIAttachLimitKey``: the node allocatable key of a driver's limit (unhashed form)."""
MEMO_CAP = 4
"""The per-NodeInfo memo is cleared when it holds more than this many entries per node (replaced NodeInfos)."""

Handles = Mapping[str, frozenset[str]]
"""Driver → volume handles."""


def claim_handle(view: StorageView, claim: PersistentVolumeClaim) -> tuple[str, str] | None:
    """``(driver, handle)`` of a claim for attach counting, or None when it is not counted (module docstring)."""
    if claim.spec.volume_name:
        pv = view.volumes.get(claim.spec.volume_name)
        if pv is not None:
            return (pv.spec.csi.driver, pv.spec.csi.volume_handle) if pv.spec.csi is not None else None
    klass = view.class_of(claim)
    if klass is None or not klass.provisioner:
        return None
    return klass.provisioner, f"~{claim.key}"  # unique per claim, as kube's random-prefixed "<ns>/<name>"


def pod_handles(view: StorageView, pod: Pod) -> dict[str, set[str]]:
    """Driver → handles of every claim of ``pod`` found in ``view`` (missing claims are skipped)."""
    out: dict[str, set[str]] = {}
    for key in claim_keys(pod):
        claim = view.claims.get(key)
        found = claim_handle(view, claim) if claim is not None else None
        if found is not None:
            out.setdefault(found[0], set()).add(found[1])
    return out


def limits(view: StorageView, table: NodeTable, driver: str) -> IntArray:
    """``(N,)`` the driver's attach limit per node, :data:`UNLIMITED` where none (memoised per table and objects)."""
    key = f"{NAME}/limits/{driver}"
    hit = view.memo.get(key)
    if hit is not None and hit[0] is table:
        return hit[1]  # type: ignore[no-any-return]
    out = np.full(len(table), UNLIMITED, dtype=np.int64)
    resource = ATTACH_LIMIT_PREFIX + driver
    col = table.column.get(resource)
    if col is not None:
        for i, node in enumerate(table.nodes):
            if resource in node.allocatable:
                out[i] = table.allocatable[i, col]
    for name, csi_node in view.csi_nodes.items():
        row = table.index.get(name)
        count = csi_node.limit(driver) if row is not None else None
        if row is not None and count is not None:
            out[row] = count
    view.memo[key] = (table, out)
    return out


def attached(view: StorageView, info: NodeInfo) -> Handles:
    """Driver → distinct handles of the pods using the node (memoised per NodeInfo while the objects are unchanged)."""
    memo: dict[int, tuple[NodeInfo, Handles]] = view.memo.setdefault(f"{NAME}/attached", {})
    hit = memo.get(id(info))
    if hit is not None and hit[0] is info:
        return hit[1]
    out: dict[str, set[str]] = {}
    for pod in info.pods.values():
        if pod.spec.volumes:
            for driver, handles in pod_handles(view, pod).items():
                out.setdefault(driver, set()).update(handles)
    frozen = {d: frozenset(h) for d, h in out.items()}
    memo[id(info)] = (info, frozen)
    return frozen


def _clear_if_large(view: StorageView, table: NodeTable) -> None:
    """Drop the per-NodeInfo memo once it holds :data:`MEMO_CAP` entries per node (NodeInfos since replaced)."""
    memo = view.memo.get(f"{NAME}/attached")
    if memo is not None and len(memo) > MEMO_CAP * max(len(table), 1):
        memo.clear()


def attached_counts(view: StorageView, snapshot: Snapshot, driver: str) -> IntArray:
    """``(N,)`` distinct volumes of ``driver`` the pods using each node have (:func:`attached`, counted). Memoised
    with the NodeInfos it was counted from: a later snapshot recounts only the nodes whose NodeInfo changed (a
    NodeInfo is replaced whenever a pod lands on its node or leaves it), so a cycle costs O(N) identity checks."""
    key = f"{NAME}/counts/{driver}"
    infos = snapshot.infos
    hit = view.memo.get(key)
    if hit is not None and hit[0] is infos:
        return hit[1]  # type: ignore[no-any-return]
    if hit is not None and len(hit[0]) == len(infos) and hit[2] is snapshot.table:
        counts: IntArray = hit[1].copy()
        changed = np.fromiter((a is not b for a, b in zip(hit[0], infos, strict=True)), dtype=bool, count=len(infos))
        for i in np.flatnonzero(changed):
            counts[i] = len(attached(view, infos[i]).get(driver, ()))
    else:
        counts = np.fromiter((len(attached(view, info).get(driver, ())) for info in infos), dtype=np.int64,
                             count=len(infos))
    view.memo[key] = (infos, counts, snapshot.table)
    return counts


@dataclass(frozen=True, slots=True)
class SigLimits:
    """Per signature: per driver, how many volumes every copy brings that no node has yet (``fresh``), and the
    handles that some node may have already (``known``: their claim is in use or named by several pods)."""

    fresh: Mapping[str, int]
    known: Mapping[str, frozenset[str]]

    @property
    def drivers(self) -> tuple[str, ...]:
        return tuple(sorted({*self.fresh, *self.known}))


@dataclass(eq=False)
class NodeVolumeLimitsState:
    """The plugin's cycle state: (row, driver) → handles the plan placed there, counted."""

    placed: dict[tuple[int, str], Counter[str]] = field(default_factory=dict)


SIG: StateKey[SigLimits] = StateKey(f"{NAME}/signature")
CYCLE: StateKey[NodeVolumeLimitsState] = StateKey(f"{NAME}/cycle")


def _split(view: StorageView, pod: Pod) -> tuple[dict[str, int], dict[str, frozenset[str]]]:
    fresh: dict[str, int] = {}
    known: dict[str, set[str]] = {}
    for key in claim_keys(pod):
        claim = view.claims.get(key)
        found = claim_handle(view, claim) if claim is not None else None
        if found is None:
            continue
        driver, handle = found
        if key in view.users or key in view.shared:
            known.setdefault(driver, set()).add(handle)
        else:
            fresh[driver] = fresh.get(driver, 0) + 1
    return fresh, {d: frozenset(h) for d, h in known.items()}


class NodeVolumeLimits:
    """PreFilter, Filter and Reserve; see the module docstring."""

    name = NAME

    def signature_key(self, state: CycleState, pod: Pod) -> Hashable:
        if not pod.spec.volumes:
            return ()  # the common case, first: a pod without volumes costs one attribute read
        volumes = pod_volumes(state, pod)
        if not volumes.claims or volumes.error is not None:
            return ()
        fresh, known = _split(view_of(state), pod)
        return tuple(sorted(fresh.items())), tuple(sorted((d, tuple(sorted(h))) for d, h in known.items()))

    def pre_filter(self, state: CycleState, sig: Signature) -> BoolArray | None:
        if not sig.pods[0].spec.volumes:
            return None
        pod = sig.pods[0]
        volumes = pod_volumes(state, pod)
        if not volumes.claims or volumes.error is not None:
            return None
        view = view_of(state)
        _clear_if_large(view, state.table)
        fresh, known = _split(view, pod)
        if fresh or known:
            sig.write(SIG, SigLimits(fresh, known))
        return None

    def filter(self, state: CycleState, sig: Signature, rows: IntArray) -> IntArray:
        data: SigLimits | None = sig.data.get(SIG.name)
        caps = np.full(len(rows), UNLIMITED, dtype=np.int64)
        if data is None:
            return caps
        view = view_of(state)
        cycle = state.get(CYCLE)
        for driver in data.drivers:
            limit = limits(view, state.table, driver)[rows]
            limited = np.flatnonzero(limit < UNLIMITED)
            if not limited.size:
                continue
            fresh = data.fresh.get(driver, 0)
            known = data.known.get(driver, frozenset())
            have = attached_counts(view, state.snapshot, driver)[rows]
            first = np.full(len(rows), fresh, dtype=np.int64)
            placed = [(r, c) for (r, d), c in cycle.placed.items() if d == driver] if cycle is not None else []
            exact = {int(r) for r, _ in placed}
            if known:  # handles the node may have already: per node, only for the limited ones
                exact |= {int(rows[i]) for i in limited}
            if exact:
                index = {int(r): i for i, r in enumerate(rows)}
                for row in exact & index.keys():
                    handles = set(attached(view, state.snapshot.infos[row]).get(driver, ()))
                    if cycle is not None and (row, driver) in cycle.placed:
                        handles |= {h for h, n in cycle.placed[row, driver].items() if n > 0}
                    i = index[row]
                    have[i] = len(handles)
                    first[i] = fresh + len(known - handles)
            room = limit - have
            per_copy = np.maximum(fresh, 1)
            fits = np.where(room >= first, 1 + (room - first) // per_copy if fresh else UNLIMITED, 0)
            need = (limit < UNLIMITED) & (first > 0)
            caps = np.where(need, np.minimum(caps, fits), caps)
        return caps

    def rejections(self, state: CycleState, sig: Signature, rows: IntArray) -> Rejections:
        return Rejections(Counter({MAX_VOLUME_COUNT: len(rows)}) if len(rows) else Counter(), Code.UNSCHEDULABLE)

    def interacts(self, state: CycleState, sig: Signature) -> bool:
        return False  # a placement changes only its own node's count

    def reserve(self, state: CycleState, sig: Signature, row: int, pods: tuple[Pod, ...]) -> tuple[int, Any]:
        data: SigLimits | None = sig.data.get(SIG.name)
        if data is None:
            return len(pods), None
        cycle = state.setdefault(CYCLE, NodeVolumeLimitsState)
        view = view_of(state)
        added: list[tuple[str, str]] = []
        for pod in pods:
            for driver, handles in pod_handles(view, pod).items():
                counter = cycle.placed.setdefault((row, driver), Counter())
                for handle in handles:
                    counter[handle] += 1
                    added.append((driver, handle))
        return len(pods), added

    def unreserve(self, state: CycleState, placement: Placement, token: Any) -> None:
        if not token:
            return
        cycle = state.read(CYCLE)
        for driver, handle in token:
            cycle.placed[placement.row, driver][handle] -= 1


PLUGIN = NodeVolumeLimits()


def queueing_hint(event: ClusterEvent) -> bool:
    """A CSINode added or changed (a limit raised), a pod that used a node with volumes deleted, finished or
    moved, a claim added (kube's NodeVolumeLimits events), or a node added or given more allocatable."""
    match event.kind:
        case "CSINode":
            return event.action is not Action.DELETE
        case "PersistentVolumeClaim":
            return event.action is Action.ADD
        case "Pod":
            old, new = event.old, event.new
            if old is None or not old.is_bound or not old.spec.volumes:
                return False
            return new is None or new.is_terminal or new.spec.node_name != old.spec.node_name
        case "Node":
            return event.action is Action.ADD or (event.action is Action.UPDATE
                                                  and event.old.allocatable != event.new.allocatable)
    return False
