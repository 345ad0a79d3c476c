"""Preemption in the live loop against the emulated API server.

Victims carry a finalizer, so a DELETE leaves them terminating (``deletionTimestamp`` set, still on
their node) until the test removes it — the emulator's stand-in for a pod's graceful termination.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler.client.kube import EVENTS, PODGROUPS, PODS, KubeClient
from scheduler.model.pod import DISRUPTION_TARGET, REASON_PREEMPTION_BY_SCHEDULER
from tests.integration.apiserver import ApiServer
from tests.integration.livekit import NS, bound, create_node, pod, podgroup, running, until

HOLD = "example.com/hold"


def victim(name: str, node: str, cpu: str = "1", priority: int = 0, group: str | None = None) -> dict[str, Any]:
    """A running pod of another scheduler with a finalizer (it terminates only when the test lets it)."""
    body = pod(name, group, cpu=cpu, scheduler="default-scheduler", node_name=node)
    body["metadata"]["finalizers"] = [HOLD]
    body["spec"]["priority"] = priority
    return body


async def create_gang(kube: KubeClient, name: str, n: int, priority: int, cpu: str = "1") -> None:
    await kube.create(PODGROUPS, NS, podgroup(name, n, priority=priority))
    for i in range(n):
        await kube.create(PODS, NS, pod(f"{name}-{i}", name, cpu=cpu))


async def create_running_gang(kube: KubeClient, name: str, min_count: int, members: int, node: str,
                              priority: int = 1) -> None:
    """PodGroup ``name`` (minCount ``min_count``, ``priority``) with ``members`` pods running on ``node``, each held by
    a finalizer (it terminates only when the test lets it)."""
    await kube.create(PODGROUPS, NS, podgroup(name, min_count, priority=priority))
    for i in range(members):
        member = pod(f"{name}-{i}", name, node_name=node)
        member["metadata"]["finalizers"] = [HOLD]
        await kube.create(PODS, NS, member)


async def full_node_and_preemptor(kube: KubeClient) -> None:
    """Node n0 (2 cpu) full with two 1-cpu victims ``low-0``/``low-1`` of priority 0, and the 2-pod gang ``high``
    of priority 100 that fits only once both are gone."""
    await create_node(kube, "n0", cpu="2")
    for i in range(2):
        await kube.create(PODS, NS, victim(f"low-{i}", "n0"))
    await create_gang(kube, "high", 2, priority=100)


async def get(kube: KubeClient, name: str) -> dict[str, Any]:
    return await kube.get(PODS, NS, name)


async def nominated(kube: KubeClient, names: list[str]) -> dict[str, str] | None:
    found = {n: (await get(kube, n)).get("status", {}).get("nominatedNodeName") for n in names}
    return found if all(found.values()) else None


async def terminating(kube: KubeClient, name: str) -> dict[str, Any] | None:
    body = await get(kube, name)
    return body if body["metadata"].get("deletionTimestamp") else None


async def let_go(kube: KubeClient, name: str) -> None:
    """Remove the finalizer: the terminating pod is gone."""
    await kube.patch(PODS, NS, name, {"metadata": {"finalizers": None}})


async def gone(k8s: ApiServer, name: str) -> bool:
    return bool(k8s.objects["v1/pods", NS, name].deleted)


async def events(kube: KubeClient, reason: str) -> list[dict[str, Any]]:
    items, _ = await kube.list(EVENTS)
    return [e for e in items if e.get("reason") == reason]


@pytest.mark.looptime
async def test_victims_are_marked_deleted_and_the_preemptor_binds_only_after_they_are_gone(
        k8s: ApiServer, kube: KubeClient) -> None:
    await full_node_and_preemptor(kube)
    async with running(kube) as sched:
        nominations = await until(lambda: nominated(kube, ["high-0", "high-1"]), what="nominations")
        assert nominations == {"high-0": "n0", "high-1": "n0"}
        for name in ("low-0", "low-1"):
            body = await until(lambda n=name: terminating(kube, n), what=f"{name} deleted")  # type: ignore[misc]
            cond = next(c for c in body["status"]["conditions"] if c["type"] == DISRUPTION_TARGET)
            assert (cond["status"], cond["reason"]) == ("True", REASON_PREEMPTION_BY_SCHEDULER)
            assert cond["message"] == "gang-scheduler: preempting to accommodate a higher priority podgroup"
        deletes = [r for r in k8s if r.method == "DELETE" and r.resource == "v1/pods"]
        assert {(r.name, (r.data or {}).get("preconditions", {}).get("uid")) for r in deletes} == {
            (n, k8s.objects["v1/pods", NS, n]["metadata"]["uid"]) for n in ("low-0", "low-1")}
        preempted = await until(lambda: events(kube, "Preempted"), what="Preempted events")
        assert {e["regarding"]["name"] for e in preempted} == {"low-0", "low-1"}
        group = await kube.get(PODGROUPS, NS, "high")
        assert {e["related"]["uid"] for e in preempted} == {group["metadata"]["uid"]}
        assert all(e["note"] == f"Preempted by PodGroup {NS}/high (uid {group['metadata']['uid']})"
                   for e in preempted)
        (preempting,) = await until(lambda: events(kube, "Preempting"), what="Preempting event")
        assert preempting["regarding"]["name"] == "high"
        assert "ml/low-0 on n0" in preempting["note"] and "ml/low-1 on n0" in preempting["note"]
        messages = [c["message"] for version in k8s.objects["scheduling.k8s.io/v1beta1/podgroups", NS, "high"].history
                    for c in (version.get("status") or {}).get("conditions") or []
                    if c["type"] == "PodGroupInitiallyScheduled"]
        head = ("gang high: 0/2 placeable (minCount 2); 0/1 nodes are available: 1 Insufficient cpu. "
                "pod group preemption: ")
        found = head + "found a placement for podgroup, preempting 2 victims: 2 pod(s) without a group"
        assert found in messages
        assert set(messages) <= {found, head + "ongoing preemption on nominated nodes"}  # the later cycles wait
        await asyncio.sleep(20)  # victims terminating: nothing is bound, nothing more is preempted
        assert await bound(kube, "high-") == {}
        assert len([r for r in k8s if r.method == "DELETE" and r.resource == "v1/pods"]) == 2
        await let_go(kube, "low-0")
        await asyncio.sleep(5)
        assert await bound(kube, "high-") == {}  # half the room: the gang waits whole
        await let_go(kube, "low-1")
        placed = await until(lambda: _bound(kube, "high-", 2), what="preemptor bound")
        assert placed == {"high-0": "n0", "high-1": "n0"}
        await until(lambda: _cleared(kube, ["high-0", "high-1"]), what="nominations cleared after binding")
        samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                   for f in sched.metrics.registry.collect() for s in f.samples}
        assert samples[("scheduler_podgroup_preemption_attempts_total", (("result", "preempting"),))] == 1
        assert samples[("gang_scheduler_preemption_evictions_total", (("result", "deleted"),))] == 2
        assert samples[("scheduler_podgroup_preemption_victims_sum", ())] == 2


async def _bound(kube: KubeClient, prefix: str, n: int) -> dict[str, str] | None:
    got = await bound(kube, prefix)
    return got if len(got) >= n else None


async def _cleared(kube: KubeClient, names: list[str]) -> bool:
    shown = [(await get(kube, n)).get("status", {}).get("nominatedNodeName") for n in names]
    return not any(shown)


@pytest.mark.looptime
async def test_room_freed_for_a_preemptor_is_not_taken_by_a_lower_priority_root(
        k8s: ApiServer, kube: KubeClient) -> None:
    await full_node_and_preemptor(kube)
    async with running(kube):
        await until(lambda: nominated(kube, ["high-0", "high-1"]), what="nominations")
        await until(lambda: terminating(kube, "low-1"), what="victims deleted")
        await create_gang(kube, "mid", 1, priority=10)  # higher than the victims, lower than the preemptor
        await let_go(kube, "low-0")  # one cpu free: enough for mid, not for high
        await asyncio.sleep(30)
        assert await bound(kube, "mid-") == {} and await bound(kube, "high-") == {}
        await let_go(kube, "low-1")
        assert await until(lambda: _bound(kube, "high-", 2), what="preemptor bound") == {"high-0": "n0",
                                                                                         "high-1": "n0"}
        await asyncio.sleep(10)
        assert await bound(kube, "mid-") == {}  # no room left, and nothing of lower priority to evict


@pytest.mark.looptime
async def test_a_preemptor_deleted_while_its_victims_terminate_leaves_the_room_to_others(
        k8s: ApiServer, kube: KubeClient) -> None:
    await full_node_and_preemptor(kube)
    async with running(kube) as sched:
        await until(lambda: nominated(kube, ["high-0", "high-1"]), what="nominations")
        await until(lambda: terminating(kube, "low-1"), what="victims deleted")
        for i in range(2):
            await kube.delete(PODS, NS, f"high-{i}")
        await kube.delete(PODGROUPS, NS, "high")
        await create_gang(kube, "later", 2, priority=10)
        await asyncio.sleep(5)
        assert await bound(kube, "later-") == {}  # the victims still hold the node
        for i in range(2):
            await let_go(kube, f"low-{i}")
        assert await until(lambda: _bound(kube, "later-", 2), what="room taken by the next root") == {
            "later-0": "n0", "later-1": "n0"}
        assert not sched.preemptor.awaiting(("PodGroup", NS, "high"))  # type: ignore[arg-type]


@pytest.mark.looptime
async def test_without_preemption_nothing_is_evicted(k8s: ApiServer, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="1")
    await kube.create(PODS, NS, victim("low-0", "n0"))
    await create_gang(kube, "high", 1, priority=100)
    async with running(kube, preemption=False):
        await asyncio.sleep(20)
        assert not await terminating(kube, "low-0")
        assert [r for r in k8s if r.method == "DELETE"] == []
        assert await nominated(kube, ["high-0"]) is None


@pytest.mark.looptime
async def test_an_equal_priority_gang_waits_and_no_victim_is_touched(k8s: ApiServer, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="1")
    await kube.create(PODS, NS, victim("peer-0", "n0", priority=100))
    await create_gang(kube, "high", 1, priority=100)
    async with running(kube):
        await asyncio.sleep(20)
        assert not await terminating(kube, "peer-0") and await bound(kube, "high-") == {}


@pytest.mark.looptime
async def test_a_starving_root_gets_its_nodes_reserved_against_equal_priority_roots(
        k8s: ApiServer, kube: KubeClient) -> None:
    """``big`` needs both nodes whole; ``small`` roots of the same priority take each bit of room freed. After
    ``starvation_after_s`` the nodes of big's best plan are held for it, at its next attempt (here within
    ``unschedulable_retry_s``, no room freeing meanwhile): the next small root waits."""
    for i in range(2):
        await create_node(kube, f"n{i}", cpu="2")
        for j in range(2):
            await kube.create(PODS, NS, victim(f"busy-{i}-{j}", f"n{i}", priority=5))
    await create_gang(kube, "big", 4, priority=5)
    async with running(kube, starvation_after_s=20, reservation_s=300, unschedulable_retry_s=30) as sched:
        await asyncio.sleep(3)
        await kube.delete(PODS, NS, "busy-0-0")
        await let_go(kube, "busy-0-0")
        await create_gang(kube, "small1", 1, priority=5)
        await until(lambda: _bound(kube, "small1-", 1), what="small1 takes the freed room")
        group = await until(lambda: _condition(kube, "big", "NodesReserved"), timeout_s=60, what="reservation")
        assert (group["status"], group["reason"]) == ("True", "Starving")
        reserved = await until(lambda: nominated(kube, [f"big-{i}" for i in range(4)]), what="big nominated")
        assert set(reserved.values()) == {"n0", "n1"}
        await kube.delete(PODS, NS, "busy-1-0")
        await let_go(kube, "busy-1-0")
        await create_gang(kube, "small2", 1, priority=5)
        await asyncio.sleep(20)
        assert await bound(kube, "small2-") == {}  # the room freed is big's now
        await kube.delete(PODS, NS, "small2-0")  # pending: gone at once; it would starve in turn behind big
        await kube.delete(PODS, NS, "small1-0")
        for name in ("busy-0-1", "busy-1-1"):
            await kube.delete(PODS, NS, name)
            await let_go(kube, name)
        await until(lambda: _bound(kube, "big-", 4), what="big bound")
        group = await until(lambda: _condition(kube, "big", "NodesReserved", "False"), what="reservation ended")
        assert group["reason"] == "Fitted"
        samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                   for f in sched.metrics.registry.collect() for s in f.samples}
        assert samples[("gang_scheduler_reservations_total", (("event", "granted"),))] == 1
        assert samples[("gang_scheduler_reservations_total", (("event", "fitted"),))] == 1
        assert samples[("gang_scheduler_reservations_active", ())] == 0


async def _condition(kube: KubeClient, name: str, type_: str, status: str | None = None) -> dict[str, Any] | None:
    obj = await kube.get(PODGROUPS, NS, name)
    found = next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == type_), None)
    return found if found is not None and (status is None or found["status"] == status) else None


@pytest.mark.looptime
async def test_a_failed_delete_is_retried_by_a_fresh_preemption(k8s: ApiServer, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="1")
    await kube.create(PODS, NS, victim("low-0", "n0"))
    deletes = k8s["delete v1/pods"]
    n = len(deletes)
    deletes[n:n + 1] << 500 << {"kind": "Status", "apiVersion": "v1", "code": 500, "reason": "InternalError",
                                "message": "etcd timeout"}
    await create_gang(kube, "high", 1, priority=100)
    async with running(kube) as sched:
        await until(lambda: terminating(kube, "low-0"), what="victim deleted on the second attempt")
        assert len([r for r in k8s if r.method == "DELETE" and r.resource == "v1/pods"]) == 2

        def evictions(result: str) -> float:
            samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                       for f in sched.metrics.registry.collect() for s in f.samples}
            return samples[("gang_scheduler_preemption_evictions_total", (("result", result),))]

        # counted once the victim's Preempted Event is written, which follows the delete
        await until(lambda: evictions("deleted") == 1, what="the eviction counted")
        assert evictions("error") == 1
        await let_go(kube, "low-0")
        assert await until(lambda: _bound(kube, "high-", 1), what="preemptor bound") == {"high-0": "n0"}


@pytest.mark.looptime
async def test_a_victim_recreated_under_its_name_is_not_deleted(k8s: ApiServer, kube: KubeClient) -> None:
    """The uid precondition: the DELETE names the victim's uid; a new pod of that name answers 409 and stays."""
    await create_node(kube, "n0", cpu="1")
    await kube.create(PODS, NS, victim("low-0", "n0"))
    old_uid = k8s.objects["v1/pods", NS, "low-0"]["metadata"]["uid"]
    with pytest.raises(Exception, match="409"):
        await kube.delete(PODS, NS, "low-0", uid="not-" + old_uid)
    assert not await terminating(kube, "low-0")
    await kube.delete(PODS, NS, "low-0", uid=old_uid)
    assert await terminating(kube, "low-0")


@pytest.mark.looptime
async def test_raising_min_count_never_evicts_running_members_and_a_new_member_joins(
        k8s: ApiServer, kube: KubeClient) -> None:
    """Elastic gangs: minCount raised above the members running makes the gang wait for members, evicting
    nothing (its own members are never victims); the member created later is placed beside them."""
    await create_node(kube, "n0", cpu="3")
    await create_gang(kube, "g", 2, priority=100)
    async with running(kube):
        await until(lambda: _bound(kube, "g-", 2), what="gang bound")
        await kube.patch(PODGROUPS, NS, "g", {"spec": {"schedulingPolicy": {"gang": {"minCount": 3}}}})
        await asyncio.sleep(10)
        assert len(await bound(kube, "g-")) == 2
        await kube.create(PODS, NS, pod("g-2", "g"))
        assert (await until(lambda: _bound(kube, "g-", 3), what="new member bound"))["g-2"] == "n0"
        assert [r for r in k8s if r.method == "DELETE"] == []


@pytest.mark.looptime
async def test_a_victim_group_is_marked_and_evicted_whole(k8s: ApiServer, kube: KubeClient) -> None:
    """A running disruptionMode-all PodGroup spread over two nodes: the 1-pod preemptor needs one node's room,
    the whole group goes, and the PodGroup gets DisruptionTarget."""
    for i in range(2):
        await create_node(kube, f"n{i}", cpu="1")
    body = podgroup("low", 2, priority=1)
    body["spec"]["disruptionMode"] = {"all": {}}
    await kube.create(PODGROUPS, NS, body)
    for i in range(2):
        member = pod(f"low-{i}", "low", node_name=f"n{i}")
        member["metadata"]["finalizers"] = [HOLD]
        await kube.create(PODS, NS, member)
    await create_gang(kube, "high", 1, priority=100)
    async with running(kube):
        for i in range(2):
            await until(lambda n=f"low-{i}": terminating(kube, n), what="both members deleted")  # type: ignore[misc]
        cond = await until(lambda: _condition(kube, "low", DISRUPTION_TARGET), what="group DisruptionTarget")
        assert (cond["status"], cond["reason"]) == ("True", REASON_PREEMPTION_BY_SCHEDULER)


@pytest.mark.looptime
async def test_a_group_preempted_whole_and_scheduled_again_no_longer_shows_it_is_a_disruption_target(
        k8s: ApiServer, kube: KubeClient) -> None:
    """``low`` (``disruptionMode: all``) is evicted whole for ``high`` and gets ``DisruptionTarget=True``; its Job
    makes its pods again and, once a node is added, they are bound: the group is no longer about to be terminated,
    so the condition turns ``False/Rescheduled``."""
    await create_node(kube, "n0", cpu="2")
    low = podgroup("low", 2, priority=0)
    low["spec"]["disruptionMode"] = {"all": {}}
    await kube.create(PODGROUPS, NS, low)
    for i in range(2):
        await kube.create(PODS, NS, pod(f"low-{i}", "low"))
    async with running(kube):
        await until(lambda: bound(kube, "low-"), what="low bound")
        await create_gang(kube, "high", 2, priority=100)
        await until(lambda: _target(kube, "low", "True"), what="low marked a disruption target")
        await until(lambda: _bound_count(kube, "high-", 2), timeout_s=60, what="high bound")
        await create_node(kube, "n1", cpu="2")
        for i in range(2):
            await kube.create(PODS, NS, pod(f"low-{i}", "low"))
        await until(lambda: _bound_count(kube, "low-", 2), timeout_s=60, what="low bound again")
        cond = await until(lambda: _target(kube, "low", "False"), what="DisruptionTarget cleared")
        assert cond["reason"] == "Rescheduled"


async def _target(kube: KubeClient, group: str, status: str) -> dict[str, Any] | None:
    obj = await kube.get(PODGROUPS, NS, group)
    cond = next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == DISRUPTION_TARGET), None)
    return cond if cond is not None and cond["status"] == status else None


async def _bound_count(kube: KubeClient, prefix: str, n: int) -> bool:
    return len(await bound(kube, prefix)) >= n
