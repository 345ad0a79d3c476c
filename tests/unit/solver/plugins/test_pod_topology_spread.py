"""PodTopologySpread: the documented examples (kubernetes.io "Pod Topology Spread Constraints",
podtopologyspread/filtering_test.go), then gangs: per-domain caps counting the plan's own pods."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

from scheduler.framework import Code, Unschedulable
from scheduler.framework.events import Action, ClusterEvent
from scheduler.model import Pod
from scheduler.solver.plugins.pod_topology_spread import _water_fill, queueing_hint
from tests.unit.groups.builders import cpg, pg
from tests.unit.solver.builders import HOSTNAME, ZONE, node, pod, pod_affinity, pod_term, spread
from tests.unit.solver.plugins.solving import NS, message, placed, solve_root, zoned_nodes

FOO = {"foo": "bar"}


def running(name: str, on: str, labels: dict[str, str] | None = None, namespace: str = NS, **kw: Any) -> Pod:
    return pod(name, namespace=namespace, node_name=on, labels=labels if labels is not None else FOO,
               phase="Running", scheduler="default-scheduler", cpu=None, **kw)


def incoming(*constraints: dict[str, Any], labels: dict[str, str] | None = None, **kw: Any) -> Pod:
    return pod("p", namespace=NS, labels=labels if labels is not None else FOO,
               spec={"topologySpreadConstraints": list(constraints)}, **kw)


def zone_of(result: Any) -> str:
    return placed(result)["p"].split("-")[0]


def docs_cluster() -> tuple[list[Any], list[Pod]]:
    """The docs' example: zoneA holds node1 and node2, zoneB node3 and node4; pods foo=bar on node1, node2
    and node3 (here za-0, za-1, zb-0)."""
    return zoned_nodes({"za": 2, "zb": 2}), [running("p1", "za-0"), running("p2", "za-1"), running("p3", "zb-0")]


def test_docs_example_max_skew_1_puts_the_pod_in_zone_b() -> None:
    nodes, existing = docs_cluster()
    assert zone_of(solve_root(nodes, [incoming(spread(1, ZONE, FOO))], existing)) == "zb"


def test_docs_example_max_skew_2_allows_zone_a() -> None:
    """Held to zone A by its nodeSelector, with ``nodeAffinityPolicy: Ignore`` so zone B still counts."""
    nodes, existing = docs_cluster()
    result = solve_root(nodes, [incoming(spread(2, ZONE, FOO, nodeAffinityPolicy="Ignore"),
                                         node_selector={ZONE: "za"})], existing)
    assert zone_of(result) == "za"


def test_skew_rule_refuses_with_kubes_reason() -> None:
    nodes, existing = docs_cluster()
    result = solve_root(nodes, [incoming(spread(1, ZONE, FOO, nodeAffinityPolicy="Ignore"),
                                         node_selector={ZONE: "za"})], existing)
    assert message(result) == ("0/4 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, "
                               "2 node(s) didn't match pod topology spread constraints.")


def test_node_affinity_policy_honor_counts_only_the_zones_the_pod_may_use() -> None:
    """The same pod with the default policy (Honor): zone B is not eligible, zone A is the minimum itself."""
    nodes, existing = docs_cluster()
    result = solve_root(nodes, [incoming(spread(1, ZONE, FOO), node_selector={ZONE: "za"})], existing)
    assert zone_of(result) == "za"


def test_node_without_the_topology_key_is_unresolvable() -> None:
    result = solve_root([node("bare")], [incoming(spread(1, ZONE, FOO))])
    assert isinstance(result, Unschedulable) and result.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert result.message == ("0/1 nodes are available: 1 node(s) didn't match pod topology spread constraints "
                              "(missing required label).")


@pytest.mark.parametrize("constraint, existing, zones", [
    pytest.param(spread(1, ZONE, FOO, minDomains=3), [running("a", "za-0"), running("b", "zb-0")], set(),
                 id="min-domains-above-the-eligible-domains-makes-the-minimum-zero"),
    pytest.param(spread(1, ZONE, FOO, minDomains=2), [running("a", "za-0"), running("b", "zb-0")], {"za", "zb"},
                 id="min-domains-met"),
    pytest.param(spread(1, ZONE, FOO), [running("a", "za-0"), running("b", "za-1", namespace="other")],
                 {"zb"}, id="pods-of-other-namespaces-do-not-count"),
    pytest.param(spread(1, ZONE, FOO), [running("a", "za-0"),
                                        running("b", "za-1", labels={"foo": "baz"})], {"zb"},
                 id="pods-not-matching-the-selector-do-not-count"),
    pytest.param(spread(1, ZONE, {}), [running("a", "za-0"), running("b", "za-1")], {"za", "zb"},
                 id="empty-selector-counts-no-pod"),
    pytest.param(spread(1, ZONE, FOO, labelSelector=None), [running("a", "za-0"), running("b", "za-1")],
                 {"za", "zb"}, id="nil-selector-counts-no-pod"),
    pytest.param(spread(1, ZONE, FOO, matchLabelKeys=["rev"]),
                 [running("a", "za-0", labels={**FOO, "rev": "1"}), running("b", "za-1", labels={**FOO, "rev": "1"})],
                 {"za", "zb"}, id="match-label-keys-other-revisions-do-not-count"),
    pytest.param(spread(1, ZONE, FOO, matchLabelKeys=["rev"]),
                 [running("a", "za-0", labels={**FOO, "rev": "2"}), running("b", "za-1", labels={**FOO, "rev": "2"})],
                 {"zb"}, id="match-label-keys-the-same-revision-counts"),
])
def test_counting(constraint: dict[str, Any], existing: list[Pod], zones: set[str]) -> None:
    labels = {**FOO, "rev": "2"}
    result = solve_root(zoned_nodes({"za": 2, "zb": 2}), [incoming(constraint, labels=labels)], existing)
    if zones:
        assert zone_of(result) in zones
    else:
        assert "didn't match pod topology spread constraints" in message(result)


def test_terminating_pods_do_not_count() -> None:
    gone = running("a", "za-0").model_copy(deep=True)
    gone = gone.model_copy(update={"metadata": gone.metadata.model_copy(
        update={"deletion_timestamp": "2026-01-01T00:00:00Z"})})
    result = solve_root(zoned_nodes({"za": 1, "zb": 1}), [incoming(spread(1, ZONE, FOO),
                                                                   node_selector={ZONE: "za"})], [gone])
    assert zone_of(result) == "za"


def test_node_affinity_policy_honor_leaves_zones_the_pod_cannot_use_out_of_the_minimum() -> None:
    """zc has no matching pod; the pod may not go to zc. Honor (default): the minimum is over za and zb
    (1), so zb is allowed; Ignore: zc's 0 is the minimum and zb (1 + 1 − 0 = 2 > 1) is not."""
    nodes = zoned_nodes({"za": 1, "zb": 1, "zc": 1})
    existing = [running("a", "za-0"), running("a2", "za-0"), running("b", "zb-0")]
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": ZONE, "operator": "NotIn", "values": ["zc"]}]}]}}}
    honor = solve_root(nodes, [incoming(spread(1, ZONE, FOO), affinity=affinity)], existing)
    assert zone_of(honor) == "zb"
    ignore = solve_root(nodes, [incoming(spread(1, ZONE, FOO, nodeAffinityPolicy="Ignore"), affinity=affinity)],
                        existing)
    assert "didn't match pod topology spread constraints" in message(ignore)


def test_node_taints_policy_honor_leaves_tainted_zones_out() -> None:
    nodes = [*zoned_nodes({"za": 1, "zb": 1}),
             node("zc-0", labels={HOSTNAME: "zc-0", ZONE: "zc"}, taints=["dedicated=x:NoSchedule"])]
    existing = [running("a", "za-0"), running("b", "zb-0")]
    ignore = solve_root(nodes, [incoming(spread(1, ZONE, FOO))], existing)
    assert "didn't match pod topology spread constraints" in message(ignore)
    honor = solve_root(nodes, [incoming(spread(1, ZONE, FOO, nodeTaintsPolicy="Honor"))], existing)
    assert zone_of(honor) in {"za", "zb"}


def spread_gang(name: str, n: int, *constraints: dict[str, Any], **kw: Any) -> list[Pod]:
    return [pod(f"{name}-{i}", namespace=NS, group=name, labels={"app": name},
                spec={"topologySpreadConstraints": list(constraints)}, **kw) for i in range(n)]


def zones_of(result: Any) -> Counter[str]:
    return Counter(n.split("-")[0] for n in placed(result).values())


def test_six_pod_gang_with_max_skew_1_over_three_zones_gets_two_per_zone() -> None:
    result = solve_root(zoned_nodes({"za": 2, "zb": 2, "zc": 2}), spread_gang("g", 6, spread(1, ZONE, {"app": "g"})),
                        groups=[pg("g", 6)])
    assert zones_of(result) == Counter({"za": 2, "zb": 2, "zc": 2})


def test_gang_spread_counts_running_pods_of_the_same_selector() -> None:
    existing = [running("old", "za-0", labels={"app": "g"})]
    result = solve_root(zoned_nodes({"za": 2, "zb": 2}), spread_gang("g", 3, spread(1, ZONE, {"app": "g"})),
                        existing, groups=[pg("g", 3)])
    assert zones_of(result) == Counter({"za": 1, "zb": 2})


def test_gang_with_hostname_spread_gets_one_pod_per_node() -> None:
    result = solve_root(zoned_nodes({"za": 4}), spread_gang("g", 4, spread(1, HOSTNAME, {"app": "g"})),
                        groups=[pg("g", 4)])
    assert sorted(placed(result).values()) == ["za-0", "za-1", "za-2", "za-3"]


def test_gang_larger_than_the_spread_allows_places_nothing() -> None:
    result = solve_root(zoned_nodes({"za": 1, "zb": 1}, cpu="2"),
                        spread_gang("g", 3, spread(1, ZONE, {"app": "g"}, nodeAffinityPolicy="Ignore"),
                                    node_selector={ZONE: "za"}),
                        groups=[pg("g", 3)])
    assert message(result) == ("gang g: 1/3 placeable (minCount 3); 0/2 nodes are available: 1 node(s) didn't match "
                               "Pod's node affinity/selector, 1 node(s) didn't match pod topology spread constraints.")


def test_spread_applies_inside_the_groups_own_topology_domain() -> None:
    """A gang held in one zone by its PodGroup's topology, spread per node with maxSkew 1: its pods spread
    evenly over the chosen zone's nodes (the empty nodes of other zones do not hold the minimum at 0, which
    would allow one pod per node only)."""
    result = solve_root(zoned_nodes({"za": 3, "zb": 2}, cpu="4"),
                        spread_gang("g", 6, spread(1, HOSTNAME, {"app": "g"})), groups=[pg("g", 6, topology=ZONE)])
    assert Counter(placed(result).values()) == Counter({"zb-0": 3, "zb-1": 3})  # the tightest zone first (pack)


def test_zone_spread_of_a_gang_held_in_one_zone_is_not_refused() -> None:
    result = solve_root(zoned_nodes({"za": 2, "zb": 2}), spread_gang("g", 4, spread(1, ZONE, {"app": "g"})),
                        groups=[pg("g", 4, parent="root")], composites=[cpg("root", 1, topology=ZONE)])
    assert len(zones_of(result)) == 1


def test_schedule_anyway_prefers_the_emptier_zone_and_never_refuses() -> None:
    existing = [running("a", "za-0"), running("b", "za-1")]
    result = solve_root(zoned_nodes({"za": 2, "zb": 2}), [incoming(spread(1, ZONE, FOO, when="ScheduleAnyway"))],
                        existing)
    assert zone_of(result) == "zb"
    only_za = solve_root(zoned_nodes({"za": 2, "zb": 2}),
                         [incoming(spread(1, ZONE, FOO, when="ScheduleAnyway"), node_selector={ZONE: "za"})], existing)
    assert zone_of(only_za) == "za"


@pytest.mark.parametrize("event, queue", [
    (ClusterEvent("Pod", Action.DELETE, running("x", "za-0"), None), True),
    (ClusterEvent("Pod", Action.ADD, None, pod("x")), False),
    (ClusterEvent("Node", Action.DELETE, node("n"), None), True),
    (ClusterEvent("Node", Action.UPDATE, node("n"), node("n", taints=["a=b:NoSchedule"])), True),
    (ClusterEvent("Node", Action.UPDATE, node("n"), node("n", cpu="16")), False),
], ids=["bound-pod-deleted", "pending-pod-added", "node-deleted", "node-retainted", "node-allocatable-only"])
def test_queueing_hint(event: ClusterEvent, queue: bool) -> None:
    assert queueing_hint(event) is queue


@pytest.mark.parametrize("counts, room, max_skew, count, expected", [
    ([0, 0, 0], [9, 9, 9], 1, 6, [2, 2, 2]),
    ([0, 0, 0], [9, 9, 9], 1, 16, [6, 5, 5]),
    ([3, 0, 0], [9, 9, 9], 1, 4, [0, 2, 2]),
    ([0, 0, 0], [9, 1, 9], 1, 6, [2, 1, 2]),
    ([0, 0, 0], [9, 0, 9], 1, 6, [1, 0, 1]),
    ([0, 0], [9, 9], 2, 5, [3, 2]),
], ids=["even-batch", "uneven-batch", "catch-up-first", "a-domain-out-of-room-stops-it-from-rising",
        "an-empty-domain-without-room-holds-the-minimum", "max-skew-2"])
def test_water_fill(counts: list[int], room: list[int], max_skew: int, count: int, expected: list[int]) -> None:
    """Copies per domain, least-loaded first, as kube's per-pod rule admits them one by one (the room-bound
    case stops at 5: with b full at 1, a third copy in a or c would be 2 above b)."""
    got = _water_fill(np.array(counts), np.array(room), np.ones(len(counts), dtype=bool), max_skew, count)
    assert got.tolist() == expected


def test_spread_batch_that_another_rule_cuts_short_is_placed_again_copy_by_copy() -> None:
    """Zone spread (batch of 2/2/2) and zone anti-affinity on the gang's own label (one per zone): the batch
    falls short, is undone and placed copy by copy — three pods, one per zone, a state kube reaches."""
    pods = [pod(f"g-{i}", namespace=NS, group="g", labels={"app": "g"}, spec={"topologySpreadConstraints": [
        spread(1, ZONE, {"app": "g"})]}, affinity=pod_affinity(anti=[pod_term({"app": "g"}, ZONE)]))
        for i in range(6)]
    result = solve_root(zoned_nodes({"za": 2, "zb": 2, "zc": 2}), pods, groups=[pg("g", 3)])
    assert zones_of(result) == Counter({"za": 1, "zb": 1, "zc": 1})
