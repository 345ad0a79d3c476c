"""Regression tests for the defects a review of the scheduling core found (FINDING 1–19, all fixed).

Each test reproduces one finding as it was reported; the section comments name the finding.
A new finding is added here as ``xfail(strict=True)`` until it is fixed."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import kmock
import pytest

from scheduler.cache.cluster import ClusterCache
from scheduler.client.kube import NODES, PODGROUPS, PODS, KubeClient
from scheduler.dra.claims import ClaimIndex
from scheduler.dra.device_snapshot import DraView
from scheduler.dra.inventory import Inventory
from scheduler.framework import NodeTable, Plan, Snapshot
from scheduler.framework.node_table import MAX_UNITS
from scheduler.framework.plan import Unschedulable
from scheduler.framework.status import Code
from scheduler.groups import TreeState, build_trees
from scheduler.groups.tree import GroupTree, Leaf
from scheduler.live.binder import Binder
from scheduler.live.driver import Scheduler
from scheduler.live.informers import Informer
from scheduler.model import Pod
from scheduler.model.pod import effective_requests
from scheduler.model.scheduling import GroupKey
from scheduler.queue import BackingOff, SchedulingQueue
from scheduler.solver import solve
from tests.integration import livekit
from tests.integration.livekit import NS, bound, bound_at_least, create_node, running, until
from tests.unit.groups.builders import cpg, pg
from tests.unit.solver.builders import node, pod
from tests.unit.solver.test_search_dra import claim, claim_spec, device_class, gpu_slice, pod_with_claim

OURS = "gang-scheduler"


# -- helpers ---------------------------------------------------------------------------------------


class StubKube:
    """An API seam that accepts every write (for driving ``Scheduler`` by hand, no HTTP)."""

    async def create(self, *a: Any, **k: Any) -> dict[str, Any]:
        return {"metadata": {"name": "x"}}

    async def patch(self, *a: Any, **k: Any) -> dict[str, Any]:
        return {}

    async def get(self, *a: Any, **k: Any) -> dict[str, Any]:
        return {}

    async def bind(self, *a: Any, **k: Any) -> None:
        return None

    def fenced(self, fence: Any) -> StubKube:
        return self


def _api(obj: dict[str, Any], rv: int) -> dict[str, Any]:
    md = obj["metadata"]
    md.setdefault("uid", f"uid-{md['name']}")
    md.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
    md["resourceVersion"] = str(rv)
    return obj


def _leaf_tree(name: str, *pod_names: str) -> GroupTree:
    key = GroupKey("PodGroup", NS, name)
    return GroupTree(root=Leaf(key, 1, None, tuple(pod(p, namespace=NS) for p in pod_names)),
                     state=TreeState.READY, groups=(key,))


async def _server(handler: Any) -> tuple[asyncio.Server, int]:
    srv = await asyncio.start_server(handler, "127.0.0.1", 0)
    return srv, srv.sockets[0].getsockname()[1]


# -- FINDING 1: the queue hands out a stale tree; a pod can be planned twice -------------------------


def test_queue_hands_out_keys_never_trees() -> None:
    """The queue cannot hand out a stale tree: it holds root keys, and the cycle looks the tree up."""
    q = SchedulingQueue()
    old, new = _leaf_tree("g", "a", "b"), _leaf_tree("g", "a", "c")
    q.update(old, old.key, ready=True)
    q.update(new, new.key, ready=True)  # a mid-cycle refresh: same root, same queue key, fresh members
    assert q.pop(0.0) == new.key
    assert q.pop(0.0) is None


def test_queue_heap_does_not_grow_with_refreshes() -> None:
    q = SchedulingQueue()
    tree = _leaf_tree("g", "a")
    for _ in range(1000):
        q.update(tree, tree.key, ready=True)
    assert len(q.ready._heap) <= 2


async def test_a_pod_assumed_by_one_plan_is_never_planned_again() -> None:
    sched = Scheduler(livekit.settings(), StubKube(), identity="review")  # type: ignore[arg-type]
    cache = sched.cache
    cache.replace("Node", [_api(livekit.node("n0", cpu="8"), 1)])
    x = livekit.pod("x", None, cpu="1")
    x["spec"]["priority"] = 100  # popped first
    cache.replace("Pod", [_api(x, 2), _api(livekit.pod("r-0", "r", cpu="1"), 3),
                          _api(livekit.pod("r-1", "r", cpu="100"), 4)])  # r-1 never fits: r stays READY
    cache.replace("PodGroup", [_api(livekit.podgroup("r", None), 5)])
    plans: list[tuple[str, list[str]]] = []
    rvs = iter(range(100, 10_000))

    async def bind(attempt: Any, *_: Any, **__: Any) -> None:
        plan = attempt.plan
        plans.append((attempt.tree.key.name, sorted(p.metadata.name for p, _ in plan.placements)))
        # while the plan binds, an unrelated watch event lands (any pod of any scheduler)
        other = livekit.pod(f"other-{next(rvs)}", None, cpu="0", scheduler="default-scheduler")
        sched.on_change(cache.apply("Pod", "ADDED", _api(other, next(rvs))))

    sched.bind = bind  # type: ignore[method-assign]
    stop = asyncio.Event()
    for _ in range(2):
        await sched.schedule_ready(stop)
        await asyncio.sleep(0)
    planned = [name for _, names in plans for name in names]
    assert planned.count("r-0") == 1, plans


# -- FINDING 2: a claim shared by name across leaves of one tree is allocated twice -----------------


def _shared_claim_tree() -> Plan | Any:
    nodes = [node("n0", cpu="32"), node("n1", cpu="32")]
    slices = [gpu_slice("n0", ["H100"] * 2), gpu_slice("n1", ["H100"] * 2)]
    shared = claim("shared", claim_spec(1))
    pods = [pod_with_claim("a-0", "a", "shared", template=False), pod_with_claim("b-0", "b", "shared", template=False)]
    groups = [pg("a", 1, parent="top"), pg("b", 1, parent="top")]
    classes = [device_class()]
    table = NodeTable.build(nodes)
    inventory = Inventory.build(table, slices, classes, [shared])
    index = ClaimIndex.build([shared], [], classes, groups)
    snapshot = Snapshot.build(table, pods, DraView.build(inventory, index, pods))
    (tree,) = build_trees(pods, groups, [cpg("top", 2)], scheduler_name=OURS).trees
    return solve(tree, snapshot)


def test_claim_shared_by_name_across_leaves_is_allocated_once() -> None:
    plan = _shared_claim_tree()
    assert isinstance(plan, Plan)
    mine = [a for a in plan.allocations if a.claim == f"{NS}/shared"]
    assert len(mine) == 1, [(a.claim, a.results) for a in mine]
    assert len(plan.device_ids) == 1


# -- FINDING 3: a terminating pod (deletionTimestamp) is planned as a gang member -------------------


def _terminating(p: Pod) -> Pod:
    body = p.model_dump(by_alias=True, exclude_none=True, mode="json")
    body["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:05Z"
    return Pod.model_validate(body)


def test_terminating_pod_is_not_counted_or_placed_as_a_gang_member() -> None:
    nodes = [node("n0", cpu="8")]
    pods = [pod("t-0", group="t", namespace=NS), _terminating(pod("t-1", group="t", namespace=NS))]
    (tree,) = build_trees(pods, [pg("t", 2)], [], scheduler_name=OURS).trees
    if tree.state is TreeState.READY:
        result = solve(tree, Snapshot.build(NodeTable.build(nodes), pods))
        # binding t-1 is refused ("pod is being deleted"): a plan here binds t-0 alone, below minCount
        assert not isinstance(result, Plan), [(p.metadata.name, n) for p, n in result.placements]


@pytest.mark.looptime
async def test_live_gang_with_a_member_being_deleted_is_not_partially_bound(k8s: Any, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="8")
    await kube.create(PODGROUPS, NS, livekit.podgroup("g", 3))
    for i in range(3):
        body = livekit.pod(f"g-{i}", "g")
        if i == 2:
            body["metadata"]["finalizers"] = ["example.com/hold"]
        await kube.create(PODS, NS, body)
    await kube.delete(PODS, NS, "g-2")  # soft delete: deletionTimestamp set, the finalizer keeps it
    view = k8s['post v1/pods', kmock.subresource('binding'), kmock.name('g-2')]
    view[0:1000] << 409 << {"kind": "Status", "code": 409, "reason": "Conflict",
                            "message": "pod g-2 is being deleted, cannot be assigned to a host"}
    async with running(kube):
        await asyncio.sleep(30)
        assert await bound(kube, "g-") == {}  # 2 live members < minCount 3: nothing may be bound


# -- FINDING 4: non-ApiError failures while reading a response body escape the client ---------------


async def _truncated_201(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{\"kind\"")
    await writer.drain()
    writer.close()


async def test_bind_plan_reports_a_truncated_response_as_an_outcome() -> None:
    srv, port = await _server(_truncated_201)
    kube = KubeClient.for_host(f"http://127.0.0.1:{port}")
    try:
        binder = Binder(kube, max_attempts=2, retry_initial_s=0.01)
        outcome = await binder.bind_plan([(pod("p", namespace=NS), "n0")])
        assert outcome.failed is not None or outcome.bound
    finally:
        await kube.close()
        srv.close()


async def test_informer_survives_a_truncated_list_response() -> None:
    srv, port = await _server(_truncated_201)
    kube = KubeClient.for_host(f"http://127.0.0.1:{port}")
    informer = Informer(kube, PODS, ClusterCache(OURS), lambda c: None, retry_s=0.01)
    task = asyncio.create_task(informer.run())
    try:
        await asyncio.sleep(0.3)
        assert not task.done(), task.exception()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await kube.close()
        srv.close()


# -- FINDING 5: a follower (or ex-leader) with an expired backoff busy-loops -------------------------


async def test_follower_loop_does_not_spin_on_an_expired_backoff() -> None:
    kube = KubeClient.for_host("http://127.0.0.1:1")
    sched = Scheduler(livekit.settings(leader_elect=True), kube, identity="follower")
    tree = _leaf_tree("g", "a")
    sched.queue.backing_off[tree.key] = BackingOff(0.0, tree, frozenset())  # left over from an earlier term
    turns = 0
    real = sched.queue.next_wakeup

    def counted() -> float | None:
        nonlocal turns
        turns += 1
        return real()

    sched.queue.next_wakeup = counted  # type: ignore[method-assign]
    stop = asyncio.Event()
    task = asyncio.create_task(sched._loop(stop))
    await asyncio.sleep(0.3)
    stop.set()
    await task
    await kube.close()
    assert not sched.leading
    assert turns < 20, f"{turns} loop turns in 0.3 s while not leading"


# -- FINDING 6: API-valid objects crash the scheduling loop ------------------------------------------


def test_huge_request_quantity_does_not_crash_snapshot_or_solve() -> None:
    cache = ClusterCache(OURS)
    cache.replace("Node", [livekit.node("n0")])
    cache.apply("Pod", "ADDED", livekit.pod("big", None, cpu="1e16"))  # valid Quantity; 1e19 milli-cpu
    cache.apply("Pod", "ADDED", livekit.pod("pinned", None, cpu="1e16", node_name="n0",
                                            scheduler="default-scheduler"))
    snapshot = cache.snapshot()
    cpu = snapshot.table.column["cpu"]
    assert int(snapshot.used[0, cpu]) == MAX_UNITS  # counted, clamped: no int64 overflow into a negative
    (tree,) = [t for t in cache.forest().trees if t.key.name == "big"]
    decision = solve(tree, snapshot)  # must return Unschedulable, not raise
    assert isinstance(decision, Unschedulable) and decision.code is Code.UNSCHEDULABLE
    assert decision.message == "0/1 nodes are available: 1 Insufficient cpu."


@pytest.mark.looptime
async def test_live_loop_survives_a_pod_with_a_huge_request(k8s: Any, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="8")
    await kube.create(PODS, NS, livekit.pod("big", None, cpu="1e16"))
    await livekit.create_gang(kube, "g", 2)
    async with running(kube):
        await until(lambda: bound_at_least(kube, "g-", 2), what="the ordinary gang bound")


def test_deep_composite_chain_is_invalid_not_a_crash() -> None:
    n = 1200
    composites = [cpg(f"c{i}", 1, parent=f"c{i + 1}" if i + 1 < n else None) for i in range(n)]
    pods = [pod("p", namespace=NS, group="leaf")]
    forest = build_trees(pods, [pg("leaf", 1, parent="c0")], composites, scheduler_name=OURS)
    assert [t.state for t in forest.trees] == [TreeState.INVALID]


# -- FINDING 7: an overcommitted node (negative free) prunes a feasible topology domain --------------


def test_overcommitted_node_does_not_hide_room_on_its_neighbour() -> None:
    nodes = [node("a", cpu="1", labels={"zone": "z1"}), node("b", cpu="8", labels={"zone": "z1"})]
    other = pod("static", cpu="4", node_name="a", scheduler="default-scheduler", namespace="kube-system")
    gang = [pod(f"g-{i}", cpu="4", group="g", namespace=NS) for i in range(2)]
    (tree,) = build_trees([other, *gang], [pg("g", 2, topology="zone")], [], scheduler_name=OURS).trees
    result = solve(tree, Snapshot.build(NodeTable.build(nodes), [other, *gang]))
    assert isinstance(result, Plan), result.message  # both members fit on b (without topology they are placed)


# -- FINDING 8: a leaf places every pending member greedily, starving a required sibling -------------


def test_composite_gang_fits_when_extra_members_are_left_pending() -> None:
    nodes = [node("n0", cpu="4", memory="64Gi")]
    pods = ([pod(f"a-{i}", group="a", namespace=NS) for i in range(4)]
            + [pod(f"b-{i}", group="b", namespace=NS) for i in range(2)])
    groups = [pg("a", 2, parent="top"), pg("b", 2, parent="top")]
    (tree,) = build_trees(pods, groups, [cpg("top", 2)], scheduler_name=OURS).trees
    result = solve(tree, Snapshot.build(NodeTable.build(nodes), pods))
    # a-0, a-1, b-0, b-1 fill the node exactly: minCount 2 of each, minGroupCount 2
    assert isinstance(result, Plan), result.message


def test_child_satisfied_by_bound_members_does_not_block_its_sibling() -> None:
    nodes = [node("n0", cpu="4", memory="64Gi")]
    pods = ([pod(f"a-{i}", group="a", namespace=NS, node_name="n0") for i in range(2)]
            + [pod(f"a-{i}", group="a", namespace=NS) for i in range(2, 4)]
            + [pod(f"b-{i}", group="b", namespace=NS) for i in range(2)])
    groups = [pg("a", 2, parent="top"), pg("b", 2, parent="top")]
    (tree,) = build_trees(pods, groups, [cpg("top", 2)], scheduler_name=OURS).trees
    result = solve(tree, Snapshot.build(NodeTable.build(nodes), pods))
    assert isinstance(result, Plan), result.message  # b-0, b-1 take the 2 free cores; a is already satisfied
    assert {p.metadata.name for p, _ in result.placements} >= {"b-0", "b-1"}


# -- FINDING 9: every Node MODIFIED (heartbeats, annotations) re-activates every root ----------------


def test_node_update_that_changes_nothing_schedulable_is_not_a_capacity_event() -> None:
    cache = ClusterCache(OURS)
    cache.replace("Node", [_api(livekit.node("n0"), 1)])
    table = cache.usage.table
    heartbeat = _api(livekit.node("n0"), 2)  # same labels, taints, allocatable: a status heartbeat
    heartbeat["metadata"]["annotations"] = {"node.alpha.kubernetes.io/ttl": "0"}
    changes = cache.apply("Node", "MODIFIED", heartbeat)
    assert changes == []  # no cluster event: no queueing hint can wake a root
    assert cache.usage.table is table  # the static-filter memo and the DRA/CEL memo survive


# -- FINDING 10: a watch that closes at once is re-opened in a tight loop ----------------------------


async def test_watch_closing_immediately_is_not_reopened_in_a_tight_loop() -> None:
    watches = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal watches
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                body = b""
                if b"watch=true" in head.split(b"\r\n")[0]:
                    watches += 1
                else:
                    body = json.dumps({"kind": "NodeList", "metadata": {"resourceVersion": "5"}, "items": []}).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                             % len(body) + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    srv, port = await _server(handle)
    kube = KubeClient.for_host(f"http://127.0.0.1:{port}")
    task = asyncio.create_task(Informer(kube, NODES, ClusterCache(OURS), lambda c: None).run())
    await asyncio.sleep(0.5)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await kube.close()
    srv.close()
    assert watches < 10, f"{watches} watch requests in 0.5 s"


# -- FINDING 11: pod-level resources (spec.resources) are ignored ------------------------------------


def test_pod_level_requests_are_the_pods_requests() -> None:
    p = Pod.model_validate({"metadata": {"name": "p", "namespace": NS}, "spec": {
        "resources": {"requests": {"cpu": "4", "memory": "8Gi"}},
        "containers": [{"name": "a"}, {"name": "b"}]}})
    req = effective_requests(p.spec)
    assert req.get("cpu") == 4000 and req.get("memory") == 8 * 2**30


# -- FINDING 12: Scheduler._reported is never pruned --------------------------------------------------


async def test_reported_messages_of_deleted_roots_are_forgotten() -> None:
    sched = Scheduler(livekit.settings(), StubKube(), identity="review")  # type: ignore[arg-type]
    cache = sched.cache
    cache.replace("Node", [_api(livekit.node("n0", cpu="1"), 1)])
    for j in range(20):
        cache.replace("PodGroup", [_api(livekit.podgroup(f"g{j}", 2), 2)])
        cache.replace("Pod", [_api(livekit.pod(f"g{j}-{i}", f"g{j}", cpu="4"), 3 + i) for i in range(2)])
        sched._refresh(0.0)
        await sched.schedule_ready(asyncio.Event())  # unschedulable: the message is remembered
        cache.replace("PodGroup", [])
        cache.replace("Pod", [])
        sched._refresh(0.0)  # the job is gone
    await asyncio.sleep(0)
    assert len(sched.reporter.reported) == 0, len(sched.reporter.reported)


@pytest.mark.looptime
async def test_live_tree_sharing_a_claim_across_leaves_is_bound(k8s: Any, kube: KubeClient) -> None:
    from scheduler.client.kube import COMPOSITES, DEVICE_CLASSES, RESOURCE_CLAIMS, RESOURCE_SLICES
    from tests.integration import test_dra as dra

    await create_node(kube, "n0", cpu="8")
    await kube.create(RESOURCE_SLICES, None, dra.gpu_slice("n0", 4))
    await kube.create(DEVICE_CLASSES, None, dra.device_class())
    await kube.create(RESOURCE_CLAIMS, NS, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                            "metadata": {"name": "sc", "namespace": NS}, "spec": dra.claim_spec(1)})
    await kube.create(COMPOSITES, NS, livekit.composite("top", 2))
    for leaf in ("a", "b"):
        await kube.create(PODGROUPS, NS, livekit.podgroup(leaf, 1, parent="top"))
        await kube.create(PODS, NS, dra.dra_pod(f"{leaf}-0", leaf, shared="sc"))
    async with running(kube):
        await until(lambda: bound_at_least(kube, "a-", 1), timeout_s=60, what="a-0 bound")
        await until(lambda: bound_at_least(kube, "b-", 1), timeout_s=60, what="b-0 bound")


# -- FINDING 13: binds of an old plan go on after the lease is lost ---------------------------------


async def test_no_bind_is_issued_after_leadership_is_lost() -> None:
    release = asyncio.Event()
    binds: list[tuple[str, bool]] = []

    class BlockingKube(StubKube):
        async def bind(self, namespace: str, name: str, node: str, uid: str | None = None,
                       annotations: Any = None, check: Any = None) -> None:
            binds.append((name, sched.leading))
            if len(binds) == 1:
                await release.wait()  # the first call is slow (API server latency, retries)

    sched = Scheduler(livekit.settings(leader_elect=True, bind_concurrency=1), BlockingKube(),  # type: ignore[arg-type]
                      identity="old-leader")
    assert sched.elector is not None
    sched.elector.leading.set()  # we hold the lease
    cache = sched.cache
    cache.replace("Node", [_api(livekit.node("n0", cpu="8"), 1)])
    cache.replace("PodGroup", [_api(livekit.podgroup("g", 3), 2)])
    cache.replace("Pod", [_api(livekit.pod(f"g-{i}", "g"), 3 + i) for i in range(3)])
    await sched.schedule_ready(asyncio.Event())  # plan g-0..g-2, bind task started
    await until(lambda: binds, timeout_s=5, what="first bind in flight")
    sched.elector.leading.clear()  # another replica takes over (lease lost)
    release.set()
    await asyncio.gather(*[t for t in sched.tasks if t.get_name().startswith("bind/")])
    late = [name for name, leading in binds if not leading]
    assert late == [], f"bound after losing the lease: {late}"


# -- FINDING 14: a CPU quantity with a huge exponent kills the Pod informer; a huge memory one stalls it


def test_cpu_quantity_with_a_huge_exponent_is_ignored_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    cache = ClusterCache(OURS)
    body = livekit.pod("p", None)
    body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1e999999"}}
    events = cache.apply("Pod", "ADDED", body)  # must not raise: this call runs inside the Pod informer
    assert events == [] and f"{NS}/p" not in cache.pods  # ignored: not cached, nothing for the queue
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        f"ignoring malformed Pod {NS}/p: invalid quantity '1e999999': larger than 1e24"]


def test_memory_quantity_with_a_huge_exponent_converts_quickly() -> None:
    import contextlib
    import time

    from scheduler.model.quantity import to_units

    started = time.perf_counter()
    with contextlib.suppress(ValueError):  # refusing it is fine too; blocking the event loop for seconds is not
        to_units("memory", "1e400000")  # ~3.5 s today; "1e999999" (also API-valid) takes ~22 s
    assert time.perf_counter() - started < 0.5


# -- FINDING 15: in-place resize: a pod's actuated (status) requests are not counted ----------------


def test_pod_being_resized_down_counts_its_actuated_requests() -> None:
    p = Pod.model_validate({
        "metadata": {"name": "p", "namespace": NS},
        "spec": {"nodeName": "n0", "containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}}}]},
        "status": {"phase": "Running", "containerStatuses": [
            {"name": "main", "allocatedResources": {"cpu": "4"}, "resources": {"requests": {"cpu": "4"}}}]}})
    # kube-scheduler (InPlacePodVerticalScaling, on by default): max(spec, status resources, allocated)
    assert p.requests["cpu"] == 4000


# -- FINDING 16: shared-claim alternatives are deduplicated by node reach only -----------------------


def test_shared_claim_leaves_the_device_a_members_own_claim_needs() -> None:
    nodes = [node("n0", cpu="32")]
    slices = [gpu_slice("n0", ["H100", "A100"])]
    shared = claim("shared", claim_spec(1))  # any GPU
    own = claim("p-0-gpus", claim_spec(1, selector='device.attributes["gpu.example.com"].productName == "H100"'))
    member = Pod.model_validate({
        "metadata": {"name": "p-0", "namespace": NS, "uid": "uid-p-0"},
        "spec": {"schedulerName": OURS, "schedulingGroup": {"podGroupName": "g"},
                 "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "tpl"},
                                    {"name": "sh", "resourceClaimName": "shared"}],
                 "containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}}}]},
        "status": {"phase": "Pending", "resourceClaimStatuses": [{"name": "gpus", "resourceClaimName": "p-0-gpus"}]}})
    classes = [device_class()]
    table = NodeTable.build(nodes)
    inventory = Inventory.build(table, slices, classes, [shared, own])
    index = ClaimIndex.build([shared, own], [], classes, [pg("g", 1)])
    snapshot = Snapshot.build(table, [member], DraView.build(inventory, index, [member]))
    (tree,) = build_trees([member], [pg("g", 1)], [], scheduler_name=OURS).trees
    result = solve(tree, snapshot)
    # shared -> gpu-1 (A100), own -> gpu-0 (H100) is a valid allocation
    assert isinstance(result, Plan), result.message


# -- FINDING 17: a late failure report overwrites PodScheduled=True of a pod bound since -------------


async def test_stale_failure_report_does_not_mark_a_bound_pod_unscheduled(k8s: Any, kube: KubeClient) -> None:
    from scheduler.live.status_writer import StatusWriter

    await create_node(kube, "n0")
    created = await kube.create(PODS, NS, livekit.pod("p", None))
    stale = Pod.model_validate(created)  # the copy a failed attempt reported from
    await kube.bind(NS, "p", "n0", uid=stale.metadata.uid)  # a later plan bound it
    writer = StatusWriter(kube, OURS, instance="review")
    await writer.pod_unschedulable(stale, "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu.")
    current = await kube.get(PODS, NS, "p")
    scheduled = next(c for c in current["status"]["conditions"] if c["type"] == "PodScheduled")
    assert current["spec"]["nodeName"] == "n0"
    assert scheduled["status"] == "True", scheduled


# -- FINDING 18: space nominated for a preempting higher-priority pod is taken ----------------------


def test_room_nominated_for_a_higher_priority_pod_is_not_taken() -> None:
    nodes = [node("n0", cpu="4", memory="64Gi")]
    preemptor = Pod.model_validate({
        "metadata": {"name": "vip", "namespace": "prod"},
        "spec": {"schedulerName": "default-scheduler", "priority": 1000,
                 "containers": [{"name": "m", "resources": {"requests": {"cpu": "4"}}}]},
        "status": {"phase": "Pending", "nominatedNodeName": "n0"}})  # victims already evicted for it
    gang = [pod(f"g-{i}", cpu="2", group="g", namespace=NS, priority=0) for i in range(2)]
    (tree,) = build_trees([preemptor, *gang], [pg("g", 2)], [], scheduler_name=OURS).trees
    result = solve(tree, Snapshot.build(NodeTable.build(nodes), [preemptor, *gang]))
    # kube-scheduler counts nominated pods of >= priority as if running on their node (addGENominatedPods)
    assert not isinstance(result, Plan), [(p.metadata.name, n) for p, n in result.placements]


# -- FINDING 19: a ResourceClaim that is being deleted is allocated and its pod bound ----------------


def test_claim_being_deleted_is_not_allocated() -> None:
    from scheduler.model.dra import ResourceClaim

    nodes = [node("n0", cpu="32")]
    slices = [gpu_slice("n0", ["H100"] * 2)]
    body = claim("p-0-gpus", claim_spec(1)).model_dump(by_alias=True, exclude_none=True, mode="json")
    body["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    dying = ResourceClaim.model_validate(body)
    member = pod_with_claim("p-0", "g", "p-0-gpus")
    classes = [device_class()]
    table = NodeTable.build(nodes)
    inventory = Inventory.build(table, slices, classes, [dying])
    index = ClaimIndex.build([dying], [], classes, [pg("g", 1)])
    snapshot = Snapshot.build(table, [member], DraView.build(inventory, index, [member]))
    (tree,) = build_trees([member], [pg("g", 1)], [], scheduler_name=OURS).trees
    result = solve(tree, snapshot)
    # dynamicresources.go PreFilter: "resourceclaim ... is being deleted" -> the pod waits
    assert not isinstance(result, Plan), [(a.claim, a.results) for a in result.allocations]
