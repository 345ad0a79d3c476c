"""NodeResourcesFit, vectorised: copies per node and the ``Insufficient <resource>`` reasons (fit.go, v1.37)."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.framework.node_table import NodeTable
from scheduler.solver.plugins import resources_fit as fit
from tests.unit.solver.builders import node, pod

GI = 2**30
RESOURCES = ("cpu", "memory", "nvidia.com/gpu", "pods")


def arr(rows: list[int] | list[list[int]]) -> np.ndarray:
    return np.array(rows, dtype=np.int64)


@pytest.mark.parametrize(("free", "requested", "expected"), [
    pytest.param([[4000], [2500], [999]], [1000], [4, 2, 0], id="one-resource-floor-division"),
    pytest.param([[1000], [1001]], [1000], [1, 1], id="exactly-enough-fits-once"),
    pytest.param([[8000, 4 * GI], [1000, 32 * GI], [8000, 32 * GI]], [1000, GI], [4, 1, 8],
                 id="several-resources-the-scarcest-decides"),
    pytest.param([[0, 32 * GI], [8000, 0]], [1000, GI], [0, 0], id="zero-free-in-any-requested-resource-gives-0"),
    pytest.param([[-500, 32 * GI]], [1000, GI], [0], id="overcommitted-resource-gives-0-not-negative"),
    pytest.param([[-5000, -GI]], [1000, GI], [0], id="overcommitted-everywhere-gives-0"),
    pytest.param([[4000, 0]], [1000, 0], [4], id="unrequested-resource-at-zero-is-ignored"),
    pytest.param([[4000, -3]], [1000, 0], [4], id="unrequested-overcommitted-resource-is-ignored"),
    pytest.param([[64000, 256 * GI, 8, 110]], [4000, 16 * GI, 1, 1], [8], id="gpu-bound-node"),
    pytest.param([[64000, 256 * GI, 8, 3]], [4000, 16 * GI, 1, 1], [3], id="pods-slots-bound-copies"),
    pytest.param([[4000, 110]], [0, 1], [110], id="zero-cpu-request-is-capped-by-the-pods-column"),
])
def test_copies(free: list[list[int]], requested: list[int], expected: list[int]) -> None:
    result = fit.copies(arr(free), arr(requested))
    assert result.dtype == np.int64
    assert result.tolist() == expected


def test_copies_of_an_all_zero_request_is_unbounded() -> None:
    result = fit.copies(arr([[0, 0], [8000, 32 * GI], [-1, -1]]), arr([0, 0]))
    assert result.shape == (3,)
    assert result.dtype == np.int64
    assert (result >= 2**62 - 1).all()
    assert (result + result > 0).all(), "large but still safe to add without int64 overflow"


def test_copies_over_no_nodes_is_empty() -> None:
    result = fit.copies(np.zeros((0, 2), dtype=np.int64), arr([1000, GI]))
    assert result.shape == (0,)


def test_copies_in_table_units() -> None:
    """End to end with real quantities: cpu in milli-cores, memory in bytes, one pods slot per copy."""
    table = NodeTable.build([node("a", cpu="7500m", memory="10Gi"), node("b", cpu="64", memory="4Gi", gpu=2)])
    request, unknown = table.request_vector(pod("p", cpu="2", memory="3Gi").requests)
    assert unknown == ()
    assert fit.copies(table.allocatable, request).tolist() == [3, 1]


@pytest.mark.parametrize(("free_row", "requested", "expected"), [
    pytest.param([8000, 32 * GI, 8, 110], [1000, GI, 1, 1], [], id="nothing-short"),
    pytest.param([1000, GI, 1, 1], [1000, GI, 1, 1], [], id="exactly-enough-is-not-short"),
    pytest.param([999, 32 * GI, 8, 110], [1000, GI, 0, 1], ["Insufficient cpu"], id="one-short-resource"),
    pytest.param([0, 0, 0, 0], [1000, GI, 1, 1],
                 ["Insufficient cpu", "Insufficient memory", "Insufficient nvidia.com/gpu", "Too many pods"],
                 id="every-short-resource-listed-in-column-order"),
    pytest.param([8000, 32 * GI, 8, 0], [1000, GI, 0, 1], ["Too many pods"], id="pods-short-is-too-many-pods"),
    pytest.param([-500, 32 * GI, 8, 110], [1000, GI, 0, 1], ["Insufficient cpu"],
                 id="overcommitted-resource-is-short"),
    pytest.param([8000, 32 * GI, 0, 110], [1000, GI, 0, 1], [], id="unrequested-zero-resource-is-not-short"),
    pytest.param([8000, 32 * GI, -1, 110], [1000, GI, 0, 1], [], id="unrequested-overcommitted-resource-is-not-short"),
])
def test_reasons(free_row: list[int], requested: list[int], expected: list[str]) -> None:
    assert fit.reasons(arr(free_row), arr(requested), RESOURCES) == expected


@pytest.mark.parametrize(("resource", "expected"), [
    pytest.param("cpu", "Insufficient cpu", id="cpu"),
    pytest.param("memory", "Insufficient memory", id="memory"),
    pytest.param("ephemeral-storage", "Insufficient ephemeral-storage", id="ephemeral-storage"),
    pytest.param("hugepages-2Mi", "Insufficient hugepages-2Mi", id="hugepages"),
    pytest.param("nvidia.com/gpu", "Insufficient nvidia.com/gpu", id="extended-resource"),
    pytest.param("pods", "Too many pods", id="pods-has-its-own-wording"),
])
def test_insufficient_wording(resource: str, expected: str) -> None:
    assert fit.insufficient(resource) == expected
