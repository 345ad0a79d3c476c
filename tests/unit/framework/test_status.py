"""``Code``, ``Status`` and the node histogram in kube's ``FitError.Error()`` format (framework/types.go, v1.37)."""

from __future__ import annotations

import dataclasses

import pytest

from scheduler.framework.status import Code, Status, node_histogram

CPU = "Insufficient cpu"
MEMORY = "Insufficient memory"
GPU = "Insufficient nvidia.com/gpu"
TAINT = "node(s) had untolerated taint {a: b}"
SELECTOR = "node(s) didn't match Pod's node affinity/selector"


@pytest.mark.parametrize(("total", "reasons_per_node", "expected"), [
    pytest.param(3, [[CPU], [CPU]], "0/3 nodes are available: 2 Insufficient cpu.", id="one-reason-counted"),
    pytest.param(5, [[CPU], [TAINT], [TAINT], [CPU], [TAINT]],
                 "0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint {a: b}.",
                 id="kube-format-with-two-reasons"),
    pytest.param(12, [[MEMORY]] * 10 + [[CPU]] * 2,
                 "0/12 nodes are available: 10 Insufficient memory, 2 Insufficient cpu.",
                 id="count-strings-sort-as-text-so-10-comes-before-2"),
    pytest.param(4, [[MEMORY], [CPU], [MEMORY], [CPU]],
                 "0/4 nodes are available: 2 Insufficient cpu, 2 Insufficient memory.",
                 id="equal-counts-sort-by-reason"),
    pytest.param(3, [[SELECTOR], [GPU], [TAINT]],
                 "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) didn't match Pod's node "
                 "affinity/selector, 1 node(s) had untolerated taint {a: b}.",
                 id="capital-letters-sort-before-lower-case-as-bytes"),
    pytest.param(2, [[CPU, MEMORY], [CPU]], "0/2 nodes are available: 1 Insufficient memory, 2 Insufficient cpu.",
                 id="a-node-with-two-reasons-counts-in-both"),
    pytest.param(4, [], "0/4 nodes are available.", id="no-reasons"),
    pytest.param(2, [[], []], "0/2 nodes are available.", id="nodes-giving-no-reasons-add-nothing"),
    pytest.param(0, [], "0/0 nodes are available.", id="no-nodes"),
    pytest.param(100, [[GPU]] * 3, "0/100 nodes are available: 3 Insufficient nvidia.com/gpu.",
                 id="total-is-reported-as-given"),
    pytest.param(2, ((CPU,), (CPU,)), "0/2 nodes are available: 2 Insufficient cpu.", id="any-iterables-accepted"),
])
def test_node_histogram(total: int, reasons_per_node: list[list[str]], expected: str) -> None:
    assert node_histogram(total, reasons_per_node) == expected


def test_node_histogram_consumes_a_generator_once() -> None:
    rejected = ([CPU] for _ in range(3))
    assert node_histogram(3, rejected) == "0/3 nodes are available: 3 Insufficient cpu."


@pytest.mark.parametrize(("code", "wire"), [
    pytest.param(Code.SUCCESS, "Success", id="success"),
    pytest.param(Code.ERROR, "Error", id="error"),
    pytest.param(Code.UNSCHEDULABLE, "Unschedulable", id="unschedulable"),
    pytest.param(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "UnschedulableAndUnresolvable", id="unresolvable"),
])
def test_code_values_are_kube_names(code: Code, wire: str) -> None:
    assert code.value == wire


def test_status_is_a_frozen_value() -> None:
    a = Status(Code.UNSCHEDULABLE, (CPU,), "NodeResourcesFit")
    assert a == Status(Code.UNSCHEDULABLE, (CPU,), "NodeResourcesFit")
    assert a != Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (CPU,), "NodeResourcesFit")
    assert hash(a) == hash(Status(Code.UNSCHEDULABLE, (CPU,), "NodeResourcesFit"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.code = Code.ERROR  # type: ignore[misc]
