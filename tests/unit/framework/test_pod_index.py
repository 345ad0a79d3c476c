"""The pod index (``scheduler.framework.pod_index``): its answers equal a walk over every pod, before and
after changes, in overlays, and as the cache carries it from snapshot to snapshot."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.cache.cluster import ClusterCache
from scheduler.framework import NodeTable, Snapshot
from scheduler.framework.pod_index import IndexView, PodEntry, pod_entry
from scheduler.framework.pod_terms import HostPort, Selector, selector_of
from scheduler.model.pod import LabelSelector, Pod
from tests.unit.solver.builders import host_port, node, pod, pod_affinity, pod_term

APPS = ("a", "b", "c")
NAMESPACES = ("ml", "web")


def random_pod(rng: random.Random, i: int, nodes: int) -> Pod:
    labels = {"app": rng.choice(APPS)}
    if rng.random() < 0.5:
        labels["tier"] = rng.choice(("x", "y"))
    affinity = None
    if rng.random() < 0.3:
        affinity = pod_affinity(anti=[pod_term({"app": rng.choice(APPS)})])
    elif rng.random() < 0.2:
        affinity = pod_affinity(required=[pod_term(expressions=[{"key": "tier", "operator": "NotIn",
                                                                 "values": ["x"]}])])
    ports = [host_port(rng.choice((80, 443)))] if rng.random() < 0.3 else []
    return pod(f"p{i}", namespace=rng.choice(NAMESPACES), node_name=f"n{rng.randrange(nodes)}", labels=labels,
               affinity=affinity, ports=ports)


SELECTORS: list[dict[str, Any]] = [
    {"matchLabels": {"app": "a"}},
    {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]},
    {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
    {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["x"]}]},
    {},
]


def walk(entries: list[PodEntry], namespaces: frozenset[str] | None, sel: Selector | None) -> set[str]:
    return {e.key for e in entries if sel is not None and (namespaces is None or e.namespace in namespaces)
            and sel.matches(e.labels)}


def check_view(view: IndexView, pods: dict[str, Pod]) -> None:
    entries = [pod_entry(p) for p in pods.values()]
    assert {e.key for e in view.entries()} == set(pods)
    for raw in SELECTORS:
        sel = selector_of(LabelSelector.model_validate(raw))
        for scope in (None, frozenset({"ml"}), frozenset({"ml", "web"})):
            assert {e.key for e in view.matching(scope, sel)} == walk(entries, scope, sel), (raw, scope)
    assert view.matching(None, None) == []
    for labels in ({"app": "a"}, {"app": "b", "tier": "y"}, {}):
        holders = {e.key for e in view.term_holders(labels)}
        need = {e.key for e in entries if any(t.selector is not None and t.selector.matches(labels)
                                              for t in e.terms.all_terms())}
        assert need <= holders <= {e.key for e in entries if e.terms}  # every pod a term of may match
    for port in (80, 443):
        assert {e.key for e in view.port_users("TCP", port)} == {
            e.key for e in entries if HostPort("0.0.0.0", "TCP", port) in e.ports}


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000))
def test_index_answers_equal_a_walk_over_every_pod_through_changes(seed: int) -> None:
    rng = random.Random(seed)
    pods = {p.key: p for p in (random_pod(rng, i, 4) for i in range(30))}
    view = IndexView.build(pod_entry(p) for p in pods.values())
    check_view(view, pods)
    for step in range(3):  # the owner's chain: changes applied in place
        changes: dict[str, PodEntry | None] = {}
        for key in rng.sample(sorted(pods), 5):
            del pods[key]
            changes[key] = None
        for i in range(4):
            p = random_pod(rng, 100 + 10 * step + i, 4)
            pods[p.key] = p
            changes[p.key] = pod_entry(p)
        old = view
        view = view.advanced(changes)
        assert not old.valid and view.valid
        check_view(view, pods)


def test_an_overlay_leaves_its_base_valid_and_unchanged() -> None:
    rng = random.Random(7)
    pods = {p.key: p for p in (random_pod(rng, i, 3) for i in range(20))}
    base = IndexView.build(pod_entry(p) for p in pods.values())
    gone = sorted(pods)[:4]
    branch = base.branched({k: None for k in gone})
    assert base.valid and branch.valid
    check_view(base, pods)
    check_view(branch, {k: p for k, p in pods.items() if k not in gone})


def test_a_large_overlay_is_folded_into_its_own_index() -> None:
    pods = {f"ml/p{i}": pod(f"p{i}", namespace="ml", node_name="n0", labels={"app": "a"}) for i in range(300)}
    base = IndexView.build([])
    view = base.branched({k: pod_entry(p) for k, p in pods.items()})
    assert view.index is not base.index and not view.overlay and base.valid
    check_view(view, pods)


def test_snapshot_assume_carries_the_index_and_without_branches_it() -> None:
    table = NodeTable.build([node("n0"), node("n1")])
    running = [pod("r0", namespace="ml", node_name="n0", labels={"app": "a"})]
    snap = Snapshot.build(table, running)
    first = snap.pod_index
    placed = snap.assume([(pod("g0", namespace="ml", labels={"app": "b"}), "n1")])
    assert {e.key for e in placed.pod_index.entries()} == {"ml/r0", "ml/g0"}
    assert not first.valid  # moved forward in place; the old snapshot rebuilds when asked again
    assert {e.key for e in snap.pod_index.entries()} == {"ml/r0"}
    rebuilt = Snapshot.build(table, running)
    assert {e.key for e in rebuilt.pod_index.entries()} == {"ml/r0"}
    what_if = placed.without([running[0]])
    assert {e.key for e in what_if.pod_index.entries()} == {"ml/g0"}
    assert {e.key for e in placed.pod_index.entries()} == {"ml/r0", "ml/g0"}


def test_cache_carries_the_index_across_snapshots_like_a_fresh_build() -> None:
    cache = ClusterCache("gang-scheduler")
    cache.load("Node", [node("n0"), node("n1")])
    rng = random.Random(3)
    pods = [random_pod(rng, i, 2) for i in range(10)]
    cache.load("Pod", pods)
    first = cache.snapshot()
    _ = first.pod_index  # built: later snapshots carry it forward
    for p in pods[:3]:
        cache.load_one("Pod", p.model_copy(update={"metadata": p.metadata.model_copy(
            update={"labels": {"app": "c"}})}))
    cache.load("Pod", [p for p in cache.objects["Pod"].values() if p.key != pods[5].key])
    second = cache.snapshot()
    assert second.index_view is not None and second.index_view.valid
    fresh = IndexView.build(pod_entry(p, info.name) for info in second.infos for p in info.pods.values())
    for raw in SELECTORS:
        sel = selector_of(LabelSelector.model_validate(raw))
        assert {e.key for e in second.pod_index.matching(None, sel)} == {e.key for e in fresh.matching(None, sel)}
    assert {e.key for e in second.pod_index.entries()} == {e.key for e in fresh.entries()}


def test_cache_snapshot_carries_namespace_labels() -> None:
    cache = ClusterCache("gang-scheduler")
    events = cache.replace("Namespace", [{"metadata": {"name": "ml", "labels": {"team": "a"}}}])
    assert [(e.kind, e.action.value) for e in events] == [("Namespace", "Add")]
    assert cache.snapshot().namespaces == {"ml": {"team": "a"}}
    assert cache.apply("Namespace", "MODIFIED", {"metadata": {"name": "ml", "labels": {"team": "a"},
                                                              "annotations": {"x": "y"}}}) == []
    cache.apply("Namespace", "MODIFIED", {"metadata": {"name": "ml", "labels": {"team": "b"}}})
    assert cache.snapshot().namespaces == {"ml": {"team": "b"}}


def test_a_snapshot_read_after_the_cache_moved_its_index_on_answers_for_its_own_pods() -> None:
    cache = ClusterCache("gang-scheduler")
    cache.load("Node", [node("n0"), node("n1")])
    cache.load("Pod", [pod("r0", namespace="ml", node_name="n0", labels={"app": "a"})])
    first = cache.snapshot()
    before = first.pod_index
    cache.load_one("Pod", pod("r1", namespace="ml", node_name="n1", labels={"app": "a"}))
    second = cache.snapshot()
    _ = second.pod_index  # moves the shared index forward in place
    assert not before.valid
    sel = selector_of(LabelSelector.model_validate({"matchLabels": {"app": "a"}}))
    assert {e.key for e in first.pod_index.matching(None, sel)} == {"ml/r0"}
    assert {e.key for e in second.pod_index.matching(None, sel)} == {"ml/r0", "ml/r1"}
