"""The at-rest assertions can fail: each :class:`~tests.chaos.atrest.Check` finds its violation in a hand-built
cluster, and finds nothing in the same cluster done right. (Pure; no server, no scheduler.)"""

from __future__ import annotations

from typing import Any

import pytest

from tests.chaos.atrest import Check, quantity, violations
from tests.chaos.observe import INITIALLY_SCHEDULED, Cluster
from tests.integration.livekit import node, pod, podgroup

pytestmark = pytest.mark.chaos


def bound(name: str, group: str, node_name: str | None, cpu: str = "1") -> dict[str, Any]:
    body = pod(name, group, cpu=cpu)
    if node_name:
        body["spec"]["nodeName"] = node_name
    return body


def scheduled(name: str, size: int, status: str = "True") -> dict[str, Any]:
    body = podgroup(name, size)
    body["status"] = {"conditions": [{"type": INITIALLY_SCHEDULED, "status": status, "reason": "Scheduled"}]}
    return body


def claim(name: str, device: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ml"}, "status": {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "n0", "device": device}]}}}}


def found(cluster: Cluster, expect_full: tuple[str, ...] = ()) -> dict[Check, int]:
    return {check: len(items) for check, items in violations(cluster, expect_full)[0].items() if items}


def test_a_cluster_done_right_passes_every_check() -> None:
    cluster = Cluster(pods=[bound("g-0", "g", "n0"), bound("g-1", "g", "n0")], podgroups=[scheduled("g", 2)],
                      nodes=[node("n0", cpu="2")], claims=[claim("a", "gpu-0"), claim("b", "gpu-1")])
    assert found(cluster, ("ml/g",)) == {}


@pytest.mark.parametrize(("cluster", "expect_full", "check"), [
    pytest.param(Cluster([bound("g-0", "g", "n0"), bound("g-1", "g", None)], [podgroup("g", 2)], [node("n0")], []),
                 (), Check.NO_PARTIAL_GANG, id="a gang 1/2 bound"),
    pytest.param(Cluster([bound("g-0", "g", "n0")], [podgroup("g", 1)], [node("n0")], []),
                 (), Check.INITIALLY_SCHEDULED, id="a full gang without the condition"),
    pytest.param(Cluster([bound("g-0", "g", "n0")], [scheduled("g", 1, "False")], [node("n0")], []),
                 (), Check.INITIALLY_SCHEDULED, id="a full gang with the condition False"),
    pytest.param(Cluster([bound("g-0", "g", "n0", cpu="1500m"), bound("g-1", "g", "n0", cpu="1")],
                         [scheduled("g", 2)], [node("n0", cpu="2")], []),
                 (), Check.NO_OVERCOMMIT, id="2.5 CPUs bound to a node of 2"),
    pytest.param(Cluster([bound("g-0", "g", "n0", cpu="100m")], [scheduled("g", 1)],
                         [{**node("n0"), "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "0"}}}], []),
                 (), Check.NO_OVERCOMMIT, id="a pod on a node allowing none"),
    pytest.param(Cluster([], [], [], [claim("a", "gpu-0"), claim("b", "gpu-0")]),
                 (), Check.NO_DEVICE_TWICE, id="one device in two claims"),
    pytest.param(Cluster([bound("g-0", "g", None)], [podgroup("g", 1)], [node("n0")], []),
                 ("ml/g",), Check.EXPECTED_BOUND, id="a gang that fits left pending"),
])
def test_each_check_finds_its_violation(cluster: Cluster, expect_full: tuple[str, ...], check: Check) -> None:
    assert found(cluster, expect_full) == {check: 1}


def test_quantities_as_the_api_server_reads_them() -> None:
    assert [quantity(v) for v in ("500m", "1Gi", "2k", "1e3", 4)] == [0.5, 2**30, 2000, 1000, 4]
    assert [quantity(v) for v in ("abc", "1.5.2", "", None, True, [])] == [None] * 6
