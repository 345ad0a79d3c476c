"""TypedPage.raw: an item of a typed page as the server sent it, from the item's own bytes (pods) or the page's; a pod
watch event's object is remembered for the pod's next versions, a page's is not."""

from __future__ import annotations

import json

from scheduler.client.decoding import TypedPage, event_decoder, page_decoder
from scheduler.model import Node, Pod
from scheduler.model import lean_pod as lean_pod_module


def page(kind: str, names: list[str], extra: dict[str, object]) -> bytes:
    items = [{"apiVersion": "v1", "kind": kind, "metadata": {"name": n, "namespace": "ml", "uid": f"u-{n}"},
              **extra} for n in names]
    return json.dumps({"kind": f"{kind}List", "metadata": {"resourceVersion": "7"}, "items": items}).encode()


def test_a_pod_page_gives_each_item_as_sent_with_fields_no_model_reads() -> None:
    decoded = page_decoder(Pod)(page("Pod", ["a", "b"], {"spec": {"containers": [{"name": "c"}], "unknownField": 1}}))
    assert isinstance(decoded, TypedPage) and [p.metadata.name for p in decoded] == ["a", "b"]
    assert decoded.raw(1)["spec"]["unknownField"] == 1 and decoded.raw(1)["metadata"]["name"] == "b"
    assert decoded.raw(2) is None and decoded.raw(-1) is None


def test_another_kinds_page_is_decoded_as_sent_once_for_all_its_items() -> None:
    decoded = page_decoder(Node)(page("Node", ["n0", "n1"], {"spec": {"unknownField": "x"}}))
    first = decoded.raw(0)
    assert first["spec"]["unknownField"] == "x" and decoded.raw(1)["metadata"]["name"] == "n1"
    assert decoded.raw(0) is first and decoded.raw(2) is None  # kept with the page: not decoded per item


def test_a_pod_watch_event_is_remembered_for_its_next_version_and_a_page_item_is_not() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w", "namespace": "ml", "uid": "u-w"},
           "spec": {"nodeName": "n0", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
    listed = page_decoder(Pod)(json.dumps({"items": [pod]}).encode())[0]
    lean_pod_module._field.cache_clear()  # what the versions share then comes from the pod remembered, if any
    watched = event_decoder(Pod)(json.dumps({"type": "MODIFIED", "object": pod}).encode())[1]
    assert watched.spec.containers is not listed.spec.containers
    lean_pod_module._field.cache_clear()
    again = event_decoder(Pod)(json.dumps({"type": "MODIFIED", "object": pod}).encode())[1]
    assert again.spec.containers is watched.spec.containers and again == watched
