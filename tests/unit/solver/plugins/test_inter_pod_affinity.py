"""InterPodAffinity: kube-scheduler's documented behaviour (interpodaffinity/filtering_test.go, the
"Assigning Pods to Nodes" page), then what a gang adds: members repel or attract each other."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from scheduler.framework import Code, Unschedulable
from scheduler.framework.events import Action, ClusterEvent
from scheduler.model import Pod
from scheduler.solver.plugins.inter_pod_affinity import queueing_hint
from tests.unit.groups.builders import cpg, pg
from tests.unit.solver.builders import HOSTNAME, ZONE, node, pod, pod_affinity, pod_term
from tests.unit.solver.plugins.solving import NS, message, per_node, placed, solve_root, zoned_nodes

TWO_ZONES = {"za": 2, "zb": 2}


def running(name: str, on: str, labels: dict[str, str], namespace: str = NS, **kw: Any) -> Pod:
    return pod(name, namespace=namespace, node_name=on, labels=labels, phase="Running",
               scheduler="default-scheduler", **kw)


def incoming(affinity: dict[str, Any], labels: dict[str, str] | None = None, name: str = "p") -> Pod:
    return pod(name, namespace=NS, labels=labels or {"app": "web"}, affinity=affinity)


CASES = [
    pytest.param([running("db", "za-1", {"app": "db"})],
                 pod_affinity(required=[pod_term(expressions=[{"key": "app", "operator": "In", "values": ["db"]}])]),
                 {"za-1"}, None, id="affinity-in-operator-matches-the-running-pod-node"),
    pytest.param([running("db", "za-1", {"app": "db"})],
                 pod_affinity(required=[pod_term({"app": "db"}, ZONE)]),
                 {"za-0", "za-1"}, None, id="affinity-by-zone-allows-the-whole-zone"),
    pytest.param([running("db", "za-1", {"app": "db"}, namespace="other")],
                 pod_affinity(required=[pod_term({"app": "db"})]),
                 set(), "0/4 nodes are available: 4 node(s) didn't match pod affinity rules.",
                 id="affinity-ignores-pods-of-other-namespaces-by-default"),
    pytest.param([running("db", "za-1", {"app": "db"}, namespace="other")],
                 pod_affinity(required=[pod_term({"app": "db"}, namespaces=["other"])]),
                 {"za-1"}, None, id="affinity-namespaces-lists-the-other-namespace"),
    pytest.param([running("db", "za-1", {"app": "db"}, namespace="other")],
                 pod_affinity(required=[pod_term({"app": "db"}, namespaceSelector={"matchLabels": {"team": "x"}})]),
                 {"za-1"}, None, id="affinity-namespace-selector-matches-the-namespace-labels"),
    pytest.param([running("db", "za-1", {"app": "db"}, namespace="other")],
                 pod_affinity(required=[pod_term({"app": "db"}, namespaceSelector={})]),
                 {"za-1"}, None, id="affinity-empty-namespace-selector-is-every-namespace"),
    pytest.param([], pod_affinity(required=[pod_term({"app": "db"})]),
                 set(), "0/4 nodes are available: 4 node(s) didn't match pod affinity rules.",
                 id="affinity-matching-no-pod-anywhere-stays-pending"),
    pytest.param([], pod_affinity(required=[pod_term({"app": "web"}, ZONE)]),
                 {"za-0", "za-1", "zb-0", "zb-1"}, None, id="first-pod-of-a-self-affine-group-goes-anywhere"),
    pytest.param([running("db", "za-1", {"app": "db"}), running("cache", "zb-0", {"tier": "cache"})],
                 pod_affinity(required=[pod_term({"app": "db"}, ZONE), pod_term({"tier": "cache"}, ZONE)]),
                 set(), "0/4 nodes are available: 4 node(s) didn't match pod affinity rules.",
                 id="one-pod-must-match-all-affinity-terms"),
    pytest.param([running("db", "za-1", {"app": "db"})],
                 pod_affinity(anti=[pod_term({"app": "db"}, ZONE)]),
                 {"zb-0", "zb-1"}, None, id="anti-affinity-keeps-off-the-zone-of-the-matching-pod"),
    pytest.param([running("db", "za-1", {"app": "db"})],
                 pod_affinity(anti=[pod_term({"app": "db"}, "example.com/rack")]),
                 {"za-0", "za-1", "zb-0", "zb-1"}, None, id="anti-affinity-passes-nodes-without-the-key"),
    pytest.param([running("guard", "za-1", {"app": "guard"},
                          affinity=pod_affinity(anti=[pod_term({"app": "web"}, ZONE)]))],
                 {}, {"zb-0", "zb-1"}, None, id="running-pod-anti-affinity-repels-the-incoming-pod-symmetric"),
    pytest.param([running("guard", "za-1", {"app": "guard"}, namespace="other",
                          affinity=pod_affinity(anti=[pod_term({"app": "web"}, ZONE)]))],
                 {}, {"za-0", "za-1", "zb-0", "zb-1"}, None,
                 id="symmetric-anti-affinity-defaults-to-the-running-pods-namespace"),
    pytest.param([running("v1", "za-1", {"app": "web", "rev": "v1"})],
                 pod_affinity(anti=[pod_term({"app": "web"}, matchLabelKeys=["rev"])]),
                 {"za-0", "za-1", "zb-0", "zb-1"}, None, id="match-label-keys-other-revisions-do-not-repel"),
    pytest.param([running("v2", "za-1", {"app": "web", "rev": "v2"})],
                 pod_affinity(anti=[pod_term({"app": "web"}, matchLabelKeys=["rev"])]),
                 {"za-0", "zb-0", "zb-1"}, None, id="match-label-keys-the-same-revision-repels"),
]


@pytest.mark.parametrize("existing, affinity, allowed, reason", CASES)
def test_one_pod_against_running_pods(existing: list[Pod], affinity: dict[str, Any], allowed: set[str],
                                      reason: str | None) -> None:
    labels = {"app": "web", "rev": "v2"}
    result = solve_root(zoned_nodes(TWO_ZONES), [incoming(affinity, labels)], existing,
                        namespaces={NS: {"team": "y"}, "other": {"team": "x"}})
    if reason is None:
        assert placed(result)["p"] in allowed
    else:
        assert message(result) == reason


def test_symmetric_rejection_names_the_existing_pods_rule_and_is_resolvable() -> None:
    guard = running("guard", "za-0", {"app": "guard"}, affinity=pod_affinity(anti=[pod_term({"app": "web"})]))
    result = solve_root([node("za-0", labels={HOSTNAME: "za-0"})], [incoming({})], [guard])
    assert isinstance(result, Unschedulable)
    assert result.message == "0/1 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules."
    assert result.code is Code.UNSCHEDULABLE and "InterPodAffinity" in result.rejectors


def test_affinity_needs_every_topology_key_on_the_node_even_for_the_first_pod() -> None:
    nodes = [node("bare"), node("labelled", labels={ZONE: "za"})]
    result = solve_root(nodes, [incoming(pod_affinity(required=[pod_term({"app": "web"}, ZONE)]))])
    assert placed(result) == {"p": "labelled"}


def test_affinity_only_rejection_is_unresolvable() -> None:
    result = solve_root(zoned_nodes(TWO_ZONES), [incoming(pod_affinity(required=[pod_term({"app": "db"})]))])
    assert isinstance(result, Unschedulable) and result.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE


# -- gangs: members placed earlier in the plan count -----------------------------------------------

ANTI_SELF_HOST = pod_affinity(anti=[pod_term({"app": "train"})])


def gang(name: str, n: int, affinity: dict[str, Any], labels: dict[str, str] | None = None,
         **kw: Any) -> list[Pod]:
    return [pod(f"{name}-{i}", namespace=NS, group=name, labels=labels or {"app": "train"}, affinity=affinity, **kw)
            for i in range(n)]


def test_gang_with_hostname_anti_affinity_on_its_own_label_gets_one_pod_per_node() -> None:
    result = solve_root(zoned_nodes(TWO_ZONES), gang("g", 4, ANTI_SELF_HOST), groups=[pg("g", 4)])
    assert per_node(result) == Counter({"za-0": 1, "za-1": 1, "zb-0": 1, "zb-1": 1})


def test_gang_with_hostname_anti_affinity_larger_than_the_cluster_places_nothing_and_says_why() -> None:
    result = solve_root(zoned_nodes({"za": 3}), gang("g", 4, ANTI_SELF_HOST), groups=[pg("g", 4)])
    assert message(result) == ("gang g: 3/4 placeable (minCount 4); 0/3 nodes are available: "
                               "3 node(s) didn't match pod anti-affinity rules. Its own required pod anti-affinity "
                               "allows one of these pods per kubernetes.io/hostname: at most 3 on the 3 node(s) it "
                               "may use here, 4 needed.")


def test_no_bound_is_told_where_a_node_lacks_the_rules_key() -> None:
    """A node without the topology key is not bound by the rule (``filtering.go``: the term cannot match there), so
    no count of domains bounds the copies: the histogram alone is the reason."""
    nodes = zoned_nodes({"za": 3}, cpu="1")
    nodes.append(node("nolabel-0", cpu="1", labels={}))
    result = solve_root(nodes, gang("g", 6, ANTI_SELF_HOST), groups=[pg("g", 6)])
    assert "Its own required pod anti-affinity" not in message(result)
    assert message(result).startswith("gang g: 4/6 placeable (minCount 6); 0/4 nodes are available: ")


def test_the_bound_is_told_against_the_members_needed_not_the_pods_pending() -> None:
    """Six pods, minCount 3, one per node on four nodes: the rule lets 4 in, more than the 3 needed, so room (two
    nodes too small) is the reason, and more room would place the gang: the bound is not told."""
    nodes = [node("n0", cpu="8", labels={HOSTNAME: "n0"}), node("n1", cpu="8", labels={HOSTNAME: "n1"}),
             node("n2", cpu="2", labels={HOSTNAME: "n2"}), node("n3", cpu="2", labels={HOSTNAME: "n3"})]
    result = solve_root(nodes, gang("g", 6, ANTI_SELF_HOST, cpu="4"), groups=[pg("g", 3)])
    assert message(result) == ("gang g: 2/6 placeable (minCount 3); 0/4 nodes are available: 2 Insufficient cpu, "
                               "2 node(s) didn't match pod anti-affinity rules.")


def test_the_bound_of_one_pod_shape_is_not_told_for_a_gang_of_several() -> None:
    """Five pods of one shape and three of another, all repelling each other per node, on four nodes: the rule is
    per shape here, so no one count is the gang's bound, and none is told."""
    pods = gang("g", 5, ANTI_SELF_HOST, cpu="2") + [
        pod(f"g-small-{i}", namespace=NS, group="g", labels={"app": "train"}, affinity=ANTI_SELF_HOST, cpu="1")
        for i in range(3)]
    result = solve_root(zoned_nodes({"za": 4}), pods, groups=[pg("g", 8)])
    assert isinstance(result, Unschedulable) and "Its own required pod anti-affinity" not in message(result)


def test_a_bound_the_rule_sets_replaces_the_room_it_would_otherwise_quote() -> None:
    """A zone-bound gang of four, one per node, in zones of three and two nodes too small for any member: room is
    all the nodes lack, yet no room would let three nodes hold four; the reason says the latter, not the former."""
    nodes = zoned_nodes({"za": 3, "zb": 2}, cpu="2")
    result = solve_root(nodes, gang("g", 4, ANTI_SELF_HOST, cpu="4"), groups=[pg("g", 4, topology=ZONE)])
    assert message(result) == (f"gang g: 0/4 placeable (minCount 4) in {ZONE} za (best of 2 domains); 0/3 nodes are "
                               "available: 3 Insufficient cpu. Its own required pod anti-affinity allows one of these "
                               "pods per kubernetes.io/hostname: at most 3 on the 3 node(s) it may use here, 4 needed.")


def test_the_bound_is_not_told_when_the_domains_could_hold_every_copy() -> None:
    """Four nodes for a gang of four that repels itself per node, short of cpu on one: room, not the rule, is what
    is short, and the reason does not say the rule bounds it."""
    nodes = zoned_nodes({"za": 4}, cpu="1")
    result = solve_root(nodes, gang("g", 4, ANTI_SELF_HOST, cpu="2"), groups=[pg("g", 4)])
    assert isinstance(result, Unschedulable) and "Its own required pod anti-affinity" not in message(result)


def test_gang_with_zone_affinity_on_its_own_label_stays_in_one_zone() -> None:
    affinity = pod_affinity(required=[pod_term({"app": "train"}, ZONE)])
    result = solve_root(zoned_nodes({"za": 2, "zb": 2}, cpu="2"), gang("g", 4, affinity), groups=[pg("g", 4)])
    zones = {n.split("-")[0] for n in placed(result).values()}
    assert len(zones) == 1 and sum(per_node(result).values()) == 4


def test_gang_with_zone_anti_affinity_on_its_own_label_gets_one_pod_per_zone() -> None:
    affinity = pod_affinity(anti=[pod_term({"app": "train"}, ZONE)])
    result = solve_root(zoned_nodes({"za": 2, "zb": 2, "zc": 1}), gang("g", 3, affinity), groups=[pg("g", 3)])
    assert sorted(n.split("-")[0] for n in placed(result).values()) == ["za", "zb", "zc"]


def test_running_pod_anti_affinity_keeps_a_gang_off_its_node() -> None:
    guard = running("guard", "za-0", {"app": "guard"}, affinity=pod_affinity(anti=[pod_term({"app": "train"})]))
    result = solve_root(zoned_nodes({"za": 2}, cpu="4"), gang("g", 4, {}), [guard], groups=[pg("g", 4)])
    assert per_node(result) == Counter({"za-1": 4})


def test_gang_with_affinity_to_a_running_pod_lands_in_its_zone() -> None:
    cache = running("cache", "zb-1", {"app": "cache"}, cpu=None)
    affinity = pod_affinity(required=[pod_term({"app": "cache"}, ZONE)])
    result = solve_root(zoned_nodes(TWO_ZONES, cpu="2"), gang("g", 4, affinity), [cache], groups=[pg("g", 4)])
    assert set(placed(result).values()) == {"zb-0", "zb-1"}


def test_sibling_groups_repel_each_other_through_the_plan() -> None:
    """Two leaves of one composite: the workers' anti-affinity against the evaluators' label keeps them apart
    although neither is running yet."""
    workers = gang("w", 2, pod_affinity(anti=[pod_term({"role": "eval"})]), labels={"role": "train"})
    evals = [pod(f"e-{i}", namespace=NS, group="e", labels={"role": "eval"}) for i in range(2)]
    groups = [pg("w", 2, parent="root"), pg("e", 2, parent="root")]
    result = solve_root(zoned_nodes({"za": 2}), [*workers, *evals], groups=groups, composites=[cpg("root", 2)])
    where = placed(result)
    assert {where["w-0"], where["w-1"]}.isdisjoint({where["e-0"], where["e-1"]})


def test_preferred_affinity_wins_over_the_packing_order() -> None:
    db = running("db", "zb-1", {"app": "db"})
    affinity = pod_affinity(preferred=[(50, pod_term({"app": "db"}, ZONE))])
    result = solve_root(zoned_nodes(TWO_ZONES), [incoming(affinity)], [db])
    assert placed(result)["p"].startswith("zb")


def test_preferred_anti_affinity_avoids_the_zone() -> None:
    db = running("db", "za-1", {"app": "db"})
    affinity = pod_affinity(preferred_anti=[(50, pod_term({"app": "db"}, ZONE))])
    result = solve_root(zoned_nodes(TWO_ZONES), [incoming(affinity)], [db])
    assert placed(result)["p"].startswith("zb")


def test_running_pods_required_affinity_attracts_the_incoming_pod_by_hard_pod_affinity_weight() -> None:
    """interpodaffinity/scoring.go: a running pod's required term that matches the incoming pod adds
    hardPodAffinityWeight (1) to its domain's score."""
    fan = running("fan", "zb-0", {"app": "fan"}, affinity=pod_affinity(required=[pod_term({"app": "web"}, ZONE)]))
    result = solve_root(zoned_nodes(TWO_ZONES), [incoming({})], [fan])
    assert placed(result)["p"].startswith("zb")


@pytest.mark.parametrize("event, queue", [
    (ClusterEvent("Pod", Action.DELETE, running("x", "za-0", {"app": "db"}), None), True),
    (ClusterEvent("Pod", Action.ADD, None, running("x", "za-0", {"app": "db"})), True),
    (ClusterEvent("Pod", Action.ADD, None, pod("x")), False),
    (ClusterEvent("Pod", Action.UPDATE, running("x", "za-0", {"app": "db"}), running("x", "za-0", {"app": "v2"})),
     True),
    (ClusterEvent("Pod", Action.UPDATE, running("x", "za-0", {"app": "db"}), running("x", "za-0", {"app": "db"})),
     False),
    (ClusterEvent("Node", Action.ADD, None, node("n")), True),
    (ClusterEvent("Node", Action.UPDATE, node("n"), node("n", labels={ZONE: "za"})), True),
    (ClusterEvent("Node", Action.UPDATE, node("n"), node("n", cpu="16")), False),
], ids=["bound-pod-deleted", "bound-pod-added", "pending-pod-added", "bound-pod-relabelled",
        "bound-pod-unchanged-labels", "node-added", "node-relabelled", "node-allocatable-only"])
def test_queueing_hint(event: ClusterEvent, queue: bool) -> None:
    assert queueing_hint(event) is queue
