"""The search's record of why each group did not fit: per group, the best failed attempt.

A group may be tried many times (in each topology domain, under each way of holding its shared claims, after
each alternative of an earlier sibling); the one kept is the attempt that placed the most members, as
kube-scheduler reports the node histogram of the attempt it made. An attempt whose reason lacks the per-node
verdicts (every domain skipped for room, the closest not tried: the first pass of
:func:`~scheduler.solver.search.solve`) gives way to an explained one that placed as many.

The messages themselves are built by :mod:`scheduler.solver.diagnosis`. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from scheduler.groups.tree import Group
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
    satisfied: frozenset[GroupKey] = frozenset()
    """A composite's failure: the groups satisfied (placed) when this attempt stopped, its children among them."""


class Failures:
    """Group key → its best :class:`Failure` for one pass of the search."""

    def __init__(self) -> None:
        self.by_group: dict[GroupKey, Failure] = {}

    def record(self, group: Group, placed: int, message: str, resource_limited: bool,
               rejectors: frozenset[str] = frozenset(), explained: bool = True,
               satisfied: AbstractSet[GroupKey] = frozenset()) -> None:
        """Record a failed attempt of ``group`` if it placed more members than the best so far (an explained one
        replaces an unexplained one that placed as many). ``satisfied``: for a composite, the groups satisfied
        when the attempt stopped (the search's live set: copied only when the attempt is kept)."""
        best = self.by_group.get(group.key)
        if best is None or placed > best.placed or (placed == best.placed and explained and not best.explained):
            self.by_group[group.key] = Failure(placed, message, resource_limited, rejectors, explained,
                                               frozenset(satisfied))

    def get(self, key: GroupKey) -> Failure | None:
        return self.by_group.get(key)

    def unexplained(self, keys: Iterable[GroupKey]) -> bool:
        """Whether the failure recorded for one of ``keys`` lacks the per-node verdicts (see :class:`Failure`)."""
        return any(not f.explained for k in keys if (f := self.by_group.get(k)) is not None)

    def resource_limited(self) -> bool:
        """Whether some recorded failure met a node refusing with code UNSCHEDULABLE."""
        return any(f.resource_limited for f in self.by_group.values())

    def rejectors(self) -> frozenset[str]:
        """The plugins that refused in any recorded failure."""
        return frozenset(r for f in self.by_group.values() for r in f.rejectors)
