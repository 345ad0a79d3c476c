"""The operator and the scheduler together, on each kind of cluster the operator supports (docs/clusters.md,
"any of these, with the operator"): Kubernetes 1.37 (``scheduling.k8s.io/v1beta1``), a cluster with only
scheduler-plugins' PodGroup CRD (``scheduling.x-k8s.io/v1alpha1``), and Kubernetes 1.36
(``scheduling.k8s.io/v1alpha2``, against ``apiserver136.py``, which refuses writes the v1.36 strict schema
refuses and any change of a PodGroup's spec).

Every path runs one story (:func:`story`): Jobs opted in → their PodGroups made and owned → their pods
mutated by the webhook → the in-process scheduler binds the gang that fits whole, and nothing of the one
that does not; the Job that does not fit is scaled down to one pod (the Job controller deletes the others)
→ the group's minimum follows → once a node has room, its last pod is bound. How the minimum follows is
the path's own: patched in place (v1beta1 ``minCount``, scheduler-plugins ``minMember``), or — on 1.36,
where ``minCount`` is immutable — the PodGroup deleted and made again while none of it is placed.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from scheduler.client.kube import (
    COSCHEDULING_PODGROUPS,
    PODGROUPS,
    PODGROUPS_V1ALPHA2,
    PODS,
    KubeClient,
    Resource,
)
from scheduler.model.coscheduling import POD_GROUP_LABEL
from tests.integration.apiserver import ApiServer
from tests.integration.livekit import NS, bound, create_node, running, until
from tests.integration.operatorkit import JOBS, Admission, drop_workload_api, job, job_pod, operating, register
from tests.integration.test_kubernetes_136 import valid_136
from tests.integration.test_operator import warning_events

JSON = dict[str, Any]


def _conditions(pg: JSON) -> dict[str, str]:
    return {c.get("type", ""): c.get("status", "") for c in (pg.get("status") or {}).get("conditions") or []}


def _gang_min(pg: JSON) -> int | None:
    return ((pg.get("spec") or {}).get("schedulingPolicy") or {}).get("gang", {}).get("minCount")


def _scheduling_group(pod: JSON) -> str | None:
    return ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")


@dataclass(frozen=True)
class GroupApi:
    """How a test reads one group API: where its PodGroups are, the minimum one holds, the group a pod links,
    and whether a PodGroup's status (the scheduler writes it) says its gang was scheduled, or could not be."""

    podgroups: Resource
    minimum: Callable[[JSON], int | None]
    link: Callable[[JSON], str | None]
    scheduled: Callable[[JSON], bool]
    refused: Callable[[JSON], bool]


def _condition_is(type_: str, status: str) -> Callable[[JSON], bool]:
    return lambda pg: _conditions(pg).get(type_) == status


def _phase_in(*phases: str) -> Callable[[JSON], bool]:
    return lambda pg: (pg.get("status") or {}).get("phase") in phases


V1BETA1 = GroupApi(PODGROUPS, _gang_min, _scheduling_group, _condition_is("PodGroupInitiallyScheduled", "True"),
                   _condition_is("PodGroupInitiallyScheduled", "False"))
V1ALPHA2 = GroupApi(PODGROUPS_V1ALPHA2, _gang_min, _scheduling_group,  # the v1.36 condition name
                    _condition_is("PodGroupScheduled", "True"), _condition_is("PodGroupScheduled", "False"))
SCHEDULER_PLUGINS = GroupApi(COSCHEDULING_PODGROUPS, lambda pg: (pg.get("spec") or {}).get("minMember"),
                             lambda pod: (pod["metadata"].get("labels") or {}).get(POD_GROUP_LABEL),
                             _phase_in("Scheduled", "Running"), _phase_in("PreScheduling"))


@dataclass
class Story:
    """What :func:`story` saw: the PodGroup of the Job that did not fit, before and after its scale-down."""

    before: JSON
    after: JSON


async def _get(kube: KubeClient, api: GroupApi, name: str) -> JSON | None:
    items, _ = await kube.list(api.podgroups, NS)
    return next((pg for pg in items if pg["metadata"]["name"] == name), None)


async def _holds(kube: KubeClient, api: GroupApi, name: str, check: Callable[[JSON], bool]) -> JSON | None:
    pg = await _get(kube, api, name)
    return pg if pg is not None and check(pg) else None


async def _bound_n(kube: KubeClient, prefix: str, n: int) -> dict[str, str] | None:
    got = await bound(kube, prefix)
    return got if len(got) == n else None


@contextlib.asynccontextmanager
async def story(k8s: ApiServer, kube: KubeClient, api: GroupApi) -> AsyncIterator[Story]:
    """The module docstring's story on ``k8s``, read through ``api``; yields what it saw with the operator and
    the scheduler still running. Nodes: n0, n1 with 2 CPUs; a 1-CPU n2 once ``too-big`` is down to one pod."""
    for i in range(2):
        await create_node(kube, f"n{i}", cpu="2")
    async with operating(k8s, kube), running(kube):
        admission = Admission(kube)
        for name, parallelism in (("fits", 4), ("too-big", 3)):
            stored = await kube.create(JOBS, NS, await admission.mutated(JOBS, job(name, parallelism, cpu="1")))
            await until(lambda n=name: _get(kube, api, n), what=f"PodGroup {name}")
            for _ in range(parallelism):
                await kube.create(PODS, NS, await admission.mutated(PODS, job_pod(stored)))
            if name == "fits":
                placed = await until(lambda: _bound_n(kube, "fits-", 4), what="the gang bound")
                assert sorted(placed.values()) == ["n0", "n0", "n1", "n1"]
                await until(lambda: _holds(kube, api, "fits", api.scheduled), what="fits reported scheduled")
        pods, _ = await kube.list(PODS, NS)
        assert sorted({api.link(p) for p in pods}) == ["fits", "too-big"]
        assert {p["spec"]["schedulerName"] for p in pods} == {"gang-scheduler"}
        await until(lambda: _holds(kube, api, "too-big", api.refused), what="too-big reported unschedulable")
        assert not await bound(kube, "too-big-")  # all or nothing: 4 CPUs are taken, 3 more do not fit
        before = await _get(kube, api, "too-big")
        assert before is not None and api.minimum(before) == 3 and not api.scheduled(before)
        # scaled down to one pod: the Job controller deletes the others; then a node with room for it
        await kube.patch(JOBS, NS, "too-big", {"spec": {"parallelism": 1}})
        for extra in sorted(p["metadata"]["name"] for p in pods if api.link(p) == "too-big")[1:]:
            await kube.delete(PODS, NS, extra)
        await until(lambda: _holds(kube, api, "too-big", lambda pg: api.minimum(pg) == 1),
                    what="the minimum follows the scale-down")
        await create_node(kube, "n2", cpu="1")
        assert list((await until(lambda: _bound_n(kube, "too-big-", 1), what="the gang of one")).values()) == ["n2"]
        after = await until(lambda: _holds(kube, api, "too-big", api.scheduled), what="too-big reported scheduled")
        yield Story(before, after)


@pytest.mark.looptime
async def test_v137_job_end_to_end_all_or_nothing(k8s: ApiServer, kube: KubeClient) -> None:
    register(k8s)
    async with story(k8s, kube, V1BETA1) as seen:
        pass
    assert seen.after["metadata"]["uid"] == seen.before["metadata"]["uid"]  # minCount patched in place
    assert seen.after["spec"] == {"schedulingPolicy": {"gang": {"minCount": 1}}}


@pytest.mark.looptime
async def test_scheduler_plugins_cluster_job_end_to_end_all_or_nothing(k8s: ApiServer, kube: KubeClient) -> None:
    register(k8s)
    drop_workload_api(k8s)
    async with story(k8s, kube, SCHEDULER_PLUGINS) as seen:
        pass
    assert seen.after["metadata"]["uid"] == seen.before["metadata"]["uid"]  # minMember patched in place
    assert seen.after["spec"] == {"minMember": 1}
    assert seen.before["status"]["scheduled"] == 0
    assert seen.after["status"]["scheduled"] == 1


@pytest.mark.kubernetes("1.36")
@pytest.mark.looptime
async def test_v136_job_end_to_end_all_or_nothing(k8s: ApiServer, kube: KubeClient) -> None:
    """1.36: ``minCount`` is immutable. A PodGroup none of whose pods is placed is made again with the new
    minimum (and the scheduler binds against the new object); a placed one keeps its minimum, with a Warning."""
    register(k8s)
    async with story(k8s, kube, V1ALPHA2) as seen:
        fits = await _get(kube, V1ALPHA2, "fits")
        assert fits is not None
        await kube.patch(JOBS, NS, "fits", {"spec": {"parallelism": 5}})  # its gang of 4 is bound
        (warning,) = await until(lambda: warning_events(kube, "GangImmutable"), what="GangImmutable event")
        kept = await _get(kube, V1ALPHA2, "fits")
    assert seen.after["metadata"]["uid"] != seen.before["metadata"]["uid"]  # deleted and made again
    assert seen.after["spec"] == {"schedulingPolicy": {"gang": {"minCount": 1}}}
    assert seen.after["metadata"]["ownerReferences"][0]["name"] == "too-big"
    assert kept is not None and kept["metadata"]["uid"] == fits["metadata"]["uid"] and _gang_min(kept) == 4
    assert warning["involvedObject"]["name"] == "fits"
    assert warning["message"] == (f"PodGroup {NS}/fits keeps minCount 4, not the 5 the workload now asks for: "
                                  "minCount is immutable in scheduling.k8s.io/v1alpha2 (Kubernetes 1.36) and 4 of "
                                  "its pods are bound, so it is not made again; delete it to have it made again")
    for name in ("fits", "too-big"):
        valid_136(k8s, name)  # every version the operator and the scheduler stored

