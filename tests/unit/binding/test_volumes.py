"""VolumeBinding's PreBind step of the binding cycle: what it writes, what it waits for, and every way it fails
(kube's ``checkBindings`` signals), against a fake API seam whose writes reach the "cache" as watch events."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from scheduler.binding.claims import CLAIM_WRITES
from scheduler.binding.volumes import (
    ANNOTATED_ELSEWHERE,
    CLAIM_DELETED,
    CLAIM_REF_RESET,
    LEADERSHIP_LOST,
    NODE_AFFINITY_MISMATCH,
    PROVISIONING_FAILED,
    SELECTED_NODE_RESET,
    TIMED_OUT,
    VOLUME_TAKEN,
    ClaimSource,
    VolumeBindingPreBind,
    VolumeOutcome,
)
from scheduler.binding.wait import Changes
from scheduler.client.kube import JSON, ApiError, Conflict, Lane, Resource
from scheduler.cycle import BindResult
from scheduler.dra.writes import ClaimWrite, consumer
from scheduler.framework.binding_cycle import BindingCycle, BindOutcome
from scheduler.framework.events import Action, ClusterEvent
from scheduler.framework.plan import ClaimAllocation, Plan, VolumeClaimBinding
from scheduler.live.api_writer import KubeWriter
from scheduler.live.binder import Binder
from scheduler.model import Pod
from scheduler.model.scheduling import GroupKey
from scheduler.model.storage import BIND_COMPLETED, SELECTED_NODE, PersistentVolume, PersistentVolumeClaim
from tests.unit.solver.builders import node, pod
from tests.unit.solver.storage_builders import HOSTNAME, ZONE, pv, pvc

NS = "ml"

pytestmark = pytest.mark.looptime  # the step's waits run on the fake loop clock


class FakeCluster:
    """The API seam and the cache in one: a write lands in ``objects`` and, unless ``lag`` holds it back, shows in
    the cache at once (``claims``/``volumes``), as a watch event that wakes the step."""

    def __init__(self, claims: list[PersistentVolumeClaim], volumes: tuple[PersistentVolume, ...] | list[
            PersistentVolume] = ()) -> None:
        self.claims = {c.key: c for c in claims}
        self.volumes = {v.name: v for v in volumes}
        self.nodes = {n: node(n, labels={ZONE: z, HOSTNAME: n}) for n, z in (("n1", "a"), ("n2", "b"))}
        self.changes = Changes()
        self.calls: list[tuple[str, str, str, Any]] = []
        self.fail: dict[tuple[str, str], ApiError] = {}
        self.lag = False
        self.resource_claims: dict[str, JSON] = {}
        """DRA claims by name: ``status`` patches land here (resourceVersion checked)."""

    def source(self) -> ClaimSource:
        return ClaimSource(self.claims.get, self.volumes.get, self.nodes.get)

    def show(self, obj: PersistentVolumeClaim | PersistentVolume | None, key: str) -> None:
        """A watch event: the cache now has ``obj`` (None: deleted)."""
        store: dict[str, Any] = self.claims if "/" in key else self.volumes
        if obj is None:
            store.pop(key, None)
        else:
            store[key] = obj
        self.changes.notify([ClusterEvent("PersistentVolumeClaim", Action.UPDATE)])

    async def patch(self, res: Resource, ns: str | None, name: str, body: JSON, *, sub: str | None = None,
                    lane: Lane = Lane.NORMAL, reply: bool = True) -> JSON:
        self.calls.append(("patch", res.plural, name, body))
        if (error := self.fail.pop((res.plural, name), None)) is not None:
            raise error
        if res.plural == "resourceclaims":
            obj = self.resource_claims[name]
            if body["metadata"]["resourceVersion"] != obj["metadata"]["resourceVersion"]:
                raise Conflict(409, "Conflict", "modified")
            obj["status"] = {**obj.get("status", {}), **body["status"]}
            obj["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1)
            return obj
        key = f"{ns}/{name}" if ns else name
        current = self.claims.get(key) if ns else self.volumes.get(name)
        assert current is not None
        raw = current.model_dump(by_alias=True, mode="json", exclude_none=True)
        raw["metadata"].setdefault("annotations", {}).update(body.get("metadata", {}).get("annotations", {}))
        raw.setdefault("spec", {}).update(body.get("spec", {}))
        model = type(current).model_validate(raw)
        if not self.lag:
            self.show(model, key)
        return raw

    async def get(self, res: Resource, ns: str | None, name: str, *, lane: Lane = Lane.NORMAL) -> JSON:
        self.calls.append(("get", res.plural, name, None))
        obj = self.claims[f"{ns}/{name}"] if ns else self.volumes[name]
        return obj.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def bind(self, namespace: str, name: str, node: str, uid: str | None = None, **_: object) -> None:
        self.calls.append(("bind", "pods", name, node))


class Step:
    """The plugin against a live writer over the fake cluster (no retries, four writes in flight)."""

    def __init__(self, cluster: FakeCluster, timeout_s: float, leading: bool) -> None:
        self.plugin = VolumeBindingPreBind(cluster.source(), timeout_s=timeout_s)
        self.writer = KubeWriter(cluster, concurrency=4, max_attempts=1,  # type: ignore[arg-type]
                                 fence=lambda: leading, changes=cluster.changes)

    async def bind(self, bindings: list[VolumeClaimBinding]) -> VolumeOutcome:
        return await self.plugin.bind(bindings, self.writer)


def step(cluster: FakeCluster, timeout_s: float = 30.0, leading: bool = True) -> Step:
    return Step(cluster, timeout_s, leading)


async def commit(binder: Binder, plan: Plan, writes: list[ClaimWrite]) -> tuple[BindResult, BindOutcome]:
    """One binding cycle of ``plan`` whose DynamicResources writes are ``writes``."""
    cycle = BindingCycle(plan)
    cycle.write(CLAIM_WRITES, writes)
    result = await binder.commit(binder.start(cycle))
    return result, cycle.outcome


def provisioned(name: str, node_name: str = "n1") -> VolumeClaimBinding:
    return VolumeClaimBinding(f"{NS}/{name}", node_name, None, (f"{NS}/{name}-pod",))


def bound_copy(claim: PersistentVolumeClaim, volume: str) -> PersistentVolumeClaim:
    raw = claim.model_dump(by_alias=True, mode="json", exclude_none=True)
    raw["metadata"].setdefault("annotations", {})[BIND_COMPLETED] = "yes"
    raw["spec"]["volumeName"] = volume
    raw["status"] = {"phase": "Bound"}
    return PersistentVolumeClaim.model_validate(raw)


def without_annotation(claim: PersistentVolumeClaim, value: str | None) -> PersistentVolumeClaim:
    raw = claim.model_dump(by_alias=True, mode="json", exclude_none=True)
    annotations = raw["metadata"].setdefault("annotations", {})
    annotations.pop(SELECTED_NODE, None)
    if value is not None:
        annotations[SELECTED_NODE] = value
    return PersistentVolumeClaim.model_validate(raw)


async def provisioner(cluster: FakeCluster, key: str, zone: str = "a") -> None:
    """Once the claim is annotated, make a PV in ``zone`` and bind the claim to it."""
    while SELECTED_NODE not in cluster.claims[key].metadata.annotations:
        await asyncio.sleep(0.01)
    volume = pv(f"pv-{key.partition('/')[2]}", zone=zone, phase="Bound", claim=cluster.claims[key])
    cluster.show(volume, volume.name)
    cluster.show(bound_copy(cluster.claims[key], f"pv-{key.partition('/')[2]}"), key)


async def test_claims_are_annotated_then_seen_bound_through_the_watch_without_reading_the_api() -> None:
    cluster = FakeCluster([pvc("a", namespace=NS), pvc("b", namespace=NS)])
    helpers = [asyncio.create_task(provisioner(cluster, f"{NS}/{n}")) for n in ("a", "b")]
    outcome = await step(cluster).bind([provisioned("a"), provisioned("b")])
    await asyncio.gather(*helpers)
    assert outcome.ok and outcome.written == [f"{NS}/a", f"{NS}/b"]
    assert [c[:3] for c in cluster.calls] == [("patch", "persistentvolumeclaims", "a"),
                                              ("patch", "persistentvolumeclaims", "b")]
    body = cluster.calls[0][3]
    assert body == {"metadata": {"resourceVersion": "", "annotations": {SELECTED_NODE: "n1"}}}


async def test_a_static_binding_writes_the_pvs_claim_ref_with_the_claims_identity() -> None:
    claim = pvc("a", namespace=NS)
    cluster = FakeCluster([claim], [pv("local-1", node="n1")])

    async def pv_controller() -> None:
        while cluster.volumes["local-1"].spec.claim_ref is None:
            await asyncio.sleep(0.01)
        cluster.show(bound_copy(cluster.claims[f"{NS}/a"], "local-1"), f"{NS}/a")

    helper = asyncio.create_task(pv_controller())
    outcome = await step(cluster).bind([VolumeClaimBinding(f"{NS}/a", "n1", "local-1", ())])
    await helper
    assert outcome.ok and outcome.written == ["local-1"]
    (call,) = cluster.calls
    assert call[:3] == ("patch", "persistentvolumes", "local-1")
    assert call[3]["spec"]["claimRef"] | {"resourceVersion": ""} == {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": NS, "name": "a", "uid": claim.metadata.uid,
        "resourceVersion": ""}
    assert call[3]["metadata"]["annotations"] == {"pv.kubernetes.io/bound-by-controller": "yes"}


SIGNALS = [
    pytest.param(lambda c: without_annotation(c, None), SELECTED_NODE_RESET.format(claim="a"),
                 id="the-provisioner-removes-the-annotation-to-ask-for-another-node"),
    pytest.param(lambda c: without_annotation(c, "n2"), PROVISIONING_FAILED.format(claim="a"),
                 id="the-annotation-names-another-node"),
    pytest.param(lambda c: None, CLAIM_DELETED.format(claim="a"), id="the-claim-is-deleted"),
]


@pytest.mark.parametrize(("change", "message"), SIGNALS)
async def test_a_controller_signal_after_the_write_fails_the_step_at_once(
        change: Callable[[PersistentVolumeClaim], PersistentVolumeClaim | None], message: str) -> None:
    cluster = FakeCluster([pvc("a", namespace=NS)])

    async def signal() -> None:
        while SELECTED_NODE not in cluster.claims[f"{NS}/a"].metadata.annotations:
            await asyncio.sleep(0.01)
        cluster.show(change(cluster.claims[f"{NS}/a"]), f"{NS}/a")

    helper = asyncio.create_task(signal())
    outcome = await step(cluster, timeout_s=3600).bind([provisioned("a")])
    await helper
    assert outcome.failure is not None and outcome.failure.message == message
    assert outcome.written == [f"{NS}/a"]  # left in place


async def test_a_claim_bound_to_a_pv_that_excludes_the_node_fails() -> None:
    cluster = FakeCluster([pvc("a", namespace=NS)])
    helper = asyncio.create_task(provisioner(cluster, f"{NS}/a", zone="b"))  # n1 is in zone a
    outcome = await step(cluster).bind([provisioned("a")])
    await helper
    assert outcome.failure is not None
    assert outcome.failure.message == NODE_AFFINITY_MISMATCH.format(volume="pv-a", node="n1")


async def test_a_claim_ref_reset_after_it_was_seen_fails() -> None:
    cluster = FakeCluster([pvc("a", namespace=NS)], [pv("local-1", node="n1")])

    async def reset() -> None:
        while cluster.volumes["local-1"].spec.claim_ref is None:
            await asyncio.sleep(0.01)
        cluster.show(pv("local-1", node="n1"), "local-1")

    helper = asyncio.create_task(reset())
    outcome = await step(cluster, timeout_s=3600).bind([VolumeClaimBinding(f"{NS}/a", "n1", "local-1", ())])
    await helper
    assert outcome.failure is not None and outcome.failure.message == CLAIM_REF_RESET.format(volume="local-1")


async def test_a_lagging_watch_is_not_a_reset_and_a_claim_nobody_binds_times_out() -> None:
    cluster = FakeCluster([pvc("a", namespace=NS)])
    cluster.lag = True  # the cache never shows the annotation: not "reset", only not bound yet
    outcome = await step(cluster, timeout_s=30).bind([provisioned("a")])
    assert outcome.failure is not None
    assert outcome.failure.message == f"{TIMED_OUT} (30 s; not bound: ml/a)"


WRITE_REFUSED = [
    pytest.param([pvc("a", namespace=NS, annotations={SELECTED_NODE: "n2"})], [], provisioned("a"),
                 ANNOTATED_ELSEWHERE.format(claim="a", other="n2"), 409, id="claim-annotated-for-another-node"),
    pytest.param([pvc("a", namespace=NS)], [pv("local-1", node="n1", claim=pvc("b", namespace=NS))],
                 VolumeClaimBinding(f"{NS}/a", "n1", "local-1", ()), VOLUME_TAKEN.format(volume="local-1",
                                                                                         other="ml/b"), 409,
                 id="pv-claimed-for-another-claim"),
    pytest.param([], [], provisioned("a"), CLAIM_DELETED.format(claim="a"), 404, id="claim-gone"),
]


@pytest.mark.parametrize(("claims", "volumes", "binding", "message", "status"), WRITE_REFUSED)
async def test_what_someone_else_decided_meanwhile_fails_before_any_write(
        claims: list[PersistentVolumeClaim], volumes: list[PersistentVolume], binding: VolumeClaimBinding,
        message: str, status: int) -> None:
    cluster = FakeCluster(claims, volumes)
    outcome = await step(cluster).bind([binding])
    assert outcome.failure is not None and (outcome.failure.message, outcome.failure.status) == (message, status)
    assert cluster.calls == [] and outcome.written == []


async def test_an_annotation_left_by_an_earlier_attempt_is_not_written_again() -> None:
    cluster = FakeCluster([pvc("a", namespace=NS, annotations={SELECTED_NODE: "n1"})])
    helper = asyncio.create_task(provisioner(cluster, f"{NS}/a"))
    outcome = await step(cluster).bind([provisioned("a")])
    await helper
    assert outcome.ok and cluster.calls == [] and outcome.written == []


async def test_a_409_whose_reread_shows_our_annotation_is_success_and_another_is_a_failure() -> None:
    cluster = FakeCluster([pvc("a", namespace=NS), pvc("b", namespace=NS)])
    ours = without_annotation(cluster.claims[f"{NS}/a"], "n1")
    cluster.fail[("persistentvolumeclaims", "a")] = Conflict(409, "Conflict", "modified")
    real_get = cluster.get

    async def reread(res: Resource, ns: str | None, name: str, **kw: Lane) -> JSON:
        cluster.show(ours, f"{NS}/a")  # our earlier attempt had landed
        return await real_get(res, ns, name, **kw)

    cluster.get = reread  # type: ignore[method-assign]
    helper = asyncio.create_task(provisioner(cluster, f"{NS}/a"))
    outcome = await step(cluster).bind([provisioned("a")])
    await helper
    assert outcome.ok
    cluster.fail[("persistentvolumeclaims", "b")] = Conflict(409, "Conflict", "modified")
    cluster.get = real_get  # type: ignore[method-assign]
    failed = await step(cluster).bind([provisioned("b")])
    assert failed.failure is not None and failed.failure.status == 409


async def test_a_replica_that_lost_the_lease_writes_nothing() -> None:
    cluster = FakeCluster([pvc("a", namespace=NS)])
    outcome = await step(cluster, leading=False).bind([provisioned("a")])
    assert outcome.failure is not None and outcome.failure.message == LEADERSHIP_LOST
    assert cluster.calls == []


# -- in the transaction ---------------------------------------------------------------------------------------

def member(name: str) -> Pod:
    return pod(name, namespace=NS, group="g")


async def test_the_transaction_binds_no_member_when_a_claim_times_out() -> None:
    cluster = FakeCluster([pvc("a", namespace=NS), pvc("b", namespace=NS)])
    helper = asyncio.create_task(provisioner(cluster, f"{NS}/a"))  # b is never provisioned
    binder = Binder(cluster, volumes=cluster.source(), changes=cluster.changes,  # type: ignore[arg-type]
                    volume_timeout_s=60)
    pods = [member("g-0"), member("g-1")]
    plan = Plan(GroupKey("PodGroup", NS, "g"), ((pods[0], "n1"), (pods[1], "n1")), frozenset(),
                volumes=(provisioned("a"), provisioned("b")))
    result, outcome = await commit(binder, plan, [])
    await helper
    assert [c for c in cluster.calls if c[0] == "bind"] == []
    assert result.forget == ["ml/g-0", "ml/g-1"] and outcome.skipped == ["ml/g-0", "ml/g-1"]
    assert result.failure is not None
    assert result.failure.message == (
        f"binding volumes failed: {TIMED_OUT} (60 s; not bound: ml/b); no member bound, the group requeued; left in "
        "place, as kube-scheduler leaves them: ml/a, ml/b (the next attempt resumes with them)")


async def test_device_claims_written_before_a_claim_that_times_out_are_rolled_back() -> None:
    cluster = FakeCluster([pvc("data", namespace=NS)])
    cluster.resource_claims["gpu"] = {"metadata": {"name": "gpu", "namespace": NS, "resourceVersion": "7"}}
    write = ClaimWrite(f"{NS}/gpu", (consumer("Pod", "g-0", "uid-g-0"),), "7", allocation={"devices": {"results": [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}]}})
    plan = Plan(GroupKey("PodGroup", NS, "g"), ((member("g-0"), "n1"),), frozenset(), volumes=(provisioned("data"),),
                allocations=(ClaimAllocation(f"{NS}/gpu", (("Pod", "g-0", "uid-g-0"),), "n1",
                                             (("gpu", "gpu.example.com", "n1", "gpu-0"),)),))
    binder = Binder(cluster, volumes=cluster.source(), changes=cluster.changes,  # type: ignore[arg-type]
                    volume_timeout_s=10)
    result, _ = await commit(binder, plan, [write])
    assert cluster.resource_claims["gpu"]["status"] == {"reservedFor": None, "allocation": None}
    assert [c[:3] for c in cluster.calls] == [("patch", "resourceclaims", "gpu"),
                                              ("patch", "persistentvolumeclaims", "data"),
                                              ("patch", "resourceclaims", "gpu")]  # written, annotated, rolled back
    assert result.release == [f"{NS}/gpu"] and result.failure is not None
    assert "no member bound, 1 claim write(s) rolled back, the group requeued" in result.failure.message


async def test_the_transaction_binds_every_member_once_its_claims_are_bound() -> None:
    cluster = FakeCluster([pvc("a", namespace=NS)])
    helper = asyncio.create_task(provisioner(cluster, f"{NS}/a"))
    binder = Binder(cluster, volumes=cluster.source(), changes=cluster.changes)  # type: ignore[arg-type]
    plan = Plan(GroupKey("PodGroup", NS, "g"), ((member("g-0"), "n1"),), frozenset(), volumes=(provisioned("a"),))
    result, _ = await commit(binder, plan, [])
    await helper
    assert result.ok and [c[:3] for c in cluster.calls] == [("patch", "persistentvolumeclaims", "a"),
                                                            ("bind", "pods", "g-0")]


async def test_a_binder_without_a_claim_watch_refuses_a_plan_with_claims() -> None:
    cluster = FakeCluster([pvc("a", namespace=NS)])
    plan = Plan(GroupKey("PodGroup", NS, "g"), ((member("g-0"), "n1"),), frozenset(), volumes=(provisioned("a"),))
    result, _ = await commit(Binder(cluster), plan, [])  # type: ignore[arg-type]
    assert result.failure is not None and "no PersistentVolumeClaim watch" in result.failure.message
    assert cluster.calls == []

