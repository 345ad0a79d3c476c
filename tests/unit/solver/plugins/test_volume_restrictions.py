"""VolumeRestrictions: ReadWriteOncePod claims in use (cluster-wide) and legacy disk conflicts (per node), as in
kube-scheduler's volume_restrictions_test.go, plus the gang case: two members naming one RWOP claim."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework import Code, NodeTable, Plan, Snapshot, Unschedulable
from scheduler.groups import build_trees
from scheduler.solver import solve
from scheduler.solver.plugins.volume_restrictions import DISK_CONFLICT, RWOP_CONFLICT, volume_conflict
from tests.unit.groups.builders import NS, pg
from tests.unit.solver.builders import node, pod
from tests.unit.solver.storage_builders import pv, pvc, with_volumes
from tests.unit.solver.volume_kit import members, placed, solve_gang, view_of

NODES = [node("n1"), node("n2")]
RWOP = ["ReadWriteOncePod"]


def bound_rwop(name: str) -> list[Any]:
    claim = pvc(name, namespace=NS, modes=RWOP, volume_name=f"pv-{name}", phase="Bound")
    return [claim, pv(f"pv-{name}", modes=RWOP, phase="Bound", claim=claim)]


def holder(claim: str, node_name: str = "n1") -> Any:
    return with_volumes(pod("holder", namespace=NS, node_name=node_name, scheduler="other", phase="Running"), claim)


def test_a_rwop_claim_in_use_refuses_every_node_and_preemption_may_help() -> None:
    result = solve_gang(NODES, members("g", 1, "data"), bound_rwop("data"), others=[holder("data")])
    assert isinstance(result, Unschedulable)
    assert result.code is Code.UNSCHEDULABLE
    assert result.message == f"gang g: 0/1 placeable (minCount 1); 0/2 nodes are available: 2 {RWOP_CONFLICT}."
    assert result.rejectors == frozenset({"VolumeRestrictions"})


def test_the_holder_removed_in_a_what_if_snapshot_frees_the_claim() -> None:
    pods = members("g", 1, "data")
    others = [holder("data")]
    objects = bound_rwop("data")
    (tree,) = build_trees([*pods, *others], [pg("g", 1)], (), scheduler_name="gang-scheduler").trees
    snapshot = Snapshot.build(NodeTable.build(NODES), [*pods, *others], volumes=view_of(objects, [*pods, *others]))
    assert isinstance(solve(tree, snapshot), Unschedulable)
    assert isinstance(solve(tree, snapshot.without(others)), Plan)


def test_a_finished_holder_does_not_count() -> None:
    done = with_volumes(pod("holder", namespace=NS, node_name="n1", scheduler="other", phase="Succeeded"), "data")
    assert placed(solve_gang(NODES, members("g", 1, "data"), bound_rwop("data"), others=[done]))


def test_two_members_naming_one_rwop_claim_can_never_both_be_placed() -> None:
    result = solve_gang(NODES, members("g", 2, "data"), bound_rwop("data"))
    assert isinstance(result, Unschedulable)
    assert result.message == f"gang g: 1/2 placeable (minCount 2); 0/2 nodes are available: 2 {RWOP_CONFLICT}."


def test_rwop_claims_of_their_own_do_not_conflict_and_keep_one_signature() -> None:
    objects = [pvc(f"data-{i}", namespace=NS, modes=RWOP) for i in range(4)]
    result = solve_gang(NODES, members("g", 4, "data-{i}"), objects)
    assert len(placed(result)) == 4


def ebs(volume_id: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": "disk", "awsElasticBlockStore": {"volumeID": volume_id, "readOnly": read_only}}


def gce(pd: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": "disk", "gcePersistentDisk": {"pdName": pd, "readOnly": read_only}}


def iscsi(iqn: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": "disk", "iscsi": {"targetPortal": "10.0.0.1:3260", "iqn": iqn, "lun": 0, "readOnly": read_only}}


def rbd(monitors: list[str], image: str, pool: str | None = None, read_only: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"monitors": monitors, "image": image, "readOnly": read_only}
    if pool is not None:
        body["pool"] = pool
    return {"name": "disk", "rbd": body}


CONFLICTS = [
    pytest.param(gce("pd-1"), gce("pd-1"), True, id="same-gce-pd"),
    pytest.param(gce("pd-1", True), gce("pd-1", True), False, id="same-gce-pd-both-read-only"),
    pytest.param(gce("pd-1", True), gce("pd-1"), True, id="same-gce-pd-one-read-write"),
    pytest.param(gce("pd-1"), gce("pd-2"), False, id="different-gce-pds"),
    pytest.param(ebs("vol-1", True), ebs("vol-1", True), True, id="same-ebs-volume-even-read-only"),
    pytest.param(ebs("vol-1"), ebs("vol-2"), False, id="different-ebs-volumes"),
    pytest.param(iscsi("iqn.a"), iscsi("iqn.a"), True, id="same-iscsi-iqn"),
    pytest.param(iscsi("iqn.a", True), iscsi("iqn.a", True), False, id="same-iscsi-iqn-both-read-only"),
    pytest.param(rbd(["m1", "m2"], "img"), rbd(["m2", "m3"], "img"), True, id="rbd-overlapping-monitors"),
    pytest.param(rbd(["m1"], "img"), rbd(["m2"], "img"), False, id="rbd-disjoint-monitors"),
    pytest.param(rbd(["m1"], "img", pool="a"), rbd(["m1"], "img", pool="b"), False, id="rbd-other-pool"),
    pytest.param(rbd(["m1"], "img"), rbd(["m1"], "img", pool="rbd"), True, id="rbd-pool-defaults-to-rbd"),
    pytest.param(rbd(["m1"], "img", read_only=True), rbd(["m1"], "img", read_only=True), False,
                 id="rbd-both-read-only"),
]


@pytest.mark.parametrize(("mine", "theirs", "conflict"), CONFLICTS)
def test_disk_conflicts_follow_kubes_is_volume_conflict(mine: dict[str, Any], theirs: dict[str, Any],
                                                        conflict: bool) -> None:
    a = with_volumes(pod("a"), inline=[mine]).spec.volumes[0]
    b = with_volumes(pod("b"), inline=[theirs]).spec.volumes[0]
    assert volume_conflict(a, b) is conflict
    nodes = [node("n1")]
    other = with_volumes(pod("other", namespace=NS, node_name="n1", scheduler="other", phase="Running"),
                         inline=[theirs])
    result = solve_gang(nodes, [with_volumes(pod("g-0", namespace=NS, group="g"), inline=[mine])], [],
                        others=[other])
    if conflict:
        assert isinstance(result, Unschedulable) and result.code is Code.UNSCHEDULABLE
        assert result.message == f"gang g: 0/1 placeable (minCount 1); 0/1 nodes are available: 1 {DISK_CONFLICT}."
    else:
        assert placed(result) == {"g-0": "n1"}


def test_members_mounting_one_read_write_disk_spread_one_per_node() -> None:
    pods = [with_volumes(pod(f"g-{i}", namespace=NS, group="g"), inline=[ebs("vol-1")]) for i in range(2)]
    assert sorted(placed(solve_gang(NODES, pods, [])).values()) == ["n1", "n2"]
    three = [with_volumes(pod(f"g-{i}", namespace=NS, group="g"), inline=[ebs("vol-1")]) for i in range(3)]
    result = solve_gang(NODES, three, [])
    assert isinstance(result, Unschedulable)
    assert result.message == f"gang g: 2/3 placeable (minCount 3); 0/2 nodes are available: 2 {DISK_CONFLICT}."
