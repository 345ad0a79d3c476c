"""Gang repair's clock (``scheduler.live.repair.GangRepair``): a timeout is due at the deadline it reports."""

from __future__ import annotations

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
