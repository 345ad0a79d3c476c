"""The DRA drain's objects (``tests/bench/dra_workload.py``) are accepted by the strict emulator as sent, and the
scheduler binds a gang made of them with each claim allocated on its pod's node; for the shared-GPU and
binding-condition modes the drain's own checks pass on the gang (the benchmark playing the driver for the latter)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from scheduler.client.kube import (
    DEVICE_CLASSES,
    NODES,
    PODGROUPS,
    PODS,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    KubeClient,
)
from scheduler.model.quantity import parse as parse_quantity
from tests.bench import bench_e2e, dra_workload
from tests.integration.apiserver import ApiServer
from tests.integration.livekit import NS, bound_at_least, node, podgroup, running, until


@pytest.mark.looptime
@pytest.mark.parametrize("real", [False, True], ids=["named", "job-generated"])
async def test_the_dra_drains_objects_are_valid_and_its_gang_is_bound_with_claims_on_its_nodes(
        k8s: ApiServer, kube: KubeClient, real: bool) -> None:
    nodes = [await kube.create(NODES, None, node(f"n{i}", cpu="4")) for i in range(2)]
    await kube.create(DEVICE_CLASSES, None, dra_workload.device_class())
    slices = [await kube.create(RESOURCE_SLICES, None, dra_workload.node_slice(n["metadata"]["name"],
                                                                               n["metadata"]["uid"]))
              for n in nodes]
    template = await kube.create(RESOURCE_CLAIM_TEMPLATES, NS, dra_workload.claim_template("g"))
    await kube.create(PODGROUPS, NS, podgroup("g", 4))
    claims: dict[str, str] = {}
    for m in range(4):
        made, claim = await dra_workload.create_member(kube, "g", m, template, real)
        pod = await kube.get(PODS, NS, made["metadata"]["name"])
        named = claim["metadata"]["name"]
        assert pod["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": named}]
        claims[made["metadata"]["name"]] = claim["metadata"]["name"]
        assert claim["metadata"]["name"].startswith(f"{made['metadata']['name']}-gpu-")
        assert claim["metadata"]["ownerReferences"][0]["uid"] == made["metadata"]["uid"]
        assert claim["spec"] == template["spec"]["spec"]
    assert [len(s["spec"]["devices"]) for s in slices] == [8, 8] == [dra_workload.devices_per_slice()] * 2
    uuids = {d["attributes"]["uuid"]["string"] for s in slices for d in s["spec"]["devices"]}
    assert len(uuids) == 16  # per-node GPU UUIDs, as two real nodes' GPUs have
    async with running(kube):
        placed = await until(lambda: bound_at_least(kube, "g-", 4), what="DRA gang bound")
    assert placed is not None and set(placed) == set(claims)
    taken = set()
    for pod_name, claim_name in claims.items():
        status = (await kube.get(RESOURCE_CLAIMS, NS, claim_name))["status"]
        results = status["allocation"]["devices"]["results"]
        assert [(r["driver"], r["pool"]) for r in results] == [(dra_workload.DRIVER, placed[pod_name])]
        taken |= {(r["pool"], r["device"]) for r in results}
    assert len(taken) == 4
    assert await bench_e2e.check_dra(kube) == []  # the drain's own check agrees


@pytest.mark.looptime
@pytest.mark.parametrize("mode", ["shared", "conditions"])
async def test_the_shared_and_conditions_drains_objects_are_valid_and_pass_the_drains_checks(
        k8s: ApiServer, kube: KubeClient, mode: str) -> None:
    nodes = [await kube.create(NODES, None, node(f"n{i}", cpu="4")) for i in range(2)]
    await kube.create(DEVICE_CLASSES, None, dra_workload.device_class())
    slices = [await kube.create(RESOURCE_SLICES, None, dra_workload.node_slice(
        n["metadata"]["name"], n["metadata"]["uid"], mode)) for n in nodes]
    devices = [d for s in slices for d in s["spec"]["devices"]]
    if mode == "shared":
        assert all(d["allowMultipleAllocations"] is True and d["capacity"]["memory"]["value"] == "40Gi"
                   for d in devices)
    else:
        assert all(d["bindingConditions"] == [dra_workload.ATTACHED]
                   and d["bindingFailureConditions"] == [dra_workload.ATTACH_FAILED] for d in devices)
    template = await kube.create(RESOURCE_CLAIM_TEMPLATES, NS, dra_workload.mode_template("g", mode))
    share = template["spec"]["spec"]["devices"]["requests"][0]["exactly"].get("capacity")
    assert share == ({"requests": {"memory": dra_workload.SHARE}} if mode == "shared" else None)
    await kube.create(PODGROUPS, NS, podgroup("g", 4))
    for m in range(4):
        await dra_workload.create_member(kube, "g", m, template)
    watch = bench_e2e.BindWatch(kube, 4)
    watcher = await watch.start()
    sent: dict[str, float] = {}
    driver = asyncio.create_task(dra_workload.play_driver(kube, sent)) if mode == "conditions" else None
    try:
        async with running(kube):
            placed = await until(lambda: bound_at_least(kube, "g-", 4), what=f"{mode} gang bound")
    finally:
        for task in (watcher, driver):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    assert placed is not None and len(placed) == 4 and len(watch.bound) == 4
    assert await bench_e2e.check_dra(kube, mode, sent, watch.bound) == []
    claims, _ = await kube.list(RESOURCE_CLAIMS, NS)
    results = [r for c in claims for r in c["status"]["allocation"]["devices"]["results"]]
    if mode == "shared":  # four 10Gi shares: they fit one 40Gi GPU, each with its own shareID
        assert all(parse_quantity(r["consumedCapacity"]["memory"]) == parse_quantity(dra_workload.SHARE)
                   for r in results)
        assert len({r["shareID"] for r in results}) == 4
        (used,) = {(r["pool"], r["device"]) for r in results}
        shrunk = next(s for s in slices if s["spec"]["pool"]["name"] == used[0])  # the check catches an overcommit
        for d in shrunk["spec"]["devices"]:
            if d["name"] == used[1]:
                d["capacity"]["memory"]["value"] = "30Gi"
        await kube.replace(RESOURCE_SLICES, None, shrunk["metadata"]["name"], shrunk)
        assert await bench_e2e.check_dra(kube, mode) == [
            f"device ('{dra_workload.DRIVER}', '{used[0]}', '{used[1]}') memory: 42949672960 consumed of 32212254720"]
    else:
        assert len(sent) == 4 and {c["metadata"]["name"] for c in claims} == set(sent)
        first = min(sent.values())  # the check catches pods seen bound before the driver wrote
        early = {name: (first - 1.0, n) for name, (_, n) in watch.bound.items()}
        late = await bench_e2e.check_dra(kube, mode, sent, early)
        assert len(late) == 4 and all("before its claim's conditions were written" in p for p in late)
        assert any("never wrote" in p for p in await bench_e2e.check_dra(kube, mode, {}, watch.bound))


def test_conditions_patch_sets_each_binding_condition_true_once() -> None:
    result = {"driver": dra_workload.DRIVER, "pool": "n0", "device": "gpu-0", "request": "gpu",
              "bindingConditions": [dra_workload.ATTACHED], "bindingFailureConditions": [dra_workload.ATTACH_FAILED]}
    claim: dict[str, Any] = {"status": {"allocation": {"devices": {"results": [result]}}}}
    body = dra_workload.conditions_patch(claim, "2026-12-02T00:00:00Z")
    assert body == {"status": {"devices": [{"driver": dra_workload.DRIVER, "pool": "n0", "device": "gpu-0",
                                            "conditions": [{"type": dra_workload.ATTACHED, "status": "True",
                                                            "reason": "Attached", "message": "",
                                                            "lastTransitionTime": "2026-12-02T00:00:00Z"}]}]}}
    claim["status"] |= body["status"]
    assert dra_workload.conditions_patch(claim, "2026-12-02T00:00:00Z") is None  # already reported
    assert dra_workload.conditions_patch({"status": {}}, "x") is None  # not allocated
    plain = {"status": {"allocation": {"devices": {"results": [{**result, "bindingConditions": []}]}}}}
    assert dra_workload.conditions_patch(plain, "x") is None  # no binding conditions
