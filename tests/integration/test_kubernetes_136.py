"""The live loop on a Kubernetes 1.36 cluster: PodGroups only as ``scheduling.k8s.io/v1alpha2``.

The server (``k8s``: ``apiserver136.py``) serves no v1beta1 PodGroup and no CompositePodGroup, and refuses
any v1alpha2 write that the v1.36 strict schema refuses, or that changes a PodGroup's spec — so what the
scheduler writes (conditions, the durable intent, DisruptionTarget) is checked as a 1.36 server checks it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import kmock
import kubernetes_validate  # type: ignore[import-untyped]
import pytest

from scheduler.client import podgroup_api
from scheduler.client.kube import EVENTS, PODGROUPS_V1ALPHA2, PODS, KubeClient, Resource
from scheduler.groups.intent import INTENT_ANNOTATION
from scheduler.model.coscheduling import POD_GROUP_LABEL
from scheduler.model.pod import DISRUPTION_TARGET
from tests.integration.apiserver import ApiServer
from tests.integration.conftest import RESOURCES_1_36, VERBS
from tests.integration.livekit import NS, bound, bound_at_least, create_node, pod, running, until
from tests.integration.test_partial_gangs import Refuse

pytestmark = pytest.mark.kubernetes("1.36")

WORKLOADS = Resource("scheduling.k8s.io", "v1alpha2", "workloads", True, "Workload")
PATH = "scheduling.k8s.io/v1alpha2/podgroups"
HOLD = "example.com/hold"


def podgroup(name: str, min_count: int, mode: str | None = None) -> dict[str, Any]:
    """A v1.36 PodGroup as the Workload controller writes it: ``podGroupTemplateRef``, ``disruptionMode`` string."""
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}},
                            "podGroupTemplateRef": {"workload": {"workloadName": "train",
                                                                 "podGroupTemplateName": "workers"}}}
    if mode is not None:
        spec["disruptionMode"] = mode
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NS}, "spec": spec}


async def create_gang(kube: KubeClient, name: str, n: int, mode: str | None = None, **pod_kw: Any) -> None:
    await kube.create(PODGROUPS_V1ALPHA2, NS, podgroup(name, n, mode))
    for i in range(n):
        await kube.create(PODS, NS, pod(f"{name}-{i}", name, **pod_kw))


async def conditions(kube: KubeClient, name: str) -> dict[str, dict[str, Any]]:
    obj = await kube.get(PODGROUPS_V1ALPHA2, NS, name)
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


async def condition(kube: KubeClient, name: str, type_: str) -> dict[str, Any] | None:
    return (await conditions(kube, name)).get(type_)


def valid_136(k8s: ApiServer, name: str) -> None:
    """Every stored version of PodGroup ``name`` validates against the v1.36 strict schema (a deletion, None in
    the history, is no version)."""
    for version in filter(None, k8s.objects[PATH, NS, name].history):
        kubernetes_validate.validate(json.loads(json.dumps(version, default=dict)), "1.36.0", strict=True)


@pytest.mark.looptime
async def test_a_gang_is_bound_whole_and_its_conditions_carry_the_v136_names(k8s: ApiServer, kube: KubeClient) -> None:
    await kube.create(WORKLOADS, NS, {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "Workload",
                                      "metadata": {"name": "train", "namespace": NS},
                                      "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {
                                          "gang": {"minCount": 6}}, "disruptionMode": "Pod"}]}})
    for i in range(2):
        await create_node(kube, f"n{i}", cpu="4")
    await create_gang(kube, "g", 6, mode="Pod", cpu="1")
    async with running(kube) as sched:
        assert sched.watches.podgroups is podgroup_api.V1ALPHA2
        placed = await until(lambda: bound_at_least(kube, "g-", 6), what="gang bound")
        assert len(placed) == 6 and set(placed.values()) == {"n0", "n1"}
        cond = await until(lambda: condition(kube, "g", "PodGroupScheduled"), what="PodGroupScheduled")
        assert (cond["status"], cond["reason"]) == ("True", "Scheduled")
        assert "PodGroupInitiallyScheduled" not in await conditions(kube, "g")
    stored = k8s.objects[PATH, NS, "g"]
    members = [await kube.get(PODS, NS, f"g-{i}") for i in range(6)]  # the durable intent, carried by each Binding
    assert all(INTENT_ANNOTATION in p["metadata"]["annotations"] for p in members)
    assert INTENT_ANNOTATION not in (stored["metadata"].get("annotations") or {})
    assert stored["spec"] == podgroup("g", 6, "Pod")["spec"]  # the spec is never written
    valid_136(k8s, "g")
    assert not [r for r in k8s if r.resource is not None and r.resource.plural and r.resource.version == "v1beta1"]


@pytest.mark.looptime
async def test_a_gang_that_does_not_fit_binds_nothing_then_binds_whole_when_room_appears(k8s: ApiServer,
                                                                                        kube: KubeClient) -> None:
    """Unschedulable first (``PodGroupScheduled=False``), nothing bound; then a node is added and the True write
    meets a 409: the re-read is decoded too, so the True replaces the False (one ``PodGroupScheduled``)."""
    await create_node(kube, "n0", cpu="4")
    await create_gang(kube, "g", 6, cpu="1")
    async with running(kube):
        cond = await until(lambda: condition(kube, "g", "PodGroupScheduled"), what="PodGroupScheduled")
        assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
        assert "gang g: 4/6 placeable (minCount 6)" in cond["message"]
        await asyncio.sleep(10)
        assert await bound(kube, "g-") == {}
        patches = k8s["patch", kmock.resource(PATH), kmock.subresource("status")]
        n = len(patches)
        patches[n:n + 1] << 409 << {"kind": "Status", "code": 409, "reason": "Conflict", "message": "injected"}
        await create_node(kube, "n1", cpu="4")
        await until(lambda: bound_at_least(kube, "g-", 6), what="gang bound")
        cond = await until(lambda: _true(kube, "g"), what="PodGroupScheduled=True")
        assert cond["reason"] == "Scheduled" and len(patches) > n + 1  # the conflict was met, then written
        types = [c["type"] for c in (await kube.get(PODGROUPS_V1ALPHA2, NS, "g"))["status"]["conditions"]]
        assert types.count("PodGroupScheduled") == 1 and "PodGroupInitiallyScheduled" not in types
    valid_136(k8s, "g")


async def _true(kube: KubeClient, name: str) -> dict[str, Any] | None:
    found = await condition(kube, name, "PodGroupScheduled")
    return found if found is not None and found["status"] == "True" else None


def victim(name: str, node: str, group: str) -> dict[str, Any]:
    """A running 1-cpu pod of another scheduler in ``group``, with a finalizer (it terminates when let go)."""
    body = pod(name, group, cpu="1", scheduler="default-scheduler", node_name=node)
    body["metadata"]["finalizers"] = [HOLD]
    body["spec"]["priority"] = 0
    return body


async def terminating(kube: KubeClient, name: str) -> bool:
    return bool((await kube.get(PODS, NS, name))["metadata"].get("deletionTimestamp"))


@pytest.mark.looptime
@pytest.mark.parametrize("mode, evicted", [("PodGroup", {"low-0", "low-1", "low-2"}), ("Pod", {"low-0", "low-1"})])
async def test_disruption_mode_podgroup_is_honoured_as_all(k8s: ApiServer, kube: KubeClient, mode: str,
                                                           evicted: set[str]) -> None:
    """A 2-cpu preemptor needs n0, where two members of the low gang run; the third runs on n1. As ``PodGroup``
    (``all``) the gang is one victim unit and all three are evicted, and the group gets DisruptionTarget; as ``Pod``
    (``single``) only n0's two, and the group, still running on n1, gets none."""
    await create_node(kube, "n0", cpu="2")
    await create_node(kube, "n1", cpu="1")
    await kube.create(PODGROUPS_V1ALPHA2, NS, podgroup("low", 3, mode))
    for i, node in enumerate(("n0", "n0", "n1")):
        await kube.create(PODS, NS, victim(f"low-{i}", node, "low"))
    high = podgroup("high", 1)
    high["spec"]["priority"] = 100
    await kube.create(PODGROUPS_V1ALPHA2, NS, high)
    await kube.create(PODS, NS, pod("high-0", "high", cpu="2"))
    async with running(kube):
        for name in sorted(evicted):
            await until(lambda n=name: terminating(kube, n), what=f"{name} deleted")  # type: ignore[misc]
        await asyncio.sleep(5)
        assert {n for n in ("low-0", "low-1", "low-2") if await terminating(kube, n)} == evicted
        if mode == "PodGroup":
            cond = await until(lambda: condition(kube, "low", DISRUPTION_TARGET), what="DisruptionTarget on the group")
            assert (cond["status"], cond["reason"]) == ("True", "PreemptionByScheduler")
        else:
            await until(lambda: _preempting(kube), what="the preemption acted on")
            assert await condition(kube, "low", DISRUPTION_TARGET) is None
    valid_136(k8s, "low")
    valid_136(k8s, "high")


@pytest.mark.looptime
async def test_a_partial_podgroup_mode_gang_is_torn_down_whole_after_the_timeout(k8s: ApiServer,
                                                                                kube: KubeClient) -> None:
    """``disruptionMode: PodGroup`` is ``all`` for gang repair too: 3/4 bound for good → all 3 evicted."""
    await create_node(kube, "n0", cpu="8")
    await create_gang(kube, "a", 4, mode="PodGroup")
    Refuse("a-3").on_binds(k8s)  # its fourth member never binds
    async with running(kube, gang_repair_timeout_s=60.0):
        await until(lambda: bound_at_least(kube, "a-", 3), what="3 of 4 bound")
        below = await until(lambda: condition(kube, "a", "GangBelowMin"), what="GangBelowMin")
        assert (below["status"], below["reason"]) == ("True", "BelowMinCount")
        for name in ("a-0", "a-1", "a-2"):
            await until(lambda n=name: _deleted(k8s, n), timeout_s=120, what=f"{name} evicted")  # type: ignore[misc]
        cond = await until(lambda: condition(kube, "a", DISRUPTION_TARGET), what="DisruptionTarget")
        assert (cond["status"], cond["reason"]) == ("True", "GangTornDown")
    valid_136(k8s, "a")


async def _preempting(kube: KubeClient) -> bool:
    """The preemptor's Preempting Event is written (after every victim and victim group is marked)."""
    items, _ = await kube.list(EVENTS)
    return any(e.get("reason") == "Preempting" for e in items)


def _deleted(k8s: ApiServer, name: str) -> bool:
    return bool(k8s.objects["v1/pods", NS, name].deleted)


@pytest.mark.looptime
async def test_an_unknown_disruption_mode_is_reported_and_the_gang_scheduled(k8s: ApiServer,
                                                                              kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="4")
    await create_gang(kube, "g", 2, mode="Everything", cpu="1")
    async with running(kube, leader_elect=True):  # read before leading: the leader writes the Event
        await until(lambda: bound_at_least(kube, "g-", 2), what="gang bound")
        items = await until(lambda: _warnings(kube), what="UnhonouredField event")
        (event,) = items
        assert event["regarding"]["apiVersion"] == "scheduling.k8s.io/v1alpha2"
        assert (event["regarding"]["kind"], event["regarding"]["name"]) == ("PodGroup", "g")
        assert "spec.disruptionMode: 'Everything' is neither \"Pod\" nor \"PodGroup\"" in event["note"]
        await asyncio.sleep(5)  # our own status writes are watched again: still one Event
        assert len(await _warnings(kube)) == 1


async def _warnings(kube: KubeClient) -> list[dict[str, Any]]:
    items, _ = await kube.list(EVENTS)
    return [e for e in items if e.get("reason") == "UnhonouredField"]


@pytest.mark.kubernetes("1.37")
async def test_v1beta1_is_preferred_when_both_are_served(k8s: ApiServer, kube: KubeClient) -> None:
    kind, namespaced, subresources = RESOURCES_1_36[PATH]
    k8s.resources[PATH] = kmock.ResourceInfo(kind=kind, singular="podgroup", namespaced=namespaced, verbs=VERBS,
                                             subresources=subresources)
    assert await podgroup_api.discover(kube) == (podgroup_api.V1BETA1, "")


async def test_v1alpha2_is_chosen_when_only_it_is_served(k8s: ApiServer, kube: KubeClient) -> None:
    assert await podgroup_api.discover(kube) == (podgroup_api.V1ALPHA2, "")


async def test_neither_served_names_both_versions(k8s: ApiServer, kube: KubeClient) -> None:
    del k8s.resources[PATH]
    api, reason = await podgroup_api.discover(kube)
    assert api is None
    assert reason.startswith("API scheduling.k8s.io/v1beta1 podgroups is not served (nor scheduling.k8s.io/v1alpha2)")


async def test_a_pod_linked_by_label_to_a_crd_the_cluster_does_not_serve_is_told_so(kube: KubeClient) -> None:
    """Without scheduler-plugins' CRD, a pod of ours labelled for one of its PodGroups says that the CRD is not
    served and that it is looked for again (``test_rediscovery.py``: and read once it is)."""
    await create_node(kube, "n0", cpu="4")
    body = pod("w-0", None, cpu="1")
    body["metadata"]["labels"] = {POD_GROUP_LABEL: "job"}
    await kube.create(PODS, NS, body)

    async def note() -> str | None:
        items, _ = await kube.list(EVENTS)
        return next((e["note"] for e in items if e["regarding"]["name"] == "w-0"), None)

    async with running(kube):
        said = await until(note, what="the pod's FailedScheduling Event")
    assert said == (f"scheduling.x-k8s.io PodGroup {NS}/job cannot be read: scheduler-plugins' PodGroup CRD "
                    "(scheduling.x-k8s.io/v1alpha1) is not served (looked for again every 30 s)")
    assert await bound(kube, "w-") == {}
