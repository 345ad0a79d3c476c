"""Consumable capacity (KEP-5075) in ``simulate``: claims sharing the NUMA-node devices of dra-driver-cpu's grouped
mode (``tests/data/resourceslices/dra-driver-cpu-grouped.yaml``: one node, two devices of 32 CPUs each, published
with ``allowMultipleAllocations``), packing, capacity running out, request policies, shares already allocated in
the snapshot, and the JSON ``allocations`` carrying ``shareID`` and ``consumedCapacity``."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from scheduler.framework import SolverConfig
from scheduler.offline.loader import load
from scheduler.offline.report import render_text, to_json
from scheduler.offline.simulate import Simulation, simulate
from tests.scenario.conftest import DATA

CPU_SLICE = DATA / "resourceslices" / "dra-driver-cpu-grouped.yaml"
NS = "batch"
DRIVER = "dra.cpu"
NUMA0, NUMA1 = f"{DRIVER}/cpu-worker-1/cpudevnuma000", f"{DRIVER}/cpu-worker-1/cpudevnuma001"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def template(name: str, cpus: str | None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": DRIVER}
    if cpus is not None:
        exactly["capacity"] = {"requests": {"dra.cpu/cpu": cpus}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"spec": {"devices": {"requests": [{"name": "cpus", "exactly": exactly}]}}}}


def gang(name: str, pods: int, claim_template: str, second: int = 0) -> list[dict[str, Any]]:
    """A gang of ``pods`` pods (all required), each with a claim from ``claim_template``; created ``second``s in."""
    stamp = f"2026-01-01T00:00:{second:02d}Z"
    docs: list[dict[str, Any]] = [{
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": NS, "creationTimestamp": stamp},
        "spec": {"schedulingPolicy": {"gang": {"minCount": pods}}}}]
    for i in range(pods):
        docs.append({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{name}-{i}", "namespace": NS, "uid": f"uid-{name}-{i}", "creationTimestamp": stamp},
            "spec": {"schedulerName": "gang-scheduler", "schedulingGroup": {"podGroupName": name},
                     "resourceClaims": [{"name": "cpus", "resourceClaimTemplateName": claim_template}],
                     "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
            "status": {"phase": "Pending"}})
    return docs


def allocated_share(name: str, device: str, cpus: str, share_id: str) -> dict[str, Any]:
    """A claim the snapshot holds, allocated a share of ``device`` consuming ``cpus``."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": NS},
            "spec": {"devices": {"requests": [{"name": "cpus", "exactly": {
                "deviceClassName": DRIVER, "capacity": {"requests": {"dra.cpu/cpu": cpus}}}}]}},
            "status": {"allocation": {
                "devices": {"results": [{"request": "cpus", "driver": DRIVER, "pool": "cpu-worker-1", "device": device,
                                         "shareID": share_id, "consumedCapacity": {"dra.cpu/cpu": cpus}}]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": ["cpu-worker-1"]}]}]}}}}


def run(tmp_path: Path, docs: list[dict[str, Any]], slices: Path = CPU_SLICE) -> Simulation:
    path = tmp_path / "workload.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return simulate(load([slices, path]), "gang-scheduler", SolverConfig())


def consumed_per_device(sim: Simulation, preallocated: dict[str, Decimal] | None = None) -> dict[str, Decimal]:
    """CPUs consumed per device: the snapshot's shares plus every share the run allocated."""
    out: dict[str, Decimal] = defaultdict(Decimal, preallocated or {})
    for a in sim.allocations:
        for use in a.allocation.device_uses:
            out[use.device] += dict(use.consumed).get("dra.cpu/cpu", Decimal(0))
    return dict(out)


def status(sim: Simulation) -> dict[str, str]:
    return {g.key.name: g.status for g in sim.groups}


def test_four_members_share_two_numa_devices_two_by_two(tmp_path: Path) -> None:
    """16 of 32 CPUs each: two members per NUMA device, the first device filled before the second is used."""
    sim = run(tmp_path, [template("cpus-16", "16"), *gang("train", 4, "cpus-16")])
    assert status(sim) == {"train": "Scheduled"}
    devices = sorted((a.pods[0][0], a.allocation.device_ids[0]) for a in sim.allocations)
    assert devices == [("train-0", NUMA0), ("train-1", NUMA0), ("train-2", NUMA1), ("train-3", NUMA1)]
    assert consumed_per_device(sim) == {NUMA0: Decimal(32), NUMA1: Decimal(32)}
    ids = [u.share_id for a in sim.allocations for u in a.allocation.device_uses]
    assert all(i is not None and UUID.fullmatch(i) for i in ids) and len(set(ids)) == 4


def test_capacity_running_out_leaves_the_third_gang_pending_with_the_claims_reason(tmp_path: Path) -> None:
    """Two gangs of two members at 16 CPUs fill both devices; a third gang cannot get a share anywhere."""
    docs = [template("cpus-16", "16"), *gang("a", 2, "cpus-16", 1), *gang("b", 2, "cpus-16", 2),
            *gang("c", 1, "cpus-16", 3)]
    sim = run(tmp_path, docs)
    assert status(sim) == {"a": "Scheduled", "b": "Scheduled", "c": "Unschedulable"}
    assert consumed_per_device(sim) == {NUMA0: Decimal(32), NUMA1: Decimal(32)}
    reason = next(g.reason for g in sim.groups if g.key.name == "c")
    assert reason is not None and "1 cannot allocate all claims" in reason


def test_a_larger_request_goes_to_the_device_with_room_and_a_smaller_one_packs(tmp_path: Path) -> None:
    """24 CPUs of NUMA 0 are held by a claim in the snapshot: 16 more only fit NUMA 1; then 8 goes to NUMA 0
    (partly used and with exactly 8 left), not to NUMA 1 (16 left)."""
    docs = [allocated_share("running", "cpudevnuma000", "24", "0f6c2b34-8c7e-4c1a-9d55-6a7f1e2b3c4d"),
            template("cpus-16", "16"), template("cpus-8", "8"),
            *gang("big", 1, "cpus-16", 1), *gang("small", 1, "cpus-8", 2)]
    sim = run(tmp_path, docs)
    assert status(sim) == {"big": "Scheduled", "small": "Scheduled"}
    placed = {a.pods[0][0]: a.allocation.device_ids[0] for a in sim.allocations}
    assert placed == {"big-0": NUMA1, "small-0": NUMA0}
    assert consumed_per_device(sim, {NUMA0: Decimal(24)}) == {NUMA0: Decimal(32), NUMA1: Decimal(16)}


def test_a_claim_without_capacity_requests_takes_a_whole_device(tmp_path: Path) -> None:
    """No requestPolicy and no request: the whole capacity is consumed (API reference, CapacityRequirements)."""
    sim = run(tmp_path, [template("whole", None), *gang("w", 3, "whole")])
    assert status(sim)["w"] == "Unschedulable"  # two devices, three members that each take all 32 CPUs
    sim = run(tmp_path, [template("whole", None), *gang("w", 2, "whole")])
    assert consumed_per_device(sim) == {NUMA0: Decimal(32), NUMA1: Decimal(32)}


def test_the_request_policy_rounds_up_and_refuses_above_max(tmp_path: Path) -> None:
    """The same devices published with requestPolicy {default 4, validRange min 4, step 4, max 16}: 5 CPUs
    consume 8; 17 CPUs fit no device."""
    docs = list(yaml.safe_load_all(CPU_SLICE.read_text()))
    for device in docs[2]["spec"]["devices"]:
        device["capacity"]["dra.cpu/cpu"]["requestPolicy"] = {
            "default": "4", "validRange": {"min": "4", "step": "4", "max": "16"}}
    slices = tmp_path / "with-policy.yaml"
    slices.write_text(yaml.safe_dump_all(docs))
    sim = run(tmp_path, [template("cpus-5", "5"), template("cpus-17", "17"), *gang("odd", 1, "cpus-5", 1),
                         *gang("huge", 1, "cpus-17", 2)], slices)
    assert status(sim) == {"odd": "Scheduled", "huge": "Unschedulable"}
    (use,) = sim.allocations[0].allocation.device_uses
    assert use.consumed == (("dra.cpu/cpu", Decimal(8)),)


def test_json_allocations_carry_share_id_and_consumed_capacity(tmp_path: Path) -> None:
    sim = run(tmp_path, [template("cpus-16", "16"), *gang("train", 1, "cpus-16")])
    doc: dict[str, Any] = json.loads(json.dumps(to_json(sim)))
    (allocation,) = doc["allocations"]
    (device,) = allocation["devices"]
    assert UUID.fullmatch(device.pop("shareID"))
    assert device == {"request": "cpus", "driver": DRIVER, "pool": "cpu-worker-1", "device": "cpudevnuma000",
                      "consumedCapacity": {"dra.cpu/cpu": "16"}}
    again = json.loads(json.dumps(to_json(run(tmp_path, [template("cpus-16", "16"), *gang("train", 1, "cpus-16")]))))
    assert again["allocations"][0]["devices"][0]["shareID"] == sim.allocations[0].allocation.device_uses[0].share_id


def test_the_text_report_shows_each_share_and_the_devices_still_free(tmp_path: Path) -> None:
    text = render_text(run(tmp_path, [template("cpus-16", "16"), *gang("train", 3, "cpus-16")]))
    assert "train-0 -> cpu-worker-1: cpudevnuma000 [dra.cpu/cpu 16] (dra.cpu)" in text
    assert "train-2 -> cpu-worker-1: cpudevnuma001 [dra.cpu/cpu 16] (dra.cpu)" in text
    assert "cpu-worker-1  dra.cpu      2/2 +2  free 1" in text  # NUMA 1 has 16 of 32 left


def rack(nodes: int, links: int) -> list[dict[str, Any]]:
    """``nodes`` one-CPU nodes of rack r1 and a node-set slice of ``links`` shared fabric links (bandwidth 100
    each, reachable from every node of the rack), with their DeviceClass."""
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"r1-n{i}", "labels": {"rack": "r1"}},
         "status": {"allocatable": {"cpu": "1", "memory": "8Gi", "pods": "110"}}} for i in range(nodes)]
    docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "fabric"},
                 "spec": {"selectors": [{"cel": {"expression": "device.driver == 'fabric.example.com'"}}]}})
    docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "r1-fabric"},
                 "spec": {"driver": "fabric.example.com", "pool": {"name": "r1", "generation": 1,
                                                                    "resourceSliceCount": 1},
                          "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                              {"key": "rack", "operator": "In", "values": ["r1"]}]}]},
                          "devices": [{"name": f"link-{j}", "allowMultipleAllocations": True,
                                       "capacity": {"bandwidth": {"value": "100"}}} for j in range(links)]}})
    docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                 "metadata": {"name": "bw-40", "namespace": NS},
                 "spec": {"spec": {"devices": {"requests": [{"name": "bw", "exactly": {
                     "deviceClassName": "fabric", "capacity": {"requests": {"bandwidth": "40"}}}}]}}}})
    return docs


def test_members_on_different_nodes_share_a_rack_link_and_the_third_falls_to_another(tmp_path: Path) -> None:
    """A node-set device is one state for the whole gang: members on three nodes take 40 each of a rack link's
    100, so two share link-0 and the third goes to link-1; with one link the gang cannot be placed at all."""
    docs = rack(3, 2)
    path = tmp_path / "rack.yaml"
    path.write_text(yaml.safe_dump_all([*docs, *gang("net", 3, "bw-40")]))
    sim = simulate(load([path]), "gang-scheduler", SolverConfig())
    assert status(sim) == {"net": "Scheduled"}
    placements = {a.pods[0][1]: a.allocation.device_ids[0] for a in sim.allocations}  # node → its link
    assert sorted(placements) == ["r1-n0", "r1-n1", "r1-n2"]
    assert sorted(placements.values()) == ["fabric.example.com/r1/link-0"] * 2 + ["fabric.example.com/r1/link-1"]
    path.write_text(yaml.safe_dump_all([*rack(3, 1), *gang("net", 3, "bw-40")]))
    assert status(simulate(load([path]), "gang-scheduler", SolverConfig())) == {"net": "Unschedulable"}


def test_an_admin_probe_takes_a_share_of_what_is_left_and_holds_none(tmp_path: Path) -> None:
    """KEP-5018 on a shared device: a probe in an admin namespace asking 8 CPUs with ``adminAccess`` is placed on
    NUMA 0, where a running claim holds 24 of 32, and its result carries ``adminAccess``, a ``shareID`` and
    ``consumedCapacity`` as kube-scheduler records them; the 8 stay free for a gang after it. Asking 16, the probe
    fits neither device once both have 24 taken."""
    namespace = {"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": NS, "labels": {"resource.kubernetes.io/admin-access": "true"}}}
    probe = template("probe-8", "8")
    probe["spec"]["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
    held = allocated_share("running", "cpudevnuma000", "24", "0f6c2b34-8c7e-4c1a-9d55-6a7f1e2b3c4d")
    sim = run(tmp_path, [namespace, held, probe, template("cpus-8", "8"), *gang("probe", 1, "probe-8", 1),
                         *gang("after", 1, "cpus-8", 2)])
    assert status(sim) == {"probe": "Scheduled", "after": "Scheduled"}
    doc: dict[str, Any] = json.loads(json.dumps(to_json(sim)))
    devices = {a["claim"]: a["devices"] for a in doc["allocations"]}
    (result,) = devices[f"{NS}/probe-0-cpus"]
    assert UUID.fullmatch(result.pop("shareID"))
    assert result == {"request": "cpus", "driver": DRIVER, "pool": "cpu-worker-1", "device": "cpudevnuma000",
                      "adminAccess": True, "consumedCapacity": {"dra.cpu/cpu": "8"}}
    assert [d["device"] for d in devices[f"{NS}/after-0-cpus"]] == ["cpudevnuma000"]  # the 8 the probe did not hold

    big = template("probe-16", "16")
    big["spec"]["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
    other = allocated_share("other", "cpudevnuma001", "24", "1e2d3c4b-5a69-4788-9a0b-1c2d3e4f5a6b")
    sim = run(tmp_path, [namespace, held, other, big, *gang("probe", 1, "probe-16", 1)])
    assert status(sim) == {"probe": "Unschedulable"}


def test_two_gangs_take_shares_of_the_partly_used_device_rather_than_opening_two(tmp_path: Path) -> None:
    """NUMA 0 of cpu-worker-1 has 16 of its 32 CPUs held by a claim; two one-pod gangs ask 8 CPUs each.
    cpu-worker-2 and cpu-worker-3 publish the same slice and each runs a one-CPU pod, with room for one more:
    the packing order alone prefers those partly used nodes, which would open a fresh NUMA device on each.
    DynamicResources' Score sends both gangs to the partly used device, which they fill, and leaves the
    four devices of the other workers untouched."""
    node, klass, slice_ = list(yaml.safe_load_all(CPU_SLICE.read_text()))
    docs: list[dict[str, Any]] = [node, klass, slice_]
    for name in ("cpu-worker-2", "cpu-worker-3"):
        docs.append({**node, "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                     "status": {"allocatable": {"cpu": "2", "memory": "256Gi", "pods": "110"}}})
        docs.append({**slice_, "metadata": {"name": f"00000-dra.cpu-{name}-tp869"},
                     "spec": {**slice_["spec"], "nodeName": name, "pool": {**slice_["spec"]["pool"], "name": name}}})
        docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"web-{name}", "namespace": NS},
                     "spec": {"nodeName": name, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
                     "status": {"phase": "Running"}})
    slices = tmp_path / "workers.yaml"
    slices.write_text(yaml.safe_dump_all(docs))
    held = allocated_share("running", "cpudevnuma000", "16", "0f6c2b34-8c7e-4c1a-9d55-6a7f1e2b3c4d")
    sim = run(tmp_path, [held, template("cpus-8", "8"), *gang("a", 1, "cpus-8", 1), *gang("b", 1, "cpus-8", 2)],
              slices)
    assert status(sim) == {"a": "Scheduled", "b": "Scheduled"}
    placed = {a.pods[0][0]: (a.pods[0][1], a.allocation.device_ids[0]) for a in sim.allocations}
    assert placed == {"a-0": ("cpu-worker-1", NUMA0), "b-0": ("cpu-worker-1", NUMA0)}
    assert consumed_per_device(sim, {NUMA0: Decimal(16)}) == {NUMA0: Decimal(32)}
