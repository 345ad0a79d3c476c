"""DRA inside the all-or-nothing search: claims decided in the same plan as the nodes."""

from __future__ import annotations

from typing import Any

from scheduler.dra.claims import ClaimIndex
from scheduler.dra.device_snapshot import DraView
from scheduler.dra.inventory import Inventory
from scheduler.framework import NodeTable, Plan, Snapshot, Unschedulable
from scheduler.groups import TreeState, build_trees
from scheduler.model import Node, Pod, PodGroup
from scheduler.model.dra import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from scheduler.solver import solve
from tests.unit.groups.builders import NS, pg
from tests.unit.solver.builders import node

DRIVER = "gpu.example.com"


def gpu_slice(node_name: str, products: list[str], roots: list[str] | None = None,
              counters: dict[str, Any] | None = None, devices: list[dict[str, Any]] | None = None) -> ResourceSlice:
    devs = devices if devices is not None else [
        {"name": f"gpu-{i}", "attributes": {"productName": {"string": p},
                                          "resource.kubernetes.io/pcieRoot": {"string": (roots or ["r0"] * 8)[i]}},
         "capacity": {"memory": {"value": "80Gi"}}}
        for i, p in enumerate(products)]
    spec: dict[str, Any] = {"driver": DRIVER, "nodeName": node_name,
                            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1}, "devices": devs}
    return ResourceSlice.model_validate({"metadata": {"name": f"{node_name}-gpus"}, "spec": spec})


def device_class(name: str = "gpu.example.com", selector: str = f'device.driver == "{DRIVER}"',
                 extended: str | None = None) -> DeviceClass:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": selector}}]}
    if extended:
        spec["extendedResourceName"] = extended
    return DeviceClass.model_validate({"metadata": {"name": name}, "spec": spec})


def claim_spec(count: int = 1, selector: str | None = None, cls: str = "gpu.example.com",
               constraints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": cls, "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return {"devices": {"requests": [{"name": "gpus", "exactly": exactly}], "constraints": constraints or []}}


def claim(name: str, spec: dict[str, Any], allocation: dict[str, Any] | None = None) -> ResourceClaim:
    body: dict[str, Any] = {"metadata": {"name": name, "namespace": NS}, "spec": spec}
    if allocation:
        body["status"] = {"allocation": allocation}
    return ResourceClaim.model_validate(body)


def pod_with_claim(name: str, group: str | None, claim_name: str, *, template: bool = True, cpu: str = "1",
                   extra: dict[str, Any] | None = None) -> Pod:
    entry = {"name": "gpus", "resourceClaimTemplateName": "tpl"} if template else \
        {"name": "gpus", "resourceClaimName": claim_name}
    spec: dict[str, Any] = {"schedulerName": "gang-scheduler", "resourceClaims": [entry],
                            "containers": [{"name": "main", "resources": {"requests": {"cpu": cpu},
                                                                         "claims": [{"name": "gpus"}]}}]}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    status: dict[str, Any] = {"phase": "Pending"}
    if template:
        status["resourceClaimStatuses"] = [{"name": "gpus", "resourceClaimName": claim_name}]
    body = {"metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}"}, "spec": spec, "status": status}
    if extra:
        body["spec"].update(extra)
    return Pod.model_validate(body)


def run(nodes: list[Node], pods: list[Pod], groups: list[PodGroup], slices: list[ResourceSlice],
        claims: list[ResourceClaim], classes: list[DeviceClass] | None = None,
        templates: list[ResourceClaimTemplate] = ()) -> Plan | Unschedulable:  # type: ignore[assignment]
    classes = classes if classes is not None else [device_class()]
    table = NodeTable.build(nodes)
    inventory = Inventory.build(table, slices, classes, claims)
    index = ClaimIndex.build(claims, templates, classes, groups)
    snapshot = Snapshot.build(table, pods, DraView.build(inventory, index, pods))
    (tree,) = [t for t in build_trees(pods, groups, (), scheduler_name="gang-scheduler").trees]
    assert tree.state is TreeState.READY, tree.message
    return solve(tree, snapshot)


def gang(n: int, count: int = 2, selector: str | None = None, constraints: list[dict[str, Any]] | None = None
         ) -> tuple[list[Pod], list[ResourceClaim]]:
    pods = [pod_with_claim(f"w-{i}", "g", f"w-{i}-gpus") for i in range(n)]
    claims = [claim(f"w-{i}-gpus", claim_spec(count, selector, constraints=constraints)) for i in range(n)]
    return pods, claims


def devices_of(plan: Plan | Unschedulable) -> dict[str, tuple[str | None, list[str]]]:
    assert isinstance(plan, Plan), plan
    return {a.claim: (a.node, [d for _, _, _, d in a.results]) for a in plan.allocations}


def test_gang_of_four_two_gpus_each_by_cel_selector_is_placed_whole() -> None:
    """H100 pairs: 2 on n0, 1 on n1 (its other GPUs are A100), 0 on n2, 2 on n3 — four members fit."""
    nodes = [node(f"n{i}", cpu="32") for i in range(4)]
    slices = [gpu_slice("n0", ["H100"] * 4), gpu_slice("n1", ["H100"] * 2 + ["A100"] * 2),
              gpu_slice("n2", ["A100"] * 4), gpu_slice("n3", ["H100"] * 4)]
    pods, claims = gang(4, 2, selector='device.attributes["gpu.example.com"].productName == "H100"')
    plan = run(nodes, pods, [pg("g", 4)], slices, claims)
    got = devices_of(plan)
    assert len(got) == 4
    placed = {p.metadata.name: n for p, n in plan.placements}  # type: ignore[union-attr]
    assert "n2" not in placed.values() and len(placed) == 4
    used = [(node_name, d) for node_name, devs in got.values() for d in devs]
    assert len(set(used)) == 8  # no device given twice
    assert all(d in ("gpu-0", "gpu-1") for n, d in used if n == "n1")  # only the H100s of n1
    a = next(a for a in plan.allocations if a.claim == f"{NS}/w-0-gpus")  # type: ignore[union-attr]
    assert a.reserved_for == (("Pod", "w-0", "uid-w-0"),)
    assert a.node_selector == {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": [a.node]}]}]}


def test_members_with_their_own_claims_swap_devices_when_the_first_took_the_only_fit_of_the_second() -> None:
    """Each member names its own claim: ``a`` accepts any GPU, ``b`` only the H100. Reserved first, ``a``
    takes the H100 (first in order); ``b``'s Reserve gives it back and allocates both claims together."""
    h100 = 'device.attributes["gpu.example.com"].productName == "H100"'
    pods = [pod_with_claim("a", "g", "a-gpus", template=False), pod_with_claim("b", "g", "b-gpus", template=False)]
    claims = [claim("a-gpus", claim_spec()), claim("b-gpus", claim_spec(selector=h100))]
    got = devices_of(run([node("n0", cpu="32")], pods, [pg("g", 2)], [gpu_slice("n0", ["H100", "A100"])], claims))
    assert got == {f"{NS}/a-gpus": ("n0", ["gpu-1"]), f"{NS}/b-gpus": ("n0", ["gpu-0"])}


def test_gang_that_needs_more_matching_gpus_than_exist_places_nothing() -> None:
    nodes = [node("n0", cpu="32"), node("n1", cpu="32")]
    slices = [gpu_slice("n0", ["H100"] * 4), gpu_slice("n1", ["A100"] * 4)]
    pods, claims = gang(4, 2, selector='device.attributes["gpu.example.com"].productName == "H100"')
    result = run(nodes, pods, [pg("g", 4)], slices, claims)
    assert isinstance(result, Unschedulable)
    assert "gang g: 2/4 placeable (minCount 4)" in result.message
    assert "cannot allocate all claims" in result.message


def test_match_attribute_keeps_a_claims_gpus_on_one_pcie_root() -> None:
    nodes = [node("n0", cpu="32")]
    slices = [gpu_slice("n0", ["H100"] * 4, roots=["r0", "r1", "r0", "r1"])]
    pods, claims = gang(2, 2, constraints=[{"matchAttribute": "resource.kubernetes.io/pcieRoot"}])
    got = devices_of(run(nodes, pods, [pg("g", 2)], slices, claims))
    assert sorted(sorted(devs) for _, devs in got.values()) == [["gpu-0", "gpu-2"], ["gpu-1", "gpu-3"]]


def test_already_allocated_claim_pins_its_pod_to_the_allocations_nodes() -> None:
    nodes = [node("n0", cpu="32"), node("n1", cpu="32")]
    slices = [gpu_slice("n0", ["H100"]), gpu_slice("n1", ["H100"])]
    allocated = claim("shared", claim_spec(), allocation={
        "devices": {"results": [{"request": "gpus", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}})
    pods = [pod_with_claim("p", "g", "shared", template=False)]
    plan = run(nodes, pods, [pg("g", 1)], slices, [allocated])
    assert isinstance(plan, Plan)
    assert [n for _, n in plan.placements] == ["n1"]
    assert plan.allocations == ()


def test_greedy_trap_two_half_gpus_serve_a_gang_of_two() -> None:
    """One partitionable GPU per node published whole and as two halves on shared counters. First-fit
    gives the whole GPU to the first member and the second cannot fit on the one node; best fit with
    backtracking gives each member a half."""
    devices = [{"name": "gpu-0", "consumesCounters": [{"counterSet": "gpu-0", "counters": {"slices": {"value": "8"}}}]},
               {"name": "gpu-0-half-a", "consumesCounters": [
                   {"counterSet": "gpu-0", "counters": {"slices": {"value": "4"}}}]},
               {"name": "gpu-0-half-b", "consumesCounters": [
                   {"counterSet": "gpu-0", "counters": {"slices": {"value": "4"}}}]}]
    devs = gpu_slice("n0", [], devices=devices)
    counters = ResourceSlice.model_validate({"metadata": {"name": "n0-counters"}, "spec": {
        "driver": DRIVER, "nodeName": "n0", "pool": {"name": "n0", "generation": 1, "resourceSliceCount": 2},
        "sharedCounters": [{"name": "gpu-0", "counters": {"slices": {"value": "8"}}}]}})
    devs = ResourceSlice.model_validate({**devs.model_dump(by_alias=True, exclude_none=True),
                                         "spec": {**devs.model_dump(by_alias=True, exclude_none=True)["spec"],
                                                  "pool": {"name": "n0", "generation": 1, "resourceSliceCount": 2}}})
    pods, claims = gang(2, 1)
    got = devices_of(run([node("n0", cpu="8")], pods, [pg("g", 2)], [devs, counters], claims))
    assert sorted(d for _, devs_ in got.values() for d in devs_) == ["gpu-0-half-a", "gpu-0-half-b"]


def group_with_claim() -> PodGroup:
    """Gang ``g`` (minCount 2) with a PodGroup claim ``fabric`` from template ``fabric``, generated as ``g-fabric``."""
    return PodGroup.model_validate({
        "metadata": {"name": "g", "namespace": NS, "uid": "uid-g"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}},
                 "resourceClaims": [{"name": "fabric", "resourceClaimTemplateName": "fabric"}]},
        "status": {"resourceClaimStatuses": [{"name": "fabric", "resourceClaimName": "g-fabric"}]}})


def group_members(n: int) -> list[Pod]:
    """``n`` members of :func:`group_with_claim`'s gang, each listing the group's claim."""
    return [pod_with_claim(f"m-{i}", "g", "g-fabric", extra={"resourceClaims": [
        {"name": "fabric", "resourceClaimTemplateName": "fabric"}]}) for i in range(n)]


def test_group_shared_claim_is_allocated_once_and_reserved_for_the_podgroup() -> None:
    rack = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]}
    channels = ResourceSlice.model_validate({"metadata": {"name": "rack-r1"}, "spec": {
        "driver": "interconnect.example.com", "nodeSelector": rack,
        "pool": {"name": "rack-r1", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "channel-0"}, {"name": "channel-1"}]}})
    nodes = [node("a0", cpu="4", labels={"rack": "r0"}), node("b0", cpu="4", labels={"rack": "r1"}),
             node("b1", cpu="4", labels={"rack": "r1"})]
    group = group_with_claim()
    fabric = claim("g-fabric", {"devices": {"requests": [{"name": "ch", "exactly": {
        "deviceClassName": "interconnect"}}]}})
    pods = group_members(2)
    classes = [device_class("interconnect", 'device.driver == "interconnect.example.com"')]
    plan = run(nodes, pods, [group], [channels], [fabric], classes)
    assert isinstance(plan, Plan), plan
    assert {n for _, n in plan.placements} <= {"b0", "b1"}
    (alloc,) = plan.allocations
    assert alloc.claim == f"{NS}/g-fabric" and alloc.reserved_for == (("PodGroup", "g", ""),)
    assert alloc.node is None and alloc.node_selector == rack
    assert len(alloc.results) == 1


def test_bad_cel_makes_the_claim_unschedulable_with_a_message_naming_the_class() -> None:
    nodes = [node("n0", cpu="8")]
    pods, claims = gang(1, 1)
    bad = device_class(selector="device.attributes[")
    result = run(nodes, pods, [pg("g", 1)], [gpu_slice("n0", ["H100"])], claims, [bad])
    assert isinstance(result, Unschedulable)
    assert "DeviceClass gpu.example.com: selector 'device.attributes['" in result.message


def test_extended_resource_served_through_dra() -> None:
    nodes = [node("n0", cpu="8")]  # no nvidia.com/gpu in allocatable
    pod = Pod.model_validate({"metadata": {"name": "x", "namespace": NS, "uid": "uid-x"}, "spec": {
        "schedulerName": "gang-scheduler", "schedulingGroup": {"podGroupName": "g"},
        "containers": [{"name": "main", "resources": {"limits": {"example.com/gpu": "2"}}}]}})
    classes = [device_class(extended="example.com/gpu")]
    plan = run(nodes, [pod], [pg("g", 1)], [gpu_slice("n0", ["H100"] * 3)], [], classes)
    assert isinstance(plan, Plan), plan
    (alloc,) = plan.allocations
    assert alloc.synthetic and alloc.pod == f"{NS}/x"
    assert [(r, d) for r, _, _, d in alloc.results] == [("container-0-request-0", "gpu-0"),
                                                       ("container-0-request-0", "gpu-1")]


def test_pod_whose_generated_claim_does_not_exist_waits_with_a_reason() -> None:
    pods = [pod_with_claim("p", "g", "missing-claim")]
    result = run([node("n0")], pods, [pg("g", 1)], [gpu_slice("n0", ["H100"])], [])
    assert isinstance(result, Unschedulable)
    assert "waiting for ResourceClaim ml/missing-claim of claim 'gpus' (template tpl) to be created" in result.message


def test_claim_whose_selector_calls_an_undeclared_function_is_invalid_when_read() -> None:
    """quantity ``mul`` is not in Kubernetes v1.37's CEL environment: the claim is refused at admission
    (named, with the checker's reason) instead of failing device by device."""
    pods = [pod_with_claim("p", "g", "p-gpus", template=False)]
    selector = "device.capacity['gpu.example.com'].memory.mul(2).isGreaterThan(quantity('100Gi'))"
    result = run([node("n0", cpu="32")], pods, [pg("g", 1)], [gpu_slice("n0", ["H100"])],
                 [claim("p-gpus", claim_spec(selector=selector))])
    assert isinstance(result, Unschedulable)
    assert (f"ResourceClaim {NS}/p-gpus is invalid: request 'gpus': CEL selector {selector!r}: CEL compile error: "
            "undeclared reference to 'mul' (in container '')") in result.message


H100 = 'device.attributes["gpu.example.com"].productName == "H100"'


def test_cannot_allocate_all_claims_says_how_many_devices_match_and_are_unallocated() -> None:
    """The node histogram keeps kube-scheduler's words; after it, each request that no refused node can serve
    says how many devices it wants, how many of its class exist, how many match its selectors, and the most
    still unallocated on one refused node. Filter path: n0 has 2 H100 (3 wanted); n1's only H100 is taken by
    an allocated claim."""
    nodes = [node("n0", cpu="32"), node("n1", cpu="32")]
    slices = [gpu_slice("n0", ["H100", "H100", "A100"]), gpu_slice("n1", ["H100", "A100"])]
    taken = claim("other", claim_spec(1), allocation={"devices": {"results": [
        {"request": "gpus", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]}})
    pods, claims = gang(1, 3, selector=H100)
    result = run(nodes, pods, [pg("g", 1)], slices, [*claims, taken])
    assert isinstance(result, Unschedulable)
    assert result.message == ("gang g: 0/1 placeable (minCount 1); 0/2 nodes are available: 2 cannot allocate all "
                              "claims. request gpus: 3 wanted; 5 device(s) of class gpu.example.com in the cluster, "
                              "3 matching its selectors, at most 2 of them unallocated on any one of the 2 nodes.")


def test_cannot_allocate_all_claims_counts_what_earlier_members_took() -> None:
    """Reserve path: the Filter lets the second member onto n0 (3 GPUs, 2 wanted), but the first took 2 of them."""
    pods, claims = gang(2, 2)
    result = run([node("n0", cpu="32")], pods, [pg("g", 2)], [gpu_slice("n0", ["H100"] * 3)], claims)
    assert isinstance(result, Unschedulable)
    assert result.message == ("gang g: 1/2 placeable (minCount 2); 0/1 nodes are available: 1 cannot allocate all "
                              "claims. request gpus: 2 wanted; 3 device(s) of class gpu.example.com in the cluster, "
                              "at most 1 unallocated on the node.")


def gpu_pod(name: str, group: str, limits: dict[str, str]) -> Pod:
    return Pod.model_validate({"metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}"}, "spec": {
        "schedulerName": "gang-scheduler", "schedulingGroup": {"podGroupName": group},
        "containers": [{"name": "main", "resources": {"limits": limits}}]}})


def test_extended_resource_is_decided_node_by_node_in_a_mixed_cluster() -> None:
    """kube-scheduler's rule (``extendeddynamicresources.go``), node by node: dp-0 and dp-1 offer 4
    nvidia.com/gpu by device plugin (one 3-GPU member each), dra-0 and dra-1 list none and publish 4 devices of a
    class serving nvidia.com/gpu (one member each, through a claim). A gang of 4 needs both kinds."""
    nodes = [node("dp-0", gpu=4), node("dp-1", gpu=4), node("dra-0"), node("dra-1")]
    pods = [gpu_pod(f"w-{i}", "g", {"nvidia.com/gpu": "3"}) for i in range(4)]
    classes = [device_class(extended="nvidia.com/gpu")]
    plan = run(nodes, pods, [pg("g", 4)], [gpu_slice("dra-0", ["H100"] * 4), gpu_slice("dra-1", ["H100"] * 4)], [],
               classes)
    assert isinstance(plan, Plan), plan
    where = {p.metadata.name: n for p, n in plan.placements}
    assert sorted(where.values()) == ["dp-0", "dp-1", "dra-0", "dra-1"]
    by_pod = {a.pod: a for a in plan.allocations}
    assert {f"{NS}/{p}" for p, n in where.items() if n.startswith("dra")} == set(by_pod)  # no claim on dp nodes
    for key, a in by_pod.items():
        assert a.synthetic and a.extended == ("nvidia.com/gpu",) and a.node == where[key.partition("/")[2]]
        assert len(a.results) == 3 and {p for _, _, p, _ in a.results} == {a.node}


def test_a_node_offering_one_of_two_served_resources_gets_a_claim_for_the_other() -> None:
    nodes = [node("n0", gpu=2)]
    nic = device_class("nic.example.com", 'device.attributes["gpu.example.com"].productName == "NIC"',
                       extended="example.com/nic")
    classes = [device_class(extended="nvidia.com/gpu"), nic]
    pod = gpu_pod("x", "g", {"nvidia.com/gpu": "2", "example.com/nic": "1"})
    plan = run(nodes, [pod], [pg("g", 1)], [gpu_slice("n0", ["NIC", "H100"])], [], classes)
    assert isinstance(plan, Plan), plan
    (a,) = plan.allocations
    assert a.extended == ("example.com/nic",)
    assert [(r, d) for r, _, _, d in a.results] == [("container-0-request-0", "gpu-0")]


def test_device_plugin_nodes_full_and_too_few_devices_leave_the_gang_unplaced() -> None:
    nodes = [node("dp-0", gpu=4), node("dra-0")]
    pods = [gpu_pod(f"w-{i}", "g", {"nvidia.com/gpu": "3"}) for i in range(3)]
    result = run(nodes, pods, [pg("g", 3)], [gpu_slice("dra-0", ["H100"] * 4)], [],
                 [device_class(extended="nvidia.com/gpu")])
    assert isinstance(result, Unschedulable)


# -- bindsToNode on a claim several pods share (KEP-5007) ---------------------------------------------------------
FABRIC = "fabric.example.com"


def fabric_slice(name: str, devices: list[str], selector: dict[str, Any] | None = None) -> ResourceSlice:
    """Network-attached links usable from several nodes (``allNodes``, or ``selector``), each binding its allocation
    to the node chosen."""
    spec: dict[str, Any] = {"driver": FABRIC, "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                            "devices": [{"name": d, "bindsToNode": True} for d in devices]}
    if selector is None:
        spec["allNodes"] = True
    else:
        spec["nodeSelector"] = selector
    return ResourceSlice.model_validate({"metadata": {"name": name}, "spec": spec})


def link_claim(name: str = "link") -> ResourceClaim:
    return claim(name, {"devices": {"requests": [{"name": "link", "exactly": {"deviceClassName": FABRIC}}]}})


def sharing_link(n: int, claim_name: str = "link") -> list[Pod]:
    """``n`` one-CPU members of gang ``g``, each naming the one claim ``claim_name``."""
    return [pod_with_claim(f"w-{i}", "g", claim_name, template=False) for i in range(n)]


def pinned_to(name: str) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}]}


FABRIC_CLASSES = [device_class(FABRIC, f'device.driver == "{FABRIC}"')]


def test_a_shared_claim_whose_device_binds_to_a_node_puts_all_its_consumers_on_that_one_node() -> None:
    """Two members name one claim; its link (``allNodes``) binds to the node chosen. n0 and n1 have room for one
    member each, n2 for both: both go to n2, and the allocation is pinned there (kube-scheduler pins it to its
    first pod's node, so every later pod sharing it must go there too)."""
    nodes = [node("n0", cpu="1"), node("n1", cpu="1"), node("n2", cpu="2")]
    plan = run(nodes, sharing_link(2), [pg("g", 2)], [fabric_slice("fabric", ["link-0"])], [link_claim()],
               FABRIC_CLASSES)
    assert isinstance(plan, Plan), plan
    assert [n for _, n in plan.placements] == ["n2", "n2"]
    (alloc,) = plan.allocations
    assert alloc.claim == f"{NS}/link"
    assert alloc.reserved_for == (("Pod", "w-0", "uid-w-0"), ("Pod", "w-1", "uid-w-1"))
    assert alloc.node == "n2" and alloc.node_selector == pinned_to("n2")


def test_a_shared_claim_bound_to_a_node_that_no_reaching_node_can_take_whole_places_nothing_and_says_why() -> None:
    """The link's slice reaches n0 and n1 (room for one member each); n2, with room for both, is out of its
    reach. Binding the claim to n0 or n1 would leave a member out: nothing is placed, and the reason names the
    claim, its device and its consumers."""
    reach = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "fabric", "operator": "In", "values": ["f1"]}]}]}
    nodes = [node("n0", cpu="1", labels={"fabric": "f1"}), node("n1", cpu="1", labels={"fabric": "f1"}),
             node("n2", cpu="2", labels={"fabric": "f2"})]
    result = run(nodes, sharing_link(2), [pg("g", 2)], [fabric_slice("fabric", ["link-0"], reach)], [link_claim()],
                 FABRIC_CLASSES)
    assert isinstance(result, Unschedulable), result
    assert (f"ResourceClaim {NS}/link: device {FABRIC}/fabric/link-0 binds the allocation to one node "
            "(bindsToNode), and no node reaching it has room for 2 consumer(s)") in result.message


def test_a_shared_claim_bound_to_a_node_tries_another_device_whose_reach_has_room() -> None:
    """Two links: ``a`` reaches n0 and n1 (room for one member each), ``b`` reaches n2 (room for both). The first
    allocation tried (link ``a``) has no node for both consumers; the next one does."""
    rack = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r0"]}]}]}
    other = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]}
    nodes = [node("n0", cpu="1", labels={"rack": "r0"}), node("n1", cpu="1", labels={"rack": "r0"}),
             node("n2", cpu="2", labels={"rack": "r1"})]
    slices = [fabric_slice("a", ["link-a"], rack), fabric_slice("b", ["link-b"], other)]
    plan = run(nodes, sharing_link(2), [pg("g", 2)], slices, [link_claim()], FABRIC_CLASSES)
    assert isinstance(plan, Plan), plan
    assert [n for _, n in plan.placements] == ["n2", "n2"]
    (alloc,) = plan.allocations
    assert [d for _, _, _, d in alloc.results] == ["link-b"] and alloc.node_selector == pinned_to("n2")


def test_a_gang_needing_fewer_than_all_consumers_pins_where_its_minimum_fits() -> None:
    """Three members share the claim, minCount 2: no node has room for three, n1 has room for two. The claim is
    bound to n1 with the two members there; the third waits (the claim, once written, pins it to n1)."""
    nodes = [node("n0", cpu="1"), node("n1", cpu="2")]
    plan = run(nodes, sharing_link(3), [pg("g", 2)], [fabric_slice("fabric", ["link-0"])], [link_claim()],
               FABRIC_CLASSES)
    assert isinstance(plan, Plan), plan
    assert [n for _, n in plan.placements] == ["n1", "n1"]
    (alloc,) = plan.allocations
    assert alloc.node_selector == pinned_to("n1")
    assert len(plan.unplaced) == 1


def test_a_podgroup_claim_whose_device_binds_to_a_node_keeps_the_whole_group_on_one_node() -> None:
    """A PodGroup's claim (reserved for the group) on a rack's link that binds to a node: b0 has room for one
    member, b1 for both, a0 (room for both) is outside the rack. The group goes to b1, pinned there."""
    rack = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]}
    nodes = [node("a0", cpu="4", labels={"rack": "r0"}), node("b0", cpu="1", labels={"rack": "r1"}),
             node("b1", cpu="2", labels={"rack": "r1"})]
    group = group_with_claim()
    pods = group_members(2)
    plan = run(nodes, pods, [group], [fabric_slice("rack-r1", ["link-0", "link-1"], rack)], [link_claim("g-fabric")],
               FABRIC_CLASSES)
    assert isinstance(plan, Plan), plan
    assert [n for _, n in plan.placements] == ["b1", "b1"]
    (alloc,) = plan.allocations
    assert alloc.reserved_for == (("PodGroup", "g", ""),)
    assert alloc.node == "b1" and alloc.node_selector == pinned_to("b1")


def test_an_allocated_shared_claim_pinned_to_a_node_sends_a_later_consumer_there() -> None:
    """The claim was written bound to n1 (bindsToNode) for pods already running; a new pod naming it may go only
    to n1, though n0 has more room and reaches the link too."""
    nodes = [node("n0", cpu="8"), node("n1", cpu="2")]
    allocated = claim("link", link_claim().spec.model_dump(by_alias=True, exclude_none=True), allocation={
        "devices": {"results": [{"request": "link", "driver": FABRIC, "pool": "fabric", "device": "link-0"}]},
        "nodeSelector": pinned_to("n1")})
    plan = run(nodes, [pod_with_claim("late", "g", "link", template=False)], [pg("g", 1)],
               [fabric_slice("fabric", ["link-0"])], [allocated], FABRIC_CLASSES)
    assert isinstance(plan, Plan), plan
    assert [n for _, n in plan.placements] == ["n1"] and plan.allocations == ()


def test_nodes_other_than_the_one_a_shared_claim_is_bound_to_are_counted_under_their_own_reason() -> None:
    """Only n2 has room for both members, and its taint keeps them out: bound to n2, the claim makes n0 and n1
    unusable, and the reason says so rather than that their devices fall short."""
    nodes = [node("n0", cpu="1"), node("n1", cpu="1"), node("n2", cpu="2", taints=["dedicated=x:NoSchedule"])]
    result = run(nodes, sharing_link(2), [pg("g", 2)], [fabric_slice("fabric", ["link-0"])], [link_claim()],
                 FABRIC_CLASSES)
    assert isinstance(result, Unschedulable), result
    assert "1 node(s) had untolerated taint {dedicated: x}" in result.message
    assert f"2 node(s) are not n2, the node shared ResourceClaim {NS}/link is bound to (bindsToNode)" in result.message


def test_two_shared_claims_bound_to_nodes_with_the_same_consumers_are_bound_to_the_same_node() -> None:
    """Both members name two claims, each on a link that binds to a node: the second claim's node must be the
    first's (a pod runs on one node), so both are pinned to n2, the one node with room for both members."""
    nodes = [node("n0", cpu="1"), node("n1", cpu="1"), node("n2", cpu="2")]
    entries = [{"name": "a", "resourceClaimName": "link-a"}, {"name": "b", "resourceClaimName": "link-b"}]
    pods = [pod_with_claim(f"w-{i}", "g", "link-a", template=False, extra={"resourceClaims": entries})
            for i in range(2)]
    plan = run(nodes, pods, [pg("g", 2)], [fabric_slice("fabric", ["link-0", "link-1"])],
               [link_claim("link-a"), link_claim("link-b")], FABRIC_CLASSES)
    assert isinstance(plan, Plan), plan
    assert [n for _, n in plan.placements] == ["n2", "n2"]
    assert {a.claim: a.node_selector for a in plan.allocations} == {
        f"{NS}/link-a": pinned_to("n2"), f"{NS}/link-b": pinned_to("n2")}


def test_a_podgroup_claim_given_by_name_is_reserved_for_the_podgroup() -> None:
    """A PodGroup's ``spec.resourceClaims`` entry may name an existing claim (``resourceClaimName``); members whose
    entry equals it use the PodGroup's claim, reserved for the PodGroup (KEP-5729), as a template's — while the same
    claim named by members of a group that does not list it is shared by name and reserved for each pod."""
    entry = {"name": "gpus", "resourceClaimName": "link"}
    listed = PodGroup.model_validate({"metadata": {"name": "g", "namespace": NS, "uid": "uid-g"}, "spec": {
        "schedulingPolicy": {"gang": {"minCount": 2}}, "resourceClaims": [entry]}})
    nodes = [node("n0", cpu="2")]
    plan = run(nodes, sharing_link(2), [listed], [fabric_slice("fabric", ["link-0"])], [link_claim()], FABRIC_CLASSES)
    assert isinstance(plan, Plan), plan
    (alloc,) = plan.allocations
    assert alloc.reserved_for == (("PodGroup", "g", ""),)
    plan = run(nodes, sharing_link(2), [pg("g", 2)], [fabric_slice("fabric", ["link-0"])], [link_claim()],
               FABRIC_CLASSES)
    assert isinstance(plan, Plan), plan
    (alloc,) = plan.allocations
    assert alloc.reserved_for == (("Pod", "w-0", "uid-w-0"), ("Pod", "w-1", "uid-w-1"))


def test_pack_keeps_a_cpu_gang_off_a_node_whose_gpus_are_published_through_dra() -> None:
    """The GPU node offers no extended resource in its allocatable — its GPUs are DRA devices — yet it is an
    accelerator node: a gang needing none takes the two CPU nodes' last cores rather than the idle GPU node."""
    nodes = [node("cpu-1", cpu="1"), node("cpu-2", cpu="1"), node("dra-2", cpu="32")]
    pods = [pod_with_claim(f"c-{i}", "g", "unused", extra={"resourceClaims": [], "containers": [
        {"name": "main", "resources": {"requests": {"cpu": "1"}}}]}) for i in range(2)]
    plan = run(nodes, pods, [pg("g", 2)], [gpu_slice("dra-2", ["H100"] * 4)], [])
    assert isinstance(plan, Plan), plan
    assert sorted(n for _, n in plan.placements) == ["cpu-1", "cpu-2"]
