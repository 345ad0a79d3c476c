"""Consumable capacity (KEP-5075) in the live loop: ``run`` writes shares of a device with
``allowMultipleAllocations`` (``shareID``, ``consumedCapacity``) that the strict emulator accepts, holds what they
consume while the writes are in flight, and counts shares already allocated in the cluster.

The devices are dra-driver-cpu's grouped mode (``tests/data/resourceslices/dra-driver-cpu-grouped.yaml``): one
device per NUMA node sharing its CPUs (``dra.cpu/cpu``) among claims; claims are pre-created as the resourceclaim
controller makes them from the pods' template.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.client.kube import (
    DEVICE_CLASSES,
    PODGROUPS,
    PODS,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    ApiError,
    KubeClient,
)
from tests.integration.apiserver import ApiServer
from tests.integration.livekit import NS, bound_at_least, create_node, podgroup, running, until
from tests.integration.test_dra import claim, dra_pod, event_with, is_claim_status_write

DATA = Path(__file__).parents[1] / "data" / "resourceslices" / "dra-driver-cpu-grouped.yaml"
DRIVER = "dra.cpu"
NODE = "cpu-worker-1"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def cpu_claim_spec(cpus: str) -> dict[str, Any]:
    return {"devices": {"requests": [{"name": "cpus", "exactly": {
        "deviceClassName": DRIVER, "capacity": {"requests": {"dra.cpu/cpu": cpus}}}}]}}


async def cpu_cluster(kube: KubeClient, cpus: str, binding_conditions: tuple[str, ...] = ()) -> None:
    """The node, dra-driver-cpu's class and slice (two NUMA devices of 32 CPUs, with ``binding_conditions`` if
    given), a template asking ``cpus``."""
    docs = {d["kind"]: d for d in yaml.safe_load_all(DATA.read_text())}
    for device in docs["ResourceSlice"]["spec"]["devices"]:
        if binding_conditions:
            device["bindingConditions"] = list(binding_conditions)
    await create_node(kube, NODE, cpu="64")
    await kube.create(DEVICE_CLASSES, None, docs["DeviceClass"])
    await kube.create(RESOURCE_SLICES, None, docs["ResourceSlice"])
    await kube.create(RESOURCE_CLAIM_TEMPLATES, NS, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "cpu-tpl", "namespace": NS}, "spec": {"spec": cpu_claim_spec(cpus)}})


async def cpu_gang(kube: KubeClient, name: str, n: int, cpus: str) -> None:
    """A PodGroup of ``n`` pods, each with its claim ``<pod>-cpus`` (asking ``cpus``) pre-created."""
    await kube.create(PODGROUPS, NS, podgroup(name, n))
    for i in range(n):
        pod = await kube.create(PODS, NS, dra_pod(f"{name}-{i}", name, {"cpus": f"{name}-{i}-cpus"},
                                                  template_name="cpu-tpl"))
        await kube.create(RESOURCE_CLAIMS, NS, {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"{name}-{i}-cpus", "namespace": NS,
                         "annotations": {"resource.kubernetes.io/pod-claim-name": "cpus"},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod["metadata"]["name"],
                                              "uid": pod["metadata"]["uid"], "controller": True}]},
            "spec": cpu_claim_spec(cpus)})


def results(c: dict[str, Any]) -> list[dict[str, Any]]:
    return list(((c.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", []))


@pytest.mark.looptime
async def test_run_writes_shares_of_one_device_that_the_api_server_accepts(k8s: ApiServer, kube: KubeClient) -> None:
    """Three members at 10 CPUs each: the first NUMA device takes three shares (30 of 32), each claim's result
    carrying its own shareID and the consumed CPUs, written before any bind and accepted by the strict schema."""
    await cpu_cluster(kube, "10")
    await cpu_gang(kube, "g", 3, "10")
    async with running(kube):
        placed = await until(lambda: bound_at_least(kube, "g-", 3), what="gang bound")
    assert set(placed.values()) == {NODE}
    shares = [r for i in range(3) for r in results(await claim(kube, f"g-{i}-cpus"))]
    assert [(r["device"], r["consumedCapacity"]) for r in shares] == [("cpudevnuma000", {"dra.cpu/cpu": "10"})] * 3
    assert all(UUID.fullmatch(r["shareID"]) for r in shares) and len({r["shareID"] for r in shares}) == 3
    assert len([r for r in list(k8s) if is_claim_status_write(r)]) == 3


@pytest.mark.looptime
async def test_a_share_allocated_in_the_cluster_is_counted_and_the_rest_goes_elsewhere(k8s: ApiServer,
                                                                                     kube: KubeClient) -> None:
    """NUMA 0 has 24 of 32 CPUs given to a claim already: members asking 16 go to NUMA 1, two of them at most;
    the third member makes the gang wait (no device has 16 left), and nothing is bound."""
    await cpu_cluster(kube, "16")
    await kube.create(RESOURCE_CLAIMS, NS, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "running", "namespace": NS},
        "spec": cpu_claim_spec("24")})
    await kube.patch(RESOURCE_CLAIMS, NS, "running", {"status": {"allocation": {
        "devices": {"results": [{"request": "cpus", "driver": DRIVER, "pool": NODE, "device": "cpudevnuma000",
                                 "shareID": "5d0f3c1e-9a2b-4c7d-8e6f-1a2b3c4d5e6f",
                                 "consumedCapacity": {"dra.cpu/cpu": "24"}}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [NODE]}]}]}}}}, sub="status")
    await cpu_gang(kube, "g", 2, "16")
    await cpu_gang(kube, "h", 1, "16")
    async with running(kube):
        await until(lambda: bound_at_least(kube, "g-", 2), what="gang g bound")
        note = await until(lambda: event_with(kube, "FailedScheduling", "cannot allocate all claims"),
                           what="gang h refused")
    assert "0/1 nodes are available" in note
    assert [r["device"] for i in range(2) for r in results(await claim(kube, f"g-{i}-cpus"))] == ["cpudevnuma001"] * 2
    assert results(await claim(kube, "h-0-cpus")) == []


@pytest.mark.looptime
async def test_the_emulator_refuses_a_share_id_that_is_not_a_lowercase_uuid(k8s: ApiServer, kube: KubeClient) -> None:
    """The rule the writes above pass is real: ``validateUID`` refuses an upper-case or malformed shareID."""
    await cpu_cluster(kube, "1")
    await kube.create(RESOURCE_CLAIMS, NS, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": NS},
        "spec": cpu_claim_spec("1")})
    for share in ("5D0F3C1E-9A2B-4C7D-8E6F-1A2B3C4D5E6F", "share-1"):
        with k8s.expecting_refusal(r"shareID"), pytest.raises(ApiError) as info:
            await kube.patch(RESOURCE_CLAIMS, NS, "c", {"status": {"allocation": {"devices": {"results": [
                {"request": "cpus", "driver": DRIVER, "pool": NODE, "device": "cpudevnuma000", "shareID": share,
                 "consumedCapacity": {"dra.cpu/cpu": "1"}}]}}}}, sub="status")
        assert info.value.status == 422 and "shareID" in str(info.value)


PINNED = "dra.cpu/CPUsPinned"


async def driver_reports_share(kube: KubeClient, name: str, share_id: str | None) -> dict[str, Any]:
    """Play the driver: once claim ``name`` is allocated, set ``PINNED`` True in ``status.devices`` for its device,
    for the share ``share_id`` (None: an entry without one); returns the allocation's result."""
    async def allocated() -> dict[str, Any] | None:
        c = await claim(kube, name)
        return c if results(c) else None

    (result,) = results(await until(allocated, what=f"claim {name} allocated"))
    entry: dict[str, Any] = {"driver": result["driver"], "pool": result["pool"], "device": result["device"],
                             "conditions": [{"type": PINNED, "status": "True", "reason": "Pinned", "message": "",
                                             "lastTransitionTime": "2026-12-02T00:00:00Z"}]}
    if share_id is not None:
        entry["shareID"] = share_id
    await kube.patch(RESOURCE_CLAIMS, NS, name, {"status": {"devices": [entry]}}, sub="status")
    return result


@pytest.mark.looptime
async def test_a_binding_condition_of_a_share_is_met_only_by_the_status_of_that_share(k8s: ApiServer,
                                                                                     kube: KubeClient) -> None:
    """KEP-5007 with KEP-5075: the driver reports per share (``status.devices[]`` keyed by device and shareID);
    a condition reported for the device without the share's id does not let the pod bind, the share's does."""
    await cpu_cluster(kube, "8", binding_conditions=(PINNED,))
    await cpu_gang(kube, "g", 1, "8")
    async with running(kube):
        result = await driver_reports_share(kube, "g-0-cpus", None)
        assert result["bindingConditions"] == [PINNED] and UUID.fullmatch(result["shareID"])
        await asyncio.sleep(30)
        assert not await bound_at_least(kube, "g-", 1)
        await driver_reports_share(kube, "g-0-cpus", result["shareID"])
        placed = await until(lambda: bound_at_least(kube, "g-", 1), what="pod bound")
    assert placed == {"g-0": NODE}


@pytest.mark.looptime
async def test_plans_of_separate_gangs_count_each_others_shares(k8s: ApiServer, kube: KubeClient) -> None:
    """Four one-pod gangs at 12 CPUs: each plan sees the shares of the plans before it (written, or still being
    written and held), so NUMA 0 takes two (24 of 32, a third would be 36), NUMA 1 the other two."""
    await cpu_cluster(kube, "12")
    for name in ("a", "b", "c", "d"):
        await cpu_gang(kube, name, 1, "12")
    async with running(kube):
        for name in ("a", "b", "c", "d"):
            await until(lambda name=name: bound_at_least(kube, f"{name}-", 1), what=f"gang {name} bound")
    per_device: dict[str, int] = {}
    for name in ("a", "b", "c", "d"):
        (result,) = results(await claim(kube, f"{name}-0-cpus"))
        cpus = int(result["consumedCapacity"]["dra.cpu/cpu"])
        per_device[result["device"]] = per_device.get(result["device"], 0) + cpus
    assert per_device == {"cpudevnuma000": 24, "cpudevnuma001": 24}
