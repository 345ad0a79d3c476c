"""Claim resolution: synthesising absent template-generated claims (``simulate``), pod and PodGroup claims."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.dra.claims import ClaimIndex
from scheduler.model import Pod, PodGroup, ResourceClaim, ResourceClaimTemplate

NS = "ml"


def template(name: str) -> ResourceClaimTemplate:
    return ResourceClaimTemplate.model_validate({"metadata": {"name": name, "namespace": NS}, "spec": {"spec": {
        "devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c", "count": 1}}]}}}})


def member(name: str, entries: list[dict[str, Any]]) -> Pod:
    return Pod.model_validate({"metadata": {"name": name, "namespace": NS}, "spec": {
        "schedulerName": "gang-scheduler", "schedulingGroup": {"podGroupName": "g"}, "resourceClaims": entries,
        "containers": [{"name": "c"}]}})


GROUP = PodGroup.model_validate({"metadata": {"name": "g", "namespace": NS}, "spec": {
    "schedulingPolicy": {"gang": {"minCount": 2}},
    "resourceClaims": [{"name": "fabric", "resourceClaimTemplateName": "fab"}]}})
ENTRIES = [{"name": "fabric", "resourceClaimTemplateName": "fab"}, {"name": "gpus", "resourceClaimTemplateName": "gpu"}]


def test_absent_podgroup_claim_is_synthesised_once_for_all_members_and_pod_claims_per_pod() -> None:
    index = ClaimIndex.build([], [template("fab"), template("gpu")], [], [GROUP], synthesize=True)
    a, b = (index.for_pod(member(n, ENTRIES)) for n in ("m-0", "m-1"))
    assert a.waiting is None and b.waiting is None
    assert [c.key for c in a.shared] == [c.key for c in b.shared] == [f"{NS}/g-fabric"]
    assert [c.key for c in a.allocate] == [f"{NS}/m-0-gpus"]
    assert [c.key for c in b.allocate] == [f"{NS}/m-1-gpus"]
    assert sorted(index.synthesized) == [f"{NS}/g-fabric", f"{NS}/m-0-gpus", f"{NS}/m-1-gpus"]


@pytest.mark.parametrize(("synthesize", "waiting"), [
    pytest.param(False, "waiting for ResourceClaim of PodGroup ml/g claim 'fabric' (template fab) to be created",
                 id="live-path-waits-for-the-controller"),
    pytest.param(True, None, id="simulate-synthesises"),
])
def test_podgroup_claim_absent_from_the_snapshot(synthesize: bool, waiting: str | None) -> None:
    index = ClaimIndex.build([], [template("fab")], [], [GROUP], synthesize=synthesize)
    assert index.for_pod(member("m-0", ENTRIES[:1])).waiting == waiting


@pytest.mark.parametrize("synthesize", [pytest.param(False, id="live"), pytest.param(True, id="simulate")])
def test_missing_template_waits_and_says_the_template_is_missing(synthesize: bool) -> None:
    """No claim can be made from a template that does not exist, by the resourceclaim controller or by
    ``simulate``: the reason names it, so the user does not wait for a claim that never comes."""
    index = ClaimIndex.build([], [], [], [GROUP], synthesize=synthesize)
    assert index.for_pod(member("m-0", ENTRIES[:1])).waiting == (
        "waiting for ResourceClaim of PodGroup ml/g claim 'fabric' (template fab) to be created: "
        "ResourceClaimTemplate ml/fab not found")


def allocated_claim(consumers: int) -> ResourceClaim:
    return ResourceClaim.model_validate({"metadata": {"name": "shared", "namespace": NS}, "spec": {"devices": {
        "requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}}, "status": {
        "allocation": {"devices": {"results": [{"request": "r", "driver": "d", "pool": "p", "device": "g0"}]}},
        "reservedFor": [{"resource": "pods", "name": f"user-{i}", "uid": f"uid-{i}"} for i in range(consumers)]}})


def lone(name: str, uid: str) -> Pod:
    return Pod.model_validate({"metadata": {"name": name, "namespace": NS, "uid": uid}, "spec": {
        "schedulerName": "gang-scheduler", "resourceClaims": [{"name": "x", "resourceClaimName": "shared"}],
        "containers": [{"name": "c"}]}})


def test_a_claim_reserved_for_the_most_consumers_it_may_have_takes_no_other_pod() -> None:
    """``status.reservedFor`` holds at most 256 consumers: a pod not among them waits ("resourceclaim in use" in
    kube-scheduler's DynamicResources PreFilter); one among them, or any pod while there is room, uses the claim."""
    full = ClaimIndex.build([allocated_claim(256)], [], [], [])
    assert full.for_pod(lone("new", "uid-new")).waiting == (
        "ResourceClaim ml/shared is in use by 256 consumers, the most it may have (256)")
    assert full.for_pod(lone("user-3", "uid-3")).pinned == (f"{NS}/shared",)
    assert ClaimIndex.build([allocated_claim(255)], [], [], []).for_pod(lone("new", "uid-new")).pinned == (
        f"{NS}/shared",)
