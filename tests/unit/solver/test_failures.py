"""The failure record: per group the attempt that placed the most members, an explained one over an unexplained
one that placed as many."""

from __future__ import annotations

from scheduler.groups.tree import Leaf
from scheduler.model.scheduling import GroupKey
from scheduler.solver.failures import Failures

A = Leaf(key=GroupKey("PodGroup", "ml", "a"), min_count=4, topology_key=None, pending=())
B = Leaf(key=GroupKey("PodGroup", "ml", "b"), min_count=2, topology_key=None, pending=())


def test_the_attempt_that_placed_the_most_members_is_kept() -> None:
    failures = Failures()
    failures.record(A, 2, "two", False, frozenset({"NodeAffinity"}))
    failures.record(A, 1, "one", True, frozenset({"NodeResourcesFit"}))
    failures.record(A, 3, "three", True, frozenset({"NodeResourcesFit"}))
    failures.record(A, 3, "three again", False)
    kept = failures.get(A.key)
    assert kept is not None and (kept.placed, kept.message) == (3, "three")


def test_an_explained_failure_replaces_an_unexplained_one_that_placed_as_many() -> None:
    failures = Failures()
    failures.record(A, 0, "no domain has room", True, explained=False)
    assert failures.unexplained([A.key])
    failures.record(A, 0, "0/3 nodes are available: 3 Insufficient cpu.", True)
    assert not failures.unexplained([A.key, B.key])
    kept = failures.get(A.key)
    assert kept is not None and kept.message.startswith("0/3 nodes")


def test_limited_and_rejectors_are_over_every_group() -> None:
    failures = Failures()
    failures.record(A, 0, "tainted", False, frozenset({"TaintToleration"}))
    assert not failures.resource_limited()
    failures.record(B, 1, "short", True, frozenset({"NodeResourcesFit"}))
    assert failures.resource_limited()
    assert failures.rejectors() == {"TaintToleration", "NodeResourcesFit"}
