"""``NodeTable`` (static node index, memoised static filters, domains) and ``Snapshot`` (usage, assume)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scheduler.framework.node_table import NodeTable, static_key
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.model import Node, Pod
from scheduler.solver.plugins import run_filters
from tests.unit.solver.builders import node, pod

GI = 2**30
U = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def raw_node(name: str, allocatable: dict[str, str], labels: dict[str, str] | None = None) -> Node:
    return Node.model_validate({"metadata": {"name": name, "labels": labels or {}},
                                "status": {"allocatable": allocatable}})


# --- NodeTable.build -------------------------------------------------------------------------------------------


def test_build_sorts_nodes_by_name() -> None:
    table = NodeTable.build([node("c"), node("a"), node("b")])
    assert [n.name for n in table.nodes] == ["a", "b", "c"]
    assert table.index == {"a": 0, "b": 1, "c": 2}
    assert len(table) == 3


def test_build_allocatable_matrix_in_units() -> None:
    table = NodeTable.build([node("b", cpu="500m", memory="1Gi", gpu=4), node("a", cpu="8", memory="32Gi")])
    assert table.resources == ("cpu", "memory", "nvidia.com/gpu", "pods")
    assert table.column == {"cpu": 0, "memory": 1, "nvidia.com/gpu": 2, "pods": 3}
    assert table.allocatable.dtype == np.int64
    assert table.allocatable.tolist() == [
        [8000, 32 * GI, 0, 110],
        [500, GI, 4, 110],
    ]


def test_build_adds_pods_and_extra_resources_as_columns() -> None:
    table = NodeTable.build([raw_node("a", {"cpu": "2"})], extra_resources=["example.com/fpga"])
    assert table.resources == ("cpu", "example.com/fpga", "pods")
    assert table.allocatable.tolist() == [[2000, 0, 0]]


def test_build_of_no_nodes() -> None:
    table = NodeTable.build([])
    assert table.resources == ("pods",)
    assert table.allocatable.shape == (0, 1)
    assert table.accelerator.shape == (0,)
    assert len(table) == 0


@pytest.mark.parametrize(("allocatable", "accelerator"), [
    pytest.param({"cpu": "8", "nvidia.com/gpu": "2"}, True, id="gpu-node"),
    pytest.param({"cpu": "8", "example.com/fpga": "1"}, True, id="any-extended-resource"),
    pytest.param({"cpu": "8"}, False, id="cpu-only-node"),
    pytest.param({"cpu": "8", "nvidia.com/gpu": "0"}, False, id="zero-gpus-is-not-an-accelerator"),
    pytest.param({"cpu": "8", "hugepages-2Mi": "1Gi"}, False, id="hugepages-are-not-extended"),
    pytest.param({"cpu": "8", "kubernetes.io/batteries": "1"}, False, id="kubernetes.io-domain-is-not-extended"),
])
def test_accelerator_flag(allocatable: dict[str, str], accelerator: bool) -> None:
    table = NodeTable.build([raw_node("x", allocatable), raw_node("y", {"cpu": "1", "nvidia.com/gpu": "1"})])
    assert table.accelerator.dtype == np.bool_
    assert table.accelerator.tolist() == [accelerator, True]


def test_accelerator_flag_without_extended_columns() -> None:
    table = NodeTable.build([node("a"), node("b")])
    assert table.accelerator.tolist() == [False, False]


def test_max_allocatable_is_per_resource_and_at_least_one() -> None:
    table = NodeTable.build([node("a", cpu="4", memory="8Gi"), node("b", cpu="16", memory="2Gi")],
                            extra_resources=["example.com/fpga"])
    assert table.resources == ("cpu", "example.com/fpga", "memory", "pods")
    assert table.max_allocatable.tolist() == [16000, 1, 8 * GI, 110]


# --- NodeTable.static_fit ------------------------------------------------------------------------------------------


def static_table() -> NodeTable:
    return NodeTable.build([
        node("a", labels={"pool": "gpu"}),
        node("b", labels={"pool": "gpu"}, taints=["gpu=true:NoSchedule"]),
        node("c", labels={"pool": "gpu"}, unschedulable=True),
        node("d", labels={"pool": "cpu"}),
    ])


def test_static_fit_masks_and_reasons_per_node() -> None:
    fit = static_table().static_fit(pod("p", node_selector={"pool": "gpu"}).spec, run_filters)
    assert fit.ok.tolist() == [True, False, False, False]
    assert dict(fit.rejected) == {
        1: Status(U, ("node(s) had untolerated taint {gpu: true}",), "TaintToleration"),
        2: Status(U, ("node(s) were unschedulable",), "NodeUnschedulable"),
        3: Status(U, ("node(s) didn't match Pod's node affinity/selector",), "NodeAffinity"),
    }


def test_static_fit_tolerations_change_the_result() -> None:
    fit = static_table().static_fit(pod("p", tolerations=[{"operator": "Exists"}]).spec, run_filters)
    assert fit.ok.tolist() == [True, True, True, True]
    assert dict(fit.rejected) == {}


@pytest.mark.parametrize(("first", "second"), [
    pytest.param({}, {"cpu": "4", "memory": "8Gi", "gpu": 1}, id="different-requests"),
    pytest.param({"namespace": "a", "group": "g1"}, {"namespace": "b", "group": "g2"}, id="different-namespace-group"),
    pytest.param({"node_selector": {"pool": "gpu", "zone": "z1"}}, {"node_selector": {"zone": "z1", "pool": "gpu"}},
                 id="node-selector-key-order-is-irrelevant"),
    pytest.param({"tolerations": [{"key": "gpu", "operator": "Exists"}]},
                 {"tolerations": [{"key": "gpu", "operator": "Exists"}], "priority": 100},
                 id="equal-tolerations-different-priority"),
    pytest.param({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                     "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In",
                                                                  "values": ["gpu"]}]}]}}}},
                 {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                     "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In",
                                                                  "values": ["gpu"]}]}]}}}},
                 id="equal-affinity-parsed-twice"),
])
def test_static_fit_memoised_for_equal_static_inputs(first: dict[str, Any], second: dict[str, Any]) -> None:
    table = static_table()
    a, b = pod("p1", **first), pod("p2", **second)
    assert static_key(a.spec) == static_key(b.spec)
    assert table.static_fit(a.spec, run_filters) is table.static_fit(b.spec, run_filters)


@pytest.mark.parametrize(("first", "second"), [
    pytest.param({}, {"node_selector": {"pool": "gpu"}}, id="selector-added"),
    pytest.param({"node_selector": {"pool": "gpu"}}, {"node_selector": {"pool": "cpu"}}, id="selector-value"),
    pytest.param({}, {"tolerations": [{"operator": "Exists"}]}, id="toleration-added"),
    pytest.param({}, {"affinity": {"nodeAffinity": {}}}, id="affinity-added"),
])
def test_static_fit_not_shared_across_different_static_inputs(first: dict[str, Any], second: dict[str, Any]) -> None:
    table = static_table()
    a, b = pod("p1", **first), pod("p2", **second)
    assert static_key(a.spec) != static_key(b.spec)
    assert table.static_fit(a.spec, run_filters) is not table.static_fit(b.spec, run_filters)


# --- NodeTable.domains ---------------------------------------------------------------------------------------------


def test_domains_per_label_key() -> None:
    table = NodeTable.build([
        node("a", labels={"zone": "z2", "rack": "r1"}),
        node("b", labels={"zone": "z1"}),
        node("c"),
        node("d", labels={"zone": "z2"}),
        node("e", labels={"zone": ""}),
    ])
    zones = table.domains("zone")
    assert zones.values == ("", "z1", "z2")
    assert zones.of_node.dtype == np.int32
    assert zones.of_node.tolist() == [2, 1, -1, 2, 0]
    racks = table.domains("rack")
    assert racks.values == ("r1",)
    assert racks.of_node.tolist() == [0, -1, -1, -1, -1]


def test_domains_of_a_key_no_node_has() -> None:
    doms = NodeTable.build([node("a"), node("b")]).domains("zone")
    assert doms.values == ()
    assert doms.of_node.tolist() == [-1, -1]


def test_domains_memoised_per_key() -> None:
    table = NodeTable.build([node("a", labels={"zone": "z1"})])
    assert table.domains("zone") is table.domains("zone")
    assert table.domains("zone") is not table.domains("rack")


# --- NodeTable.request_vector --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("requests", "vector", "unknown"), [
    pytest.param({"cpu": 1500, "memory": GI, "pods": 1}, [1500, GI, 0, 1], (), id="known-resources-in-column-order"),
    pytest.param({"pods": 1}, [0, 0, 0, 1], (), id="missing-resources-are-zero"),
    pytest.param({"cpu": 1000, "pods": 1, "example.com/fpga": 1, "amd.com/gpu": 2}, [1000, 0, 0, 1],
                 ("amd.com/gpu", "example.com/fpga"), id="unknown-resources-reported-sorted"),
    pytest.param({"cpu": 1000, "example.com/fpga": 0}, [1000, 0, 0, 0], (), id="unknown-resource-at-zero-ignored"),
])
def test_request_vector(requests: dict[str, int], vector: list[int], unknown: tuple[str, ...]) -> None:
    table = NodeTable.build([node("a", gpu=1)])
    assert table.resources == ("cpu", "memory", "nvidia.com/gpu", "pods")
    vec, missing = table.request_vector(requests)
    assert vec.dtype == np.int64
    assert vec.tolist() == vector
    assert missing == unknown


def test_request_vector_is_memoised_read_only_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    table = NodeTable.build([node("a", gpu=1)])
    first, _ = table.request_vector({"cpu": 1000, "pods": 1})
    again, _ = table.request_vector({"cpu": 1000, "pods": 1})
    assert again is first  # one row per distinct request
    with pytest.raises(ValueError, match="read-only"):
        first[0] = 0  # a caller changing the shared row would change every pod's request
    monkeypatch.setattr("scheduler.framework.node_table.MAX_REQUEST_VECTORS", 2)
    for cpu in range(1, 6):
        vec, _ = table.request_vector({"cpu": cpu, "pods": 1})
        assert vec.tolist() == [cpu, 0, 0, 1]
    assert len(table._vectors) <= 2
    fresh, _ = table.request_vector({"cpu": 1000, "pods": 1})
    assert fresh.tolist() == [1000, 0, 0, 1]


# --- Snapshot --------------------------------------------------------------------------------------------------------


def usage_table() -> NodeTable:
    return NodeTable.build([node("b", gpu=8), node("a")])  # columns cpu, memory, nvidia.com/gpu, pods; rows a, b


@pytest.mark.parametrize(("pods", "used"), [
    pytest.param([], [[0, 0, 0, 0], [0, 0, 0, 0]], id="no-pods"),
    pytest.param([pod("p", node_name="a", phase="Running")], [[1000, GI, 0, 1], [0, 0, 0, 0]],
                 id="bound-running-pod-counts"),
    pytest.param([pod("p", node_name="b", gpu=2)], [[0, 0, 0, 0], [1000, GI, 2, 1]],
                 id="bound-pending-pod-counts"),
    pytest.param([pod("p")], [[0, 0, 0, 0], [0, 0, 0, 0]], id="unbound-pod-ignored"),
    pytest.param([pod("p", node_name="a", phase="Succeeded"), pod("q", node_name="a", phase="Failed")],
                 [[0, 0, 0, 0], [0, 0, 0, 0]], id="succeeded-and-failed-pods-excluded"),
    pytest.param([pod("p", node_name="gone", phase="Running")], [[0, 0, 0, 0], [0, 0, 0, 0]],
                 id="pod-on-unknown-node-ignored"),
    pytest.param([pod("p", node_name="a", phase="Running", scheduler="default-scheduler")],
                 [[1000, GI, 0, 1], [0, 0, 0, 0]], id="pods-of-other-schedulers-count"),
    pytest.param([pod("p", node_name="a", phase="Running"), pod("q", cpu="500m", memory="2Gi", node_name="a"),
                  pod("r", cpu="2", memory=None, gpu=4, node_name="b", phase="Running")],
                 [[1500, 3 * GI, 0, 2], [2000, 0, 4, 1]], id="pods-on-a-node-add-up"),
    pytest.param([Pod.model_validate({
                     "metadata": {"name": "p", "namespace": "default"},
                     "spec": {"nodeName": "a", "containers": [
                         {"name": "c", "resources": {"requests": {"cpu": "1", "example.com/fpga": "1"}}}]},
                     "status": {"phase": "Running"}})],
                 [[1000, 0, 0, 1], [0, 0, 0, 0]], id="resources-the-table-lacks-are-ignored"),
])
def test_snapshot_build_counts_bound_non_terminal_pods_on_known_nodes(pods: list[Pod], used: list[list[int]]) -> None:
    snap = Snapshot.build(usage_table(), pods)
    assert snap.used.dtype == np.int64
    assert snap.used.tolist() == used


def test_free_is_allocatable_minus_used_and_a_fresh_copy() -> None:
    snap = Snapshot.build(usage_table(), [pod("p", cpu="3", memory="2Gi", gpu=1, node_name="b")])
    free = snap.free()
    assert free.tolist() == [[8000, 32 * GI, 0, 110], [5000, 30 * GI, 7, 109]]
    free[:] = 0
    assert snap.free().tolist() == [[8000, 32 * GI, 0, 110], [5000, 30 * GI, 7, 109]]


def test_assume_returns_a_new_snapshot_and_leaves_the_old_one_alone() -> None:
    table = usage_table()
    old = Snapshot.build(table, [pod("running", node_name="a", phase="Running")])
    before = old.used.copy()
    new = old.assume([(pod("w0", gpu=2), "b"), (pod("w1", gpu=2), "b"), (pod("w2", cpu="2"), "a")])
    assert new is not old
    assert new.table is table
    assert new.used.tolist() == [[3000, 2 * GI, 0, 2], [2000, 2 * GI, 4, 2]]
    assert old.used.tolist() == before.tolist()
    assert new.used is not old.used


def test_assume_nothing_is_an_equal_copy() -> None:
    old = Snapshot.build(usage_table(), [pod("p", node_name="a")])
    new = old.assume([])
    assert new is not old
    assert new.used.tolist() == old.used.tolist()
