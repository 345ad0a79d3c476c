"""The real API server's event order, replayed: no root is planned twice, no node is overcommitted.

On a real kube-apiserver, 1,000-gang drains planned 1–7 gangs a second time after their pods were bound
(``409 … already assigned to node``), and the "rest forgotten" then released assumptions still in force,
overcommitting a node. The emulator answers a write and shows it to watches at the same instant, which
hid the race. :class:`~tests.integration.lagging.LaggingApiServer` shows every write to watches only after a delay
(random per event, FIFO per resource, as a watch cache lags), so the scheduler sees, in this order: the bind
response; later, the pod's MODIFIED event with ``nodeName``; later still, the MODIFIED events of its own
status patches — while it keeps planning other gangs.
"""

from __future__ import annotations

import asyncio
import collections
import copy
import random
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from scheduler.cache.cluster import ClusterCache
from scheduler.client.kube import NODES, PODGROUPS, PODS, KubeClient
from scheduler.config import Settings
from scheduler.cycle import BindResult, CycleRunner
from scheduler.framework import Plan
from scheduler.model import Node, Pod
from scheduler.model.scheduling import GroupKey
from tests.integration.lagging import LaggingApiServer, lagging_server
from tests.integration.livekit import NS, create_node, pod, podgroup, running, until

GANGS = 24
PODS_PER_GANG = 3
NODES_N = 6
PODS_PER_NODE = 12  # 72 slots for 72 pods: every slot is needed, a double count shows at once


@pytest_asyncio.fixture
async def lagging() -> AsyncIterator[LaggingApiServer]:
    async with lagging_server() as srv:
        yield srv


async def test_with_lagging_watches_no_root_is_planned_twice_and_no_node_overcommitted(
        lagging: LaggingApiServer) -> None:
    kube = KubeClient.for_host(str(lagging.url))
    try:
        for i in range(NODES_N):
            await create_node(kube, f"n{i}", cpu="64", memory="256Gi")
            await kube.patch(NODES, None, f"n{i}", {"status": {"allocatable": {
                "cpu": "64", "memory": "256Gi", "pods": str(PODS_PER_NODE)}}}, sub="status")
        async with running(kube, backoff_initial_s=0.05, backoff_max_s=0.2) as sched:
            for g in range(GANGS):  # PodGroup first, then its pods one at a time: Waiting, then Ready
                await kube.create(PODGROUPS, NS, podgroup(f"g{g}", PODS_PER_GANG))
                for i in range(PODS_PER_GANG):
                    await kube.create(PODS, NS, pod(f"g{g}-{i}", f"g{g}", cpu="1"))
                    await asyncio.sleep(0.002)

            async def all_bound() -> bool:
                items, _ = await kube.list(PODS)
                return sum(1 for p in items if p["spec"].get("nodeName")) == GANGS * PODS_PER_GANG

            await until(all_bound, timeout_s=60, what="every gang bound")
            await asyncio.sleep(0.3)  # let the lagging watch catch up with everything
            assert sched.cycle.cache.assumed == {}
        binds = [r for r in list(lagging) if r.method == "POST" and r.subresource == "binding"]
        per_pod = collections.Counter(r.name for r in binds)
        assert max(per_pod.values()) == 1, [name for name, n in per_pod.items() if n > 1]
        assert len(per_pod) == GANGS * PODS_PER_GANG
        items, _ = await kube.list(PODS)
        nodes = {n["metadata"]["name"]: Node.model_validate(n) for n in (await kube.list(NODES))[0]}
        per_node = collections.Counter(Pod.model_validate(p).spec.node_name for p in items)
        for name, count in per_node.items():
            assert count <= nodes[name].allocatable["pods"], (name, count)
    finally:
        await kube.close()


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_bind_confirmation_after_the_next_plan_does_not_reuse_the_room(seed: int) -> None:
    """The shortcut that skipped rebuilding trees on our own bind's MODIFIED event: while the confirmation of
    gang A lags, gang B is planned on the same cache — it must see A's pods as bound (assumed) and A must
    never be planned again, whatever order the confirmation and the status events arrive in."""
    rng = random.Random(seed)
    cache_settings = Settings(leader_elect=False)
    cache = ClusterCache(cache_settings.scheduler_name)
    cache.replace("Node", [{"metadata": {"name": "n0"},
                            "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "4"}}}])
    raw = {f"{g}-{i}": pod(f"{g}-{i}", g, cpu="1") for g in ("a", "b") for i in range(2)}
    for r in raw.values():
        r["metadata"]["uid"] = f"uid-{r['metadata']['name']}"
    rv = iter(range(1, 10_000))
    for r in raw.values():
        r["metadata"]["resourceVersion"] = str(next(rv))
    cache.replace("Pod", list(raw.values()))
    cache.replace("PodGroup", [podgroup("a", 2) | {"metadata": {"name": "a", "namespace": NS}},
                               podgroup("b", 2) | {"metadata": {"name": "b", "namespace": NS}}])
    cycle = CycleRunner(cache, cache_settings.solver())
    a = cycle.attempt(GroupKey("PodGroup", NS, "a"))
    assert a is not None and isinstance(a.decision, Plan)
    cycle.settle(a, BindResult(bound=list(a.decision.placements)))  # the bind responses came back: all bound
    confirmations = []
    for p, node in a.decision.placements:
        bound_raw = copy.deepcopy(raw[p.metadata.name])
        bound_raw["spec"]["nodeName"] = node
        bound_raw["metadata"]["resourceVersion"] = str(next(rv))
        confirmations.append(("MODIFIED", bound_raw))
        patched = copy.deepcopy(bound_raw)  # then our own status patch's MODIFIED event
        patched["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]
        patched["metadata"]["resourceVersion"] = str(next(rv))
        confirmations.append(("MODIFIED", patched))
    b = cycle.attempt(GroupKey("PodGroup", NS, "b"))  # planned before any confirmation arrived
    assert b is not None and isinstance(b.decision, Plan)
    for kind, body in confirmations:  # the server's order; a root may be retried between any two events
        cache.apply("Pod", kind, body)
        if rng.random() < 0.5:
            assert cycle.attempt(GroupKey("PodGroup", NS, "a")) is None  # never planned again
    assert cycle.attempt(GroupKey("PodGroup", NS, "a")) is None
    snapshot = cache.snapshot()
    assert int(snapshot.used[0, snapshot.table.column["pods"]]) == 4  # a's 2 bound + b's 2 assumed, not 6
