"""The scheduling queue's backoff ends are kept in a heap: under any sequence of failures (parked or not), early
wake-ups, events, updates, roots gone and pops, the roots it releases and the next wake-up it reports are those a
scan of every root backing off gives (the rule: a root is released once its latest wait has ended, and only then),
and an event never releases a parked root before its backoff has ended; the count of each plugin's rejections it keeps
for the hints is the count over the roots waiting."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.framework.events import Action, ClusterEvent
from scheduler.groups.tree import GroupTree, Leaf, TreeState
from scheduler.model.scheduling import GroupKey
from scheduler.queue import SchedulingQueue

KEYS = [GroupKey("PodGroup", "ml", f"g{i}") for i in range(6)]


def tree(i: int, version: int = 0) -> GroupTree:
    return GroupTree(root=Leaf(KEYS[i], 1, None, ()), state=TreeState.READY, message=str(version), groups=(KEYS[i],))


HINTS = {"NodeResourcesFit": lambda event: event.kind == "Node"}
OPS = st.lists(st.tuples(st.sampled_from(["fail", "park", "wake", "event", "update", "unready", "gone", "pop",
                                          "tick"]),
                         st.integers(0, len(KEYS) - 1), st.integers(0, 3)), max_size=80)


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_the_heap_releases_what_a_scan_of_every_backoff_releases(ops: list[tuple[str, int, int]]) -> None:
    queue = SchedulingQueue(initial_backoff_s=1.0, max_backoff_s=8.0, hints=HINTS, unschedulable_retry_s=20.0)
    now = 0.0
    for i in range(len(KEYS)):
        queue.update(tree(i), KEYS[i], ready=True)
    for op, i, arg in ops:
        key = KEYS[i]
        before = dict(queue.backing_off)
        if op == "fail":
            queue.backoff(tree(i), now)
        elif op == "park":
            queue.backoff(tree(i), now, frozenset({"NodeResourcesFit"}), unschedulable=True)
            assert queue.backing_off[key].until == max(queue.backing_off[key].backoff_until, now + 20.0)
        elif op == "event":
            queue.on_events([ClusterEvent("Node", Action.UPDATE, object(), object())], now)
            for k, entry in before.items():  # a parked root whose backoff runs on waits for its end, then no event
                if (entry.parked or entry.woken) and entry.backoff_until > now:  # cuts that backoff short
                    assert queue.backing_off[k].until == entry.backoff_until and not queue.backing_off[k].parked
        elif op == "wake":
            queue.activate([key], now)
        elif op == "update":  # a changed tree moves a root back early; the same tree does not
            queue.update(tree(i, arg), key, ready=True)
        elif op == "unready":
            queue.update(tree(i), key, ready=False)
        elif op == "gone":
            queue.update(None, key, ready=False)
        elif op == "tick":
            now += arg * 1.5
        rejecting = Counter(name for entry in queue.backing_off.values() for name in entry.rejectors)
        assert +queue._rejecting == rejecting  # the hints on_events asks: those of the roots waiting, counted
        ends = {k: e.until for k, e in queue.backing_off.items()}
        assert queue.next_wakeup() == min(ends.values(), default=None)
        if op == "pop":
            due = {k for k, until in ends.items() if until <= now}
            ready_before = set(queue.ready.queued())
            popped = queue.pop(now)
            assert set(queue.backing_off) == set(ends) - due
            assert (set(queue.ready.queued()) | ({popped} if popped else set())) == ready_before | due
