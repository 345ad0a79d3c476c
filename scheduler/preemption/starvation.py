"""The starvation guard: a root that keeps losing freed room to equal-priority roots gets a reservation.

Without it a large gang can wait forever while smaller gangs of the same priority take every bit
of room that frees up (nothing upstream prevents this: KEP-5710 specifies no starvation
protection). The guard only keeps the books; what a
reservation *is* is the scheduler's one held-room mechanism: the root's pods are nominated to
the nodes of its best plan (:meth:`~scheduler.preemption.plugin.DefaultPreemption.reservation`),
so every root of equal or lower priority leaves that room to it
(:class:`~scheduler.framework.snapshot.Nominated`), while higher-priority roots may still take it.

Rules, on the caller's clock (seconds):

* a root is *waiting* from its first failed attempt until it is placed or gone;
* it is *overtaken* once another root of the same priority is placed while it waits;
* it is *starving* when it has waited ``after_s`` and was overtaken — it then gets a reservation
  of ``hold_s``;
* a reservation ends when the root is placed (``fitted``), when it expires (``expired``: the
  root starts waiting afresh, so smaller roots get room again for at least ``after_s``), or when
  the root is gone (``dropped``).

Pure bookkeeping: no I/O, no clock of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.model.scheduling import GroupKey


@dataclass(slots=True)
class Waiting:
    """A root that failed at ``since`` (seconds, the caller's clock) at ``priority``; ``overtaken``: a root of
    the same priority was placed since."""

    since: float
    priority: int
    overtaken: int = 0


@dataclass(frozen=True, slots=True)
class Reservation:
    """The nodes held for ``root`` until ``until``: (pod key, node) nominations."""

    root: GroupKey
    until: float
    nominations: tuple[tuple[str, str], ...]


class StarvationGuard:
    """See the module docstring. ``after_s``: how long a root may wait while overtaken before it is reserved
    for; ``hold_s``: how long a reservation lasts."""

    def __init__(self, after_s: float, hold_s: float) -> None:
        self.after_s = after_s
        self.hold_s = hold_s
        self.waiting: dict[GroupKey, Waiting] = {}
        self.reservations: dict[GroupKey, Reservation] = {}

    def failed(self, root: GroupKey, priority: int, now: float) -> None:
        """``root`` was tried and did not fit."""
        entry = self.waiting.get(root)
        if entry is None:
            self.waiting[root] = Waiting(now, priority)
        else:
            entry.priority = priority

    def starving(self, root: GroupKey, now: float) -> Waiting | None:
        """The waiting record of ``root`` if it is starving and not reserved for yet, else None."""
        entry = self.waiting.get(root)
        if entry is None or root in self.reservations or not entry.overtaken or now - entry.since < self.after_s:
            return None
        return entry

    def reserve(self, root: GroupKey, nominations: tuple[tuple[str, str], ...], now: float) -> Reservation:
        """Record the reservation made for ``root``; it lasts ``hold_s``."""
        reservation = Reservation(root, now + self.hold_s, nominations)
        self.reservations[root] = reservation
        return reservation

    def placed(self, root: GroupKey, priority: int) -> Reservation | None:
        """``root`` got a plan: it stops waiting, every other root of ``priority`` that waits is overtaken.
        Returns its reservation, which ends here (fitted), if it had one."""
        self.waiting.pop(root, None)
        for other, entry in self.waiting.items():
            if entry.priority == priority and other != root:
                entry.overtaken += 1
        return self.reservations.pop(root, None)

    def expired(self, now: float) -> list[Reservation]:
        """Reservations whose time is up, removed; their roots wait afresh from ``now``."""
        ended = [r for r in self.reservations.values() if r.until <= now]
        for reservation in ended:
            del self.reservations[reservation.root]
            entry = self.waiting.get(reservation.root)
            if entry is not None:
                entry.since, entry.overtaken = now, 0
        return ended

    def forget(self, root: GroupKey) -> Reservation | None:
        """``root`` is gone: drop its records; returns its reservation, if any (dropped)."""
        self.waiting.pop(root, None)
        return self.reservations.pop(root, None)

    def next_expiry(self) -> float | None:
        """When the earliest reservation expires, or None."""
        return min((r.until for r in self.reservations.values()), default=None)
