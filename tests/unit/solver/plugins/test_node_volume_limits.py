"""NodeVolumeLimits: CSI attach limits from CSINode (kube-scheduler's csi_test.go cases) for a gang whose members
each bring volumes, counting what the node already has and what the plan placed there."""

from __future__ import annotations

from typing import Any

from scheduler.framework import Code, Unschedulable
from scheduler.model import Node
from scheduler.solver.plugins.node_volume_limits import MAX_VOLUME_COUNT
from tests.unit.groups.builders import NS
from tests.unit.solver.builders import node, pod
from tests.unit.solver.storage_builders import EBS, csi_node, pv, pvc, with_volumes
from tests.unit.solver.volume_kit import members, placed, solve_gang

NODES = [node("n1"), node("n2")]


def bound(name: str, handle: str, driver: str = EBS) -> list[Any]:
    claim = pvc(name, namespace=NS, volume_name=f"pv-{name}", phase="Bound")
    return [claim, pv(f"pv-{name}", phase="Bound", claim=claim, csi=(driver, handle))]


def running(name: str, node_name: str, *claims: str) -> Any:
    return with_volumes(pod(name, namespace=NS, node_name=node_name, scheduler="other", phase="Running"), *claims)


def test_members_bringing_new_volumes_fill_each_node_up_to_its_limit() -> None:
    objects = [*(pvc(f"data-{i}", namespace=NS) for i in range(3)), *bound("old", "vol-old"),
               csi_node("n1", limit=2), csi_node("n2", limit=2)]
    result = solve_gang(NODES, members("g", 3, "data-{i}"), objects, others=[running("old", "n1", "old")])
    nodes = placed(result)
    assert sorted(nodes.values()).count("n1") == 1 and sorted(nodes.values()).count("n2") == 2


def test_a_full_node_refuses_with_kubes_reason_and_preemption_may_help() -> None:
    objects = [pvc("data-0", namespace=NS), *bound("old", "vol-old"), csi_node("n1", limit=1)]
    result = solve_gang(NODES[:1], members("g", 1, "data-{i}"), objects, others=[running("old", "n1", "old")])
    assert isinstance(result, Unschedulable)
    assert result.code is Code.UNSCHEDULABLE
    assert result.message == f"gang g: 0/1 placeable (minCount 1); 0/1 nodes are available: 1 {MAX_VOLUME_COUNT}."
    assert result.rejectors == frozenset({"NodeVolumeLimits"})


def test_a_volume_the_node_already_has_counts_once() -> None:
    objects = [*bound("shared", "vol-1"), csi_node("n1", limit=1)]
    result = solve_gang(NODES[:1], members("g", 1, "shared"), objects, others=[running("old", "n1", "shared")])
    assert placed(result) == {"g-0": "n1"}


def test_other_drivers_and_unlimited_nodes_are_not_limited() -> None:
    objects = [*(pvc(f"data-{i}", namespace=NS) for i in range(3)), csi_node("n1", limit=0, driver="other.csi"),
               csi_node("n2")]
    assert len(placed(solve_gang(NODES, members("g", 3, "data-{i}"), objects))) == 3


def test_the_node_allocatable_limit_counts_where_the_csinode_gives_none() -> None:
    raw = node("n1").model_dump(by_alias=True, mode="json")
    raw["status"]["allocatable"][f"attachable-volumes-csi-{EBS}"] = "1"
    one = Node.model_validate(raw)
    objects = [*(pvc(f"data-{i}", namespace=NS) for i in range(2)), csi_node("n1")]
    result = solve_gang([one], members("g", 2, "data-{i}"), objects)
    assert isinstance(result, Unschedulable)
    assert result.message.startswith("gang g: 1/2 placeable (minCount 2)")


def test_claims_without_a_class_or_with_an_in_tree_pv_are_not_counted() -> None:
    claim = pvc("legacy", namespace=NS, volume_name="pv-legacy", phase="Bound")
    objects = [claim, pv("pv-legacy", phase="Bound", claim=claim), csi_node("n1", limit=0)]
    assert placed(solve_gang(NODES[:1], members("g", 1, "legacy"), objects)) == {"g-0": "n1"}
