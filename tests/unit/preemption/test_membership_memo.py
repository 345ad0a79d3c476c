"""A running pod's membership is memoised per PodGroup (a preemption that finds no victim reads every running
group's): after each kind of change the index is fed, for groups of ours and of another scheduler — a member
bound or gone, a PodGroup or CompositePodGroup replaced or arriving, a PriorityClass replaced, the trees rebuilt —
the memoised answer is the one computed afresh, read both before and after the trees are rebuilt."""

from __future__ import annotations

from collections.abc import Callable

from scheduler.cache.cluster import ClusterCache
from scheduler.groups.chains import GroupChains
from scheduler.groups.tree import Membership
from scheduler.model import PriorityClass
from scheduler.model.pod import Pod
from tests.unit.groups.builders import NS
from tests.unit.preemption.kit import Cluster, composite, group, nodes, pending, running


def fresh(cache: ClusterCache, pod: Pod) -> Membership:
    g = cache.groups
    return GroupChains(g.pgs, g.cpgs, g.trees, g.members, g.structure, g.priorities).membership(pod)


def priority_class(name: str, value: int) -> PriorityClass:
    return PriorityClass.model_validate({"metadata": {"name": name}, "value": value})


def test_the_memo_follows_every_change_the_index_is_fed() -> None:
    c = Cluster(nodes=nodes(4, cpu="8"), classes=[priority_class("batch", 10)],
                groups=[group("single", 2, priority_class="batch"), group("whole", 1, priority=3, mode="all"),
                        group("child", 1, parent="comp"), group("theirs", 1, priority_class="batch"),
                        group("free", 2), group("la", 1, parent="ctop"), group("lb", 1, parent="ctop")],
                composites=[composite("ctop", 2)])
    c.pods += [running("s-0", "n0", "single"), running("s-1", "n1", "single"), running("w-0", "n2", "whole"),
               running("c-0", "n3", "child", priority=7), running("t-0", "n3", "theirs", scheduler="other"),
               running("f-0", "n0", "free", priority=7), running("la-0", "n1", "la", priority=5, scheduler="other"),
               running("lb-0", "n2", "lb", priority=5, scheduler="other")]
    cache = c.cache()
    pods: dict[str, Pod] = {p.metadata.name: p for p in c.pods}

    def check() -> None:
        for p in pods.values():
            assert cache.groups.chains.membership(p) == fresh(cache, p), p.metadata.name
        cache.snapshot()  # the trees rebuilt
        for p in pods.values():
            assert cache.groups.chains.membership(p) == fresh(cache, p), p.metadata.name

    def change(step: Callable[[], None]) -> None:
        for p in pods.values():
            cache.groups.chains.membership(p)  # memoised before the change
        step()
        check()

    check()
    assert cache.groups.chains.membership(pods["s-0"]).priority == 10
    assert cache.groups.chains.membership(pods["s-0"]).running == 2
    pods["s-2"] = running("s-2", "n2", "single")
    change(lambda: cache.load_one("Pod", pods["s-2"]))  # a member bound: running members 3
    assert cache.groups.chains.membership(pods["s-0"]).running == 3
    change(lambda: cache.delete_one("Pod", f"{NS}/s-2"))  # and gone again
    del pods["s-2"]
    assert cache.groups.chains.membership(pods["s-0"]).running == 2
    change(lambda: cache.load_one("PriorityClass", priority_class("batch", 20)))
    assert cache.groups.chains.membership(pods["s-0"]).priority == 20
    assert cache.groups.chains.membership(pods["t-0"]).priority == 20  # another scheduler's group: no tree
    change(lambda: cache.load_one("PodGroup", group("whole", 1, priority=5, mode="all")))
    assert cache.groups.chains.membership(pods["w-0"]).priority == 5
    change(lambda: cache.load_one("PodGroup", group("whole", 1, priority=5)))  # no longer disruptionMode all
    assert cache.groups.chains.membership(pods["w-0"]).unit is None
    change(lambda: cache.load_one("CompositePodGroup", composite("comp", 1, priority=40, mode="all")))
    assert cache.groups.chains.membership(pods["c-0"]).priority == 40
    change(lambda: cache.load_one("Pod", pending("c-1", "child", priority=90)))  # a pending member: a new tree
    assert cache.groups.chains.membership(pods["f-0"]).priority == 7
    change(lambda: cache.load_one("Pod", pending("f-1", "free", priority=90)))  # its tree now counts at 90
    assert cache.groups.chains.membership(pods["f-0"]).priority == 90
    assert cache.groups.chains.membership(pods["la-0"]).priority == 5  # another scheduler's tree: its pods' highest
    pods["lb-1"] = running("lb-1", "n3", "lb", priority=60, scheduler="other")
    change(lambda: cache.load_one("Pod", pods["lb-1"]))  # under the same composite: la's pods count at 60 too
    assert cache.groups.chains.membership(pods["la-0"]).priority == 60
    change(lambda: cache.delete_one("CompositePodGroup", f"{NS}/comp"))
    change(lambda: cache.delete_one("PodGroup", f"{NS}/single"))  # its pods count at their own priority now
    assert cache.groups.chains.membership(pods["s-0"]).leaf is None
