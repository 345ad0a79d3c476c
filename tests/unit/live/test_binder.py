"""The binder's claim writes (DRA): what a plan writes, and how a failure is detected and rolled back."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scheduler.binding.claims import CLAIM_WRITES, DynamicResourcesPreBind
from scheduler.client.kube import JSON, ApiError, Conflict, Resource
from scheduler.dra.claims import ClaimIndex, extended_requests
from scheduler.dra.writes import ClaimWrite, claim_writes, consumer, extended_resource_claims
from scheduler.framework.binding_cycle import BindingCycle
from scheduler.framework.plan import ClaimAllocation, Plan
from scheduler.live.binder import Binder
from scheduler.model import Pod
from scheduler.model.dra import DeviceClass, ResourceClaim
from scheduler.model.scheduling import GroupKey

NS = "ml"
DRIVER = "gpu.example.com"
ON_N0 = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n0"]}]}]}


def pod(name: str, *, group: str | None = None, containers: list[dict[str, Any]] | None = None,
        shared: str | None = None) -> Pod:
    spec: dict[str, Any] = {"schedulerName": "gang-scheduler",
                            "containers": containers or [{"name": "main", "resources": {"requests": {"cpu": "1"}}}]}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if shared:
        spec["resourceClaims"] = [{"name": "shared", "resourceClaimName": shared}]
    return Pod.model_validate({"metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}"}, "spec": spec})


def device_class(name: str = "gpu", extended: str | None = None, config: bool = True) -> DeviceClass:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": "true"}}]}
    if config:
        spec["config"] = [{"opaque": {"driver": DRIVER, "parameters": {"mode": "exclusive"}}}]
    if extended:
        spec["extendedResourceName"] = extended
    return DeviceClass.model_validate({"metadata": {"name": name}, "spec": spec})


def claim(name: str, *, rv: str = "7", reserved: list[JSON] | None = None, allocated: bool = False,
          claim_config: bool = False) -> ResourceClaim:
    devices: dict[str, Any] = {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 1}}]}
    if claim_config:
        devices["config"] = [{"requests": ["gpu"], "opaque": {"driver": DRIVER, "parameters": {"x": 1}}}]
    status: dict[str, Any] = {"reservedFor": reserved or []}
    if allocated:
        status["allocation"] = {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n0",
                                                         "device": "gpu-0"}]}, "nodeSelector": ON_N0}
    return ResourceClaim.model_validate({"metadata": {"name": name, "namespace": NS, "resourceVersion": rv},
                                         "spec": {"devices": devices}, "status": status})


def plan(placements: list[tuple[Pod, str]], *allocations: ClaimAllocation) -> Plan:
    return Plan(GroupKey("PodGroup", NS, "g"), tuple(placements), frozenset(), allocations=allocations)


def per_pod(p: Pod, claim_name: str, device: str = "gpu-1") -> ClaimAllocation:
    return ClaimAllocation(f"{NS}/{claim_name}", (("Pod", p.metadata.name, p.metadata.uid),), "n0",
                           (("gpu", DRIVER, "n0", device),), ON_N0, pod=p.key)


# -- claim_writes ------------------------------------------------------------------------------------


def test_a_per_pod_claim_gets_its_allocation_config_and_reservation_at_the_version_read() -> None:
    p = pod("w-0")
    writes = claim_writes(plan([(p, "n0")], per_pod(p, "w-0-gpu")), {f"{NS}/w-0-gpu": claim("w-0-gpu",
                                                                                            claim_config=True)},
                          {"gpu": device_class()}, {})
    assert writes == [ClaimWrite(
        f"{NS}/w-0-gpu", ({"resource": "pods", "name": "w-0", "uid": "uid-w-0"},), "7", (),
        {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n0", "device": "gpu-1"}],
                     "config": [{"source": "FromClass", "requests": ["gpu"],
                                 "opaque": {"driver": DRIVER, "parameters": {"mode": "exclusive"}}},
                                {"source": "FromClaim", "requests": ["gpu"],
                                 "opaque": {"driver": DRIVER, "parameters": {"x": 1}}}]},
         "nodeSelector": ON_N0})]


@pytest.mark.parametrize("uids, want", [({(NS, "g"): "uid-g"}, "uid-g"), ({}, "")],
                         ids=["uid-from-the-cache", "unknown-podgroup-left-empty-for-the-binder-to-refuse"])
def test_a_podgroup_claim_is_reserved_for_the_podgroup_with_its_uid(uids: dict[tuple[str, str], str],
                                                                    want: str) -> None:
    a = ClaimAllocation(f"{NS}/g-gpus", (("PodGroup", "g", ""),), None, (("gpu", DRIVER, "n0", "gpu-0"),), ON_N0)
    (write,) = claim_writes(plan([(pod("w-0", group="g"), "n0")], a), {f"{NS}/g-gpus": claim("g-gpus")},
                            {"gpu": device_class(config=False)}, uids)
    assert write.reserve == ({"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "g", "uid": want},)
    assert "config" not in write.allocation["devices"]  # type: ignore[index]


def test_an_extended_resource_claim_is_created_owned_by_the_pod_with_the_request_mappings() -> None:
    """Requests named ``container-<i>-request-<j>``, ``j`` the resource's place among all the container requests
    (cpu included), as kube-scheduler's ``createRequestsAndMappings`` names them."""
    p = pod("x", containers=[
        {"name": "init", "resources": {"requests": {"cpu": "1"}}},
        {"name": "main", "resources": {"limits": {"example.com/gpu": "2", "example.com/nic": "1", "cpu": "2"}}}])
    a = ClaimAllocation(f"{NS}/x-extended-resources", (("Pod", "x", "uid-x"),), "n0",
                        (("container-1-request-1", DRIVER, "n0", "gpu-0"), ("container-1-request-1", DRIVER, "n0",
                                                                            "gpu-1"),
                         ("container-1-request-2", "nic.example.com", "n0", "nic-0")), ON_N0, synthetic=True,
                        pod=p.key, extended=("example.com/gpu", "example.com/nic"))
    served = {"example.com/gpu": "gpu", "example.com/nic": "nic"}
    (write,) = claim_writes(plan([(p, "n0")], a), {}, {"gpu": device_class(), "nic": device_class("nic", config=False)},
                            {}, served=served)
    assert write.create == {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"generateName": "x-extended-resources-", "namespace": NS,
                     "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "x", "uid": "uid-x",
                                          "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"devices": {"requests": [
            {"name": "container-1-request-1", "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount",
                                                          "count": 2}},
            {"name": "container-1-request-2", "exactly": {"deviceClassName": "nic", "allocationMode": "ExactCount",
                                                          "count": 1}}]}}}
    assert write.request_mappings == (
        {"containerName": "main", "resourceName": "example.com/gpu", "requestName": "container-1-request-1"},
        {"containerName": "main", "resourceName": "example.com/nic", "requestName": "container-1-request-2"})
    assert write.pod == f"{NS}/x" and write.resource_version == ""
    assert write.allocation["devices"]["config"] == [  # type: ignore[index]
        {"source": "FromClass", "requests": ["container-1-request-1"],
         "opaque": {"driver": DRIVER, "parameters": {"mode": "exclusive"}}}]


def test_an_extended_resource_claim_on_a_node_offering_one_of_the_resources_asks_only_for_the_other() -> None:
    p = pod("x", containers=[{"name": "main",
                              "resources": {"limits": {"example.com/gpu": "2", "example.com/nic": "1"}}}])
    a = ClaimAllocation(f"{NS}/x-extended-resources", (("Pod", "x", "uid-x"),), "n0",
                        (("container-0-request-1", "nic.example.com", "n0", "nic-0"),), ON_N0, synthetic=True,
                        pod=p.key, extended=("example.com/nic",))
    (write,) = claim_writes(plan([(p, "n0")], a), {}, {}, {},
                            served={"example.com/gpu": "gpu", "example.com/nic": "nic"})
    assert write.create is not None
    assert [r["name"] for r in write.create["spec"]["devices"]["requests"]] == ["container-0-request-1"]
    assert write.request_mappings == (
        {"containerName": "main", "resourceName": "example.com/nic", "requestName": "container-0-request-1"},)


def extended_claim(name: str, *, annotation: str | None = "true", owner: str = "x", uid: str = "uid-x",
                   controller: bool | None = True, namespace: str = NS) -> ResourceClaim:
    """A claim as a failed attempt leaves the pod's extended-resource claim (annotated, controlled by the pod)."""
    ref: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "name": owner, "uid": uid}
    if controller is not None:
        ref["controller"] = controller
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "ownerReferences": [ref]}
    if annotation is not None:
        meta["annotations"] = {"resource.kubernetes.io/extended-resource-claim": annotation}
    return ResourceClaim.model_validate({"metadata": meta})


def test_the_pods_extended_resource_claim_is_found_by_annotation_and_controlling_owner() -> None:
    """kube-scheduler's ``findExtendedResourceClaim``: annotation ``"true"`` and an owner reference with the pod's
    name and uid and ``controller: true``; anything else is not the pod's."""
    others = [extended_claim("no-annotation", annotation=None), extended_claim("annotation-false", annotation="false"),
              extended_claim("other-pod", owner="y", uid="uid-y"), extended_claim("pod-recreated", uid="uid-old"),
              extended_claim("not-controller", controller=False), extended_claim("no-controller", controller=None),
              extended_claim("other-namespace", namespace="other")]
    mine = extended_claim("x-extended-resources-abcde")
    found = extended_resource_claims([*others[:3], mine, *others[3:]])
    assert found[(NS, "x", "uid-x")] == ["x-extended-resources-abcde"]
    assert found == {(NS, "x", "uid-x"): ["x-extended-resources-abcde"], (NS, "y", "uid-y"): ["other-pod"],
                     (NS, "x", "uid-old"): ["pod-recreated"], ("other", "x", "uid-x"): ["other-namespace"]}


def test_an_extended_resource_claim_left_by_an_earlier_attempt_is_deleted_before_the_create() -> None:
    p = pod("x", containers=[{"name": "main", "resources": {"limits": {"example.com/gpu": "1"}}}])
    a = ClaimAllocation(f"{NS}/x-extended-resources", (("Pod", "x", "uid-x"),), "n0",
                        (("container-0-request-0", DRIVER, "n0", "gpu-0"),), ON_N0, synthetic=True,
                        pod=p.key, extended=("example.com/gpu",))
    left = extended_claim("x-extended-resources-abcde")
    claims = {left.key: left, f"{NS}/y-gpu": extended_claim("y-gpu", owner="y", uid="uid-y")}
    (write,) = claim_writes(plan([(p, "n0")], a), claims, {}, {}, served={"example.com/gpu": "gpu"})
    assert write.create is not None and write.stale == ("x-extended-resources-abcde",)
    (write,) = claim_writes(plan([(p, "n0")], a), {}, {}, {}, served={"example.com/gpu": "gpu"})
    assert write.stale == ()


def test_extended_requests_name_requests_like_claim_resolution() -> None:
    """The binder re-derives container/resource per request; it must agree with the solver's naming."""
    p = pod("x", containers=[
        {"name": "a", "resources": {"limits": {"example.com/gpu": "1", "nvidia.com/gpu": "1"}}},
        {"name": "b", "resources": {"requests": {"deviceclass.resource.kubernetes.io/gpu": "3"},
                                    "limits": {"example.com/gpu": "2"}}}])
    classes = [device_class(extended="example.com/gpu")]
    index = ClaimIndex.build((), (), classes, ())
    claims = index.for_pod(p)
    needed = claims.allocate[0]
    got, mappings = extended_requests(p, index.extended_classes(), claims.extended)
    assert [(r.name, r.class_name, r.amount) for r in got] == [
        (req.name, req.options[0].class_name, req.options[0].count) for req in needed.spec.requests]
    assert [r.name for r in got] == ["container-0-request-0", "container-1-request-0", "container-1-request-1"]
    assert [(m.container, m.resource, m.request) for m in mappings] == [
        ("b", "deviceclass.resource.kubernetes.io/gpu", "container-1-request-0"),
        ("a", "example.com/gpu", "container-0-request-0"), ("b", "example.com/gpu", "container-1-request-1")]


def test_init_containers_reuse_the_devices_of_later_containers_and_share_one_request() -> None:
    """kube-scheduler's rule (``createRequestsAndMappings``): an init container is served first by the requests
    of the long-lived containers after it, then by one request of the largest remainder, which every init
    container maps to; a sidecar (``restartPolicy: Always``) keeps its own request."""
    spec = {"schedulerName": "gang-scheduler",
            "initContainers": [{"name": "warm", "resources": {"limits": {"example.com/gpu": "3"}}},
                               {"name": "side", "restartPolicy": "Always",
                                "resources": {"limits": {"example.com/gpu": "1"}}},
                               {"name": "check", "resources": {"limits": {"example.com/gpu": "5"}}}],
            "containers": [{"name": "main", "resources": {"limits": {"example.com/gpu": "2"}}}]}
    p = Pod.model_validate({"metadata": {"name": "x", "namespace": NS, "uid": "uid-x"}, "spec": spec})
    got, mappings = extended_requests(p, {"example.com/gpu": "gpu"}, ["example.com/gpu"])
    # warm: 1 (side) + 2 (main) cover 3; check: main's 2 leave 3, its own request
    assert [(r.name, r.amount) for r in got] == [
        ("container-1-request-0", 1), ("container-2-request-0", 3), ("container-3-request-0", 2)]
    assert [(m.container, m.request) for m in mappings] == [
        ("side", "container-1-request-0"), ("main", "container-3-request-0"),
        ("warm", "container-1-request-0"), ("warm", "container-3-request-0"),
        ("check", "container-3-request-0"), ("check", "container-2-request-0")]
    assert p.requests["example.com/gpu"] == sum(r.amount for r in got)  # max(init) vs sum(app), as for any resource


def test_a_pod_sharing_an_allocated_claim_is_added_to_its_reservations_once() -> None:
    first = consumer("Pod", "first", "uid-first")
    a, b, c = pod("a", shared="s"), pod("b", shared="s"), pod("c", group="g", shared="s")
    claims = {f"{NS}/s": claim("s", reserved=[first, consumer("Pod", "b", "uid-b")], allocated=True),
              f"{NS}/t": claim("t", reserved=[consumer("PodGroup", "g", "uid-g")], allocated=True),
              f"{NS}/u": claim("u")}
    pinned = {a.key: [f"{NS}/s", f"{NS}/u"], b.key: [f"{NS}/s"], c.key: [f"{NS}/t"]}
    writes = claim_writes(plan([(a, "n0"), (b, "n0"), (c, "n0")]), claims, {}, {}, pinned=pinned)
    # b is reserved already, c's PodGroup holds t, u is not allocated: only a is added to s
    assert writes == [ClaimWrite(f"{NS}/s", (consumer("Pod", "a", "uid-a"),), "7",
                                 (first, consumer("Pod", "b", "uid-b")))]


# -- Binder.write_claims against a fake client -------------------------------------------------------


class FakeKube:
    """Records calls; ``fail``: (method, name) → errors to raise, one per call, before acting."""

    def __init__(self, objects: dict[str, JSON]) -> None:
        self.objects = objects
        self.calls: list[tuple[str, str, Any]] = []
        self.fail: dict[tuple[str, str], list[ApiError]] = {}
        self.rv = 100

    def _maybe_fail(self, method: str, name: str) -> None:
        errors = self.fail.get((method, name))
        if errors:
            raise errors.pop(0)

    async def get(self, res: Resource, ns: str | None, name: str, **_: Any) -> JSON:
        self.calls.append(("get", name, None))
        return copy.deepcopy(self.objects[name])

    async def create(self, res: Resource, ns: str | None, body: JSON, **_: Any) -> JSON:
        name = body["metadata"]["generateName"] + "abcde"
        self.calls.append(("create", name, body))
        self.rv += 1
        self.objects[name] = {**copy.deepcopy(body), "metadata": {**body["metadata"], "name": name,
                                                                   "resourceVersion": str(self.rv)}}
        return copy.deepcopy(self.objects[name])

    async def patch(self, res: Resource, ns: str | None, name: str, body: JSON, *, sub: str | None = None,
                    **_: Any) -> JSON:
        self.calls.append(("patch", name, body))
        self._maybe_fail("patch", name)
        obj = self.objects.setdefault(name, {"metadata": {"name": name}})
        want = (body.get("metadata") or {}).get("resourceVersion")
        if want is not None and want != obj["metadata"].get("resourceVersion"):
            raise Conflict(409, "Conflict", "the object has been modified")
        obj.setdefault("status", {}).update(body.get("status") or {})
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        return copy.deepcopy(obj)

    async def delete(self, res: Resource, ns: str | None, name: str, **_: Any) -> JSON:
        self.calls.append(("delete", name, None))
        self._maybe_fail("delete", name)
        self.objects.pop(name, None)
        return {}


def writes_for(*names: str) -> list[ClaimWrite]:
    return [ClaimWrite(f"{NS}/{n}", (consumer("Pod", n, f"uid-{n}"),), "7",
                       allocation={"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n0",
                                                            "device": f"dev-{n}"}]}}) for n in names]


def binder(kube: FakeKube) -> Binder:
    return Binder(kube, concurrency=1, retry_initial_s=0.0)  # type: ignore[arg-type]


async def test_a_409_after_a_retried_write_that_landed_is_success() -> None:
    kube = FakeKube({"a": {"metadata": {"name": "a", "resourceVersion": "7"}}})
    # the first attempt lands but its answer is lost (500); the retry then meets our own new version
    real_patch = kube.patch
    landed = {"done": False}

    async def flaky(res: Resource, ns: str | None, name: str, body: JSON, *, sub: str | None = None,
                    **_: Any) -> JSON:
        result = await real_patch(res, ns, name, body, sub=sub)
        if not landed["done"]:
            landed["done"] = True
            raise ApiError(500, "InternalError", "lost answer")
        return result

    kube.patch = flaky  # type: ignore[method-assign]
    outcome = await binder(kube).write_claims(writes_for("a"))
    assert outcome.ok
    assert [c[0] for c in kube.calls] == ["patch", "patch", "get"]
    assert kube.objects["a"]["status"]["reservedFor"] == [consumer("Pod", "a", "uid-a")]


async def test_a_permanent_failure_rolls_back_the_claims_already_written() -> None:
    kube = FakeKube({n: {"metadata": {"name": n, "resourceVersion": "7"}} for n in ("a", "b")})
    kube.fail[("patch", "b")] = [ApiError(403, "Forbidden", "no")]
    outcome = await binder(kube).write_claims(writes_for("a", "b"))
    assert outcome.failed is not None and outcome.failed[0] == f"{NS}/b" and outcome.failed[1].status == 403
    assert outcome.not_released == []
    assert kube.objects["a"]["status"] == {"reservedFor": None, "allocation": None}
    rollback = kube.calls[-1]
    assert rollback[0:2] == ("patch", "a") and rollback[2]["metadata"] == {"resourceVersion": "101"}


async def test_a_rollback_that_meets_a_change_by_someone_else_leaves_the_claim_alone() -> None:
    kube = FakeKube({n: {"metadata": {"name": n, "resourceVersion": "7"}} for n in ("a", "b")})
    kube.fail[("patch", "b")] = [ApiError(403, "Forbidden", "no")]
    theirs = {"allocation": {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n0",
                                                      "device": "dev-other"}]}}, "reservedFor": []}
    real_patch = kube.patch

    async def reallocated_meanwhile(res: Resource, ns: str | None, name: str, body: JSON, *,
                                    sub: str | None = None, **_: Any) -> JSON:
        if name == "a" and (body.get("status") or {}).get("allocation", "") is None:  # our rollback
            kube.objects["a"]["status"] = copy.deepcopy(theirs)  # deallocated and given to another pod
            kube.objects["a"]["metadata"]["resourceVersion"] = "999"
        return await real_patch(res, ns, name, body, sub=sub)

    kube.patch = reallocated_meanwhile  # type: ignore[method-assign]
    outcome = await binder(kube).write_claims(writes_for("a", "b"))
    assert not outcome.ok and outcome.not_released == []
    assert kube.objects["a"]["status"] == theirs  # not ours any more: the rollback stops
    assert [c[0:2] for c in kube.calls][-2:] == [("patch", "a"), ("get", "a")]


async def test_a_created_claim_is_deleted_and_the_pod_mapping_cleared_on_rollback() -> None:
    kube = FakeKube({"b": {"metadata": {"name": "b", "resourceVersion": "7"}}})
    kube.fail[("patch", "b")] = [ApiError(422, "Invalid", "no")]
    synthetic = ClaimWrite(f"{NS}/x-extended-resources", (consumer("Pod", "x", "uid-x"),),
                           allocation={"devices": {"results": []}}, create={"metadata": {
                               "generateName": "x-extended-resources-", "namespace": NS}, "spec": {}},
                           pod=f"{NS}/x", request_mappings=({"containerName": "main", "resourceName": "example.com/gpu",
                                                             "requestName": "container-0-request-0"},))
    outcome = await binder(kube).write_claims([synthetic, *writes_for("b")])
    assert not outcome.ok
    assert [c[0:2] for c in kube.calls] == [
        ("create", "x-extended-resources-abcde"), ("patch", "x-extended-resources-abcde"), ("patch", "x"),
        ("patch", "b"), ("patch", "x"), ("delete", "x-extended-resources-abcde")]
    mapping = kube.calls[2][2]["status"]["extendedResourceClaimStatus"]
    assert mapping["resourceClaimName"] == "x-extended-resources-abcde"
    assert kube.calls[4][2] == {"status": {"extendedResourceClaimStatus": None}}
    assert "x-extended-resources-abcde" not in kube.objects


async def test_a_reservation_for_an_unknown_podgroup_is_refused_before_any_write() -> None:
    kube = FakeKube({"g": {"metadata": {"name": "g", "resourceVersion": "7"}}})
    write = ClaimWrite(f"{NS}/g", (consumer("PodGroup", "g", ""),), "7", allocation={"devices": {"results": []}})
    outcome = await binder(kube).write_claims([write])
    assert outcome.failed is not None and outcome.failed[1].status == 404
    assert "podgroups ml/g is not known" in str(outcome.failed[1])
    assert kube.calls == []


@pytest.mark.parametrize("error, created", [(None, True), (ApiError(403, "Forbidden", "no"), False)],
                         ids=["deleted-then-created", "delete-refused-nothing-created"])
async def test_the_pods_leftover_extended_resource_claim_is_deleted_before_its_claim_is_created(
        error: ApiError | None, created: bool) -> None:
    kube = FakeKube({"x-extended-resources-old": {"metadata": {"name": "x-extended-resources-old"}}})
    if error is not None:
        kube.fail[("delete", "x-extended-resources-old")] = [error]
    write = ClaimWrite(f"{NS}/x-extended-resources", (consumer("Pod", "x", "uid-x"),),
                       allocation={"devices": {"results": []}}, create={"metadata": {
                           "generateName": "x-extended-resources-", "namespace": NS}, "spec": {}},
                       pod=f"{NS}/x", stale=("x-extended-resources-old",))
    outcome = await binder(kube).write_claims([write])
    assert outcome.ok is created
    assert [c[0:2] for c in kube.calls][:2] == ([("delete", "x-extended-resources-old"),
                                                 ("create", "x-extended-resources-abcde")] if created
                                                else [("delete", "x-extended-resources-old")])
    assert ("x-extended-resources-old" in kube.objects) is not created


async def test_a_created_claim_the_rollback_could_not_delete_is_deleted_by_the_pods_next_write() -> None:
    """Remembered by the binder, so the pod's next attempt deletes it even before the cache shows it."""
    kube = FakeKube({})
    writer = binder(kube).writer
    kube.fail[("patch", "x-extended-resources-abcde")] = [ApiError(422, "Invalid", "no")]
    kube.fail[("delete", "x-extended-resources-abcde")] = [ApiError(403, "Forbidden", "no")]
    write = ClaimWrite(f"{NS}/x-extended-resources", (consumer("Pod", "x", "uid-x"),),
                       allocation={"devices": {"results": []}}, create={"metadata": {
                           "generateName": "x-extended-resources-", "namespace": NS}, "spec": {}}, pod=f"{NS}/x")
    claims = DynamicResourcesPreBind(None)
    outcome = await claims.write_claims([write], writer)
    assert not outcome.ok and outcome.not_released == [f"{NS}/x-extended-resources-abcde"]
    assert claims.leftovers == {f"{NS}/x": {"x-extended-resources-abcde"}}
    cycle = BindingCycle(plan([]))
    cycle.write(CLAIM_WRITES, [write])
    assert claims.pre_flight(cycle)
    (again,) = cycle.read(CLAIM_WRITES, [])
    assert again.stale == ("x-extended-resources-abcde",)
    first = len(kube.calls)
    outcome = await claims.write_claims([again], writer)
    assert outcome.ok and claims.leftovers == {}
    assert [c[0:2] for c in kube.calls[first:]] == [("delete", "x-extended-resources-abcde"),  # the fake generates
                                                    ("create", "x-extended-resources-abcde"),  # the same name again
                                                    ("patch", "x-extended-resources-abcde")]
