"""DRA in the live loop against the emulated API server: claims written before any bind.

Devices come from a ResourceSlice shaped like kubernetes-sigs/dra-example-driver's (``gpu.example.com``,
``tests/data/resourceslices/dra-example-driver-gpu.yaml``), chosen by a DeviceClass with a CEL
selector. Template-generated claims are pre-created the way the resourceclaim controller makes them
(named in ``pod.status.resourceClaimStatuses``); no controller runs here, so nothing else touches them.
"""

from __future__ import annotations

import asyncio
from typing import Any

import kmock
import pytest

from scheduler.client.kube import (
    DEVICE_CLASSES,
    EVENTS,
    NAMESPACES,
    PODGROUPS,
    PODS,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    KubeClient,
)
from scheduler.live.reporter import NOT_READY_DELAY_S
from tests.integration.apiserver import ApiServer
from tests.integration.livekit import NS, bound, bound_at_least, create_node, podgroup, running, until
from tests.unit.dra.example_devices import OVER_COST_LIMIT

DRIVER = "gpu.example.com"
CLASS = "gpu.example.com"
SELECTOR = f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].model == 'LATEST-GPU-MODEL'"


def gpu_slice(node: str, n: int = 4) -> dict[str, Any]:
    devices = [{"name": f"gpu-{i}",
                "attributes": {"driverVersion": {"version": "1.0.0"}, "index": {"int": i},
                               "model": {"string": "LATEST-GPU-MODEL"}, "uuid": {"string": f"gpu-{node}-{i}"}},
                "capacity": {"memory": {"value": "80Gi"}}} for i in range(n)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{DRIVER}"},
            "spec": {"driver": DRIVER, "nodeName": node, "devices": devices,
                     "pool": {"name": node, "generation": 0, "resourceSliceCount": 1}}}


def device_class(extended: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": SELECTOR}}],
                            "config": [{"opaque": {"driver": DRIVER, "parameters": {"sharing": "none"}}}]}
    if extended:
        spec["extendedResourceName"] = extended
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": CLASS}, "spec": spec}


def claim_spec(count: int = 1) -> dict[str, Any]:
    return {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": CLASS, "count": count}}]}}


def template(name: str = "gpu-tpl", count: int = 1) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": NS}, "spec": {"spec": claim_spec(count)}}


def dra_pod(name: str, group: str | None, claims: dict[str, str] | None = None, *, template_name: str = "gpu-tpl",
            shared: str | None = None, limits: dict[str, str] | None = None) -> dict[str, Any]:
    """A pod of ours; ``claims``: claim entry → generated claim name (template entries); ``shared``: a claim
    used by name; ``limits``: container limits (extended resources)."""
    entries: list[dict[str, Any]] = [{"name": e, "resourceClaimTemplateName": template_name} for e in claims or {}]
    if shared:
        entries.append({"name": "shared", "resourceClaimName": shared})
    resources: dict[str, Any] = {"requests": {"cpu": "1"}, "claims": [{"name": e["name"]} for e in entries]}
    if limits:
        resources["limits"] = limits
    spec: dict[str, Any] = {"schedulerName": "gang-scheduler", "resourceClaims": entries,
                            "containers": [{"name": "main", "image": "example.com/x:1", "resources": resources}]}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    status: dict[str, Any] = {"phase": "Pending"}
    if claims:
        status["resourceClaimStatuses"] = [{"name": e, "resourceClaimName": c} for e, c in claims.items()]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}, "spec": spec,
            "status": status}


async def create_claim(kube: KubeClient, name: str, count: int = 1, entry: str = "gpu",
                       owner: dict[str, Any] | None = None) -> dict[str, Any]:
    """A claim as the resourceclaim controller generates it from ``gpu-tpl`` (owned by ``owner``)."""
    meta: dict[str, Any] = {"name": name, "namespace": NS,
                            "annotations": {"resource.kubernetes.io/pod-claim-name": entry}}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                                    "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                                    "controller": True, "blockOwnerDeletion": True}]
    return await kube.create(RESOURCE_CLAIMS, NS, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                                   "metadata": meta, "spec": claim_spec(count)})


async def allocate(kube: KubeClient, name: str, node: str, devices: list[str], consumer: dict[str, Any]) -> None:
    """Allocate a claim out of band (as another scheduler did), reserved for ``consumer``."""
    results = [{"request": "gpu", "driver": DRIVER, "pool": node, "device": d} for d in devices]
    selector = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}
    reserved = [{"resource": "pods", "name": consumer["metadata"]["name"], "uid": consumer["metadata"]["uid"]}]
    await kube.patch(RESOURCE_CLAIMS, NS, name, {"status": {
        "allocation": {"devices": {"results": results}, "nodeSelector": selector}, "reservedFor": reserved}},
        sub="status")


async def gpu_cluster(kube: KubeClient, nodes: int = 1, gpus: int = 4, extended: str | None = None) -> None:
    for i in range(nodes):
        await create_node(kube, f"n{i}", cpu="8")
    await kube.create(RESOURCE_SLICES, None, gpu_slice("n0", gpus))
    await kube.create(DEVICE_CLASSES, None, device_class(extended))
    await kube.create(RESOURCE_CLAIM_TEMPLATES, NS, template())


async def gang_with_claims(kube: KubeClient, name: str, n: int, count: int = 1) -> list[dict[str, Any]]:
    """A PodGroup of ``n`` pods, each with a template claim ``<pod>-gpu`` pre-created (owned by the pod)."""
    await kube.create(PODGROUPS, NS, podgroup(name, n))
    pods = []
    for i in range(n):
        pod = await kube.create(PODS, NS, dra_pod(f"{name}-{i}", name, {"gpu": f"{name}-{i}-gpu"}))
        await create_claim(kube, f"{name}-{i}-gpu", count, owner=pod)
        pods.append(pod)
    return pods


async def claim(kube: KubeClient, name: str) -> dict[str, Any]:
    return await kube.get(RESOURCE_CLAIMS, NS, name)


def devices(c: dict[str, Any]) -> list[str]:
    alloc = (c.get("status") or {}).get("allocation") or {}
    return sorted(r["device"] for r in alloc.get("devices", {}).get("results", []))


async def events(kube: KubeClient, reason: str) -> list[dict[str, Any]]:
    items, _ = await kube.list(EVENTS)
    return [e for e in items if e.get("reason") == reason]


async def event_with(kube: KubeClient, reason: str, text: str) -> str | None:
    return next((e["note"] for e in await events(kube, reason) if text in e["note"]), None)


def is_claim_status_write(r: Any, name: str | None = None) -> bool:
    return (r.method == "PATCH" and r.resource is not None and r.resource.plural == "resourceclaims"
            and r.subresource == "status" and (name is None or r.name == name))


def is_binding(r: Any) -> bool:
    return r.method == "POST" and r.subresource == "binding"


def claim_status_writes(k8s: ApiServer, name: str | None = None) -> list[Any]:
    return [r for r in list(k8s) if is_claim_status_write(r, name)]


@pytest.mark.looptime
async def test_gang_claims_are_allocated_and_reserved_before_any_pod_is_bound(k8s: ApiServer,
                                                                             kube: KubeClient) -> None:
    await gpu_cluster(kube)
    pods = await gang_with_claims(kube, "g", 2)
    async with running(kube):
        placed = await until(lambda: bound_at_least(kube, "g-", 2), what="gang bound")
    assert placed == {"g-0": "n0", "g-1": "n0"}
    taken: list[str] = []
    for pod in pods:
        name = pod["metadata"]["name"]
        c = await claim(kube, f"{name}-gpu")
        status = c["status"]
        assert status["reservedFor"] == [{"resource": "pods", "name": name, "uid": pod["metadata"]["uid"]}]
        alloc = status["allocation"]
        assert [(r["request"], r["driver"], r["pool"]) for r in alloc["devices"]["results"]] == [("gpu", DRIVER, "n0")]
        assert alloc["nodeSelector"] == {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["n0"]}]}]}
        assert alloc["allocationTimestamp"]
        assert alloc["devices"]["config"] == [{"source": "FromClass", "requests": ["gpu"], "opaque": {
            "driver": DRIVER, "parameters": {"sharing": "none"}}}]
        taken += devices(c)
    assert len(set(taken)) == 2
    log = list(k8s)
    writes = [i for i, r in enumerate(log) if is_claim_status_write(r)]
    binds = [i for i, r in enumerate(log) if is_binding(r)]
    assert len(writes) == 2 and len(binds) == 2
    assert max(writes) < min(binds)  # every claim status write precedes the first binding


@pytest.mark.looptime
async def test_conflict_on_a_claim_write_binds_no_pod_and_requeues_the_root(k8s: ApiServer, kube: KubeClient) -> None:
    await gpu_cluster(kube)
    await gang_with_claims(kube, "g", 2)
    view = k8s['patch resource.k8s.io/v1/resourceclaims', kmock.subresource('status')]
    view[0:1] << 409 << {"kind": "Status", "code": 409, "reason": "Conflict",
                         "message": "the object has been modified; please apply your changes to the latest version"}
    async with running(kube, bind_concurrency=1) as sched:
        note = await until(lambda: event_with(kube, "FailedScheduling", "writing ResourceClaim"),
                           what="claim conflict reported")
        assert "409" in note and "no member bound" in note and "requeued" in note
        await until(lambda: bound_at_least(kube, "g-", 2), what="gang bound after the requeue")
        assert sched.metrics.bind_failures.labels("conflict")._value.get() == 1
    log = list(k8s)
    writes = [i for i, r in enumerate(log) if is_claim_status_write(r)]
    binds = [i for i, r in enumerate(log) if is_binding(r)]
    assert len(binds) == 2
    # bind_concurrency=1: the 409 stopped the plan before its second claim; the requeued plan wrote both
    assert len(writes) == 3 and writes[0] < writes[1] < writes[2] < min(binds)
    for name in ("g-0-gpu", "g-1-gpu"):
        assert len(devices(await claim(kube, name))) == 1


@pytest.mark.looptime
async def test_failure_after_a_claim_was_written_rolls_it_back_before_any_bind(k8s: ApiServer,
                                                                              kube: KubeClient) -> None:
    await gpu_cluster(kube)
    await gang_with_claims(kube, "g", 2)
    view = k8s['patch resource.k8s.io/v1/resourceclaims', kmock.subresource('status')]
    view[1:2] << 403 << {"kind": "Status", "code": 403, "reason": "Forbidden", "message": "injected"}
    async with running(kube, bind_concurrency=1):
        note = await until(lambda: event_with(kube, "FailedScheduling", "writing ResourceClaim"),
                           what="claim failure reported")
        assert "403" in note and "1 claim write(s) rolled back" in note
        await until(lambda: bound_at_least(kube, "g-", 2), what="gang bound after the requeue")
    log = list(k8s)
    writes = [r for r in log if is_claim_status_write(r)]
    first = writes[0].name
    # round 1: first claim written, second refused (403), first rolled back; then round 2 writes both
    assert writes[1].name != first and writes[2].name == first
    assert writes[0].data["status"]["allocation"] and writes[2].data["status"] == {"reservedFor": None,
                                                                                  "allocation": None}
    first_bind = min(i for i, r in enumerate(log) if is_binding(r))
    assert log.index(writes[2]) < log.index(writes[3]) < first_bind


@pytest.mark.looptime
async def test_podgroup_claim_is_allocated_once_and_reserved_for_the_podgroup(k8s: ApiServer,
                                                                            kube: KubeClient) -> None:
    await gpu_cluster(kube, nodes=2)
    group = podgroup("g", 2)
    group["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": "gpu-tpl"}]
    group["status"] = {"resourceClaimStatuses": [{"name": "gpus", "resourceClaimName": "g-gpus"}]}
    pg = await kube.create(PODGROUPS, NS, group)
    await create_claim(kube, "g-gpus", count=2, entry="gpus", owner=pg)
    for i in range(2):
        await kube.create(PODS, NS, dra_pod(f"g-{i}", "g", {"gpus": "g-gpus"}))
    async with running(kube):
        placed = await until(lambda: bound_at_least(kube, "g-", 2), what="gang bound")
    assert set(placed.values()) == {"n0"}  # the only node that reaches the group's devices
    c = await claim(kube, "g-gpus")
    assert c["status"]["reservedFor"] == [{"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "g",
                                           "uid": pg["metadata"]["uid"]}]
    assert len(devices(c)) == 2
    assert len(claim_status_writes(k8s, "g-gpus")) == 1  # allocated once for the whole group


@pytest.mark.looptime
async def test_extended_resource_served_through_dra_gets_a_claim_and_the_pod_mapping(k8s: ApiServer,
                                                                                   kube: KubeClient) -> None:
    await gpu_cluster(kube, extended="example.com/gpu")
    pod = await kube.create(PODS, NS, dra_pod("x", None, limits={"example.com/gpu": "2"}))
    async with running(kube):
        await until(lambda: bound_at_least(kube, "x", 1), what="pod bound")
    items, _ = await kube.list(RESOURCE_CLAIMS, NS)
    (c,) = items
    meta = c["metadata"]
    assert meta["name"].startswith("x-extended-resources-")
    assert meta["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert meta["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "x", "uid": pod["metadata"]["uid"],
                                        "controller": True, "blockOwnerDeletion": True}]
    assert c["spec"] == {"devices": {"requests": [{"name": "container-0-request-1", "exactly": {
        "deviceClassName": CLASS, "allocationMode": "ExactCount", "count": 2}}]}}
    assert len(devices(c)) == 2
    assert c["status"]["reservedFor"] == [{"resource": "pods", "name": "x", "uid": pod["metadata"]["uid"]}]
    got = await kube.get(PODS, NS, "x")
    assert got["status"]["extendedResourceClaimStatus"] == {
        "requestMappings": [{"containerName": "main", "resourceName": "example.com/gpu",
                             "requestName": "container-0-request-1"}],
        "resourceClaimName": meta["name"]}
    log = list(k8s)
    order = [("create" if r.method == "POST" and r.resource is not None and r.resource.plural == "resourceclaims"
              else "claim" if is_claim_status_write(r) else "pod-status" if r.method == "PATCH"
              and r.subresource == "status" and r.name == "x" and "extendedResourceClaimStatus" in (r.data or {}).get(
                  "status", {}) else "bind" if is_binding(r) else None) for r in log]
    assert [o for o in order if o] == ["create", "claim", "pod-status", "bind"]


@pytest.mark.looptime
async def test_extended_resource_claim_left_by_a_failed_attempt_is_replaced_not_doubled(k8s: ApiServer,
                                                                                     kube: KubeClient) -> None:
    """A failed attempt whose rollback could not delete its claim leaves it created, allocated (gpu-0, gpu-1) and
    reserved for the pod: the next attempt deletes it before creating the pod's claim (as kube-scheduler's
    PostFilter deletes the claim ``findExtendedResourceClaim`` finds), so the pod ends with one claim, allocated."""
    await gpu_cluster(kube, extended="example.com/gpu")
    pod = await kube.create(PODS, NS, dra_pod("x", None, limits={"example.com/gpu": "2"}))
    owner = {"apiVersion": "v1", "kind": "Pod", "name": "x", "uid": pod["metadata"]["uid"], "controller": True,
             "blockOwnerDeletion": True}
    await kube.create(RESOURCE_CLAIMS, NS, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "x-extended-resources-old", "namespace": NS, "ownerReferences": [owner],
                     "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"}},
        "spec": {"devices": {"requests": [{"name": "container-0-request-1", "exactly": {
            "deviceClassName": CLASS, "allocationMode": "ExactCount", "count": 2}}]}}})
    results = [{"request": "container-0-request-1", "driver": DRIVER, "pool": "n0", "device": d}
               for d in ("gpu-0", "gpu-1")]
    await kube.patch(RESOURCE_CLAIMS, NS, "x-extended-resources-old", {"status": {
        "allocation": {"devices": {"results": results}},
        "reservedFor": [{"resource": "pods", "name": "x", "uid": pod["metadata"]["uid"]}]}}, sub="status")
    async with running(kube):
        await until(lambda: bound_at_least(kube, "x", 1), what="pod bound")
    items, _ = await kube.list(RESOURCE_CLAIMS, NS)
    (c,) = items  # the leftover is gone; only the claim of this attempt remains
    name = c["metadata"]["name"]
    assert name.startswith("x-extended-resources-") and name != "x-extended-resources-old"
    assert c["metadata"]["ownerReferences"] == [owner]
    assert devices(c) == ["gpu-2", "gpu-3"]  # the plan was made while the leftover still held gpu-0 and gpu-1
    assert c["status"]["reservedFor"] == [{"resource": "pods", "name": "x", "uid": pod["metadata"]["uid"]}]
    got = await kube.get(PODS, NS, "x")
    assert got["status"]["extendedResourceClaimStatus"]["resourceClaimName"] == name
    writes = [("delete" if r.method == "DELETE" else "create") for r in list(k8s)
              if r.resource is not None and r.resource.plural == "resourceclaims" and r.method in ("DELETE", "POST")]
    assert writes == ["create", "delete", "create"]  # the test's leftover, its deletion, the pod's claim


@pytest.mark.looptime
async def test_extended_resource_in_a_mixed_cluster_is_served_node_by_node(k8s: ApiServer, kube: KubeClient) -> None:
    """dp offers 4 nvidia.com/gpu by device plugin, n0 lists none and publishes 4 devices of a class serving it: of
    a gang of two members asking for 3 each, the one on dp gets no claim (the node's allocatable serves it), the
    one on n0 gets a claim of 3 of n0's devices and the mapping in its status (the requests named as
    kube-scheduler names them: ``j`` counts every resource of the container's requests, cpu first)."""
    await gpu_cluster(kube, extended="nvidia.com/gpu")
    await create_node(kube, "dp", cpu="8", gpu=4)
    await kube.create(PODGROUPS, NS, podgroup("g", 2))
    pods = {i: await kube.create(PODS, NS, dra_pod(f"g-{i}", "g", limits={"nvidia.com/gpu": "3"})) for i in range(2)}
    async with running(kube):
        where = await until(lambda: bound_at_least(kube, "g-", 2), what="gang bound")
    assert sorted(where.values()) == ["dp", "n0"]
    on_dra = next(name for name, node in where.items() if node == "n0")
    on_dp = next(name for name, node in where.items() if node == "dp")
    items, _ = await kube.list(RESOURCE_CLAIMS, NS)
    (c,) = items
    uid = next(p["metadata"]["uid"] for p in pods.values() if p["metadata"]["name"] == on_dra)
    assert c["metadata"]["ownerReferences"][0]["name"] == on_dra
    assert c["spec"] == {"devices": {"requests": [{"name": "container-0-request-1", "exactly": {
        "deviceClassName": CLASS, "allocationMode": "ExactCount", "count": 3}}]}}
    assert len(devices(c)) == 3 and {r["pool"] for r in c["status"]["allocation"]["devices"]["results"]} == {"n0"}
    assert c["status"]["reservedFor"] == [{"resource": "pods", "name": on_dra, "uid": uid}]
    assert (await kube.get(PODS, NS, on_dra))["status"]["extendedResourceClaimStatus"] == {
        "requestMappings": [{"containerName": "main", "resourceName": "nvidia.com/gpu",
                             "requestName": "container-0-request-1"}],
        "resourceClaimName": c["metadata"]["name"]}
    assert "extendedResourceClaimStatus" not in (await kube.get(PODS, NS, on_dp))["status"]


@pytest.mark.looptime
async def test_devices_of_an_allocated_claim_are_not_given_to_another_pod(k8s: ApiServer, kube: KubeClient) -> None:
    await gpu_cluster(kube)
    running_pod = await kube.create(PODS, NS, dra_pod("old", None, {"gpu": "old-gpu"}) | {
        "spec": {**dra_pod("old", None, {"gpu": "old-gpu"})["spec"], "nodeName": "n0", "schedulerName": "other"}})
    await create_claim(kube, "old-gpu", count=3, owner=running_pod)
    await allocate(kube, "old-gpu", "n0", ["gpu-0", "gpu-1", "gpu-2"], running_pod)
    for name in ("a", "b"):
        pod = await kube.create(PODS, NS, dra_pod(name, None, {"gpu": f"{name}-gpu"}))
        await create_claim(kube, f"{name}-gpu", owner=pod)
    async with running(kube):
        async def one_bound() -> bool:  # await both: `coroutine or coroutine` would only ever await the first
            return bool(await bound_at_least(kube, "a", 1) or await bound_at_least(kube, "b", 1))

        await until(one_bound, what="one pod bound")
        await asyncio.sleep(5)
        got = {name: devices(await claim(kube, f"{name}-gpu")) for name in ("a", "b")}
        assert sorted(got.values()) == [[], ["gpu-3"]]  # the only free device; the other pod waits
        waiting = "b" if got["a"] else "a"
        assert await event_with(kube, "FailedScheduling", "cannot allocate all claims")
        await kube.delete(RESOURCE_CLAIMS, NS, "old-gpu")  # its owner finished: the claim is gone
        await until(lambda: bound_at_least(kube, waiting, 1), what="waiting pod bound once devices were freed")
        assert len(devices(await claim(kube, f"{waiting}-gpu"))) == 1


@pytest.mark.looptime
async def test_deallocated_claim_frees_its_devices_for_a_waiting_gang(k8s: ApiServer, kube: KubeClient) -> None:
    await gpu_cluster(kube)
    holder = await kube.create(PODS, NS, dra_pod("holder", None, {"gpu": "holder-gpu"}))
    await create_claim(kube, "holder-gpu", count=2, owner=holder)
    await allocate(kube, "holder-gpu", "n0", ["gpu-0", "gpu-1"], holder)
    await gang_with_claims(kube, "g", 2, count=2)
    async with running(kube):
        await until(lambda: event_with(kube, "FailedScheduling", "gang g: 1/2 placeable"), what="gang waits")
        assert await bound(kube, "g-") == {}
        # the claim's consumer is gone: its reservation and then its allocation are removed
        current = await claim(kube, "holder-gpu")
        await kube.patch(RESOURCE_CLAIMS, NS, "holder-gpu", {
            "metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
            "status": {"reservedFor": None, "allocation": None}}, sub="status")
        await until(lambda: bound_at_least(kube, "g-", 2), what="gang bound once the devices were freed")
    taken = devices(await claim(kube, "g-0-gpu")) + devices(await claim(kube, "g-1-gpu"))
    assert sorted(taken) == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]


@pytest.mark.looptime
async def test_pod_sharing_an_allocated_claim_is_pinned_and_added_to_its_reservations(k8s: ApiServer,
                                                                                    kube: KubeClient) -> None:
    await gpu_cluster(kube, nodes=2)
    first = await kube.create(PODS, NS, dra_pod("first", None, shared="shared-gpu") | {
        "spec": {**dra_pod("first", None, shared="shared-gpu")["spec"], "nodeName": "n0", "schedulerName": "other"}})
    await create_claim(kube, "shared-gpu")
    await allocate(kube, "shared-gpu", "n0", ["gpu-0"], first)
    second = await kube.create(PODS, NS, dra_pod("second", None, shared="shared-gpu"))
    async with running(kube):
        placed = await until(lambda: bound_at_least(kube, "second", 1), what="pod bound")
    assert placed == {"second": "n0"}  # where the allocation's nodeSelector allows
    c = await claim(kube, "shared-gpu")
    assert [r["name"] for r in c["status"]["reservedFor"]] == ["first", "second"]
    assert c["status"]["reservedFor"][1]["uid"] == second["metadata"]["uid"]
    assert devices(c) == ["gpu-0"]


@pytest.mark.looptime
async def test_devices_of_plans_in_flight_are_held_until_the_watch_shows_their_claims(k8s: ApiServer,
                                                                                    kube: KubeClient) -> None:
    await gpu_cluster(kube)
    for i in range(5):  # lone pods, one root each: planned one after another while earlier claims are in flight
        pod = await kube.create(PODS, NS, dra_pod(f"p{i}", None, {"gpu": f"p{i}-gpu"}))
        await create_claim(kube, f"p{i}-gpu", owner=pod)
    async with running(kube) as sched:
        await until(lambda: bound_at_least(kube, "p", 4), what="four pods bound")
        await asyncio.sleep(5)
        assert len(await bound(kube, "p")) == 4  # four GPUs: the fifth pod waits
        assert sched.cache.devices.held == {}  # every assumption ended with the watch
    taken = [d for i in range(5) for d in devices(await claim(kube, f"p{i}-gpu"))]
    assert sorted(taken) == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]


@pytest.mark.looptime
async def test_a_later_cycle_does_not_reuse_the_devices_of_a_plan_still_writing_its_claims(
        k8s: ApiServer, kube: KubeClient) -> None:
    await gpu_cluster(kube, gpus=1)
    view = k8s['patch resource.k8s.io/v1/resourceclaims', kmock.subresource('status')]
    view[0:3] << 500 << {"kind": "Status", "code": 500, "reason": "InternalError", "message": "slow etcd"}
    pod = await kube.create(PODS, NS, dra_pod("p0", None, {"gpu": "p0-gpu"}))
    await create_claim(kube, "p0-gpu", owner=pod)
    async with running(kube):
        await until(lambda: len(view) >= 1, what="first claim write attempted")
        pod = await kube.create(PODS, NS, dra_pod("p1", None, {"gpu": "p1-gpu"}))  # planned while p0's write retries
        await create_claim(kube, "p1-gpu", owner=pod)
        await until(lambda: bound_at_least(kube, "p0", 1), what="p0 bound after the retries")
        await asyncio.sleep(5)
    assert await bound(kube, "p1") == {}
    assert devices(await claim(kube, "p0-gpu")) == ["gpu-0"]
    assert devices(await claim(kube, "p1-gpu")) == []


@pytest.mark.looptime
async def test_a_failed_bind_releases_the_claims_of_the_members_left_unbound(k8s: ApiServer, kube: KubeClient) -> None:
    await gpu_cluster(kube)
    await gang_with_claims(kube, "g", 2)
    view = k8s['post v1/pods', kmock.subresource('binding'), kmock.name('g-1')]
    view[0:1] << 409 << {"kind": "Status", "code": 409, "reason": "Conflict", "message": "injected conflict"}
    async with running(kube, bind_concurrency=1):
        await until(lambda: event_with(kube, "FailedScheduling", "binding ml/g-1 failed"), what="bind failure")
        await until(lambda: bound_at_least(kube, "g-", 2), what="gang bound after the requeue")
    kept = claim_status_writes(k8s, "g-0-gpu")
    assert len(kept) == 1  # g-0 was bound: its claim stays as written
    writes = claim_status_writes(k8s, "g-1-gpu")
    assert [bool(w.data["status"].get("allocation")) for w in writes] == [True, False, True]
    assert writes[1].data["status"] == {"reservedFor": None, "allocation": None}  # rolled back, then re-planned
    assert len(devices(await claim(kube, "g-1-gpu"))) == 1


@pytest.mark.looptime
async def test_without_the_dra_api_pods_with_claims_wait_and_the_rest_is_scheduled(k8s: ApiServer,
                                                                                 kube: KubeClient) -> None:
    for plural in ("resourceslices", "deviceclasses", "resourceclaims", "resourceclaimtemplates"):
        del k8s.resources[f"resource.k8s.io/v1/{plural}"]
    await create_node(kube, "n0", cpu="8")
    await kube.create(PODS, NS, dra_pod("with-claim", None, {"gpu": "with-claim-gpu"}))
    await kube.create(PODS, NS, dra_pod("plain", None))
    async with running(kube) as sched:
        assert not sched.cache.objects["ResourceClaim"]
        await until(lambda: bound_at_least(kube, "plain", 1), what="plain pod bound")
        note = await until(lambda: event_with(kube, "NotReadyForScheduling", "waiting for ResourceClaim"),
                           what="pod with a claim waits")
        assert "claim 'gpu' (template gpu-tpl) to be created" in note
        assert await events(kube, "FailedScheduling") == []  # not tried: its claim cannot exist
        assert {i.resource.plural for i in sched.watches.informers}.isdisjoint({"resourceslices", "resourceclaims"})
    assert await bound(kube, "with-claim") == {}


async def named_claim_cluster(kube: KubeClient) -> None:
    """Two nodes with four GPUs each (their own slices), the class, and no template."""
    for node in ("n0", "n1"):
        await create_node(kube, node, cpu="8")
        await kube.create(RESOURCE_SLICES, None, gpu_slice(node, 4))
    await kube.create(DEVICE_CLASSES, None, device_class())


@pytest.mark.looptime
async def test_pods_each_naming_their_own_claim_are_bound_with_each_claim_on_its_pods_node(
        k8s: ApiServer, kube: KubeClient) -> None:
    """Per-pod named claims, live: four pods, each with ``resourceClaimName`` of its own 2-GPU claim."""
    await named_claim_cluster(kube)
    await kube.create(PODGROUPS, NS, podgroup("quad", 4))
    for i in range(4):
        await kube.create(RESOURCE_CLAIMS, NS, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                                "metadata": {"name": f"quad-{i}-gpu", "namespace": NS},
                                                "spec": claim_spec(2)})
        await kube.create(PODS, NS, dra_pod(f"quad-{i}", "quad", shared=f"quad-{i}-gpu"))
    async with running(kube):
        placed = await until(lambda: bound_at_least(kube, "quad-", 4), what="gang bound")
    assert sorted(placed.values()) == ["n0", "n0", "n1", "n1"]
    for i in range(4):
        c = await claim(kube, f"quad-{i}-gpu")
        results = c["status"]["allocation"]["devices"]["results"]
        assert {r["pool"] for r in results} == {placed[f"quad-{i}"]} and len(results) == 2
        assert [r["name"] for r in c["status"]["reservedFor"]] == [f"quad-{i}"]


@pytest.mark.looptime
async def test_two_claims_shared_by_different_pairs_of_one_gang_need_no_common_node(
        k8s: ApiServer, kube: KubeClient) -> None:
    """Claims shared by name, live: pods a-0/a-1 share ``claim-a``, b-0/b-1 share ``claim-b``; each pair lands where its
    claim's device is, the pairs on different nodes (each node has room for only two pods)."""
    for node in ("n0", "n1"):
        await create_node(kube, node, cpu="2")
        await kube.create(RESOURCE_SLICES, None, gpu_slice(node, 1))
    await kube.create(DEVICE_CLASSES, None, device_class())
    await kube.create(PODGROUPS, NS, podgroup("pairs", 4))
    for name in ("claim-a", "claim-b"):
        await kube.create(RESOURCE_CLAIMS, NS, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                                "metadata": {"name": name, "namespace": NS}, "spec": claim_spec(1)})
    for pair in ("a", "b"):
        for i in range(2):
            await kube.create(PODS, NS, dra_pod(f"{pair}-{i}", "pairs", shared=f"claim-{pair}"))
    async with running(kube):
        placed = await until(lambda: bound_at_least(kube, "", 4), what="gang bound")
    assert placed["a-0"] == placed["a-1"] != placed["b-0"] == placed["b-1"]
    for pair in ("a", "b"):
        c = await claim(kube, f"claim-{pair}")
        assert sorted(r["name"] for r in c["status"]["reservedFor"]) == [f"{pair}-0", f"{pair}-1"]
        assert {r["pool"] for r in c["status"]["allocation"]["devices"]["results"]} == {placed[f"{pair}-0"]}


@pytest.mark.looptime
async def test_a_claim_named_by_two_roots_is_allocated_once_live(k8s: ApiServer, kube: KubeClient) -> None:
    """A claim shared by name between roots is allocated once (a live cache once allocated it twice: gpu-0 for
    the first root, gpu-1 for the second)."""
    await named_claim_cluster(kube)
    await kube.create(RESOURCE_CLAIMS, NS, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                            "metadata": {"name": "shared", "namespace": NS}, "spec": claim_spec(1)})
    for root, name in (("r1", "x"), ("r2", "y")):
        await kube.create(PODGROUPS, NS, podgroup(root, 1))
        await kube.create(PODS, NS, dra_pod(name, root, shared="shared"))
    async with running(kube):
        await until(lambda: bound_at_least(kube, "x", 1), what="x bound")
        await until(lambda: bound_at_least(kube, "y", 1), what="y bound")
    allocations = [r for r in claim_status_writes(k8s, "shared")
                   if "allocation" in ((r.data or {}).get("status") or {})]
    assert len(allocations) == 1
    c = await claim(kube, "shared")
    assert len(devices(c)) == 1
    assert sorted(r["name"] for r in c["status"]["reservedFor"]) == ["x", "y"]


@pytest.mark.looptime
async def test_members_own_claims_are_allocated_together_when_the_first_choice_is_the_only_fit_of_the_second(
        kube: KubeClient) -> None:
    """Two members, each naming its own claim: ``p-0`` accepts any GPU, ``p-1`` only gpu-0 (index 0).
    Reserved first, ``p-0`` takes gpu-0; the search gives it back and both claims are written with each
    member's fitting device before the gang is bound."""
    await gpu_cluster(kube, gpus=2)
    await kube.create(PODGROUPS, NS, podgroup("p", 2))
    only_first = [{"cel": {"expression": f"device.attributes['{DRIVER}'].index == 0"}}]
    for i, selectors in enumerate(([], only_first)):
        exactly: dict[str, Any] = {"deviceClassName": CLASS, "selectors": selectors}
        await kube.create(RESOURCE_CLAIMS, NS, {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"p-{i}-gpu", "namespace": NS},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}})
        await kube.create(PODS, NS, dra_pod(f"p-{i}", "p", shared=f"p-{i}-gpu"))
    async with running(kube):
        placed = await until(lambda: bound_at_least(kube, "p-", 2), what="gang bound")
    assert placed == {"p-0": "n0", "p-1": "n0"}
    assert devices(await claim(kube, "p-0-gpu")) == ["gpu-1"]
    assert devices(await claim(kube, "p-1-gpu")) == ["gpu-0"]


@pytest.mark.looptime
async def test_an_invalid_pool_is_not_used_and_the_gang_is_told_so(kube: KubeClient) -> None:
    """The node's pool is published as two slices that both list gpu-0..gpu-1 (a duplicate device name):
    kube-scheduler ignores such a pool, so the gang is not bound and its event gives the allocator's reason."""
    await create_node(kube, "n0", cpu="8")
    for suffix in ("a", "b"):
        body = gpu_slice("n0", 2)
        body["metadata"]["name"] += f"-{suffix}"
        body["spec"]["pool"]["resourceSliceCount"] = 2
        await kube.create(RESOURCE_SLICES, None, body)
    await kube.create(DEVICE_CLASSES, None, device_class())
    await kube.create(RESOURCE_CLAIM_TEMPLATES, NS, template())
    await gang_with_claims(kube, "g", 2)
    async with running(kube):
        note = await until(lambda: event_with(kube, "FailedScheduling", "invalid resource pools were encountered"),
                           what="invalid pool reported")
    assert "0/1 nodes are available: 1 invalid resource pools were encountered." in note
    assert devices(await claim(kube, "g-0-gpu")) == [] and devices(await claim(kube, "g-1-gpu")) == []


@pytest.mark.looptime
async def test_a_claim_whose_selector_is_over_the_cost_limit_is_refused_with_the_api_servers_reason(
        k8s: ApiServer, kube: KubeClient) -> None:
    """A claim the API server would have refused (``too complex, exceeds cost limit``) but that reached the
    cluster anyway (this emulator does not estimate CEL costs): never evaluated, nothing written, nobody
    bound, the gang told why."""
    await gpu_cluster(kube)
    await kube.create(PODGROUPS, NS, podgroup("g", 1))
    pod = await kube.create(PODS, NS, dra_pod("g-0", "g", shared="costly"))
    request = {"name": "gpu", "exactly": {"deviceClassName": CLASS,
                                          "selectors": [{"cel": {"expression": OVER_COST_LIMIT}}]}}
    await kube.create(RESOURCE_CLAIMS, NS, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "spec": {"devices": {"requests": [request]}},
        "metadata": {"name": "costly", "namespace": NS, "ownerReferences": [{
            "apiVersion": "v1", "kind": "Pod", "name": "g-0", "uid": pod["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}]}})
    async with running(kube):
        note = await until(lambda: event_with(kube, "FailedScheduling", "exceeds cost limit"), what="the refusal")
    assert (f"ResourceClaim {NS}/costly is invalid: request 'gpu': CEL selector {OVER_COST_LIMIT!r}: CEL compile "
            "error: too complex, exceeds cost limit (estimated cost 24,714,531, limit 1,000,000)") in note
    assert devices(await claim(kube, "costly")) == []
    assert claim_status_writes(k8s) == [] and not [r for r in list(k8s) if is_binding(r)]


async def admin_claim(kube: KubeClient, name: str, owner: dict[str, Any]) -> None:
    """A claim asking for one GPU with ``adminAccess`` (a monitoring agent's), owned by ``owner``."""
    spec = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": CLASS, "adminAccess": True}}]}}
    await kube.create(RESOURCE_CLAIMS, NS, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "spec": spec,
        "metadata": {"name": name, "namespace": NS, "ownerReferences": [{
            "apiVersion": "v1", "kind": "Pod", "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}]}})


@pytest.mark.looptime
async def test_admin_access_gets_a_device_already_allocated_without_taking_it(k8s: ApiServer,
                                                                              kube: KubeClient) -> None:
    await kube.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": NS, "labels": {"resource.kubernetes.io/admin-access": "true"}}})
    await gpu_cluster(kube, gpus=1)
    running_pod = await kube.create(PODS, NS, dra_pod("old", None, {"gpu": "old-gpu"}) | {
        "spec": {**dra_pod("old", None, {"gpu": "old-gpu"})["spec"], "nodeName": "n0", "schedulerName": "other"}})
    await create_claim(kube, "old-gpu", owner=running_pod)
    await allocate(kube, "old-gpu", "n0", ["gpu-0"], running_pod)  # the only GPU is in use
    monitor = await kube.create(PODS, NS, dra_pod("monitor", None, shared="monitor-gpu"))
    await admin_claim(kube, "monitor-gpu", monitor)
    async with running(kube):
        await until(lambda: bound_at_least(kube, "monitor", 1), what="the admin pod bound")
    c = await claim(kube, "monitor-gpu")
    assert c["status"]["allocation"]["devices"]["results"] == [
        {"request": "gpu", "driver": DRIVER, "pool": "n0", "device": "gpu-0", "adminAccess": True}]
    assert devices(await claim(kube, "old-gpu")) == ["gpu-0"]  # still the running pod's


@pytest.mark.looptime
async def test_admin_access_outside_an_admin_namespace_is_refused_with_the_api_servers_reason(
        k8s: ApiServer, kube: KubeClient) -> None:
    await kube.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    await gpu_cluster(kube, gpus=1)
    monitor = await kube.create(PODS, NS, dra_pod("monitor", None, shared="monitor-gpu"))
    await admin_claim(kube, "monitor-gpu", monitor)
    async with running(kube):
        note = await until(lambda: event_with(kube, "FailedScheduling", "admin access"), what="the refusal")
    assert "admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the " \
           "containing namespace" in note
    assert devices(await claim(kube, "monitor-gpu")) == []
    assert not await bound_at_least(kube, "monitor", 1)


ATTACHED = "gpu.example.com/FabricAttached"
ATTACH_FAILED = "gpu.example.com/FabricAttachFailed"


async def fabric_cluster(kube: KubeClient) -> None:
    """One node, four GPUs whose use needs the driver to attach a fabric first (KEP-5007 binding conditions)."""
    await create_node(kube, "n0", cpu="8")
    gpus = gpu_slice("n0", 4)
    for device in gpus["spec"]["devices"]:
        device |= {"bindingConditions": [ATTACHED], "bindingFailureConditions": [ATTACH_FAILED]}
    await kube.create(RESOURCE_SLICES, None, gpus)
    await kube.create(DEVICE_CLASSES, None, device_class())
    await kube.create(RESOURCE_CLAIM_TEMPLATES, NS, template())


async def driver_reports(kube: KubeClient, name: str, condition: str) -> str:
    """Play the driver: once claim ``name`` is allocated, set ``condition`` True on its device in
    ``status.devices``; returns the device."""
    async def allocated() -> dict[str, Any] | None:
        c = await claim(kube, name)
        return c if (c.get("status") or {}).get("allocation") else None

    c = await until(allocated, what=f"claim {name} allocated")
    (result,) = c["status"]["allocation"]["devices"]["results"]
    status = {"driver": result["driver"], "pool": result["pool"], "device": result["device"], "conditions": [{
        "type": condition, "status": "True", "reason": "Reported", "message": "",
        "lastTransitionTime": "2026-12-02T00:00:00Z"}]}
    await kube.patch(RESOURCE_CLAIMS, NS, name, {"status": {"devices": [status]}}, sub="status")
    return str(result["device"])


@pytest.mark.looptime
async def test_a_gang_is_bound_only_once_every_binding_condition_of_its_devices_is_true(
        k8s: ApiServer, kube: KubeClient) -> None:
    await fabric_cluster(kube)
    await gang_with_claims(kube, "g", 2)
    async with running(kube):
        await driver_reports(kube, "g-0-gpu", ATTACHED)
        await asyncio.sleep(30)
        assert not [r for r in list(k8s) if is_binding(r)]  # g-1's device is not attached yet: nobody bound
        c = await claim(kube, "g-0-gpu")
        (result,) = c["status"]["allocation"]["devices"]["results"]
        assert result["bindingConditions"] == [ATTACHED] and result["bindingFailureConditions"] == [ATTACH_FAILED]
        await driver_reports(kube, "g-1-gpu", ATTACHED)
        placed = await until(lambda: bound_at_least(kube, "g-", 2), what="gang bound")
    assert placed == {"g-0": "n0", "g-1": "n0"}


@pytest.mark.looptime
async def test_a_failed_binding_condition_binds_nobody_and_the_retry_leaves_that_device_out(
        k8s: ApiServer, kube: KubeClient) -> None:
    await fabric_cluster(kube)
    await gang_with_claims(kube, "g", 2)
    async with running(kube, backoff_initial_s=1, backoff_max_s=2):
        failed = await driver_reports(kube, "g-0-gpu", ATTACH_FAILED)
        rolled_back = await until(lambda: event_with(kube, "FailedScheduling", "binding failed for device"),
                                  what="the plan rolled back")
        assert f"gpu.example.com/n0/{failed}: condition {ATTACH_FAILED} is True" in rolled_back
        assert "no member bound, 2 claim write(s) rolled back" in rolled_back
        assert not [r for r in list(k8s) if is_binding(r)]

        async def reallocated(name: str) -> list[str] | None:
            got = devices(await claim(kube, name))
            return got or None

        for name in ("g-0-gpu", "g-1-gpu"):
            assert failed not in (await until(lambda n=name: reallocated(n), what=f"{name} allocated again"))
            await driver_reports(kube, name, ATTACHED)
        await until(lambda: bound_at_least(kube, "g-", 2), what="gang bound on the other devices")


@pytest.mark.looptime
async def test_binding_conditions_never_met_time_out_and_roll_the_whole_gang_back(k8s: ApiServer,
                                                                                  kube: KubeClient) -> None:
    await fabric_cluster(kube)
    await gang_with_claims(kube, "g", 2)
    async with running(kube, binding_conditions_timeout_s=5, backoff_initial_s=3600, backoff_max_s=3600):
        note = await until(lambda: event_with(kube, "FailedScheduling", "timed out waiting for the binding"),
                           300, what="the timeout")
        assert "(5 s; not True:" in note and "no member bound" in note
        assert devices(await claim(kube, "g-0-gpu")) == devices(await claim(kube, "g-1-gpu")) == []
    assert not [r for r in list(k8s) if is_binding(r)]


def pinned_to(node: str) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}


@pytest.mark.looptime
async def test_a_claim_two_pods_share_whose_device_binds_to_a_node_is_written_pinned_and_both_bound_there(
        k8s: ApiServer, kube: KubeClient) -> None:
    """KEP-5007 ``bindsToNode`` on a claim shared by name: a network link every node reaches (``allNodes``) binds
    the allocation to the node chosen. n0 and n1 have room for one member each, n2 for both (and one more): the
    claim is written with its nodeSelector naming n2, the gang waits for the link's binding condition, then both
    members are bound to n2. A pod naming the claim later goes to n2 too, though spread scoring prefers the
    emptier n0 and n1."""
    for name, cpu in (("n0", "1"), ("n1", "1"), ("n2", "3")):
        await create_node(kube, name, cpu=cpu)
    link = {"name": "link-0", "bindsToNode": True, "bindingConditions": [ATTACHED],
            "bindingFailureConditions": [ATTACH_FAILED], "attributes": {"model": {"string": "LATEST-GPU-MODEL"}}}
    await kube.create(RESOURCE_SLICES, None, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"fabric-{DRIVER}"},
        "spec": {"driver": DRIVER, "allNodes": True, "devices": [link],
                 "pool": {"name": "fabric", "generation": 0, "resourceSliceCount": 1}}})
    await kube.create(DEVICE_CLASSES, None, device_class())
    await create_claim(kube, "link", entry="shared")
    await kube.create(PODGROUPS, NS, podgroup("g", 2))
    for i in range(2):
        await kube.create(PODS, NS, dra_pod(f"g-{i}", "g", shared="link"))
    async with running(kube, scoring="spread"):
        await driver_reports(kube, "link", ATTACHED)
        placed = await until(lambda: bound_at_least(kube, "g-", 2), what="gang bound")
        assert placed == {"g-0": "n2", "g-1": "n2"}
        c = await claim(kube, "link")
        assert c["status"]["allocation"]["nodeSelector"] == pinned_to("n2")
        assert devices(c) == ["link-0"]
        assert sorted(r["name"] for r in c["status"]["reservedFor"]) == ["g-0", "g-1"]
        await kube.create(PODS, NS, dra_pod("late", None, shared="link"))
        assert await until(lambda: bound_at_least(kube, "late", 1), what="late pod bound") == {"late": "n2"}


def netdev_slice(node: str) -> dict[str, Any]:
    """Four netdevs as dranet publishes them: the interface name and its address with the prefix."""
    devices = [{"name": f"pci-0000-{20 + i}-01-0",
                "attributes": {"dra.net/ifName": {"string": f"ens{65 + i}"},
                               "dra.net/ipv4": {"string": f"198.51.100.{11 + i}/24"},
                               "dra.net/rdma": {"bool": False}}} for i in range(4)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-dra.net"},
            "spec": {"driver": "dra.net", "nodeName": node, "devices": devices,
                     "pool": {"name": node, "generation": 0, "resourceSliceCount": 1}}}


@pytest.mark.looptime
async def test_selectors_using_cidr_and_find_pick_the_devices_live(kube: KubeClient) -> None:
    """A DeviceClass keeps the netdevs with ``find`` on their interface name, each claim the addresses in
    ``198.51.100.12/31`` with ``cidr``/``containsIP``: the two members get exactly the .12 and .13 netdevs."""
    net = "device.attributes['dra.net']"
    await create_node(kube, "n0", cpu="8")
    await kube.create(RESOURCE_SLICES, None, netdev_slice("n0"))
    await kube.create(DEVICE_CLASSES, None, {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "netdev.dra.net"},
        "spec": {"selectors": [{"cel": {"expression": f"{net}.ifName.find('^ens[0-9]+$') != ''"}}]}})
    spec = {"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "netdev.dra.net",
        "selectors": [{"cel": {"expression": f"cidr('198.51.100.12/31').containsIP(cidr({net}.ipv4).ip())"}}]}}]}}
    await kube.create(PODGROUPS, NS, podgroup("net", 2))
    for i in range(2):
        pod = await kube.create(PODS, NS, dra_pod(f"net-{i}", "net", {"gpu": f"net-{i}-nic"}))
        owner = {"apiVersion": "v1", "kind": "Pod", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"],
                 "controller": True, "blockOwnerDeletion": True}
        await kube.create(RESOURCE_CLAIMS, NS, {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"net-{i}-nic", "namespace": NS, "ownerReferences": [owner],
                         "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"}},
            "spec": spec})
    async with running(kube):
        placed = await until(lambda: bound_at_least(kube, "net-", 2), what="gang bound")
    assert placed == {"net-0": "n0", "net-1": "n0"}
    taken = sorted([*devices(await claim(kube, "net-0-nic")), *devices(await claim(kube, "net-1-nic"))])
    assert taken == ["pci-0000-21-01-0", "pci-0000-22-01-0"]  # 198.51.100.12 and .13


@pytest.mark.looptime
async def test_a_pod_whose_claim_is_created_just_after_it_is_not_told_it_failed(k8s: ApiServer,
                                                                               kube: KubeClient) -> None:
    """The resourceclaim controller makes a template's claim just after the pod: until then kube-scheduler holds
    the pod at PreEnqueue. Nothing is reported within the delay, and the pod is bound once its claim exists; a gang
    member whose template does not exist gets, after the delay, a NotReadyForScheduling report (a Normal Event),
    never FailedScheduling or an Unschedulable condition (which a cluster autoscaler reads as "no room")."""
    await gpu_cluster(kube)
    await kube.create(PODGROUPS, NS, podgroup("late", 1))
    late = await kube.create(PODS, NS, dra_pod("late-0", "late", {"gpu": "late-0-gpu"}))
    await kube.create(PODGROUPS, NS, podgroup("lost", 2))
    await create_claim(kube, "lost-0-gpu", owner=await kube.create(PODS, NS, dra_pod("lost-0", "lost",
                                                                                     {"gpu": "lost-0-gpu"})))
    await kube.create(PODS, NS, dra_pod("lost-1", "lost", {"gpu": "lost-1-gpu"}, template_name="no-such-tpl"))
    async with running(kube) as sched:
        await asyncio.sleep(NOT_READY_DELAY_S / 2)
        await create_claim(kube, "late-0-gpu", owner=late)
        await until(lambda: bound_at_least(kube, "late-0", 1), what="late-0 bound once its claim exists")
        note = await until(lambda: event_with(kube, "NotReadyForScheduling", "lost-1"), what="lost waits")
        sample = sched.metrics.registry.get_sample_value
        assert sample("scheduler_pending_pods", {"queue": "gated"}) == 2  # lost's two pods, not tried
        assert sample("scheduler_pending_pods", {"queue": "unschedulable"}) == 0
        assert not sample("scheduler_schedule_attempts_total", {"result": "unschedulable", "profile": "gang-scheduler"})
        assert note == ("1 pod(s) not ready for scheduling: pod ml/lost-1: waiting for ResourceClaim ml/lost-1-gpu "
                        "of claim 'gpu' (template no-such-tpl) to be created: ResourceClaimTemplate ml/no-such-tpl "
                        "not found")
        await asyncio.sleep(NOT_READY_DELAY_S * 2)
    assert await events(kube, "FailedScheduling") == []
    assert [e["regarding"]["name"] for e in await events(kube, "NotReadyForScheduling")] == ["lost-0", "lost-1"]
    for name in ("late-0", "lost-0"):
        conditions = (await kube.get(PODS, NS, name)).get("status", {}).get("conditions", [])
        assert not [c for c in conditions if c.get("reason") == "Unschedulable"]
