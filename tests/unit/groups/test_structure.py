"""Children and heads from the parent links: a missing parent, a cycle, the leaves under a composite."""

from __future__ import annotations

from scheduler.groups.structure import Structure
from scheduler.model.scheduling import CompositePodGroup, GroupKey, PodGroup
from tests.unit.groups.builders import NS, cpg, pg


def structure(pgs: list[PodGroup], cpgs: list[CompositePodGroup]) -> Structure:
    s = Structure({(NS, g.metadata.name): g for g in pgs}, {(NS, c.metadata.name): c for c in cpgs})
    s.dirty = True
    s.ensure()
    return s


def test_a_sound_tree_hangs_from_its_root_and_lists_its_leaves() -> None:
    s = structure([pg("a", parent="mid"), pg("b", parent="top")], [cpg("mid", parent="top"), cpg("top")])
    top = ("CompositePodGroup", (NS, "top"))
    assert s.heads[("PodGroup", (NS, "a"))] == (top, None)
    assert sorted(s.under[top]) == [(NS, "a"), (NS, "b")]
    assert s.leaves_under(GroupKey("CompositePodGroup", NS, "top")) == [(NS, "a"), (NS, "b")]
    assert s.leaves_under(GroupKey("PodGroup", NS, "a")) == [(NS, "a")]
    assert top in s.take_changed() and s.take_changed() == set()


def test_a_missing_parent_makes_the_last_group_found_the_head_with_the_reason() -> None:
    s = structure([pg("a", parent="gone")], [])
    head, why = s.head(("PodGroup", (NS, "a")))
    assert head == ("PodGroup", (NS, "a"))
    assert why == f"parent CompositePodGroup {NS}/gone not found"


def test_a_cycle_hangs_from_its_lexically_first_group_once() -> None:
    s = structure([pg("a", parent="y")], [cpg("x", parent="y"), cpg("y", parent="x")])
    head, why = s.head(("PodGroup", (NS, "a")))
    assert head == ("CompositePodGroup", (NS, "x"))
    assert why == "cycle in parentCompositePodGroupName: x → y → x"


def test_re_parenting_reports_the_old_and_the_new_head_as_changed() -> None:
    a = pg("a", parent="one")
    pgs = {(NS, "a"): a}
    cpgs = {(NS, "one"): cpg("one"), (NS, "two"): cpg("two")}
    s = Structure(pgs, cpgs)
    s.dirty = True
    s.ensure()
    s.take_changed()
    pgs[(NS, "a")] = pg("a", parent="two")
    s.dirty = True
    s.ensure()
    assert s.take_changed() == {("CompositePodGroup", (NS, "one")), ("CompositePodGroup", (NS, "two"))}
