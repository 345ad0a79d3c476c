"""Gang repair: a partial gang is completed, or after ``--gang-repair-timeout-s`` torn down whole
(``disruptionMode: all``) or reported (``single``); a replacement member never goes back to a failed node.

Replays bug-log B08 (a gang left below minCount for good after a member's node went away) and B19 (a
half-bound gang whose room a higher-priority gang took keeps its other members forever).
"""

from __future__ import annotations

import asyncio
import datetime
import re
from typing import Any

import kmock
import pytest

from scheduler.client.kube import EVENTS, NODES, PODGROUPS, PODS, KubeClient
from tests.integration.apiserver import ApiServer
from tests.integration.lagging import lagging_server
from tests.integration.livekit import NS, bound, bound_at_least, create_gang, create_node, pod, podgroup, running, until
from tests.integration.test_partial_gangs import Refuse
from tests.integration.test_preemption import create_gang as create_preempting_gang
from tests.integration.test_preemption import create_running_gang, terminating


async def group_condition(kube: KubeClient, group: str, type_: str) -> dict[str, Any] | None:
    obj = await kube.get(PODGROUPS, NS, group)
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == type_), None)


async def group_events(kube: KubeClient, group: str, reason: str) -> list[dict[str, Any]]:
    items, _ = await kube.list(EVENTS, NS)
    return [e for e in items if e.get("reason") == reason and e["regarding"]["name"] == group
            and e["regarding"]["kind"] == "PodGroup"]


async def create_mode_gang(kube: KubeClient, name: str, n: int, mode: str, cpu: str = "1") -> None:
    group = podgroup(name, n)
    group["spec"]["disruptionMode"] = {mode: {}}
    await kube.create(PODGROUPS, NS, group)
    for i in range(n):
        await kube.create(PODS, NS, pod(f"{name}-{i}", name, cpu=cpu))


def value(sched: Any, name: str, **labels: str) -> float:
    for family in sched.metrics.registry.collect():
        for s in family.samples:
            if s.name == name and s.labels == labels:
                return float(s.value)
    raise KeyError(name)


@pytest.mark.looptime
async def test_a_partial_all_gang_is_torn_down_whole_after_the_timeout(k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="8")
    await create_mode_gang(kube, "a", 8, "all")
    Refuse("a-7").on_binds(k8s)  # its eighth member never binds: 7/8 for good
    async with running(kube, gang_repair_timeout_s=60.0) as sched:
        await until(lambda: bound_at_least(kube, "a-", 7), what="7 of 8 bound")
        below = await until(lambda: group_condition(kube, "a", "GangBelowMin"), what="GangBelowMin")
        assert (below["status"], below["reason"]) == ("True", "BelowMinCount")
        assert below["message"] == "gang a: 7/8 members bound (minCount 8)"
        assert value(sched, "gang_scheduler_gangs_below_min") == 1
        await asyncio.sleep(30)
        assert len(await bound(kube, "a-")) == 7  # not before the timeout
        await until(lambda: _all_gone(kube), timeout_s=60, what="the 7 bound members evicted")
        [event] = await until(lambda: group_events(kube, "a", "GangTornDown"), what="the GangTornDown Event")
        assert "7/8 members bound (minCount 8) for 60 s" in event["note"]
        assert value(sched, "gang_scheduler_gang_repairs_total", result="torn_down") == 1
        after = await until(lambda: _reason(kube, "a", "NoMembersBound"), what="GangBelowMin cleared")
        assert after["status"] == "False"


async def _all_gone(kube: KubeClient) -> bool:
    items, _ = await kube.list(PODS, NS)
    return not any(p["metadata"]["name"] != "a-7" and p["metadata"]["name"].startswith("a-") for p in items)


async def _reason(kube: KubeClient, group: str, reason: str) -> dict[str, Any] | None:
    cond = await group_condition(kube, group, "GangBelowMin")
    return cond if cond is not None and cond["reason"] == reason else None


@pytest.mark.looptime
async def test_a_partial_single_gang_is_reported_not_torn_down(k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="8")
    await create_mode_gang(kube, "s", 8, "single")
    Refuse("s-7").on_binds(k8s)
    async with running(kube, gang_repair_timeout_s=30.0) as sched:
        await until(lambda: bound_at_least(kube, "s-", 7), what="7 of 8 bound")
        [event] = await until(lambda: group_events(kube, "s", "GangBelowMin"), timeout_s=60, what="the Event")
        assert "disruptionMode single: left as it is" in event["note"]
        assert event["note"].endswith("it is completed when room appears)")  # s-7 exists, pending
        assert value(sched, "gang_scheduler_gang_repairs_total", result="reported") == 1
        await asyncio.sleep(10)
        assert len(await bound(kube, "s-")) == 7  # nothing evicted
        assert (await group_condition(kube, "s", "GangBelowMin"))["status"] == "True"


@pytest.mark.looptime
async def test_a_partial_gang_whose_missing_members_do_not_exist_says_so(k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="8")
    await create_mode_gang(kube, "s", 3, "single")
    async with running(kube, gang_repair_timeout_s=30.0):
        await until(lambda: bound_at_least(kube, "s-", 3), what="the gang bound")
        await kube.delete(PODS, NS, "s-2")  # its controller does not make it again
        [event] = await until(lambda: group_events(kube, "s", "GangBelowMin"), timeout_s=60, what="the Event")
        assert event["note"].startswith("gang s: 2/3 members bound (minCount 3) for 30 s;")
        assert event["note"].endswith("1 member(s) do not exist: it is completed once they are created and fit)")


@pytest.mark.looptime
async def test_a_lost_member_is_replaced_off_the_failed_node_and_the_gang_counts_as_repaired(
        k8s, kube: KubeClient) -> None:
    for name in ("n0", "n1", "n2"):
        await create_node(kube, name, cpu="2")
    await create_gang(kube, "g", 4, cpu="1")
    async with running(kube) as sched:
        placed = await until(lambda: bound_at_least(kube, "g-", 4), what="gang bound")
        lost = next(name for name, node in placed.items() if node == "n1")
        # n1 fails: not ready, its member deleted (the node lifecycle controller's eviction)
        await kube.patch(NODES, None, "n1", {"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}},
                         sub="status")
        await kube.delete(PODS, NS, lost)
        await until(lambda: _reason(kube, "g", "BelowMinCount"), what="GangBelowMin while a member is missing")
        await kube.create(PODS, NS, pod("g-new", "g"))  # the workload controller's replacement
        await until(lambda: bound_at_least(kube, "g-new", 1), what="the replacement bound")
        assert (await bound(kube, "g-new"))["g-new"] != "n1"
        await until(lambda: _reason(kube, "g", "Satisfied"), what="GangBelowMin False once whole again")
        assert value(sched, "gang_scheduler_gang_repairs_total", result="completed") == 1


@pytest.mark.looptime
async def test_a_partial_gang_whose_members_are_all_deleted_shows_no_member_bound(k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="8")
    await create_mode_gang(kube, "s", 3, "single")
    async with running(kube, gang_repair_timeout_s=300.0) as sched:
        await until(lambda: bound_at_least(kube, "s-", 3), what="the gang bound")
        await kube.delete(PODS, NS, "s-2")
        await until(lambda: _reason(kube, "s", "BelowMinCount"), what="GangBelowMin while a member is missing")
        for name in ("s-0", "s-1"):
            await kube.delete(PODS, NS, name)
        after = await until(lambda: _reason(kube, "s", "NoMembersBound"), what="GangBelowMin cleared")
        assert after["status"] == "False"
        assert value(sched, "gang_scheduler_gangs_below_min") == 0


@pytest.mark.looptime
async def test_gang_below_min_is_cleared_when_the_tree_empties_before_the_watch_shows_it() -> None:
    """A PATCH is answered before its watch event comes (a real API server's watch lags its writes): the gang's
    last members deleted in between, the judgement of the emptied tree sees no GangBelowMin True to clear — the
    True that comes afterwards is judged again, and cleared (NoMembersBound)."""
    async with lagging_server(lag_s=(0.0, 0.0)) as srv:
        kube = KubeClient.for_host(str(srv.url))
        try:
            await create_node(kube, "n0", cpu="8")
            await create_gang(kube, "g", 4, cpu="1")
            async with running(kube):
                await until(lambda: bound_at_least(kube, "g-", 4), what="the gang bound")
                await asyncio.sleep(1)
                srv.lag_s, srv.lagged = (3.0, 3.0), frozenset({"podgroups"})
                await kube.delete(PODS, NS, "g-0", body={"gracePeriodSeconds": 0})
                below = await until(lambda: _reason(kube, "g", "BelowMinCount"), what="GangBelowMin True written")
                assert below["message"] == "gang g: 3/4 members bound (minCount 4)"
                for name in ("g-1", "g-2", "g-3"):  # before the watch shows the True
                    await kube.delete(PODS, NS, name, body={"gracePeriodSeconds": 0})
                after = await until(lambda: _reason(kube, "g", "NoMembersBound"), timeout_s=30,
                                    what="GangBelowMin cleared once no member is left")
                assert after["status"] == "False"
        finally:
            await kube.close()


@pytest.mark.looptime
async def test_the_timeout_event_says_how_long_the_gang_has_been_below_min_across_a_restart(
        k8s, kube: KubeClient) -> None:
    """A gang found partial at start whose ``GangBelowMin`` has been True for 150 s: its clock starts there, so the
    timeout comes at once and its Event says 150 s, not the timeout."""
    await create_node(kube, "n0", cpu="8")
    group = podgroup("s", 3)
    group["spec"]["disruptionMode"] = {"single": {}}
    await kube.create(PODGROUPS, NS, group)
    for i in range(2):
        await kube.create(PODS, NS, pod(f"s-{i}", "s", node_name="n0"))  # bound before the restart; s-2 is gone
    since = (datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=150)).strftime("%Y-%m-%dT%H:%M:%SZ")
    await kube.patch(PODGROUPS, NS, "s", {"status": {"conditions": [{
        "type": "GangBelowMin", "status": "True", "reason": "BelowMinCount", "lastTransitionTime": since,
        "message": "gang s: 2/3 members bound (minCount 3)", "observedGeneration": 1}]}}, sub="status")
    async with running(kube, gang_repair_timeout_s=20.0):
        [event] = await until(lambda: group_events(kube, "s", "GangBelowMin"), timeout_s=10, what="the Event")
        assert re.match(r"gang s: 2/3 members bound \(minCount 3\) for 15[0-2] s;", event["note"]), event["note"]


@pytest.mark.looptime
async def test_a_gang_our_preemption_evicts_whole_is_not_reported_partial_while_its_members_go(
        k8s: ApiServer, kube: KubeClient, caplog: pytest.LogCaptureFixture) -> None:
    """An ``all`` gang preempted whole: one victim's DELETE answers 5 s after the others, so for 5 s three members
    are gone and one still runs. That is our own eviction under way, not a gang that lost members: no ``Partial``
    warning, no ``GangBelowMin`` on the group, and the gang-repair timeout does not act on it."""
    await create_node(kube, "n0", cpu="4")
    low = podgroup("low", 4, priority=0)
    low["spec"]["disruptionMode"] = {"all": {}}
    await kube.create(PODGROUPS, NS, low)
    for i in range(4):
        await kube.create(PODS, NS, pod(f"low-{i}", "low", cpu="1"))

    async def slow_delete(request: kmock.Request) -> Any:
        if request.name == "low-3":
            await asyncio.sleep(5)
        return await k8s._serve_delete(request)

    async with running(kube, gang_repair_timeout_s=2.0) as sched:
        await until(lambda: bound_at_least(kube, "low-", 4), what="the low gang bound")
        k8s["delete", kmock.resource("v1/pods")] << slow_delete
        high = podgroup("high", 4, priority=100)
        await kube.create(PODGROUPS, NS, high)
        for i in range(4):
            await kube.create(PODS, NS, pod(f"high-{i}", "high", cpu="1"))
        await until(lambda: bound_at_least(kube, "high-", 4), timeout_s=60, what="the preemptor bound")
        history = k8s.objects["scheduling.k8s.io/v1beta1/podgroups", NS, "low"].history
        shown = [c for version in history for c in (version.get("status") or {}).get("conditions") or []
                 if c["type"] == "GangBelowMin"]
        assert shown == []
        assert not [r for r in caplog.records if "root=PodGroup ml/low result=Partial" in r.getMessage()]
        assert value(sched, "gang_scheduler_gang_repairs_total", result="torn_down") == 0


@pytest.mark.looptime
async def test_a_group_outside_the_namespaces_served_is_never_written(k8s: ApiServer, kube: KubeClient) -> None:
    """A partial gang whose ``GangBelowMin`` another scheduler (of its namespace) wrote: a scheduler serving other
    namespaces leaves it as it is."""
    await create_node(kube, "n0", cpu="8")
    await kube.create(PODGROUPS, NS, podgroup("s", 3))
    for i in range(2):
        await kube.create(PODS, NS, pod(f"s-{i}", "s", node_name="n0"))
    theirs = {"type": "GangBelowMin", "status": "True", "reason": "BelowMinCount", "message": "written by theirs",
              "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1}
    await kube.patch(PODGROUPS, NS, "s", {"status": {"conditions": [theirs]}}, sub="status")
    async with running(kube, namespaces=["elsewhere"]):
        await asyncio.sleep(20)
        for i in range(2):  # its tree empties: still not this scheduler's to judge
            await kube.delete(PODS, NS, f"s-{i}")
        await asyncio.sleep(20)
    shown = (await kube.get(PODGROUPS, NS, "s"))["status"]["conditions"]
    assert [c["message"] for c in shown if c["type"] == "GangBelowMin"] == ["written by theirs"]


@pytest.mark.looptime
async def test_a_gang_a_preemption_leaves_below_min_is_reported_once_its_victim_terminates(
        k8s: ApiServer, kube: KubeClient) -> None:
    """``high`` preempts one member of the single-mode gang ``g`` (minCount 2); the victim stays terminating (a
    finalizer no one removes) and ``high`` binds on a node added meanwhile. ``g`` runs 1 of 2: a partial gang, shown
    as one once its member is going — not hidden while the victim lingers."""
    await create_node(kube, "n0", cpu="2")
    await create_running_gang(kube, "g", 2, 2, "n0")
    await create_preempting_gang(kube, "high", 1, priority=100)
    async with running(kube, gang_repair_timeout_s=3600.0):
        await until(lambda: _terminating_member(kube, "g", 2), what="a member of g deleted")
        await create_node(kube, "n1", cpu="1")
        await until(lambda: bound_at_least(kube, "high-", 1), timeout_s=60, what="high bound")
        below = await until(lambda: _reason(kube, "g", "BelowMinCount"), timeout_s=60, what="g shown partial")
        assert below["status"] == "True"


@pytest.mark.looptime
async def test_gang_below_min_stays_while_our_preemption_takes_one_more_member(k8s: ApiServer,
                                                                               kube: KubeClient) -> None:
    """``g`` (minCount 4) runs 3: ``GangBelowMin=True``. ``high`` preempts one of them, its DELETE answered 5 s late:
    while it goes the condition is left as shown — never ``False/NoMembersBound`` with members still bound."""
    await create_node(kube, "n0", cpu="3")
    await kube.create(PODGROUPS, NS, podgroup("g", 4, priority=1))
    for i in range(3):
        await kube.create(PODS, NS, pod(f"g-{i}", "g", node_name="n0"))

    async def slow_delete(request: kmock.Request) -> Any:
        await asyncio.sleep(5)
        return await k8s._serve_delete(request)

    async with running(kube, gang_repair_timeout_s=3600.0):
        await until(lambda: _reason(kube, "g", "BelowMinCount"), what="g shown partial")
        k8s["delete", kmock.resource("v1/pods")] << slow_delete
        await create_preempting_gang(kube, "high", 1, priority=100)
        await until(lambda: bound_at_least(kube, "high-", 1), timeout_s=120, what="high bound")
        await asyncio.sleep(5)
    history = k8s.objects["scheduling.k8s.io/v1beta1/podgroups", NS, "g"].history
    shown = [(c["status"], c["reason"]) for version in history
             for c in (version.get("status") or {}).get("conditions") or [] if c["type"] == "GangBelowMin"]
    assert ("False", "NoMembersBound") not in shown, shown


async def _terminating_member(kube: KubeClient, group: str, n: int) -> bool:
    return any([await terminating(kube, f"{group}-{i}") for i in range(n)])
