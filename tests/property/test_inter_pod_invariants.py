"""Inter-pod invariants over random clusters: no plan breaks a required anti-affinity (either direction),
a required affinity, a DoNotSchedule spread constraint or a host port, counting the running pods and the
pods placed before. The plans are replayed root after root, each plan's pods one at a time as
kube-scheduler would have checked them: a plan is bound at once, so it is right when *some* order of its
pods passes every rule (the replay tries the pod whose spread domain is least loaded first, the order
that admits the most).

The oracle reads the raw fields (``matchLabels`` on ``app``, one namespace: see
``inter_pod_strategies.py``) and walks every pod: it shares no code with the plugins.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from scheduler.framework import Plan, SolverConfig
from scheduler.model import Node, Pod
from scheduler.model.pod import TopologySpreadConstraint
from scheduler.offline.loader import Objects
from scheduler.offline.simulate import simulate
from tests.property.inter_pod_strategies import inter_pod_clusters
from tests.property.strategies import Cluster

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _terms(pod: Pod, kind: str) -> list[tuple[dict[str, str], str]]:
    affinity = pod.spec.affinity
    part = getattr(affinity, kind, None) if affinity is not None else None
    if part is None:
        return []
    return [(dict(t.label_selector.match_labels) if t.label_selector else {}, t.topology_key)
            for t in part.required_during_scheduling_ignored_during_execution]


def _matches(selector: dict[str, str], pod: Pod) -> bool:
    return all(pod.metadata.labels.get(k) == v for k, v in selector.items())


def _ports(pod: Pod) -> set[int]:
    return {p.host_port for c in pod.spec.containers for p in c.ports if p.host_port}


class Replay:
    """The pods on the nodes (name → labels), judged and extended one placement at a time."""

    def __init__(self, nodes: list[Node], running: list[Pod]) -> None:
        self.labels = {n.name: dict(n.metadata.labels) for n in nodes}
        self.on: list[tuple[Pod, str]] = [(p, p.spec.node_name) for p in running if p.spec.node_name in self.labels]

    def same(self, a: str, b: str, key: str) -> bool:
        va = self.labels[a].get(key)
        return va is not None and va == self.labels[b].get(key)

    def problem(self, pod: Pod, node: str) -> str | None:
        """Why placing ``pod`` on ``node`` now breaks a rule, or None."""
        for sel, key in _terms(pod, "pod_anti_affinity"):
            bad = [(e.metadata.name, n) for e, n in self.on if _matches(sel, e) and self.same(node, n, key)]
            if bad:
                return f"{pod.metadata.name} on {node}: its anti-affinity {sel}/{key} matches {bad}"
        for e, n in self.on:
            for sel, key in _terms(e, "pod_anti_affinity"):
                if _matches(sel, pod) and self.same(node, n, key):
                    return f"{pod.metadata.name} on {node}: {e.metadata.name} on {n} repels it ({sel}/{key})"
        affinity = _terms(pod, "pod_affinity")
        if affinity:
            if not all(key in self.labels[node] for _, key in affinity):
                return f"{pod.metadata.name} on {node}: a topology key of its affinity is missing"
            matching = [(e, n) for e, n in self.on if all(_matches(sel, e) for sel, _ in affinity)]
            anywhere = [(e, n) for e, n in matching if any(key in self.labels[n] for _, key in affinity)]
            if anywhere:
                for _, key in affinity:
                    if not any(self.same(node, n, key) for _, n in matching):
                        return f"{pod.metadata.name} on {node}: no pod matching its affinity in its {key} domain"
            elif not all(_matches(sel, pod) for sel, _ in affinity):
                return f"{pod.metadata.name} on {node}: its affinity matches no pod and not itself"
        for c in pod.spec.topology_spread_constraints:
            key = c.topology_key
            if key not in self.labels[node]:
                return f"{pod.metadata.name} on {node} lacks {key}"
            counts = self.spread_counts(c)
            skew = counts[self.labels[node][key]] + int(_matches(_sel(c), pod)) - min(counts.values())
            if skew > c.max_skew:
                return f"{pod.metadata.name} on {node}: skew {skew} > {c.max_skew} ({counts})"
        wanted = _ports(pod)
        for e, n in self.on:
            if n == node and wanted & _ports(e):
                return f"{pod.metadata.name} on {node}: host port {wanted & _ports(e)} held by {e.metadata.name}"
        return None

    def spread_counts(self, c: TopologySpreadConstraint) -> dict[str, int]:
        key, sel = c.topology_key, _sel(c)
        counts = {v[key]: 0 for v in self.labels.values() if key in v}
        for e, n in self.on:
            if key in self.labels[n] and sel and _matches(sel, e):
                counts[self.labels[n][key]] += 1
        return counts

    def load(self, pod: Pod, node: str) -> int:
        """How loaded the pod's spread domain on ``node`` is (0 without spread): replayed least loaded first."""
        c = next(iter(pod.spec.topology_spread_constraints), None)
        if c is None or c.topology_key not in self.labels[node]:
            return 0
        return self.spread_counts(c)[self.labels[node][c.topology_key]]

    def replay(self, placements: list[tuple[Pod, str]]) -> None:
        """Add a plan's pods one at a time in some order that passes every rule; fail if none does."""
        left = list(placements)
        while left:
            left.sort(key=lambda pn: self.load(*pn))
            for i, (pod, node) in enumerate(left):
                if self.problem(pod, node) is None:
                    self.on.append(left.pop(i))
                    break
            else:
                raise AssertionError(self.problem(*left[0]))


def _sel(c: TopologySpreadConstraint) -> dict[str, str]:
    return dict(c.label_selector.match_labels) if c.label_selector else {}


@SETTINGS
@given(inter_pod_clusters())
def test_no_plan_breaks_a_required_inter_pod_rule(c: Cluster) -> None:
    objects = Objects(nodes=c.nodes, pods=c.pods, podgroups=c.podgroups)
    sim = simulate(objects, "gang-scheduler", SolverConfig())
    replay = Replay(c.nodes, [p for p in c.pods if p.is_bound])
    for _tree, result in sim.results:
        if isinstance(result, Plan):
            replay.replay(list(result.placements))


@SETTINGS
@given(inter_pod_clusters(max_roots=1))
def test_plans_are_all_or_nothing_under_inter_pod_rules(c: Cluster) -> None:
    objects = Objects(nodes=c.nodes, pods=c.pods, podgroups=c.podgroups)
    sim = simulate(objects, "gang-scheduler", SolverConfig(scoring="spread"))
    for tree, result in sim.results:
        if not isinstance(result, Plan):
            continue
        (leaf,) = tree.root.leaves()
        got = sum(1 for p, _ in result.placements if p.key in {q.key for q in leaf.pending})
        assert got >= leaf.need and got == len(result.placements)
