"""Tree assembly: roots, children, readiness and every structural error case (architecture §1, KEP-6012)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.groups import Leaf, TreeState, build_trees
from scheduler.groups.index import GroupIndex
from scheduler.model import CompositePodGroup, Pod, PodGroup, PriorityClass
from scheduler.model.scheduling import GroupKey
from tests.unit.groups.builders import NS, cpg, pg

OURS = "gang-scheduler"


def pod(name: str, group: str | None, scheduler: str = OURS, node: str | None = None, phase: str = "Pending",
        gated: bool = False, priority: int | None = None, created: str = "2026-01-01T00:00:00Z") -> Pod:
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [{"name": "c"}]}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if node:
        spec["nodeName"] = node
    if gated:
        spec["schedulingGates"] = [{"name": "example.com/wait"}]
    if priority is not None:
        spec["priority"] = priority
    return Pod.model_validate({"metadata": {"name": name, "namespace": NS, "creationTimestamp": created},
                               "spec": spec, "status": {"phase": phase}})


def members(group: str, n: int, **kw: Any) -> list[Pod]:
    return [pod(f"{group}-{i}", group, **kw) for i in range(n)]


def trees(pods: list[Pod], pgs: list[PodGroup] = (), cpgs: list[CompositePodGroup] = (),  # type: ignore[assignment]
          classes: list[PriorityClass] = ()):  # type: ignore[assignment,no-untyped-def]
    return build_trees(pods, pgs, cpgs, classes, scheduler_name=OURS)


def by_root(forest) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    return {t.key.name: t for t in forest.trees}


def test_standalone_gang_with_enough_members_is_ready() -> None:
    forest = trees(members("g", 3), [pg("g", 3)])
    (tree,) = forest.trees
    assert tree.state is TreeState.READY
    assert isinstance(tree.root, Leaf) and tree.root.min_count == 3
    assert [p.metadata.name for p in tree.root.pending] == ["g-0", "g-1", "g-2"]


def test_gang_with_too_few_members_waits_with_counts() -> None:
    forest = trees(members("g", 3), [pg("g", 8)])
    (tree,) = forest.trees
    assert tree.state is TreeState.WAITING
    assert tree.message == "gang g: 3/8 pods exist (minCount 8)"


def test_bound_members_count_toward_min_count() -> None:
    pods = members("g", 2) + [pod("g-b0", "g", node="n1"), pod("g-b1", "g", node="n2")]
    (tree,) = trees(pods, [pg("g", 4)]).trees
    assert tree.state is TreeState.READY
    assert isinstance(tree.root, Leaf)
    assert len(tree.root.bound) == 2 and tree.root.need == 2


def test_terminal_members_do_not_count() -> None:
    pods = members("g", 2) + [pod("g-done", "g", node="n1", phase="Succeeded")]
    (tree,) = trees(pods, [pg("g", 3)]).trees
    assert tree.state is TreeState.WAITING
    assert tree.message == "gang g: 2/3 pods exist (minCount 3)"


def test_gated_members_are_not_tried_and_are_reported() -> None:
    pods = members("g", 2) + [pod("g-gated", "g", gated=True)]
    (tree,) = trees(pods, [pg("g", 3)]).trees
    assert tree.state is TreeState.WAITING
    assert tree.message == "gang g: 2/3 pods ready, 1 scheduling-gated (minCount 3)"


@pytest.mark.parametrize(
    ("ungated", "gated", "min_count", "message"),
    [
        pytest.param(0, 1, 1, "gang g: 0/1 pods ready, 1 scheduling-gated (minCount 1)", id="only-member-gated"),
        pytest.param(1, 2, 3, "gang g: 1/3 pods ready, 2 scheduling-gated (minCount 3)", id="some-members-gated"),
        pytest.param(1, 0, 3, "gang g: 1/3 pods exist (minCount 3)", id="none-gated-says-exist"),
    ],
)
def test_waiting_message_never_says_fewer_pods_exist_than_do(ungated: int, gated: int, min_count: int,
                                                             message: str) -> None:
    pods = members("g", ungated) + [pod(f"g-gated-{i}", "g", gated=True) for i in range(gated)]
    (tree,) = trees(pods, [pg("g", min_count)]).trees
    assert tree.state is TreeState.WAITING
    assert tree.message == message


def test_all_members_bound_is_scheduled() -> None:
    pods = [pod("g-0", "g", node="n1"), pod("g-1", "g", node="n1")]
    (tree,) = trees(pods, [pg("g", 2)]).trees
    assert tree.state is TreeState.SCHEDULED


def test_pod_naming_a_missing_podgroup_is_an_orphan() -> None:
    forest = trees([pod("p", "nope")])
    assert forest.trees == []
    (orphan,) = forest.orphans
    assert orphan.message == "waiting for PodGroup ml/nope to appear"


def test_orphans_follow_their_podgroup_appearing_and_going() -> None:
    """Pods listed before their PodGroups (an informer's lists run side by side) wait as orphans until it appears,
    and again once it is deleted; each group's orphans apart from the others'."""
    index = GroupIndex(OURS)
    for p in members("a", 2) + members("b", 1):
        index.set_pod(p.key, p)
    assert sorted(o.pod.metadata.name for o in index.forest().orphans) == ["a-0", "a-1", "b-0"]
    index.set_podgroup((NS, "a"), pg("a", 2))
    forest = index.forest()
    assert [o.pod.metadata.name for o in forest.orphans] == ["b-0"] and len(forest.trees) == 1
    index.set_podgroup((NS, "a"), None)
    assert sorted(o.pod.metadata.name for o in index.forest().orphans) == ["a-0", "a-1", "b-0"]


def test_an_api_read_from_now_on_is_no_longer_the_reason_its_orphans_give() -> None:
    """Pods of a PodGroup API not served say so; once it is read (``run`` found it served later) they are judged
    again on the next refresh and wait for their PodGroup to appear like any orphan."""
    index = GroupIndex(OURS)
    index.set_unread_apis({"scheduling.k8s.io": "the scheduling.k8s.io PodGroup API is not served (again in 30 s)"})
    p = pod("p", "g")
    index.set_pod(p.key, p)
    assert [o.message for o in index.forest().orphans] == [
        "PodGroup ml/g cannot be read: the scheduling.k8s.io PodGroup API is not served (again in 30 s)"]
    index.set_unread_apis({})
    assert [o.message for o in index.forest().orphans] == ["waiting for PodGroup ml/g to appear"]
    index.set_podgroup((NS, "g"), pg("g", 1))
    forest = index.forest()
    assert forest.orphans == [] and [t.key.name for t in forest.trees] == ["g"]


@pytest.mark.parametrize(("first", "second"), [("g1", "g0"), ("g0", "g1")])
def test_an_orphan_moving_to_another_missing_podgroup_waits_for_that_one_only(first: str, second: str) -> None:
    """A pod relabelled from one PodGroup not yet read to another: both groups are judged again in one refresh,
    and the pod stays an orphan of the second, then leaves cleanly. Both directions, as the refresh takes the
    two groups in the order of a set of names."""
    index = GroupIndex(OURS)
    before, after = pod("p", first), pod("p", second)
    index.set_pod(before.key, before)
    assert [o.message for o in index.forest().orphans] == [f"waiting for PodGroup ml/{first} to appear"]
    index.set_pod(after.key, after)
    assert [o.message for o in index.forest().orphans] == [f"waiting for PodGroup ml/{second} to appear"]
    index.set_pod(after.key, None)
    assert index.forest().orphans == []


def test_pod_without_group_is_its_own_basic_tree() -> None:
    (tree,) = trees([pod("lone", None)]).trees
    assert tree.key == GroupKey("Pod", NS, "lone")
    assert tree.state is TreeState.READY
    assert isinstance(tree.root, Leaf) and tree.root.min_count is None


def test_other_schedulers_trees_and_pods_are_left_out() -> None:
    forest = trees([pod("x", "theirs", scheduler="default-scheduler"), pod("y", None, scheduler="volcano")],
                   [pg("theirs", 1)])
    assert forest.trees == [] and forest.orphans == []


def test_mixed_scheduler_names_make_the_tree_invalid() -> None:
    pods = members("g", 2) + [pod("g-x", "g", scheduler="default-scheduler")]
    (tree,) = trees(pods, [pg("g", 2)]).trees
    assert tree.state is TreeState.INVALID
    assert tree.message == ("pods of one tree must share one schedulerName, found "
                            "default-scheduler (1), gang-scheduler (2)")


def test_composite_tree_is_assembled_children_in_creation_order() -> None:
    groups = [pg("workers", 2, parent="root", created="2026-01-01T00:00:02Z"),
              pg("driver", 1, parent="root", created="2026-01-01T00:00:01Z")]
    pods = members("workers", 2) + members("driver", 1)
    (tree,) = trees(pods, groups, [cpg("root", 2)]).trees
    assert tree.state is TreeState.READY
    assert tree.key == GroupKey("CompositePodGroup", NS, "root")
    assert [c.name for c in tree.root.children] == ["driver", "workers"]  # type: ignore[union-attr]
    assert tree.groups == (GroupKey("CompositePodGroup", NS, "root"), GroupKey("PodGroup", NS, "driver"),
                           GroupKey("PodGroup", NS, "workers"))


def test_composite_waits_until_min_group_count_children_are_admissible() -> None:
    groups = [pg("a", 2, parent="root"), pg("b", 2, parent="root")]
    (tree,) = trees(members("a", 2) + members("b", 1), groups, [cpg("root", 2)]).trees
    assert tree.state is TreeState.WAITING
    assert tree.message == ("composite root: 1/2 child groups ready (minGroupCount 2; 2 exist); "
                            "gang b: 1/2 pods exist (minCount 2)")


def test_a_missing_parent_makes_only_that_subtree_wait_for_it() -> None:
    """Objects are created in any order: a PodGroup whose parent does not exist yet waits for it, as a pod waits for
    its PodGroup; a malformed policy under it still makes it Invalid."""
    groups = [pg("orphaned", 1, parent="ghost"), pg("fine", 1)]
    forest = trees(members("orphaned", 1) + members("fine", 1), groups)
    roots = by_root(forest)
    assert roots["orphaned"].state is TreeState.WAITING
    assert roots["orphaned"].message == "waiting for CompositePodGroup ml/ghost to appear"
    assert roots["fine"].state is TreeState.READY
    bad = trees(members("orphaned", 1), [pg("orphaned", 0, parent="ghost")])
    assert by_root(bad)["orphaned"].state is TreeState.INVALID
    assert "ml/ghost" not in by_root(bad)["orphaned"].message


def test_cycle_is_reported_once_and_other_trees_unaffected() -> None:
    cpgs = [cpg("a", 1, parent="b"), cpg("b", 1, parent="a")]
    groups = [pg("leaf", 1, parent="a"), pg("fine", 1)]
    forest = trees(members("leaf", 1) + members("fine", 1), groups, cpgs)
    roots = by_root(forest)
    assert set(roots) == {"a", "fine"}
    assert roots["a"].state is TreeState.INVALID
    assert roots["a"].message.startswith("cycle in parentCompositePodGroupName: ")
    assert roots["fine"].state is TreeState.READY


@pytest.mark.parametrize(
    ("cpgs", "groups", "root", "message"),
    [
        pytest.param([cpg("a", 1, parent="b"), cpg("b", 1, parent="a")], [pg("leaf", 1, parent="a")], "a",
                     "cycle in parentCompositePodGroupName: a → b → a", id="two-composites"),
        pytest.param([cpg("cyc1", 1, parent="cyc2"), cpg("cyc2", 1, parent="cyc1")], [pg("leaf", 1, parent="cyc2")],
                     "cyc1", "cycle in parentCompositePodGroupName: cyc1 → cyc2 → cyc1", id="leaf-under-second"),
        pytest.param([cpg("self", 1, parent="self")], [pg("leaf", 1, parent="self")], "self",
                     "cycle in parentCompositePodGroupName: self → self", id="own-parent"),
    ],
)
def test_cycle_message_does_not_claim_a_composite_has_no_children(
        cpgs: list[CompositePodGroup], groups: list[PodGroup], root: str, message: str) -> None:
    (tree,) = trees(members("leaf", 1), groups, cpgs).trees
    assert (tree.key.name, tree.state, tree.message) == (root, TreeState.INVALID, message)


def test_composite_without_any_child_yet_waits_for_them() -> None:
    """Objects are created in any order: a CompositePodGroup before its PodGroups waits for them, and says how many
    it has against how many it needs (one child that exists is not all that is needed)."""
    forest = trees(members("g", 1), [pg("g", 1), pg("a", 1, parent="half")], [cpg("lonely", 1), cpg("half", 2)])
    assert [t.key.name for t in forest.trees] == ["g"]
    assert {(t.key.name, t.state, t.message) for t in forest.empty} == {
        ("lonely", TreeState.WAITING, "composite lonely: 0/1 child groups ready (minGroupCount 1; 0 exist)"),
        ("half", TreeState.WAITING, "composite half: 0/2 child groups ready (minGroupCount 2; 1 exists); "
                                    "gang a: 0/1 pods exist (minCount 1)")}


@pytest.mark.parametrize(
    ("pods", "pgs", "cpgs", "empty"),
    [
        pytest.param([], [pg("g", 3)], [], {"g": "gang g: 0/3 pods exist (minCount 3)"}, id="gang-without-pods"),
        pytest.param([], [pg("a", 2, parent="root"), pg("b", 1, parent="root")], [cpg("root", 2)],
                     {"root": "composite root: 0/2 child groups ready (minGroupCount 2; 2 exist); "
                              "gang a: 0/2 pods exist (minCount 2); gang b: 0/1 pods exist (minCount 1)"},
                     id="composite-without-pods"),
        pytest.param([pod("x", "theirs", scheduler="default-scheduler")], [pg("theirs", 1)], [], {},
                     id="another-schedulers-group-is-not-empty"),
        pytest.param(members("a", 1), [pg("a", 1, parent="root"), pg("b", 1, parent="root")], [cpg("root", 1)], {},
                     id="empty-child-of-a-tree-with-pods-stays-in-the-tree"),
    ],
)
def test_trees_with_no_pod_at_all_are_kept_apart(pods: list[Pod], pgs: list[PodGroup], cpgs: list[CompositePodGroup],
                                                 empty: dict[str, str]) -> None:
    forest = trees(pods, pgs, cpgs)
    assert {t.key.name: t.message for t in forest.empty} == empty
    assert all(t.state is TreeState.WAITING for t in forest.empty)
    assert not {t.key.name for t in forest.trees} & set(empty)


def test_depth_over_four_is_invalid() -> None:
    cpgs = [cpg("l1", 1), cpg("l2", 1, parent="l1"), cpg("l3", 1, parent="l2"), cpg("l4", 1, parent="l3")]
    (tree,) = trees(members("leaf", 1), [pg("leaf", 1, parent="l4")], cpgs).trees
    assert tree.state is TreeState.INVALID
    assert tree.message == "tree depth 5 exceeds 4"


@pytest.mark.parametrize("levels", [5, 400])
def test_a_chain_past_the_depth_limit_keeps_every_group_and_pod_in_its_invalid_tree(levels: int) -> None:
    """Past the limit the groups are still read, flat and without recursion (a chain of hundreds of composites):
    the report and the conditions name every group, and the pods wait in the tree, none lost."""
    cpgs = [cpg("c0", 1)] + [cpg(f"c{i}", 1, parent=f"c{i - 1}") for i in range(1, levels)]
    (tree,) = trees(members("leaf", 2), [pg("leaf", 1, parent=f"c{levels - 1}")], cpgs).trees
    assert tree.state is TreeState.INVALID and tree.message == "tree depth exceeds 4"
    assert {k.name for k in tree.groups} == {f"c{i}" for i in range(levels)} | {"leaf"}
    assert [p.metadata.name for leaf in tree.root.leaves() for p in leaf.pending] == ["leaf-0", "leaf-1"]


def test_depth_four_is_allowed() -> None:
    cpgs = [cpg("l1", 1), cpg("l2", 1, parent="l1"), cpg("l3", 1, parent="l2")]
    (tree,) = trees(members("leaf", 1), [pg("leaf", 1, parent="l3")], cpgs).trees
    assert tree.state is TreeState.READY


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        pytest.param({}, "PodGroup ml/g: spec.schedulingPolicy must set exactly one of basic, gang", id="no-policy"),
        pytest.param({"basic": {}, "gang": {"minCount": 1}},
                     "PodGroup ml/g: spec.schedulingPolicy must set exactly one of basic, gang", id="both-policies"),
        pytest.param({"gang": {"minCount": 0}}, "PodGroup ml/g: spec.schedulingPolicy.gang.minCount must be >= 1",
                     id="zero-min-count"),
    ],
)
def test_malformed_policy_is_invalid(policy: dict[str, Any], message: str) -> None:
    (tree,) = trees(members("g", 2), [pg("g", policy=policy)]).trees
    assert tree.state is TreeState.INVALID
    assert tree.message == message


def test_priority_from_group_then_class_then_members() -> None:
    classes = [PriorityClass.model_validate({"metadata": {"name": "high"}, "value": 1000})]
    forest = trees(members("a", 1) + members("b", 1) + members("c", 1, priority=7),
                   [pg("a", 1, priority=5), pg("b", 1, priority_class="high"), pg("c", 1)], classes=classes)
    roots = by_root(forest)
    assert (roots["a"].priority, roots["b"].priority, roots["c"].priority) == (5, 1000, 7)


def test_pending_members_ordered_by_priority_then_creation() -> None:
    pods = [pod("late", "g", created="2026-01-01T00:00:09Z"), pod("early", "g", created="2026-01-01T00:00:01Z"),
            pod("vip", "g", priority=10, created="2026-01-01T00:00:05Z")]
    (tree,) = trees(pods, [pg("g", 3)]).trees
    assert [p.metadata.name for p in tree.root.pending] == ["vip", "early", "late"]  # type: ignore[union-attr]


def test_gated_pod_without_group_is_not_scheduled() -> None:
    forest = trees([pod("lone", None, gated=True), pod("orphan", "nope", gated=True)])
    assert forest.trees == [] and forest.orphans == []


@pytest.mark.parametrize("min_count", [0, -1])
def test_a_gang_whose_min_count_the_api_refuses_is_never_satisfied_without_a_member(min_count: int) -> None:
    """``minCount`` below 1 (the API refuses it; an emulator or an old object may hold it): the tree is Invalid, and
    its group is not satisfied by no member at all — else its condition would be ``True``/``Scheduled``, terminal."""
    (empty,) = trees([], [pg("neg", min_count)]).empty  # no pod at all
    assert not empty.root.satisfied
    forest = trees(members("neg", 1), [pg("neg", min_count)])
    (tree,) = forest.trees
    assert tree.state is TreeState.INVALID and not tree.root.satisfied
    bound = trees([pod("neg-0", "neg", node="n0", phase="Running")], [pg("neg", min_count)])
    assert all(t.root.satisfied for t in bound.trees)  # one member bound: satisfied, whatever the count says


@pytest.mark.parametrize("min_group_count", [0, -1])
def test_a_composite_whose_min_group_count_the_api_refuses_is_not_satisfied_by_no_child(min_group_count: int) -> None:
    top = cpg("top", 1).model_copy(deep=True)
    raw = top.model_dump(by_alias=True)
    raw["spec"]["schedulingPolicy"] = {"gang": {"minGroupCount": min_group_count}}
    forest = trees(members("a", 1), [pg("a", 5, parent="top")], [CompositePodGroup.model_validate(raw)])
    (tree,) = forest.trees
    assert tree.state is TreeState.INVALID and not tree.root.satisfied


def test_a_root_that_gets_a_parent_is_a_root_no_more() -> None:
    """PodGroups created before their CompositePodGroup are roots of their own (Waiting for it); once it exists the
    only root is the composite, and the children's old roots are reported changed (gone) — they stayed in the index
    as roots beside it, counted as waiting and routable as roots of their own."""
    index = GroupIndex(OURS)
    index.set_podgroup((NS, "a"), pg("a", 1, parent="job"))
    for p in members("a", 1):
        index.set_pod(p.key, p)
    index.refresh()
    assert [t.key.name for t in index.forest().trees] == ["a"]
    index.set_composite((NS, "job"), cpg("job", 1))
    changed = index.refresh()
    assert [t.key.name for t in index.forest().trees] == ["job"]
    assert sorted(k.name for k in index.trees) == ["job"]
    assert GroupKey("PodGroup", NS, "a") in changed
    index.set_composite((NS, "job"), None)  # and back: the child waits for its parent again, a root of its own
    changed = index.refresh()
    assert sorted(k.name for k in index.trees) == ["a"]
    assert {GroupKey("CompositePodGroup", NS, "job"), GroupKey("PodGroup", NS, "a")} <= changed
