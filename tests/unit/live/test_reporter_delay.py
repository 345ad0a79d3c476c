"""The Reporter's delayed NotReadyForScheduling reports (KEP-5501): written once the state has lasted
:data:`~scheduler.live.reporter.NOT_READY_DELAY_S`, by the leader only, never early, never lost."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from scheduler.groups import TreeState, build_trees
from scheduler.groups.tree import GroupTree, OrphanPod
from scheduler.live.reporter import NOT_READY_DELAY_S, Reporter
from tests.unit.groups.builders import pg
from tests.unit.groups.test_tree import OURS, members, pod

D = NOT_READY_DELAY_S


def waiting(n: int, min_count: int = 4) -> GroupTree:
    (tree,) = build_trees(members("g", n), [pg("g", min_count)], [], scheduler_name=OURS).trees
    assert tree.state is (TreeState.WAITING if n < min_count else TreeState.READY)
    return tree


class Kit:
    def __init__(self) -> None:
        self.leading = True
        self.orphans: dict[str, OrphanPod] = {}
        self.cache = SimpleNamespace(scheduler_name=OURS, groups=SimpleNamespace(orphans=self.orphans, trees={}),
                                     pod=lambda key: None)
        self.conditions: list[tuple[str, str]] = []
        self.written: list[tuple[str, str, str]] = []
        conditions = SimpleNamespace(failed=lambda tree, reason, message, *a: self.conditions.append((reason, message)))
        self.reporter = Reporter(self.cache, SimpleNamespace(), conditions, SimpleNamespace(),  # type: ignore[arg-type]
                                 lambda *a: None, lambda ns: True, fence=lambda: self.leading)  # type: ignore[arg-type]
        self.reporter.pod = lambda key, reason, message: self.written.append((key, reason, message))  # type: ignore


@pytest.mark.looptime
async def test_a_waiting_report_is_written_once_the_state_has_lasted_the_delay() -> None:
    kit = Kit()
    tree = waiting(3)
    kit.reporter.tree_changed(tree.key, tree)
    await asyncio.sleep(D - 0.1)
    assert kit.written == []
    await asyncio.sleep(0.2)
    assert [r for _, r, _ in kit.written] == ["NotReadyForScheduling"] * 3
    assert kit.conditions == [("Unschedulable", tree.message)]


@pytest.mark.looptime
async def test_a_message_back_again_within_the_delay_is_not_reported_early() -> None:
    """3/4 at 0, 2/4 at 1 s, 3/4 again at 2 s: the 3/4 has lasted the delay at 2 + D, not at D."""
    kit = Kit()
    three, two = waiting(3), waiting(2)
    kit.reporter.tree_changed(three.key, three)
    await asyncio.sleep(1)
    kit.reporter.tree_changed(two.key, two)
    await asyncio.sleep(1)
    kit.reporter.tree_changed(three.key, three)
    await asyncio.sleep(D - 1.5)  # 0.5 s past the first 3/4's delay
    assert kit.written == [] and kit.conditions == []
    await asyncio.sleep(2)  # past 2 + D
    assert len(kit.written) == 3 and kit.conditions == [("Unschedulable", three.message)]


@pytest.mark.looptime
async def test_a_waiting_tree_ready_for_a_while_and_waiting_again_is_still_reported() -> None:
    """Waiting, then Ready (a member added; not tried yet: in backoff) past the delay, then Waiting again with the
    same message (the member gone): nothing was reported of the first wait, so the second is."""
    kit = Kit()
    three, four = waiting(3), waiting(4)
    kit.reporter.tree_changed(three.key, three)
    await asyncio.sleep(1)
    kit.reporter.tree_changed(four.key, four)  # Ready
    await asyncio.sleep(D)
    kit.reporter.tree_changed(three.key, three)  # waiting again, the same message
    await asyncio.sleep(D + 0.1)
    assert len(kit.written) == 3 and kit.conditions == [("Unschedulable", three.message)]


@pytest.mark.looptime
async def test_a_follower_writes_no_delayed_report_and_a_new_term_writes_it() -> None:
    kit = Kit()
    tree = waiting(3)
    kit.reporter.tree_changed(tree.key, tree)
    await asyncio.sleep(1)
    kit.leading = False  # the lease lost before the delay is over
    await asyncio.sleep(D)
    assert kit.written == [] and kit.conditions == []
    kit.leading = True  # a new term: the driver routes every tree again
    kit.reporter.tree_changed(tree.key, tree)
    await asyncio.sleep(D + 0.1)
    assert len(kit.written) == 3 and kit.conditions == [("Unschedulable", tree.message)]


@pytest.mark.looptime
async def test_a_follower_writes_no_delayed_orphan_report() -> None:
    kit = Kit()
    orphan = pod("o-0", "missing")
    kit.orphans[orphan.key] = OrphanPod(orphan, "waiting for PodGroup ml/missing to appear")
    kit.reporter.orphans()
    kit.leading = False
    await asyncio.sleep(D + 0.1)
    assert kit.written == []
    kit.leading = True
    kit.reporter.orphans()
    await asyncio.sleep(D + 0.1)
    assert kit.written == [(orphan.key, "NotReadyForScheduling", "waiting for PodGroup ml/missing to appear")]


@pytest.mark.looptime
async def test_closing_cancels_the_pending_reports() -> None:
    kit = Kit()
    tree = waiting(3)
    kit.reporter.tree_changed(tree.key, tree)
    kit.reporter.close()
    await asyncio.sleep(D + 0.1)
    assert kit.written == [] and kit.conditions == []
