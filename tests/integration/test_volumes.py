"""Volumes in the live loop against the emulated API server: the PVC annotation transaction.

The emulator has no PV controller and no CSI provisioner: :func:`pv_controller` plays both, as a task in
the test's loop — a WaitForFirstConsumer claim annotated with ``volume.kubernetes.io/selected-node`` gets
a PV made for that node (zonal node affinity, like the EBS CSI driver's) and is bound; a PV whose
``claimRef`` names an unbound claim binds it. Tests that let nothing bind run on looptime, so the
volume binding timeout passes in fake time.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from scheduler.client.kube import (
    EVENTS,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    PODGROUPS,
    PODS,
    STORAGE_CLASSES,
    KubeClient,
)
from scheduler.model.storage import BIND_COMPLETED, SELECTED_NODE
from tests.integration.apiserver import ApiServer
from tests.integration.livekit import NS, bound, bound_at_least, create_node, pod, podgroup, running, until

ZONE = "topology.kubernetes.io/zone"
ZONES = {"n1": "a", "n2": "b"}


def storage_class(name: str = "gp3", provisioner: str = "ebs.csi.aws.com") -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": provisioner, "volumeBindingMode": "WaitForFirstConsumer"}


def claim(name: str, storage: str = "gp3") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": NS},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": storage,
                     "resources": {"requests": {"storage": "10Gi"}}}, "status": {"phase": "Pending"}}


def volume_pod(name: str, group: str, *claims: str, cpu: str = "1") -> dict[str, Any]:
    body = pod(name, group, cpu=cpu)
    body["spec"]["volumes"] = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                               for i, c in enumerate(claims)]
    return body


def local_pv(name: str, node: str, storage: str = "local") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "100Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": storage,
                     "local": {"path": "/mnt/disks/ssd0"},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}},
            "status": {"phase": "Available"}}


async def cluster(kube: KubeClient) -> None:
    for name, zone in ZONES.items():
        await create_node(kube, name, labels={ZONE: zone, "kubernetes.io/hostname": name})
    await kube.create(STORAGE_CLASSES, None, storage_class())


async def statefulset(kube: KubeClient, name: str, replicas: int, storage: str = "gp3", cpu: str = "1") -> None:
    """A StatefulSet's gang: a PodGroup, and per ordinal a claim ``data-<name>-<i>`` and the pod naming it."""
    await kube.create(PODGROUPS, NS, podgroup(name, replicas))
    for i in range(replicas):
        await kube.create(PERSISTENT_VOLUME_CLAIMS, NS, claim(f"data-{name}-{i}", storage))
        await kube.create(PODS, NS, volume_pod(f"{name}-{i}", name, f"data-{name}-{i}", cpu=cpu))


async def bind_claim(kube: KubeClient, pvc: dict[str, Any], pv_name: str) -> None:
    """What the PV controller does once a PV is the claim's: ``volumeName``, bind-completed, phase Bound."""
    name = pvc["metadata"]["name"]
    await kube.patch(PERSISTENT_VOLUME_CLAIMS, NS, name, {"metadata": {"annotations": {
        BIND_COMPLETED: "yes", "pv.kubernetes.io/bound-by-controller": "yes"}}, "spec": {"volumeName": pv_name}})
    await kube.patch(PERSISTENT_VOLUME_CLAIMS, NS, name, {"status": {"phase": "Bound"}}, sub="status")
    await kube.patch(PERSISTENT_VOLUMES, None, pv_name, {"status": {"phase": "Bound"}}, sub="status")


async def reconcile(kube: KubeClient, provision: bool) -> None:
    claims, _ = await kube.list(PERSISTENT_VOLUME_CLAIMS)
    volumes, _ = await kube.list(PERSISTENT_VOLUMES)
    for pvc in claims:
        meta, spec = pvc["metadata"], pvc["spec"]
        if spec.get("volumeName"):
            continue
        mine = [v for v in volumes if (v["spec"].get("claimRef") or {}).get("uid") == meta["uid"]]
        if mine:  # static binding: the scheduler wrote the PV's claimRef
            await bind_claim(kube, pvc, mine[0]["metadata"]["name"])
            continue
        node = (meta.get("annotations") or {}).get(SELECTED_NODE)
        if node is None or not provision:
            continue
        pv_name = f"pvc-{meta['uid']}"
        await kube.create(PERSISTENT_VOLUMES, None, {
            "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv_name},
            "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                     "storageClassName": spec["storageClassName"],
                     "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": f"vol-{meta['name']}"},
                     "claimRef": {"kind": "PersistentVolumeClaim", "namespace": NS, "name": meta["name"],
                                  "uid": meta["uid"]},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": ZONE, "operator": "In", "values": [ZONES[node]]}]}]}}},
            "status": {"phase": "Bound"}})
        await bind_claim(kube, pvc, pv_name)


@contextlib.asynccontextmanager
async def pv_controller(kube: KubeClient, provision: bool = True) -> AsyncIterator[None]:
    """The PV controller and the external provisioner, reconciling every 200 ms of loop time."""
    async def loop() -> None:
        while True:
            await reconcile(kube, provision)
            await asyncio.sleep(0.2)

    task = asyncio.create_task(loop(), name="pv-controller")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def is_annotation(r: Any) -> bool:
    return (r.method == "PATCH" and r.resource is not None and r.resource.plural == "persistentvolumeclaims"
            and SELECTED_NODE in ((r.data or {}).get("metadata") or {}).get("annotations", {}))


def is_claim_bound(r: Any) -> bool:
    return (r.method == "PATCH" and r.resource is not None and r.resource.plural == "persistentvolumeclaims"
            and "volumeName" in ((r.data or {}).get("spec") or {}))


def is_binding(r: Any) -> bool:
    return r.method == "POST" and r.subresource == "binding"


async def annotations(kube: KubeClient) -> dict[str, str | None]:
    claims, _ = await kube.list(PERSISTENT_VOLUME_CLAIMS)
    return {c["metadata"]["name"]: (c["metadata"].get("annotations") or {}).get(SELECTED_NODE) for c in claims}


async def event_with(kube: KubeClient, text: str) -> str | None:
    items, _ = await kube.list(EVENTS)
    return next((e["note"] for e in items if e.get("reason") == "FailedScheduling" and text in e["note"]), None)


@pytest.mark.looptime
async def test_gang_claims_are_annotated_and_bound_before_any_member_is_bound(k8s: ApiServer,
                                                                            kube: KubeClient) -> None:
    await cluster(kube)
    await statefulset(kube, "kafka", 3)
    async with pv_controller(kube), running(kube):
        placed = await until(lambda: bound_at_least(kube, "kafka-", 3), what="gang bound")
    chosen = await annotations(kube)
    assert {f"data-{p}": n for p, n in placed.items()} == chosen  # each pod where its claim was provisioned
    log = list(k8s)
    marks = [i for i, r in enumerate(log) if is_annotation(r)]
    binds = [i for i, r in enumerate(log) if is_binding(r)]
    claims_bound = [i for i, r in enumerate(log) if is_claim_bound(r)]
    assert len(marks) == 3 and len(binds) == 3 and len(claims_bound) == 3
    assert max(marks) < max(claims_bound) < min(binds)  # every claim annotated and bound before the first bind
    for name in chosen:
        pvc = await kube.get(PERSISTENT_VOLUME_CLAIMS, NS, name)
        assert pvc["status"]["phase"] == "Bound"


@pytest.mark.looptime
async def test_static_binding_writes_the_pvs_claim_ref_and_the_pv_controller_binds(k8s: ApiServer,
                                                                                 kube: KubeClient) -> None:
    await cluster(kube)
    await kube.create(STORAGE_CLASSES, None, storage_class("local", "kubernetes.io/no-provisioner"))
    for node in ZONES:
        await kube.create(PERSISTENT_VOLUMES, None, local_pv(f"local-{node}", node))
    await statefulset(kube, "pg", 2, storage="local")
    async with pv_controller(kube, provision=False), running(kube):
        placed = await until(lambda: bound_at_least(kube, "pg-", 2), what="gang bound")
    assert sorted(placed.values()) == ["n1", "n2"]
    for i in range(2):
        pvc = await kube.get(PERSISTENT_VOLUME_CLAIMS, NS, f"data-pg-{i}")
        assert pvc["spec"]["volumeName"] == f"local-{placed[f'pg-{i}']}"
        pv = await kube.get(PERSISTENT_VOLUMES, None, pvc["spec"]["volumeName"])
        assert pv["spec"]["claimRef"]["uid"] == pvc["metadata"]["uid"]
        assert pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
        assert SELECTED_NODE not in (pvc["metadata"].get("annotations") or {})  # static: the PV is written


@pytest.mark.looptime
async def test_a_claim_that_never_binds_rolls_the_gang_back_and_leaves_the_annotation(k8s: ApiServer,
                                                                                    kube: KubeClient) -> None:
    await cluster(kube)
    await statefulset(kube, "kafka", 3)
    async with running(kube, volume_binding_timeout_s=30) as sched:
        await asyncio.sleep(30)  # fake time: the plan waits for claims nobody binds
        note = await until(lambda: event_with(kube, "binding volumes failed"), timeout_s=60,
                           what="the timeout reported")
        assert await bound(kube, "kafka-") == {}  # no member of the gang is bound
        assert "binding volumes: timed out waiting for the condition (30 s; not bound: ml/data-kafka-" in note
        assert "no member bound" in note and "left in place, as kube-scheduler leaves them" in note
        first = await annotations(kube)
        assert set(first) == {"data-kafka-0", "data-kafka-1", "data-kafka-2"} and all(first.values())
        items, _ = await kube.list(EVENTS)
        told = {e["regarding"]["name"] for e in items if "binding volumes failed" in e.get("note", "")}
        assert told == {"kafka-0", "kafka-1", "kafka-2"}  # every member says why it is still pending
        assert sched.metrics.bind_failures.labels("other")._value.get() >= 1
        # the root is retried: the claims stay annotated (pinned), so the gang waits for the same volumes
        # again; once a provisioner acts on them, the gang binds exactly where they were provisioned
        async with pv_controller(kube):
            placed = await until(lambda: bound_at_least(kube, "kafka-", 3), timeout_s=120,
                                 what="gang bound once the claims bind")
    assert {f"data-{p}": n for p, n in placed.items()} == first
    annotation_writes = [r for r in list(k8s) if is_annotation(r)]
    assert len(annotation_writes) == 3  # written once: the retry found them in place


@pytest.mark.looptime
async def test_the_provisioner_withdrawing_the_annotation_fails_the_plan_at_once(k8s: ApiServer,
                                                                               kube: KubeClient) -> None:
    await cluster(kube)
    await statefulset(kube, "g", 1)

    async def provisioner_gives_up() -> None:  # as external-provisioner does to ask for rescheduling
        name = "data-g-0"
        await until(lambda: _annotated(kube, name), what="annotation written")
        await kube.patch(PERSISTENT_VOLUME_CLAIMS, NS, name, {"metadata": {"annotations": {SELECTED_NODE: None}}})

    task = asyncio.create_task(provisioner_gives_up())
    async with running(kube, volume_binding_timeout_s=600):
        note = await until(lambda: event_with(kube, "selectedNode annotation reset"), timeout_s=30,
                           what="the reset reported")
        assert 'selectedNode annotation reset for PVC "data-g-0"' in note
        assert await bound(kube, "g-") == {}
    await task


async def _annotated(kube: KubeClient, name: str) -> bool:
    pvc = await kube.get(PERSISTENT_VOLUME_CLAIMS, NS, name)
    return SELECTED_NODE in (pvc["metadata"].get("annotations") or {})


@pytest.mark.looptime
async def test_a_missing_claim_makes_the_gang_wait_until_it_is_created(k8s: ApiServer, kube: KubeClient) -> None:
    await cluster(kube)
    await kube.create(PODGROUPS, NS, podgroup("g", 1))
    await kube.create(PODS, NS, volume_pod("g-0", "g", "data"))
    async with pv_controller(kube), running(kube):
        note = await until(lambda: event_with(kube, 'persistentvolumeclaim "data" not found'), what="the wait reported")
        assert note == 'gang g: 0/1 placeable (minCount 1); persistentvolumeclaim "data" not found'
        await kube.create(PERSISTENT_VOLUME_CLAIMS, NS, claim("data"))  # VolumeBinding's hint requeues the root
        await until(lambda: bound_at_least(kube, "g-", 1), timeout_s=10, what="bound once the claim exists")
