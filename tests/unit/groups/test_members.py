"""Pods by the PodGroup they name: live members, finished ones remembered, scheduler-plugins' counts."""

from __future__ import annotations

from scheduler.groups.members import Members
from scheduler.model.coscheduling import MemberCounts
from tests.unit.solver.builders import pod

NS = "ml"


def test_a_member_moves_between_groups_and_is_forgotten_when_it_leaves() -> None:
    members = Members()
    p = pod("p", namespace=NS, group="g")
    members.add((NS, "g"), p.key, p)
    assert members.of(NS, "g") == {p.key: p}
    assert members.remove(p.key) == (NS, "g")
    assert members.of(NS, "g") == {}
    assert members.remove(p.key) is None


def test_replace_puts_a_new_object_in_place_only_for_a_member() -> None:
    members = Members()
    old, new = pod("p", namespace=NS, group="g", cpu="1"), pod("p", namespace=NS, group="g", cpu="2")
    assert members.replace(old.key, new) is None  # not a member yet: nothing done
    members.add((NS, "g"), old.key, old)
    assert members.replace(old.key, new) == (NS, "g")
    assert members.of(NS, "g")[old.key] is new


def test_succeeded_members_are_remembered_once_and_counted_while_they_exist() -> None:
    members = Members()
    running = pod("r", namespace=NS, group="g", node_name="n1", phase="Running")
    done = pod("d", namespace=NS, group="g", node_name="n1", phase="Succeeded")
    failed = pod("f", namespace=NS, group="g", node_name="n1", phase="Failed")
    members.add((NS, "g"), running.key, running)
    assert members.finished(done.key, done) == (NS, "g")
    assert members.finished(done.key, done) is None  # seen before: the tree does not change again
    assert members.finished(failed.key, failed) is None  # Failed is counted, not remembered as done
    assert members.counts(NS, "g") == MemberCounts(pods=3, bound=3, running=1, succeeded=1, failed=1)
    members.finished(done.key, None)  # deleted: no longer counted, still remembered
    assert members.counts(NS, "g") == MemberCounts(pods=2, bound=2, running=1, succeeded=0, failed=1)
    assert members.succeeded[(NS, "g")] == {done.key}
    members.group_deleted((NS, "g"))
    assert (NS, "g") not in members.succeeded


def test_bound_counts_the_live_members_on_a_node_through_adds_replacements_and_removals() -> None:
    members = Members()
    waiting, placed = pod("a", namespace=NS, group="g"), pod("b", namespace=NS, group="g", node_name="n1")
    members.add((NS, "g"), waiting.key, waiting)
    members.add((NS, "g"), placed.key, placed)
    assert members.bound(NS, "g") == 1
    members.replace(waiting.key, pod("a", namespace=NS, group="g", node_name="n2"))
    assert members.bound(NS, "g") == 2
    members.add((NS, "g"), placed.key, pod("b", namespace=NS, group="g"))  # the same key again, unbound now
    assert members.bound(NS, "g") == 1
    members.remove(waiting.key)
    assert members.bound(NS, "g") == 0
    assert members.bound(NS, "other") == 0
