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


def test_the_postfilter_note_follows_each_groups_own_reason_too() -> None:
    """The note is about the whole tree: a child group's condition, which shows its own reason, carries it too."""
    child = GroupKey("PodGroup", "ml", "b")
    failure = Unschedulable(GroupKey("CompositePodGroup", "ml", "job"), Code.UNSCHEDULABLE,
                            "composite job: 1/2 child groups placeable (minGroupCount 2)",
                            group_reasons={child: "gang b: 0/1 placeable (minCount 1); 0/1 nodes are available: "
                                                  "1 Insufficient cpu."})
    after = failure.with_postfilter("pod group preemption: No preemption victims found for incoming pod.")
    assert after.group_reasons[child] == ("gang b: 0/1 placeable (minCount 1); 0/1 nodes are available: 1 Insufficient "
                                          "cpu. pod group preemption: No preemption victims found for incoming pod.")
