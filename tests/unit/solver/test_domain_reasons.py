"""Reasons of a group pinned to a topology domain: the per-node verdicts of the closest domain, for every Filter.

A group with a topology key fails with the same node histogram as a group without one, counted over the nodes
of the domain that came closest (the attempt that placed the most members; when every domain is short of room,
the one with the most room is still tried for its verdicts), and names that domain. Resource arithmetic is only
quoted for the domain's nodes that pass every filter but NodeResourcesFit. Each case is also solved without the
topology key on the closest domain's nodes alone: its histogram must be the same text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from scheduler.dra.claims import ClaimIndex
from scheduler.dra.device_snapshot import DraView
from scheduler.dra.inventory import Inventory
from scheduler.framework import Code, NodeTable, Plan, Preemption, Snapshot, SolverConfig, Unschedulable
from scheduler.framework.events import Action, ClusterEvent
from scheduler.framework.storage_view import StorageView
from scheduler.groups import TreeState, build_trees
from scheduler.model import CompositePodGroup, Node, Pod, PodGroup
from scheduler.model.dra import DeviceClass, ResourceClaim, ResourceSlice
from scheduler.model.scheduling import GroupKey
from scheduler.model.storage import PersistentVolume, PersistentVolumeClaim
from scheduler.solver import solve
from scheduler.solver.plugins import QUEUEING_HINTS, TOPOLOGY
from tests.unit.groups.builders import NS, cpg, pg
from tests.unit.preemption import kit as preemption_kit
from tests.unit.solver.builders import GPU, HOSTNAME, ZONE, host_port, node, pod, pod_affinity, pod_term, spread
from tests.unit.solver.storage_builders import pv, pvc, with_volumes
from tests.unit.solver.test_search_dra import claim, claim_spec, device_class, gpu_slice, pod_with_claim

GPU_TAINT = "nvidia.com/gpu=true:NoSchedule"
GPU_TOLERATION = {"key": GPU, "operator": "Exists", "effect": "NoSchedule"}
RACK = "topology.example.com/rack"


@dataclass
class Cluster:
    """What one case solves: nodes, the root's pods (and running ones), groups, and DRA / storage objects."""

    nodes: list[Node]
    pods: list[Pod]
    groups: list[PodGroup]
    composites: list[CompositePodGroup] = field(default_factory=list)
    running: list[Pod] = field(default_factory=list)
    slices: list[ResourceSlice] = field(default_factory=list)
    claims: list[ResourceClaim] = field(default_factory=list)
    classes: list[DeviceClass] = field(default_factory=list)
    storage: list[PersistentVolumeClaim | PersistentVolume] = field(default_factory=list)

    def solve(self) -> Plan | Unschedulable:
        pods = [*self.running, *self.pods]
        table = NodeTable.build(self.nodes)
        dra = None
        if self.slices or self.claims:
            classes = self.classes or [device_class()]
            names = {n.name for n in self.nodes}
            slices = [s for s in self.slices if s.spec.node_name in names]
            inventory = Inventory.build(table, slices, classes, self.claims)
            dra = DraView.build(inventory, ClaimIndex.build(self.claims, (), classes, self.groups),
                                pods)
        volumes = None
        if self.storage:
            volumes = StorageView.build(claims=[o for o in self.storage if isinstance(o, PersistentVolumeClaim)],
                                        volumes=[o for o in self.storage if isinstance(o, PersistentVolume)],
                                        classes=[], csi_nodes=[], pods=pods)
        forest = build_trees(pods, self.groups, self.composites, scheduler_name="gang-scheduler")
        (tree,) = [t for t in forest.trees if t.state is TreeState.READY]
        return solve(tree, Snapshot.build(table, pods, dra, volumes))

    def flat(self, zone: str) -> Cluster:
        """The same root without topology keys, on the nodes of ``zone`` alone."""
        def unpinned(g: PodGroup) -> PodGroup:
            return g.model_copy(update={"spec": g.spec.model_copy(update={"scheduling_constraints": None})})
        return Cluster([n for n in self.nodes if n.metadata.labels.get(ZONE) == zone], self.pods,
                       [unpinned(g) for g in self.groups], [c.model_copy(update={"spec": c.spec.model_copy(
                           update={"scheduling_constraints": None})}) for c in self.composites],
                       self.running, self.slices, self.claims, self.classes, self.storage)


def zones(per_zone: int = 4, **kw: Any) -> list[Node]:
    """Zones ``a`` and ``b`` of ``per_zone`` nodes each (``a-0`` …), with hostname and zone labels."""
    return [node(f"{z}-{i}", labels={HOSTNAME: f"{z}-{i}", ZONE: z}, **kw) for z in ("a", "b") for i in range(per_zone)]


def members(n: int, group: str = "g", **kw: Any) -> list[Pod]:
    return [pod(f"{group}-{i}", namespace=NS, group=group, labels={"app": group}, **kw) for i in range(n)]


def gang(n: int = 8, topology: str | None = ZONE, name: str = "g", **kw: Any) -> list[PodGroup]:
    return [pg(name, n, topology=topology, **kw)]


def taints() -> Cluster:
    return Cluster(zones(gpu=8, taints=[GPU_TAINT]), members(8, gpu=1), gang())


def node_affinity() -> Cluster:
    return Cluster(zones(), members(8, node_selector={"pool": "train"}), gang())


def anti_affinity() -> Cluster:
    anti = pod_affinity(anti=[pod_term({"app": "g"}, HOSTNAME)])
    return Cluster(zones(), members(8, affinity=anti), gang())


def anti_affinity_in_zones_short_of_gpus() -> Cluster:
    """The zones also lack GPUs for the whole gang (28 free, 32 needed): the cause is still one member per node."""
    anti = pod_affinity(anti=[pod_term({"app": "g"}, HOSTNAME)])
    busy = [pod(f"busy-{z}", namespace=NS, gpu=4, node_name=f"{z}-0", phase="Running", scheduler="default-scheduler")
            for z in ("a", "b")]
    return Cluster(zones(cpu="96", gpu=8), members(8, gpu=4, affinity=anti, tolerations=[GPU_TOLERATION]), gang(),
                   running=busy)


def spread_missing_label() -> Cluster:
    return Cluster(zones(), members(8, spec={"topologySpreadConstraints": [spread(1, RACK, {"app": "g"})]}), gang())


def spread_max_skew() -> Cluster:
    """Hostname spread, maxSkew 1: a-0 (and b-0) hold one member, so the others hold at most two: 7 < 8."""
    nodes = [node(f"{z}-{i}", cpu="1" if i == 0 else "8", labels={HOSTNAME: f"{z}-{i}", ZONE: z})
             for z in ("a", "b") for i in range(4)]
    return Cluster(nodes, members(8, spec={"topologySpreadConstraints": [spread(1, HOSTNAME, {"app": "g"})]}), gang())


def host_ports() -> Cluster:
    return Cluster(zones(), members(8, ports=[host_port(8080)]), gang())


def volume_node_affinity() -> Cluster:
    """Each member's claim is bound to a PV that only zone c (no node) can reach."""
    claims = [pvc(f"data-{i}", namespace=NS, volume_name=f"pv-{i}", phase="Bound") for i in range(8)]
    volumes = [pv(f"pv-{i}", phase="Bound", claim=c, zone="c") for i, c in enumerate(claims)]
    pods = [with_volumes(p, f"data-{i}") for i, p in enumerate(members(8))]
    return Cluster(zones(), pods, gang(), storage=[*claims, *volumes])


def devices() -> Cluster:
    """One device per node of zone a, none in zone b; each member claims one."""
    nodes = zones(cpu="32")
    pods = [pod_with_claim(f"g-{i}", "g", f"g-{i}-gpus") for i in range(8)]
    return Cluster(nodes, pods, gang(), slices=[gpu_slice(f"a-{i}", ["H100"]) for i in range(4)],
                   claims=[claim(f"g-{i}-gpus", claim_spec(1)) for i in range(8)])


def resources_short() -> Cluster:
    """Zone a: 4 × 1 cpu; zone b: 3 × 1 cpu and a big tainted node. The gang of 8 needs 8 cpu."""
    nodes = [node(f"a-{i}", cpu="1", labels={ZONE: "a"}) for i in range(4)]
    nodes += [node("b-0", cpu="16", labels={ZONE: "b"}, taints=["dedicated=infer:NoSchedule"])]
    nodes += [node(f"b-{i}", cpu="1", labels={ZONE: "b"}) for i in range(1, 4)]
    return Cluster(nodes, members(8), gang())


def resources_short_behind_a_taint() -> Cluster:
    """Zone a's room is mostly on a tainted node: only the other three nodes' cpu is quoted."""
    nodes = [node("a-0", cpu="16", labels={ZONE: "a"}, taints=["dedicated=infer:NoSchedule"])]
    nodes += [node(f"a-{i}", cpu="2", labels={ZONE: "a"}) for i in range(1, 4)]
    nodes += [node(f"b-{i}", cpu="1", labels={ZONE: "b"}) for i in range(2)]
    return Cluster(nodes, members(8), gang())


def composite_with_leaves_in_its_zone() -> Cluster:
    """The composite is pinned to a zone; its leaves have no key of their own, so the zone is their domain."""
    groups = [pg("workers", 6, parent="root"), pg("driver", 1, parent="root")]
    pods = members(6, "workers", ports=[host_port(8080)]) + members(1, "driver")
    return Cluster(zones(), pods, groups, [cpg("root", 2, topology=ZONE)])


PORTS = "node(s) didn't have free ports for the requested pod ports"
IN_A = f"in {ZONE} a (best of 2 domains)"
IN_B = f"in {ZONE} b (best of 2 domains)"
IN_A_FIRST = f"in {ZONE} a (one of 2 domains)"
"""Zone a, where no member was placed: not the closest, merely the first tried."""

UNRESOLVABLE, UNSCHEDULABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.UNSCHEDULABLE
ONE_PER_NODE = (". Its own required pod anti-affinity allows one of these pods per kubernetes.io/hostname: at most 4 "
                "on the 4 node(s) it may use here, 8 needed")
"""What the histogram of a gang of 8 that repels itself per node, in a zone of 4 nodes, is followed by."""


def case(build: Callable[[], Cluster], code: Code, placed: int, histogram: str, name: str, room: str = "",
         where: str = IN_A) -> Any:
    """One row: the gang of 8 placed ``placed`` members in zone a, the closest, and its nodes said ``histogram``."""
    return pytest.param(build, "a", code, f"gang g: {placed}/8 placeable (minCount 8) {where}{room}; "
                                          f"0/4 nodes are available: {histogram}.", id=name)


CASES = [
    case(taints, UNRESOLVABLE, 0, "4 node(s) had untolerated taint {nvidia.com/gpu: true}",
         "taint-is-named-not-a-shortage-of-room", where=IN_A_FIRST),
    case(node_affinity, UNRESOLVABLE, 0, "4 node(s) didn't match Pod's node affinity/selector", "node-selector",
         where=IN_A_FIRST),
    case(anti_affinity, UNSCHEDULABLE, 4, "4 node(s) didn't match pod anti-affinity rules" + ONE_PER_NODE,
         "hostname-anti-affinity-one-member-per-node"),
    case(anti_affinity_in_zones_short_of_gpus, UNSCHEDULABLE, 4,
         "1 Insufficient nvidia.com/gpu, 3 node(s) didn't match pod anti-affinity rules" + ONE_PER_NODE,
         "anti-affinity-named-even-where-the-zone-lacks-gpus"),
    case(spread_missing_label, UNRESOLVABLE, 0,
         "4 node(s) didn't match pod topology spread constraints (missing required label)",
         "spread-over-a-label-the-nodes-lack", where=IN_A_FIRST),
    case(spread_max_skew, UNSCHEDULABLE, 7, "1 Insufficient cpu, 3 node(s) didn't match pod topology spread "
         "constraints", "spread-max-skew"),
    case(host_ports, UNSCHEDULABLE, 4, f"4 {PORTS}", "host-port-one-member-per-node"),
    case(volume_node_affinity, UNRESOLVABLE, 0, "4 node(s) had volume node affinity conflict",
         "bound-volume-out-of-reach", where=IN_A_FIRST),
    case(devices, UNSCHEDULABLE, 4, "4 cannot allocate all claims. request gpus: 1 wanted; 4 device(s) of class "
         "gpu.example.com in the cluster, at most 0 unallocated on any one of the 4 nodes", "dra-devices-run-out"),
    case(resources_short, UNSCHEDULABLE, 4, "4 Insufficient cpu", "room-short-arithmetic-quoted",
         room=": 4 cpu free on the 4 node(s) passing every other filter (at most 1 on one), 8 needed"),
    case(resources_short_behind_a_taint, UNSCHEDULABLE, 6,
         "1 node(s) had untolerated taint {dedicated: infer}, 3 Insufficient cpu",
         "arithmetic-leaves-out-a-node-another-filter-refuses",
         room=": 6 cpu free on the 3 node(s) passing every other filter (at most 2 on one), 8 needed; the 2 "
              "topology.kubernetes.io/zone domains have that room together, not one of them"),
]


@pytest.mark.parametrize(("build", "closest", "code", "expected"), CASES)
def test_domain_reason_is_the_closest_domains_node_histogram(build: Callable[[], Cluster], closest: str, code: Code,
                                                             expected: str) -> None:
    cluster = build()
    result = cluster.solve()
    assert isinstance(result, Unschedulable), result
    assert result.message == expected
    assert result.code is code
    flat = cluster.flat(closest).solve()
    assert isinstance(flat, Unschedulable), flat
    histogram = flat.message.partition("; ")[2]
    assert histogram.startswith("0/") and expected.endswith(histogram)


def test_a_leaf_without_its_own_key_names_its_parents_domain() -> None:
    result = composite_with_leaves_in_its_zone().solve()
    assert isinstance(result, Unschedulable)
    assert result.message == (f"composite root: 1/2 child groups placeable (minGroupCount 2) {IN_A}; "
                              f"gang workers: 4/6 placeable (minCount 6) {IN_A}; 0/4 nodes are available: 4 {PORTS}.")


def test_one_domain_is_named_without_a_count() -> None:
    cluster = host_ports()
    cluster.nodes = [n for n in cluster.nodes if n.metadata.labels[ZONE] == "b"]
    result = cluster.solve()
    assert isinstance(result, Unschedulable)
    assert result.message == f"gang g: 4/8 placeable (minCount 8) in {ZONE} b; 0/4 nodes are available: 4 {PORTS}."


def test_the_domain_that_placed_most_members_is_the_closest() -> None:
    """Zone a has 4 nodes, zone b 6: with one member per node, b comes closer to the 8 needed."""
    cluster = host_ports()
    cluster.nodes += [node(f"b-{i}", labels={HOSTNAME: f"b-{i}", ZONE: "b"}) for i in (4, 5)]
    result = cluster.solve()
    assert isinstance(result, Unschedulable)
    assert result.message == f"gang g: 6/8 placeable (minCount 8) {IN_B}; 0/6 nodes are available: 6 {PORTS}."


def test_members_left_over_by_a_plan_name_their_domain_without_claiming_it_was_closest() -> None:
    cluster = host_ports()
    cluster.groups = gang(4)
    plan = cluster.solve()
    assert isinstance(plan, Plan)
    assert set(plan.unplaced.values()) == {f"gang g: 4/8 placed (minCount 4) in {ZONE} a; "
                                           f"0/4 nodes are available: 4 {PORTS}."}


@pytest.mark.parametrize(("build", "rejectors"), [
    pytest.param(taints, {"TaintToleration", "TopologyPlacement"}, id="every-domain-pruned-room-elsewhere-may-help"),
    pytest.param(resources_short, {"NodeResourcesFit", "TopologyPlacement"}, id="pruned-short-of-room"),
    pytest.param(host_ports, {"NodePorts"}, id="domains-tried-their-verdicts-alone"),
])
def test_rejectors_are_the_closest_domains_plugins(build: Callable[[], Cluster], rejectors: set[str]) -> None:
    """The queueing hints key on these: the plugins that refused nodes, and the topology placement when every
    domain was pruned for room (room freed in any of them may let the group in)."""
    result = build().solve()
    assert isinstance(result, Unschedulable)
    assert result.rejectors == rejectors


def test_a_search_that_succeeds_never_tries_a_pruned_domain() -> None:
    """Zone a (tightest, tried first) has 6 cpu in two racks of 3, zone b one rack of 8: the 4-pod leaf's racks in
    zone a are all too small, yet the plan found in zone b costs one attempt — no attempt spent on zone a's racks."""
    nodes = [node(f"a-{r}", cpu="3", labels={ZONE: "a", RACK: f"a{r}"}) for r in range(2)]
    nodes += [node("b-0", cpu="8", labels={ZONE: "b", RACK: "b0"})]
    cluster = Cluster(nodes, members(4, "w", memory=None), [pg("w", 4, parent="root", topology=RACK)],
                      [cpg("root", 1, topology=ZONE)])
    plan = cluster.solve()
    assert isinstance(plan, Plan)
    assert {n for _, n in plan.placements} == {"b-0"}
    assert plan.attempts == 1


def test_a_failed_search_is_searched_again_for_its_reasons() -> None:
    """The first pass skips both zones (no attempt); the second tries the closest for its verdicts (one)."""
    result = taints().solve()
    assert isinstance(result, Unschedulable)
    assert "untolerated taint" in result.message
    assert result.attempts == 1


def zone_a_tainted_zone_b_full() -> preemption_kit.Cluster:
    """Zone a: GPU nodes the gang may not use (tainted); zone b: usable GPU nodes, full of a low-priority gang."""
    nodes = [node(f"a-{i}", gpu=2, labels={ZONE: "a"}, taints=[GPU_TAINT]) for i in range(2)]
    nodes += [node(f"b-{i}", gpu=2, labels={ZONE: "b"}) for i in range(2)]
    low = [preemption_kit.running(f"low-{i}", f"b-{i}", "low", gpu=2, priority=1) for i in range(2)]
    high = [preemption_kit.pending(f"g-{i}", "g", gpu=1, priority=100) for i in range(4)]
    return preemption_kit.Cluster(nodes, [*low, *high], [preemption_kit.group("low", 2, priority=1),
                                                         pg("g", 4, topology=ZONE, priority=100)])


def test_when_every_domain_is_short_the_closest_is_where_evictions_could_make_room() -> None:
    """Both zones have 0 GPUs free for the gang; zone b could hold it once emptied, zone a never: b is the closest,
    the failure is short of room (UNSCHEDULABLE), and preemption evicts the low-priority gang to place it there."""
    cluster = zone_a_tainted_zone_b_full()
    cache = cluster.cache()
    tree = cache.tree(GroupKey("PodGroup", NS, "g"))
    assert tree is not None
    result = solve(tree, cache.snapshot())
    assert isinstance(result, Unschedulable)
    assert result.code is Code.UNSCHEDULABLE
    assert result.message == (f"gang g: 0/4 placeable (minCount 4) {IN_B}: 0 nvidia.com/gpu free on the 2 node(s) "
                              "passing every other filter, 4 needed; 0/2 nodes are available: 2 Insufficient "
                              "nvidia.com/gpu.")
    _, decision = cluster.decide("g")
    assert isinstance(decision, Preemption)
    assert preemption_kit.names(decision.victims) == ["low-0", "low-1"]


def test_a_closest_domain_refused_for_good_still_lets_preemption_try_where_room_could_be_freed() -> None:
    """Zone a has free room but a volume its members need is out of reach there (unresolvable); zone b's nodes are
    full of low-priority pods, yet could hold the gang emptied: the failure stays UNSCHEDULABLE."""
    cluster = zone_a_tainted_zone_b_full()
    cluster.nodes[:2] = [node(f"a-{i}", gpu=4, labels={ZONE: "a"}) for i in range(2)]  # room, no taint
    claims = [pvc(f"data-{i}", namespace=NS, volume_name=f"pv-{i}", phase="Bound") for i in range(4)]
    volumes = [pv(f"pv-{i}", phase="Bound", claim=c, zone="b") for i, c in enumerate(claims)]
    cluster.pods = [with_volumes(p, f"data-{p.metadata.name[2:]}") if p.group_name == "g" else p
                    for p in cluster.pods]
    pods = cluster.pods
    forest = build_trees(pods, cluster.groups, (), scheduler_name="gang-scheduler")
    (tree,) = [t for t in forest.trees if t.key.name == "g"]
    table = NodeTable.build(cluster.nodes)
    view = StorageView.build(claims=claims, volumes=volumes, classes=[], csi_nodes=[], pods=pods)
    result = solve(tree, Snapshot.build(table, pods, volumes=view))
    assert isinstance(result, Unschedulable)
    assert result.message == (f"gang g: 0/4 placeable (minCount 4) {IN_A_FIRST}; 0/2 nodes are available: 2 "
                              "node(s) had volume node affinity conflict.")
    assert result.code is Code.UNSCHEDULABLE


def web_and_train() -> Cluster:
    """A basic composite: ``web`` fits; ``train``, pinned to a zone, lacks the GPU nodes' toleration."""
    nodes = zones(gpu=8, taints=[GPU_TAINT]) + [node("cpu-0", labels={ZONE: "a"})]
    pods = members(2, "web") + members(4, "train", gpu=1)
    return Cluster(nodes, pods, [pg("web", 2, parent="root"), pg("train", 4, parent="root", topology=ZONE)],
                   [cpg("root", None)])


def test_a_group_a_plan_leaves_out_is_given_its_domains_verdicts_too() -> None:
    """The plan places ``web``; ``train``'s reason names the taint, and quotes room only for the one node it may
    use (a CPU node)."""
    plan = web_and_train().solve()
    assert isinstance(plan, Plan)
    assert {p.metadata.name for p, _ in plan.placements} == {"web-0", "web-1"}
    assert dict(plan.group_reasons) == {GroupKey("PodGroup", NS, "train"): (
        f"gang train: 0/4 placeable (minCount 4) {IN_A}: 0 nvidia.com/gpu free on the 1 node(s) passing every other "
        "filter, 4 needed; 0/5 nodes are available: 1 Insufficient nvidia.com/gpu, 4 node(s) had untolerated taint "
        "{nvidia.com/gpu: true}.")}


def test_a_second_pass_out_of_budget_never_costs_the_plan_the_first_found() -> None:
    """With a budget of one attempt the first pass places ``web``; the second would spend one on ``train``'s closest
    zone and run out: the first pass's plan is returned, with its own reason for ``train``."""
    cluster = web_and_train()
    pods = cluster.pods
    (tree,) = build_trees(pods, cluster.groups, cluster.composites, scheduler_name="gang-scheduler").trees
    plan = solve(tree, Snapshot.build(NodeTable.build(cluster.nodes), pods), SolverConfig(search_budget=1))
    assert isinstance(plan, Plan)
    assert {p.metadata.name for p, _ in plan.placements} == {"web-0", "web-1"}
    assert plan.attempts == 1
    assert dict(plan.group_reasons) == {GroupKey("PodGroup", NS, "train"): (
        f"gang train: no {ZONE} domain has room for its minimum on the nodes its members may use (2 checked)")}


@pytest.mark.parametrize("event, queue", [
    (ClusterEvent("Node", Action.UPDATE, node("n1"), node("n1", labels={RACK: "r9"})), True),
    (ClusterEvent("Node", Action.ADD, None, node("n2", labels={ZONE: "a"})), True),
    (ClusterEvent("Node", Action.UPDATE, node("n1", cpu="4"), node("n1", cpu="8")), True),
    (ClusterEvent("Node", Action.UPDATE, node("n1", unschedulable=True), node("n1")), True),
    (ClusterEvent("Node", Action.UPDATE, node("n1", taints=["maint=:NoSchedule"]), node("n1")), True),
    (ClusterEvent("Node", Action.UPDATE, node("n1"), node("n1")), False),
    (ClusterEvent("Pod", Action.ADD, None, pod("p")), False),
], ids=["node-given-the-topology-key", "node-added", "node-given-more-room", "node-uncordoned", "node-untainted",
        "node-heartbeat", "pending-pod-added"])
def test_the_topology_placement_hint_wakes_on_room_and_on_node_labels(event: ClusterEvent, queue: bool) -> None:
    """A root whose group no node could host by its topology key (or whose domains were too short of room) may fit
    once a node carries the key, more room frees up, or a node whose room was not counted becomes usable."""
    assert QUEUEING_HINTS[TOPOLOGY](event) is queue


WEB_ON_B1 = pod("web", cpu=None, memory=None, node_name="b-1", phase="Running", scheduler="default-scheduler",
                ports=[host_port(8080)])
"""Another scheduler's pod holding host port 8080 on b-1."""


def children_in_two_zones(min_group_count: int, zone_a: list[Node]) -> Cluster:
    """Composite ``c`` pinned to a zone, children ``ga`` (one 2-cpu pod) and ``gb`` (one 8-cpu pod on host port
    8080). Zone b (``b-0`` 4 cpu, ``b-1`` 8 cpu with the port taken) holds ``ga`` but never ``gb``."""
    nodes = [*zone_a, node("b-0", cpu="4", labels={ZONE: "b"}), node("b-1", cpu="8", labels={ZONE: "b"})]
    pods = [pod("ga-0", cpu="2", namespace=NS, group="ga"),
            pod("gb-0", cpu="8", namespace=NS, group="gb", ports=[host_port(8080)],
                tolerations=[{"key": "x", "operator": "Exists", "effect": "NoSchedule"}])]
    return Cluster(nodes, pods, [pg("ga", 1, parent="c"), pg("gb", 1, parent="c")],
                   [cpg("c", min_group_count, topology=ZONE)], running=[WEB_ON_B1])


GB_IN_B = (f"gang gb: 0/1 placeable (minCount 1) in {ZONE} b (one of 2 domains); 0/2 nodes are available: "
           f"1 Insufficient cpu, 1 {PORTS}.")


def test_a_composites_reason_does_not_list_a_child_placed_in_the_domain_it_names() -> None:
    """Zone a (one tainted 16-cpu node ``gb`` tolerates): ``ga`` fails there, ``gb`` is never tried. Zone b places
    ``ga`` and not ``gb``: the composite's reason names zone b and lists ``gb`` alone — ``ga``'s failure in zone a
    is not listed under the zone that placed it, and ``ga``'s own reason is the composite's."""
    zone_a = [node("a-0", cpu="16", labels={ZONE: "a"}, taints=["x=y:NoSchedule"])]
    result = children_in_two_zones(2, zone_a).solve()
    assert isinstance(result, Unschedulable), result
    expected = f"composite c: 1/2 child groups placeable (minGroupCount 2) {IN_B}; {GB_IN_B}"
    assert result.message == expected
    assert result.group_reasons[GroupKey("PodGroup", NS, "gb")] == GB_IN_B
    assert result.group_reasons[GroupKey("PodGroup", NS, "ga")] == expected


def test_a_child_composite_placed_when_its_parent_stopped_is_not_listed_under_it() -> None:
    """``c`` is satisfied in zone b (``ga`` there) when the root stops for want of ``hz`` (64 cpu): the root lists
    ``hz`` alone, not ``c``'s children as they failed in zone a (two 1.5-cpu nodes, where neither fits)."""
    cluster = children_in_two_zones(1, [node(f"a-{i}", cpu="1500m", labels={ZONE: "a"}) for i in range(2)])
    cluster.pods.append(pod("hz-0", cpu="64", namespace=NS, group="hz"))
    cluster.groups = [pg("ga", 1, parent="c"), pg("gb", 1, parent="c"), pg("hz", 1, parent="root")]
    cluster.composites = [cpg("root", 2), cpg("c", 1, parent="root", topology=ZONE)]
    result = cluster.solve()
    assert isinstance(result, Unschedulable), result
    assert result.message == ("composite root: 1/2 child groups placeable (minGroupCount 2); gang hz: 0/1 placeable "
                              "(minCount 1); 0/4 nodes are available: 4 Insufficient cpu.")
    assert result.group_reasons[GroupKey("PodGroup", NS, "gb")] == result.message
