"""Solving one root on a small cluster, for the plugin tests: running pods, pending pods, groups, namespaces."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from scheduler.framework import NodeTable, Plan, Snapshot, SolverConfig, Unschedulable
from scheduler.groups import TreeState, build_trees
from scheduler.model import CompositePodGroup, Node, Pod, PodGroup
from scheduler.solver import solve
from tests.unit.solver.builders import HOSTNAME, ZONE, node

NS = "ml"


def zoned_nodes(zones: Mapping[str, int], cpu: str = "8") -> list[Node]:
    """``zones[z]`` nodes in zone ``z``, named ``<z>-<i>``, each with its hostname label."""
    return [node(f"{z}-{i}", cpu=cpu, labels={HOSTNAME: f"{z}-{i}", ZONE: z}) for z, n in zones.items()
            for i in range(n)]


def solve_root(nodes: Sequence[Node], pending: Sequence[Pod], running: Iterable[Pod] = (),
               groups: Sequence[PodGroup] = (), composites: Sequence[CompositePodGroup] = (),
               namespaces: Mapping[str, Mapping[str, str]] | None = None,
               config: SolverConfig | None = None) -> Plan | Unschedulable:
    """Solve the one READY tree made of ``pending`` (and ``groups``) on a cluster running ``running``."""
    running = list(running)
    forest = build_trees([*running, *pending], groups, composites, scheduler_name="gang-scheduler")
    (tree,) = [t for t in forest.trees if t.state is TreeState.READY]
    snapshot = Snapshot.build(NodeTable.build(nodes), [*running, *pending], namespaces=namespaces)
    return solve(tree, snapshot, config)


def placed(result: Plan | Unschedulable) -> dict[str, str]:
    """Pod name → node of a plan (fails the test with the reason when it is not a plan)."""
    assert isinstance(result, Plan), getattr(result, "message", result)
    return {p.metadata.name: n for p, n in result.placements}


def per_node(result: Plan | Unschedulable) -> Counter[str]:
    return Counter(placed(result).values())


def message(result: Plan | Unschedulable) -> str:
    assert isinstance(result, Unschedulable), f"placed: {placed(result)}"
    return result.message
