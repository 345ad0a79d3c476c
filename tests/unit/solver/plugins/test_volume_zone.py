"""VolumeZone: kube-scheduler's volume_zone_test.go cases — a bound PV's zone/region labels against the nodes'."""

from __future__ import annotations

import pytest

from scheduler.framework import Code, Unschedulable
from scheduler.solver.plugins.volume_zone import BETA_REGION, BETA_ZONE, REGION, ZONE, ZONE_CONFLICT
from tests.unit.groups.builders import NS
from tests.unit.solver.builders import node
from tests.unit.solver.storage_builders import pv, pvc
from tests.unit.solver.volume_kit import members, placed, solve_gang

CASES = [
    pytest.param({ZONE: "a"}, [{ZONE: "a"}, {ZONE: "b"}], ["n0"], id="pv-zone-admits-only-that-zone"),
    pytest.param({ZONE: "a__b"}, [{ZONE: "a"}, {ZONE: "b"}, {ZONE: "c"}], ["n0", "n1"],
                 id="a-value-may-list-zones-separated-by-double-underscores"),
    pytest.param({ZONE: "a", REGION: "r1"}, [{ZONE: "a", REGION: "r2"}, {ZONE: "a", REGION: "r1"}], ["n1"],
                 id="zone-and-region-both-must-match"),
    pytest.param({ZONE: "a"}, [{}, {ZONE: "b"}], ["n0"], id="a-node-without-any-zone-label-passes"),
    pytest.param({ZONE: "a"}, [{"other": "x", REGION: "r1"}], [],
                 id="a-node-with-only-a-region-label-lacks-the-zone"),
    pytest.param({BETA_ZONE: "a"}, [{ZONE: "a"}, {ZONE: "b"}], ["n0"],
                 id="a-legacy-label-on-the-pv-falls-back-to-the-nodes-ga-label"),
    pytest.param({ZONE: "a"}, [{BETA_ZONE: "a"}], [], id="a-ga-label-on-the-pv-does-not-fall-back-to-a-legacy-one"),
    pytest.param({BETA_REGION: "r1"}, [{BETA_REGION: "r1"}, {BETA_REGION: "r2"}], ["n0"],
                 id="legacy-region-against-legacy-region"),
    pytest.param({ZONE: "__a"}, [{ZONE: "b"}], ["n0"], id="an-unparsable-value-is-ignored-as-kube-does"),
]


@pytest.mark.parametrize(("pv_labels", "node_labels", "admitted"), CASES)
def test_bound_pv_zone_labels_admit_nodes_as_kube_does(pv_labels: dict[str, str], node_labels: list[dict[str, str]],
                                                       admitted: list[str]) -> None:
    nodes = [node(f"n{i}", labels=lab) for i, lab in enumerate(node_labels)]
    data = pvc("data-0", namespace=NS, volume_name="pv-1", phase="Bound")
    volume = pv("pv-1", phase="Bound", claim=data, labels=pv_labels)
    result = solve_gang(nodes, members("g", 1, "data-{i}"), [data, volume])
    if not admitted:
        assert isinstance(result, Unschedulable)
        assert result.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert result.message.endswith(f"0/{len(nodes)} nodes are available: {len(nodes)} {ZONE_CONFLICT}.")
        assert result.rejectors == frozenset({"VolumeZone"})
    else:
        assert placed(result)["g-0"] in admitted
        for name in {n.name for n in nodes} - set(admitted):  # each refused node alone refuses the pod
            alone = solve_gang([n for n in nodes if n.name == name], members("g", 1, "data-{i}"), [data, volume])
            assert isinstance(alone, Unschedulable) and ZONE_CONFLICT in alone.message
