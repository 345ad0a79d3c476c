"""DynamicResources' Score: prefer the nodes where a pod's claims can take a share of a device already partly used.

On a node, the allocator tries shared devices (``allowMultipleAllocations``, KEP-5075) that already have an
allocation first, the fullest first (:mod:`scheduler.dra.allocator`). This Score plugin carries the same rule
to the choice among nodes: for each per-pod request whose first choice may be served by a shared device, a node
earns credit when it reaches a matching shared device that already has a share — in the cluster, in a plan in
flight, or placed earlier in this plan (a group's shared claims held meanwhile included) — and still has room
for one more share of the request: 50 for such a device, up to 100 as it is fuller (its fullest capacity's
used fraction). A node's score is the mean over those requests, less the lowest score among the candidates
(so no preference when every candidate is alike), weight 1 (the weight kube-scheduler's default profile gives
DynamicResources). Shares then pack onto few devices, and fresh shared devices and whole devices stay free.

kube-scheduler v1.37's DynamicResources Score ranks nodes only by which ``firstAvailable`` sub-request the
node's allocation used (the earlier the choice, the higher; gate ``DRAPrioritizedList``): it has no term for
partly used devices, so its choice among nodes opens fresh shared devices as readily as it fills used ones.

Cheap: a signature none of whose per-pod requests can use a shared device gets no score (None), and its
placement is unchanged. Otherwise the devices partly used in the cluster are judged once per solve and
request; each call judges again only the devices this solve's device journal touched, and spreads the credit
over the candidate rows with one vectorised maximum.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import numpy as np

from scheduler.dra.allocator import Device, DeviceState, SubRequest, _tolerated, amounts_of
from scheduler.dra.inventory import Inventory
from scheduler.framework.cycle_state import CycleState, StateKey
from scheduler.framework.interface import Signature
from scheduler.framework.node_table import IntArray
from scheduler.solver.plugins.dynamic_resources import DEVICES, KINDS, NAME, SPECS, DynamicResourcesState

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
    """Partly used shared devices as a Score plugin; see the module docstring."""

    name = NAME
    weight = WEIGHT

    def score(self, state: CycleState, sig: Signature, rows: IntArray) -> IntArray | None:
        per_kind = requests(state, sig)
        if not per_kind:
            return None
        cycle = state.read(DEVICES)
        kinds = sig.data.get(KINDS.name)
        total = np.zeros(len(rows), dtype=np.int64)
        for kind, subs in enumerate(per_kind):
            if not subs:
                continue
            part = np.zeros(len(rows), dtype=np.int64)
            for sub in subs:
                part += node_credit(state, cycle, sub)[rows]
            part //= len(subs)
            if kinds is None:
                total = part
            else:
                here = kinds[rows] == kind
                total[here] = part[here]
        if not total.size:
            return total
        return np.asarray(total - total.min(), dtype=np.int64)

    def interacts(self, state: CycleState, sig: Signature) -> bool:
        """Each copy placed may take a share of a device: the scores change with every placement."""
        return bool(requests(state, sig))


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


def node_credit(state: CycleState, cycle: DynamicResourcesState, sub: SubRequest) -> IntArray:
    """(N,) int over every node row: the best :func:`credit` for ``sub`` of a device the node reaches."""
    inventory = cycle.view.inventory
    index = inventory.device_index()
    devices = cycle.state
    touched = {e.id if isinstance(e, Device) else e.device.id for e in devices.journal}
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
