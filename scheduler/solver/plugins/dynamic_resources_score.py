"""DynamicResources' Score: prefer the nodes where a pod's claims get their first ``firstAvailable`` choice, and
where they can take a share of a device already partly used.

Two terms, each 0..100 per node; a node's score is their mean over the terms that apply to the pod (so each moves a
node by at most 50 when both apply, and neither swamps the other), less the lowest score among the candidates (no
preference when every candidate is alike), weight 1 (the weight kube-scheduler's default profile gives
DynamicResources).

* **Rank** (kube-scheduler's own Score, gate ``DRAPrioritizedList``, on by default: ``computeScore`` and
  ``NormalizeScore`` in pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go): for each per-pod
  request with ``firstAvailable`` alternatives, ``8 − i`` where ``i`` is the index of the choice the node's
  allocation uses (8: ``FirstAvailableDeviceRequestMaxSize``), summed over the pod's claims, then scaled to 0..100
  by the highest sum among the candidates (``helper.DefaultNormalizeScore``: ``100 · sum // max``). kube-scheduler
  knows the choice because its Filter runs the allocator on every node; here devices are allocated only on the
  node chosen, so the choice is bounded as the Filter bounds nodes: the first choice for which the node reaches
  ``count`` matching devices not allocated (in the cluster, in flight, or earlier in this solve — admin access:
  allocated or not; ``All``: at least one, at most 32, and every one free, as the allocator asks); none → 0 for
  that request. A request with a single choice (``exactly``) earns the same everywhere and is left out.
* **Packing**: on a node, the allocator tries shared devices (``allowMultipleAllocations``, KEP-5075) that already
  have an allocation first, the fullest first (:mod:`scheduler.dra.allocator`). This term carries the same rule
  to the choice among nodes: for each per-pod request whose first choice may be served by a shared device, a node
  earns credit when it reaches a matching shared device that already has a share — in the cluster, in a plan in
  flight, or placed earlier in this plan (a group's shared claims held meanwhile included) — and still has room
  for one more share of the request: 50 for such a device, up to 100 as it is fuller (its fullest capacity's
  used fraction); the term is the mean over those requests. Shares then pack onto few devices, and fresh shared
  devices and whole devices stay free. kube-scheduler has no such term: its choice among nodes opens fresh
  shared devices as readily as it fills used ones.

Cheap: a signature with neither a ``firstAvailable`` request nor a request a shared device may serve gets no score
(None), and its placement is unchanged. The rank's matching devices are memoised per (class, selectors) by the
inventory, and which devices are allocated is taken once per solve and then corrected only at the devices this
solve's device journal touched; each option costs one vectorised count per node. The packing term judges the
devices partly used in the cluster once per solve and request; each call judges again only the devices the
journal touched, and spreads the credit over the candidate rows with one vectorised maximum.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import numpy as np

from scheduler.dra.allocator import (
    MAX_DEVICES_PER_CLAIM,
    Device,
    DeviceState,
    Request,
    SubRequest,
    _tolerated,
    amounts_of,
)
from scheduler.dra.inventory import Inventory
from scheduler.framework.cycle_state import CycleState, StateKey
from scheduler.framework.interface import Signature
from scheduler.framework.node_table import BoolArray, IntArray
from scheduler.solver.plugins.dynamic_resources import (
    DEVICES,
    KINDS,
    NAME,
    SPECS,
    DynamicResourcesState,
    per_node,
)

WEIGHT = 1
"""Score weight: kube-scheduler's default profile lists DynamicResources without one, which counts as 1
(apis/config/v1/default_plugins.go)."""

PACKING: StateKey[tuple[tuple[SubRequest, ...], ...]] = StateKey(f"{NAME}/packing")
"""Per signature and kind of node: the first choice of each per-pod request there that a shared device may serve
(empty: no score)."""
STANDING: StateKey[dict[int, _Standing]] = StateKey(f"{NAME}/standing")
"""Per solve: id of a sub-request → its credit from the devices partly used when first asked."""


@dataclass(frozen=True, slots=True)
class _Standing:
    """The credit of partly used devices matching one sub-request, judged once per solve.

    ``positions``/``credits``: the devices with shares then that earn credit, over the inventory's device index;
    ``judged_live``: the devices this solve's journal had touched by then (their state then was not the
    cluster's), judged again on every call.
    """

    positions: IntArray
    credits: IntArray
    judged_live: frozenset[str]


def credit(state: DeviceState, sub: SubRequest, device: Device) -> int:
    """0..100: 0 unless ``device`` is shared, already has a share, tolerates ``sub`` and has room for one more
    share of it; then 50, plus up to 50 by how full it is (:meth:`DeviceState.fullness`)."""
    if not device.shared or not state.shares.get(device.id) or not _tolerated(sub, device):
        return 0
    amounts = amounts_of(sub, device)
    if amounts is None or not state.fits(device, amounts):
        return 0
    return 50 + int(50 * min(state.fullness(device), Decimal(1)))


class DynamicResourcesScore:
    """The ``firstAvailable`` rank and partly used shared devices as a Score plugin; see the module docstring."""

    name = NAME
    weight = WEIGHT

    def score(self, state: CycleState, sig: Signature, rows: IntArray) -> IntArray | None:
        packing, ranked = requests(state, sig), ranked_requests(sig)
        if not packing and not ranked:
            return None
        cycle = state.read(DEVICES)
        kinds = sig.data.get(KINDS.name)
        pack = np.zeros(len(rows), dtype=np.int64)
        raw = np.zeros(len(rows), dtype=np.int64)
        terms = np.zeros(len(rows), dtype=np.int64)  # per row: how many terms apply (its kind's)
        touched = _touched(cycle.state)
        taken = taken_now(state, cycle, touched) if ranked else None
        for kind in range(max(len(packing), len(ranked))):
            here = slice(None) if kinds is None else kinds[rows] == kind
            subs = packing[kind] if packing else ()
            if subs:
                part = np.zeros(len(rows), dtype=np.int64)
                for sub in subs:
                    part += node_credit(state, cycle, sub, touched)[rows]
                pack[here] = (part // len(subs))[here]
                terms[here] += 1
            if ranked and ranked[kind]:
                assert taken is not None
                summed = np.zeros(len(rows), dtype=np.int64)
                for request in ranked[kind]:
                    summed += rank(cycle, request, taken)[rows]
                raw[here] = summed[here]
                terms[here] += 1
        if not len(rows):
            return pack
        top = int(raw.max())
        total = (pack + (100 * raw // top if top else raw)) // np.maximum(terms, 1)
        return np.asarray(total - total.min(), dtype=np.int64)

    def interacts(self, state: CycleState, sig: Signature) -> bool:
        """Each copy placed takes devices, maybe a share of one: the scores change with every placement."""
        return bool(requests(state, sig)) or bool(ranked_requests(sig))


SCORE = DynamicResourcesScore()


def requests(state: CycleState, sig: Signature) -> tuple[tuple[SubRequest, ...], ...]:
    """Per kind of node (:data:`~scheduler.solver.plugins.dynamic_resources.KINDS`: which extended resources its
    nodes serve through DRA), the first choice of each of ``sig``'s per-pod requests there that a shared device
    matching it may serve, memoised in the signature (:data:`PACKING`); empty for a pod without per-pod claims or
    without such a device. Admin access (it holds no share) and ``All`` (every matching device) are left out."""
    hit = sig.data.get(PACKING.name)
    if hit is None:
        hit = ()
        cycle = state.get(DEVICES)
        specs = sig.data.get(SPECS.name)
        if specs and cycle is not None:
            inventory = cycle.view.inventory
            index = inventory.device_index()
            if index.any_shared:
                hit = tuple(
                    tuple(sub for sub in (r.options[0] for spec in variant for r in spec.requests)
                          if not sub.admin and not sub.all
                          and bool((inventory.usable_counts(sub, cycle.errors)[1] & index.shared).any()))
                    for variant in specs)
                if not any(hit):
                    hit = ()
        sig.write(PACKING, hit)
    return hit


def node_credit(state: CycleState, cycle: DynamicResourcesState, sub: SubRequest, touched: set[str]) -> IntArray:
    """(N,) int over every node row: the best :func:`credit` for ``sub`` of a device the node reaches. ``touched``:
    the devices this solve's journal touched (:func:`_touched`)."""
    inventory = cycle.view.inventory
    index = inventory.device_index()
    devices = cycle.state
    judged = state.setdefault(STANDING, dict)
    standing = judged.get(id(sub))
    if standing is None:
        standing = judged[id(sub)] = _judge(inventory, devices, sub, touched)
    out = np.zeros(len(inventory.table), dtype=np.int64)
    positions, credits = standing.positions, standing.credits
    if touched and len(positions):  # a device the journal touched is judged live instead
        moved = np.zeros(len(index.ids), dtype=bool)
        moved[[index.position[d] for d in touched if d in index.position]] = True
        keep = ~moved[positions]
        positions, credits = positions[keep], credits[keep]
    matching = inventory.usable_counts(sub)[1]
    live = [(index.position[d], c) for d in touched | standing.judged_live
            if d in index.position and matching[index.position[d]]
            and (c := credit(devices, sub, inventory.devices[d])) > 0]
    if live:
        positions = np.concatenate([positions, np.array([p for p, _ in live], dtype=np.intp)])
        credits = np.concatenate([credits, np.array([c for _, c in live], dtype=np.int64)])
    if not len(positions):
        return out
    homes = index.home[positions]
    local = homes >= 0
    np.maximum.at(out, homes[local], credits[local])
    for position, c in zip(positions[~local].tolist(), credits[~local].tolist(), strict=True):
        np.maximum(out, inventory.reach[index.ids[position]] * c, out=out)  # node-set and all-nodes devices
    return out


def _judge(inventory: Inventory, devices: DeviceState, sub: SubRequest, touched: set[str]) -> _Standing:
    """The :class:`_Standing` of ``sub``: the devices with shares now that match it, judged as they are."""
    index = inventory.device_index()
    matching = inventory.usable_counts(sub)[1] & index.shared
    ids = [d for d in devices.shares if d not in touched and d in index.position and matching[index.position[d]]]
    judged = [(index.position[d], credit(devices, sub, inventory.devices[d])) for d in ids]
    judged = [(p, c) for p, c in judged if c > 0]
    return _Standing(np.array([p for p, _ in judged], dtype=np.intp),
                     np.array([c for _, c in judged], dtype=np.int64), frozenset(touched))


MAX_SUB_REQUESTS = 8
"""The most ``firstAvailable`` choices a request may list, and the rank of the first (kube-scheduler's
``resourceapi.FirstAvailableDeviceRequestMaxSize``)."""
RANKED: StateKey[tuple[tuple[Request, ...], ...]] = StateKey(f"{NAME}/ranked")
"""Per signature and kind of node: the per-pod requests there with ``firstAvailable`` alternatives (empty: none)."""
TAKEN: StateKey[tuple[BoolArray, frozenset[str]]] = StateKey(f"{NAME}/taken")
"""Per solve: the devices allocated when first asked, over the inventory's device index, and the devices this
solve's journal had touched then (judged live on every call)."""


def ranked_requests(sig: Signature) -> tuple[tuple[Request, ...], ...]:
    """Per kind of node, ``sig``'s per-pod requests with more than one ``firstAvailable`` choice, memoised in the
    signature (:data:`RANKED`); empty when there is none on any kind."""
    hit = sig.data.get(RANKED.name)
    if hit is None:
        specs = sig.data.get(SPECS.name) or ()
        hit = tuple(tuple(r for spec in variant for r in spec.requests if len(r.options) > 1) for variant in specs)
        if not any(hit):
            hit = ()
        sig.write(RANKED, hit)
    return hit


def taken_now(state: CycleState, cycle: DynamicResourcesState, touched: set[str]) -> BoolArray:
    """(D,) bool over the inventory's device index: the devices allocated whole now (in the cluster, in flight, or
    earlier in this solve). Built once per solve; each call sets again only the devices the journal touched
    (``touched``, :func:`_touched`)."""
    index = cycle.view.inventory.device_index()
    devices = cycle.state
    base = state.get(TAKEN)
    if base is None:
        base = (index.mask(devices.taken), frozenset(touched))
        state.write(TAKEN, base)
    mask, live = base
    if not touched and not live:
        return mask
    mask = mask.copy()
    for device in touched | live:
        position = index.position.get(device)
        if position is not None:
            mask[position] = device in devices.taken
    return mask


def rank(cycle: DynamicResourcesState, request: Request, taken: BoolArray) -> IntArray:
    """(N,) int over every node row: ``8 − i`` for the first choice ``i`` of ``request`` the node has the devices
    for (see the module docstring), 0 where none is."""
    inventory = cycle.view.inventory
    out = np.zeros(len(inventory.table), dtype=np.int64)
    open_ = np.ones(len(out), dtype=bool)  # rows no earlier choice fits
    for i, sub in enumerate(request.options[:MAX_SUB_REQUESTS]):
        matching = inventory.usable_counts(sub, cycle.errors)[1]
        if sub.all:
            reached = per_node(inventory, matching)
            fits = (reached >= 1) & (reached <= MAX_DEVICES_PER_CLAIM)
            if not sub.admin:
                fits &= per_node(inventory, matching & ~taken) == reached
        else:
            fits = per_node(inventory, matching if sub.admin else matching & ~taken) >= sub.count
        fits &= open_
        out[fits] = MAX_SUB_REQUESTS - i
        open_ &= ~fits
        if not open_.any():
            break
    return out


def _touched(devices: DeviceState) -> set[str]:
    """The ids of the devices this solve's device journal took, shared or gave back."""
    return {e.id if isinstance(e, Device) else e.device.id for e in devices.journal}
