"""Snapshots that share their unchanged rows equal snapshots built afresh.

The cache's snapshots (:meth:`NodeUsage.snapshot`), :meth:`Snapshot.assume` and :meth:`Snapshot.without` derive
their NodeInfos (:class:`~scheduler.framework.node_rows.NodeRows`) from the previous ones, sharing every chunk of
rows they do not change. Properties, under random sequences of pod changes, snapshots, plans assumed and pods
removed, over clusters of several chunks:

1. every snapshot handed out equals :meth:`Snapshot.build` from the pods the cache held at that moment (usage,
   NodeInfos row by row), and still does after every later change (nothing shared is changed in place);
2. a snapshot derived by ``assume`` or ``without`` equals one built afresh from the pods it should hold;
3. :meth:`NodeRows.replaced` equals replacing in a list, and leaves the sequence it came from as it was.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.cache.usage import NodeUsage
from scheduler.framework.node_info import NodeInfo
from scheduler.framework.node_rows import CHUNK, NodeRows
from scheduler.framework.snapshot import Snapshot
from scheduler.model.node import Node
from scheduler.model.pod import Pod

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

NODES = [Node.model_validate({"metadata": {"name": f"n{i:03d}"},
                              "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}}})
         for i in range(2 * CHUNK + 7)]
"""Two full chunks and part of a third."""
PODS = 40
CPUS = ("1", "2", "500m")


def pod(name: str, node: str | None, cpu: str, rv: int) -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}
    if node:
        spec["nodeName"] = node
    return Pod.model_validate({"metadata": {"name": name, "namespace": "ns", "resourceVersion": str(rv)},
                               "spec": spec, "status": {"phase": "Running" if node else "Pending"}})


def same(got: Snapshot, want: Snapshot, objects: bool = True) -> None:
    """Equal usage and NodeInfos row by row: the same pod objects (``objects``), else the same pod keys (a plan
    assumed holds its pods as planned, a snapshot built holds them bound)."""
    assert np.array_equal(got.used, want.used)
    assert len(got.infos) == len(want.infos)
    assert [info.name for info in got.infos] == [info.name for info in want.infos]
    if objects:
        assert [{k: id(p) for k, p in info.pods.items()} for info in got.infos] == \
               [{k: id(p) for k, p in info.pods.items()} for info in want.infos]
    else:
        assert [sorted(info.pods) for info in got.infos] == [sorted(info.pods) for info in want.infos]
    assert [got.infos[i].name for i in range(len(got.infos))] == [n.name for n in NODES]  # indexing agrees


nodes = st.sampled_from([n.name for n in NODES])
change = st.tuples(st.integers(0, PODS - 1), st.none() | nodes, st.sampled_from(CPUS))
step = st.one_of(
    st.tuples(st.just("set"), change),
    st.tuples(st.just("snapshot"), st.none()),
    st.tuples(st.just("assume"), st.lists(st.tuples(st.integers(0, PODS - 1), nodes), max_size=6)),
    st.tuples(st.just("without"), st.lists(st.integers(0, PODS - 1), max_size=6)),
)


@SETTINGS
@given(st.lists(step, min_size=1, max_size=60))
def test_shared_row_snapshots_equal_snapshots_built_afresh(steps: list[tuple[str, Any]]) -> None:
    usage = NodeUsage()
    usage.set_nodes(NODES)
    table = usage.table
    held: dict[str, Pod] = {}
    handed: list[tuple[Snapshot, Snapshot]] = []  # each snapshot handed out, and one built from the same pods
    for rv, (kind, arg) in enumerate(steps, start=1):
        if kind == "set":
            i, node, cpu = arg
            new = pod(f"p{i}", node, cpu, rv)
            usage.set_pod(new.key, new)
            held[new.key] = new
        elif kind == "snapshot":
            snap = usage.snapshot()
            handed.append((snap, Snapshot.build(table, held.values())))
        elif kind == "assume" and handed:
            base, built = handed[-1]
            plan = [(pod(f"q{i}", None, "1", rv), node) for i, node in dict(arg).items()]
            bound = [pod(p.metadata.name, node, "1", rv) for p, node in plan]
            same(base.assume(plan), Snapshot.build(table, [*(p for i in built.infos for p in i.pods.values()),
                                                           *bound]), objects=False)
        elif kind == "without" and handed:
            base, built = handed[-1]
            keys = {f"ns/p{i}" for i in arg}
            gone = [p for info in base.infos for k, p in info.pods.items() if k in keys]
            same(base.without(gone), Snapshot.build(table, [p for i in built.infos for k, p in i.pods.items()
                                                            if k not in keys]))
        for got, want in handed:  # what was handed out never changes
            same(got, want)
    same(usage.snapshot(), Snapshot.build(table, held.values()))


@SETTINGS
@given(st.integers(0, 3 * CHUNK), st.lists(st.dictionaries(st.integers(0, 3 * CHUNK), st.integers(0, 9)), max_size=8))
def test_replaced_rows_equal_a_list_replaced(size: int, rounds: list[dict[int, int]]) -> None:
    infos = [NodeInfo(f"n{i}") for i in range(size)]
    spare = [NodeInfo(f"spare{j}") for j in range(10)]
    rows = NodeRows(infos)
    versions = [(rows, list(infos))]
    for edits in rounds:
        changes = {row: spare[j] for row, j in edits.items() if row < size}
        rows = rows.replaced(changes)
        infos = list(infos)
        for row, info in changes.items():
            infos[row] = info
        versions.append((rows, infos))
    for got, want in versions:
        assert len(got) == len(want)
        assert all(a is b for a, b in zip(got, want, strict=True))
        assert all(got[i] is want[i] for i in range(len(want)))
        assert all(got[-1 - i] is want[-1 - i] for i in range(len(want)))
        assert list(got[1:5]) == want[1:5]
