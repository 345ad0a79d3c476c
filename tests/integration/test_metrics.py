"""``/metrics`` of the live loop against the emulated API server: scraped over HTTP, counters checked."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import aiohttp
import kmock
import pytest
from prometheus_client.parser import text_string_to_metric_families

from scheduler.client.kube import PODGROUPS, PODS, KubeClient
from scheduler.live.driver import Scheduler
from tests.integration.livekit import NS, create_gang, create_node, pod, podgroup, running, until

PROFILE = "gang-scheduler"
RESOURCES = (("", "pods"), ("", "nodes"), ("scheduling.k8s.io", "podgroups"),
             ("scheduling.k8s.io", "compositepodgroups"), ("scheduling.k8s.io", "priorityclasses"))
"""The APIs watched that these tests' server serves, as (API group, plural)."""

Scrape = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(sched: Scheduler) -> Scrape:
    """GET /metrics from the scheduler's health server and parse the text format."""
    assert sched.health_port
    async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{sched.health_port}/metrics") as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/plain")
        text = await resp.text()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def get(scraped: Scrape, name: str, **labels: str) -> float:
    return scraped[(name, frozenset(labels.items()))]


def attempts(result: str) -> Callable[[Scrape], float]:
    return lambda s: get(s, "scheduler_schedule_attempts_total", result=result, profile=PROFILE)


def group_attempts(result: str) -> Callable[[Scrape], float]:
    return lambda s: get(s, "scheduler_podgroup_schedule_attempts_total", result=result, profile=PROFILE)


async def scrape_until(sched: Scheduler, check: Callable[[Scrape], bool], what: str, timeout_s: float = 30) -> Scrape:
    async def probe() -> Scrape | None:
        scraped = await scrape(sched)
        return scraped if check(scraped) else None

    return await until(probe, timeout_s, what)  # type: ignore[no-any-return]


@pytest.mark.looptime
async def test_gang_that_fits_counts_three_pods_and_one_group_scheduled(k8s, kube: KubeClient) -> None:
    for i in range(2):
        await create_node(kube, f"n{i}", cpu="4")
    await create_gang(kube, "g", 3, cpu="1")
    async with running(kube) as sched:
        s = await scrape_until(sched, lambda s: attempts("scheduled")(s) == 3, "3 pods scheduled")
        assert group_attempts("scheduled")(s) == 1
        assert attempts("unschedulable")(s) == attempts("error")(s) == 0
        assert group_attempts("unschedulable")(s) == group_attempts("error")(s) == 0
        assert get(s, "scheduler_podgroup_scheduling_attempt_duration_seconds_count",
                   result="scheduled", profile=PROFILE) == 1
        assert get(s, "scheduler_podgroup_scheduling_algorithm_duration_seconds_count") == 1
        assert get(s, "scheduler_scheduling_attempt_duration_seconds_count", result="scheduled", profile=PROFILE) == 3
        assert (get(s, "gang_scheduler_gang_size_pods_count"), get(s, "gang_scheduler_gang_size_pods_sum")) == (1, 3)
        assert get(s, "gang_scheduler_solver_attempts_count", result="scheduled") == 1
        assert get(s, "gang_scheduler_podgroup_creation_to_bound_seconds_count") == 1
        assert sum(get(s, "gang_scheduler_bind_failures_total", reason=r)
                   for r in ("conflict", "not_found", "server_error", "other")) == 0
        assert get(s, "gang_scheduler_is_leader") == 1  # leader election off: this replica schedules
        for group, res in RESOURCES:
            assert get(s, "gang_scheduler_informer_synced", group=group, resource=res) == 1, res
            assert get(s, "gang_scheduler_informer_relists_total", group=group, resource=res) == 0, res
        s = await scrape_until(sched, lambda s: get(s, "scheduler_pending_pods", queue="active") == 0,
                               "queue gauges after the cycle")
        assert all(get(s, "scheduler_pending_pods", queue=q) == 0
                   for q in ("active", "backoff", "unschedulable", "gated", "incomplete"))


@pytest.mark.looptime
async def test_gang_that_does_not_fit_counts_unschedulable_then_scheduled_when_a_node_arrives(
        k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="4")
    await create_gang(kube, "g", 6, cpu="1")
    async with running(kube) as sched:
        s = await scrape_until(sched, lambda s: group_attempts("unschedulable")(s) >= 1, "an unschedulable attempt")
        tries = group_attempts("unschedulable")(s)
        assert attempts("unschedulable")(s) == 6 * tries  # every pending member, every attempt
        assert attempts("scheduled")(s) == group_attempts("scheduled")(s) == 0
        assert get(s, "gang_scheduler_solver_attempts_count", result="unschedulable") == tries
        assert get(s, "scheduler_pending_pods", queue="unschedulable") == 6  # parked until an event may help
        assert get(s, "scheduler_queued_entities", queue="unschedulable", type="podgroup") == 1
        assert get(s, "scheduler_pending_pods", queue="backoff") == 0
        assert get(s, "gang_scheduler_gang_size_pods_count") == 0
        await create_node(kube, "n1", cpu="4")
        s = await scrape_until(sched, lambda s: attempts("scheduled")(s) == 6, "6 pods scheduled after a node arrived")
        assert group_attempts("scheduled")(s) == 1
        assert get(s, "gang_scheduler_podgroup_creation_to_bound_seconds_count") == 1
        s = await scrape_until(sched, lambda s: get(s, "scheduler_pending_pods", queue="unschedulable") == 0,
                               "unschedulable queue drained")
        assert get(s, "scheduler_queued_entities", queue="unschedulable", type="podgroup") == 0


@pytest.mark.looptime
async def test_waiting_gangs_are_gated_and_pods_without_their_podgroup_incomplete(k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="8")
    await kube.create(PODGROUPS, NS, podgroup("w", 4))
    for i in range(2):
        await kube.create(PODS, NS, pod(f"w-{i}", "w"))
    for i in range(3):
        await kube.create(PODS, NS, pod(f"orphan-{i}", "nope"))
    async with running(kube) as sched:
        s = await scrape_until(sched, lambda s: get(s, "scheduler_pending_pods", queue="gated") == 2, "gated pods")
        assert get(s, "scheduler_queued_entities", queue="gated", type="podgroup") == 1
        assert get(s, "scheduler_pending_pods", queue="incomplete") == 3
        assert attempts("unschedulable")(s) == 0  # never tried
        assert group_attempts("unschedulable")(s) == 0


@pytest.mark.looptime
async def test_bind_conflict_counts_error_and_reason_then_the_retry_schedules(k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="8")
    await create_gang(kube, "g", 4, cpu="1")
    view = k8s['post v1/pods', kmock.subresource('binding'), kmock.name('g-0')]
    n = len(view)
    view[n:n + 1] << 409 << {"kind": "Status", "code": 409, "reason": "Conflict", "message": "injected conflict"}
    async with running(kube, bind_concurrency=1) as sched:
        s = await scrape_until(sched, lambda s: attempts("scheduled")(s) == 4, "the requeued root scheduled")
        assert get(s, "gang_scheduler_bind_failures_total", reason="conflict") == 1
        assert group_attempts("error")(s) == 1
        assert group_attempts("scheduled")(s) == 1
        assert attempts("error")(s) == 4  # g-0 failed, the rest of the plan was not attempted
        assert get(s, "gang_scheduler_podgroup_creation_to_bound_seconds_count") == 1  # only the full bind


@pytest.mark.looptime
async def test_leader_gauge_is_one_on_the_leader_and_zero_on_the_standby(k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="8")
    lease = {"leader_elect": True, "lease_namespace": "kube-system", "lease_duration_s": 15,
             "renew_deadline_s": 10, "retry_period_s": 2}
    async with contextlib.AsyncExitStack() as stack:
        a = await stack.enter_async_context(running(kube, identity="a", **lease))
        await until(lambda: a.leading, what="a leads")
        b = await stack.enter_async_context(running(kube, identity="b", **lease))
        await create_gang(kube, "g", 2)
        s = await scrape_until(a, lambda s: attempts("scheduled")(s) == 2, "the leader scheduled the gang")
        assert get(s, "gang_scheduler_is_leader") == 1
        s = await scrape(b)
        assert get(s, "gang_scheduler_is_leader") == 0
        assert attempts("scheduled")(s) == 0
        # standbys keep their caches warm
        assert get(s, "gang_scheduler_informer_synced", group="", resource="pods") == 1


@pytest.mark.looptime
async def test_watch_410_counts_a_relist(k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="4")
    async with running(kube) as sched:
        s = await scrape(sched)
        assert get(s, "gang_scheduler_informer_relists_total", group="", resource="pods") == 0
        informer = next(i for i in sched.watches.informers if i.resource is PODS)
        lists = informer.relists
        k8s.compact()  # history dropped: resuming the watch gets ERROR 410 and the informer re-lists
        # wait on the informer (cheap) rather than scraping every 50 ms through the 300 s watch timeout
        await until(lambda: informer.relists > lists, timeout_s=400, what="a pods re-list")
        s = await scrape(sched)
        assert get(s, "gang_scheduler_informer_relists_total", group="", resource="pods") == informer.relists - 1 >= 1
        assert get(s, "gang_scheduler_informer_synced", group="", resource="pods") == 1
