"""Inter-pod rules in ``run`` against the emulated API server: gangs bound one per node by
anti-affinity and by a host port, a running pod's anti-affinity honoured, a pod whose affinity matches
nothing left pending until a matching pod appears, a namespaceSelector resolved through watched
Namespaces, and one Warning Event per pod for a field no plugin honours."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler.client.kube import EVENTS, NAMESPACES, PODGROUPS, PODS, KubeClient
from tests.integration.livekit import NS, bound, bound_at_least, create_node, pod, podgroup, running, until

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


async def create_node_in(kube: KubeClient, name: str, zone: str, cpu: str = "8") -> None:
    await create_node(kube, name, cpu=cpu, labels={HOSTNAME: name, ZONE: zone})


def with_(body: dict[str, Any], labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    """A livekit pod dict with labels and extra spec fields (``ports=`` goes to the container)."""
    ports = spec.pop("ports", None)
    body["metadata"]["labels"] = dict(labels or {})
    body["spec"].update(spec)
    if ports is not None:
        body["spec"]["containers"][0]["ports"] = ports
    return body


async def create_gang_with(kube: KubeClient, name: str, n: int, labels: dict[str, str], **spec: Any) -> None:
    await kube.create(PODGROUPS, NS, podgroup(name, n))
    for i in range(n):
        await kube.create(PODS, NS, with_(pod(f"{name}-{i}", name), labels, **spec))


def anti(labels: dict[str, str], key: str = HOSTNAME) -> dict[str, Any]:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": labels}, "topologyKey": key}]}}


async def notes(kube: KubeClient, reason: str, name: str | None = None) -> list[str]:
    items, _ = await kube.list(EVENTS)
    return [e["note"] for e in items if e.get("reason") == reason
            and (name is None or e["regarding"]["name"] == name)]


@pytest.mark.looptime
async def test_gang_with_hostname_anti_affinity_on_its_own_label_is_bound_one_pod_per_node(
        k8s: Any, kube: KubeClient) -> None:
    for i in range(4):
        await create_node_in(kube, f"n{i}", "za")
    await create_gang_with(kube, "g", 4, {"app": "train"}, affinity=anti({"app": "train"}))
    async with running(kube):
        placed = await until(lambda: bound_at_least(kube, "g-", 4), what="gang bound")
    assert sorted(placed.values()) == ["n0", "n1", "n2", "n3"]


@pytest.mark.looptime
async def test_three_pods_with_the_rendezvous_host_port_are_bound_to_three_nodes(k8s: Any, kube: KubeClient) -> None:
    for i in range(3):
        await create_node_in(kube, f"n{i}", "za")
    await create_gang_with(kube, "w", 3, {"app": "w"}, ports=[{"containerPort": 29500, "hostPort": 29500}])
    async with running(kube):
        placed = await until(lambda: bound_at_least(kube, "w-", 3), what="gang bound")
    assert sorted(placed.values()) == ["n0", "n1", "n2"]


@pytest.mark.looptime
async def test_a_running_pods_anti_affinity_keeps_the_gang_off_its_node(k8s: Any, kube: KubeClient) -> None:
    await create_node_in(kube, "n0", "za", cpu="4")
    await create_node_in(kube, "n1", "za", cpu="4")
    guard = with_(pod("guard", None, scheduler="default-scheduler", node_name="n0"), {"app": "guard"},
                  affinity=anti({"app": "train"}))
    await kube.create(PODS, NS, guard)
    await create_gang_with(kube, "g", 3, {"app": "train"})
    async with running(kube):
        placed = await until(lambda: bound_at_least(kube, "g-", 3), what="gang bound")
    assert set(placed.values()) == {"n1"}


@pytest.mark.looptime
async def test_pod_whose_affinity_matches_no_pod_waits_until_one_appears(k8s: Any, kube: KubeClient) -> None:
    await create_node_in(kube, "n0", "za")
    await create_node_in(kube, "n1", "zb")
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": ZONE}]}}
    await kube.create(PODS, NS, with_(pod("web", None), {"app": "web"}, affinity=affinity))
    async with running(kube):
        failed = await until(lambda: notes(kube, "FailedScheduling", "web"), what="FailedScheduling")
        assert failed == ["0/2 nodes are available: 2 node(s) didn't match pod affinity rules."]
        await asyncio.sleep(5)
        assert await bound(kube, "web") == {}
        db = with_(pod("db", None, scheduler="default-scheduler", node_name="n1"), {"app": "db"})
        await kube.create(PODS, NS, db)  # a bound pod added: InterPodAffinity's hint moves the pod back
        placed = await until(lambda: bound_at_least(kube, "web", 1), what="bound once a db pod runs")
    assert placed == {"web": "n1"}


@pytest.mark.looptime
async def test_namespace_selector_finds_the_pod_through_the_watched_namespace_labels(
        k8s: Any, kube: KubeClient) -> None:
    await create_node_in(kube, "n0", "za")
    await create_node_in(kube, "n1", "zb")
    await kube.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace",
                                         "metadata": {"name": "data", "labels": {"team": "platform"}}})
    cache = with_(pod("cache", None, scheduler="default-scheduler", node_name="n1"), {"app": "cache"})
    await kube.create(PODS, "data", {**cache, "metadata": {**cache["metadata"], "namespace": "data"}})
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": ZONE,
         "namespaceSelector": {"matchLabels": {"team": "platform"}}}]}}
    await create_gang_with(kube, "g", 2, {"app": "g"}, affinity=affinity)
    async with running(kube):
        placed = await until(lambda: bound_at_least(kube, "g-", 2), what="gang bound")
    assert set(placed.values()) == {"n1"}


@pytest.mark.looptime
async def test_a_field_no_plugin_honours_gets_one_warning_event_per_pod(k8s: Any, kube: KubeClient) -> None:
    await create_node_in(kube, "n0", "za", cpu="1")
    typo = {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedul",
            "labelSelector": {"matchLabels": {"app": "g"}}}
    await create_gang_with(kube, "g", 2, {"app": "g"}, topologySpreadConstraints=[typo])
    async with running(kube):
        got = await until(lambda: notes(kube, "UnhonouredField"), what="warning events")
        await asyncio.sleep(20)  # the gang does not fit (1 cpu): retried with backoff, warned once
        assert await bound(kube, "g-") == {}
        again = await notes(kube, "UnhonouredField")
    expected = ("not honoured: spec.topologySpreadConstraints[0].whenUnsatisfiable: 'DoNotSchedul' is neither "
                "DoNotSchedule nor ScheduleAnyway: the constraint is ignored")
    assert sorted(again) == [expected, expected] and len(got) <= 2
    items, _ = await kube.list(EVENTS)
    warned = [e for e in items if e["reason"] == "UnhonouredField"]
    assert {e["type"] for e in warned} == {"Warning"} and all("series" not in e for e in warned)
