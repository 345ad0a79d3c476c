"""The cache's in-memory nominations and the priority nominated room is held at."""

from __future__ import annotations

import pytest

from scheduler.model import Pod, PriorityClass
from scheduler.model.scheduling import GroupKey
from tests.unit.groups.builders import NS
from tests.unit.preemption.kit import Cluster, group, nodes, pending, running


def nominated_rows(c: Cluster, cache=None) -> dict[str, tuple[int, int]]:  # type: ignore[no-untyped-def]
    snap = (cache or c.cache()).snapshot()
    return {n.pod: (n.row, n.priority) for n in snap.nominated}


@pytest.mark.parametrize(("spec_priority", "group_priority", "class_value", "expected"), [
    pytest.param(None, 70, None, 70, id="group-spec-priority"),
    pytest.param(5, 70, None, 70, id="group-priority-over-the-pods-own"),
    pytest.param(None, None, 40, 40, id="group-priority-class"),
    pytest.param(9, None, None, 9, id="highest-member-priority"),
])
def test_a_nominated_grouped_pod_holds_room_at_its_groups_priority(
        spec_priority: int | None, group_priority: int | None, class_value: int | None, expected: int) -> None:
    c = Cluster(nodes=nodes(2))
    if class_value is not None:
        c.classes.append(PriorityClass.model_validate({"metadata": {"name": "pc"}, "value": class_value}))
    c.groups.append(group("g", 1, priority=group_priority, priority_class="pc" if class_value else None))
    c.pods.append(pending("g-0", "g", priority=spec_priority, nominated="n1"))
    assert nominated_rows(c) == {"ml/g-0": (1, expected)}


def test_a_lone_nominated_pod_holds_room_at_its_own_priority() -> None:
    c = Cluster(nodes=nodes(1), pods=[pending("solo", priority=12, nominated="n0")])
    assert nominated_rows(c) == {"ml/solo": (0, 12)}


def test_nominate_shows_the_room_held_at_once_until_the_watch_agrees() -> None:
    c = Cluster(nodes=nodes(2), groups=[group("g", 1, priority=50)], pods=[pending("g-0", "g")])
    cache = c.cache()
    cache.nominate([("ml/g-0", "n1")])
    assert nominated_rows(c, cache) == {"ml/g-0": (1, 50)}
    assert cache.nominated_node("ml/g-0") == "n1" and cache.nominations == {"ml/g-0": "n1"}
    tree = cache.tree(GroupKey("PodGroup", NS, "g"))
    assert tree is not None and tree.root.leaves().__next__().pending[0].status.nominated_node_name == "n1"
    # a status change the watch shows without the nomination (ours not written yet) keeps it
    pod = cache.pod("ml/g-0")
    assert pod is not None
    newer = pod.metadata.model_copy(update={"resource_version": "7"})
    cache.load_one("Pod", pod.model_copy(update={"metadata": newer}))
    assert nominated_rows(c, cache) == {"ml/g-0": (1, 50)}
    # the watch shows our write: the memory entry ends, the room is still held
    status = pod.status.model_copy(update={"nominated_node_name": "n1"})
    cache.load_one("Pod", pod.model_copy(update={"status": status}))
    assert cache.nominations == {} and nominated_rows(c, cache) == {"ml/g-0": (1, 50)}


def test_clearing_a_nomination_in_memory_frees_the_room_before_the_watch_shows_it() -> None:
    c = Cluster(nodes=nodes(1), groups=[group("g", 1, priority=50)], pods=[pending("g-0", "g", nominated="n0")])
    cache = c.cache()
    cache.nominate([("ml/g-0", None)])
    assert nominated_rows(c, cache) == {} and cache.nominated_node("ml/g-0") is None


@pytest.mark.parametrize("how", ["bound", "deleted"])
def test_a_nomination_ends_when_the_pod_is_bound_or_gone(how: str) -> None:
    c = Cluster(nodes=nodes(1), groups=[group("g", 1, priority=50)], pods=[pending("g-0", "g")])
    cache = c.cache()
    cache.nominate([("ml/g-0", "n0")])
    if how == "bound":
        cache.load_one("Pod", running("g-0", "n0", "g"))
    else:
        cache.delete_one("Pod", "ml/g-0")
    assert cache.nominations == {} and nominated_rows(c, cache) == {}


def test_nominating_a_bound_or_unknown_pod_does_nothing() -> None:
    c = Cluster(nodes=nodes(1), pods=[running("busy", "n0")])
    cache = c.cache()
    cache.nominate([("ml/busy", "n0"), ("ml/ghost", "n0")])
    assert cache.nominations == {}


def test_chain_membership_and_unit_of_a_pod_in_a_composite_tree() -> None:
    from tests.unit.preemption.kit import composite

    c = Cluster(nodes=nodes(1), composites=[composite("job", 1, priority=3, mode="all")],
                groups=[group("leaf", 2, parent="job")], pods=[running("leaf-0", "n0", "leaf")])
    cache = c.cache()
    pod: Pod | None = cache.pod("ml/leaf-0")
    assert pod is not None
    chain = cache.groups.chains.chain(NS, "leaf")
    assert [k for k, _ in chain] == [GroupKey("PodGroup", NS, "leaf"), GroupKey("CompositePodGroup", NS, "job")]
    m = cache.groups.chains.membership(pod)
    assert (m.priority, m.unit, m.leaf, m.min_count, m.running) == (
        3, GroupKey("CompositePodGroup", NS, "job"), GroupKey("PodGroup", NS, "leaf"), 2, 0)  # all: no spares
    assert cache.groups.structure.leaves_under(GroupKey("CompositePodGroup", NS, "job")) == [(NS, "leaf")]


def test_a_group_appearing_after_its_nominated_pod_raises_the_room_it_holds() -> None:
    c = Cluster(nodes=nodes(1), pods=[pending("g-0", "g", priority=1, nominated="n0")])
    cache = c.cache()
    assert nominated_rows(c, cache) == {"ml/g-0": (0, 1)}
    cache.load_one("PodGroup", group("g", 1, priority=80))
    assert nominated_rows(c, cache) == {"ml/g-0": (0, 80)}
