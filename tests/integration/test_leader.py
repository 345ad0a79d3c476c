"""Leader election (``scheduler.live.leader``) against the kmock ``ApiServer`` on a fake loop clock.

Every test runs on looptime's clock, so lease durations of 15 s cost milliseconds, and time
figures are exact: the emulator answers in zero loop time. ``k8s`` and ``kube`` come from
``conftest.py``; each elector gets its own client, as separate replicas would.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable

import kmock
import pytest
import pytest_asyncio

from scheduler.client.kube import JSON, LEASES, PODS, KubeClient, Lane, NotLeading
from scheduler.live.leader import LeaderElector
from tests.integration.apiserver import ApiServer

NS, NAME = "kube-system", "gang-scheduler"
LEASE_PATH = "coordination.k8s.io/v1/leases"
LEASE_S, RENEW_S, RETRY_S = 15.0, 10.0, 2.0  # the defaults, spelled out for the timing asserts

Start = Callable[[str], LeaderElector]


@pytest_asyncio.fixture
async def start(k8s: ApiServer) -> AsyncIterator[Start]:
    """``start(identity)``: an elector with its own client, its ``run`` started as a named task.

    Teardown runs after looptime has switched the loop back to the real clock, so a still-running
    leader sees its renew deadline long passed and logs "lost leadership" before it is cancelled.
    """
    running: list[tuple[LeaderElector, asyncio.Task[None]]] = []

    def _start(identity: str) -> LeaderElector:
        elector = LeaderElector(KubeClient.for_host(str(k8s.url)), NS, NAME, identity)
        running.append((elector, asyncio.create_task(elector.run(), name=f"leader-elector-{identity}")))
        return elector

    yield _start
    for elector, task in running:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await elector.kube.close()


def task_of(elector: LeaderElector) -> asyncio.Task[None]:
    (task,) = [t for t in asyncio.all_tasks() if t.get_name() == f"leader-elector-{elector.identity}"]
    return task


async def stop(elector: LeaderElector) -> None:
    """Cancel the elector's ``run`` as a crashed process would stop (no release)."""
    task = task_of(elector)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def lease(kube: KubeClient) -> JSON:
    return await kube.get(LEASES, NS, NAME)


def subset(spec: JSON, **expected: object) -> bool:
    return {k: spec.get(k) for k in expected} == expected


def now() -> float:
    return asyncio.get_running_loop().time()


async def settle(*electors: LeaderElector) -> None:
    """Wait until every elector has read the lease and one of them leads (within 30 s)."""
    async with asyncio.timeout(30):
        while not (all(e.state_known for e in electors) and any(e.is_leader for e in electors)):
            await asyncio.sleep(0.1)


@pytest.mark.looptime
async def test_exactly_one_of_two_leads_and_the_follower_waits_while_the_leader_renews(
        start: Start, kube: KubeClient, k8s: ApiServer) -> None:
    a, b = start("a"), start("b")
    await settle(a, b)
    leader, follower = (a, b) if a.is_leader else (b, a)
    assert [a.is_leader, b.is_leader].count(True) == 1
    assert follower.holder == leader.identity
    first = await lease(kube)
    assert subset(first["spec"], holderIdentity=leader.identity, leaseDurationSeconds=15, leaseTransitions=0)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", first["spec"]["renewTime"])  # MicroTime

    puts = k8s[kmock.method.PUT, kmock.resource(LEASE_PATH)]
    n = len(puts)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(follower.leading.wait(), timeout=60)
    assert leader.is_leader and not follower.is_leader
    assert len(puts) - n == 60 / RETRY_S  # one renewal every retry period, nothing else written
    last = await lease(kube)
    assert last["spec"]["holderIdentity"] == leader.identity
    assert last["spec"]["leaseTransitions"] == 0
    assert last["spec"]["acquireTime"] == first["spec"]["acquireTime"]
    assert last["spec"]["renewTime"] > first["spec"]["renewTime"]


@pytest.mark.looptime
async def test_follower_takes_over_about_a_lease_duration_after_the_leader_stops_renewing(
        start: Start, kube: KubeClient) -> None:
    a = start("a")
    await settle(a)
    b = start("b")
    await settle(a, b)
    await asyncio.sleep(7)  # out of phase with the first renewal
    assert a.renewed_at is not None
    await stop(a)
    stopped_at, last_renewal = now(), a.renewed_at
    assert not a.is_leader  # a stopped elector no longer claims leadership
    await b.leading.wait()
    taken_at = now()
    # The follower counts from when it saw the last renewal, which is never before it happened.
    assert LEASE_S <= taken_at - last_renewal <= LEASE_S + 2 * RETRY_S
    assert taken_at - stopped_at <= LEASE_S + 2 * RETRY_S
    spec = (await lease(kube))["spec"]
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1


@pytest.mark.looptime
async def test_release_hands_over_within_one_retry_period(start: Start, kube: KubeClient,
                                                          k8s: ApiServer) -> None:
    a = start("a")
    await settle(a)
    b = start("b")
    await settle(a, b)
    await asyncio.sleep(7)
    await stop(a)
    await a.release()
    released_at = now()
    assert not a.is_leader
    assert subset((await lease(kube))["spec"], holderIdentity="", leaseDurationSeconds=1, leaseTransitions=0)
    await b.leading.wait()
    assert now() - released_at <= RETRY_S + 0.01
    spec = (await lease(kube))["spec"]
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1


@pytest.mark.looptime
async def test_release_by_a_follower_leaves_the_lease_alone(start: Start, k8s: ApiServer) -> None:
    a = start("a")
    await settle(a)
    b = start("b")
    await settle(a, b)
    puts = k8s[kmock.method.PUT, kmock.resource(LEASE_PATH)]
    await stop(b)
    n = len(puts)
    await b.release()
    assert len(puts) == n
    assert a.is_leader


@pytest.mark.looptime
async def test_leader_stops_leading_by_the_renew_deadline_when_renewals_fail_then_reacquires(
        start: Start, k8s: ApiServer, kube: KubeClient) -> None:
    a = start("a")
    await settle(a)
    await asyncio.sleep(5)
    puts = k8s[kmock.method.PUT, kmock.resource(LEASE_PATH)]
    n = len(puts)
    puts[n:n + 5] << 500 << {"kind": "Status", "code": 500, "reason": "InternalError", "message": "etcd down"}
    failing_from, last_renewal = now(), a.renewed_at
    assert last_renewal is not None
    await a.wait_until_not_leading()
    lost_at = now()
    assert lost_at - failing_from <= RENEW_S
    assert lost_at - last_renewal == pytest.approx(RENEW_S)  # not at the first failure, not late
    assert len(puts) - n == 4  # failed renewals at +2, +4, +6 and +8 s
    assert not task_of(a).done()
    # Still the recorded holder and nobody else competes: it renews again once writes work,
    # without a new transition.
    await asyncio.wait_for(a.leading.wait(), timeout=3 * RETRY_S)
    spec = (await lease(kube))["spec"]
    assert spec["holderIdentity"] == "a" and spec["leaseTransitions"] == 0


@pytest.mark.looptime
async def test_errors_on_get_are_retried_without_crashing_run(start: Start, k8s: ApiServer) -> None:
    gets = k8s[kmock.method.GET, kmock.resource(LEASE_PATH)]
    gets[0:3] << 500 << {"kind": "Status", "code": 500, "reason": "InternalError", "message": "try later"}
    t0 = now()
    a = start("a")
    await asyncio.sleep(RETRY_S)
    assert not a.state_known and not a.is_leader and not task_of(a).done()
    await asyncio.wait_for(a.leading.wait(), timeout=10 * RETRY_S)
    assert now() - t0 == pytest.approx(3 * RETRY_S)  # three failed rounds, then create
    assert a.state_known and len(gets) == 4


@pytest.mark.looptime
async def test_unreachable_api_server_is_retried_without_crashing_run() -> None:
    kube = KubeClient.for_host("http://127.0.0.1:9")  # discard port: connection refused
    elector = LeaderElector(kube, NS, NAME, "a")
    task = asyncio.create_task(elector.run(), name="leader-elector-unreachable")
    try:
        await asyncio.sleep(30)
        assert not task.done() and not elector.state_known and not elector.is_leader
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await kube.close()


@pytest.mark.looptime
async def test_two_candidates_for_a_released_lease_only_one_leads(start: Start, kube: KubeClient) -> None:
    await kube.create(LEASES, NS, {"metadata": {"name": NAME}, "spec": {
        "holderIdentity": "", "leaseDurationSeconds": 15, "leaseTransitions": 4}})
    a, b = start("a"), start("b")
    await settle(a, b)
    assert [a.is_leader, b.is_leader].count(True) == 1
    spec = (await lease(kube))["spec"]
    assert spec["holderIdentity"] in {"a", "b"} and spec["leaseTransitions"] == 5


@pytest.mark.looptime
async def test_a_takeover_that_gets_a_conflict_stays_follower(start: Start, kube: KubeClient,
                                                              k8s: ApiServer) -> None:
    await kube.create(LEASES, NS, {"metadata": {"name": NAME}, "spec": {
        "holderIdentity": "", "leaseDurationSeconds": 15, "leaseTransitions": 4}})
    puts = k8s[kmock.method.PUT, kmock.resource(LEASE_PATH)]
    n = len(puts)  # another candidate's write wins the race against our next PUT:
    puts[n:n + 1] << 409 << {"kind": "Status", "code": 409, "reason": "Conflict", "message": "modified"}
    t0 = now()
    a = start("a")
    await asyncio.sleep(RETRY_S / 2)
    assert a.state_known and not a.is_leader and not task_of(a).done()
    await a.leading.wait()  # the next round reads the lease again and, here, finds it still free
    assert now() - t0 == pytest.approx(RETRY_S)
    assert len(puts) - n == 2
    assert (await lease(kube))["spec"]["leaseTransitions"] == 5


@pytest.mark.looptime
async def test_a_lease_held_elsewhere_is_taken_only_after_it_stops_changing(
        start: Start, kube: KubeClient) -> None:
    await kube.create(LEASES, NS, {"metadata": {"name": NAME}, "spec": {
        "holderIdentity": "gone", "leaseDurationSeconds": 15, "renewTime": "2000-01-01T00:00:00.000000Z"}})
    t0 = now()
    a = start("a")
    await settle(a)
    # An old renewTime does not count: expiry is judged by our own clock from the first read.
    assert now() - t0 == pytest.approx(LEASE_S + RETRY_S / 2, abs=RETRY_S / 2)
    assert (await lease(kube))["spec"]["leaseTransitions"] == 1


@pytest.mark.parametrize(("lease_s", "renew_s", "retry_s"), [
    pytest.param(10.0, 10.0, 2.0, id="renew deadline not below the lease duration"),
    pytest.param(15.0, 2.0, 2.0, id="retry period not below the renew deadline"),
    pytest.param(15.0, 10.0, 0.0, id="no retry period"),
])
async def test_settings_that_could_let_two_replicas_lead_are_rejected(lease_s: float, renew_s: float,
                                                                      retry_s: float) -> None:
    kube = KubeClient.for_host("http://127.0.0.1:9")
    try:
        with pytest.raises(ValueError, match="lease_duration_s"):
            LeaderElector(kube, NS, NAME, "a", lease_duration_s=lease_s, renew_deadline_s=renew_s,
                          retry_period_s=retry_s)
    finally:
        await kube.close()


@pytest.mark.looptime
async def test_a_leader_that_finds_another_holder_stops_leading_at_its_next_renewal(
        start: Start, kube: KubeClient) -> None:
    a = start("a")
    await settle(a)
    current = await lease(kube)  # an admin (or a split-brain peer) hands the lease to "x"
    current["spec"]["holderIdentity"] = "x"
    await kube.replace(LEASES, NS, NAME, current)
    t0 = now()
    await a.wait_until_not_leading()
    assert now() - t0 <= RETRY_S
    assert a.holder == "x" and not task_of(a).done()
    # "x" never renews: "a" takes the lease back once it has not changed for a lease duration.
    await a.leading.wait()
    assert LEASE_S <= now() - t0 <= LEASE_S + 2 * RETRY_S


@pytest.mark.looptime
async def test_a_renewal_that_hangs_is_abandoned_at_the_renew_deadline(start: Start, k8s: ApiServer) -> None:
    async def hang(request: kmock.Request) -> JSON:
        await asyncio.sleep(3600)
        return {}

    a = start("a")
    await settle(a)
    puts = k8s[kmock.method.PUT, kmock.resource(LEASE_PATH)]
    n = len(puts)
    puts[n:n + 1] << hang  # the next renewal never gets an answer
    last_renewal = a.renewed_at
    assert last_renewal is not None
    await a.wait_until_not_leading()
    assert now() - last_renewal == pytest.approx(RENEW_S)  # not after the client's own 30 s timeout
    await asyncio.wait_for(a.leading.wait(), timeout=2 * RETRY_S)  # still the holder: renews next round


@pytest.mark.looptime
async def test_release_while_run_still_runs_hands_over_and_never_competes_again(start: Start,
                                                                                 kube: KubeClient) -> None:
    a = start("a")
    await settle(a)
    b = start("b")
    await settle(a, b)
    await asyncio.sleep(3)
    await a.release()  # the shutdown order of `gang-scheduler run`: release, then cancel the tasks
    released_at = now()
    await b.leading.wait()
    assert now() - released_at <= RETRY_S
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(a.leading.wait(), timeout=60)
    assert not task_of(a).done() and b.is_leader
    spec = (await lease(kube))["spec"]
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1


@pytest.mark.looptime
async def test_a_write_queued_while_leading_is_not_sent_once_the_lease_is_lost(k8s: ApiServer) -> None:
    """At 1 request per second a bind waits for the rate limiter; the lease is lost meanwhile: the bind is refused
    (``NotLeading``) before it is sent, while reads and the lease's own writes still go."""
    kube = KubeClient.for_host(str(k8s.url), qps=1.0, burst=1)
    leading = True
    kube.fence = lambda: leading
    try:
        await kube.create(PODS, "ml", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                       "spec": {"containers": [{"name": "c", "image": "pause"}]}})
        bind = asyncio.create_task(kube.bind("ml", "p", "n0"))
        await asyncio.sleep(0.5)  # waiting for the next token
        leading = False
        with pytest.raises(NotLeading):
            await bind
        assert not [r for r in k8s if r.method == "POST" and r.resource == "v1/pods" and r.subresource == "binding"]
        assert (await kube.get(PODS, "ml", "p"))["spec"].get("nodeName") is None
        await kube.create(LEASES, NS, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                       "metadata": {"name": NAME}, "spec": {}}, lane=Lane.LEASE)
    finally:
        await kube.close()
