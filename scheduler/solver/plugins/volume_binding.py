"""VolumeBinding: bound claims restrict the nodes; WaitForFirstConsumer claims are bound with the gang's nodes.

Mirrors kube-scheduler's ``plugins/volumebinding`` (v1.37; ``volume_binding.go``, ``binder.go``
``FindPodVolumes`` / ``AssumePodVolumes``, ``component-helpers/storage/volume`` ``FindMatchingVolume``),
per signature and vectorised over nodes:

* **PreFilter** (:mod:`~scheduler.solver.plugins.volume_claims`): a claim that does not exist, is
  lost or being deleted, or is unbound without waiting for its first consumer makes the signature
  wait with kube's text (UNSCHEDULABLE_AND_UNRESOLVABLE). Otherwise it computes, once per signature:
  the nodes every bound claim's PV allows (``spec.nodeAffinity``, matched on labels only, as
  ``CheckNodeAffinity`` does), and for each WaitForFirstConsumer claim the nodes its class provisions
  for (a provisioner other than ``kubernetes.io/no-provisioner``, and ``allowedTopologies``) and the
  available PVs that could be bound to it (class, capacity, volume mode, access modes, selector,
  phase Available, not claimed; a PV pre-bound to the claim by ``claimRef`` is its only candidate) —
  or, for a claim already annotated with ``volume.kubernetes.io/selected-node``, that one node.
* **Filter**: nodes outside those masks get 0; a node where some claim can be neither provisioned
  nor matched gets the number of copies whose claims kube's greedy matching can still serve from
  the PVs the plan has not taken (claims smallest request first, each the smallest fitting PV).
  A claim named by several pods of the plan (*shared*) is decided by its first placement: the others
  may only go to that node (kube pins it with the annotation in its assume cache).
* **Reserve** records, per claim, the node and the PV chosen (kube's static binding) or None
  (dynamic provisioning); Unreserve takes them back.
* **Outcome** (:class:`~scheduler.framework.interface.OutcomePlugin`): :meth:`VolumeBinding.bindings` turns
  what the plan holds into :class:`~scheduler.framework.plan.VolumeClaimBinding` values, which the binder
  writes before the first bind (``scheduler.binding.volumes``).

Reasons (``binder.go``, verbatim, all UNSCHEDULABLE_AND_UNRESOLVABLE): :data:`NODE_CONFLICT`,
:data:`BIND_CONFLICT`, :data:`PV_NOT_EXIST`. ``NotEnoughSpace`` needs CSIStorageCapacity, which is not
read (every class is taken to have room; see docs/architecture.md, "Volumes"). No Score
(StorageCapacityScoring) either.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scheduler.framework.cycle_state import CycleState, Placement, StateKey
from scheduler.framework.events import Action, ClusterEvent
from scheduler.framework.interface import Rejections, Signature
from scheduler.framework.node_table import BoolArray, IntArray, NodeTable
from scheduler.framework.plan import PlanFields, VolumeClaimBinding
from scheduler.framework.selectors import label_selector_matches
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.framework.storage_view import StorageView
from scheduler.model.pod import ASKS_VOLUMES, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod
from scheduler.model.storage import AVAILABLE, PersistentVolume, PersistentVolumeClaim, StorageClass
from scheduler.solver.plugins.resources_fit import UNLIMITED
from scheduler.solver.plugins.volume_claims import PodVolumes, pod_volumes, view_of

NAME = "VolumeBinding"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
NODE_CONFLICT = "node(s) had volume node affinity conflict"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
"""binder.go ``ErrReasonBindConflict``, ``ErrReasonNodeConflict``, ``ErrReasonPVNotExist`` (v1.37)."""

ShapeKey = tuple[object, ...]


@dataclass(frozen=True, slots=True)
class Candidate:
    """An available PV a claim could be bound to: its name, capacity (bytes) and the nodes it serves."""

    name: str
    capacity: int
    mask: BoolArray


@dataclass(eq=False)
class Shape:
    """One WaitForFirstConsumer claim of the signature's pods (the i-th claim of every pod has the same shape).

    ``pinned``: the claim is annotated for a node (its row, -1 for a node not in the table): only that
    node, and provisioning. ``provision``: nodes the class provisions for. ``candidates``: PVs, smallest
    first; ``by_row``: row → indexes into ``candidates`` whose PV serves that row (built on first use).
    ``shared``: the claim is named by several pods — its identity matters (its key), not only its shape.
    """

    request: int
    pinned: int | None
    provision: BoolArray
    candidates: tuple[Candidate, ...]
    shared: str | None
    by_row: dict[int, tuple[int, ...]] | None = None

    def on_row(self, row: int) -> tuple[int, ...]:
        if self.by_row is None:
            index: dict[int, list[int]] = {}
            for i, c in enumerate(self.candidates):
                for r in np.flatnonzero(c.mask):
                    index.setdefault(int(r), []).append(i)
            self.by_row = {r: tuple(ix) for r, ix in index.items()}
        return self.by_row.get(row, ())


@dataclass(eq=False)
class SigVolumes:
    """Per signature (PreFilter's result): ``bound_ok`` (nodes every bound claim's PV allows), ``pv_missing``,
    ``unbound_ok`` (nodes where every WaitForFirstConsumer claim can be pinned, provisioned or matched
    ignoring the plan), ``shapes`` in greedy order (smallest request first), and ``counted``: nodes where
    some claim can only be matched, so the plan's taken PVs bound the copies."""

    bound_ok: BoolArray
    pv_missing: bool
    unbound_ok: BoolArray
    shapes: tuple[Shape, ...]
    counted: BoolArray
    interacting: bool

    @property
    def ok(self) -> BoolArray:
        return self.bound_ok & self.unbound_ok if not self.pv_missing else np.zeros_like(self.bound_ok)


@dataclass(eq=False)
class VolumeBindingState:
    """The plugin's cycle state: claim key → [row, PV name or None, pod keys], and the PVs taken."""

    decisions: dict[str, list[Any]] = field(default_factory=dict)
    taken: set[str] = field(default_factory=set)


SIG: StateKey[SigVolumes] = StateKey(f"{NAME}/signature")
CYCLE: StateKey[VolumeBindingState] = StateKey(f"{NAME}/cycle")


def cycle_of(state: CycleState) -> VolumeBindingState:
    return state.setdefault(CYCLE, VolumeBindingState)


def pv_mask(table: NodeTable, volume: PersistentVolume) -> BoolArray:
    """Nodes a PV's ``spec.nodeAffinity.required`` admits, on labels only (``CheckNodeAffinity``); all without one."""
    affinity = volume.spec.node_affinity
    if affinity is None or affinity.required is None:
        return np.ones(len(table), dtype=bool)
    return table.selector_mask(affinity.required, names=False)


def provision_mask(table: NodeTable, klass: StorageClass) -> BoolArray:
    """Nodes the class provisions for: none without a provisioner; else those its ``allowedTopologies`` admit
    (``MatchTopologySelectorTerms``: no terms admit every node; an empty term admits none)."""
    if not klass.provisions:
        return np.zeros(len(table), dtype=bool)
    if not klass.allowed_topologies:
        return np.ones(len(table), dtype=bool)
    terms = tuple(NodeSelectorTerm(match_expressions=tuple(
        NodeSelectorRequirement(key=r.key, operator="In", values=r.values) for r in t.match_label_expressions))
        for t in klass.allowed_topologies)
    return table.selector_mask(NodeSelector(node_selector_terms=terms), names=False)


def _candidates(view: StorageView, table: NodeTable, claim: PersistentVolumeClaim) -> tuple[Candidate, ...]:
    """The PVs ``FindMatchingVolume`` could give the claim on some node, smallest first; a PV pre-bound to the
    claim is the only candidate (it wins wherever its node affinity holds)."""
    names = view.by_class.get(claim.storage_class, ())
    request = claim.request_bytes
    found: list[Candidate] = []
    for name in names:
        pv = view.volumes.get(name)
        if pv is None or pv.capacity_bytes < request or pv.volume_mode != claim.volume_mode:
            continue
        if pv.metadata.deletion_timestamp is not None:
            continue
        if pv.spec.claim_ref is not None:
            if pv.bound_to(claim):
                return (Candidate(pv.name, pv.capacity_bytes, pv_mask(table, pv)),)
            continue
        if pv.status.phase != AVAILABLE or not all(m in pv.spec.access_modes for m in claim.spec.access_modes):
            continue
        selector = claim.spec.selector
        if selector is not None and not label_selector_matches(selector, pv.metadata.labels):
            continue
        found.append(Candidate(pv.name, pv.capacity_bytes, pv_mask(table, pv)))
    found.sort(key=lambda c: (c.capacity, c.name))
    return tuple(found)


def shape_key(view: StorageView, claim: PersistentVolumeClaim) -> ShapeKey:
    """What of a WaitForFirstConsumer claim the plugin reads: two pods whose claims have equal keys schedule alike."""
    selector = claim.spec.selector
    claimed = view.claimed.get(claim.key, ())
    return (claim.request_bytes, claim.selected_node or "", claim.storage_class, tuple(sorted(claim.spec.access_modes)),
            claim.volume_mode, "" if selector is None else repr(selector), claimed,
            claim.key if claim.key in view.shared else "")


def delay_order(view: StorageView, volumes: PodVolumes) -> list[PersistentVolumeClaim]:
    """A pod's WaitForFirstConsumer claims in greedy order: smallest request first, then by shape and name
    (so the i-th claims of two pods of one signature have the same shape)."""
    return sorted(volumes.delay, key=lambda c: (shape_key(view, c), c.metadata.name))


class VolumeBinding:
    """PreFilter, Filter, Reserve and Outcome for PersistentVolumeClaims; see the module docstring."""

    name = NAME

    # -- PreFilter -----------------------------------------------------------------------------
    def signature_key(self, state: CycleState, pod: Pod) -> Hashable:
        if not pod.spec.volumes:
            return ()  # the common case, first: a pod without volumes costs one attribute read
        volumes = pod_volumes(state, pod)
        if not volumes.any:
            return ()
        if volumes.error is not None:
            return ("error", volumes.error)
        view = view_of(state)
        bound = tuple(sorted((repr(pv.spec.node_affinity) if pv is not None else "missing")
                             for _, pv in volumes.bound))
        return bound, tuple(shape_key(view, c) for c in delay_order(view, volumes))

    def pre_filter(self, state: CycleState, sig: Signature) -> BoolArray | None:
        if not sig.pods[0].spec.volumes:
            return None
        volumes = pod_volumes(state, sig.pods[0])
        if volumes.error is not None:
            sig.rejected = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (volumes.error,), NAME)
            return None
        if not volumes.bound and not volumes.delay:
            return None
        view, table = view_of(state), state.table
        n = len(table)
        bound_ok = np.ones(n, dtype=bool)
        pv_missing = False
        for _, pv in volumes.bound:
            if pv is None:
                pv_missing = True
            else:
                bound_ok &= pv_mask(table, pv)
        unbound_ok = np.ones(n, dtype=bool)
        counted = np.zeros(n, dtype=bool)
        shapes: list[Shape] = []
        interacting = False
        for claim in delay_order(view, volumes):
            klass = view.class_of(claim)
            assert klass is not None  # a claim without an existing WaitForFirstConsumer class is not `delay`
            provision = provision_mask(table, klass)
            shared = claim.key if claim.key in view.shared else None
            node = claim.selected_node
            if node is not None:
                row = table.index.get(node, -1)
                pinned = np.zeros(n, dtype=bool)
                if row >= 0:
                    pinned[row] = True
                shapes.append(Shape(claim.request_bytes, row, provision, (), shared))
                unbound_ok &= pinned & provision
                continue
            candidates = _candidates(view, table, claim)
            shapes.append(Shape(claim.request_bytes, None, provision, candidates, shared))
            reachable = provision.copy()
            for c in candidates:
                reachable |= c.mask
            unbound_ok &= reachable
            counted |= reachable & ~provision
            interacting |= shared is not None or any(int(c.mask.sum()) > 1 for c in candidates)
        data = SigVolumes(bound_ok, pv_missing, unbound_ok, tuple(shapes), counted, interacting)
        sig.write(SIG, data)
        return data.ok

    # -- Filter --------------------------------------------------------------------------------
    def filter(self, state: CycleState, sig: Signature, rows: IntArray) -> IntArray:
        data: SigVolumes | None = sig.data.get(SIG.name)
        if data is None:
            return np.full(len(rows), UNLIMITED, dtype=np.int64)
        caps = self._unbound_caps(state, data, rows, len(sig.pods))
        if data.pv_missing:
            return np.zeros(len(rows), dtype=np.int64)
        return np.where(data.bound_ok[rows], caps, 0).astype(np.int64)

    def _unbound_caps(self, state: CycleState, data: SigVolumes, rows: IntArray, limit: int) -> IntArray:
        """Copies the WaitForFirstConsumer claims allow on each of ``rows``, given the plan so far."""
        caps = np.where(data.unbound_ok[rows], UNLIMITED, 0).astype(np.int64)
        cycle = state.get(CYCLE)
        taken: set[str] = cycle.taken if cycle is not None else set()
        decisions: dict[str, list[Any]] = cycle.decisions if cycle is not None else {}
        for shape in data.shapes:
            decided = decisions.get(shape.shared) if shape.shared is not None else None
            if decided is not None:  # a shared claim decided by an earlier placement: its node only
                caps[rows != decided[0]] = 0
        for i in np.flatnonzero((caps > 0) & data.counted[rows]):
            caps[i] = self._copies(data, int(rows[i]), taken, decisions, limit)
        return caps

    @staticmethod
    def _copies(data: SigVolumes, row: int, taken: set[str], decisions: dict[str, list[Any]], limit: int) -> int:
        """How many copies kube's greedy matching serves on ``row`` (at most ``limit``), given the PVs taken;
        claims the row provisions for, pinned claims and shared claims already decided need no PV."""
        used: set[str] = set()
        for copy in range(limit):
            for shape in data.shapes:
                if shape.pinned is not None or shape.provision[row]:
                    continue
                if shape.shared is not None and shape.shared in decisions:
                    continue
                if _pick(shape, row, taken, used) is None:
                    return copy
        return limit

    def rejections(self, state: CycleState, sig: Signature, rows: IntArray) -> Rejections:
        """Each refused node counts every reason that holds, in kube's order (``FindPodVolumes``): a bound claim's
        PV does not admit it, an unbound claim finds no volume there, a bound claim's PV does not exist."""
        data: SigVolumes | None = sig.data.get(SIG.name)
        counts: Counter[str] = Counter()
        if data is not None and len(rows):
            counts[NODE_CONFLICT] = int((~data.bound_ok[rows]).sum())
            counts[BIND_CONFLICT] = int((self._unbound_caps(state, data, rows, len(sig.pods)) <= 0).sum())
            counts[PV_NOT_EXIST] = len(rows) if data.pv_missing else 0
        return Rejections(+counts, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def interacts(self, state: CycleState, sig: Signature) -> bool:
        data: SigVolumes | None = sig.data.get(SIG.name)
        return data is not None and data.interacting

    # -- Reserve -------------------------------------------------------------------------------
    def reserve(self, state: CycleState, sig: Signature, row: int, pods: tuple[Pod, ...]) -> tuple[int, Any]:
        data: SigVolumes | None = sig.data.get(SIG.name)
        if data is None or not data.shapes:
            return len(pods), None
        cycle = cycle_of(state)
        view = view_of(state)
        undo: list[tuple[str, str, str | None]] = []
        for pod in pods:
            for shape, claim in zip(data.shapes, delay_order(view, pod_volumes(state, pod)), strict=True):
                decided = cycle.decisions.get(claim.key)
                if decided is not None:
                    assert decided[0] == row, f"{claim.key} is decided for another node"  # Filter's guarantee
                    decided[2].append(pod.key)
                    undo.append(("user", claim.key, pod.key))
                    continue
                volume = None
                if shape.pinned is None:
                    pick = _pick(shape, row, cycle.taken, set())
                    volume = shape.candidates[pick].name if pick is not None else None
                    assert volume is not None or shape.provision[row], f"{claim.key}: no volume on row {row}"
                if volume is not None:
                    cycle.taken.add(volume)
                cycle.decisions[claim.key] = [row, volume, [pod.key]]
                undo.append(("new", claim.key, volume))
        return len(pods), undo

    def unreserve(self, state: CycleState, placement: Placement, token: Any) -> None:
        if not token:
            return
        cycle = state.read(CYCLE)
        for what, key, value in reversed(token):
            if what == "user":
                cycle.decisions[key][2].remove(value)
            else:
                del cycle.decisions[key]
                if value is not None:
                    cycle.taken.discard(value)

    # -- Outcome -------------------------------------------------------------------------------
    def plan_fields(self, state: CycleState) -> PlanFields:
        return {"volumes": self.bindings(state)}

    def notes(self, state: CycleState) -> tuple[str, ...]:
        return ()

    def bindings(self, state: CycleState) -> tuple[VolumeClaimBinding, ...]:
        """Every WaitForFirstConsumer claim the plan binds, with its node and PV (None: provisioned), by claim key."""
        cycle = state.get(CYCLE)
        if cycle is None:
            return ()
        nodes = state.table.nodes
        return tuple(VolumeClaimBinding(key, nodes[row].name, volume, tuple(pods))
                     for key, (row, volume, pods) in sorted(cycle.decisions.items()))


def _pick(shape: Shape, row: int, taken: set[str], used: set[str]) -> int | None:
    """The smallest candidate of ``shape`` serving ``row`` that is neither ``taken`` (by the plan) nor ``used``
    (by earlier copies being counted); adds it to ``used``. None when there is none."""
    for i in shape.on_row(row):
        name = shape.candidates[i].name
        if name not in taken and name not in used:
            used.add(name)
            return i
    return None


PLUGIN = VolumeBinding()

VOLUME_KINDS = frozenset({"PersistentVolumeClaim", "PersistentVolume", "StorageClass", "CSINode"})


def gate(snapshot: Snapshot, pending: Sequence[Pod], asked: frozenset[str]) -> bool:
    """Whether the volume plugins (VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone) have
    anything to judge: some pending pod of the root has a claim or a legacy disk among its ``spec.volumes``
    (``Volume.judged``; a pod with none — every pod has the projected token volume — is never refused by
    them, so plain gangs pay nothing for them)."""
    return ASKS_VOLUMES in asked


def queueing_hint(event: ClusterEvent) -> bool:
    """A claim, volume, class or CSINode added or changed (a claim created or bound, a PV made available, a
    class created — kube registers PVC/PV/StorageClass/CSINode Add|Update), or a node added or relabelled
    (a bound PV's node affinity or a class's topology may now match)."""
    if event.kind in VOLUME_KINDS:
        return event.action is not Action.DELETE
    if event.kind == "Node":
        return event.action is Action.ADD or (event.action is Action.UPDATE
                                              and event.old.metadata.labels != event.new.metadata.labels)
    return False
