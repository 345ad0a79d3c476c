"""The search's record of why each group did not fit: per group, the best failed attempt.

A group may be tried many times (in each topology domain, under each way of holding its shared claims, after
each alternative of an earlier sibling); the one kept is the attempt that placed the most members, as
kube-scheduler reports the node histogram of the attempt it made. An attempt whose reason lacks the per-node
verdicts (every domain skipped for room, the closest not tried: the first pass of
:func:`~scheduler.solver.search.solve`) gives way to an explained one that placed as many.

A composite's attempt is one try of its children in one place (one of its topology domains, or wherever its
parent's attempt is); the failures recorded while it runs are kept with it, each group's best
(:meth:`Failures.attempt`), and a composite's failure keeps the attempt it stopped in and which groups were
placed when it stopped. Reasons are read through :meth:`Failures.as_attempted`: a composite's children are told as
they failed in the attempt its failure reports — a child placed whole there is not listed, whatever it met in
another zone — and a plan's left-out child as it failed in the attempt that made the plan.

The messages themselves are built by :mod:`scheduler.solver.diagnosis`. Pure.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from scheduler.groups.tree import Composite, Group
from scheduler.model.scheduling import GroupKey


@dataclass(slots=True)
class Failure:
    """The best failed attempt seen for a group: most pods placed, why it stopped, which plugins said so."""

    placed: int
    message: str
    resource_limited: bool
    """Some node refused with code UNSCHEDULABLE (freeing room could help: preemption may be tried)."""
    rejectors: frozenset[str] = frozenset()
    explained: bool = True
    """False for a group whose every domain was skipped for room without the closest being tried: the message
    then lacks the per-node verdicts (the first pass of :func:`~scheduler.solver.search.solve`)."""
    within: Mapping[GroupKey, Failure] | None = None
    """A composite's failure: the best failure of each group under it in the attempt it stopped in (None for a
    leaf's, or one recorded outside an attempt of the composite: no topology domain had room for it)."""
    satisfied: frozenset[GroupKey] = frozenset()
    """A composite's failure: the groups satisfied (placed) when it stopped, its children among them."""

    def better_than(self, best: Failure | None) -> bool:
        """Whether this attempt is kept over ``best``: it placed more, or as many and is explained where
        ``best`` is not."""
        return best is None or self.placed > best.placed or (
            self.placed == best.placed and self.explained and not best.explained)


class Failures:
    """Group key → its best :class:`Failure` for one pass of the search, and the composites' attempts."""

    def __init__(self) -> None:
        self.by_group: dict[GroupKey, Failure] = {}
        self._running: list[dict[GroupKey, Failure]] = []
        """The attempts of composites running now, each its groups' best failures so far."""
        self._holding: dict[GroupKey, dict[GroupKey, Failure]] = {}
        """The attempts whose placement is held now (yielded to the parent), by composite."""

    def record(self, group: Group, placed: int, message: str, resource_limited: bool,
               rejectors: frozenset[str] = frozenset(), explained: bool = True,
               satisfied: frozenset[GroupKey] = frozenset()) -> None:
        """Record a failed attempt of ``group`` if it placed more members than the best so far (an explained one
        replaces an unexplained one that placed as many) — the best overall, and the best within each composite's
        attempt running now. ``satisfied``: for a composite, the groups satisfied when it stopped."""
        failure = Failure(placed, message, resource_limited, rejectors, explained, satisfied=satisfied)
        for best in (self.by_group, *self._running):
            if failure.better_than(best.get(group.key)):
                best[group.key] = failure

    def get(self, key: GroupKey) -> Failure | None:
        return self.by_group.get(key)

    @contextmanager
    def attempt(self, composite: Composite) -> Iterator[_Attempt]:
        """One attempt of ``composite``'s children (in one place): failures recorded while it runs are kept with
        it. ``hold()`` around each yield of a placement found, so what is tried while it is held (its parent's
        later children) is not counted as this attempt's. On leaving, the composite's best failure of this
        attempt keeps the best failure of each group under it in the same attempt (:attr:`Failure.within`)."""
        scope: dict[GroupKey, Failure] = {}
        self._running.append(scope)
        try:
            yield _Attempt(self, composite.key, scope)
        finally:
            _remove(self._running, scope)
            mine = scope.pop(composite.key, None)
            if mine is not None:
                mine.within = scope

    def as_attempted(self, root: Group) -> dict[GroupKey, Failure]:
        """Each group's failure as the attempt reported for ``root`` saw it. The children of a composite whose
        placement is held (the plan being made) failed as recorded in that attempt; the children of a composite
        that failed, as recorded in the attempt its failure stopped in, leaving out those placed then (and
        everything under them); a child that did not fail in the attempt has no failure (it was placed, then
        given up for a sibling, or not tried before the attempt stopped). The root's own is its best."""
        chosen: dict[GroupKey, Failure] = {}
        if root.key not in self._holding and (best := self.by_group.get(root.key)) is not None:
            chosen[root.key] = best

        def visit(group: Group, view: Mapping[GroupKey, Failure]) -> None:
            if not isinstance(group, Composite):
                return
            placed: frozenset[GroupKey] = frozenset()
            own = chosen.get(group.key)
            if group.key in self._holding:
                view = self._holding[group.key]
            elif own is not None and own.within is not None:
                view, placed = own.within, own.satisfied
            for child in group.children:
                if child.key in placed:
                    continue
                if (failure := view.get(child.key)) is not None:
                    chosen[child.key] = failure
                visit(child, view)

        visit(root, self.by_group)
        return chosen

    def resource_limited(self) -> bool:
        """Whether some recorded failure met a node refusing with code UNSCHEDULABLE."""
        return any(f.resource_limited for f in self.by_group.values())

    def rejectors(self) -> frozenset[str]:
        """The plugins that refused in any recorded failure."""
        return frozenset(r for f in self.by_group.values() for r in f.rejectors)


class _Attempt:
    """A running composite attempt's handle (:meth:`Failures.attempt`)."""

    __slots__ = ("_failures", "_key", "_scope")

    def __init__(self, failures: Failures, key: GroupKey, scope: dict[GroupKey, Failure]) -> None:
        self._failures, self._key, self._scope = failures, key, scope

    @contextmanager
    def hold(self) -> Iterator[None]:
        """While a placement this attempt found is held (yielded to the parent): failures recorded then are not
        this attempt's, and :meth:`Failures.as_attempted` reads this attempt's for the composite."""
        failures, scope = self._failures, self._scope
        _remove(failures._running, scope)
        failures._holding[self._key] = scope
        try:
            yield
        finally:
            del failures._holding[self._key]
            failures._running.append(scope)


def _remove(scopes: list[dict[GroupKey, Failure]], scope: dict[GroupKey, Failure]) -> None:
    """Remove ``scope`` (by identity: scopes may be equal) from ``scopes``, if it is there."""
    for i in range(len(scopes) - 1, -1, -1):
        if scopes[i] is scope:
            del scopes[i]
            return
