"""The starvation guard's bookkeeping, on an explicit clock."""

from __future__ import annotations

from scheduler.model.scheduling import GroupKey
from scheduler.preemption.starvation import StarvationGuard

BIG, SMALL, OTHER = (GroupKey("PodGroup", "ml", n) for n in ("big", "small", "other"))


def guard() -> StarvationGuard:
    return StarvationGuard(after_s=300, hold_s=600)


def test_a_root_waiting_long_is_not_starving_unless_overtaken_by_its_priority() -> None:
    g = guard()
    g.failed(BIG, 5, now=0)
    assert g.starving(BIG, now=1000) is None
    g.placed(OTHER, 6)  # a root of another priority does not count
    assert g.starving(BIG, now=1000) is None
    g.placed(SMALL, 5)
    assert g.starving(BIG, now=299) is None  # not long enough yet
    entry = g.starving(BIG, now=300)
    assert entry is not None and entry.overtaken == 1


def test_a_reservation_ends_when_the_root_fits() -> None:
    g = guard()
    g.failed(BIG, 5, 0)
    g.placed(SMALL, 5)
    made = g.reserve(BIG, (("ml/big-0", "n1"),), now=300)
    assert made.until == 900 and g.starving(BIG, 301) is None  # reserved: not starving again
    assert g.placed(BIG, 5) == made and g.reservations == {} and BIG not in g.waiting


def test_an_expired_reservation_makes_the_root_wait_afresh() -> None:
    g = guard()
    g.failed(BIG, 5, 0)
    g.placed(SMALL, 5)
    g.reserve(BIG, (), now=300)
    assert g.next_expiry() == 900
    assert g.expired(899) == []
    assert [r.root for r in g.expired(900)] == [BIG]
    assert g.waiting[BIG].since == 900 and g.waiting[BIG].overtaken == 0
    assert g.starving(BIG, 2000) is None


def test_a_gone_root_drops_its_reservation() -> None:
    g = guard()
    g.failed(BIG, 5, 0)
    g.reserve(BIG, (), 1)
    assert g.forget(BIG) is not None and g.forget(BIG) is None
