"""The live loop on the oldest cluster the chart installs on: Kubernetes 1.25 with scheduler-plugins.

The server (``k8s``: ``apiserver125.py``, ``conftest.RESOURCES_1_25``) serves no ``scheduling.k8s.io``
PodGroup or CompositePodGroup and no ``resource.k8s.io/v1``, only scheduler-plugins' PodGroup CRD; it gives
pods no ``metadata.generation`` and refuses any write of a built-in kind that the v1.25 strict schema refuses
— so what the scheduler writes on pods, Events and its Lease is checked as a 1.25 server checks it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from scheduler.client.kube import COSCHEDULING_PODGROUPS, PODS, ApiError, KubeClient
from tests.integration.apiserver import ApiServer
from tests.integration.livekit import NS, bound, bound_at_least, create_node, running, until
from tests.integration.test_coscheduling import create_labelled_gang, events, labelled, regarding, with_phase

pytestmark = pytest.mark.kubernetes("1.25")

DRA_NOT_SERVED = ("API resource.k8s.io/v1 resourceslices, deviceclasses, resourceclaims, resourceclaimtemplates "
                  "is not served: pods with ResourceClaims wait, extended resources are not served through DRA")


def refused(k8s: ApiServer) -> list[Any]:
    """Requests the server answered 422 (a write v1.25 could not store)."""
    return [e for e in k8s.errors if getattr(e, "status", None) == 422]


@pytest.mark.looptime
async def test_labelled_gang_is_bound_whole_and_the_scheduler_says_what_is_not_served(
        k8s: ApiServer, kube: KubeClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="scheduler")  # live/ and client/ (discovery) both say it
    for i in range(2):
        await create_node(kube, f"n{i}", cpu="4")
    await create_labelled_gang(kube, "g", 6, 6)
    async with running(kube, leader_elect=True) as sched:
        assert sched.ready()[0]
        assert sched.watches.groups.resources == (COSCHEDULING_PODGROUPS,)
        placed = await until(lambda: bound_at_least(kube, "g-", 6), what="gang bound")
        assert set(placed.values()) == {"n0", "n1"}
        status = await until(lambda: with_phase(kube, "g", "Scheduled"), what="phase Scheduled")
        assert status["scheduled"] == 6
    logged = [r.getMessage() for r in caplog.records]
    assert DRA_NOT_SERVED in logged
    assert "reading PodGroups as scheduling.x-k8s.io/v1alpha1" in logged
    assert "only scheduler-plugins PodGroups are served: each is a gang of its own, no trees" in logged
    assert not [m for m in logged if "feature gate" in m]  # v1.25 has none of the workload API's gates
    assert refused(k8s) == []


@pytest.mark.looptime
async def test_labelled_gang_that_does_not_fit_binds_nothing(k8s: ApiServer, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="4")
    await create_labelled_gang(kube, "g", 6, 6)
    async with running(kube):
        failed = await until(lambda: regarding(events(kube, "FailedScheduling"), "PodGroup", "g"),
                             what="FailedScheduling on the PodGroup")
        assert "gang g: 4/6 placeable (minCount 6)" in failed["note"]
        await until(lambda: with_phase(kube, "g", "PreScheduling"), what="phase PreScheduling")
        await asyncio.sleep(5)
        assert await bound(kube, "g-") == {}
        pod = await kube.get(PODS, NS, "g-0")
        assert "generation" not in pod["metadata"]
        (scheduled,) = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
        assert (scheduled["status"], scheduled["reason"]) == ("False", "Unschedulable")
        assert "observedGeneration" not in scheduled  # a v1.25 PodCondition has no such field
    assert refused(k8s) == []


async def test_the_emulator_refuses_what_kubernetes_1_25_lacks(k8s: ApiServer, kube: KubeClient) -> None:
    """The fixture is as strict as a 1.25 server with ``fieldValidation=Strict``: the writes above can only
    pass as written, and the scheduler's 1.37 fields (``spec.schedulingGroup``, a condition's
    ``observedGeneration``) would be refused."""
    body = labelled("p", "g")
    body["spec"]["schedulingGroup"] = {"podGroupName": "g"}
    with pytest.raises(ApiError) as created:
        await kube.create(PODS, NS, body)
    assert created.value.status == 422
    await kube.create(PODS, NS, labelled("p", "g"))
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "observedGeneration": 1}
    with pytest.raises(ApiError) as patched:
        await kube.patch(PODS, NS, "p", {"status": {"conditions": [condition]}}, sub="status")
    assert patched.value.status == 422
    assert "observedGeneration" in str(patched.value)
    assert "generation" not in (await kube.get(PODS, NS, "p"))["metadata"]
    for group_version in ("scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha2", "scheduling.k8s.io/v1alpha3",
                          "resource.k8s.io/v1"):
        assert await kube.served(group_version) == set(), group_version
    assert await kube.served("scheduling.k8s.io/v1") == {"priorityclasses"}
    assert len(refused(k8s)) == 2  # what the other tests assert is empty
