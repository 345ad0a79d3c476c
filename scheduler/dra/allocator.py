"""Structured device allocation on one node: exact, with backtracking, for one or many claim copies.

Mirrors the structured allocator of kube-scheduler's DynamicResources plugin
(``k8s.io/dynamic-resource-allocation/structured``, v1.37) for what we support:

* requests ``exactly`` (ExactCount with ``count``, or ``All``) and ``firstAvailable`` sub-requests,
  tried in order; a result is named ``request`` or ``request/subrequest``;
* class and request selectors (the caller's ``matches`` evaluates CEL);
* at most :data:`MAX_DEVICES_PER_CLAIM` devices per claim (a ``firstAvailable`` choice that would exceed
  it is skipped);
* claim ``constraints``: ``matchAttribute`` (every device of the listed requests has the same
  value; with list attributes, a value in common) and ``distinctAttribute`` (all different; with
  list attributes, no value shared);
* device taints NoSchedule/NoExecute unless tolerated;
* shared counters (``consumesCounters``): a device fits only while every counter it consumes has
  enough left in its counter set — partitionable GPUs and MIG never over-consume;
* consumable capacity (KEP-5075, :mod:`scheduler.dra.capacity`): a device with ``allowMultipleAllocations``
  is shared by allocations (several claims, or several results of one claim, as the structured allocator
  allows) while the sum each consumes of every capacity stays within its ``value``; a request's
  ``capacity.requests`` is rounded and checked by the capacity's ``requestPolicy``. A shared device consumes
  its shared counters once, while it has any allocation. Partly consumed devices are tried before fresh ones
  (fullest first), so shares pack onto few devices.

Unlike a first-fit allocator, the search tries devices *best fit first* (the device that consumes
the smallest share of its counter sets) and backtracks over device choices, within a budget, both
inside one claim and across the copies of a gang on the node: so a whole GPU is not given to one
member when two half-GPUs would serve two (the upstream greedy trap).

Pure: plain dataclasses in, plain results out; the caller owns the :class:`DeviceState`.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from scheduler.dra.capacity import Amounts, Capacity, consumption
from scheduler.model.dra import DeviceUse

FILTERED_EFFECTS = ("NoSchedule", "NoExecute")

MAX_DEVICES_PER_CLAIM = 32
"""The most devices one claim's allocation may hold: ``AllocationResultsMaxSize`` of resource.k8s.io/v1
(``status.allocation.devices.results`` has at most 32 entries); the structured allocator refuses a
claim asking for more and skips a ``firstAvailable`` choice that would exceed it (``allocator.go``, v1.37)."""


@dataclass(frozen=True, slots=True)
class Device:
    """A device as the allocator sees it.

    ``id``: ``driver/pool/name``. ``attributes``: fully qualified name → value (short names already
    qualified with the driver's domain). ``consumes``: (counter set id ``driver/pool/set``,
    ((counter, amount), …)) pairs. ``taints``: (key, value, effect). ``weight``: best-fit order key
    (share of its counter sets it consumes; 0 for plain devices) — smaller is tried first.
    ``binding_conditions`` / ``binding_failure_conditions`` / ``binds_to_node``: the slice's (KEP-5007).
    ``shared``: ``allowMultipleAllocations`` (KEP-5075); ``capacity``: its capacities with their request
    policies, in the slice's order.
    """

    id: str
    driver: str
    pool: str
    name: str
    attributes: Mapping[str, object] = field(default_factory=dict)
    consumes: tuple[tuple[str, tuple[tuple[str, Decimal], ...]], ...] = ()
    taints: tuple[tuple[str, str, str], ...] = ()
    weight: float = 0.0
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    binds_to_node: bool = False
    shared: bool = False
    capacity: tuple[Capacity, ...] = ()


@dataclass(frozen=True, slots=True)
class DeviceToleration:
    """``DeviceToleration``: key, operator (Equal | Exists), value, effect."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, key: str, value: str, effect: str) -> bool:
        if self.effect and self.effect != effect:
            return False
        if self.key != key and not (self.key == "" and self.operator == "Exists"):
            return False
        return self.operator == "Exists" or self.value == value


@dataclass(frozen=True, slots=True)
class SubRequest:
    """One way to satisfy a request: ``count`` devices (or ``all``) of ``class_name`` matching ``selectors``.

    ``admin``: ``adminAccess`` (KEP-5018): the devices may be allocated already and are not taken (no other
    claim loses them, no counter is consumed); only one claim's results never name a device twice. On a shared
    device its one share must fit the capacity left, but is not held.
    ``capacity``: ``capacity.requests`` ((name, amount) pairs, a name short or with its domain; KEP-5075).
    """

    result: str
    class_name: str
    selectors: tuple[str, ...] = ()
    count: int = 1
    all: bool = False
    tolerations: tuple[DeviceToleration, ...] = ()
    admin: bool = False
    capacity: Amounts = ()


def amounts_of(sub: SubRequest, device: Device) -> Amounts | None:
    """What one allocation of ``device`` for ``sub`` consumes of its capacities (empty for a device taken
    whole), or None when the device cannot serve ``sub``'s ``capacity.requests`` (a capacity it lacks, an
    amount its request policy refuses, or more than it has at all; :func:`scheduler.dra.capacity.consumption`).
    """
    if not sub.capacity and not device.shared:
        return ()
    amounts = _consumption(sub.capacity, device.driver, device.capacity)
    if amounts is None:
        return None
    return amounts if device.shared else ()


_consumption = functools.lru_cache(maxsize=4096)(consumption)
""":func:`scheduler.dra.capacity.consumption`, memoised: a fleet's shared devices publish a handful of capacity
shapes, and every search asks again for every node's devices (its arguments are immutable values)."""


@dataclass(frozen=True, slots=True)
class Request:
    """A claim request: its ``name`` and the sub-requests tried in order (one for ``exactly``)."""

    name: str
    options: tuple[SubRequest, ...]


@dataclass(frozen=True, slots=True)
class Constraint:
    """A claim constraint over ``requests`` (empty = every request of the claim; an entry is a request's
    name, or ``request/subrequest`` for one ``firstAvailable`` choice)."""

    requests: tuple[str, ...] = ()
    match_attribute: str | None = None
    distinct_attribute: str | None = None


@dataclass(frozen=True, slots=True)
class ClaimSpec:
    """What a claim asks for; hashable, so pods whose claims come from one template share a signature."""

    requests: tuple[Request, ...]
    constraints: tuple[Constraint, ...] = ()


Result = tuple[str, Device]
"""(result name, device): ``request`` or ``request/subrequest`` → the device given."""

Matcher = Callable[[SubRequest, Device], bool]


@dataclass(frozen=True, slots=True)
class _Released:
    """A journal entry: ``device`` was given back from ``use`` (undoing it takes the device again, for it)."""

    device: Device
    use: DeviceUse
    amounts: Amounts = ()


@dataclass(frozen=True, slots=True)
class _Share:
    """A journal entry: one allocation of the shared ``device`` consuming ``amounts`` (of its capacities)."""

    device: Device
    amounts: Amounts


Taking = Device | _Share
"""A journal entry that took something: a device whole, or one share of a shared device."""


@dataclass(slots=True)
class DeviceState:
    """Devices taken, shares and capacity consumed, counters left, with an undo journal (one per solver run).

    ``taken``: device id → the :class:`~scheduler.model.dra.DeviceUse` that keeps it whole from other allocations
    (an allocation in the cluster, a plan in flight, or this solve's). ``shares``: device id → how many
    allocations share it (a device with ``allowMultipleAllocations``; KEP-5075); ``consumed``: device id →
    capacity name → the sum those shares consume. The journal holds a :class:`Device` per whole take, a
    :class:`_Share` per share and a :class:`_Released` per :meth:`release`; :meth:`undo` reverses them, so a
    placement may give back devices an earlier one took (to allocate them again together with its own) and
    its undo restores the earlier allocation exactly.
    """

    taken: dict[str, DeviceUse] = field(default_factory=dict)
    counters: dict[str, dict[str, Decimal]] = field(default_factory=dict)
    journal: list[Device | _Share | _Released] = field(default_factory=list)
    shares: dict[str, int] = field(default_factory=dict)
    consumed: dict[str, dict[str, Decimal]] = field(default_factory=dict)

    def fits(self, device: Device, amounts: Amounts = ()) -> bool:
        """Whether ``device`` can be allocated now: whole (nobody uses it), or — a shared device — one more
        share consuming ``amounts`` (in the order of ``device.capacity``) within every capacity's value; and
        every counter it consumes has enough left (a shared device consumes them with its first share)."""
        if device.id in self.taken:
            return False
        if device.shared:
            if not self.room(device, amounts):
                return False
            if self.shares.get(device.id):
                return True  # its counters are consumed already
        elif self.shares and self.shares.get(device.id):
            return False  # shared by allocations made while its slice allowed it
        for set_id, amounts_ in device.consumes:
            left = self.counters.get(set_id)
            if left is None:
                return False  # a counter set no slice publishes: never allocatable
            for counter, amount in amounts_:
                if left.get(counter, Decimal(0)) < amount:
                    return False
        return True

    def room(self, device: Device, amounts: Amounts) -> bool:
        """Whether one more share of the shared ``device`` consuming ``amounts`` (in the order of
        ``device.capacity``) stays within every capacity's value, whatever its counters."""
        used = self.consumed.get(device.id)
        if not used or not amounts:
            return True
        return all(used.get(name, Decimal(0)) + amount <= capacity.value
                   for (name, amount), capacity in zip(amounts, device.capacity, strict=True))

    def fullness(self, device: Device) -> Decimal:
        """The largest share of any capacity of ``device`` its allocations consume (0: unused or no capacity)."""
        used = self.consumed.get(device.id)
        if not used:
            return Decimal(1) if self.shares.get(device.id) else Decimal(0)
        return max((used.get(c.name, Decimal(0)) / c.value for c in device.capacity if c.value > 0),
                   default=Decimal(1))

    def take(self, device: Device, amounts: Amounts = ()) -> None:
        """Allocate ``device``: whole, or (a shared device) one share consuming ``amounts``; journaled."""
        if device.shared:
            self._share(device, amounts)
            self.journal.append(_Share(device, amounts))
        else:
            self._take(device)
            self.journal.append(device)

    def redo(self, entries: Sequence[Device | _Share | _Released]) -> None:
        """Take again what the taking entries of an earlier journal took (an undone allocation, restored)."""
        for entry in entries:
            if isinstance(entry, _Share):
                self.take(entry.device, entry.amounts)
            elif isinstance(entry, Device):
                self.take(entry)

    def release(self, device: Device, amounts: Amounts = ()) -> None:
        """Give back a taken ``device`` (or one share of it consuming ``amounts``) and what it consumes of its
        counter sets, journaled."""
        use = self.taken.get(device.id) or DeviceUse(device.id)
        if device.shared:
            self._unshare(device, amounts)
        else:
            self._give_back(device)
        self.journal.append(_Released(device, use, amounts))

    def mark(self) -> int:
        return len(self.journal)

    def undo(self, mark: int) -> None:
        while len(self.journal) > mark:
            entry = self.journal.pop()
            if isinstance(entry, _Released):
                if entry.device.shared:
                    self._share(entry.device, entry.amounts)
                else:
                    self._take(entry.device, entry.use)
            elif isinstance(entry, _Share):
                self._unshare(entry.device, entry.amounts)
            else:
                self._give_back(entry)

    def _take(self, device: Device, use: DeviceUse | None = None) -> None:
        self.taken[device.id] = use or DeviceUse(device.id)
        self._consume_counters(device, -1)

    def _give_back(self, device: Device) -> None:
        self.taken.pop(device.id, None)
        self._consume_counters(device, 1)

    def _share(self, device: Device, amounts: Amounts) -> None:
        n = self.shares.get(device.id, 0)
        self.shares[device.id] = n + 1
        if amounts:
            used = self.consumed.setdefault(device.id, {})
            for name, amount in amounts:
                used[name] = used.get(name, Decimal(0)) + amount
        if n == 0:
            self._consume_counters(device, -1)

    def _unshare(self, device: Device, amounts: Amounts) -> None:
        n = self.shares.get(device.id, 0) - 1
        if n > 0:
            self.shares[device.id] = n
        else:
            self.shares.pop(device.id, None)
        used = self.consumed.get(device.id)
        if used is not None:
            for name, amount in amounts:
                used[name] -= amount
            if n <= 0:
                del self.consumed[device.id]
        if n == 0:
            self._consume_counters(device, 1)

    def _consume_counters(self, device: Device, sign: int) -> None:
        """Add (``sign`` 1) or subtract (-1) what ``device`` consumes of its counter sets."""
        for set_id, amounts in device.consumes:
            left = self.counters[set_id]
            for counter, amount in amounts:
                left[counter] = left.get(counter, Decimal(0)) + sign * amount


class BudgetExceeded(Exception):
    """The allocation search used its step budget."""


@dataclass(slots=True)
class _Budget:
    steps: int

    def spend(self) -> None:
        self.steps -= 1
        if self.steps < 0:
            raise BudgetExceeded


def _tolerated(sub: SubRequest, device: Device) -> bool:
    for key, value, effect in device.taints:
        if effect in FILTERED_EFFECTS and not any(t.tolerates(key, value, effect) for t in sub.tolerations):
            return False
    return True


def _in_scope(constraint: Constraint, result: str) -> bool:
    """Whether a result (``request`` or ``request/subrequest``) is one ``constraint`` names: every result
    when it names none, a request's results whichever choice served it, or one ``firstAvailable`` choice."""
    return not constraint.requests or result in constraint.requests or result.split("/", 1)[0] in constraint.requests


def _value_set(value: object) -> frozenset[tuple[str, object]]:
    """An attribute's values as a set (a scalar is a set of one), typed so ``True`` and ``1`` differ."""
    items = value if isinstance(value, tuple) else (value,)
    return frozenset((type(v).__name__, v) for v in items)


def _constraints_ok(claim: ClaimSpec, chosen: Sequence[Result]) -> bool:
    """Whether the devices chosen so far keep every constraint. A device without the attribute breaks it.
    ``matchAttribute``: the devices' value sets have a value in common; ``distinctAttribute``: they are
    pairwise disjoint — for scalars, equal and all different (list attributes, KEP-5491)."""
    for c in claim.constraints:
        scope = [d for name, d in chosen if _in_scope(c, name)]
        if c.match_attribute is not None and scope:
            values = [d.attributes.get(c.match_attribute) for d in scope]
            if any(v is None for v in values) or not frozenset.intersection(*map(_value_set, values)):
                return False
        if c.distinct_attribute is not None and scope:
            values = [d.attributes.get(c.distinct_attribute) for d in scope]
            if any(v is None for v in values):
                return False
            sets = [_value_set(v) for v in values]
            if len(frozenset().union(*sets)) != sum(map(len, sets)):
                return False
    return True


def _take_all(state: DeviceState, devices: Sequence[Device], amounts: Mapping[str, Amounts]) -> bool:
    """Take every device (a shared one: a share consuming ``amounts[id]``), checking each against what the
    previous ones consumed; undo on failure."""
    mark = state.mark()
    for d in devices:
        used = amounts.get(d.id, ()) if d.shared else ()
        if not state.fits(d, used):
            state.undo(mark)
            return False
        state.take(d, used)
    return True


def _multisets(free: Sequence[Device], k: int, start: int = 0) -> Iterator[tuple[Device, ...]]:
    """The ``k``-device choices from ``free`` in order (as :func:`itertools.combinations`), where a shared device
    may be chosen more than once (several shares of it for one request, as the structured allocator allows)."""
    if k == 0:
        yield ()
        return
    for i in range(start, len(free)):
        d = free[i]
        for rest in _multisets(free, k - 1, i if d.shared else i + 1):
            yield (d, *rest)


def _packed(state: DeviceState, devices: Sequence[Device], amounts: Mapping[str, Amounts]) -> list[Device]:
    """The devices that fit now, shared devices already in use first (fullest first), then the rest in
    their order: shares pack onto few devices, leaving fresh ones whole."""
    fits = [(i, d) for i, d in enumerate(devices) if state.fits(d, amounts.get(d.id, ()) if d.shared else ())]
    key = {d.id: -state.fullness(d) for _, d in fits if d.shared and state.shares.get(d.id)}
    fits.sort(key=lambda e: (0, key[e[1].id], e[0]) if e[1].id in key else (1, Decimal(0), e[0]))
    return [d for _, d in fits]


_NO_AMOUNTS: Mapping[str, Amounts] = {}


class _Candidates:
    """Devices best fit first, and per sub-request the ones it may use (tolerated, matching, and able to serve its
    capacity requests), with what one share of each shared one consumes.

    The matching lists are memoised: one search asks the same sub-requests again for every copy
    and after every backtrack, and the answer depends only on the sub-request and the devices.
    """

    __slots__ = ("_matches", "_memo", "ordered")

    def __init__(self, devices: Sequence[Device], matches: Matcher) -> None:
        self.ordered = sorted(devices, key=lambda d: (d.weight, d.id))
        self._matches = matches
        self._memo: dict[int, tuple[SubRequest, list[Device], Mapping[str, Amounts]]] = {}
        """id of a sub-request → (the sub-request, kept so the id stays its own; its devices; device id → what
        a share consumes, for the shared ones among them)."""

    def matching(self, sub: SubRequest) -> list[Device]:
        """The devices ``sub`` may use, best fit first (do not modify the returned list)."""
        return self._lookup(sub)[1]

    def amounts(self, sub: SubRequest) -> Mapping[str, Amounts]:
        """Shared device id → what one share of it for ``sub`` consumes (empty when none matches)."""
        return self._lookup(sub)[2]

    def _lookup(self, sub: SubRequest) -> tuple[SubRequest, list[Device], Mapping[str, Amounts]]:
        hit = self._memo.get(id(sub))
        if hit is None:
            matches = self._matches
            found = [d for d in self.ordered if _tolerated(sub, d) and matches(sub, d)]
            shares: Mapping[str, Amounts] = _NO_AMOUNTS
            if sub.capacity or any(d.shared for d in found):
                served = [(d, amounts_of(sub, d)) for d in found]
                found = [d for d, a in served if a is not None]
                shares = {d.id: a for d, a in served if a is not None and d.shared}
            hit = self._memo[id(sub)] = (sub, found, shares)
        return hit


def claim_alternatives(claim: ClaimSpec, devices: Sequence[Device], matches: Matcher, state: DeviceState,
                       budget: _Budget) -> Iterator[list[Result]]:
    """Yield each allocation of ``claim`` from ``devices``, keeping it taken in ``state`` while suspended."""
    return _alternatives(claim, _Candidates(devices, matches), state, budget)


def _alternatives(claim: ClaimSpec, candidates: _Candidates, state: DeviceState,
                  budget: _Budget) -> Iterator[list[Result]]:
    """:func:`claim_alternatives` over devices already ordered and matched."""
    chosen: list[Result] = []

    def requests(i: int) -> Iterator[list[Result]]:
        if i == len(claim.requests):
            yield list(chosen)
            return
        request = claim.requests[i]
        for sub in request.options:
            matching = candidates.matching(sub)
            if len(chosen) + (len(matching) if sub.all else sub.count) > MAX_DEVICES_PER_CLAIM:
                continue  # over the claim's limit: the next choice (a firstAvailable fallback), if any
            if sub.admin:
                yield from _admin(sub, matching, i)
                continue
            amounts = candidates.amounts(sub)
            if sub.all:
                if not matching or any(not state.fits(d, amounts.get(d.id, ())) for d in matching):
                    continue  # All: at least one, and every matching device must be free
                combos: Iterator[tuple[Device, ...]] = iter([tuple(matching)])
            elif amounts:  # shared devices among them: partly used ones first, a shared one maybe twice
                free = _packed(state, matching, amounts)
                combos = ((d,) for d in free) if sub.count == 1 else _multisets(free, sub.count)
            elif sub.count == 1:  # the free devices one at a time: the first that leads to an allocation
                # ends the scan (the state is the same each time the next one is checked: every try is undone)
                combos = ((d,) for d in matching if state.fits(d))
            else:
                free = [d for d in matching if state.fits(d)]
                if len(free) < sub.count:
                    continue
                combos = itertools.combinations(free, sub.count)
            for combo in combos:
                budget.spend()
                mark = state.mark()
                if not _take_all(state, combo, amounts):
                    continue  # devices of one combo that share counters or capacity do not all fit together
                for d in combo:
                    chosen.append((sub.result, d))
                if _constraints_ok(claim, chosen):
                    yield from requests(i + 1)
                del chosen[len(chosen) - len(combo):]
                state.undo(mark)

    def _admin(sub: SubRequest, matching: list[Device], i: int) -> Iterator[list[Result]]:
        """An ``adminAccess`` sub-request: any matching device, allocated or not, none taken (the structured
        allocator skips its in-use check for admin access, and its allocated state leaves admin results out:
        ``allocateddevices.go``). A shared device is used by one share like any other, so what that share
        consumes must fit what its allocations leave (``CmpRequestOverCapacity``, checked for admin access too);
        the share is not held. Unlike the structured allocator, no shared counter is checked or consumed (the
        device's owner holds them; ``docs/dra.md`` says why)."""
        named = {d.id for _, d in chosen}
        amounts = candidates.amounts(sub)
        usable = [d for d in matching if d.id not in named and (not d.shared or state.room(d, amounts.get(d.id, ())))]
        if sub.all:
            combos: Iterator[tuple[Device, ...]] = iter([tuple(usable)] if usable else [])
        else:
            combos = itertools.combinations(usable, sub.count)
        for combo in combos:
            budget.spend()
            chosen.extend((sub.result, d) for d in combo)
            if _constraints_ok(claim, chosen):
                yield from requests(i + 1)
            del chosen[len(chosen) - len(combo):]

    yield from requests(0)


def allocate_copies(claims: Sequence[ClaimSpec], copies: int, devices: Sequence[Device], matches: Matcher,
                    state: DeviceState, budget_steps: int = 2000) -> list[list[list[Result]]]:
    """Allocate ``claims`` (one pod's claims) up to ``copies`` times on one node; returns the most copies found.

    :func:`allocate_pods` with ``copies`` pods asking for the same claims.
    """
    return allocate_pods([claims] * copies, devices, matches, state, budget_steps)


def allocate_pods(pods: Sequence[Sequence[ClaimSpec]], devices: Sequence[Device], matches: Matcher,
                  state: DeviceState, budget_steps: int = 2000) -> list[list[list[Result]]]:
    """Allocate each pod's claims (``pods[i]``: the claims of pod ``i``) on one node, in order; returns the
    allocations of the longest prefix of ``pods`` found.

    Each pod's allocation is a list with one result list per claim. Devices chosen stay taken in
    ``state``; nothing is taken for pods that are not returned. Searches depth-first over device choices
    (best fit first), backtracking into earlier pods' choices, and keeps the deepest assignment (the
    first one found of that depth); stops once every pod is allocated or when ``budget_steps`` device
    combinations were tried. Kubernetes' structured allocator backtracks the same way over the requests
    of the claims it allocates together (``allocator.go`` ``allocateOne``, v1.37).
    """
    current: list[list[list[Result]]] = []
    ends: list[int] = []
    """Per pod in ``current``: the length of ``state.journal`` once it was allocated."""
    best: list[list[list[Result]]] = []
    best_taken: list[Taking] = []
    budget = _Budget(budget_steps)
    candidates = _Candidates(devices, matches)
    start = state.mark()

    def keep() -> None:
        """Remember ``current`` if it is deeper than the best so far (before it is taken back)."""
        nonlocal best, best_taken
        if len(current) > len(best):
            best = list(current)
            best_taken = [d for d in state.journal[start:ends[-1]] if isinstance(d, Device | _Share)]

    def pod(n: int) -> Iterator[None]:
        if n == len(pods):
            yield
            return
        yield from claims_of_pod(0, [], n)

    def claims_of_pod(i: int, results: list[list[Result]], n: int) -> Iterator[None]:
        claims = pods[n]
        if i == len(claims):
            current.append(list(results))
            ends.append(state.mark())
            yield from pod(n + 1)
            keep()  # only reached when the pods after this one could not all be allocated
            ends.pop()
            current.pop()
            return
        for alloc in _alternatives(claims[i], candidates, state, budget):
            results.append(alloc)
            yield from claims_of_pod(i + 1, results, n)
            results.pop()

    try:
        for _ in pod(0):
            return current  # every pod allocated: ``state`` holds exactly their devices
    except BudgetExceeded:
        if current:
            keep()
    state.undo(start)
    state.redo(best_taken)
    return best
