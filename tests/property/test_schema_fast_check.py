"""The emulator's fast schema check (``fastjsonschema``) against ``jsonschema``, on valid and broken objects.

``tests/integration/schemas.py`` answers "no errors" for an object the compiled ``fastjsonschema`` check passes,
and walks it with ``jsonschema`` only when that check refuses it. So the two must agree on which objects pass:
here objects as the emulator stores them (a defaulted pod of a Job, a node as a kubelet registers it, a
ResourceClaim allocated and reserved, a ResourceSlice as the NVIDIA driver publishes it, an Event) are broken at a
random place — a field of the wrong type, an unknown field, a value removed, an integer out of the int32 range, a
time Go would not parse — and both must give the same verdict, with :func:`schemas.errors` the field errors
``jsonschema`` finds.
"""

from __future__ import annotations

import copy
from typing import Any

import fastjsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.bench import dra_workload, realistic
from tests.integration import schemas
from tests.integration.livekit import NS, pod
from tests.property.strategies import json_paths

VERSION = "1.37.0"
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _claim() -> dict[str, Any]:
    made = {"metadata": {"name": "g-0", "namespace": NS, "uid": "8d6c1a52-0000-4000-8000-000000000001"}}
    claim = dra_workload.generated_claim(made, dra_workload.mode_template("g", "exclusive"))
    claim["metadata"].update(name="g-0-gpu-x7k2p", uid="8d6c1a52-0000-4000-8000-000000000002", resourceVersion="7",
                             creationTimestamp="2026-12-02T10:00:00Z", generation=1)
    claim["status"] = {
        "reservedFor": [{"resource": "pods", "name": "g-0", "uid": "8d6c1a52-0000-4000-8000-000000000001"}],
        "allocation": {"devices": {"results": [{"request": "gpu", "driver": "gpu.nvidia.com", "pool": "node-1",
                                                "device": "gpu-3"}]},
                       "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                           {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]},
                       "allocationTimestamp": "2026-12-02T10:00:01Z"}}
    return claim


def _event() -> dict[str, Any]:
    return {"metadata": {"name": "g-0.187c", "namespace": NS}, "eventTime": "2026-12-02T10:00:01.123456Z",
            "reportingController": "gang-scheduler", "reportingInstance": "gang-scheduler-0", "action": "Binding",
            "reason": "Scheduled", "type": "Normal", "note": "Successfully assigned default/g-0 to node-1",
            "regarding": {"kind": "Pod", "apiVersion": "v1", "namespace": NS, "name": "g-0", "uid": "u"}}


OBJECTS: list[tuple[str, str, dict[str, Any]]] = [
    ("v1", "Pod", realistic.default_pod(realistic.owned_by_job(pod("g-0", "g", cpu="1"), "g", 0, "j"))[0]),
    ("v1", "Node", realistic.node_body({"metadata": {"name": "node-1", "labels": {}},
                                        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                                                   "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}, 1)),
    ("resource.k8s.io/v1", "ResourceClaim", _claim()),
    ("resource.k8s.io/v1", "ResourceSlice", dra_workload.node_slice("node-1", "u-node-1")),
    ("events.k8s.io/v1", "Event", _event()),
]

VALUES = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**40), max_value=2**40),
                   st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8),
                   st.sampled_from(["2026-12-02T10:00:00Z", "2026-12-02 10:00", "not a time", "1Gi"]),
                   st.just([]), st.just({}), st.just({"unknownField": 1}), st.just([{"x": 1}]))


def _broken(body: dict[str, Any], path: tuple[Any, ...], how: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(body)
    if not path:
        out["unknownTopLevel"] = value
        return out
    parent = out
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if how == "remove" and isinstance(parent, dict):
        del parent[last]
    elif how == "unknown" and isinstance(parent[last], dict):
        parent[last]["surelyUnknownField"] = value
    else:
        parent[last] = value
    return out


@SETTINGS
@given(data=st.data())
def test_fast_check_agrees_with_jsonschema(data: st.DataObject) -> None:
    api_version, kind, body = data.draw(st.sampled_from(OBJECTS))
    path = data.draw(st.sampled_from(json_paths(body)))
    how = data.draw(st.sampled_from(("set", "remove", "unknown")))
    doc = _broken(body, path, how, data.draw(VALUES))
    full = {**doc, "apiVersion": api_version, "kind": kind}
    check = schemas.validator(VERSION, api_version, kind)
    fast = schemas.fast_check(VERSION, api_version, kind)
    assert check is not None and fast is not None
    slow_errors = list(check.iter_errors(full))
    try:
        fast(full)
        fast_ok = True
    except fastjsonschema.JsonSchemaException:
        fast_ok = False
    assert fast_ok == (not slow_errors), (path, how, [e.message for e in slow_errors])
    assert bool(schemas.errors(doc, api_version, kind, VERSION)) == bool(slow_errors)


def test_the_objects_pass() -> None:
    """The unbroken objects pass both (else the test above would only compare refusals)."""
    for api_version, kind, body in OBJECTS:
        assert schemas.errors(body, api_version, kind, VERSION) == [], kind
        fast = schemas.fast_check(VERSION, api_version, kind)
        fast({**body, "apiVersion": api_version, "kind": kind})


def test_an_int32_out_of_range_is_refused_by_both() -> None:
    """``fastjsonschema`` checks formats on strings only: the fast check must refuse an integer past int32 too."""
    api_version, kind, body = OBJECTS[1]
    node = copy.deepcopy(body)
    for port, ok in ((2**31 - 1, True), (2**31, False), (-(2**31) - 1, False)):
        node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] = port
        full = {**node, "apiVersion": api_version, "kind": kind}
        try:
            schemas.fast_check(VERSION, api_version, kind)(full)
            fast_ok = True
        except fastjsonschema.JsonSchemaException:
            fast_ok = False
        assert fast_ok == ok == (not schemas.errors(node, api_version, kind, VERSION)), port
