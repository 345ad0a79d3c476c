"""No single object stops an informer: every watched kind's decoding, fuzzed.

Each case takes a real object of a kind the cache holds (from the test data) and puts a hostile value at
a random place in it: nesting thousands of levels deep, a megabyte string, a value of the wrong type,
a hand-made durable intent. Feeding it to the cache, as a watch event and as a re-list page, must never
raise; the object is either taken or reported as refused (:attr:`ClusterCache.on_refused`), and a
snapshot can still be taken. The client's JSON decoder gets the same hostile nesting as text.
"""

from __future__ import annotations

import copy
import glob
import json
import sys
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.cache.cluster import KINDS, REFUSAL_REASONS, ClusterCache, Refusal
from scheduler.client.decoding import MAX_DEPTH, event_decoder, loads, page_decoder
from scheduler.groups.intent import INTENT_ANNOTATION
from scheduler.live.informers import DECODED_AS_MODELS
from scheduler.model.base import NESTED_TOO_DEEP
from scheduler.model.lean_pod import LeanPod, lean_pod
from tests.property.strategies import json_paths

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DATA = Path(__file__).resolve().parent.parent / "data"

PDB = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "pdb", "namespace": "ml"},
       "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "a"}}}}


def _samples() -> dict[str, dict[str, Any]]:
    """One real object per cached kind (the cache's name → raw object)."""
    wanted = {(k.kind, k.group): name for name, k in KINDS.items()}
    found: dict[str, dict[str, Any]] = {"PodDisruptionBudget": PDB}
    for path in sorted(glob.glob(str(DATA / "**" / "*.yaml"), recursive=True)):
        for doc in yaml.safe_load_all(Path(path).read_text()):
            docs = doc.get("items") if isinstance(doc, dict) and doc.get("kind") == "List" else [doc]
            for raw in docs or []:
                if isinstance(raw, dict) and isinstance(raw.get("apiVersion"), str):
                    name = wanted.get((raw.get("kind"), raw["apiVersion"].rpartition("/")[0]))
                    if name is not None:
                        found.setdefault(name, json.loads(json.dumps(raw, default=str)))
    return found


SAMPLES = _samples()

KUBELET_STATUS_SAMPLE: dict[str, Any] = {
    **SAMPLES["Pod"], "metadata": {**SAMPLES["Pod"]["metadata"], "uid": "uid-kubelet"},
    "status": {**SAMPLES["Pod"]["status"], "containerStatuses": [
        {"name": c["name"], "ready": True, "restartCount": 0,
         "allocatedResources": (c.get("resources") or {}).get("requests", {}), "resources": c.get("resources") or {}}
        for c in SAMPLES["Pod"]["spec"]["containers"]]}}
"""The sample pod on its node as its kubelet reports it: each container's actuated resources."""


def nested(depth: int, leaf: Any = 1) -> Any:
    """``leaf`` inside ``depth`` alternating lists and objects."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"a": value}
    return value


hostile = st.one_of(  # recipes, built by make(): hypothesis prints its arguments, and cannot print 5,000 levels
    st.tuples(st.just("nested"), st.integers(0, 5000)),
    st.tuples(st.just("string"), st.integers(1, 2_000_000)),
    st.tuples(st.just("value"), st.sampled_from([None, True, -1, 2**70, 1.5e308, "", "-6", "1e400", [], {}, [{}],
                                                  "\u00b2", "\u0663"])),
    st.tuples(st.just("value"), st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
        max_leaves=12)),
)
intents = st.one_of(
    st.tuples(st.just("brackets"), st.integers(1, 60000)),
    st.tuples(st.just("pods"), st.integers(1, 20000)),
    st.tuples(st.just("string"), st.just(200_000)),
    st.tuples(st.just("value"), st.builds(lambda pods: json.dumps({"pods": pods}), st.dictionaries(
        st.text(max_size=4), st.one_of(st.none(), st.integers(), st.text(max_size=4),
                                       st.fixed_dictionaries({"node": st.integers()})), max_size=3))),
)


def make(recipe: tuple[str, Any]) -> Any:
    """The hostile value of a recipe."""
    how, arg = recipe
    return {"nested": nested, "string": lambda n: "x" * n, "value": copy.deepcopy,
            "brackets": lambda n: "[" * n, "pods": lambda n: '{"pods":' * n}[how](arg)


def _put(raw: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    target = raw
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return raw


@st.composite
def hostile_objects(draw: st.DrawFn) -> tuple[str, tuple[Any, ...], tuple[str, Any]]:
    """(kind, where in its sample object, the recipe of what is put there); the path ``("intent",)`` is the
    durable intent annotation a bound pod carries."""
    kind = draw(st.sampled_from(sorted(SAMPLES)))
    if kind == "Pod" and draw(st.booleans()):
        return kind, ("intent",), draw(intents)
    return kind, draw(st.sampled_from(json_paths(SAMPLES[kind]))), draw(hostile)


@SETTINGS
@given(hostile_objects(), st.sampled_from(["ADDED", "MODIFIED", "DELETED", "relist"]))
def test_no_object_of_any_kind_stops_the_cache(case: tuple[str, tuple[Any, ...], tuple[str, Any]], how: str) -> None:
    kind, path, recipe = case
    raw = copy.deepcopy(SAMPLES[kind])
    if path == ("intent",):
        raw["metadata"].setdefault("annotations", {})[INTENT_ANNOTATION] = make(recipe)
    else:
        raw = _put(raw, path, make(recipe))
    cache = ClusterCache("gang-scheduler", dra=True)
    refused: list[Refusal] = []
    cache.on_refused = refused.append
    cache.replace(kind, [SAMPLES[kind]])  # the good version first: the hostile one updates it
    if how == "relist":
        cache.replace(kind, [raw])
    else:
        cache.apply(kind, how, raw)
        cache.apply(kind, "MODIFIED", raw)  # old and new both hostile
    cache.snapshot()
    assert all(r.reason in REFUSAL_REASONS and r.kind == kind for r in refused)
    if not refused and how != "DELETED":  # what was not refused was taken
        assert cache.objects[kind]


def _json_loads(text: str) -> Any:
    """``json.loads`` called one frame down, as :func:`loads` calls it: at the edge of the recursion limit the two
    then meet the same limit (a frame less, and a depth ``loads`` cut would decode here)."""
    return json.loads(text)


@given(st.integers(0, 12000), st.sampled_from(["list", "watch", "bare"]))
@settings(max_examples=40, deadline=None)
def test_the_client_decoder_never_raises_recursion(depth: int, shape: str) -> None:
    deep = "[" * depth + "1" + "]" * depth
    obj = '{"metadata": {"name": "c", "namespace": "ml"}, "spec": {"p": ' + deep + "}}"
    text = {"list": '{"items": [{"metadata": {"name": "ok"}}, ' + obj + "]}",
            "watch": '{"type": "ADDED", "object": ' + obj + "}", "bare": deep}[shape]
    try:
        value = loads(text)
    except ValueError:
        assert shape == "bare" and depth > MAX_DEPTH  # no object in it to report: the text is refused whole
        return
    try:
        expected: Any = _json_loads(text)
    except RecursionError:  # too deep for json.loads: the object is a stub the cache refuses
        found = value["items"][1] if shape == "list" else value["object"]
        assert found == {"metadata": {"name": "c", "namespace": "ml"}, NESTED_TOO_DEEP: True}
        if shape == "list":
            assert value["items"][0] == {"metadata": {"name": "ok"}}
    else:
        assert value == expected


@st.composite
def hostile_pods_and_nodes(draw: st.DrawFn) -> tuple[str, tuple[Any, ...], tuple[str, Any]]:
    """A hostile object (as :func:`hostile_objects`) of a kind whose informer decodes straight into models."""
    kind = draw(st.sampled_from(sorted(DECODED_AS_MODELS)))
    return kind, draw(st.sampled_from(json_paths(SAMPLES[kind]))), draw(hostile)


@SETTINGS
@given(hostile_pods_and_nodes(), st.sampled_from(["page", "event"]))
def test_decoding_from_bytes_takes_what_the_plain_way_takes(case: tuple[str, tuple[Any, ...], tuple[str, Any]],
                                                           how: str) -> None:
    """A list page or a watch event decoded straight into models (``page_decoder`` / ``event_decoder``) gives the
    models the plain way gives (``loads``, then the kind's ``model_validate``; for a pod on a node the compact shape
    the cache keeps of it, ``lean_pod``), or refuses — and the informer then
    takes the plain way; it never takes an object the plain way refuses, nor reads one differently.

    But for an object nested as deep as the interpreter lets a decoder go: ``json.loads`` (in ``loads``) and msgspec
    (the pods' bytes decoder) each count nesting against the recursion limit (``sys.getrecursionlimit()``) from
    where they are called, ``json.loads`` a few frames deeper, so at the last levels before the limit the bytes
    decoder may take what ``loads`` gives as its too-deep stub: a limit of the call stack, not a reading of the object,
    and nothing to compare."""
    kind, path, recipe = case
    model = DECODED_AS_MODELS[kind]
    try:
        obj = _put(copy.deepcopy(SAMPLES[kind]), path, make(recipe))
        data = json.dumps({"metadata": {"resourceVersion": "7"}, "items": [obj]} if how == "page"
                          else {"type": "MODIFIED", "object": obj}).encode()
    except (RecursionError, ValueError):  # too deep or not JSON (1e400) for the test's own encoder: no bytes
        return
    try:
        got = page_decoder(model)(data)[0] if how == "page" else event_decoder(model)(data)[1]
    except ValueError:  # refused: the plain way decides
        return
    plain = loads(data)
    found = plain["items"][0] if how == "page" else plain["object"]
    if isinstance(found, dict) and NESTED_TOO_DEEP in found:  # too deep for json.loads here: the docstring
        return
    expected = KINDS[kind].parse(found)
    if isinstance(got, LeanPod):  # a pod on a node: the compact shape the cache keeps of the plain way's model
        expected = lean_pod(expected)
    assert got == expected


def test_decoding_from_bytes_at_the_recursion_limit_takes_what_the_plain_way_takes() -> None:
    """:func:`test_decoding_from_bytes_takes_what_the_plain_way_takes` at every nesting, in a page and in an event, from
    well below the recursion limit to past it (where the test's own encoder gives up), in a field no model reads
    (a pod's ``ownerReferences``), which the bytes decoder skips and so decodes as deep as msgspec can go: the levels
    where only one of it and ``json.loads`` gets through lie among them, wherever the call stack puts them."""
    check = test_decoding_from_bytes_takes_what_the_plain_way_takes.hypothesis.inner_test
    path = ("metadata", "ownerReferences", 0, "blockOwnerDeletion")
    limit = sys.getrecursionlimit()
    for how in ("page", "event"):
        for depth in range(limit - 300, limit + 1):
            check(("Pod", path, ("nested", depth)), how)


def _check_watched_as_plain(pod: Any) -> None:
    """``pod``'s watch event decoded as the informer decodes it is what the plain way reads, or refused."""
    data = json.dumps({"type": "MODIFIED", "object": pod}).encode()
    try:
        got = event_decoder(DECODED_AS_MODELS["Pod"])(data)[1]
    except ValueError:  # refused: the plain way decides
        return
    expected = KINDS["Pod"].parse(loads(data)["object"])
    assert got == (lean_pod(expected) if isinstance(got, LeanPod) else expected)


@SETTINGS
@given(st.sampled_from(json_paths(SAMPLES["Pod"])),
       st.one_of(st.none(), st.integers(-3, 3), st.text(max_size=4), st.just({"cpu": "3"}), st.just(["x"])))
def test_a_bound_pod_decoded_after_its_pending_version_is_read_as_the_plain_way_reads_it(
        path: tuple[Any, ...], value: Any) -> None:
    """A pod decoded without a node, then with one and any field changed (``decode_pod`` reuses the first one's
    parts only where its metadata and spec are the same bytes): the bound pod is what the plain way reads, or
    refused."""
    pending = copy.deepcopy(SAMPLES["Pod"])
    pending["metadata"]["uid"] = "uid-fuzzed"
    pending["spec"].pop("nodeName", None)
    page_decoder(DECODED_AS_MODELS["Pod"])(json.dumps({"items": [pending]}).encode())
    bound = _put(copy.deepcopy(pending), path, value)
    if not isinstance(bound, dict) or not isinstance(bound.get("spec"), dict):
        return  # no spec to bind
    bound["spec"]["nodeName"] = "node-fuzzed"
    _check_watched_as_plain(bound)


@SETTINGS
@given(st.sampled_from(json_paths(KUBELET_STATUS_SAMPLE)),
       st.one_of(st.none(), st.integers(-3, 3), st.text(max_size=4), st.just({"cpu": "3"}), st.just(["x"]),
                 st.just({"cpu": "100", "memory": "1Ti"})))  # above the sample's requests: a resize that counts
def test_a_bound_pod_decoded_after_its_previous_version_is_read_as_the_plain_way_reads_it(
        path: tuple[Any, ...], value: Any) -> None:
    """A pod decoded with a node and the kubelet's container statuses, then again with any field changed — the next
    status write, a resize, a label (``decode_pod`` reuses the first one's parts only where its metadata and spec are
    the same bytes, and its requests only where its container statuses ask the same): the second is what the plain
    way reads, or refused."""
    event_decoder(DECODED_AS_MODELS["Pod"])(json.dumps({"type": "MODIFIED", "object": KUBELET_STATUS_SAMPLE}).encode())
    _check_watched_as_plain(_put(copy.deepcopy(KUBELET_STATUS_SAMPLE), path, value))
