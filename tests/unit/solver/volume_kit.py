"""Solving a gang whose pods mount volumes: a snapshot with a storage view, the tree of one root, the result."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from scheduler.framework import NodeTable, Plan, Snapshot, SolverConfig, Unschedulable
from scheduler.framework.storage_view import StorageView
from scheduler.groups import TreeState, build_trees
from scheduler.model import Node, Pod, PodGroup
from scheduler.model.storage import CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass
from scheduler.solver import solve
from tests.unit.groups.builders import NS, pg
from tests.unit.solver.builders import pod
from tests.unit.solver.storage_builders import storage_class, with_volumes

StorageObject = PersistentVolumeClaim | PersistentVolume | StorageClass | CSINode


def view_of(objects: Iterable[StorageObject], pods: Iterable[Pod]) -> StorageView:
    objs = list(objects)
    return StorageView.build(claims=[o for o in objs if isinstance(o, PersistentVolumeClaim)],
                             volumes=[o for o in objs if isinstance(o, PersistentVolume)],
                             classes=[o for o in objs if isinstance(o, StorageClass)],
                             csi_nodes=[o for o in objs if isinstance(o, CSINode)], pods=pods)


def snapshot_of(nodes: Sequence[Node], pods: Sequence[Pod], objects: Iterable[StorageObject]) -> Snapshot:
    return Snapshot.build(NodeTable.build(nodes), pods, volumes=view_of(objects, pods))


def members(group: str, n: int, *claims: str, cpu: str = "1") -> list[Pod]:
    """``n`` pods of ``group`` in namespace ``ml``; each names the claims ``claims`` formatted with its index
    (``"data-{i}"`` gives pod 0 ``data-0``), like a StatefulSet's ``volumeClaimTemplates``."""
    return [with_volumes(pod(f"{group}-{i}", namespace=NS, group=group, cpu=cpu), *(c.format(i=i) for c in claims))
            for i in range(n)]


def solve_gang(nodes: Sequence[Node], pods: Sequence[Pod], objects: Iterable[StorageObject], *,
               groups: Sequence[PodGroup] | None = None, others: Sequence[Pod] = (),
               config: SolverConfig | None = None) -> Plan | Unschedulable:
    """Solve the one root of ``pods`` (their PodGroup is a gang of all of them unless ``groups`` is given);
    ``others``: pods already on nodes (usage and claim users); the class ``fast`` is added if absent."""
    objs = list(objects)
    if not any(isinstance(o, StorageClass) and o.name == "fast" for o in objs):
        objs.append(storage_class())
    names = sorted({p.group_name for p in pods if p.group_name})
    pgs = list(groups) if groups is not None else [pg(n, sum(p.group_name == n for p in pods)) for n in names]
    everything = [*pods, *others]
    (tree,) = [t for t in build_trees(everything, pgs, (), scheduler_name="gang-scheduler").trees]
    assert tree.state is TreeState.READY, tree.message
    return solve(tree, snapshot_of(nodes, everything, objs), config)


def placed(result: Plan | Unschedulable) -> dict[str, str]:
    assert isinstance(result, Plan), result
    return {p.metadata.name: n for p, n in result.placements}
