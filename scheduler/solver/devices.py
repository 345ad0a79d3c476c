"""Device placement inside the search: per-pod claims on the chosen node, shared claims per leaf.

:class:`DevicePlacer` is the solver's DRA half (kube-scheduler's DynamicResources plugin in a gang
setting). It owns the scratch :class:`~scheduler.dra.allocator.DeviceState` of one solver run, so
every claim of the tree is decided against the same state as the nodes: two members, or two
sibling groups, never get the same device, and a group's shared claim is allocated once.

* :meth:`realize` allocates ``k`` copies of a signature's per-pod claims on one node (exact,
  best fit first, backtracking across the copies — see :mod:`scheduler.dra.allocator`);
* :meth:`shared` yields the allocations of a leaf's shared claims (PodGroup claims, claims shared
  by name) one after another, each with the mask of nodes that can reach all its devices;
* every step is journaled so the search's undo also returns devices and counters.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.dra.allocator import (
    BudgetExceeded,
    ClaimSpec,
    DeviceState,
    Result,
    SubRequest,
    _Budget,
    allocate_copies,
    claim_alternatives,
)
from scheduler.dra.claims import NeededClaim, PodClaims
from scheduler.model.pod import NodeSelector
from scheduler.solver.snapshot import BoolArray

if TYPE_CHECKING:
    from scheduler.dra.view import DraView

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


class DevicePlacer:
    """See the module docstring."""

    def __init__(self, view: DraView) -> None:
        self.view = view
        self.inventory = view.inventory
        self.state: DeviceState = view.inventory.state(view.assumed)
        self.held: frozenset[str] = frozenset(self.state.taken)
        """Devices taken for the whole run (allocated or assumed before it): no undo returns them."""
        self.shared_stack: list[tuple[str, tuple[SharedAllocation, ...]]] = []

    # -- per-pod claims ------------------------------------------------------------
    def claims_of(self, pod_key: str) -> PodClaims | None:
        return self.view.pods.get(pod_key)

    def node_mask(self, claims: PodClaims, specs: Sequence[ClaimSpec]) -> BoolArray:
        """Nodes the pod may use as far as DRA knows: allocated claims' selectors, and enough matching devices
        that are not :attr:`held` (a node outside the mask is one where :meth:`realize` finds no copy)."""
        mask = np.ones(len(self.inventory.table), dtype=bool)
        pinned = self.view.pinned_mask(claims)
        if pinned is not None:
            mask &= pinned
        for spec in specs:
            for request in spec.requests:
                usable = np.zeros(len(mask), dtype=bool)
                for sub in request.options:
                    usable |= self._usable(sub)
                mask &= usable
        return mask

    def _usable(self, sub: SubRequest) -> BoolArray:
        """Nodes reaching at least ``sub.count`` matching devices outside :attr:`held` (``All``: at least one
        matching device, taken or not). A necessary condition for the allocator to satisfy ``sub`` on the
        node at any point of this run, so leaving the other nodes out changes no plan, only skips tries."""
        counts, matching = self.inventory.usable_counts(sub)
        if sub.all:
            return counts >= 1
        held = matching & self.held
        if held:
            home = self.inventory.home
            rows = np.fromiter(map(home.__getitem__, held), dtype=np.intp, count=len(held))
            local = rows >= 0
            counts = counts - np.bincount(rows[local], minlength=len(counts))
            if not local.all():  # node-set and all-nodes devices: every row that reaches them
                for dev_id in held:
                    if home[dev_id] < 0:
                        counts -= self.inventory.reach[dev_id]
        return counts >= sub.count

    def realize(self, row: int, copies: int, specs: Sequence[ClaimSpec]) -> list[list[list[Result]]]:
        """Allocate ``specs`` (one pod's per-pod claims) ``copies`` times on node ``row``; the devices stay taken."""
        if not specs:
            return [[] for _ in range(copies)]
        return allocate_copies(specs, copies, self.inventory.on_node(row), self.inventory.matches, self.state,
                               ALLOCATION_BUDGET)

    # -- shared claims -------------------------------------------------------------
    def shared(self, leaf_name: str, claims: Sequence[NeededClaim], mask: BoolArray) -> Iterator[BoolArray]:
        """Yield, per distinct way to allocate the leaf's shared ``claims`` from devices some node in ``mask``
        reaches, the mask of nodes that reach all of them; the allocation is held while suspended."""
        candidates = sorted({d.id: d for row in np.flatnonzero(mask) for d in self.inventory.on_node(int(row))}
                            .values(), key=lambda d: d.id)
        seen: set[tuple[bytes, tuple[str, ...]]] = set()
        budget = _Budget(ALLOCATION_BUDGET)
        chosen: list[SharedAllocation] = []

        def go(i: int, reach: BoolArray) -> Iterator[BoolArray]:
            if i < len(claims) and (held := self._held(claims[i].key)) is not None:
                # allocated earlier in this plan by another leaf: share it, never allocate it twice
                here = reach.copy()
                for _, device in held:
                    here &= self.inventory.reach[device.id]
                if here.any():
                    chosen.append(SharedAllocation(claims[i], held, reused=True))
                    yield from go(i + 1, here)
                    chosen.pop()
                return
            if i == len(claims):
                # One try per (reach, devices of a kind the members' own claims could also want): two
                # allocations equal in both cannot differ in what they leave the members.
                key = (reach.tobytes(), self._contested(chosen))
                if key in seen:
                    return
                seen.add(key)
                self.shared_stack.append((leaf_name, tuple(chosen)))
                yield reach
                self.shared_stack.pop()
                return
            for results in claim_alternatives(claims[i].spec, candidates, self.inventory.matches, self.state, budget):
                here = reach.copy()
                for _, device in results:
                    here &= self.inventory.reach[device.id]
                if here.any():
                    chosen.append(SharedAllocation(claims[i], tuple(results)))
                    yield from go(i + 1, here)
                    chosen.pop()

        try:
            yield from go(0, mask.copy())
        except BudgetExceeded:
            return

    def _contested(self, chosen: Sequence[SharedAllocation]) -> tuple[str, ...]:
        """Device ids of the shared allocations that a node-local per-pod claim could also compete for
        (devices of node-local slices); interchangeable network devices (a rack's channels) are not
        listed, so trying each of them in turn is avoided."""
        ids = [d.id for alloc in chosen for _, d in alloc.results if isinstance(self.inventory.scope.get(d.id), str)]
        return tuple(sorted(ids))

    def _held(self, key: str) -> tuple[Result, ...] | None:
        for _, allocations in self.shared_stack:
            for alloc in allocations:
                if alloc.claim.key == key:
                    return alloc.results
        return None

    def allocations_in_force(self) -> list[tuple[str, tuple[SharedAllocation, ...]]]:
        """Shared allocations of the leaves whose placement is applied now."""
        return list(self.shared_stack)

    # -- results -------------------------------------------------------------------
    def node_selector(self, results: Sequence[Result], node: str | None) -> dict[str, Any] | None:
        """Where an allocation is usable, as an API ``NodeSelector`` (None: everywhere).

        A node-local device pins it to its node (``matchFields metadata.name``, as kube-scheduler
        writes it); a device of a node-set slice to the slice's selector.
        """
        scopes = [self.inventory.scope.get(d.id) for _, d in results]
        local = next((s for s in scopes if isinstance(s, str)), None)
        if local is not None or (node is not None and any(isinstance(s, str) for s in scopes)):
            name = local or node
            return {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [name]}]}]}
        selector = next((s for s in scopes if isinstance(s, NodeSelector)), None)
        if selector is not None:
            return selector.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=True)
        return None

    def selector_errors(self) -> list[str]:
        return sorted(set(self.inventory.selector_errors.values()))
