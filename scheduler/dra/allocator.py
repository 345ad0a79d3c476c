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
  enough left in its counter set — partitionable GPUs and MIG never over-consume.

Unlike a first-fit allocator, the search tries devices *best fit first* (the device that consumes
the smallest share of its counter sets) and backtracks over device choices, within a budget, both
inside one claim and across the copies of a gang on the node: so a whole GPU is not given to one
member when two half-GPUs would serve two (the upstream greedy trap).

Pure: plain dataclasses in, plain results out; the caller owns the :class:`DeviceState`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

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
    claim loses them, no counter is consumed); only one claim's results never name a device twice.
    """

    result: str
    class_name: str
    selectors: tuple[str, ...] = ()
    count: int = 1
    all: bool = False
    tolerations: tuple[DeviceToleration, ...] = ()
    admin: bool = False


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


@dataclass(slots=True)
class DeviceState:
    """Devices taken and counters left, with an undo journal (one per solver run).

    ``taken``: device id → the :class:`~scheduler.model.dra.DeviceUse` that keeps it from other allocations
    (an allocation in the cluster, a plan in flight, or this solve's). The journal holds a :class:`Device` per
    :meth:`take` and a :class:`_Released` per :meth:`release`; :meth:`undo` reverses both, so a placement may
    give back devices an earlier one took (to allocate them again together with its own) and its undo restores
    the earlier allocation exactly.
    """

    taken: dict[str, DeviceUse] = field(default_factory=dict)
    counters: dict[str, dict[str, Decimal]] = field(default_factory=dict)
    journal: list[Device | _Released] = field(default_factory=list)

    def fits(self, device: Device) -> bool:
        if device.id in self.taken:
            return False
        for set_id, amounts in device.consumes:
            left = self.counters.get(set_id)
            if left is None:
                return False  # a counter set no slice publishes: never allocatable
            for counter, amount in amounts:
                if left.get(counter, Decimal(0)) < amount:
                    return False
        return True

    def take(self, device: Device) -> None:
        self._take(device)
        self.journal.append(device)

    def release(self, device: Device) -> None:
        """Give back a taken ``device`` (and what it consumes of its counter sets), journaled."""
        use = self.taken.get(device.id) or DeviceUse(device.id)
        self._give_back(device)
        self.journal.append(_Released(device, use))

    def mark(self) -> int:
        return len(self.journal)

    def undo(self, mark: int) -> None:
        while len(self.journal) > mark:
            entry = self.journal.pop()
            if isinstance(entry, _Released):
                self._take(entry.device, entry.use)
            else:
                self._give_back(entry)

    def _take(self, device: Device, use: DeviceUse | None = None) -> None:
        self.taken[device.id] = use or DeviceUse(device.id)
        for set_id, amounts in device.consumes:
            left = self.counters[set_id]
            for counter, amount in amounts:
                left[counter] = left.get(counter, Decimal(0)) - amount

    def _give_back(self, device: Device) -> None:
        self.taken.pop(device.id, None)
        for set_id, amounts in device.consumes:
            left = self.counters[set_id]
            for counter, amount in amounts:
                left[counter] += amount


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


def _take_all(state: DeviceState, devices: Sequence[Device]) -> bool:
    """Take every device, checking each against what the previous ones consumed; undo on failure."""
    mark = state.mark()
    for d in devices:
        if not state.fits(d):
            state.undo(mark)
            return False
        state.take(d)
    return True


class _Candidates:
    """Devices best fit first, and per sub-request the ones it may use (tolerated and matching).

    The matching lists are memoised: one search asks the same sub-requests again for every copy
    and after every backtrack, and the answer depends only on the sub-request and the devices.
    """

    __slots__ = ("_matches", "_memo", "ordered")

    def __init__(self, devices: Sequence[Device], matches: Matcher) -> None:
        self.ordered = sorted(devices, key=lambda d: (d.weight, d.id))
        self._matches = matches
        self._memo: dict[int, tuple[SubRequest, list[Device]]] = {}
        """id of a sub-request → (the sub-request, kept so the id stays its own; its devices)."""

    def matching(self, sub: SubRequest) -> list[Device]:
        """The devices ``sub`` may use, best fit first (do not modify the returned list)."""
        hit = self._memo.get(id(sub))
        if hit is None:
            matches = self._matches
            hit = self._memo[id(sub)] = (sub, [d for d in self.ordered if _tolerated(sub, d) and matches(sub, d)])
        return hit[1]


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
            if sub.all:
                if not matching or any(not state.fits(d) for d in matching):
                    continue  # All: at least one, and every matching device must be free
                combos: Iterator[tuple[Device, ...]] = iter([tuple(matching)])
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
                if not _take_all(state, combo):
                    continue  # devices of one combo that share counters do not all fit together
                for d in combo:
                    chosen.append((sub.result, d))
                if _constraints_ok(claim, chosen):
                    yield from requests(i + 1)
                del chosen[len(chosen) - len(combo):]
                state.undo(mark)

    def _admin(sub: SubRequest, matching: list[Device], i: int) -> Iterator[list[Result]]:
        """An ``adminAccess`` sub-request: any matching device, allocated or not, none taken (the structured
        allocator skips its allocated-device and counter checks for admin access)."""
        named = {d.id for _, d in chosen}
        usable = [d for d in matching if d.id not in named]
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
    best_taken: list[Device] = []
    budget = _Budget(budget_steps)
    candidates = _Candidates(devices, matches)
    start = state.mark()

    def keep() -> None:
        """Remember ``current`` if it is deeper than the best so far (before it is taken back)."""
        nonlocal best, best_taken
        if len(current) > len(best):
            best = list(current)
            best_taken = [d for d in state.journal[start:ends[-1]] if isinstance(d, Device)]

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
    for device in best_taken:
        state.take(device)
    return best
