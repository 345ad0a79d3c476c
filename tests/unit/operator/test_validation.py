"""The validating webhook's checks (``scheduler.operator.validation``): the scheduler's own messages."""

from __future__ import annotations

from scheduler.groups.index import build_trees
from scheduler.model import Pod, PodGroup
from scheduler.operator.validation import problems, warnings
from tests.unit.groups.builders import pg_dict


def cpg(name: str, parent: str | None = None, min_group_count: int = 1) -> dict:
    spec: dict = {"workloadRef": {"workloadName": "w", "templateName": name},
                  "schedulingPolicy": {"gang": {"minGroupCount": min_group_count}}}
    if parent:
        spec["parentCompositePodGroupName"] = parent
    return {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
            "metadata": {"name": name, "namespace": "ml"}, "spec": spec}


def test_a_sound_group_passes() -> None:
    assert problems("PodGroup", pg_dict("g", 2), [], []) == []
    assert problems("PodGroup", pg_dict("g", 2, parent="missing-yet"), [], []) == []  # parents may come later
    assert problems("CompositePodGroup", cpg("root"), [], []) == []  # children come later


def test_policy_errors_are_the_schedulers() -> None:
    both = pg_dict("g", policy={"basic": {}, "gang": {"minCount": 2}})
    assert problems("PodGroup", both, [], []) == [
        "PodGroup ml/g: spec.schedulingPolicy must set exactly one of basic, gang"]
    assert problems("PodGroup", pg_dict("g", policy={}), [], []) == [
        "PodGroup ml/g: spec.schedulingPolicy must set exactly one of basic, gang"]
    assert problems("PodGroup", pg_dict("g", 0), [], []) == [
        "PodGroup ml/g: spec.schedulingPolicy.gang.minCount must be >= 1"]
    assert problems("CompositePodGroup", cpg("c", min_group_count=0), [], []) == [
        "CompositePodGroup ml/c: spec.schedulingPolicy.gang.minGroupCount must be >= 1"]


def test_the_same_words_as_the_scheduler_reports() -> None:
    """What the webhook says is what the scheduler marks the tree Invalid with (not a copy of it)."""
    pg = pg_dict("g", 0)
    pod = {"metadata": {"name": "p", "namespace": "ml"}, "spec": {"schedulerName": "s", "schedulingGroup":
                                                                  {"podGroupName": "g"}}}
    forest = build_trees([Pod.model_validate(pod)], [PodGroup.model_validate(pg)], [], scheduler_name="s")
    assert forest.trees[0].message == problems("PodGroup", pg, [], [])[0]


def test_values_the_model_refuses_are_refused() -> None:
    assert problems("PodGroup", pg_dict("g", policy={"gang": {"minCount": "2"}}), [], []) == [
        "spec.schedulingPolicy.gang.minCount: must be a valid integer"]


def test_a_cycle_it_can_see_is_refused() -> None:
    stored = [cpg("b", parent="c"), cpg("c", parent="a")]
    assert problems("CompositePodGroup", cpg("a", parent="b"), [], stored) == [
        "cycle in parentCompositePodGroupName: a → b → c → a"]
    assert problems("CompositePodGroup", cpg("a"), [], stored) == []


def test_more_than_four_levels_is_refused() -> None:
    chain = [cpg("l1"), cpg("l2", "l1"), cpg("l3", "l2"), cpg("l4", "l3")]
    assert problems("PodGroup", pg_dict("leaf", 2, parent="l3"), [], chain) == []  # 4 levels
    assert problems("PodGroup", pg_dict("leaf", 2, parent="l4"), [], chain) == ["tree depth 5 exceeds 4"]
    # a new inner group that makes existing leaves too deep
    leaves = [pg_dict("leaf", 2, parent="l4")]
    assert problems("CompositePodGroup", cpg("l1", parent="l0"), leaves, [*chain[1:], cpg("l0")]) == [
        "tree depth exceeds 4"]


def test_other_namespaces_and_the_stored_version_do_not_count() -> None:
    elsewhere = cpg("b", parent="a")
    elsewhere["metadata"]["namespace"] = "other"
    assert problems("CompositePodGroup", cpg("a", parent="b"), [], [elsewhere, cpg("b")]) == []
    old = cpg("a", parent="b")  # the stored a, replaced by the update being validated
    assert problems("CompositePodGroup", cpg("a"), [], [old, cpg("b", parent="a")]) == []


def test_a_topology_key_no_node_has_is_a_warning() -> None:
    body = pg_dict("g", 2, topology="rack")
    assert problems("PodGroup", body, [], []) == []
    assert warnings("PodGroup", body, {"kubernetes.io/hostname"}) == [
        "spec.schedulingConstraints.topology[0].key: no node has the label 'rack'; "
        "the group cannot be placed until a node does"]
    assert warnings("PodGroup", body, {"rack"}) == []
    assert warnings("PodGroup", pg_dict("g", 2), set()) == []
