"""VolumeBinding in the gang search: kube-scheduler's volumebinding cases (volume_binding_test.go, binder_test.go
``TestFindPodVolumes*``), with its reasons, plus what a gang adds (PVs shared out across members, shared claims)."""

from __future__ import annotations

import pytest

from scheduler.framework import Code, NodeTable, Plan, Snapshot, SolverConfig, Unschedulable
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.plan import VolumeClaimBinding
from scheduler.model.storage import SELECTED_NODE
from scheduler.solver.plugins import DEFAULT_PROFILE
from scheduler.solver.plugins.volume_binding import BIND_CONFLICT, NODE_CONFLICT, PLUGIN, PV_NOT_EXIST
from scheduler.solver.plugins.volume_claims import UNBOUND_IMMEDIATE
from tests.unit.groups.builders import NS
from tests.unit.solver.builders import node, pod
from tests.unit.solver.storage_builders import ZONE, pv, pvc, storage_class, with_volumes
from tests.unit.solver.volume_kit import members, placed, solve_gang, view_of

NODES = [node("n1", labels={ZONE: "a", "kubernetes.io/hostname": "n1"}),
         node("n2", labels={ZONE: "b", "kubernetes.io/hostname": "n2"})]
LOCAL = storage_class("local", provisioner="kubernetes.io/no-provisioner")


def claim(name: str, **kw: object) -> object:
    return pvc(name, namespace=NS, **kw)  # type: ignore[arg-type]


# -- PreFilter: the pod waits ------------------------------------------------------------------------------

WAITS = [
    pytest.param([], 'persistentvolumeclaim "data-0" not found', id="claim-does-not-exist"),
    pytest.param([claim("data-0", phase="Lost", volume_name="pv-gone")],
                 'persistentvolumeclaim "data-0" bound to non-existent persistentvolume "pv-gone"', id="claim-lost"),
    pytest.param([claim("data-0", deleting=True)], 'persistentvolumeclaim "data-0" is being deleted',
                 id="claim-being-deleted"),
    pytest.param([claim("data-0", storage_class="std"), storage_class("std", mode="Immediate")], UNBOUND_IMMEDIATE,
                 id="unbound-claim-of-an-immediate-class"),
    pytest.param([claim("data-0", storage_class="missing")], UNBOUND_IMMEDIATE,
                 id="unbound-claim-of-a-class-that-does-not-exist-counts-as-immediate"),
    pytest.param([claim("data-0", storage_class="")], UNBOUND_IMMEDIATE, id="unbound-claim-without-a-class"),
    pytest.param([claim("data-0", volume_name="pv-1")], UNBOUND_IMMEDIATE,
                 id="volume-name-set-before-the-pv-controller-finished-is-not-bound"),
]


@pytest.mark.parametrize(("objects", "reason"), WAITS)
def test_a_pod_whose_claims_are_not_usable_waits_with_kubes_reason(objects: list[object], reason: str) -> None:
    result = solve_gang(NODES, members("g", 1, "data-{i}"), objects)  # type: ignore[arg-type]
    assert isinstance(result, Unschedulable)
    assert result.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert result.message == f"gang g: 0/1 placeable (minCount 1); {reason}"
    assert result.rejectors == frozenset({"VolumeBinding"})


def test_an_ephemeral_volume_waits_for_its_claim_and_for_the_claim_to_be_the_pods() -> None:
    worker = with_volumes(pod("w-0", namespace=NS, group="g"), uid="u-0",
                          ephemeral={"scratch": {"storageClassName": "fast"}})
    missing = solve_gang(NODES, [worker], [])
    assert isinstance(missing, Unschedulable)
    assert missing.message.endswith(
        'waiting for ephemeral volume controller to create the persistentvolumeclaim "w-0-scratch"')
    foreign = solve_gang(NODES, [worker], [claim("w-0-scratch")])
    assert isinstance(foreign, Unschedulable)
    assert foreign.message.endswith("PVC ml/w-0-scratch was not created for pod ml/w-0 (pod is not owner)")
    owned = solve_gang(NODES, [worker], [claim("w-0-scratch", owner=worker)])
    assert isinstance(owned, Plan) and [v.claim for v in owned.volumes] == ["ml/w-0-scratch"]


# -- Filter: bound claims --------------------------------------------------------------------------------


def test_a_bound_claims_pv_node_affinity_restricts_the_nodes() -> None:
    data = claim("data-0", volume_name="pv-1", phase="Bound")
    result = solve_gang(NODES, members("g", 1, "data-{i}"), [data, pv("pv-1", zone="b", phase="Bound", claim=data)])
    assert placed(result) == {"g-0": "n2"}
    assert isinstance(result, Plan) and result.volumes == ()  # nothing to write for a bound claim


def test_nodes_a_bound_pv_does_not_admit_say_so_and_cannot_be_resolved() -> None:
    data = claim("data-0", volume_name="pv-1", phase="Bound")
    result = solve_gang(NODES[:1], members("g", 1, "data-{i}"),
                        [data, pv("pv-1", zone="b", phase="Bound", claim=data)])
    assert isinstance(result, Unschedulable)
    assert result.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert result.message == f"gang g: 0/1 placeable (minCount 1); 0/1 nodes are available: 1 {NODE_CONFLICT}."


def test_a_claim_bound_to_a_pv_that_does_not_exist_refuses_every_node() -> None:
    result = solve_gang(NODES, members("g", 1, "data-{i}"), [claim("data-0", volume_name="pv-1", phase="Bound")])
    assert isinstance(result, Unschedulable)
    assert result.message == f"gang g: 0/1 placeable (minCount 1); 0/2 nodes are available: 2 {PV_NOT_EXIST}."


# -- Filter: WaitForFirstConsumer claims ----------------------------------------------------------------


def test_a_provisioned_claim_goes_where_the_class_topology_allows_and_is_bound_there() -> None:
    result = solve_gang(NODES, members("g", 1, "data-{i}"), [claim("data-0"), storage_class(zones=["b"])])
    assert placed(result) == {"g-0": "n2"}
    assert isinstance(result, Plan)
    assert result.volumes == (VolumeClaimBinding("ml/data-0", "n2", None, ("ml/g-0",)),)


def test_a_claim_no_node_can_provision_or_match_refuses_every_node_with_the_bind_conflict() -> None:
    result = solve_gang(NODES, members("g", 1, "data-{i}"), [claim("data-0", storage_class="local"), LOCAL])
    assert isinstance(result, Unschedulable)
    assert result.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert result.message == f"gang g: 0/1 placeable (minCount 1); 0/2 nodes are available: 2 {BIND_CONFLICT}."


def test_local_pvs_are_shared_out_one_per_member_and_the_gang_follows_them() -> None:
    objects = [claim("data-0", storage_class="local"), claim("data-1", storage_class="local"), LOCAL,
               pv("local-n1", storage_class="local", node="n1"), pv("local-n2", storage_class="local", node="n2")]
    result = solve_gang(NODES, members("g", 2, "data-{i}"), objects)
    nodes = placed(result)
    assert sorted(nodes.values()) == ["n1", "n2"]  # packing would put both on n1; the PVs forbid it
    assert isinstance(result, Plan)
    assert {(v.claim, v.node, v.volume) for v in result.volumes} == {
        (f"ml/data-{i}", nodes[f"g-{i}"], f"local-{nodes[f'g-{i}']}") for i in range(2)}


def test_a_gang_with_more_members_than_local_pvs_places_nothing() -> None:
    objects = [*(claim(f"data-{i}", storage_class="local") for i in range(3)), LOCAL,
               pv("local-n1", storage_class="local", node="n1"), pv("local-n2", storage_class="local", node="n2")]
    result = solve_gang(NODES, members("g", 3, "data-{i}"), objects)
    assert isinstance(result, Unschedulable)
    assert result.message == f"gang g: 2/3 placeable (minCount 3); 0/2 nodes are available: 2 {BIND_CONFLICT}."


MATCHING = [
    pytest.param([pv("big", size="20Gi", storage_class="local", node="n1"),
                  pv("small", size="10Gi", storage_class="local", node="n1")], "small", id="smallest-pv-that-fits"),
    pytest.param([pv("tiny", size="1Gi", storage_class="local", node="n1"),
                  pv("ok", size="10Gi", storage_class="local", node="n1")], "ok", id="too-small-is-skipped"),
    pytest.param([pv("rox", storage_class="local", node="n1", modes=["ReadOnlyMany"]),
                  pv("rwo", size="20Gi", storage_class="local", node="n1")], "rwo",
                 id="access-modes-must-include-the-claims"),
    pytest.param([pv("bound", storage_class="local", node="n1", phase="Bound"),
                  pv("free", size="20Gi", storage_class="local", node="n1")], "free", id="only-available-pvs"),
    pytest.param([pv("other-class", storage_class="slow", node="n1"),
                  pv("same", size="20Gi", storage_class="local", node="n1")], "same", id="same-class-only"),
]


@pytest.mark.parametrize(("volumes", "chosen"), MATCHING)
def test_a_claim_gets_the_pv_kubes_find_matching_volume_picks(volumes: list[object], chosen: str) -> None:
    result = solve_gang(NODES, members("g", 1, "data-{i}"), [claim("data-0", storage_class="local"), LOCAL, *volumes])
    assert isinstance(result, Plan)
    assert [(v.node, v.volume) for v in result.volumes] == [("n1", chosen)]


def test_a_claim_selector_must_match_the_pvs_labels() -> None:
    objects = [claim("data-0", storage_class="local", selector={"matchLabels": {"tier": "ssd"}}), LOCAL,
               pv("hdd", storage_class="local", node="n1", labels={"tier": "hdd"}),
               pv("ssd", storage_class="local", node="n2", labels={"tier": "ssd"})]
    result = solve_gang(NODES, members("g", 1, "data-{i}"), objects)
    assert placed(result) == {"g-0": "n2"}


def test_a_pv_pre_bound_to_the_claim_wins_over_a_smaller_one() -> None:
    data = claim("data-0", storage_class="local")
    objects = [data, LOCAL, pv("small", size="10Gi", storage_class="local", node="n1"),
               pv("reserved", size="50Gi", storage_class="local", node="n2", claim=data)]
    result = solve_gang(NODES, members("g", 1, "data-{i}"), objects)
    assert isinstance(result, Plan) and [(v.node, v.volume) for v in result.volumes] == [("n2", "reserved")]


def test_on_a_node_with_a_matching_pv_a_provisionable_claim_still_takes_the_pv() -> None:
    objects = [claim("data-0"), pv("existing", node="n2")]
    result = solve_gang(NODES[1:], members("g", 1, "data-{i}"), objects)
    assert isinstance(result, Plan) and [(v.node, v.volume) for v in result.volumes] == [("n2", "existing")]


def test_a_claim_annotated_with_a_selected_node_pins_its_pod_there() -> None:
    result = solve_gang(NODES, members("g", 1, "data-{i}"), [claim("data-0", annotations={SELECTED_NODE: "n2"})])
    assert placed(result) == {"g-0": "n2"}


def test_a_claim_annotated_for_a_node_that_is_gone_refuses_every_node() -> None:
    result = solve_gang(NODES, members("g", 1, "data-{i}"), [claim("data-0", annotations={SELECTED_NODE: "n9"})])
    assert isinstance(result, Unschedulable)
    assert result.message.endswith(f"0/2 nodes are available: 2 {BIND_CONFLICT}.")


def test_a_claim_shared_by_two_members_is_decided_once_and_both_land_on_its_node() -> None:
    pods = members("g", 2, "shared", cpu="3")
    result = solve_gang([node("n1", cpu="4"), node("n2", cpu="8")], pods, [claim("shared", modes=["ReadWriteMany"])])
    assert placed(result) == {"g-0": "n2", "g-1": "n2"}
    assert isinstance(result, Plan)
    assert result.volumes == (VolumeClaimBinding("ml/shared", "n2", None, ("ml/g-0", "ml/g-1")),)


def test_a_shared_claim_keeps_members_together_even_when_that_cannot_fit() -> None:
    pods = members("g", 2, "shared", cpu="3")
    result = solve_gang([node("n1", cpu="4"), node("n2", cpu="4")], pods, [claim("shared", modes=["ReadWriteMany"])])
    assert isinstance(result, Unschedulable)
    assert result.message == ("gang g: 1/2 placeable (minCount 2); 0/2 nodes are available: 1 Insufficient cpu, "
                              f"1 {BIND_CONFLICT}.")


def test_statefulset_members_with_identical_claims_share_one_signature() -> None:
    pods = members("g", 8, "data-{i}")
    objects = [*(claim(f"data-{i}") for i in range(8)), storage_class()]
    snapshot = Snapshot.build(NodeTable.build(NODES), pods, volumes=view_of(objects, pods))
    state = CycleState(snapshot, SolverConfig(), 0, DEFAULT_PROFILE.reservers)
    assert len({PLUGIN.signature_key(state, p) for p in pods}) == 1
