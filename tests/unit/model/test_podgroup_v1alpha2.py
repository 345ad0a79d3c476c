"""The Kubernetes 1.36 PodGroup adapter (``scheduler.model.podgroup_v1alpha2``): v1alpha2 JSON → the internal model,
conditions back to the v1.36 names. Inputs are checked against the v1.36 strict schema first, so each case is a
shape a 1.36 server really stores (except the unknown fields, which only a hand-written file can hold)."""

from __future__ import annotations

from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest

from scheduler.model.podgroup_v1alpha2 import API_VERSION, decode, encode_conditions
from scheduler.model.scheduling import INITIALLY_SCHEDULED, DisruptionMode, Empty, PodGroup, WorkloadReference


def v1alpha2(spec: dict[str, Any] | None = None, conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": API_VERSION, "kind": "PodGroup", "metadata": {"name": "g", "namespace": "ml"},
                            "spec": {"schedulingPolicy": {"gang": {"minCount": 4}}, **(spec or {})}}
    if conditions is not None:
        body["status"] = {"conditions": conditions}
    return body


def condition(type_: str, status: str = "True") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": "Scheduled", "message": "",
            "lastTransitionTime": "2026-12-01T10:00:00Z"}


def parsed(raw: dict[str, Any]) -> tuple[PodGroup, tuple[str, ...]]:
    decoded = decode(raw)
    return PodGroup.model_validate(decoded.raw), decoded.problems


@pytest.mark.parametrize("mode, expected", [
    ("Pod", DisruptionMode(single=Empty())),
    ("PodGroup", DisruptionMode(all=Empty())),
    (None, None),
], ids=["Pod-is-single", "PodGroup-is-all", "absent-is-the-default"])
def test_disruption_mode_strings_become_the_one_of(mode: str | None, expected: DisruptionMode | None) -> None:
    raw = v1alpha2({} if mode is None else {"disruptionMode": mode})
    kubernetes_validate.validate(raw, "1.36.0", strict=True)
    group, problems = parsed(raw)
    assert group.spec.disruption_mode == expected
    assert problems == ()


@pytest.mark.parametrize("mode", ["Everything", "pod", "", {"all": {}}, 3], ids=repr)
def test_an_unknown_disruption_mode_is_reported_and_read_as_the_default(mode: Any) -> None:
    group, problems = parsed(v1alpha2({"disruptionMode": mode}))
    assert group.spec.disruption_mode is None  # the API default, Pod: single
    assert problems == (f"spec.disruptionMode: {mode!r} is neither \"Pod\" nor \"PodGroup\": treated as \"Pod\" (the "
                        "default: its pods are preemption victims one by one, a partial gang is not torn down)",)


def test_the_template_reference_becomes_the_workload_reference() -> None:
    raw = v1alpha2({"podGroupTemplateRef": {"workload": {"workloadName": "train", "podGroupTemplateName": "workers"}},
                    "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
                    "priorityClassName": "high", "priority": 1000,
                    "resourceClaims": [{"name": "fabric", "resourceClaimTemplateName": "fabric"}]})
    kubernetes_validate.validate(raw, "1.36.0", strict=True)
    group, problems = parsed(raw)
    assert problems == ()
    assert group.api_version == API_VERSION
    assert group.spec.workload_ref == WorkloadReference(workload_name="train", template_name="workers")
    assert group.spec.scheduling_policy.gang is not None and group.spec.scheduling_policy.gang.min_count == 4
    assert [t.key for t in group.spec.scheduling_constraints.topology] == ["topology.kubernetes.io/zone"]  # type: ignore[union-attr]
    assert (group.spec.priority_class_name, group.spec.priority) == ("high", 1000)
    assert [c.resource_claim_template_name for c in group.spec.resource_claims] == ["fabric"]
    assert group.spec.parent_composite_pod_group_name is None and group.spec.preemption_policy is None


def test_fields_v1alpha2_does_not_define_are_reported_not_read() -> None:
    group, problems = parsed(v1alpha2({"parentCompositePodGroupName": "root", "preemptionPolicy": "Never",
                                       "workloadRef": {"workloadName": "w", "templateName": "t"}}))
    assert (group.spec.parent_composite_pod_group_name, group.spec.preemption_policy, group.spec.workload_ref) == (
        None, None, None)
    assert problems == tuple(f"spec.{f}: not a field of a scheduling.k8s.io/v1alpha2 PodGroup: ignored"
                             for f in ("parentCompositePodGroupName", "preemptionPolicy", "workloadRef"))


def test_the_scheduled_condition_is_read_and_written_under_its_v136_name() -> None:
    raw = v1alpha2(conditions=[condition("PodGroupScheduled"), condition("DisruptionTarget", "False")])
    kubernetes_validate.validate(raw, "1.36.0", strict=True)
    group, _ = parsed(raw)
    assert [(c.type, c.status) for c in group.status.conditions] == [(INITIALLY_SCHEDULED, "True"),
                                                                     ("DisruptionTarget", "False")]
    internal = [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in group.status.conditions]
    written = encode_conditions([*internal, condition("GangBelowMin", "False")])
    assert [c["type"] for c in written] == ["PodGroupScheduled", "DisruptionTarget", "GangBelowMin"]
    kubernetes_validate.validate(v1alpha2(conditions=written), "1.36.0", strict=True)


def test_a_v137_condition_name_on_a_v136_object_is_left_out() -> None:
    group, _ = parsed(v1alpha2(conditions=[condition("PodGroupScheduled", "False"), condition(INITIALLY_SCHEDULED)]))
    assert [(c.type, c.status) for c in group.status.conditions] == [(INITIALLY_SCHEDULED, "False")]


@pytest.mark.parametrize("raw", [
    {"apiVersion": API_VERSION, "kind": "PodGroup", "metadata": {"name": "g"}},
    {"apiVersion": API_VERSION, "kind": "PodGroup", "metadata": {"name": "g"}, "spec": ["x"], "status": "x"},
    {"apiVersion": API_VERSION, "kind": "PodGroup", "metadata": {"name": "g"},
     "spec": {"podGroupTemplateRef": "x", "schedulingPolicy": {"gang": {"minCount": 2}}},
     "status": {"conditions": ["x", {"type": 3}]}},
], ids=["no-spec", "spec-not-an-object", "garbage-inside"])
def test_malformed_objects_do_not_crash_the_adapter(raw: dict[str, Any]) -> None:
    decoded = decode(raw)
    assert decoded.raw["apiVersion"] == API_VERSION and decoded.raw["metadata"] == {"name": "g"}
