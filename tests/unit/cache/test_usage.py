"""NodeUsage kept per event equals NodeUsage built from the final pods, also when a pod stays on its node (the
watch confirming a bind, a status update, an in-place resize of its requests: KEP-1287) — the path that
replaces the pod in its NodeInfo instead of removing and adding it."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import numpy as np
import pytest

from scheduler.cache.usage import LOG_ROWS_PER_NODE, NodeUsage
from scheduler.framework.node_rows import NodeRows
from scheduler.model.node import Node
from scheduler.model.pod import Pod

NODES = [Node.model_validate({"metadata": {"name": f"n{i}"},
                              "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}}})
         for i in range(4)]


def pod(name: str, node: str | None, cpu: str, phase: str = "Running", rv: int = 1) -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}
    if node:
        spec["nodeName"] = node
    return Pod.model_validate({"metadata": {"name": name, "namespace": "ns", "resourceVersion": str(rv)},
                               "spec": spec, "status": {"phase": phase}})


def usage_of(pods: dict[str, Pod | None]) -> NodeUsage:
    usage = NodeUsage()
    usage.set_nodes(NODES)
    for key, p in pods.items():
        if p is not None:
            usage.set_pod(key, p)
    return usage


@pytest.mark.parametrize("seed", range(20))
def test_usage_kept_through_changes_equals_usage_built_from_the_final_pods(seed: int) -> None:
    rng = random.Random(seed)
    usage = usage_of({})
    usage.snapshot()  # a snapshot taken: later changes are recorded to carry its pod index forward
    final: dict[str, Pod | None] = {}
    for step in range(200):
        name = f"p{rng.randrange(12)}"
        key = f"ns/{name}"
        before = final.get(key)
        roll = rng.random()
        if roll < 0.1:
            new = None  # deleted
        elif before is not None and before.spec.node_name and roll < 0.6:  # stays on its node
            new = pod(name, before.spec.node_name, rng.choice(["1", "2", "500m"]) if roll < 0.3 else
                      str(before.requests["cpu"] // 1000 or 1), rv=step)
        elif roll < 0.7:
            new = pod(name, None, "1", phase="Pending", rv=step)
        elif roll < 0.75 and before is not None:
            new = pod(name, before.spec.node_name, "1", phase="Succeeded", rv=step)
        else:
            new = pod(name, rng.choice(NODES).name, rng.choice(["1", "2", "3"]), rv=step)
        usage.set_pod(key, new)
        final[key] = new
        if step % 17 == 0:
            usage.snapshot()
    fresh = usage_of(final)
    kept, built = usage.snapshot(), fresh.snapshot()
    assert np.array_equal(kept.used, built.used)
    assert [dict(i.pods) for i in kept.infos] == [dict(i.pods) for i in built.infos]


@pytest.mark.parametrize("seed", range(10))
def test_the_change_log_names_every_row_whose_node_info_changed(seed: int) -> None:
    """Between two snapshots, every row whose NodeInfo is another object is in the log's rows since the first
    snapshot's mark; a snapshot with other NodeInfos, or a mark from before the node table changed, tells
    nothing (the reader compares every row), and so does a mark the log has grown too long since (it starts over
    at ``LOG_ROWS_PER_NODE`` rows per node)."""
    rng = random.Random(seed)
    usage = usage_of({})
    before = usage.snapshot()
    _, mark = before.rows_changed(None)
    assert mark is not None
    for step in range(rng.randrange(1, LOG_ROWS_PER_NODE * len(NODES) // 2)):  # a change logs at most two rows
        name = f"p{rng.randrange(12)}"
        usage.set_pod(f"ns/{name}", None if rng.random() < 0.2 else
                      pod(name, rng.choice([None, *(n.name for n in NODES)]), "1", rv=step))
        if rng.random() < 0.1:
            usage.snapshot()  # snapshots in between do not matter
    after = usage.snapshot()
    rows, _ = after.rows_changed(mark)
    assert rows is not None
    moved = {row for row, (a, b) in enumerate(zip(before.infos, after.infos, strict=True)) if a is not b}
    assert moved <= set(rows)
    other = dataclasses.replace(after, infos=NodeRows(after.infos))  # equal NodeInfos, another sequence
    assert other.rows_changed(mark) == (None, None)
    for step in range(LOG_ROWS_PER_NODE * (len(NODES) + 1)):
        usage.set_pod("ns/mover", pod("mover", NODES[step % len(NODES)].name, "1", rv=step))
    assert usage.snapshot().rows_changed(mark)[0] is None
    usage.set_nodes(NODES[:3])
    assert usage.snapshot().rows_changed(mark)[0] is None
