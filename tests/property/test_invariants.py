"""Design §4 invariants as properties over random clusters and random group trees.

1. All or nothing: a plan satisfies every gang it counts as satisfied (≥ minCount members,
   ≥ minGroupCount children), places nothing from a group it did not satisfy, and an
   Unschedulable result places nothing.
2. No overcommit: after assuming every plan, no node's used requests exceed allocatable in any
   resource a plan added to.
3. Topology: the members of a group with a topology key share one label value, inside the
   parent's domain.
Plus determinism (same input, same plans) and completeness for a lone gang of identical pods.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.framework import NodeTable, Plan, Snapshot, SolverConfig
from scheduler.groups import Composite, Group, GroupTree, Leaf, TreeState, build_trees
from scheduler.offline.loader import Objects
from scheduler.offline.report import render_text
from scheduler.offline.simulate import simulate
from scheduler.solver import solve
from scheduler.solver.plugins import run_filters
from scheduler.solver.plugins.resources_fit import copies
from tests.property.strategies import Cluster, clusters

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def run_all(c: Cluster, scoring: str = "pack") -> tuple[Snapshot, Snapshot, list[tuple[GroupTree, object]]]:
    """The one cycle, as ``run`` and ``simulate`` drive it: the cluster loaded into a ClusterCache, each root
    assumed and bound (by the recording binder) before the next, the cache's assume/settle bookkeeping
    included. Returns the snapshots before and after, and each root's tree with its decision."""
    objects = Objects(nodes=c.nodes, pods=c.pods, podgroups=c.podgroups, composites=c.composites)
    sim = simulate(objects, "gang-scheduler", SolverConfig(scoring=scoring))  # type: ignore[arg-type]
    assert sim.initial is not None and sim.snapshot is not None
    return sim.initial, sim.snapshot, list(sim.results)


def placed_in(group: Group, placed: dict[str, str]) -> int:
    return sum(p.key in placed for leaf in group.leaves() for p in leaf.pending)


def check_group(group: Group, plan: Plan, placed: dict[str, str]) -> None:
    if group.key not in plan.satisfied:
        assert placed_in(group, placed) == 0, f"{group.key} unsatisfied but has placed pods"
        return
    if isinstance(group, Leaf):
        have = sum(p.key in placed for p in group.pending) + len(group.bound)
        assert have >= (group.min_count or 1), f"{group.key}: {have} < minCount {group.min_count}"
        return
    ok = sum(c.key in plan.satisfied for c in group.children)
    assert ok >= group.need, f"{group.key}: {ok} children < minGroupCount {group.need}"
    for child in group.children:
        check_group(child, plan, placed)


@SETTINGS
@given(clusters(), st.sampled_from(["pack", "spread"]))
def test_all_or_nothing(c: Cluster, scoring: str) -> None:
    _, _, results = run_all(c, scoring)
    for tree, result in results:
        if isinstance(result, Plan):
            placed = {p.key: n for p, n in result.placements}
            assert tree.key in result.satisfied
            check_group(tree.root, result, placed)
            assert len(placed) == len(result.placements), "a pod placed twice"


@SETTINGS
@given(clusters(), st.sampled_from(["pack", "spread"]))
def test_no_node_overcommitted(c: Cluster, scoring: str) -> None:
    start, end, _ = run_all(c, scoring)
    added = end.used - start.used
    assert (added >= 0).all()
    over = (added > 0) & (end.used > end.table.allocatable)
    assert not over.any(), f"overcommitted: {np.argwhere(over)}"


def domains_ok(group: Group, placed: dict[str, str], labels: dict[str, dict[str, str]],
               parent: dict[str, str]) -> None:
    nodes = {placed[p.key] for leaf in group.leaves() for p in leaf.pending if p.key in placed}
    scope = dict(parent)
    if group.topology_key and nodes:
        values = {labels[n].get(group.topology_key) for n in nodes}
        assert len(values) == 1 and None not in values, f"{group.key} spans {values}"
        scope[group.topology_key] = values.pop()  # type: ignore[assignment]
    for key, value in scope.items():
        assert all(labels[n].get(key) == value for n in nodes), f"{group.key} outside parent domain {key}={value}"
    if isinstance(group, Composite):
        for child in group.children:
            domains_ok(child, placed, labels, scope)


@SETTINGS
@given(clusters())
def test_topology_domains_are_respected(c: Cluster) -> None:
    _, _, results = run_all(c)
    labels = {n.name: dict(n.metadata.labels) for n in c.nodes}
    for tree, result in results:
        if isinstance(result, Plan):
            domains_ok(tree.root, {p.key: n for p, n in result.placements}, labels, {})


@settings(max_examples=50, deadline=None)
@given(clusters())
def test_same_input_same_plans(c: Cluster) -> None:
    _, _, first = run_all(c)
    _, _, second = run_all(c)
    summary = [(t.key, tuple((p.key, n) for p, n in r.placements) if isinstance(r, Plan) else None)
               for t, r in first]
    assert summary == [(t.key, tuple((p.key, n) for p, n in r.placements) if isinstance(r, Plan) else None)
                       for t, r in second]


@SETTINGS
@given(clusters(max_roots=1))
def test_lone_gang_of_identical_pods_fits_exactly_when_slots_suffice(c: Cluster) -> None:
    """Completeness: for one gang leaf of identical pods with no topology key, the solver succeeds
    exactly when the per-node copy counts add up to minCount (first-fit may miss such packings)."""
    forest = build_trees(c.pods, c.podgroups, c.composites, scheduler_name="gang-scheduler")
    (tree,) = forest.trees
    root = tree.root
    if (tree.state is not TreeState.READY or not isinstance(root, Leaf) or root.topology_key
            or len({(tuple(sorted(p.requests.items()))) for p in root.pending}) != 1):
        return
    snapshot = Snapshot.build(NodeTable.build(c.nodes), c.pods)
    table = snapshot.table
    vec, unknown = table.request_vector(root.pending[0].requests)
    ok = table.static_fit(root.pending[0].spec, run_filters).ok
    slots = 0 if unknown else int(copies(snapshot.free()[ok], vec).clip(max=len(root.pending)).sum())
    result = solve(tree, snapshot)
    assert isinstance(result, Plan) == (slots >= root.need and slots > 0)


@SETTINGS
@given(clusters(max_roots=1))
def test_lone_topology_gang_fits_exactly_when_one_domain_has_the_slots(c: Cluster) -> None:
    """Domain pruning is only a necessary condition: for one gang leaf of identical pods with a
    topology key, the solver succeeds exactly when some domain's per-node copy counts (on nodes
    passing the static filters; clusters hold tainted and cordoned nodes) add up to minCount."""
    forest = build_trees(c.pods, c.podgroups, c.composites, scheduler_name="gang-scheduler")
    (tree,) = forest.trees
    root = tree.root
    if (tree.state is not TreeState.READY or not isinstance(root, Leaf) or not root.topology_key
            or len({(tuple(sorted(p.requests.items()))) for p in root.pending}) != 1):
        return
    snapshot = Snapshot.build(NodeTable.build(c.nodes), c.pods)
    table = snapshot.table
    vec, unknown = table.request_vector(root.pending[0].requests)
    ok = table.static_fit(root.pending[0].spec, run_filters).ok
    ids = table.domains(root.topology_key).of_node
    per_node = np.zeros(len(table), dtype=np.int64)
    if not unknown:
        per_node[ok] = copies(snapshot.free()[ok], vec)
    best = max((int(per_node[ids == d].sum()) for d in np.unique(ids[ids >= 0])), default=0)
    result = solve(tree, snapshot)
    assert isinstance(result, Plan) == (min(best, len(root.pending)) >= max(root.need, 1))


@SETTINGS
@given(clusters())
def test_nothing_lost_every_pending_pod_of_ours_gets_a_node_or_a_reason(c: Cluster) -> None:
    """Every pending pod of ours is in the result with a node or a reason, and each one left
    without a node is listed, with its reason, in the text report."""
    objects = Objects(nodes=c.nodes, pods=c.pods, podgroups=c.podgroups, composites=c.composites)
    sim = simulate(objects, "gang-scheduler", SolverConfig())
    ours = {p.key for p in c.pods if p.spec.scheduler_name == "gang-scheduler" and not p.is_bound}
    reported = {o.pod.key: o for o in sim.pods}
    assert set(reported) == ours
    for outcome in reported.values():
        assert (outcome.node is None) != (outcome.reason is None)
    text = render_text(sim).splitlines()
    for outcome in reported.values():
        if outcome.node is None and outcome.pod.group_name is None:
            assert f"  {outcome.pod.key}: {outcome.reason}" in text
        elif outcome.node is None:  # its PodGroup's line names it (or counts it), its reason follows once
            md = outcome.pod.metadata
            head = f"  PodGroup {md.namespace}/{outcome.pod.group_name}, "
            assert any(line.startswith(head) and (f" {md.name}," in f"{line}," or " more (see" in line)
                       and text[i + 1] == f"    {outcome.reason}" for i, line in enumerate(text))
