"""The group index kept up to date change by change equals one built from the final objects.

``GroupIndex`` (``scheduler/groups/index.py``) rebuilds only the trees a change touches (``refresh``): a pod added or
gone, a PodGroup or CompositePodGroup created, changed or deleted — children that arrive before their parent, a
parent that arrives later or goes away, a group that moves under another. After any sequence of such changes, with
``refresh`` called between some of them, its trees, empty trees and orphans must be exactly what ``build_trees``
assembles from the objects as they are at the end — no root left behind by a group that got a parent, none missing.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.groups import GroupIndex, build_trees
from scheduler.model import CompositePodGroup, Pod, PodGroup
from tests.unit.groups.builders import NS, cpg, pg

OURS = "gang-scheduler"
GROUPS = ("a", "b", "c")
PARENTS = ("x", "y")


def _pod(name: str, group: str | None, node: str | None) -> Pod:
    spec: dict[str, Any] = {"schedulerName": OURS, "containers": [{"name": "c"}]}
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    if node is not None:
        spec["nodeName"] = node
    return Pod.model_validate({"metadata": {"name": name, "namespace": NS, "uid": name,
                                            "creationTimestamp": "2026-01-01T00:00:00Z"},
                               "spec": spec, "status": {"phase": "Running" if node else "Pending"}})


change = st.one_of(
    st.tuples(st.just("pod"), st.sampled_from([f"p{i}" for i in range(6)]),
              st.one_of(st.none(), st.sampled_from(GROUPS)), st.one_of(st.none(), st.just("n0")), st.booleans()),
    st.tuples(st.just("pg"), st.sampled_from(GROUPS), st.integers(1, 3),
              st.one_of(st.none(), st.sampled_from(PARENTS)), st.booleans()),
    st.tuples(st.just("cpg"), st.sampled_from(PARENTS), st.integers(1, 2),
              st.one_of(st.none(), st.sampled_from(PARENTS)), st.booleans()),
    st.tuples(st.just("refresh"), st.none(), st.none(), st.none(), st.none()),
)


def _view(forest: Any) -> tuple[Any, ...]:
    return (sorted((str(t.key), t.state.value, t.message, t.priority) for t in forest.trees),
            sorted((str(t.key), t.state.value, t.message) for t in forest.empty),
            sorted((o.pod.key, o.message) for o in forest.orphans))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(change, max_size=25))
def test_the_index_after_any_changes_equals_one_built_from_the_final_objects(
        changes: list[tuple[str, Any, Any, Any, Any]]) -> None:
    index = GroupIndex(OURS)
    pods: dict[str, Pod] = {}
    pgs: dict[str, PodGroup] = {}
    cpgs: dict[str, CompositePodGroup] = {}
    for kind, name, a, b, present in changes:
        if kind == "refresh":
            index.refresh()
        elif kind == "pod":
            if present:
                pods[name] = _pod(name, a, b)
            else:
                pods.pop(name, None)
            index.set_pod(f"{NS}/{name}", pods.get(name))
        elif kind == "pg":
            if present:
                pgs[name] = pg(name, a, parent=b)
            else:
                pgs.pop(name, None)
            index.set_podgroup((NS, name), pgs.get(name))
        else:
            if present and b != name:
                cpgs[name] = cpg(name, a, parent=b)
            else:
                cpgs.pop(name, None)
            index.set_composite((NS, name), cpgs.get(name))
    fresh = build_trees(pods.values(), pgs.values(), cpgs.values(), scheduler_name=OURS)
    assert _view(index.forest()) == _view(fresh)
