"""The search's record of why each group did not fit: per group, the best failed attempt.

A group may be tried many times (in each topology domain, under each way of holding its shared claims, after
each alternative of an earlier sibling); the one kept is the attempt that placed the most members, as
kube-scheduler reports the node histogram of the attempt it made. An attempt whose reason lacks the per-node
verdicts (every domain skipped for room, the closest not tried: the first pass of
:func:`~scheduler.solver.search.solve`) gives way to an explained one that placed as many.

A composite's attempt is one try of its children in one place (one of its topology domains, or wherever its
parent's attempt is); the failures recorded while it runs are kept with it, each group's best
(:meth:`Failures.attempt`). A composite's reason then lists its children's failures *from the attempt it
reports*, not the best each child had anywhere: a child placed whole in the zone the composite names is not
said to fail in another zone (:meth:`Failures.as_attempted`).

The messages themselves are built by :mod:`scheduler.solver.diagnosis`. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from scheduler.groups.tree import Composite, Group, walk
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
    """A composite's failure: the best failure of each group under it in the same attempt (None for a leaf, or a
    failure recorded outside an attempt of the composite: no topology domain had room for it)."""

    def better_than(self, best: Failure | None) -> bool:
        """Whether this attempt is kept over ``best``: it placed more, or as many and is explained where
        ``best`` is not."""
        return best is None or self.placed > best.placed or (
            self.placed == best.placed and self.explained and not best.explained)


class Failures:
    """Group key → its best :class:`Failure` for one pass of the search."""

    def __init__(self) -> None:
        self.by_group: dict[GroupKey, Failure] = {}
        self._running: list[dict[GroupKey, Failure]] = []
        """The attempts of composites running now (outermost first), each its groups' best failures so far."""
        self._holding: list[dict[GroupKey, Failure]] = []
        """The attempts of composites whose placement is held now (yielded; outermost first)."""

    def record(self, group: Group, placed: int, message: str, resource_limited: bool,
               rejectors: frozenset[str] = frozenset(), explained: bool = True) -> None:
        """Record a failed attempt of ``group`` if it placed more members than the best so far (an explained one
        replaces an unexplained one that placed as many) — the best overall, and the best within each composite's
        attempt running now."""
        failure = Failure(placed, message, resource_limited, rejectors, explained)
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
            yield _Attempt(self, scope)
        finally:
            _remove(self._running, scope)
            mine = scope.pop(composite.key, None)
            if mine is not None:
                mine.within = scope

    def as_attempted(self, root: Group) -> dict[GroupKey, Failure]:
        """Each group's failure as the attempt kept for ``root`` saw it: under a composite whose kept failure
        names its attempt, a group failed as recorded in that attempt, and a group that did not fail there has no
        failure (it was placed, or not tried before the attempt gave up); elsewhere the best overall."""
        chosen = dict(self.by_group)

        def narrow(group: Group) -> None:
            failure = chosen.get(group.key)
            if isinstance(group, Composite) and failure is not None and failure.within is not None:
                for below in walk(group):
                    if below is not group:
                        if (f := failure.within.get(below.key)) is not None:
                            chosen[below.key] = f
                        else:
                            chosen.pop(below.key, None)
            if isinstance(group, Composite):
                for child in group.children:
                    narrow(child)

        narrow(root)
        return chosen

    def held(self, key: GroupKey) -> Failure | None:
        """The failure of ``key`` in the attempts whose placement is held now (the plan being made), innermost
        first; None when none of them saw it fail."""
        for scope in reversed(self._holding):
            if (f := scope.get(key)) is not None:
                return f
        return None

    def unexplained(self, keys: Iterable[GroupKey]) -> bool:
        """Whether the failure recorded for one of ``keys`` lacks the per-node verdicts (see :class:`Failure`)."""
        return any(not f.explained for k in keys if (f := self.by_group.get(k)) is not None)

    def resource_limited(self) -> bool:
        """Whether some recorded failure met a node refusing with code UNSCHEDULABLE."""
        return any(f.resource_limited for f in self.by_group.values())

    def rejectors(self) -> frozenset[str]:
        """The plugins that refused in any recorded failure."""
        return frozenset(r for f in self.by_group.values() for r in f.rejectors)


class _Attempt:
    """A running composite attempt's handle (:meth:`Failures.attempt`)."""

    __slots__ = ("_failures", "_scope")

    def __init__(self, failures: Failures, scope: dict[GroupKey, Failure]) -> None:
        self._failures, self._scope = failures, scope

    @contextmanager
    def hold(self) -> Iterator[None]:
        """While a placement this attempt found is held (yielded to the parent): failures recorded then are not
        this attempt's, and :meth:`Failures.held` reads this attempt's."""
        failures, scope = self._failures, self._scope
        _remove(failures._running, scope)
        failures._holding.append(scope)
        try:
            yield
        finally:
            _remove(failures._holding, scope)
            failures._running.append(scope)


def _remove(scopes: list[dict[GroupKey, Failure]], scope: dict[GroupKey, Failure]) -> None:
    """Remove ``scope`` (by identity: scopes may be equal) from ``scopes``, if it is there."""
    for i in range(len(scopes) - 1, -1, -1):
        if scopes[i] is scope:
            del scopes[i]
            return
