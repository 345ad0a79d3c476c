"""The group objects made for a workload (``scheduler.operator.groups``), per served API."""

from __future__ import annotations

from scheduler.groups.workloads import GroupSpec
from scheduler.model import CompositePodGroup, PodGroup
from scheduler.operator.apis import Flavour, Served
from scheduler.operator.groups import body_of, minimum_of, minimum_patch

V1BETA1 = Served(Flavour.WORKLOAD, composite=True)
PLUGINS = Served(Flavour.COSCHEDULING)
LABELS = {"gang-scheduler.io/workload-uid": "u1", "app.kubernetes.io/managed-by": "gang-scheduler-operator"}


def test_a_tree_member_names_its_parent_and_workload() -> None:
    body = body_of(GroupSpec("PodGroup", "js-workers-0", 4, parent="js", template="workers"), "js", "u1", V1BETA1)
    assert body == {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                    "metadata": {"name": "js-workers-0", "labels": LABELS},
                    "spec": {"schedulingPolicy": {"gang": {"minCount": 4}}, "parentCompositePodGroupName": "js",
                             "workloadRef": {"workloadName": "js", "templateName": "workers"}}}
    leaf = PodGroup.model_validate(body)  # the scheduler reads what the operator writes
    assert leaf.spec.scheduling_policy.gang is not None and leaf.spec.scheduling_policy.gang.min_count == 4
    root = body_of(GroupSpec("CompositePodGroup", "js", 3, template="gang"), "js", "u1", V1BETA1)
    assert root["apiVersion"] == "scheduling.k8s.io/v1alpha3"
    assert CompositePodGroup.model_validate(root).spec.scheduling_policy.gang.min_group_count == 3  # type: ignore[union-attr]
    assert minimum_of(root) == 3 and minimum_of(body) == 4


def test_a_standalone_podgroup_has_no_workload_ref() -> None:
    assert body_of(GroupSpec("PodGroup", "train", 3), "train", "u1", V1BETA1)["spec"] == {
        "schedulingPolicy": {"gang": {"minCount": 3}}}
    assert minimum_patch(GroupSpec("PodGroup", "train", 5), V1BETA1) == {
        "spec": {"schedulingPolicy": {"gang": {"minCount": 5}}}}


def test_scheduler_plugins_podgroup_is_min_member() -> None:
    body = body_of(GroupSpec("PodGroup", "train", 3), "train", "u1", PLUGINS)
    assert body == {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                    "metadata": {"name": "train", "labels": LABELS}, "spec": {"minMember": 3}}
    assert minimum_of(body) == 3
    assert minimum_patch(GroupSpec("PodGroup", "train", 5), PLUGINS) == {"spec": {"minMember": 5}}
