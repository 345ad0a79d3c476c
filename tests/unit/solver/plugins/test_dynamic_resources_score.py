"""DynamicResources' Score: nodes whose partly used shared devices (KEP-5075) can take a share come first, so shares
pack onto few devices; a full device earns nothing, and a pod that cannot use a shared device gets no score."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework import Plan
from scheduler.model import PodGroup
from scheduler.model.dra import ResourceSlice
from tests.unit.groups.builders import NS, pg
from tests.unit.solver.builders import node
from tests.unit.solver.test_search_dra import (
    DRIVER,
    claim,
    claim_spec,
    devices_of,
    gang,
    gpu_slice,
    pod_with_claim,
    run,
)

SHARE_ID = "0f6c2b34-8c7e-4c1a-9d55-6a7f1e2b3c4d"


def shared_gpu(node_name: str) -> ResourceSlice:
    """One GPU of 80Gi on ``node_name``, published with ``allowMultipleAllocations``."""
    return gpu_slice(node_name, [], devices=[{"name": "gpu-0", "allowMultipleAllocations": True,
                                              "capacity": {"memory": {"value": "80Gi"}}}])


def memory_share(gi: int) -> dict[str, Any]:
    return {"devices": {"requests": [{"name": "gpus", "exactly": {
        "deviceClassName": "gpu.example.com", "capacity": {"requests": {"memory": f"{gi}Gi"}}}}]}}


def running_share(node_name: str, gi: int) -> Any:
    """A claim of the cluster holding ``gi`` Gi of ``node_name``'s GPU."""
    return claim("running", memory_share(gi), allocation={
        "devices": {"results": [{"request": "gpus", "driver": DRIVER, "pool": node_name, "device": "gpu-0",
                                 "shareID": SHARE_ID, "consumedCapacity": {"memory": f"{gi}Gi"}}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}})


def share_gang(n: int, gi: int) -> tuple[list[Any], list[Any]]:
    pods, claims = gang(n)
    return pods, [claim(c.metadata.name, memory_share(gi)) for c in claims]


@pytest.mark.parametrize(("held", "expected"), [(40, "n2"), (80, "n0")])
def test_a_gang_takes_shares_of_a_partly_used_gpu_not_a_fresh_one(held: int, expected: str) -> None:
    """Three nodes alike, each with one shared GPU; n2's holds ``held`` Gi for a claim of the cluster. Two members
    ask 20Gi each: with 40Gi used, both go to n2's GPU (the packing order alone takes n0 first, opening its fresh
    GPU); with n2's GPU full it earns nothing and the gang opens n0's."""
    nodes = [node(f"n{i}", cpu="8") for i in range(3)]
    pods, claims = share_gang(2, 20)
    plan = run(nodes, pods, [pg("g", 2)], [shared_gpu(f"n{i}") for i in range(3)],
               [running_share("n2", held), *claims])
    got = devices_of(plan)
    assert sorted(got.values()) == [(expected, ["gpu-0"])] * 2


def rack_link(rack: str) -> ResourceSlice:
    """A node-set slice: one fabric link of bandwidth 100, shared, reachable from every node of ``rack``."""
    return ResourceSlice.model_validate({"metadata": {"name": f"{rack}-fabric"}, "spec": {
        "driver": DRIVER, "pool": {"name": rack, "generation": 1, "resourceSliceCount": 1},
        "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "rack", "operator": "In", "values": [rack]}]}]},
        "devices": [{"name": "link", "allowMultipleAllocations": True,
                     "capacity": {"memory": {"value": "100Gi"}}}]}})


def test_the_second_member_follows_a_link_the_first_opened_in_this_plan() -> None:
    """One-CPU nodes n0 and n2 in rack r1, n1 in rack r2, a shared link per rack. The first member goes to n0 and
    opens r1's link; the packing order alone would send the second to n1 (the next row), opening r2's link too;
    the Score sees r1's link partly used by the plan and sends it to n2."""
    nodes = [node("n0", cpu="1", labels={"rack": "r1"}), node("n1", cpu="1", labels={"rack": "r2"}),
             node("n2", cpu="1", labels={"rack": "r1"})]
    pods, claims = share_gang(2, 40)
    plan = run(nodes, pods, [pg("g", 2)], [rack_link("r1"), rack_link("r2")], claims)
    assert isinstance(plan, Plan), plan
    assert sorted(n for _, n in plan.placements) == ["n0", "n2"]
    assert {d for _, devices in devices_of(plan).values() for d in devices} == {"link"}
    assert {a.results[0][2] for a in plan.allocations} == {"r1"}  # the pool: r1's link only


def test_a_pod_whose_claims_cannot_use_a_shared_device_has_no_score() -> None:
    """Exclusive GPUs only (no ``allowMultipleAllocations``): the packing order decides alone — n0 first, though n1
    has a GPU allocated already."""
    nodes = [node(f"n{i}", cpu="8") for i in range(2)]
    busy = claim("busy", memory_share(10), allocation={
        "devices": {"results": [{"request": "gpus", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]}})
    pods, claims = gang(1, 1)
    plan = run(nodes, pods, [pg("g", 1)], [gpu_slice(f"n{i}", ["H100", "H100"]) for i in range(2)],
               [busy, *claims])
    assert devices_of(plan) == {f"{NS}/w-0-gpus": ("n0", ["gpu-0"])}


def test_a_groups_shared_claim_takes_the_partly_used_link_and_its_members_follow() -> None:
    """A PodGroup's claim asks 40 of a rack link: r1's link is fresh, r2's has 40 taken by a claim of the cluster.
    The group's claim takes a share of r2's link and both members go to r2's nodes (n0, in r1, is first in
    the packing order)."""
    nodes = [node("n0", cpu="8", labels={"rack": "r1"}), node("n1", cpu="1", labels={"rack": "r2"}),
             node("n2", cpu="1", labels={"rack": "r2"})]
    held = claim("running", memory_share(40), allocation={
        "devices": {"results": [{"request": "gpus", "driver": DRIVER, "pool": "r2", "device": "link",
                                 "shareID": SHARE_ID, "consumedCapacity": {"memory": "40Gi"}}]}})
    group = PodGroup.model_validate({
        "metadata": {"name": "g", "namespace": NS, "uid": "uid-g"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}},
                 "resourceClaims": [{"name": "fabric", "resourceClaimTemplateName": "fabric"}]},
        "status": {"resourceClaimStatuses": [{"name": "fabric", "resourceClaimName": "g-fabric"}]}})
    pods = [pod_with_claim(f"m-{i}", "g", "g-fabric", extra={"resourceClaims": [
        {"name": "fabric", "resourceClaimTemplateName": "fabric"}]}) for i in range(2)]
    plan = run(nodes, pods, [group], [rack_link("r1"), rack_link("r2")], [held, claim("g-fabric", memory_share(40))])
    assert isinstance(plan, Plan), plan
    assert sorted(n for _, n in plan.placements) == ["n1", "n2"]
    (alloc,) = plan.allocations
    assert [(pool, device) for _, _, pool, device in alloc.results] == [("r2", "link")]


H100 = 'device.attributes["gpu.example.com"].productName == "H100"'


def prioritized(first: str) -> dict[str, Any]:
    """A claim spec whose request lists two ``firstAvailable`` choices: a GPU matching ``first``, then any GPU."""
    return {"devices": {"requests": [{"name": "gpus", "firstAvailable": [
        {"name": "preferred", "deviceClassName": "gpu.example.com", "selectors": [{"cel": {"expression": first}}]},
        {"name": "any", "deviceClassName": "gpu.example.com"}]}]}}


@pytest.mark.parametrize(("spec", "expected"), [
    (prioritized(H100), ("n1", ["gpu-0"])),  # ranked: n1 has the first choice, n0 only the second
    ({"devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
     ("n0", ["gpu-0"])),  # one way to satisfy it: no rank, the packing order decides
])
def test_a_node_with_the_first_firstavailable_choice_comes_first(spec: dict[str, Any],
                                                                 expected: tuple[str, list[str]]) -> None:
    """n0 has an A100 only, n1 an H100; the packing order takes n0 first. A request preferring an H100 and falling
    back to any GPU goes to n1 (kube-scheduler's rank: 8 for the first choice, 7 for the second); a request with a
    single choice is not ranked and goes to n0."""
    nodes = [node(f"n{i}", cpu="8") for i in range(2)]
    pods, _ = gang(1, 1)
    plan = run(nodes, pods, [pg("g", 1)], [gpu_slice("n0", ["A100"]), gpu_slice("n1", ["H100"])],
               [claim("w-0-gpus", spec)])
    assert devices_of(plan) == {f"{NS}/w-0-gpus": expected}


def test_the_rank_counts_the_devices_earlier_members_took() -> None:
    """Two members (one and two CPUs: two signatures, placed one after the other) prefer an H100: n0 has an H100 and
    an A100, n1 an H100. The first takes n0's H100; for the second n0 offers only the fallback now (7) and n1 still
    the first choice (8), so it goes to n1's H100, though the packing order prefers n0, the node already used."""
    nodes = [node(f"n{i}", cpu="8") for i in range(2)]
    pods = [pod_with_claim(f"w-{i}", "g", f"w-{i}-gpus", cpu=str(i + 1)) for i in range(2)]
    claims = [claim(f"w-{i}-gpus", prioritized(H100)) for i in range(2)]
    plan = run(nodes, pods, [pg("g", 2)], [gpu_slice("n0", ["H100", "A100"]), gpu_slice("n1", ["H100"])], claims)
    assert sorted(devices_of(plan).values()) == [("n0", ["gpu-0"]), ("n1", ["gpu-0"])]


def test_an_all_choice_ranks_a_node_only_where_every_matching_device_is_free() -> None:
    """The first choice asks every H100 (``allocationMode: All``): n0 has two, one of them allocated in the
    cluster, so only the fallback fits there (7); n1's one H100 is free (8), and the pod goes to n1."""
    nodes = [node(f"n{i}", cpu="8") for i in range(2)]
    busy = claim("busy", claim_spec(), allocation={
        "devices": {"results": [{"request": "gpus", "driver": DRIVER, "pool": "n0", "device": "gpu-1"}]}})
    spec = prioritized(H100)
    spec["devices"]["requests"][0]["firstAvailable"][0]["allocationMode"] = "All"
    pods, _ = gang(1, 1)
    plan = run(nodes, pods, [pg("g", 1)], [gpu_slice("n0", ["H100", "H100"]), gpu_slice("n1", ["H100"])],
               [busy, claim("w-0-gpus", spec)])
    assert devices_of(plan) == {f"{NS}/w-0-gpus": ("n1", ["gpu-0"])}
