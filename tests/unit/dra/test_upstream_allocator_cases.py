"""Cases of Kubernetes' structured allocator tests, replayed through the solver.

Ported from kubernetes/kubernetes ``staging/src/k8s.io/dynamic-resource-allocation/structured/internal/
allocatortesting/allocator_testing.go`` (v1.37), by the upstream case name: ``duplicate-slice``,
``many-devices-okay``, ``too-many-devices-total``, ``too-many-devices-single-request``,
``prioritized-list-too-many-in-first-subrequest``,
``prioritized-list-subrequests-with-constraints-ref-sub-request``,
``prioritized-list-subrequests-with-constraints-ref-parent-request``; and the pool checks of
``pools.go`` that these tests reach through the allocator (a counter set defined twice, a device consuming
a counter set or counter the pool does not define). One pod with one claim on ``node-1``; the expected
results are upstream's (request or ``request/subrequest``, pool, device) or the start of its error.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework import Plan, Unschedulable
from scheduler.model.dra import ResourceSlice
from tests.unit.groups.builders import pg
from tests.unit.solver.builders import node
from tests.unit.solver.test_search_dra import DRIVER, claim, pod_with_claim, run

NODE = "node-1"


def device(name: str, memory: str | None = None, version: str | None = None,
           consumes: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name}
    if memory:
        body["capacity"] = {"memory": {"value": memory}}
    if version:
        body["attributes"] = {"driverVersion": {"version": version}}
    if consumes:
        body["consumesCounters"] = [consumes]
    return body


def slice_(name: str, pool: str, devices: list[dict[str, Any]], count: int = 1,
           counters: list[dict[str, Any]] | None = None) -> ResourceSlice:
    spec: dict[str, Any] = {"driver": DRIVER, "nodeName": NODE,
                            "pool": {"name": pool, "generation": 1, "resourceSliceCount": count}}
    if devices:
        spec["devices"] = devices
    if counters:
        spec["sharedCounters"] = counters
    return ResourceSlice.model_validate({"metadata": {"name": name}, "spec": spec})


def at_least(memory: str) -> list[dict[str, Any]]:
    return [{"cel": {"expression": f'device.capacity["{DRIVER}"].memory.compareTo(quantity("{memory}")) >= 0'}}]


def exactly(name: str, count: int = 1, selectors: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": "gpu.example.com", "count": count,
                                      "selectors": selectors or []}}


def first_available(name: str, *subs: tuple[str, int, list[dict[str, Any]]]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": [{"name": n, "deviceClassName": "gpu.example.com", "count": c,
                                              "selectors": s} for n, c, s in subs]}


def allocate(requests: list[dict[str, Any]], slices: list[ResourceSlice],
             constraints: list[dict[str, Any]] | None = None) -> Plan | Unschedulable:
    spec = {"devices": {"requests": requests, "constraints": constraints or []}}
    pod = pod_with_claim("p", "g", "claim-0", template=False)
    return run([node(NODE, cpu="8")], [pod], [pg("g", 1)], slices, [claim("claim-0", spec)])


def results(result: Plan | Unschedulable) -> list[tuple[str, str, str]]:
    assert isinstance(result, Plan), result
    (alloc,) = result.allocations
    return [(request, pool, name) for request, _, pool, name in alloc.results]


VERSIONS = [slice_("slice-1", "pool-1", [device("device-1", "8Gi", "1.0.0")]),
            slice_("slice-2", "pool-2", [device("device-2", "2Gi", "2.0.0"), device("device-3", "1Gi", "1.0.0")])]
MATCH_VERSION = f"{DRIVER}/driverVersion"


def test_prioritized_list_subrequests_with_constraints_ref_sub_request() -> None:
    """The constraint names ``req-1/subReq-0``: that choice must match req-0's version (device-2 does not),
    so req-1 falls back to subReq-1, which the constraint does not cover."""
    got = allocate([exactly("req-0", selectors=at_least("8Gi")),
                    first_available("req-1", ("subReq-0", 1, at_least("2Gi")), ("subReq-1", 1, at_least("1Gi")))],
                   VERSIONS[:1] + [slice_("slice-2", "pool-2", [device("device-2", "2Gi", "2.0.0")])],
                   [{"requests": ["req-0", "req-1/subReq-0"], "matchAttribute": MATCH_VERSION}])
    assert results(got) == [("req-0", "pool-1", "device-1"), ("req-1/subReq-1", "pool-2", "device-2")]


def test_prioritized_list_subrequests_with_constraints_ref_parent_request() -> None:
    """Naming ``req-1`` covers whichever choice serves it: only device-3 (1Gi, version 1.0.0) fits."""
    got = allocate([exactly("req-0", selectors=at_least("8Gi")),
                    first_available("req-1", ("subReq-0", 1, at_least("2Gi")), ("subReq-1", 1, at_least("1Gi")))],
                   VERSIONS, [{"requests": ["req-0", "req-1"], "matchAttribute": MATCH_VERSION}])
    assert results(got) == [("req-0", "pool-1", "device-1"), ("req-1/subReq-1", "pool-2", "device-3")]


def test_prioritized_list_too_many_in_first_subrequest() -> None:
    """500 devices exceed the claim's limit of 32: the first choice is skipped, the second allocated."""
    got = allocate([first_available("req-0", ("subReq-0", 500, []), ("subReq-1", 1, []))],
                   [slice_("slice-1", "pool-1", [device("device-1")])])
    assert results(got) == [("req-0/subReq-1", "pool-1", "device-1")]


def test_many_devices_okay() -> None:
    got = allocate([exactly("req-0", 32)], [slice_("slice-1", "pool-1", [device(f"device-{i}") for i in range(33)])])
    assert len(results(got)) == 32


@pytest.mark.parametrize(("requests", "wanted"), [
    pytest.param([exactly("req-0", 32), exactly("req-1", 1)], 33, id="too-many-devices-total"),
    pytest.param([exactly("req-0", 500)], 500, id="too-many-devices-single-request"),
])
def test_too_many_devices(requests: list[dict[str, Any]], wanted: int) -> None:
    got = allocate(requests, [slice_("slice-1", "pool-1", [device(f"device-{i}") for i in range(33)])])
    assert isinstance(got, Unschedulable)
    assert (f"ResourceClaim ml/claim-0 is invalid: number of requested devices {wanted} exceeds the claim limit "
            "of 32") in got.message


COUNTERS = {"name": "counter-set-1", "counters": {"memory": {"value": "8Gi"}}}


def uses(counter_set: str = "counter-set-1", counter: str = "memory") -> dict[str, Any]:
    return {"counterSet": counter_set, "counters": {counter: {"value": "4Gi"}}}


@pytest.mark.parametrize("slices", [
    pytest.param([slice_("slice-1", "pool-1", [device("device-1")], count=2),
                  slice_("slice-1-2", "pool-1", [device("device-1")], count=2)], id="duplicate-slice"),
    pytest.param([slice_("slice-1", "pool-1", [device("device-1", consumes=uses())], count=3),
                  slice_("slice-2", "pool-1", [], count=3, counters=[COUNTERS]),
                  slice_("slice-3", "pool-1", [], count=3, counters=[COUNTERS])], id="duplicate-counter-set"),
    pytest.param([slice_("slice-1", "pool-1", [device("device-1", consumes=uses("counter-set-2"))], count=2),
                  slice_("slice-2", "pool-1", [], count=2, counters=[COUNTERS])], id="counter-set-not-found"),
    pytest.param([slice_("slice-1", "pool-1", [device("device-1", consumes=uses(counter="cores"))], count=2),
                  slice_("slice-2", "pool-1", [], count=2, counters=[COUNTERS])], id="counter-not-found"),
])
def test_invalid_pool_is_ignored_and_reported(slices: list[ResourceSlice]) -> None:
    got = allocate([exactly("req-0")], slices)
    assert isinstance(got, Unschedulable)
    assert "0/1 nodes are available: 1 invalid resource pools were encountered." in got.message


def test_a_valid_pool_serves_the_claim_beside_an_invalid_one() -> None:
    """Kubernetes reports the invalid pools only when no other pool can serve the claim on the node."""
    got = allocate([exactly("req-0")], [slice_("slice-1", "pool-1", [device("device-1")], count=2),
                                        slice_("slice-1-2", "pool-1", [device("device-1")], count=2),
                                        slice_("slice-2", "pool-2", [device("device-2")])])
    assert results(got) == [("req-0", "pool-2", "device-2")]
