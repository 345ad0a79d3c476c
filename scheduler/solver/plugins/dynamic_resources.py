"""DynamicResources: device allocation inside the gang search (kube-scheduler's DynamicResources plugin).

The plugin decides every claim of the tree against one scratch
:class:`~scheduler.dra.allocator.DeviceState` per solve (its cycle state, :data:`DEVICES`), journaled
with the nodes, so two members or two sibling groups never get the same device, a group's shared
claim is allocated once, and the search's undo also returns devices and counters.

* PreFilter resolves each signature's claims (per-pod claims to allocate, allocated claims that pin
  nodes, a claim not created yet → the signature waits, with the reason); an extended resource a DeviceClass
  serves is decided node by node, as kube-scheduler's ``extendeddynamicresources.go`` does: a node offering a
  non-zero amount of it in its allocatable serves it (NodeResourcesFit counts it there,
  :attr:`~scheduler.framework.interface.Signature.node_or_dra`), every other node through DRA (the pod's
  synthetic claim, with the requests for the resources that node does not offer: the claims differ per kind
  of node, :data:`KINDS`);
* Filter allows only the nodes that pinned claims admit and that reach enough matching devices;
* Reserve allocates ``k`` copies of the signature's per-pod claims on the node (exact, best fit
  first, backtracking across the copies — :mod:`scheduler.dra.allocator`); it is the profile's
  *first* Reserve plugin because it may place fewer copies than the Filter allowed;
* Shared (:class:`~scheduler.framework.interface.SharedResourcePlugin`): :meth:`DynamicResources.hold`
  holds the allocations of a leaf's shared claims (PodGroup claims, claims several pods name) one way
  after another; while one is held, the Filter allows each signature only the nodes reaching the
  devices of the shared claims *its* pods use;
* Outcome (:class:`~scheduler.framework.interface.OutcomePlugin`): :meth:`DynamicResources.claim_allocations`
  turns what the plan holds into ``ClaimAllocation`` values; the selector errors are the solve's notes.

Selector errors (CEL) met during the solve are collected per solve (never shared between roots) and
quoted in that solve's messages.
"""

from __future__ import annotations

import dataclasses
import functools
import uuid
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scheduler.dra.allocator import (
    MAX_DEVICES_PER_CLAIM,
    BudgetExceeded,
    ClaimSpec,
    Device,
    DeviceState,
    Request,
    Result,
    SubRequest,
    _Budget,
    allocate_copies,
    allocate_pods,
    amounts_of,
    claim_alternatives,
)
from scheduler.dra.capacity import Amounts
from scheduler.dra.claims import NeededClaim, PodClaims
from scheduler.dra.device_snapshot import DraView
from scheduler.dra.inventory import INCOMPLETE_POOLS, INVALID_POOLS, Inventory
from scheduler.framework.cycle_state import CycleState, Placement, StateKey
from scheduler.framework.events import Action, ClusterEvent
from scheduler.framework.interface import Rejections, Signature
from scheduler.framework.node_table import BoolArray, IntArray
from scheduler.framework.plan import ClaimAllocation, PlanFields
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.model.dra import DeviceUse
from scheduler.model.pod import NodeSelector, Pod
from scheduler.solver.plugins.resources_fit import UNLIMITED

NAME = "DynamicResources"
REASON = "cannot allocate all claims"
"""Node histogram reason when node resources fit but the claims' devices cannot be allocated
(kube-scheduler dynamicresources.go wording)."""

ALLOCATION_BUDGET = 2000
"""Device combinations tried per node and per shared-claim search (bounds a hard node's time)."""


@dataclass(frozen=True, slots=True)
class SharedAllocation:
    """A leaf-level claim allocated for a whole group: the claim, its devices, where they are usable."""

    claim: NeededClaim
    results: tuple[Result, ...]
    reused: bool = False
    """True when another leaf of the tree already allocated this claim in the plan (shared by name)."""
    node: int | None = None
    """Row of the node the allocation is pinned to: a device with ``bindsToNode`` (KEP-5007) in a claim several
    pods share binds it to one node, so every consumer goes there (None: where its devices reach)."""

    @property
    def binds(self) -> bool:
        """Whether a device of the allocation binds it to the node chosen (``bindsToNode``)."""
        return any(d.binds_to_node for _, d in self.results)


@dataclass(frozen=True, slots=True)
class SharedClaim:
    """A claim a leaf's pending pods hold in common (:meth:`DynamicResources.held_in_common`): the claim, the
    pending pods that use it, and how many pending pods of the leaf do not."""

    claim: NeededClaim
    consumers: tuple[Pod, ...]
    others: int

    @property
    def key(self) -> str:
        return self.claim.key


@dataclass(eq=False)
class DynamicResourcesState:
    """The plugin's cycle state: the solve's device view, scratch device state and selector errors."""

    view: DraView
    state: DeviceState
    errors: dict[str, str] = field(default_factory=dict)
    """(class or request) label → CEL selector error met by this solve."""
    shared_stack: list[tuple[str, tuple[SharedAllocation, ...]]] = field(default_factory=list)
    unpinned: dict[str, str] = field(default_factory=dict)
    """Shared claim key → why no node could take its consumers when a device of it binds to one (the last
    :meth:`DynamicResources.hold`'s; its :meth:`~DynamicResources.unheld_reason` quotes it)."""
    local: Counter[int] = field(default_factory=Counter)
    """Node row → pods placed there by this solve with per-pod claims allocated (kept with the journal)."""
    matches: Callable[[SubRequest, Device], bool] = field(init=False)
    """The inventory's selector check, reporting into :attr:`errors` (the allocator's matcher)."""

    def __post_init__(self) -> None:
        self.matches = functools.partial(self.view.inventory.matches, errors=self.errors)


DEVICES: StateKey[DynamicResourcesState] = StateKey(f"{NAME}/devices")
THROUGH_DRA: StateKey[tuple[tuple[str, ...], ...]] = StateKey(f"{NAME}/through-dra")
"""Per signature and kind of node (see :data:`KINDS`): the pod's extended resources those nodes serve through DRA
(those they do not offer a non-zero amount of); one kind, serving all of them, unless nodes differ."""
SPECS: StateKey[tuple[tuple[ClaimSpec, ...], ...]] = StateKey(f"{NAME}/specs")
"""Per signature and kind of node: the specs of the per-pod claims each member needs allocated there."""
KINDS: StateKey[IntArray | None] = StateKey(f"{NAME}/kinds")
"""Per signature: node row → its kind, the index into :data:`SPECS` (None: one kind for every node)."""
MASK: StateKey[BoolArray] = StateKey(f"{NAME}/mask")
"""Per signature: nodes the members' allocated claims allow and that reach matching devices."""
SHARED: StateKey[tuple[str, ...]] = StateKey(f"{NAME}/shared")
"""Per signature: keys of the shared claims its pods use (their held allocation restricts the nodes)."""


def devices(state: CycleState) -> DynamicResourcesState | None:
    """The solve's device state, created on first use; None when the snapshot has no device view."""
    cycle = state.get(DEVICES)
    if cycle is None:
        view = state.snapshot.dra
        if view is None:
            return None
        assert isinstance(view, DraView)
        scratch = view.inventory.state(view.assumed)
        cycle = DynamicResourcesState(view, scratch)
        state.write(DEVICES, cycle)
    return cycle


def claims_of(state: CycleState, pod: Pod) -> PodClaims | None:
    """The pod's resolved claims, or None when it needs nothing from DRA."""
    cycle = devices(state)
    return cycle.view.pods.get(pod.key) if cycle is not None else None


def selector_errors(state: CycleState) -> list[str]:
    """The CEL selector errors this solve met, sorted (for its messages)."""
    cycle = state.get(DEVICES)
    return sorted(set(cycle.errors.values())) if cycle is not None else []


def _missing_class(cycle: DynamicResourcesState, claims: PodClaims) -> str | None:
    """Why a claim to allocate cannot be, before any device is looked at: one of its requests (any alternative of a
    ``firstAvailable`` one) names a DeviceClass that does not exist. kube-scheduler's PreFilter refuses the pod
    as UnschedulableAndUnresolvable then (``validateDeviceClass``: "device class … does not exist"), so no
    preemption is tried for it and a DeviceClass event brings it back."""
    inventory = cycle.view.inventory
    for needed in (*claims.allocate, *claims.shared):
        for request in needed.spec.requests:
            for sub in request.options:
                if sub.class_name not in inventory.classes:
                    label, message = inventory.missing_class(sub)
                    cycle.errors[label] = message
                    return message
    return None


class DynamicResources:
    """PreFilter, Filter, Reserve (short), Shared and Outcome for claims; see the module docstring."""

    name = NAME

    # -- PreFilter -----------------------------------------------------------------------------
    def signature_key(self, state: CycleState, pod: Pod) -> Hashable:
        claims = claims_of(state, pod)
        if claims is None:
            return ()
        return (tuple(n.spec for n in claims.allocate), tuple(n.key for n in claims.shared), claims.pinned,
                claims.waiting, claims.extended)

    def pre_filter(self, state: CycleState, sig: Signature) -> BoolArray | None:
        claims = claims_of(state, sig.pods[0])
        cycle = state.get(DEVICES)
        if claims is None or cycle is None:
            return None
        through: tuple[tuple[str, ...], ...] = (claims.extended,)
        kinds = None
        if claims.extended:  # from the allocatable of a node that offers it, through DRA elsewhere
            pod_requests = sig.pods[0].requests
            requests = {r: v for r, v in pod_requests.items() if r not in claims.extended}
            sig.request, sig.unknown = state.table.request_vector(requests)
            either, _ = state.table.request_vector({r: pod_requests[r] for r in claims.extended})
            if either.any():  # a resource no node lists is served through DRA everywhere
                sig.node_or_dra = either
                through, kinds = _kinds(state, claims.extended, either)
        specs = tuple(tuple(n.spec for n in _per_pod(claims, dra)) for dra in through)
        sig.needs_accelerator = sig.needs_accelerator or any(specs)
        sig.write(THROUGH_DRA, through)
        sig.write(SPECS, specs)
        sig.write(KINDS, kinds)
        sig.write(MASK, self._node_mask(cycle, claims, specs, kinds))
        sig.write(SHARED, tuple(n.key for n in claims.shared))
        if claims.waiting is not None:
            sig.rejected = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (claims.waiting,), NAME)
        elif (missing := _missing_class(cycle, claims)) is not None:
            sig.rejected = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (missing,), NAME)
        return None

    def _node_mask(self, cycle: DynamicResourcesState, claims: PodClaims, specs: Sequence[Sequence[ClaimSpec]],
                   kinds: IntArray | None) -> BoolArray:
        """Nodes the pod may use as far as DRA knows: allocated claims' selectors, and enough matching devices
        that are not held for the claims of the node's kind (a node outside the mask is one where Reserve finds no
        copy)."""
        inventory = cycle.view.inventory
        mask = np.ones(len(inventory.table), dtype=bool)
        pinned = cycle.view.pinned_mask(claims)
        if pinned is not None:
            mask &= pinned
        reach = np.zeros(len(mask), dtype=bool)
        for kind, variant in enumerate(specs):
            here = np.ones(len(mask), dtype=bool) if kinds is None else kinds == kind
            for spec in variant:
                for request in spec.requests:
                    usable = np.zeros(len(mask), dtype=bool)
                    for sub in request.options:
                        usable |= self._usable(cycle, sub)
                    here &= usable
            reach |= here
        return mask & reach

    @staticmethod
    def _usable(cycle: DynamicResourcesState, sub: SubRequest) -> BoolArray:
        """Nodes reaching at least ``sub.count`` matching devices outside the view's ``held`` ones (taken
        for the whole run: no undo returns them) (``All``: at least one matching device, taken or not); a device
        with ``allowMultipleAllocations`` counts :data:`MAX_DEVICES_PER_CLAIM` times (one claim may hold that many
        shares of it; KEP-5075), and what is left of its capacity is for Reserve to judge. A
        necessary condition for the allocator to satisfy ``sub`` on the node at any point of this run, so
        leaving the other nodes out changes no plan, only skips tries. Vectorised over the devices
        (masks over ``inventory.device_index()``): the cost does not grow with the number of held node-local
        devices; a held node-set or all-nodes device subtracts its reach one by one."""
        inventory = cycle.view.inventory
        counts, matching = inventory.usable_counts(sub, cycle.errors)
        if sub.all:
            return counts >= 1
        if sub.admin:  # admin access may use allocated devices: none is held from it
            return counts >= sub.count
        held = matching & cycle.view.held
        if held.any():
            index = inventory.device_index()
            rows = index.home[held]
            # bincount of rows + 1: the -1s (devices no single node reaches) fall into bin 0, dropped
            counts = counts - np.bincount(rows + 1, minlength=len(counts) + 1)[1:]
            shared = rows < 0
            if shared.any():  # node-set and all-nodes devices: every row that reaches them
                for position in np.flatnonzero(held)[shared]:
                    counts -= inventory.reach[index.ids[position]]
            if index.any_shared:  # a device with allowMultipleAllocations held whole counted as many
                for position in np.flatnonzero(held & index.shared):
                    counts -= inventory.reach[index.ids[position]] * (MAX_DEVICES_PER_CLAIM - 1)
        return counts >= sub.count

    # -- Filter --------------------------------------------------------------------------------
    def filter(self, state: CycleState, sig: Signature, rows: IntArray) -> IntArray | None:
        mask = sig.data.get(MASK.name)
        if mask is None:
            return None  # no claims: no limit
        allowed = mask[rows]
        cycle = state.read(DEVICES)
        for key in sig.read(SHARED):
            held = _held(cycle, key)
            if held is None:
                continue
            for _, device in held.results:
                allowed = allowed & cycle.view.inventory.reach[device.id][rows]
            if held.node is not None:
                allowed = allowed & (rows == held.node)
        return np.where(allowed, UNLIMITED, 0).astype(np.int64)

    def rejections(self, state: CycleState, sig: Signature, rows: IntArray) -> Rejections:
        """Nodes the Filter refused: under :data:`~scheduler.dra.inventory.INVALID_POOLS` where an invalid pool
        reaches the node (its devices might have served the claim: kube-scheduler's allocator reports the
        invalid pools instead of a plain failure), under :data:`~scheduler.dra.inventory.INCOMPLETE_POOLS` where an
        incomplete one does, under :func:`pinned_reason` where a held shared claim of the
        pods is bound to another node (bindsToNode), else under :data:`REASON`."""
        if not len(rows):
            return Rejections(Counter())
        cycle = state.get(DEVICES)
        if cycle is None:
            return Rejections(Counter({REASON: len(rows)}))
        inventory = cycle.view.inventory
        counted = inventory.invalid_reach()[rows] if inventory.invalid else np.zeros(len(rows), dtype=bool)
        counts = Counter({INVALID_POOLS: int(counted.sum())})
        if inventory.incomplete:
            incomplete = inventory.incomplete_reach()[rows] & ~counted
            counts[INCOMPLETE_POOLS] = int(incomplete.sum())
            counted |= incomplete
        for key in sig.data.get(SHARED.name, ()):
            held = _held(cycle, key)
            if held is not None and held.node is not None:
                elsewhere = (rows != held.node) & ~counted
                counts[pinned_reason(key, state.table.nodes[held.node].name)] += int(elsewhere.sum())
                counted |= elsewhere
        counts[REASON] += int((~counted).sum())
        return Rejections(+counts)

    def interacts(self, state: CycleState, sig: Signature) -> bool:
        return False  # a placement changes only its own node's answer

    # -- Reserve -------------------------------------------------------------------------------
    def reserve(self, state: CycleState, sig: Signature, row: int, pods: tuple[Pod, ...]) -> tuple[int, Any]:
        """Allocate the per-pod claims of up to ``len(pods)`` copies on node ``row``.

        Token: ``(device-state mark, copies, reallocated)`` — ``copies[i]``: the per-claim results of
        ``pods[i]``; ``reallocated``: pod key → new per-claim results for pods placed on the node earlier
        in this solve whose devices were given back and allocated again together with these copies.
        That happens only when the node falls short and pods of this solve already hold devices there:
        their claims and the new copies are then allocated as one problem, as kube-scheduler's allocator
        backtracks over all the claims it allocates together (two members, each with its own claim, where
        the device the first took is the only one the second accepts).
        """
        specs = specs_on(sig, row)
        cycle = state.get(DEVICES)
        if not specs or cycle is None:
            return len(pods), None
        mark = cycle.state.mark()
        devices = cycle.view.inventory.on_node(row)
        copies = allocate_copies(specs, len(pods), devices, cycle.matches, cycle.state, ALLOCATION_BUDGET)
        reallocated: dict[str, list[list[Result]]] = {}
        if len(copies) < len(pods) and cycle.local[row]:
            better = self._reallocate(state, cycle, row, specs, len(pods), len(copies), mark)
            if better is not None:
                copies, reallocated = better
        cycle.local[row] += len(copies)
        return len(copies), (mark, copies, reallocated)

    def _reallocate(self, state: CycleState, cycle: DynamicResourcesState, row: int, specs: tuple[ClaimSpec, ...],
                    wanted: int, found: int, mark: int) -> tuple[list[list[list[Result]]],
                                                                  dict[str, list[list[Result]]]] | None:
        """More than ``found`` copies of ``specs`` (at most ``wanted``) together with the per-pod claims this
        solve already allocated on ``row``, or None (the device state is then as :meth:`reserve` left it)."""
        earlier = _allocated_on(state, cycle, row)
        devices = cycle.view.inventory.on_node(row)
        found_state = cycle.state.journal[mark:]
        movable = {e.id if isinstance(e, Device) else e.device.id for e in found_state}
        movable.update(d.id for _, _, results in earlier for per_claim in results for _, d in per_claim)
        if not _enough_devices(cycle, devices, movable, [s for _, s, _ in earlier], specs, found + 1):
            return None
        cycle.state.undo(mark)
        for _, claim_specs, results in earlier:
            for spec, per_claim in zip(claim_specs, results, strict=True):
                for result, device in per_claim:
                    cycle.state.release(device, _share_amounts(spec, result, device))
        joint = allocate_pods([s for _, s, _ in earlier] + [specs] * wanted, devices, cycle.matches, cycle.state,
                              ALLOCATION_BUDGET)
        if len(joint) > len(earlier) + found:
            reallocated = {key: joint[i] for i, (key, _, results) in enumerate(earlier) if joint[i] != results}
            return joint[len(earlier):], reallocated
        cycle.state.undo(mark)  # no better: the copies found first, exactly as they were
        cycle.state.redo(found_state)
        return None

    def unreserve(self, state: CycleState, placement: Placement, token: Any) -> None:
        if token is not None:
            cycle = state.read(DEVICES)
            cycle.state.undo(token[0])
            cycle.local[placement.row] -= len(placement.pods)

    def shortfall_reason(self) -> str:
        """The histogram reason for nodes every Filter allowed where Reserve still placed nothing."""
        return REASON

    def shortfall_detail(self, state: CycleState, sig: Signature, rows: IntArray) -> str:
        """After the histogram, per request of the signature's per-pod claims that no node of ``rows`` has the
        devices for: :func:`_device_counts`. Empty when some node of ``rows`` has enough unallocated matching
        devices for every request (the requests together, a constraint or a counter did not fit)."""
        cycle = state.get(DEVICES)
        per_kind: tuple[tuple[ClaimSpec, ...], ...] = sig.data.get(SPECS.name, ())
        if cycle is None or not rows.size:
            return ""
        kinds = sig.data.get(KINDS.name)
        texts: list[str] = []
        for kind, specs in enumerate(per_kind):  # each kind of node is judged on its own claims
            here = rows if kinds is None else rows[kinds[rows] == kind]
            for request in (r for spec in specs for r in spec.requests) if here.size else ():
                text = _device_counts(cycle, request, here)
                if text and text not in texts:
                    texts.append(text)
        return " ".join(texts)

    # -- Shared: claims a leaf holds in common -------------------------------------------------
    def held_in_common(self, state: CycleState, pending: Sequence[Pod]) -> list[SharedClaim]:
        """The claims a leaf allocates once for all members (PodGroup claims, claims shared by name), each with
        the pending pods using it."""
        cycle = devices(state)
        if cycle is None:
            return []
        resolved = cycle.view.pods
        out: dict[str, NeededClaim] = {}
        users: dict[str, list[Pod]] = {}
        for pod in pending:
            claims = resolved.get(pod.key)
            for needed in claims.shared if claims is not None else ():
                out.setdefault(needed.key, needed)
                users.setdefault(needed.key, []).append(pod)
        return [SharedClaim(out[k], tuple(users[k]), len(pending) - len(users[k])) for k in sorted(out)]

    def hold(self, state: CycleState, leaf_name: str, claims: Sequence[SharedClaim],
             mask: BoolArray, need: int) -> Iterator[None]:
        """Hold, one after another, each distinct way to allocate the leaf's shared ``claims`` from devices
        that some node in ``mask`` reaches (per claim); the allocation is held while suspended, and the
        Filter restricts each signature to the nodes reaching the devices of the claims its pods use.

        An allocation with a ``bindsToNode`` device is held once per node it may be pinned to (KEP-5007: the
        allocation's node selector names that node, so all of the claim's consumers go there, as kube-scheduler
        pins it to the node of the first pod it schedules): the nodes reaching its devices whose free room may
        take the consumers the leaf needs there (``need`` less the pending pods not using the claim), those with
        room for the most first. Each node tried spends one of the search's :data:`ALLOCATION_BUDGET` tries."""
        cycle = state.read(DEVICES)
        inventory = cycle.view.inventory
        candidates = sorted({d.id: d for row in np.flatnonzero(mask) for d in inventory.on_node(int(row))}
                            .values(), key=lambda d: d.id)
        seen: set[tuple[bytes, ...]] = set()
        budget = _Budget(ALLOCATION_BUDGET)
        chosen: list[SharedAllocation] = []
        reaches: list[bytes] = []
        cycle.unpinned.clear()

        def reach_of(results: Sequence[Result], node: int | None = None) -> BoolArray:
            here = mask.copy()
            for _, device in results:
                here &= inventory.reach[device.id]
            if node is not None:
                pinned = np.zeros_like(here)
                pinned[node] = here[node]
                here = pinned
            return here

        def pin(k: int, pins: list[int]) -> Iterator[None]:
            """Pin ``chosen[pins[k]]`` and the later ones to a node each, then hold the whole allocation."""
            if k == len(pins):
                cycle.shared_stack.append((leaf_name, tuple(chosen)))
                yield
                cycle.shared_stack.pop()
                return
            j = pins[k]
            alloc, claim = chosen[j], claims[j]
            here = reach_of(alloc.results)
            for earlier in pins[:k]:  # a pod using both claims must be on both nodes
                if {p.key for p in claims[earlier].consumers} & {p.key for p in claim.consumers}:
                    node = chosen[earlier].node
                    assert node is not None
                    here = reach_of(alloc.results, node) & here
            required = max(1, need - claim.others)
            rows = _pin_rows(state, cycle, claim, here, required)
            if not len(rows):
                device = next(d.id for _, d in alloc.results if d.binds_to_node)
                cycle.unpinned.setdefault(claim.key, unpinned_reason(claim.key, device, required,
                                                                     len(claim.consumers)))
            for row in rows:
                budget.spend()
                chosen[j] = dataclasses.replace(alloc, node=int(row))
                yield from pin(k + 1, pins)
            chosen[j] = alloc

        def go(i: int) -> Iterator[None]:
            if i < len(claims) and (held := _held(cycle, claims[i].key)) is not None:
                # allocated earlier in this plan by another leaf: share it (and its node), never allocate it twice
                here = reach_of(held.results, held.node)
                if here.any():
                    chosen.append(SharedAllocation(claims[i].claim, held.results, reused=True, node=held.node))
                    reaches.append(here.tobytes())
                    yield from go(i + 1)
                    reaches.pop()
                    chosen.pop()
                return
            if i == len(claims):
                # One try per (reach of each claim, devices of a kind the members' own claims could also
                # want): two allocations equal in both cannot differ in what they leave the members.
                key = (*reaches, *_contested(cycle, chosen))
                if key in seen:
                    return
                seen.add(key)
                yield from pin(0, [j for j, alloc in enumerate(chosen) if alloc.node is None and alloc.binds])
                return
            for results in claim_alternatives(claims[i].claim.spec, candidates, cycle.matches, cycle.state, budget):
                here = reach_of(results)
                if here.any():
                    chosen.append(SharedAllocation(claims[i].claim, tuple(results)))
                    reaches.append(here.tobytes())
                    yield from go(i + 1)
                    reaches.pop()
                    chosen.pop()

        try:
            yield from go(0)
        except BudgetExceeded:
            return

    def unheld_reason(self, state: CycleState, claims: Sequence[SharedClaim]) -> str:
        """Why :meth:`hold` found no way: a claim bound to a node (``bindsToNode``) whose consumers no node
        reaching its devices has room for, or the claims, none of which the leaf's nodes reach devices for
        together."""
        cycle = state.get(DEVICES)
        if cycle is not None and cycle.unpinned:
            return "; ".join(cycle.unpinned[k] for k in sorted(cycle.unpinned))
        return f"cannot allocate shared claim(s) {', '.join(c.key for c in claims)} on any reachable devices"

    # -- Outcome -------------------------------------------------------------------------------
    def plan_fields(self, state: CycleState) -> PlanFields:
        return {"allocations": self.claim_allocations(state)}

    def notes(self, state: CycleState) -> list[str]:
        """The CEL selector errors this solve met (:func:`selector_errors`)."""
        return selector_errors(state)

    def claim_allocations(self, state: CycleState) -> tuple[ClaimAllocation, ...]:
        """Every claim the plan allocates: per-pod claims from the journal, shared claims of placed leaves."""
        cycle = state.get(DEVICES)
        if cycle is None:
            return ()
        index = state.reservers.index(self)
        out: list[ClaimAllocation] = []
        users: dict[str, list[Pod]] = {}
        final: dict[str, list[list[Result]]] = {}
        """Pod key → its per-claim results as the plan holds them (a later reallocation replaces earlier ones)."""
        for placement in state.journal:
            token = placement.tokens[index]
            if token is not None:
                final.update(zip((p.key for p in placement.pods), token[1], strict=True))
                final.update(token[2])
        for placement in state.journal:
            node = state.table.nodes[placement.row].name
            for pod in placement.pods:
                claims = cycle.view.pods.get(pod.key)
                for needed in claims.shared if claims is not None else ():
                    users.setdefault(needed.key, []).append(pod)
            token = placement.tokens[index]
            if token is None:
                continue
            for pod in placement.pods:
                needs = _per_pod(cycle.view.pods[pod.key], through_dra(placement.signature, placement.row))
                for needed, results in zip(needs, final[pod.key], strict=True):
                    out.append(ClaimAllocation(
                        claim=needed.key, reserved_for=(("Pod", pod.metadata.name, pod.metadata.uid),), node=node,
                        results=tuple((r, d.driver, d.pool, d.name) for r, d in results),
                        node_selector=node_selector(cycle, results, node), synthetic=needed.synthetic,
                        pod=pod.key, uses=device_uses(needed.spec, results, needed.key),
                        extended=tuple(sorted(set(needed.resources)))))
        for leaf_name, shared in cycle.shared_stack:
            for alloc in shared:
                if alloc.reused:
                    continue  # written once, by the leaf that allocated it; its consumers are all gathered
                consumers = users.get(alloc.claim.key, [])
                if alloc.claim.group:
                    reserved: tuple[tuple[str, str, str], ...] = (("PodGroup", leaf_name, ""),)
                else:
                    reserved = tuple(("Pod", p.metadata.name, p.metadata.uid) for p in consumers)
                pinned = state.table.nodes[alloc.node].name if alloc.node is not None else None
                out.append(ClaimAllocation(
                    claim=alloc.claim.key, reserved_for=reserved, node=pinned,
                    results=tuple((r, d.driver, d.pool, d.name) for r, d in alloc.results),
                    node_selector=node_selector(cycle, alloc.results, pinned),
                    uses=device_uses(alloc.claim.spec, alloc.results, alloc.claim.key)))
        return tuple(out)


def device_uses(spec: ClaimSpec, results: Sequence[Result], claim: str) -> tuple[DeviceUse, ...]:
    """How ``results`` use their devices: admin access where the sub-request asked for it (KEP-5018), the
    device's binding conditions (KEP-5007), and for a device with ``allowMultipleAllocations`` its ``shareID``
    and ``consumedCapacity`` (KEP-5075: every capacity of the device, as the structured allocator records
    them, also for admin access, whose share nobody counts once allocated); empty when every device is taken
    whole, without conditions (the plan's default).

    ``claim``: the claim's ``namespace/name``; a share's id is :func:`share_id` of it, the result's position and
    the device.
    """
    admin = {sub.result for r in spec.requests for sub in r.options if sub.admin}
    if not admin and not any(d.binding_conditions or d.binding_failure_conditions or d.shared for _, d in results):
        return ()
    return tuple(DeviceUse(d.id, admin=r in admin, binding_conditions=d.binding_conditions,
                           binding_failure_conditions=d.binding_failure_conditions,
                           **_share_fields(spec, r, d, claim, i) if d.shared else {})
                 for i, (r, d) in enumerate(results))


SHARE_ID_NAMESPACE = uuid.UUID("6b0c5f0e-4a53-5f8e-9d57-0c2b1f0f5e75")
"""The UUID namespace of :func:`share_id` (a constant of this scheduler)."""


def share_id(claim: str, position: int, device: str) -> str:
    """The ``shareID`` of the ``position``-th result of ``claim`` (``namespace/name``) on ``device``: a lowercase
    UUID, as the API requires (``format=k8s-uuid``), derived from the three (RFC 4122 version 5) rather than
    drawn at random as kube-scheduler does. A claim holds one allocation at a time and its results are
    numbered, so no two allocations sharing a device at once get the same id, and ``simulate`` is
    reproducible."""
    return str(uuid.uuid5(SHARE_ID_NAMESPACE, f"{claim}/{position}/{device}"))


def _share_fields(spec: ClaimSpec, result: str, device: Device, claim: str, position: int) -> dict[str, Any]:
    return {"share_id": share_id(claim, position, device.id), "consumed": _share_amounts(spec, result, device)}


def _share_amounts(spec: ClaimSpec, result: str, device: Device) -> Amounts:
    """What the result named ``result`` consumes of the shared ``device`` (empty for a device taken whole)."""
    if not device.shared:
        return ()
    for request in spec.requests:
        for sub in request.options:
            if sub.result == result:
                return amounts_of(sub, device) or ()
    return ()


def _device_counts(cycle: DynamicResourcesState, request: Request, rows: IntArray) -> str:
    """``request gpu: 2 wanted; 8 device(s) of class c in the cluster, 4 matching its selectors, at most 1 of them
    unallocated on any one of the 3 nodes.`` (``rows``: the nodes judged; ``on the node`` for one; ``none matching its
    selectors.`` when none does) — for a request none of
    whose options has ``count`` devices that match and are not allocated (in the cluster, in flight, or to this
    solve's earlier members) on one node of ``rows``; empty otherwise, or for an ``All`` or admin-access request
    (their devices are not counted that way) or one whose DeviceClass does not exist (the solve's notes say so).
    The first option is described.
    Device masks over :meth:`~scheduler.dra.inventory.Inventory.device_index`: O(devices), on failure only."""
    inventory = cycle.view.inventory
    index = inventory.device_index()
    taken = index.mask(cycle.state.taken)
    best: list[int] = []
    for sub in request.options:
        if sub.all or sub.admin or sub.class_name not in inventory.classes:  # a missing class is a note already
            return ""
        best.append(int(per_node(inventory, inventory.usable_counts(sub)[1] & ~taken)[rows].max()))
        if best[-1] >= sub.count:
            return ""
    sub = request.options[0]
    of_class = int(inventory.usable_counts(dataclasses.replace(sub, selectors=()))[1].sum())
    head = f"request {request.name}: {sub.count} wanted; {of_class} device(s) of class {sub.class_name} in the cluster"
    where = "the node" if len(rows) == 1 else f"any one of the {len(rows)} nodes"
    if not sub.selectors:
        return f"{head}, at most {best[0]} unallocated on {where}."
    matching = int(inventory.usable_counts(sub)[1].sum())
    if not matching:
        return f"{head}, none matching its selectors."
    return f"{head}, {matching} matching its selectors, at most {best[0]} of them unallocated on {where}."


def per_node(inventory: Inventory, devices: BoolArray) -> IntArray:
    """(N,) int: per node row, how many of ``devices`` ((D,) bool over
    :meth:`~scheduler.dra.inventory.Inventory.device_index`) it reaches, each device once. O(D), plus O(N) per
    node-set or all-nodes device among them."""
    index = inventory.device_index()
    # bincount of rows + 1: the -1s (devices no single node reaches) fall into bin 0, dropped
    counts = np.bincount(index.home[devices] + 1, minlength=len(inventory.table) + 1)[1:]
    for position in np.flatnonzero(devices & (index.home < 0)):  # node-set and all-nodes devices
        counts = counts + inventory.reach[index.ids[position]]
    return np.asarray(counts, dtype=np.int64)


def _kinds(state: CycleState, extended: tuple[str, ...], either: IntArray
           ) -> tuple[tuple[tuple[str, ...], ...], IntArray]:
    """The kinds of node for a pod requesting the ``extended`` resources a DeviceClass serves (``either``: the
    amounts of those some node lists, over the table's columns): nodes alike in which of them they offer a
    non-zero amount of. Returns, per kind, the resources its nodes serve through DRA, and each node's kind."""
    table = state.table
    cols = np.flatnonzero(either > 0)
    patterns, kinds = np.unique(table.allocatable[:, cols] > 0, axis=0, return_inverse=True)
    through = []
    for offers in patterns:
        offered = {table.resources[c] for c, yes in zip(cols.tolist(), offers.tolist(), strict=True) if yes}
        through.append(tuple(r for r in extended if r not in offered))
    return tuple(through), np.asarray(kinds, dtype=np.int64).reshape(-1)


def _per_pod(claims: PodClaims, dra: tuple[str, ...]) -> tuple[NeededClaim, ...]:
    """The pod's per-pod claims on a node serving its extended resources ``dra`` through DRA: its synthetic claim
    keeps the requests for those (:meth:`~scheduler.dra.claims.NeededClaim.served_through`; none: not made)."""
    if dra == claims.extended:
        return claims.allocate
    out = []
    for needed in claims.allocate:
        kept = needed.served_through(dra) if needed.synthetic else needed
        if kept is not None:
            out.append(kept)
    return tuple(out)


def _kind(sig: Signature, row: int) -> int:
    kinds = sig.data.get(KINDS.name)
    return 0 if kinds is None else int(kinds[row])


def specs_on(sig: Signature, row: int) -> tuple[ClaimSpec, ...]:
    """The specs of the per-pod claims a member of ``sig`` needs allocated on node ``row`` (empty: none)."""
    specs = sig.data.get(SPECS.name)
    return specs[_kind(sig, row)] if specs is not None else ()


def through_dra(sig: Signature, row: int) -> tuple[str, ...]:
    """The extended resources node ``row`` serves a member of ``sig`` through DRA (:data:`THROUGH_DRA`)."""
    through: tuple[tuple[str, ...], ...] = sig.read(THROUGH_DRA)
    return through[_kind(sig, row)]


def _held(cycle: DynamicResourcesState, key: str) -> SharedAllocation | None:
    for _, allocations in cycle.shared_stack:
        for alloc in allocations:
            if alloc.claim.key == key:
                return alloc
    return None


def _pin_rows(state: CycleState, cycle: DynamicResourcesState, claim: SharedClaim, here: BoolArray,
              required: int) -> IntArray:
    """The rows in ``here`` a shared claim bound to one node may be pinned to: those whose free room (the solve's,
    ``(N, R)``) may take ``required`` of its consumers, most consumers first, then in row order.

    How many fit is bounded per resource by taking the consumers smallest first (node resources only: the
    Filters judge the rest when the leaf is placed), so no node that could take them is left out."""
    rows = np.flatnonzero(here)
    if not len(rows):
        return rows
    resolved = cycle.view.pods
    vectors = []
    for pod in claim.consumers:
        served = resolved[pod.key].extended if pod.key in resolved else ()
        requests = {r: v for r, v in pod.requests.items() if r not in served}
        vectors.append(state.table.request_vector(requests)[0])
    needs = np.sort(np.stack(vectors), axis=0).cumsum(axis=0)  # (C, R): the c smallest consumers' total
    free = state.free[rows]  # (n, R)
    fit = np.full(len(rows), len(vectors), dtype=np.int64)
    for r in np.flatnonzero(needs[-1] > 0):
        fit = np.minimum(fit, np.searchsorted(needs[:, r], free[:, r], side="right"))
    order = np.lexsort((rows, -fit))
    return rows[order][fit[order] >= required]


def _allocated_on(state: CycleState, cycle: DynamicResourcesState, row: int
                  ) -> list[tuple[str, tuple[ClaimSpec, ...], list[list[Result]]]]:
    """The pods this solve placed on ``row`` with per-pod claims: (pod key, its claims, their current results),
    in placement order (a later placement's reallocation replaces the results it gave back)."""
    index = state.reservers.index(PLUGIN)
    out: dict[str, tuple[str, tuple[ClaimSpec, ...], list[list[Result]]]] = {}
    for placement in state.journal:
        token = placement.tokens[index]
        if token is None:
            continue
        for key, results in token[2].items():
            if key in out:
                out[key] = (key, out[key][1], results)
        if placement.row == row:
            specs = specs_on(placement.signature, row)
            for pod, results in zip(placement.pods, token[1], strict=True):
                out[pod.key] = (pod.key, specs, results)
    return list(out.values())


def _enough_devices(cycle: DynamicResourcesState, devices: Sequence[Device], movable: set[str],
                    earlier: Sequence[Sequence[ClaimSpec]], specs: Sequence[ClaimSpec], copies: int) -> bool:
    """A necessary condition for allocating the ``earlier`` pods' claims and ``copies`` copies of ``specs``
    together: the node has at least as many devices that are free (or ``movable``: held by the claims to be
    allocated again) and match some sub-request of them as the claims need at the least (one device serves
    one result)."""
    need = sum(_fewest(spec) for claims in earlier for spec in claims) + copies * sum(_fewest(s) for s in specs)
    subs = {id(sub): sub for claims in (*earlier, specs) for spec in claims for r in spec.requests for sub in r.options}
    usable = 0
    for device in devices:
        if device.shared and any(cycle.matches(sub, device) for sub in subs.values()):
            return True  # one shared device may serve several results: no count bounds them
        taken = device.id in cycle.state.taken and device.id not in movable
        if any((sub.admin or not taken) and cycle.matches(sub, device) for sub in subs.values()):
            usable += 1
            if usable >= need:
                return True
    return False


def _fewest(spec: ClaimSpec) -> int:
    """The fewest devices an allocation of ``spec`` can have (``All``: at least one)."""
    return sum(min(1 if sub.all else sub.count for sub in request.options) for request in spec.requests)


def _contested(cycle: DynamicResourcesState, chosen: Sequence[SharedAllocation]) -> tuple[bytes, ...]:
    """Device ids of the shared allocations that a node-local per-pod claim could also compete for
    (devices of node-local slices); interchangeable network devices (a rack's channels) are not
    listed, so trying each of them in turn is avoided."""
    scope = cycle.view.inventory.scope
    ids = [d.id for alloc in chosen for _, d in alloc.results if isinstance(scope.get(d.id), str)]
    return tuple(i.encode() for i in sorted(ids))


def pinned_reason(claim: str, node: str) -> str:
    """The node histogram reason for nodes other than ``node``, to which shared ``claim`` is bound (bindsToNode)."""
    return f"node(s) are not {node}, the node shared ResourceClaim {claim} is bound to (bindsToNode)"


def unpinned_reason(claim: str, device: str, required: int, consumers: int) -> str:
    """Why shared ``claim`` is held nowhere: its ``device`` binds it to one node and no node reaching the device
    has room for the ``required`` of its ``consumers`` (pending pods using it) that the gang needs placed."""
    some = f"{consumers}" if required >= consumers else f"{required} of its {consumers}"
    return (f"ResourceClaim {claim}: device {device} binds the allocation to one node (bindsToNode), and no node "
            f"reaching it has room for {some} consumer(s)")


def node_selector(cycle: DynamicResourcesState, results: Sequence[Result], node: str | None) -> dict[str, Any] | None:
    """Where an allocation is usable, as an API ``NodeSelector`` (None: everywhere).

    A node-local device pins it to its node (``matchFields metadata.name``, as kube-scheduler
    writes it); so does a device with ``bindsToNode`` to the node chosen (KEP-5007); a device of a node-set
    slice to the slice's selector.
    """
    scopes = [cycle.view.inventory.scope.get(d.id) for _, d in results]
    local = next((s for s in scopes if isinstance(s, str)), None)
    pinned = node is not None and any(d.binds_to_node for _, d in results)
    if local is not None or pinned or (node is not None and any(isinstance(s, str) for s in scopes)):
        name = local or node
        return {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [name]}]}]}
    selector = next((s for s in scopes if isinstance(s, NodeSelector)), None)
    if selector is not None:
        return selector.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=True)
    return None


PLUGIN = DynamicResources()


DRA_KINDS = frozenset({"ResourceSlice", "DeviceClass"})


def gate(snapshot: Snapshot, pending: Sequence[Pod], asked: frozenset[str]) -> bool:
    """Whether the plugin has anything to judge: only when the snapshot has a device view (without one no
    claim can be allocated and no pod was let through needing one)."""
    return snapshot.dra is not None


def queueing_hint(event: ClusterEvent) -> bool:
    """Devices published or changed, a class changed, a claim created (a pod may wait for it) or deleted,
    a claim's spec or status changed (its allocation removed: its devices are free; allocated or reserved: a pod
    sharing it may now use it, kube-scheduler's ``isSchedulableAfterClaimChange``, asked of every root rather than
    of the claim's consumers only), a node added or relabelled (it may now reach node-set devices, or match an
    allocated claim's node selector) or its allocatable changed (an extended resource it stops offering is served
    through DRA there; kube-scheduler registers ``Add | UpdateNodeLabel | UpdateNodeAllocatable``), a namespace
    added or relabelled (the ``resource.kubernetes.io/admin-access`` label a claim's admin access needs, which the
    scheduler checks where kube's admission does). A template alone changes nothing: the pod waits for the claim made
    from it."""
    if event.kind in DRA_KINDS:
        return True
    if event.kind == "Node":
        return event.action is Action.ADD or (event.action is Action.UPDATE and (
            event.old.allocatable != event.new.allocatable or event.old.metadata.labels != event.new.metadata.labels))
    if event.kind == "Namespace":
        return event.action is Action.ADD or (event.action is Action.UPDATE
                                              and event.old.metadata.labels != event.new.metadata.labels)
    if event.kind != "ResourceClaim":
        return False
    if event.action is not Action.UPDATE:
        return True
    return bool(event.old.status != event.new.status or event.old.spec != event.new.spec)
