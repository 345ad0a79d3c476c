"""What preemption reports: each decision's FailedScheduling Event and PodScheduled on the preemptor's pods, the
log lines of a root waiting for its victims, and DisruptionTarget on the victims' groups."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from scheduler.client.kube import PODGROUPS, PODS, KubeClient
from scheduler.model.pod import DISRUPTION_TARGET, REASON_PREEMPTION_BY_SCHEDULER
from tests.integration.apiserver import ApiServer
from tests.integration.livekit import NS, bound_at_least, create_node, running, until
from tests.integration.test_preemption import (
    create_gang,
    create_running_gang,
    events,
    full_node_and_preemptor,
    let_go,
    nominated,
    terminating,
    victim,
)

FOUND = "pod group preemption: found a placement for podgroup, preempting 2 victims: 2 pod(s) without a group"
ONGOING = "pod group preemption: ongoing preemption on nominated nodes"


async def notes(kube: KubeClient, pod: str, ending: str) -> list[str]:
    """The notes of the FailedScheduling Events on ``pod`` that end with ``ending``."""
    return [e["note"] for e in await events(kube, "FailedScheduling")
            if e["regarding"]["name"] == pod and e["note"].endswith(ending)]


def pod_scheduled_messages(k8s: ApiServer, name: str) -> list[str]:
    """Every ``PodScheduled`` message pod ``name`` has shown, oldest first."""
    history: list[dict[str, Any]] = k8s.objects["v1/pods", NS, name].history
    return [c["message"] for version in history for c in (version.get("status") or {}).get("conditions") or []
            if c["type"] == "PodScheduled"]


@pytest.mark.looptime
async def test_each_preemption_decision_is_reported_on_the_preemptor_pods(k8s: ApiServer, kube: KubeClient) -> None:
    """The preemptor's pods get the decision that preempts (its FailedScheduling Event and PodScheduled message say
    what the PodGroup's say), then the decisions that wait for the victims, each its own Event; the report written
    right after the scheduler's own nominatedNodeName write is not refused for it (no 409, no retry)."""
    await full_node_and_preemptor(kube)
    async with running(kube) as sched:
        await until(lambda: nominated(kube, ["high-0", "high-1"]), what="nominations")
        await until(lambda: terminating(kube, "low-1"), what="victims deleted")
        for name in ("high-0", "high-1"):
            await until(lambda n=name: notes(kube, n, FOUND), what=f"{name}'s Event of the preemption")  # type: ignore[misc]
            await until(lambda n=name: notes(kube, n, ONGOING), what=f"{name}'s Event of the wait")  # type: ignore[misc]
            assert any(m.endswith(FOUND) for m in pod_scheduled_messages(k8s, name))
        assert sched.reporter.writes.failed == 0  # no report refused (409) and retried


def lines(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


@pytest.mark.looptime
async def test_a_root_waiting_for_its_victims_logs_the_victims_it_awaits(
        k8s: ApiServer, kube: KubeClient, caplog: pytest.LogCaptureFixture) -> None:
    """While the victims terminate the root's lines say how many it awaits and name those of its own namespace (the
    others counted), not the ``victims=0 units=0`` of a decision that chose none."""
    await create_node(kube, "n0", cpu="2")
    await kube.create(PODS, NS, victim("low-0", "n0"))
    await kube.create(PODS, "other", {**victim("theirs-0", "n0"), "metadata": {
        **victim("theirs-0", "n0")["metadata"], "namespace": "other"}})
    await create_gang(kube, "high", 2, priority=100)
    with caplog.at_level(logging.INFO, logger="scheduler.live.driver"):
        async with running(kube):
            await until(lambda: terminating(kube, "low-0"), what="victims deleted")
            await until(lambda: lines(caplog, "result=WaitingForVictims"), timeout_s=90, what="a waiting decision")
    preempting = lines(caplog, "result=Preempting")[0]
    assert "victims=2 units=2" in preempting
    waiting = lines(caplog, "result=WaitingForVictims")[0]
    assert "awaiting=2 victims='ml/low-0, 1 in other namespaces' nodes=n0" in waiting
    assert "units=" not in waiting and "reprieved=" not in waiting


@pytest.mark.looptime
async def test_a_root_whose_victims_are_still_terminating_past_their_grace_period_keeps_waiting(
        k8s: ApiServer, kube: KubeClient, caplog: pytest.LogCaptureFixture) -> None:
    """Victims whose deletion the kubelet never confirms (a finalizer stays): past their grace period plus the margin
    the root still waits for them, as no new preemption starts while victims terminate on the nominated node, and the
    log says so and what to check; nothing more is deleted. Once they are gone the root binds."""
    await full_node_and_preemptor(kube)
    with caplog.at_level(logging.INFO, logger="scheduler.live"):
        async with running(kube):
            await until(lambda: terminating(kube, "low-1"), what="victims deleted")
            overdue = await until(lambda: lines(caplog, "past their grace period"), timeout_s=120,
                                  what="the victims overdue")
            assert overdue == [f"PodGroup {NS}/high: victims ml/low-0, ml/low-1 still terminating past their grace "
                               "period; waiting for them, as no new preemption starts while victims terminate on "
                               "the nominated nodes (check the kubelet on n0 and the pods' finalizers)"]
            caplog.clear()
            await asyncio.sleep(120)
            assert not lines(caplog, "planning again") and not lines(caplog, "result=Preempting")
            assert all("awaiting=2 victims='ml/low-0, ml/low-1'" in line
                       for line in lines(caplog, "result=WaitingForVictims"))
            assert len([r for r in k8s if r.method == "DELETE" and r.resource == "v1/pods"]) == 2
            await let_go(kube, "low-0")
            await let_go(kube, "low-1")
            await until(lambda: bound_at_least(kube, "high-", 2), what="preemptor bound")


@pytest.mark.looptime
async def test_a_group_that_loses_only_a_spare_member_is_not_marked_as_a_disruption_target(
        k8s: ApiServer, kube: KubeClient) -> None:
    """A single-mode gang of 4 (minCount 3) loses one spare member to the preemptor: the member is marked and
    deleted, the group keeps running with 3 and gets no DisruptionTarget (it is not about to be terminated)."""
    await create_node(kube, "n0", cpu="4")
    await create_running_gang(kube, "low", 3, 4, "n0")
    await create_gang(kube, "high", 1, priority=100)
    async with running(kube):
        gone = await until(lambda: _terminating_members(kube), what="a member deleted")
        assert len(gone) == 1
        body = await kube.get(PODS, NS, gone[0])
        cond = next(c for c in body["status"]["conditions"] if c["type"] == DISRUPTION_TARGET)
        assert (cond["status"], cond["reason"]) == ("True", REASON_PREEMPTION_BY_SCHEDULER)
        await until(lambda: events(kube, "Preempting"), what="the preemption acted on")
        await asyncio.sleep(5)
        group = await kube.get(PODGROUPS, NS, "low")
        assert DISRUPTION_TARGET not in {c["type"] for c in (group.get("status") or {}).get("conditions") or []}
        assert not any(DISRUPTION_TARGET in str(v.get("status")) for v in
                       k8s.objects["scheduling.k8s.io/v1beta1/podgroups", NS, "low"].history)


async def _terminating_members(kube: KubeClient) -> list[str]:
    return [n for n in (f"low-{i}" for i in range(4)) if await terminating(kube, n)]
