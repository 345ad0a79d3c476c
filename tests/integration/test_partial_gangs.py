"""A gang is never left half-bound — durable intent on the Bindings, held room, the check before each bind.

Each test replays what the reliability run found against the emulator:
a gang 7/8 bound after a bind failure or a restart must keep the room of its eighth member against a
gang of equal priority created meanwhile, and complete; binds stop at a node deleted or cordoned after
the plan was made.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import kmock
import pytest

from scheduler.cache.cluster import ClusterCache
from scheduler.client.kube import NODES, PODGROUPS, PODS, KubeClient
from scheduler.groups.intent import INTENT_ANNOTATION
from scheduler.live.binder import Binder
from scheduler.model import Pod
from scheduler.model.scheduling import GroupKey
from tests.integration.livekit import (
    NS,
    bound,
    bound_at_least,
    create_gang,
    create_node,
    pod,
    podgroup,
    running,
    until,
)


class Refuse:
    """Every bind of ``pod`` answered 404 (a permanent failure) until :meth:`stop`; other binds, and all
    after, go through to the emulator's binding subresource. Installed with :meth:`on_binds`."""

    def __init__(self, pod: str) -> None:
        self.pod = pod
        self.refused = 0
        self.on = True

    def on_binds(self, k8s: Any) -> Refuse:
        async def react(request: kmock.Request) -> Any:
            if request.name != self.pod or not self.on:
                return await k8s._serve_binding(request)  # (a reaction answering None would be disabled)
            return self.refuse()

        k8s['post v1/pods', kmock.subresource('binding')] << react
        return self

    def refuse(self) -> kmock.KubernetesError:
        self.refused += 1
        return kmock.KubernetesError(status=404, reason="NotFound", message=f"pods {self.pod!r} not found (injected)")

    def stop(self) -> None:
        self.on = False


@pytest.mark.looptime
async def test_every_binding_of_a_small_gang_carries_its_intent_and_nothing_is_written_before(
        k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="8")
    await create_gang(kube, "g", 3, cpu="1")
    order: list[str] = []
    carried: dict[str, dict[str, Any]] = {}

    async def patch(request: kmock.Request) -> Any:
        order.append(f"PATCH podgroups{'/' + request.subresource if request.subresource else ''} {request.name}")
        return await k8s._serve_update(request)

    async def bind(request: kmock.Request) -> Any:
        order.append(f"POST pods/binding {request.name}")
        carried[request.name] = json.loads(request.data["metadata"]["annotations"][INTENT_ANNOTATION])
        return await k8s._serve_binding(request)

    k8s['patch', kmock.resource('scheduling.k8s.io/v1beta1/podgroups')] << patch
    k8s['post v1/pods', kmock.subresource('binding')] << bind
    async with running(kube):
        await until(lambda: bound_at_least(kube, "g-", 3), what="gang bound")
    assert sorted(carried) == ["g-0", "g-1", "g-2"]
    for intent in carried.values():
        assert {name: entry["node"] for name, entry in intent["pods"].items()} == {"g-0": "n0", "g-1": "n0",
                                                                                 "g-2": "n0"}
    stored = await kube.get(PODS, NS, "g-1")  # the API server merged the Binding's annotations into the pod
    assert json.loads(stored["metadata"]["annotations"][INTENT_ANNOTATION]) == carried["g-1"]
    assert [line.split()[1] for line in order[:3]] == ["pods/binding"] * 3, order  # no write before the binds


@pytest.mark.parametrize("n", [3, 40], ids=["every-binding", "first-bindings"])
async def test_a_fresh_cache_holds_the_room_of_the_member_not_bound(k8s, kube: KubeClient, n: int) -> None:
    """The plan the Bindings carried, read back by a cache that never saw it made (a restart, the next leader):
    the member whose bind failed is held the node the plan chose for it."""
    await create_node(kube, "n0", cpu="64")
    await create_gang(kube, "g", n, cpu="1")
    last = f"g-{n - 1}"
    Refuse(last).on_binds(k8s)
    pods = [Pod.model_validate(await kube.get(PODS, NS, f"g-{i}")) for i in range(n)]
    outcome = await Binder(kube, concurrency=1).bind_plan([(p, "n0") for p in pods], token="PodGroup/ml/g#1")
    assert outcome.failed is not None and outcome.failed[0] == f"{NS}/{last}"
    fresh = ClusterCache("gang-scheduler")
    fresh.replace("Node", [await kube.get(NODES, None, "n0")])
    fresh.replace("PodGroup", [await kube.get(PODGROUPS, NS, "g")])
    fresh.replace("Pod", [await kube.get(PODS, NS, f"g-{i}") for i in range(n)])
    root = GroupKey("PodGroup", NS, "g")
    tree = fresh.tree(root)
    assert tree is not None and tree.partial
    assert [(p.key, node) for p, node, _ in fresh.holds.get(root, ())] == [(f"{NS}/{last}", "n0")]


@pytest.mark.looptime
async def test_bind_failure_keeps_the_room_against_an_equal_priority_gang(k8s, kube: KubeClient) -> None:
    """Problem 1 after a bind failure: the thief (equal priority, fits exactly the freed room) waits."""
    await create_node(kube, "n0", cpu="8")
    await create_gang(kube, "a", 8, cpu="1")
    refuse = Refuse("a-7").on_binds(k8s)
    async with running(kube):
        await until(lambda: bound_at_least(kube, "a-", 7), what="7 of 8 bound")
        await create_gang(kube, "thief", 1, cpu="1")
        await asyncio.sleep(10)
        assert await bound(kube, "thief-") == {}, "the thief took the half-bound gang's room"
        assert refuse.refused >= 2  # the gang was retried meanwhile
        refuse.stop()
        placed = await until(lambda: bound_at_least(kube, "a-", 8), timeout_s=60, what="the gang completed")
        await asyncio.sleep(5)
        assert await bound(kube, "thief-") == {}
    assert placed["a-7"] == "n0"


@pytest.mark.looptime
async def test_restart_keeps_the_room_of_a_half_bound_gang_from_its_intent(k8s, kube: KubeClient) -> None:
    """Problem 1 after a restart: the new process has no memory but the intent on the bound members. The thief is of
    equal priority and ahead in the queue by age and name (its PodGroup was created first and its name
    sorts first; its pod is created during the downtime), so it would be tried first and take the room."""
    await create_node(kube, "n0", cpu="8")
    await kube.create(PODGROUPS, NS, podgroup("0-thief", 1))
    await create_gang(kube, "a", 8, cpu="1")
    refuse = Refuse("a-7").on_binds(k8s)
    async with running(kube):
        await until(lambda: bound_at_least(kube, "a-", 7), what="7 of 8 bound")
    assert len(await bound(kube, "a-")) == 7
    await kube.create(PODS, NS, pod("0-thief-0", "0-thief", cpu="1"))  # during the downtime
    async with running(kube):
        refused = refuse.refused
        await until(lambda: refuse.refused > refused, what="the restarted scheduler retried the gang")
        await asyncio.sleep(10)
        assert await bound(kube, "0-thief-") == {}, "the thief took the half-bound gang's room after the restart"
        refuse.stop()
        await until(lambda: bound_at_least(kube, "a-", 8), timeout_s=60, what="the gang completed after restart")
        await asyncio.sleep(5)
        assert await bound(kube, "0-thief-") == {}


@pytest.mark.looptime
async def test_held_room_is_not_held_against_a_higher_priority_gang(k8s, kube: KubeClient) -> None:
    """Room is held against lower or equal priority only (kube's nominated-pod rule)."""
    await create_node(kube, "n0", cpu="8")
    await create_gang(kube, "a", 8, cpu="1")
    Refuse("a-7").on_binds(k8s)
    async with running(kube):
        await until(lambda: bound_at_least(kube, "a-", 7), what="7 of 8 bound")
        await kube.create(PODGROUPS, NS, podgroup("vip", 1, priority=1000))
        await kube.create(PODS, NS, pod("vip-0", "vip", cpu="1"))
        await until(lambda: bound_at_least(kube, "vip-", 1), timeout_s=60, what="the higher-priority gang bound")
    assert len(await bound(kube, "a-")) == 7


@pytest.mark.looptime
async def test_binds_stop_at_a_node_deleted_after_the_plan(k8s, kube: KubeClient) -> None:
    """Problem 4: the node disappears between two binds of one plan; no member is bound to it."""
    await create_node(kube, "n0", cpu="4")
    await create_node(kube, "n1", cpu="4")
    await create_gang(kube, "g", 8, cpu="1")

    async def delete_n1_on_first_bind(request: kmock.Request) -> Any:
        if "n1" in k8s_nodes():
            await kube.delete(NODES, None, "n1")
            await asyncio.sleep(0.5)  # the watch delivers the deletion before this bind is answered
        return await k8s._serve_binding(request)

    def k8s_nodes() -> set[str]:
        return {name for (res, _, name), obj in k8s.objects.items() if res.plural == "nodes" and not obj.deleted}

    k8s['post v1/pods', kmock.subresource('binding')] << delete_n1_on_first_bind
    async with running(kube, bind_concurrency=1):
        await asyncio.sleep(15)
    placed = await bound(kube, "g-")
    assert "n1" not in placed.values()
    assert len(placed) < 8


@pytest.mark.looptime
async def test_the_next_leader_completes_a_half_bound_gang_from_its_intent(k8s, kube: KubeClient) -> None:
    """Failover: two replicas; the leader stops with the gang 7/8 bound (its eighth bind refused). The next
    leader, which never planned the gang, holds its room from the intent on its bound members against an equal-priority
    gang ahead of it in the queue, and completes it. (SIGKILLed leaders: tests/chaos/test_failover.py.)"""
    await create_node(kube, "n0", cpu="8")
    await kube.create(PODGROUPS, NS, podgroup("0-thief", 1))
    await create_gang(kube, "a", 8, cpu="1")
    refuse = Refuse("a-7").on_binds(k8s)
    lease = {"leader_elect": True, "lease_namespace": "kube-system", "lease_duration_s": 15,
             "renew_deadline_s": 10, "retry_period_s": 2}
    async with contextlib.AsyncExitStack() as a_ctx, contextlib.AsyncExitStack() as b_ctx:
        first = await a_ctx.enter_async_context(running(kube, identity="a", **lease))
        await until(lambda: first.leading, what="a leads")
        second = await b_ctx.enter_async_context(running(kube, identity="b", **lease))
        await until(lambda: bound_at_least(kube, "a-", 7), what="7 of 8 bound by the first leader")
        await a_ctx.aclose()  # the leader stops mid-gang
        await kube.create(PODS, NS, pod("0-thief-0", "0-thief", cpu="1"))
        await until(lambda: second.leading, timeout_s=30, what="b takes over")
        refused = refuse.refused
        await until(lambda: refuse.refused > refused, what="the new leader retried the gang")
        await asyncio.sleep(5)
        assert await bound(kube, "0-thief-") == {}, "the thief took the half-bound gang's room after the failover"
        refuse.stop()
        await until(lambda: bound_at_least(kube, "a-", 8), timeout_s=60, what="the new leader completed the gang")
        assert second.cycles > 0


@pytest.mark.looptime
async def test_room_held_for_a_deleted_member_goes_to_the_gang_waiting_for_it(k8s, kube: KubeClient) -> None:
    """The half-bound gang's pending member is deleted: the room held for it is given up with no event any hint
    reads (the pod was never bound), so the parked thief is moved at once rather than after
    ``--unschedulable-retry-s`` (300 s) — as kube-scheduler moves its unschedulable pods when a nominated pod goes."""
    await create_node(kube, "n0", cpu="8")
    await create_gang(kube, "a", 8, cpu="1")
    Refuse("a-7").on_binds(k8s)
    async with running(kube) as sched:
        await until(lambda: bound_at_least(kube, "a-", 7), what="7 of 8 bound")
        await create_gang(kube, "thief", 1, cpu="1")
        thief = GroupKey("PodGroup", NS, "thief")
        await until(lambda: thief in sched.queue.parked(), what="the thief parked behind the held room")
        await kube.request("DELETE", PODS.path(NS, "a-7"))
        await until(lambda: bound_at_least(kube, "thief-", 1), timeout_s=60, what="the thief bound in the freed room")
