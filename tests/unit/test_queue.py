"""The scheduling queue's backoff across a plan's binding: a root whose plans keep failing to bind
backs off like any failing root — its attempts are not reset by the plan, nor while it is not ready."""

from __future__ import annotations

from scheduler.groups.tree import GroupTree, Leaf, TreeState
from scheduler.model.scheduling import GroupKey
from scheduler.queue import SchedulingQueue

KEY = GroupKey("PodGroup", "ml", "g")


def tree(state: TreeState, pending: int = 0) -> GroupTree:
    return GroupTree(root=Leaf(KEY, 1, None, ()), state=state, message=str(pending), groups=(KEY,))


def test_attempts_survive_the_binding_of_a_plan_and_end_when_it_is_scheduled() -> None:
    queue = SchedulingQueue(initial_backoff_s=1.0, max_backoff_s=60.0)
    delays = []
    for attempt in range(4):  # plan made, bound in part, requeued: 1, 2, 4, 8 s
        queue.update(tree(TreeState.READY, attempt), KEY, ready=True)
        assert queue.pop(now=1000.0 * (attempt + 1)) == KEY
        queue.update(tree(TreeState.SCHEDULED, attempt), KEY, ready=False)  # assumed while binding
        delays.append(queue.backoff(tree(TreeState.READY, attempt), now=1000.0 * (attempt + 1)))
    assert delays == [1.0, 2.0, 4.0, 8.0]
    queue.done(KEY)  # the last plan bound whole
    assert KEY not in queue.attempts
    assert queue.backoff(tree(TreeState.READY), now=9000.0) == 1.0


def test_a_root_that_is_gone_forgets_its_attempts() -> None:
    queue = SchedulingQueue()
    queue.update(tree(TreeState.READY), KEY, ready=True)
    queue.backoff(tree(TreeState.READY), now=0.0)
    queue.update(None, KEY, ready=False)
    assert KEY not in queue.attempts and not len(queue)
