"""The live loop against the emulated API server: bind all or nothing, report, recover."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import kmock
import pytest

from scheduler.client.kube import EVENTS, PODGROUPS, PODS, KubeClient
from tests.integration.livekit import NS, bound, bound_at_least, create_gang, create_node, pod, podgroup, running, until


async def condition(kube: KubeClient, group: str, type_: str = "PodGroupInitiallyScheduled") -> dict | None:
    obj = await kube.get(PODGROUPS, NS, group)
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == type_), None)


async def events(kube: KubeClient, reason: str) -> list[dict]:
    items, _ = await kube.list(EVENTS)
    return [e for e in items if e.get("reason") == reason]


@pytest.mark.looptime
async def test_gang_is_bound_whole_with_condition_and_events(k8s, kube: KubeClient) -> None:
    for i in range(2):
        await create_node(kube, f"n{i}", cpu="4")
    await create_gang(kube, "g", 6, cpu="1")
    async with running(kube):
        placed = await until(lambda: bound_at_least(kube, "g-", 6), what="gang bound")
        assert len(placed) == 6
        cond = await until(lambda: condition(kube, "g"), what="condition")
        assert (cond["status"], cond["reason"]) == ("True", "Scheduled")
        scheduled = await until(lambda: _at_least(events(kube, "Scheduled"), 6), what="Scheduled events")
        notes = {e["note"] for e in scheduled}
        assert f"Successfully assigned {NS}/g-0 to {placed['g-0']}" in notes


async def _at_least(coro, n: int):  # type: ignore[no-untyped-def]
    items = await coro
    return items if len(items) >= n else None


@pytest.mark.looptime
async def test_stopping_is_logged_with_the_tasks_still_writing(k8s, kube: KubeClient,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    await create_node(kube, "n0", cpu="4")
    await create_gang(kube, "g", 2)
    with caplog.at_level("INFO", logger="scheduler.live.driver"):
        async with running(kube):
            await until(lambda: bound_at_least(kube, "g-", 2), what="gang bound")
    messages = [r.getMessage() for r in caplog.records if r.name == "scheduler.live.driver"]
    assert any(m.startswith("stopping: ") and "bind, status and preemption task(s) get 10 s to finish" in m
               for m in messages)
    assert messages[-1] == "stopped"


@pytest.mark.looptime
async def test_gang_that_does_not_fit_waits_whole_then_binds_when_a_node_arrives(k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="4")
    await create_gang(kube, "g", 6, cpu="1")
    async with running(kube):
        cond = await until(lambda: condition(kube, "g"), what="condition")
        assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
        assert "gang g: 4/6 placeable (minCount 6)" in cond["message"]
        failed = await until(lambda: events(kube, "FailedScheduling"), what="FailedScheduling")
        assert failed[0]["type"] == "Warning"
        await asyncio.sleep(5)
        assert await bound(kube, "g-") == {}
        await create_node(kube, "n1", cpu="4")
        placed = await until(lambda: bound_at_least(kube, "g-", 6), what="gang bound after node added")
        assert set(placed.values()) == {"n0", "n1"}


@pytest.mark.looptime
async def test_a_gang_that_does_not_fit_is_not_tried_again_until_something_may_help(k8s, kube: KubeClient) -> None:
    """Parked as kube-scheduler's unschedulablePods: in four minutes with nothing that frees room — another gang
    bound, its members' conditions written — the gang is tried once; a node added moves it back and it binds."""
    await create_node(kube, "n0", cpu="4")
    await create_gang(kube, "g", 6, cpu="1")
    async with running(kube) as sched:
        def attempts(result: str) -> float:
            labels = {"result": result, "profile": sched.metrics.profile}
            return sched.metrics.registry.get_sample_value("scheduler_podgroup_schedule_attempts_total", labels) or 0.0

        await until(lambda: condition(kube, "g"), what="condition")
        await create_gang(kube, "small", 2, cpu="1")
        await until(lambda: bound_at_least(kube, "small-", 2), what="a gang that fits bound meanwhile")
        await asyncio.sleep(240)
        assert attempts("unschedulable") == 1
        assert sched.metrics.registry.get_sample_value("scheduler_pending_pods", {"queue": "unschedulable"}) == 6
        await create_node(kube, "n1", cpu="8")
        placed = await until(lambda: bound_at_least(kube, "g-", 6), what="gang bound after node added")
        assert set(placed.values()) <= {"n0", "n1"} and attempts("scheduled") == 2


@pytest.mark.looptime
async def test_member_above_a_met_min_count_is_reported_pending_the_group_scheduled(k8s, kube: KubeClient) -> None:
    """minCount 1 is met once g-0 is bound; g-1 fits nowhere. The group stays True/Scheduled and g-1's
    FailedScheduling says what is placed (``1/2 placed``), not that the gang failed (``placeable``)."""
    await create_node(kube, "n0", cpu="4")
    await kube.create(PODGROUPS, NS, podgroup("g", 1))
    await kube.create(PODS, NS, pod("g-0", "g", cpu="1"))
    await kube.create(PODS, NS, pod("g-1", "g", cpu="10"))
    async with running(kube):
        await until(lambda: bound_at_least(kube, "g-0", 1), what="g-0 bound")
        failed = await until(lambda: _at_least(events(kube, "FailedScheduling"), 1), what="FailedScheduling")
        assert {(e["regarding"]["name"], e["note"]) for e in failed} == {
            ("g-1", "gang g: 1/2 placed (minCount 1); 0/1 nodes are available: 1 Insufficient cpu. pod group "
                    "preemption: Preemption is not helpful for scheduling (no node the pods may use has the "
                    "allocatable to hold one of them)")}
        cond = await condition(kube, "g")
        assert cond is not None and (cond["status"], cond["reason"]) == ("True", "Scheduled")


@pytest.mark.looptime
async def test_pods_before_their_group_then_group_appears(k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="8")
    for i in range(3):
        await kube.create(PODS, NS, pod(f"late-{i}", "late"))
    async with running(kube):
        await until(lambda: _at_least(events(kube, "NotReadyForScheduling"), 1), what="waiting event")
        notes = {e["note"] for e in await events(kube, "NotReadyForScheduling")}
        assert f"waiting for PodGroup {NS}/late to appear" in notes
        assert await events(kube, "FailedScheduling") == []  # not tried: no failure
        await kube.create(PODGROUPS, NS, podgroup("late", 3))
        await until(lambda: bound_at_least(kube, "late-", 3), what="bound after group appeared")


@pytest.mark.looptime
async def test_min_count_lowered_while_waiting_binds(k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="8")
    await kube.create(PODGROUPS, NS, podgroup("g", 4))
    for i in range(2):
        await kube.create(PODS, NS, pod(f"g-{i}", "g"))
    async with running(kube):
        cond = await until(lambda: condition(kube, "g"), what="waiting condition")
        assert cond["message"] == "gang g: 2/4 pods exist (minCount 4)"
        await asyncio.sleep(3)
        assert await bound(kube, "g-") == {}
        await kube.patch(PODGROUPS, NS, "g", {"spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}})
        await until(lambda: bound_at_least(kube, "g-", 2), what="bound after minCount lowered")


@pytest.mark.looptime
async def test_podgroup_deleted_while_pods_pend_leaves_them_waiting(k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="2")
    await create_gang(kube, "g", 3, cpu="1")
    async with running(kube) as sched:
        await until(lambda: condition(kube, "g"), what="unschedulable condition")
        await kube.request("DELETE", PODGROUPS.path(NS, "g"))
        await until(lambda: not sched.queue.ready and not sched.queue.backing_off, what="root dropped from queue")
        await until(lambda: _at_least(events(kube, "NotReadyForScheduling"), 1), what="waiting event")
        assert await bound(kube, "g-") == {}
        notes = {e["note"] for e in await events(kube, "NotReadyForScheduling")}
        assert f"waiting for PodGroup {NS}/g to appear" in notes


@pytest.mark.looptime
async def test_two_gangs_competing_exactly_one_bound_whole(k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="4")
    await create_gang(kube, "a", 3, cpu="1")
    await create_gang(kube, "b", 3, cpu="1")
    async with running(kube):
        await until(lambda: bound_at_least(kube, "a-", 3), what="first gang")
        await asyncio.sleep(20)
        assert await bound(kube, "b-") == {}
        cond = await until(lambda: condition(kube, "b"), what="b condition")
        assert cond["status"] == "False"


@pytest.mark.looptime
async def test_bind_500_is_retried(k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="4")
    await create_gang(kube, "g", 2, cpu="1")
    view = k8s['post v1/pods', kmock.subresource('binding')]
    n = len(view)
    view[n:n + 1] << 500 << {"kind": "Status", "code": 500, "reason": "InternalError", "message": "boom"}
    async with running(kube):
        await until(lambda: bound_at_least(kube, "g-", 2), what="bound despite a 500")
    assert len(view) >= n + 3  # two binds and one retry


@pytest.mark.looptime
async def test_bind_409_forgets_the_rest_and_requeues(k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="8")
    await create_gang(kube, "g", 4, cpu="1")
    view = k8s['post v1/pods', kmock.subresource('binding'), kmock.name('g-0')]
    n = len(view)
    view[n:n + 1] << 409 << {"kind": "Status", "code": 409, "reason": "Conflict", "message": "injected conflict"}
    async with running(kube, bind_concurrency=1):
        failed = await until(lambda: _binding_failed(kube), what="bind failure reported")
        assert "binding ml/g-0 failed" in failed
        # bind_concurrency=1 and g-0 first: the rest of the plan was not attempted after the 409
        await until(lambda: bound_at_least(kube, "g-", 4), what="requeued root binds later")


async def _binding_failed(kube: KubeClient) -> str | None:
    for e in await events(kube, "FailedScheduling"):
        if "binding" in e["note"]:
            return str(e["note"])
    return None


@pytest.mark.looptime
async def test_watch_dropped_and_410_relists_without_double_counting(k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="4")
    await kube.create(PODS, NS, pod("other", None, cpu="2", scheduler="default-scheduler", node_name="n0"))
    async with running(kube) as sched:
        informer = next(i for i in sched.watches.informers if i.resource is PODS)
        lists = informer.relists
        k8s.compact()  # history dropped: resuming the pods watch from its resourceVersion gets ERROR 410
        await until(lambda: informer.relists > lists, timeout_s=400, what="re-list after the stream drops + 410")
        await create_gang(kube, "g", 3, cpu="1")
        await asyncio.sleep(10)
        # 4 cpu - 2 used by `other` = 2 free: a 3 x 1 cpu gang must not fit; usage was not counted twice
        # (then 0 would be free) nor lost (then it would fit)
        assert await bound(kube, "g-") == {}
        snapshot = sched.cache.snapshot()
        assert int(snapshot.used[0, snapshot.table.column["cpu"]]) == 2000
        await kube.request("DELETE", PODS.path(NS, "other"))
        await until(lambda: bound_at_least(kube, "g-", 3), what="gang after usage freed")


@pytest.mark.looptime
async def test_two_schedulers_only_the_leader_binds_and_stopping_it_hands_over(k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="8")
    lease = {"leader_elect": True, "lease_namespace": "kube-system", "lease_duration_s": 15,
             "renew_deadline_s": 10, "retry_period_s": 2}
    async with contextlib.AsyncExitStack() as a_ctx, contextlib.AsyncExitStack() as b_ctx:
        a = await a_ctx.enter_async_context(running(kube, identity="a", **lease))
        await until(lambda: a.leading, what="a leads")
        b = await b_ctx.enter_async_context(running(kube, identity="b", **lease))
        await create_gang(kube, "first", 2)
        await until(lambda: bound_at_least(kube, "first-", 2), what="first gang bound")
        assert a.cycles > 0 and b.cycles == 0 and not b.leading
        await asyncio.sleep(30)
        assert not b.leading  # the leader keeps renewing
        await a_ctx.aclose()  # SIGTERM to the leader: it stops scheduling and releases the lease
        await until(lambda: b.leading, timeout_s=5, what="b takes over after the release")
        await create_gang(kube, "second", 2)
        await until(lambda: bound_at_least(kube, "second-", 2), what="second gang bound by the new leader")
        assert b.cycles > 0


@pytest.mark.looptime
async def test_a_plan_whose_binds_fail_moves_the_roots_parked_behind_it(k8s, kube: KubeClient) -> None:
    """``a`` holds the node while its first bind is in flight, so ``b`` finds no room and is parked; that bind is
    refused (409), ``a``'s assumptions are given back with no watch event, and ``b`` is tried again at once rather
    than after ``--unschedulable-retry-s``: it takes the room."""
    refused: list[str] = []

    async def react(request: kmock.Request) -> Any:
        if request.name == "a-0" and not refused:
            refused.append(request.name)
            await asyncio.sleep(2)
            return kmock.KubernetesError(status=409, reason="Conflict", message="the object has been modified")
        return await k8s._serve_binding(request)

    k8s['post', kmock.subresource('binding')] << react
    await create_node(kube, "n0", cpu="4")
    await create_gang(kube, "a", 4, cpu="1")
    async with running(kube, bind_concurrency=1):
        await until(lambda: refused, what="a's first bind sent")
        await create_gang(kube, "b", 4, cpu="1")
        placed = await until(lambda: bound_at_least(kube, "b-", 4), what="b bound after a's plan failed")
        assert set(placed.values()) == {"n0"} and await bound(kube, "a-") == {}


@pytest.mark.looptime
async def test_a_gang_parked_for_its_affinity_binds_when_the_pod_it_needs_is_placed(k8s, kube: KubeClient) -> None:
    """``b`` needs a pod labelled ``app=ps`` on its node and is parked; ``a``'s pod, with that label, is placed by the
    same scheduler. Assuming ``a``'s plan is the event that moves ``b`` (the watch's later confirmation of the bind
    changes nothing the scheduler reads), so ``b`` binds long before ``--unschedulable-retry-s`` (300 s)."""
    hostname = "kubernetes.io/hostname"
    await create_node(kube, "n0", cpu="4", labels={hostname: "n0"})
    await kube.create(PODGROUPS, NS, podgroup("b", 1))
    needs = pod("b-0", "b")
    needs["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "ps"}}, "topologyKey": hostname}]}}
    await kube.create(PODS, NS, needs)
    async with running(kube) as sched:
        await until(lambda: sched.queue.parked(), what="b parked")
        await kube.create(PODGROUPS, NS, podgroup("a", 1))
        server = pod("a-0", "a")
        server["metadata"]["labels"] = {"app": "ps"}
        await kube.create(PODS, NS, server)
        await until(lambda: bound_at_least(kube, "b-", 1), timeout_s=60, what="b bound after a's pod was placed")
