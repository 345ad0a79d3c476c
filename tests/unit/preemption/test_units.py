"""Victim units: who is a candidate, what goes together, and the importance (reprieve) order."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from scheduler.cache.cluster import ClusterCache
from scheduler.cache.group_view import CacheGroupView
from scheduler.cycle import schedule_one
from scheduler.framework import Decision, Plan, Preemption, SolverConfig, Unschedulable
from scheduler.framework.node_info import NodeInfo
from scheduler.model.scheduling import GroupKey
from scheduler.preemption import DefaultPreemption
from scheduler.preemption.units import (
    MIN_CANDIDATE_NODES,
    RANK_ALL,
    RANK_MEMBER,
    RANK_POD,
    ROOM_SLACK,
    WINDOW_GROWTH,
    Entry,
    NodeEntries,
    NodeFloors,
    Unit,
    allocatable_holds,
    candidates,
    importance,
    usable_rows,
    windows,
)
from scheduler.solver.plugins import DEFAULT_PROFILE
from tests.unit.groups.builders import NS
from tests.unit.preemption.kit import Cluster, composite, group, names, nodes, pending, running


def units_of(c: Cluster, root: str = "high") -> list[Unit]:
    cache = c.cache()
    tree = cache.tree(GroupKey("PodGroup", NS, root))
    assert tree is not None
    snapshot = cache.snapshot()
    return candidates(snapshot, tree, CacheGroupView(cache), usable_rows(snapshot, tree, DEFAULT_PROFILE.static_check))


def preemptor(c: Cluster, priority: int = 100) -> None:
    c.groups.append(group("high", 1, priority=priority))
    c.pods.append(pending("high-0", "high"))


def test_candidates_are_running_pods_of_lower_priority_outside_the_own_tree() -> None:
    c = Cluster(nodes=nodes(2))
    c.pods += [running("low", "n0", priority=1), running("equal", "n0", priority=100), running("higher", "n1",
               priority=1000), running("going", "n1", priority=1, terminating=True)]
    preemptor(c)
    assert [names(u.pods) for u in units_of(c)] == [["low"]]


def test_an_all_group_is_one_unit_a_single_group_one_per_pod() -> None:
    c = Cluster(nodes=nodes(2), groups=[group("whole", 2, priority=1, mode="all"), group("each", 2, priority=1)])
    c.pods += [running("whole-0", "n0", "whole"), running("whole-1", "n1", "whole"),
               running("each-0", "n0", "each"), running("each-1", "n1", "each"), running("lone", "n1", priority=1)]
    preemptor(c)
    found = sorted((names(u.pods), u.rank, u.key) for u in units_of(c))
    assert found == [(["each-0"], RANK_MEMBER, "ml/each-0"), (["each-1"], RANK_MEMBER, "ml/each-1"),
                     (["lone"], RANK_POD, "ml/lone"),
                     (["whole-0", "whole-1"], RANK_ALL, GroupKey("PodGroup", NS, "whole"))]


def test_only_nodes_the_preemptor_could_use_are_searched() -> None:
    c = Cluster(nodes=nodes(1) + nodes(2, taints=["dedicated=x:NoSchedule"])[1:])
    c.pods += [running("here", "n0", priority=1), running("there", "n1", priority=1)]
    preemptor(c)
    assert [names(u.pods) for u in units_of(c)] == [["here"]]


def test_assumed_pods_are_not_victims() -> None:
    c = Cluster(nodes=nodes(1), groups=[group("low", 1, priority=1)])
    c.pods.append(pending("low-0", "low"))
    preemptor(c)
    cache = c.cache()
    low = cache.tree(GroupKey("PodGroup", NS, "low"))
    assert low is not None
    cache.assume(Plan(low.key, ((low.root.leaves().__next__().pending[0], "n0"),), frozenset({low.key})), "t1")
    tree = cache.tree(GroupKey("PodGroup", NS, "high"))
    assert tree is not None
    snapshot = cache.snapshot()
    assert candidates(snapshot, tree, CacheGroupView(cache),
                      usable_rows(snapshot, tree, DEFAULT_PROFILE.static_check)) == []


def test_importance_orders_priority_then_what_breaks_a_gang_then_rank_then_size_then_age() -> None:
    c = Cluster(nodes=nodes(4, cpu="8"), groups=[
        group("big", 3, priority=1, mode="all"), group("small", 1, priority=1, mode="all"),
        group("gang", 2, priority=1), group("higher", 1, priority=5)])
    c.pods += [running(f"big-{j}", f"n{j}", "big") for j in range(3)]
    c.pods += [running("small-0", "n0", "small"), running("higher-0", "n1", "higher")]
    c.pods += [running(f"gang-{j}", f"n{j}", "gang", started=f"2026-01-01T00:0{j}:00Z") for j in range(3)]
    c.pods += [running("old", "n3", priority=1, started="2025-01-01T00:00:00Z"),
               running("young", "n3", priority=1, started="2026-06-01T00:00:00Z")]
    preemptor(c)
    order = [names(u.pods) for u in sorted(units_of(c), key=importance)]
    assert order == [
        ["higher-0"],                        # highest priority
        ["big-0", "big-1", "big-2"],         # what breaks a gang: an all unit before a member, a larger one first
        ["small-0"],
        ["gang-0"], ["gang-1"],              # the two members gang (minCount 2) needs
        ["gang-2"],                          # the gang's one spare member (its youngest)
        ["old"], ["young"],                  # lone pods, older first
    ]


def test_an_all_unit_leaves_out_its_members_still_being_bound() -> None:
    c = Cluster(nodes=nodes(2), groups=[group("whole", 1, priority=1, mode="all")])
    c.pods += [running("whole-0", "n0", "whole"), pending("whole-1", "whole")]
    preemptor(c)
    cache = c.cache()
    tree = cache.tree(GroupKey("PodGroup", NS, "whole"))
    assert tree is not None
    member = next(p for leaf in tree.root.leaves() for p in leaf.pending)
    cache.assume(Plan(tree.key, ((member, "n1"),), frozenset({tree.key})), "t1")
    high = cache.tree(GroupKey("PodGroup", NS, "high"))
    assert high is not None
    snapshot = cache.snapshot()
    found = candidates(snapshot, high, CacheGroupView(cache), usable_rows(snapshot, high, DEFAULT_PROFILE.static_check))
    assert [names(u.pods) for u in found] == [["whole-0"]]


def test_windows_grow_from_the_lowest_floors_to_every_usable_node() -> None:
    """Rounds of :func:`windows`: the lowest floors first (ties in row order), each round larger, the last every
    usable node; nodes without a pod below the limit come in only with the last."""
    floors = np.array([5, 1, NodeFloors.NO_FLOOR, 1, 9] * 40, dtype=np.int64)  # 200 nodes, 119 usable below 9
    rows = np.ones(200, dtype=bool)
    rows[0] = False
    rounds = list(windows(floors, rows, limit=9))
    sizes = [s for s in (MIN_CANDIDATE_NODES * WINDOW_GROWTH ** k for k in range(4)) if s < 119]
    assert [int(w.sum()) for w in rounds] == [*sizes, 199]
    first = np.flatnonzero(rounds[0])
    assert first.tolist() == np.flatnonzero(floors == 1)[:MIN_CANDIDATE_NODES].tolist()
    second = np.flatnonzero(rounds[1])
    assert rows[second].all() and (floors[second] < 9).all() and set(first) <= set(second)
    assert rounds[-1] is rows  # DefaultPreemption._choose tells the last round by identity
    assert [int(w.sum()) for w in windows(floors, rows, limit=9, pending=200)] == [199]


def test_the_first_window_is_sized_by_the_room_the_root_needs() -> None:
    """The first round holds :data:`ROOM_SLACK` times the lowest-floor nodes whose capacity just covers the need
    (each node here offers 8 GPUs and 96 cpu: 64 GPUs take 8 nodes, so 16), never fewer than
    :data:`MIN_CANDIDATE_NODES` nor than the pending pods; a need no window covers goes straight to every node."""
    floors = np.zeros(200, dtype=np.int64)
    rows = np.ones(200, dtype=bool)
    capacity = np.tile(np.array([96_000, 8], dtype=np.int64), (200, 1))
    first = next(windows(floors, rows, limit=9, capacity=capacity, need=np.array([64 * 8000, 64])))
    assert int(first.sum()) == ROOM_SLACK * 8
    one_gpu = next(windows(floors, rows, limit=9, capacity=capacity, need=np.array([8000, 1])))
    assert int(one_gpu.sum()) == max(MIN_CANDIDATE_NODES, ROOM_SLACK)
    pods = next(windows(floors, rows, limit=9, pending=64, capacity=capacity, need=np.array([64 * 8000, 64])))
    assert int(pods.sum()) == 64
    too_much = list(windows(floors, rows, limit=9, capacity=capacity, need=np.array([0, 8 * 200 + 1])))
    assert [int(w.sum()) for w in too_much] == [200]


def test_an_all_unit_read_in_a_window_brings_its_pods_on_every_other_node() -> None:
    """A window of the lowest-floor nodes finds part of an ``all`` unit; its pods elsewhere (read from the nodes'
    memoised entries, by group for a PodGroup unit, by the pods' groups for a CompositePodGroup one) come along,
    pods being deleted do not, and a node changed since the last read is read again."""
    count = 3 * MIN_CANDIDATE_NODES
    c = Cluster(nodes=nodes(count, cpu="4"), groups=[group("whole", 2, priority=1, mode="all"),
                                                     group("part-a", 1, priority=1, parent="comp"),
                                                     group("part-b", 1, priority=1, parent="comp")],
                composites=[composite("comp", 2, priority=1, mode="all")])
    last = f"n{count - 1}"
    c.pods += [running("whole-0", "n0", "whole"), running("whole-1", last, "whole"),
               running("whole-2", f"n{count - 2}", "whole", terminating=True),
               running("a-0", "n1", "part-a"), running("b-0", last, "part-b")]
    c.pods += [running(f"filler-{i}", f"n{i}", cpu="1", priority=5) for i in range(count)]
    preemptor(c)
    cache = c.cache()
    high = cache.tree(GroupKey("PodGroup", NS, "high"))
    assert high is not None
    snapshot = cache.snapshot()
    view = CacheGroupView(cache)
    floors = np.full(count, 5, dtype=np.int64)
    floors[:2] = 1
    window = next(windows(floors, np.ones(count, dtype=bool), limit=100))
    assert window[:2].all() and not window[count - 2:].any()
    memo = NodeEntries()
    found = {str(u.key): names(u.pods) for u in candidates(snapshot, high, view, window, nodes=memo)
             if u.rank == RANK_ALL}
    assert found == {f"PodGroup {NS}/whole": ["whole-0", "whole-1"], f"CompositePodGroup {NS}/comp": ["a-0", "b-0"]}
    cache.load_one("Pod", running("whole-3", f"n{count - 3}", "whole"))  # one node changed since the last read
    cache.delete_one("Pod", f"{NS}/whole-1")
    snapshot = cache.snapshot()
    found = {str(u.key): names(u.pods) for u in candidates(snapshot, high, view, window, nodes=memo)
             if u.rank == RANK_ALL}
    assert found[f"PodGroup {NS}/whole"] == ["whole-0", "whole-3"]


def test_a_floor_gone_stale_is_read_again_before_the_last_window() -> None:
    """A group whose priority drops while its pods stay put leaves the memoised floors of its nodes too high; the
    last window reads the floors again (the view's membership generation changed), so its pods are found as
    victims — and with nothing changed since, a root no pod is below reads no node's pods."""
    c = Cluster(nodes=nodes(40, cpu="2"), groups=[group(f"g{i}", 1, priority=200) for i in range(40)])
    c.pods += [running(f"g{i}-0", f"n{i}", f"g{i}", cpu="2") for i in range(40)]
    preemptor(c)
    cache = c.cache()
    plugin, decide = deciding(cache)
    assert isinstance(decide(), Unschedulable)  # every running group above the preemptor: no victim
    plugin.nodes = plugin.floors.nodes = counting = CountingEntries()
    assert isinstance(decide(), Unschedulable) and counting.reads == 0  # floors current: no node's pods read
    cache.load_one("PodGroup", group("g39", 1, priority=1))  # its pod on n39 stays put
    decision = decide()
    assert isinstance(decision, Preemption) and names(decision.victims) == ["g39-0"]


def deciding(cache: ClusterCache) -> tuple[DefaultPreemption, Callable[[], Decision]]:
    """A preemption plugin kept across decisions (its memos), and the decision of root ``high`` on ``cache`` now."""
    plugin = DefaultPreemption(CacheGroupView(cache))

    def decide() -> Decision:
        tree = cache.tree(GroupKey("PodGroup", NS, "high"))
        assert tree is not None
        return schedule_one(tree, cache.snapshot(), SolverConfig(), [plugin])

    return plugin, decide


class CountingEntries(NodeEntries):
    """:class:`NodeEntries` counting the nodes whose entries are asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def entries(self, info: NodeInfo) -> tuple[Entry, ...]:
        self.reads += 1
        return super().entries(info)


def test_usable_nodes_are_those_whose_allocatable_holds_a_pending_pod() -> None:
    """A node smaller than every pending pod is never usable, whatever runs there (kube's NodeResourcesFit
    ``Unresolvable: podRequest > allocatable``); one that holds the smallest pending pod is."""
    c = Cluster(nodes=[*nodes(1, cpu="2"), *nodes(2, cpu="8")[1:]])  # n0: 2 cpu, n1: 8 cpu
    c.groups.append(group("high", 2, priority=100))
    c.pods += [pending("high-0", "high", cpu="4"), pending("high-1", "high", cpu="6"),
               running("low", "n0", priority=1, cpu="2"), running("low-1", "n1", priority=1, cpu="8")]
    cache = c.cache()
    tree = cache.tree(GroupKey("PodGroup", NS, "high"))
    assert tree is not None
    snapshot = cache.snapshot()
    rows = usable_rows(snapshot, tree, DEFAULT_PROFILE.static_check)
    assert [snapshot.table.nodes[r].name for r in np.flatnonzero(rows)] == ["n1"]
    assert usable_rows(snapshot, tree, DEFAULT_PROFILE.static_check, allocatable=False).all()
    assert [names(u.pods) for u in units_of(c)] == [["low-1"]]  # the victim on n0 would free room in vain


def test_an_extended_resource_a_node_does_not_offer_leaves_it_to_dra() -> None:
    """``example.com/gpu`` above a node's allocatable rules the node out where the node offers it; where it offers
    none, DRA may serve it (KEP-5004), so only the node's own resources decide."""
    allocatable = np.array([[4000, 2], [4000, 0], [1000, 0]], dtype=np.int64)
    request = np.array([2000, 4], dtype=np.int64)
    assert allocatable_holds(allocatable, request, ("cpu", "example.com/gpu")).tolist() == [False, True, False]
    assert allocatable_holds(allocatable, request, ("cpu", "memory")).tolist() == [False, False, False]


def test_a_root_short_of_a_resource_no_lower_priority_pod_holds_is_told_so_from_the_floors() -> None:
    """Every GPU is held by groups of priority 200 and the pods below the preemptor's 100 hold only cpu: no eviction
    frees a GPU, which the per-resource floors tell without reading a pod once they are read; a GPU pod below it
    landing on a node (a NodeInfo changed) and a group whose priority drops (the membership generation) are read
    again."""
    c = Cluster(nodes=nodes(40, cpu="4", gpu=2), groups=[group(f"g{i}", 1, priority=200) for i in range(40)])
    c.pods += [running(f"g{i}-0", f"n{i}", f"g{i}", cpu="1", gpu=2) for i in range(40)]
    c.pods += [running(f"web-{i}", f"n{i}", cpu="1", priority=1) for i in range(40)]
    c.groups.append(group("high", 2, priority=100))
    c.pods += [pending(f"high-{i}", "high", gpu=1) for i in range(2)]
    cache = c.cache()
    plugin, decide = deciding(cache)
    first = decide()
    assert isinstance(first, Unschedulable)
    assert first.message.endswith("Preemption is not helpful for scheduling (no pod of lower priority holds "
                                  "nvidia.com/gpu on the nodes it may use: 0 free there, 2 needed)")
    plugin.nodes = plugin.floors.nodes = counting = CountingEntries()
    assert isinstance(decide(), Unschedulable) and counting.reads == 0  # nothing changed: no node's pods read
    cache.delete_one("Pod", f"{NS}/g38-0")
    cache.load_one("Pod", running("batch-0", "n38", cpu="1", gpu=2, priority=1))
    decision = decide()
    assert isinstance(decision, Preemption) and names(decision.victims) == ["batch-0"]
    cache.delete_one("Pod", f"{NS}/batch-0")
    cache.load_one("Pod", running("g38-0", "n38", "g38", cpu="1", gpu=2))
    assert isinstance(decide(), Unschedulable)
    cache.load_one("PodGroup", group("g39", 1, priority=1))  # its pod on n39 stays put
    decision = decide()
    assert isinstance(decision, Preemption) and names(decision.victims) == ["g39-0"]
