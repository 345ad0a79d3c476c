"""The failure record: per group the attempt that placed the most members, an explained one over an unexplained
one that placed as many."""

from __future__ import annotations

from scheduler.groups.tree import Composite, Leaf
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
    first = failures.get(A.key)
    assert first is not None and not first.explained
    failures.record(A, 0, "0/3 nodes are available: 3 Insufficient cpu.", True)
    kept = failures.get(A.key)
    assert kept is not None and kept.explained and kept.message.startswith("0/3 nodes")


def test_limited_and_rejectors_are_over_every_group() -> None:
    failures = Failures()
    failures.record(A, 0, "tainted", False, frozenset({"TaintToleration"}))
    assert not failures.resource_limited()
    failures.record(B, 1, "short", True, frozenset({"NodeResourcesFit"}))
    assert failures.resource_limited()
    assert failures.rejectors() == {"TaintToleration", "NodeResourcesFit"}


C = Composite(key=GroupKey("CompositePodGroup", "ml", "c"), min_group_count=2, topology_key="zone", children=(A, B))


def test_a_composites_failure_keeps_its_attempts_failures_and_not_those_of_another() -> None:
    """Two attempts of ``c`` (two zones): ``a`` fails in the first, ``b`` in the second, where ``c`` comes closer;
    read as attempted, ``c``'s children are those of the second attempt, ``a`` placed there."""
    failures = Failures()
    with failures.attempt(C):
        failures.record(A, 1, "a in zone 1", True)
        failures.record(C, 0, "c: 0/2 in zone 1", True)
    with failures.attempt(C):
        failures.record(B, 0, "b in zone 2", True)
        failures.record(C, 1, "c: 1/2 in zone 2", True, satisfied=frozenset({A.key}))
    assert {k.name: f.message for k, f in failures.as_attempted(C).items()} == {"c": "c: 1/2 in zone 2",
                                                                               "b": "b in zone 2"}
    assert failures.get(A.key) is not None  # the best overall is still kept


def test_what_is_tried_while_an_attempts_placement_is_held_is_not_that_attempts() -> None:
    """A placement of ``c`` found and held (yielded to its parent): a failure recorded meanwhile is the parent's
    business; reading as attempted while it is held gives the held attempt's own."""
    failures = Failures()
    with failures.attempt(C) as attempt:
        failures.record(B, 0, "b before the hold", True)
        with attempt.hold():
            failures.record(B, 1, "b while held", True)
            assert failures.as_attempted(C)[B.key].message == "b before the hold"
    overall = failures.get(B.key)
    assert overall is not None and overall.message == "b while held"
