"""The scheduling queue's backoff across a plan's binding: a root whose plans keep failing to bind
backs off like any failing root — its attempts are not reset by the plan, nor while it is not ready. A root that
found no placement is parked until an event may help it (kube-scheduler's unschedulablePods)."""

from __future__ import annotations

from scheduler.framework.events import Action, ClusterEvent
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


HINTS = {"NodeResourcesFit": lambda event: event.kind == "Node"}
"""One plugin with a hint: a node event may help the roots it rejected."""


def parked_queue(retry_s: float = 300.0) -> SchedulingQueue:
    """A queue whose root KEY found no placement at t=0 (NodeResourcesFit rejected it): parked."""
    queue = SchedulingQueue(initial_backoff_s=1.0, max_backoff_s=60.0, hints=HINTS, unschedulable_retry_s=retry_s)
    queue.update(tree(TreeState.READY), KEY, ready=True)
    assert queue.pop(now=0.0) == KEY
    assert queue.backoff(tree(TreeState.READY), now=0.0, rejectors=frozenset({"NodeResourcesFit"}),
                         unschedulable=True) == 1.0
    return queue


def node_added() -> ClusterEvent:
    return ClusterEvent("Node", Action.ADD, new=object())


def test_an_unschedulable_root_is_parked_past_its_backoff_until_the_retry_interval() -> None:
    """kube-scheduler's unschedulablePods: nothing that could help happened, so the root is not tried when its 1 s
    backoff ends, nor at 60 s; it is tried again after podMaxInUnschedulablePodsDuration (here 300 s)."""
    queue = parked_queue()
    assert queue.parked() == [KEY] and queue.next_wakeup() == 300.0
    assert queue.pop(now=1.0) is None and queue.pop(now=299.9) is None
    assert queue.on_events([ClusterEvent("Pod", Action.ADD, new=object())], now=100.0) == 0  # no hint fires
    assert queue.pop(now=300.0) == KEY


def test_an_event_that_may_help_moves_a_parked_root_once_its_backoff_has_ended() -> None:
    queue = parked_queue()
    assert queue.on_events([node_added()], now=0.5) == 1  # within its 1 s backoff: it waits for the backoff's end
    assert queue.parked() == [] and queue.next_wakeup() == 1.0
    assert queue.on_events([node_added()], now=0.7) == 0  # a second event does not cut the backoff short
    assert queue.pop(now=0.9) is None and queue.pop(now=1.0) == KEY

    queue = parked_queue()
    assert queue.on_events([node_added()], now=5.0) == 1  # backoff over: ready at once
    assert queue.pop(now=5.0) == KEY


def test_a_root_that_failed_otherwise_or_without_a_hint_backs_off_and_is_not_parked() -> None:
    """A preemption under way, a bind that failed, a rejector with no hint: no event is sure to say when it may
    fit, so it is tried again when its backoff ends."""
    for rejectors, unschedulable in ((frozenset({"NodeResourcesFit"}), False), (frozenset({"NoHint"}), True),
                                     (frozenset({"NodeResourcesFit", "NoHint"}), True), (frozenset(), True)):
        queue = SchedulingQueue(hints=HINTS)
        queue.update(tree(TreeState.READY), KEY, ready=True)
        queue.pop(now=0.0)
        queue.backoff(tree(TreeState.READY), now=0.0, rejectors=rejectors, unschedulable=unschedulable)
        assert queue.parked() == [] and queue.next_wakeup() == 1.0
        assert queue.pop(now=1.0) == KEY


def test_a_change_of_its_own_tree_moves_a_parked_root_at_once() -> None:
    """A member pod arrived or minCount changed: the root is tried at once, as before it was parked."""
    queue = parked_queue()
    queue.update(tree(TreeState.READY, pending=1), KEY, ready=True)
    assert queue.pop(now=0.2) == KEY


def test_a_waiting_root_takes_a_quietly_rebuilt_tree_without_moving() -> None:
    """Its own status writes rebuild the tree with new pod objects: the parked entry holds the new tree (the old
    one is let go) and stays parked."""
    queue = parked_queue()
    rebuilt = tree(TreeState.READY, pending=2)
    queue.retree(rebuilt)
    assert queue.backing_off[KEY].order is rebuilt and queue.parked() == [KEY]
    assert queue.pop(now=299.0) is None


def test_a_backoff_that_ends_within_the_clocks_slack_has_ended() -> None:
    """A loop that keeps time in microseconds never reaches 16.854466000000002: the root must come back at
    16.854466, or the driver re-arms a timer of nothing forever."""
    queue = SchedulingQueue(initial_backoff_s=1.0, max_backoff_s=60.0)
    queue.update(tree(TreeState.READY), KEY, ready=True)
    assert queue.pop(now=15.854466000000002) == KEY
    end = 15.854466000000002 + queue.backoff(tree(TreeState.READY), now=15.854466000000002)
    assert queue.next_wakeup() == end and end > 16.854466
    assert queue.pop(now=16.85446) is None
    assert queue.pop(now=16.854466) == KEY


def test_a_plan_bound_keeps_the_wait_of_a_root_decided_again_since() -> None:
    """A plan left members pending and the root was tried again on the room left while the plan was bound: the
    end of the binds neither drops it from the queue nor starts its backoff over (its next failure waits longer,
    not 1 s); a root not tried since starts over."""
    queue = SchedulingQueue(initial_backoff_s=1.0, max_backoff_s=60.0)
    for attempt in range(5):  # failed five times: 1 … 16 s
        queue.backoff(tree(TreeState.READY, attempt), now=0.0)
    queue.update(tree(TreeState.READY, 5), KEY, ready=True)  # the plan
    assert queue.pop(now=100.0) == KEY
    queue.update(tree(TreeState.READY, 6), KEY, ready=True)  # assumed: its pending rest, tried at once
    assert queue.pop(now=100.0) == KEY
    assert queue.backoff(tree(TreeState.READY, 6), 100.0, frozenset({"NodeResourcesFit"}),
                         unschedulable=True) == 32.0
    queue.scheduled(KEY)  # the plan's binds ended
    assert KEY in queue.backing_off and queue.attempts[KEY] == 6
    assert queue.pop(now=120.0) is None
    assert queue.backoff(tree(TreeState.READY, 6), now=140.0) == 60.0
    queue.update(tree(TreeState.SCHEDULED, 7), KEY, ready=False)  # bound whole: no longer queued, its attempts kept
    assert KEY not in queue.backing_off and KEY not in queue.ready and queue.attempts[KEY] == 7
    queue.scheduled(KEY)  # nothing queued: starts over
    assert KEY not in queue.attempts
