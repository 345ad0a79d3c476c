"""Which cluster changes move a parked root: the cache's events, routed through the queue's hints, as the driver does.

Each test parks a root the solver rejected (``SchedulingQueue.backoff(..., unschedulable=True)``), makes one change
to the cache, hands the events it returned to :meth:`SchedulingQueue.on_events` past the backoff, and checks both that
the root moved and that its next attempt now places it — a hint that stayed silent would leave it parked for
``--unschedulable-retry-s``. kube-scheduler's counterparts are named per test (``eventhandlers.go``, each plugin's
``EventsToRegister`` / ``isSchedulableAfter*``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from scheduler.cache.cluster import ClusterCache
from scheduler.cycle import CycleRunner
from scheduler.framework import Plan, SolverConfig, Unschedulable
from scheduler.framework.events import Action, ClusterEvent
from scheduler.groups.intent import INTENT_ANNOTATION, intent_annotation
from scheduler.model import Pod, PodGroup
from scheduler.model.scheduling import GroupKey
from scheduler.queue import SchedulingQueue
from scheduler.solver.plugins import QUEUEING_HINTS
from tests.unit.groups.builders import pg, pg_dict
from tests.unit.preemption.kit import OURS, group, pending
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


def running_p0(*, with_intent: bool = True) -> Pod:
    """``p-0`` running on ``n0``, bound (``with_intent``) by a Binding carrying its gang's durable intent: ``p-1`` on
    ``n0`` too."""
    p0 = pod("p-0", namespace=NS, group="p", cpu="4", node_name="n0", phase="Running", uid="uid-p-0")
    if not with_intent:
        return p0
    pending_p1 = pod("p-1", namespace=NS, group="p", cpu="4", uid="uid-p-1")
    value = intent_annotation("t1", "2026-01-01T00:00:00.000000+00:00", [(p0, "n0"), (pending_p1, "n0")])
    assert value is not None
    meta = p0.metadata.model_copy(update={"annotations": {INTENT_ANNOTATION: value}})
    return p0.model_copy(update={"metadata": meta})


def partial_gang() -> ClusterCache:
    """``p`` (minCount 2) has ``p-0`` running on ``n0`` and holds ``n0``'s other half for ``p-1`` (the durable
    intent its bound member carries); ``q-0`` needs that half."""
    return cache_of(("Node", [node("n0", cpu="8")]), ("PodGroup", [pg("p", 2), group("q", 1)]),
                    ("Pod", [running_p0(), pod("p-1", namespace=NS, group="p", cpu="4", uid="uid-p-1"),
                             pod("q-0", namespace=NS, group="q", cpu="4")]))


@pytest.mark.parametrize("release", [
    lambda cache: cache.delete_one("Pod", f"{NS}/p-1"),
    lambda cache: cache.load_one("Pod", running_p0(with_intent=False)),
    lambda cache: cache.delete_one("PodGroup", f"{NS}/p"),
], ids=["pending-member-deleted", "intent-removed", "group-deleted"])
def test_room_a_partial_gang_gives_up_is_said_once(release: Callable[[ClusterCache], object]) -> None:
    """The room held for ``p-1`` keeps ``q`` out until it is given up; the cache then says so once
    (:meth:`ClusterCache.take_room_released`: the driver moves every parked root, as kube-scheduler moves its
    unschedulable pods when a nominated pod goes)."""
    cache = partial_gang()
    runner = CycleRunner(cache, SolverConfig())
    first = runner.attempt(GroupKey("PodGroup", NS, "q"))
    assert first is not None and isinstance(first.decision, Unschedulable)
    assert not cache.take_room_released()
    release(cache)
    again = runner.attempt(GroupKey("PodGroup", NS, "q"))
    assert again is not None and isinstance(again.decision, Plan)
    assert cache.take_room_released()
    assert not cache.take_room_released()


def test_room_a_partial_gang_fills_itself_is_not_given_up() -> None:
    """``p-1`` placed where its room was held (assumed, then bound by the watch): nothing was given up."""
    cache = partial_gang()
    placed = CycleRunner(cache, SolverConfig()).attempt(GroupKey("PodGroup", NS, "p"))
    assert placed is not None and isinstance(placed.decision, Plan)
    assert cache.tree(GroupKey("PodGroup", NS, "p")) is not None
    cache.load_one("Pod", pod("p-1", namespace=NS, group="p", cpu="4", node_name="n0", phase="Running",
                              uid="uid-p-1"))
    assert cache.tree(GroupKey("PodGroup", NS, "p")) is not None
    assert not cache.holds and not cache.take_room_released()


def test_a_resource_dropped_by_an_in_place_resize_frees_room() -> None:
    """A running pod's effective requests lose a resource (kube's ``extractPodScaleDown`` walks the old
    requests): NodeResourcesFit's hint fires."""
    before = pod("r", cpu="2", gpu=1, node_name="n0", phase="Running")
    after = pod("r", cpu="2", node_name="n0", phase="Running")
    assert QUEUEING_HINTS["NodeResourcesFit"](ClusterEvent("Pod", Action.UPDATE, before, after))


def dra_pod(name: str, requests: dict[str, str] | None = None, claim: str | None = None) -> dict[str, Any]:
    """Pod ``name`` of gang ``g`` as an API dict: ``requests``, and a pod claim naming ResourceClaim ``claim``."""
    spec: dict[str, Any] = {"schedulerName": OURS, "schedulingGroup": {"podGroupName": "g"},
                            "containers": [{"name": "main", "resources": {"requests": requests or {"cpu": "1"}}}]}
    if claim:
        spec["resourceClaims"] = [{"name": "c", "resourceClaimName": claim}]
    return {"metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}"}, "spec": spec,
            "status": {"phase": "Pending"}}


def device_class(name: str, driver: str, extended: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}
    if extended:
        spec["extendedResourceName"] = extended
    return {"metadata": {"name": name}, "spec": spec}


def device_slice(name: str, driver: str, where: dict[str, Any], devices: int = 1) -> dict[str, Any]:
    pool = {"name": name, "generation": 1, "resourceSliceCount": 1}
    return {"metadata": {"name": name},
            "spec": {"driver": driver, **where, "pool": pool, "devices": [{"name": f"d{i}"} for i in range(devices)]}}


def claim(name: str, device_class_name: str, admin: bool = False) -> dict[str, Any]:
    request: dict[str, Any] = {"deviceClassName": device_class_name}
    if admin:
        request["adminAccess"] = True
    return {"metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": request}]}}}


RACK_R1 = {"nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
    {"key": "rack", "operator": "In", "values": ["r1"]}]}]}}
NODE_N0 = {"metadata": {"name": "n0", "labels": {"rack": "r0"}}, "spec": {}, "status": {
    "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}, "capacity": {"cpu": "8", "memory": "32Gi",
                                                                                "pods": "110"}}}


@pytest.mark.parametrize(("objects", "change", "rejector"), [
    pytest.param({"Node": [NODE_N0], "DeviceClass": [device_class("link", "link.example.com")],
                  "ResourceSlice": [device_slice("rack-r1", "link.example.com", RACK_R1)],
                  "ResourceClaim": [claim("p-link", "link")], "Pod": [dra_pod("p", claim="p-link")]},
                 ("Node", {**NODE_N0, "metadata": {"name": "n0", "labels": {"rack": "r1"}}}), "DynamicResources",
                 id="node-relabelled-into-a-node-set-slice"),
    pytest.param({"Node": [NODE_N0], "ResourceSlice": [device_slice("n0-gpus", "gpu.example.com",
                                                                    {"nodeName": "n0"}, 2)],
                  "Pod": [dra_pod("p", {"cpu": "1", "example.com/gpu": "1"})]},
                 ("DeviceClass", device_class("gpu", "gpu.example.com", "example.com/gpu")), "NodeResourcesFit",
                 id="device-class-serving-an-extended-resource-added"),
    pytest.param({"Namespace": [{"metadata": {"name": NS, "labels": {}}}], "Node": [NODE_N0],
                  "DeviceClass": [device_class("gpu", "gpu.example.com")],
                  "ResourceSlice": [device_slice("n0-gpus", "gpu.example.com", {"nodeName": "n0"})],
                  "ResourceClaim": [claim("p-adm", "gpu", admin=True)], "Pod": [dra_pod("p", claim="p-adm")]},
                 ("Namespace", {"metadata": {"name": NS, "labels": {"resource.kubernetes.io/admin-access": "true"}}}),
                 "DynamicResources", id="namespace-given-the-admin-access-label"),
])
def test_a_dra_change_moves_the_root_it_makes_placeable(objects: dict[str, list[dict[str, Any]]],
                                                         change: tuple[str, dict[str, Any]], rejector: str) -> None:
    """A node relabelled into a node-set slice's reach, and a namespace given the admin-access label (kube-scheduler
    registers Node ``UpdateNodeLabel`` for DynamicResources; the namespace label is ours to check), and a DeviceClass
    newly serving a pod's extended resource (``isSchedulableAfterDeviceClassEvent``)."""
    cache = ClusterCache(OURS, dra=True)
    cache.load("PodGroup", [group("g", 1)])
    for kind, items in objects.items():
        cache.replace(kind, items)
    runner, queue = CycleRunner(cache, SolverConfig()), SchedulingQueue(hints=QUEUEING_HINTS)
    key = GroupKey("PodGroup", NS, "g")
    assert park(runner, queue, key).rejectors == {rejector}
    kind, raw = change
    assert moved(queue, cache.apply(kind, "MODIFIED", raw))
    again = runner.attempt(key)
    assert again is not None and isinstance(again.decision, Plan)


def test_a_node_that_stops_offering_an_extended_resource_wakes_node_resources_fit() -> None:
    """``example.com/gpu`` drops to nothing in a node's allocatable: DRA may serve it there now (KEP-5004,
    ``shouldDelegateResourceToDRA``), so NodeResourcesFit's hint fires though no room was freed."""
    offering, dropped = node("n0", cpu="8"), node("n0", cpu="8")
    offering = offering.model_copy(update={"status": offering.status.model_copy(update={
        "allocatable": {**offering.status.allocatable, "example.com/gpu": "2"}})})
    assert QUEUEING_HINTS["NodeResourcesFit"](ClusterEvent("Node", Action.UPDATE, offering, dropped))
    assert not QUEUEING_HINTS["NodeResourcesFit"](ClusterEvent("Node", Action.UPDATE, dropped, dropped))


def test_every_member_shape_that_falls_short_names_its_rejector() -> None:
    """A basic group of two shapes on one node: the GPU pod lacks room, the CPU pod does not tolerate the node's taint.
    Both plugins are the root's rejectors, and the reason gives each shape's, so removing the taint — after which the
    CPU pod fits — moves the root."""
    gpu_node = node("n0", cpu="4", memory="4Gi", gpu=2, taints=["nvidia.com/gpu=present:NoSchedule"])
    tolerates = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    cache = cache_of(("Node", [gpu_node]), ("PodGroup", [group("g")]),
                     ("Pod", [pod(f"bg-{i}", cpu="1", memory="1Gi", node_name="n0", phase="Running",
                                  scheduler="default-scheduler") for i in range(3)]
                      + [pod("g-0", namespace=NS, group="g", cpu="1", memory="1Gi"),
                         pod("g-1", namespace=NS, group="g", cpu="2", memory="2Gi", gpu=1, tolerations=tolerates)]))
    runner, queue = CycleRunner(cache, SolverConfig()), SchedulingQueue(hints=QUEUEING_HINTS)
    key = GroupKey("PodGroup", NS, "g")
    failure = park(runner, queue, key)
    assert failure.rejectors == {"NodeResourcesFit", "TaintToleration"}
    assert failure.message == ("group g: 0/2 placeable; pod g-1: 0/1 nodes are available: 1 Insufficient cpu, "
                               "1 Insufficient memory; pod g-0: 0/1 nodes are available: 1 node(s) had untolerated "
                               "taint {nvidia.com/gpu: present}.")
    assert moved(queue, cache.load_one("Node", node("n0", cpu="4", memory="4Gi", gpu=2)))
    again = runner.attempt(key)
    assert again is not None and isinstance(again.decision, Plan)


def test_a_nomination_withdrawn_in_memory_frees_its_room_for_a_parked_root() -> None:
    """A preemptor's pod nominated to the only node holds its room against roots of lower priority. Withdrawing the
    nomination in memory (the preemptor gave up) is the event (kube's ``updatePodInSchedulingQueue`` on a changed
    nominated node): the watch, showing the same later, will not say it again."""
    cache = cache_of(("Node", [node("n0", cpu="2")]),
                     ("PodGroup", [group("high", 1, priority=100), group("low", 1, priority=1)]),
                     ("Pod", [pending("high-0", "high", cpu="2", nominated="n0"), pending("low-0", "low", cpu="2")]))
    runner, queue = CycleRunner(cache, SolverConfig()), SchedulingQueue(hints=QUEUEING_HINTS)
    low = GroupKey("PodGroup", NS, "low")
    assert park(runner, queue, low).rejectors == {"NodeResourcesFit"}
    withdrawn = cache.nominate([(f"{NS}/high-0", None)])
    assert [(e.old.status.nominated_node_name, e.new.status.nominated_node_name) for e in withdrawn] == [("n0", None)]
    assert moved(queue, withdrawn)
    again = runner.attempt(low)
    assert again is not None and isinstance(again.decision, Plan)


@pytest.mark.parametrize("change", ["deleted", "recreated"])
def test_a_bind_stops_at_a_podgroup_deleted_or_made_again_since_the_plan(change: str) -> None:
    """The check before each bind compares the member's PodGroup with the one the plan was made for: a PodGroup made
    again (say, with another minCount, as the operator does on Kubernetes 1.36) may ask for another gang."""
    made = pg_dict("p", 2)
    made["metadata"]["uid"] = "uid-p-1"
    cache = cache_of(("Node", [node("n0", cpu="8")]), ("PodGroup", [PodGroup.model_validate(made)]),
                     ("Pod", [pod(f"p-{i}", namespace=NS, group="p", cpu="1") for i in range(2)]))
    runner = CycleRunner(cache, SolverConfig())
    attempt = runner.attempt(GroupKey("PodGroup", NS, "p"))
    assert attempt is not None and isinstance(attempt.decision, Plan)
    plan = attempt.decision
    groups = runner.group_uids(plan)
    member, target = plan.placements[0]
    assert groups == {(NS, "p"): "uid-p-1"} and runner.target_problem(plan, member, target, groups) is None
    if change == "deleted":
        cache.delete_one("PodGroup", f"{NS}/p")
    else:
        again = pg_dict("p", 3)
        again["metadata"]["uid"] = "uid-p-2"
        cache.load_one("PodGroup", PodGroup.model_validate(again))
    expected = "deleted" if change == "deleted" else "deleted and created again"
    said = runner.target_problem(plan, member, target, groups)
    assert said == f"PodGroup {NS}/p was {expected} since the plan was made"
