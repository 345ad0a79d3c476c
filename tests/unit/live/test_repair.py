"""Gang repair's clock (``scheduler.live.repair.GangRepair``): a timeout is due at the deadline it reports."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from scheduler.live.repair import GangRepair, Partial
from scheduler.model.scheduling import GroupKey

KEY = GroupKey("PodGroup", "ml", "g")


@pytest.mark.parametrize(("since", "timeout_s"), [(0.7, 0.1), (17.854466, 300.0), (0.1, 0.2)])
def test_a_partial_root_expires_at_the_deadline_it_reports(since: float, timeout_s: float) -> None:
    """``0.7 + 0.1`` is ``0.7999999999999999``, and ``0.7999999999999999 - 0.7 < 0.1``: judged by subtraction the
    root would not expire at its own deadline, and the driver would wake for it again and again."""
    repair = GangRepair(timeout_s)
    repair.partial[KEY] = Partial(since)
    deadline = repair.next_deadline()
    assert deadline is not None
    assert repair.expired(deadline - 1e-5) == []
    assert repair.expired(deadline) == [KEY]


def test_how_long_a_root_has_been_partial_counts_from_its_condition_after_a_restart() -> None:
    """After a restart the clock starts at the root group's ``GangBelowMin`` lastTransitionTime, so the timeout's
    Event says how long the gang has really been below its minimum, not the timeout."""
    repair = GangRepair(20.0)
    tree = SimpleNamespace(partial=True)
    repair.observe(KEY, tree, 1000.0, datetime.now(UTC) - timedelta(seconds=150))  # type: ignore[arg-type]
    assert repair.expired(1000.0) == [KEY]  # past the timeout already
    assert 149.5 < repair.below_min_s(KEY, 1000.0) < 151.0
    assert 169.5 < repair.below_min_s(KEY, 1020.0) < 171.0
    repair.retry(KEY, 1020.0, 10.0)  # a teardown to be tried again: its deadline moves, not its start
    assert repair.next_deadline() == 1030.0
    assert 179.5 < repair.below_min_s(KEY, 1030.0) < 181.0
    assert repair.below_min_s(GroupKey("PodGroup", "ml", "other"), 1030.0) == 0.0
