"""Unschedulable.with_postfilter: preemption's outcome appended to the root's reason as kube-scheduler appends it."""

from __future__ import annotations

import pytest

from scheduler.framework import Unschedulable
from scheduler.framework.status import Code
from scheduler.model.scheduling import GroupKey


@pytest.mark.parametrize(("summary", "joined"), [
    pytest.param("0/4 nodes are available: 4 Insufficient cpu.",
                 "0/4 nodes are available: 4 Insufficient cpu. preemption: not helpful", id="a-sentence-then-a-space"),
    pytest.param("gang g: 0/2 placeable (minCount 2)", "gang g: 0/2 placeable (minCount 2); preemption: not helpful",
                 id="no-period-then-a-semicolon"),
    pytest.param("", "preemption: not helpful", id="no-summary")])
def test_the_postfilter_note_follows_the_summary_as_kube_scheduler_joins_it(summary: str, joined: str) -> None:
    failure = Unschedulable(GroupKey("PodGroup", "ml", "g"), Code.UNSCHEDULABLE, summary, attempts=3)
    after = failure.with_postfilter("preemption: not helpful")
    assert after.message == joined and after.attempts == 3 and failure.message == summary
