"""Which cluster changes move a parked root: the cache's events, routed through the queue's hints, as the driver does.

Each test parks a root the solver rejected (``SchedulingQueue.backoff(..., unschedulable=True)``), makes one change
to the cache, hands the events it returned to :meth:`SchedulingQueue.on_events` past the backoff, and checks both that
the root moved and that its next attempt now places it — a hint that stayed silent would leave it parked for
``--unschedulable-retry-s``. kube-scheduler's counterparts are named per test (``eventhandlers.go``, each plugin's
``EventsToRegister`` / ``isSchedulableAfter*``).
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.cache.cluster import ClusterCache
from scheduler.cycle import CycleRunner
from scheduler.framework import Plan, SolverConfig, Unschedulable
from scheduler.framework.events import ClusterEvent
from scheduler.model.scheduling import GroupKey
from scheduler.queue import SchedulingQueue
from scheduler.solver.plugins import QUEUEING_HINTS
from tests.unit.groups.builders import pg
from tests.unit.preemption.kit import OURS, group
from tests.unit.solver.builders import HOSTNAME, node, pod, pod_term

NS = "ml"
BACKOFF_OVER = 3600.0
"""Loop time past any backoff: a moved root is ready at once."""


def cache_of(*objects: tuple[str, Sequence[object]]) -> ClusterCache:
    cache = ClusterCache(OURS)
    for kind, items in objects:
        cache.load(kind, items)
    return cache


def park(runner: CycleRunner, queue: SchedulingQueue, key: GroupKey) -> Unschedulable:
    """Decide ``key``, which must fail with hinted rejectors, and park it."""
    attempt = runner.attempt(key)
    assert attempt is not None and isinstance(attempt.decision, Unschedulable), attempt
    queue.backoff(attempt.tree, 0.0, attempt.decision.rejectors, unschedulable=True)
    assert queue.parked() == [key]
    return attempt.decision


def moved(queue: SchedulingQueue, events: Sequence[ClusterEvent]) -> bool:
    return queue.on_events(events, BACKOFF_OVER) == 1 and queue.parked() == []


def test_our_own_placement_moves_a_root_whose_affinity_needs_it() -> None:
    """``b`` needs a pod labelled ``app=ps`` on its node; ``a``'s is such a pod. Assuming ``a``'s plan is the pod
    being bound for the snapshots (the watch's confirmation later changes nothing), so it is the event:
    ``addAssignedPodToCache`` → ``EventAssignedPodAdd`` in kube-scheduler."""
    needs = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [pod_term({"app": "ps"})]}}
    cache = cache_of(("Node", [node("n1", labels={HOSTNAME: "n1"})]),
                     ("PodGroup", [group("a", 1), group("b", 1)]),
                     ("Pod", [pod("b-0", namespace=NS, group="b", affinity=needs),
                              pod("a-0", namespace=NS, group="a", labels={"app": "ps"})]))
    runner, queue = CycleRunner(cache, SolverConfig()), SchedulingQueue(hints=QUEUEING_HINTS)
    b = GroupKey("PodGroup", NS, "b")
    assert "InterPodAffinity" in park(runner, queue, b).rejectors
    placed = runner.attempt(GroupKey("PodGroup", NS, "a"))
    assert placed is not None and isinstance(placed.decision, Plan)
    assert [(e.kind, e.new.spec.node_name) for e in placed.events] == [("Pod", "n1")]
    assert moved(queue, placed.events)
    again = runner.attempt(b)
    assert again is not None and isinstance(again.decision, Plan)


def test_an_assumed_pod_deleted_frees_its_room_for_a_parked_root() -> None:
    """A pod assumed on the only node (its bind in flight) is deleted: the room it held is free at once, and the
    delete event shows it where it was held, so NodeResourcesFit's hint fires (``handleAssumedPodDeletion``)."""
    cache = cache_of(("Node", [node("n1", cpu="2")]), ("PodGroup", [group("a", 1), group("b", 1)]),
                     ("Pod", [pod("a-0", namespace=NS, group="a", cpu="2"), pod("b-0", namespace=NS, group="b",
                                                                               cpu="2")]))
    runner, queue = CycleRunner(cache, SolverConfig()), SchedulingQueue(hints=QUEUEING_HINTS)
    placed = runner.attempt(GroupKey("PodGroup", NS, "a"))
    assert placed is not None and isinstance(placed.decision, Plan)
    b = GroupKey("PodGroup", NS, "b")
    assert "NodeResourcesFit" in park(runner, queue, b).rejectors
    gone = cache.delete_one("Pod", f"{NS}/a-0")
    assert [(e.kind, e.old.spec.node_name) for e in gone] == [("Pod", "n1")]
    assert moved(queue, gone)
    again = runner.attempt(b)
    assert again is not None and isinstance(again.decision, Plan)


def test_a_node_uncordoned_in_a_domain_moves_a_root_topology_placement_rejected() -> None:
    """Zone ``b`` has room for the gang only with ``b2``, cordoned: its room is not counted, so ``TopologyPlacement``
    rejects the gang. Uncordoning ``b2`` moves it (its domain's room is counted on usable nodes only)."""
    zone = "topology.kubernetes.io/zone"
    cache = cache_of(("Node", [node("a1", labels={zone: "a"}), node("b1", labels={zone: "b"}),
                               node("b2", labels={zone: "b"}, unschedulable=True)]),
                     ("PodGroup", [pg("g", 2, topology=zone)]),
                     ("Pod", [pod(f"g-{i}", namespace=NS, group="g", cpu="6") for i in range(2)]))
    runner, queue = CycleRunner(cache, SolverConfig()), SchedulingQueue(hints=QUEUEING_HINTS)
    key = GroupKey("PodGroup", NS, "g")
    park(runner, queue, key)
    assert moved(queue, cache.load_one("Node", node("b2", labels={zone: "b"})))
    again = runner.attempt(key)
    assert again is not None and isinstance(again.decision, Plan)
