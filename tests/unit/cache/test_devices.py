"""ClusterCache with DRA objects: the device inventory, allocations from claims, held devices, re-activation."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.cache.cluster import ClusterCache
from scheduler.framework.events import ClusterEvent
from scheduler.framework.plan import ClaimAllocation, Plan
from scheduler.model.scheduling import GroupKey
from scheduler.solver.plugins import dynamic_resources

NS = "ml"
DRIVER = "gpu.example.com"


def node(name: str) -> dict[str, Any]:
    alloc = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    return {"metadata": {"name": name}, "status": {"allocatable": alloc}}


def gpu_slice(node_name: str, n: int = 4, generation: int = 1) -> dict[str, Any]:
    return {"metadata": {"name": f"{node_name}-gpus"},
            "spec": {"driver": DRIVER, "nodeName": node_name,
                     "pool": {"name": node_name, "generation": generation, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": "H100"}}} for i in range(n)]}}


def device_class(expression: str = f"device.driver == '{DRIVER}'") -> dict[str, Any]:
    return {"metadata": {"name": "gpu"}, "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def claim(name: str, devices: list[str] = (), node_name: str = "n0", rv: str = "1",  # type: ignore[assignment]
          owner: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "metadata": {"name": name, "namespace": NS, "resourceVersion": rv},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}
    if owner:
        body["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner, "uid": owner,
                                                "controller": True}]
    if devices:
        body["status"] = {"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": DRIVER, "pool": node_name, "device": d} for d in devices]}}}
    return body


def pod(name: str, claim_name: str | None = None, node_name: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "gang-scheduler",
                            "containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}}}]}
    status: dict[str, Any] = {"phase": "Pending"}
    if claim_name:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "tpl"}]
        status["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    if node_name:
        spec["nodeName"] = node_name
    return {"metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}"}, "spec": spec, "status": status}


def alloc(claim_key: str, *devices: str, synthetic: bool = False, pod_key: str | None = None) -> ClaimAllocation:
    return ClaimAllocation(claim=claim_key, reserved_for=(("Pod", "p", "uid-p"),), node="n0",
                           results=tuple(("gpu", DRIVER, "n0", d) for d in devices), synthetic=synthetic, pod=pod_key)


def dra_cache(*claims: dict[str, Any], pods: list[dict[str, Any]] = ()) -> ClusterCache:  # type: ignore[assignment]
    cache = ClusterCache("gang-scheduler", dra=True)
    cache.replace("Node", [node("n0"), node("n1")])
    cache.replace("ResourceSlice", [gpu_slice("n0")])
    cache.replace("DeviceClass", [device_class()])
    cache.replace("ResourceClaim", list(claims))
    cache.replace("Pod", list(pods))
    return cache


def assume_devices(cache: ClusterCache, token: str, allocations: list[ClaimAllocation]) -> None:
    """Assume a plan that places no pod, only allocates ``allocations``."""
    cache.assume(Plan(GroupKey("PodGroup", NS, "g"), (), frozenset(), allocations=tuple(allocations)), token)


def may_help(events: list[ClusterEvent]) -> bool:
    """Whether the DRA plugin's queueing hint wakes a root it rejected on one of ``events``."""
    return any(dynamic_resources.queueing_hint(e) for e in events)


def free_devices(cache: ClusterCache) -> list[str]:
    snap = cache.snapshot()
    assert snap.dra is not None
    state = snap.dra.inventory.state(snap.dra.assumed)
    return sorted(d for d in snap.dra.inventory.devices if d not in state.taken)


def ids(*names: str) -> list[str]:
    return [f"{DRIVER}/n0/{n}" for n in names]


def test_without_dra_a_snapshot_has_no_device_view() -> None:
    cache = ClusterCache("gang-scheduler")
    cache.replace("Node", [node("n0")])
    assert cache.snapshot().dra is None


def test_devices_named_by_claim_allocations_are_taken_and_return_when_the_allocation_is_removed() -> None:
    cache = dra_cache(claim("a", ["gpu-0", "gpu-1"]))
    assert free_devices(cache) == ids("gpu-2", "gpu-3")
    changes = cache.apply("ResourceClaim", "MODIFIED", claim("a", rv="2"))  # deallocated
    assert may_help(changes)
    assert free_devices(cache) == ids("gpu-0", "gpu-1", "gpu-2", "gpu-3")


def test_a_deleted_claim_returns_its_devices() -> None:
    cache = dra_cache(claim("a", ["gpu-0"]))
    changes = cache.apply("ResourceClaim", "DELETED", claim("a", ["gpu-0"]))
    assert may_help(changes)
    assert free_devices(cache) == ids("gpu-0", "gpu-1", "gpu-2", "gpu-3")


@pytest.mark.parametrize("kind, event, raw, capacity", [
    ("ResourceClaim", "ADDED", claim("new"), True),
    ("ResourceClaim", "MODIFIED", claim("a", ["gpu-0", "gpu-1"], rv="2"), True),
    ("ResourceSlice", "MODIFIED", gpu_slice("n0", 8, generation=2), True),
    ("DeviceClass", "ADDED", {"metadata": {"name": "other"}, "spec": {}}, True),
    ("ResourceClaimTemplate", "ADDED", {"metadata": {"name": "tpl", "namespace": NS}, "spec": {"spec": {}}}, False),
], ids=["claim-appears-a-pod-may-wait-for-it", "allocation-changed-may-help-a-root-sharing-it", "slice-changed",
        "class-added", "template-alone-changes-nothing"])
def test_dra_events_that_can_help_a_waiting_root_count_as_capacity(kind: str, event: str, raw: dict[str, Any],
                                                                   capacity: bool) -> None:
    cache = dra_cache(claim("a", ["gpu-0"]))
    assert may_help(cache.apply(kind, event, raw)) is capacity


def test_inventory_is_updated_only_when_slices_classes_or_nodes_change() -> None:
    cache = dra_cache(claim("a"))
    inventory = cache.devices.inventory
    sub = dynamic_resources.SubRequest("gpu", "gpu")
    assert inventory.matches(sub, inventory.devices[f"{DRIVER}/n0/gpu-0"])
    first = inventory.generation
    cache.apply("ResourceClaim", "MODIFIED", claim("a", ["gpu-0"], rv="2"))
    cache.apply("Pod", "ADDED", pod("p", "a"))
    # claims and pods do not touch the device index (nor drop the CEL memo)
    assert inventory.generation == first and inventory._match[f"{DRIVER}/n0/gpu-0"]
    cache.apply("ResourceSlice", "MODIFIED", gpu_slice("n0", 2, generation=2))
    second = inventory.generation
    assert second > first and len(inventory.devices) == 2  # the pool was indexed again
    assert f"{DRIVER}/n0/gpu-0" not in inventory._match  # its devices' results went with it
    assert inventory.matches(sub, inventory.devices[f"{DRIVER}/n0/gpu-0"])
    cache.apply("DeviceClass", "MODIFIED", device_class("true"))
    assert inventory.generation > second and not inventory._match[f"{DRIVER}/n0/gpu-0"]  # the class's results forgotten
    third = inventory.generation
    cache.apply("Node", "ADDED", node("n2"))
    assert inventory.generation > third and len(inventory.table) == 3


def test_live_claim_resolution_never_synthesises_a_missing_template_claim() -> None:
    cache = dra_cache(pods=[pod("p", "p-gpu")])
    cache.replace("ResourceClaimTemplate", [{"metadata": {"name": "tpl", "namespace": NS},
                                            "spec": {"spec": {"devices": {"requests": []}}}}])
    snap = cache.snapshot()
    assert snap.dra is not None
    assert snap.dra.pods[f"{NS}/p"].waiting == (
        "waiting for ResourceClaim ml/p-gpu of claim 'gpu' (template tpl) to be created")


def test_assumed_devices_are_held_until_the_watch_shows_the_claim_allocated() -> None:
    cache = dra_cache(claim("a"), claim("b"))
    assume_devices(cache, "plan-1", [alloc(f"{NS}/a", "gpu-0"), alloc(f"{NS}/b", "gpu-1")])
    assert free_devices(cache) == ids("gpu-2", "gpu-3")
    cache.apply("ResourceClaim", "MODIFIED", claim("a", ["gpu-0"], rv="2"))
    assert cache.devices.held == {"plan-1": {f"{NS}/b": cache.devices.held["plan-1"][f"{NS}/b"]}}
    assert free_devices(cache) == ids("gpu-2", "gpu-3")  # gpu-0 now taken by the claim itself
    cache.apply("ResourceClaim", "MODIFIED", claim("b", ["gpu-1"], rv="2"))
    assert cache.devices.held == {}


def test_a_synthetic_claim_is_recognised_by_its_devices_under_its_generated_name() -> None:
    cache = dra_cache(pods=[pod("p")])
    assume_devices(cache, "plan-1", [alloc(f"{NS}/p-extended-resources", "gpu-0", "gpu-1", synthetic=True,
                                          pod_key=f"{NS}/p")])
    cache.apply("ResourceClaim", "ADDED", claim("p-extended-resources-x1y2z", owner="p"))
    assert cache.devices.held_device_ids() == frozenset(ids("gpu-0", "gpu-1"))
    cache.apply("ResourceClaim", "MODIFIED", claim("p-extended-resources-x1y2z", ["gpu-0", "gpu-1"], rv="2"))
    assert cache.devices.held == {}


def test_held_devices_end_when_their_claim_or_owner_pod_is_gone() -> None:
    cache = dra_cache(claim("a"), pods=[pod("p")])
    assume_devices(cache, "plan-1", [alloc(f"{NS}/a", "gpu-0"),
                                    alloc(f"{NS}/p-extended-resources", "gpu-1", synthetic=True, pod_key=f"{NS}/p")])
    cache.apply("ResourceClaim", "DELETED", claim("a"))
    assert set(cache.devices.held["plan-1"]) == {f"{NS}/p-extended-resources"}
    cache.apply("Pod", "DELETED", pod("p"))
    assert cache.devices.held == {}


def test_a_relist_settles_held_devices_like_the_watch() -> None:
    cache = dra_cache(claim("a"), claim("b"))
    assume_devices(cache, "plan-1", [alloc(f"{NS}/a", "gpu-0"), alloc(f"{NS}/b", "gpu-1")])
    cache.replace("ResourceClaim", [claim("a", ["gpu-0"], rv="3")])  # a allocated, b gone (missed events)
    assert cache.devices.held == {}


def test_forget_devices_releases_all_or_some_claims_of_a_plan() -> None:
    cache = dra_cache(claim("a"), claim("b"))
    assume_devices(cache, "plan-1", [alloc(f"{NS}/a", "gpu-0"), alloc(f"{NS}/b", "gpu-1")])
    assume_devices(cache, "plan-2", [alloc(f"{NS}/c", "gpu-2")])
    cache.forget_devices("plan-1", [f"{NS}/a"])
    assert cache.devices.held_device_ids() == frozenset(ids("gpu-1", "gpu-2"))
    cache.forget_devices("plan-1")
    assert set(cache.devices.held) == {"plan-2"}
    assert free_devices(cache) == ids("gpu-0", "gpu-1", "gpu-3")


def test_a_node_that_stops_offering_an_extended_resource_may_serve_it_through_dra() -> None:
    """A node whose allocatable changes (a device plugin removed: ``example.com/gpu`` 4 → 0) wakes pods the DRA
    plugin rejected: a class serving that resource now serves it there; so does a label change (the node may now be
    in a node-set slice's reach, kube's ``UpdateNodeLabel``); a change of neither does not."""
    cache = dra_cache()
    offering = node("n1") | {"status": {"allocatable": {"cpu": "8", "pods": "110", "example.com/gpu": "4"}}}
    cache.apply("Node", "MODIFIED", offering)
    changes = cache.apply("Node", "MODIFIED", node("n1"))
    assert may_help(changes)
    relabelled = node("n1") | {"metadata": {"name": "n1", "labels": {"zone": "a"}}}
    assert may_help(cache.apply("Node", "MODIFIED", relabelled))
    cordoned = relabelled | {"spec": {"unschedulable": True}}
    assert not may_help(cache.apply("Node", "MODIFIED", cordoned))


def test_a_pool_of_two_slices_listed_together_is_not_called_incomplete(caplog: pytest.LogCaptureFixture) -> None:
    """A pool published as two slices reaches the cache one slice at a time (a list, a driver publishing): it is
    judged when a snapshot is next taken, so only a pool still incomplete then is warned about."""
    halves = []
    for part in range(2):
        half = gpu_slice("n0", 2)
        half["metadata"]["name"] = f"n0-gpus-{part}"
        half["spec"]["pool"]["resourceSliceCount"] = 2
        half["spec"]["devices"] = [{"name": f"gpu-{2 * part + i}"} for i in range(2)]
        halves.append(half)
    cache = ClusterCache("gang-scheduler", dra=True)
    cache.replace("Node", [node("n0")])
    with caplog.at_level("WARNING", logger="scheduler.cache.devices"):
        cache.replace("ResourceSlice", halves)
        cache.snapshot()
        assert caplog.messages == []
        assert free_devices(cache) == ids("gpu-0", "gpu-1", "gpu-2", "gpu-3")
        cache.apply("ResourceSlice", "DELETED", halves[1])
        cache.snapshot()
    assert caplog.messages == [f"DRA: pool {DRIVER}/n0: 1/2 slices of generation 1 seen; not used until complete"]
