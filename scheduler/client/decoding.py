"""JSON from the API server, decoded so that no single object's nesting can stop a list or a watch.

The API server accepts JSON nested up to 10,000 levels (Go's ``encoding/json`` limit), for instance
in a ResourceClaim's opaque ``parameters`` (a ``RawExtension``) or in a custom resource that preserves
unknown fields; Python's :func:`json.loads` gives up near 1,000 with :class:`RecursionError`, and would
then lose the whole list page or watch stream it sits in, again at every re-list. :func:`loads` decodes
with :func:`json.loads`, and only when that raises :class:`RecursionError` decodes again without
recursion, replacing each list item (``items[i]``) or watch event object (``object``) that nests
deeper than :data:`MAX_DEPTH` by a stub: its ``metadata`` name, namespace, uid and resourceVersion, and
:data:`~scheduler.model.base.NESTED_TOO_DEEP` set, which the cache refuses (reason ``too_deep``) like
any object it cannot take.

For the kinds the cache holds by the tens of thousands (pods, nodes), :func:`page_decoder` and :func:`event_decoder`
decode a list page or a watch event straight from its bytes into the models, skipping in pydantic-core what the
models do not read (``managedFields``, most of a real pod or node); whatever they refuse is decoded again the
plain way, so nothing is lost that :func:`loads` would keep. A pod on a node is decoded into the compact shape the
cache keeps of it (:func:`~scheduler.model.lean_pod.decode_pod`, with msgspec), never into a full model.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import pydantic
from pydantic import BaseModel, Field

from scheduler.model.base import NESTED_TOO_DEEP, KubeModel, from_wire
from scheduler.model.lean_pod import LeanPod, decode_pod
from scheduler.model.pod import Pod

DECODED = (BaseModel, LeanPod)
"""What the decoders here give for one object: a model, or a pod on a node as the cache keeps it (:class:`LeanPod`)."""

MAX_DEPTH = 200
"""Deepest nesting kept by the fallback decoder. A Kubernetes object's own schema nests a few dozen levels
at most (``managedFields`` mirrors the object's paths); anything deeper is a hand-made value."""


_TOKEN = re.compile(r'[ \t\n\r]*(?:([\[{])|([\]}])|(,)|(:)|(")|(-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?)'
                    r'|(true)|(false)|(null))')
_SKIP = re.compile(r'"(?:[^"\\]|\\.)*"|[\[{]|[\]}]', re.DOTALL)
_CONSTANTS = {"true": True, "false": False, "null": None}


def loads(data: str | bytes) -> Any:
    """The JSON value of ``data``; raises :class:`ValueError` (``json.JSONDecodeError``) when it is not JSON.

    Never raises :class:`RecursionError`: see the module docstring for what a too-deep object becomes.
    """
    try:
        return json.loads(data)
    except RecursionError:
        text = data.decode() if isinstance(data, bytes) else data
        return _stub_deep(*_loads_flat(text))


def _loads_flat(text: str) -> tuple[Any, set[int]]:
    """Decode ``text`` with an explicit stack; values deeper than :data:`MAX_DEPTH` are skipped (None).
    Returns the value and the ids of the depth-1 and depth-2 containers holding a skipped value."""
    stack: list[tuple[list[Any] | dict[str, Any], str | None]] = []
    cut: set[int] = set()
    root: Any = None
    pos = 0

    def put(value: Any) -> None:
        nonlocal root
        if not stack:
            root = value
            return
        container, k = stack[-1]
        if isinstance(container, list):
            container.append(value)
        else:
            assert k is not None
            container[k] = value
            stack[-1] = (container, None)

    while True:
        m = _TOKEN.match(text, pos)
        if m is None:
            if text[pos:].strip() == "" and stack == [] and pos > 0:
                return root, cut
            raise json.JSONDecodeError("unexpected character", text, pos)
        pos = m.end()
        if m.group(1):  # [ or {
            if len(stack) >= MAX_DEPTH:
                pos = _skip(text, pos)
                cut.update(id(c) for c, _ in stack[1:3])
                put(None)
                continue
            new: list[Any] | dict[str, Any] = [] if m.group(1) == "[" else {}
            put(new)
            stack.append((new, None))
        elif m.group(2):  # ] or }
            if not stack:
                raise json.JSONDecodeError("unbalanced bracket", text, pos)
            stack.pop()
        elif m.group(3) or m.group(4):  # , or : (the grammar is loose here; json.loads already judged it)
            continue
        elif m.group(5):  # a string: a key or a value
            value, pos = json.decoder.scanstring(text, pos)  # type: ignore[attr-defined]
            container, k = stack[-1] if stack else (None, None)
            if isinstance(container, dict) and k is None:  # in an object, a string with no key pending is one
                stack[-1] = (container, value)
            else:
                put(value)
        elif m.group(6):
            put(float(m.group(6)) if m.group(7) or m.group(8) else int(m.group(6)))
        else:
            put(_CONSTANTS[m.group(0).strip()])
        if not stack and root is not None and text[pos:].strip() == "":
            return root, cut


def _skip(text: str, pos: int) -> int:
    """The position after the container whose opening bracket ends at ``pos``."""
    depth = 1
    for m in _SKIP.finditer(text, pos):
        token = m.group(0)
        if token in "[{":
            depth += 1
        elif token in "]}":
            depth -= 1
            if depth == 0:
                return m.end()
    raise json.JSONDecodeError("unterminated container", text, pos)


def _stub_deep(value: Any, cut: set[int]) -> Any:
    """Replace in a list reply's ``items`` or a watch event's ``object`` each object that held a skipped value
    by its stub; a value of any other shape that held one raises ValueError (there is no object to report)."""
    if not cut:
        return value
    if isinstance(value, dict):
        items = value.get("items")
        if isinstance(items, list) and id(items) in cut:
            value["items"] = [_stub(item) if id(item) in cut else item for item in items]
            return value
        obj = value.get("object")
        if isinstance(obj, dict) and id(obj) in cut:
            value["object"] = _stub(obj)
            return value
    raise json.JSONDecodeError(f"nested deeper than {MAX_DEPTH} levels", "", 0)


def _stub(obj: Any) -> dict[str, Any]:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    kept = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion") if isinstance(meta.get(k), str)}
    return {"metadata": kept, NESTED_TOO_DEEP: True}


class ListMeta(KubeModel):
    """``metav1.ListMeta``: the list's ``resourceVersion`` and the ``continue`` token of its next page."""

    resource_version: str = ""
    continue_: str = Field("", alias="continue")


class TypedPage(list[Any]):
    """One page of a list decoded straight from the reply's bytes into models (:func:`page_decoder`): the models, in
    the server's order, and what the page carries besides; :meth:`raw` decodes the same bytes into plain JSON
    (:func:`loads`) for a caller that needs an object as the server sent it (its unknown fields), one item at a time
    when the page kept each item's bytes (``items_json``: pods), so a page of pods is never held as plain JSON whole
    (tens of MB for 500 real-sized pods, whose memory the allocator then keeps scattered among the models)."""

    def __init__(self, items: Sequence[Any], metadata: ListMeta, data: bytes,
                 items_json: Sequence[msgspec.Raw] | None = None) -> None:
        super().__init__(items)
        self.metadata = metadata
        self._data = data
        self._items_json = items_json
        self._items: list[Any] | None = None

    def raw(self, index: int) -> Any:
        """Item ``index`` as a plain JSON value, or None past the page's items: decoded from the item's own bytes on
        each call when the page kept them, else from the page's, once (then kept with the page)."""
        if self._items_json is not None:
            return loads(bytes(self._items_json[index])) if 0 <= index < len(self._items_json) else None
        if self._items is None:
            value = loads(self._data)
            items = value.get("items") if isinstance(value, dict) else None
            self._items = items if isinstance(items, list) else []
        return self._items[index] if 0 <= index < len(self._items) else None


PageDecoder = Callable[[bytes], TypedPage]

_CONTINUE = re.compile(rb'"continue"\s*:\s*"([^"\\]*)"')


def continue_of(data: bytes) -> str:
    """The ``continue`` token of a list reply, read without decoding it: from the part before ``"items"``, where
    the API server writes the list's ``metadata`` (``kind``, ``apiVersion``, ``metadata``, ``items``: the order of
    the Go list types' fields). Empty when not found there (the caller then waits for the decoded page's); a
    guess, which the caller checks against the decoded page before using what it fetched with it."""
    end = data.find(b'"items"')
    found = _CONTINUE.search(data, 0, end) if end > 0 else None
    return found.group(1).decode() if found else ""


EventDecoder = Callable[[bytes], tuple[str, Any]]


class _RawListMeta(msgspec.Struct):
    """:class:`ListMeta` as msgspec reads it."""

    resourceVersion: str = ""
    continue_: str = msgspec.field(default="", name="continue")


class _RawPage(msgspec.Struct):
    """A list reply with its items left as raw JSON."""

    metadata: _RawListMeta = msgspec.field(default_factory=_RawListMeta)
    items: list[msgspec.Raw] = []


class _RawEvent(msgspec.Struct):
    """A watch event with its object left as raw JSON."""

    type: str = ""
    object: msgspec.Raw = msgspec.Raw()


_RAW_PAGE = msgspec.json.Decoder(_RawPage)
_RAW_EVENT = msgspec.json.Decoder(_RawEvent)


def _pod(raw: msgspec.Raw, *, deleted: bool = False, watched: bool = False) -> Any:
    """One pod's JSON: a :class:`LeanPod` when it has a node, else a :class:`Pod`
    (:func:`~scheduler.model.lean_pod.decode_pod`; ``watched``: a watch event's, ``deleted``: its ``DELETED`` event).
    Raises ``ValueError``."""
    try:
        return decode_pod(raw, deleted=deleted, watched=watched)
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc


def _pod_page(data: bytes) -> TypedPage:
    """:func:`page_decoder` of pods: each item as :func:`_pod` decodes it."""
    try:
        page = _RAW_PAGE.decode(data)
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc
    meta = ListMeta(resource_version=page.metadata.resourceVersion, continue_=page.metadata.continue_)
    return TypedPage([_pod(item) for item in page.items], meta, data, page.items)


def _pod_event(data: bytes) -> tuple[str, Any]:
    """:func:`event_decoder` of pods: the object as :func:`_pod` decodes it."""
    try:
        event = _RAW_EVENT.decode(data)
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc
    if not event.object:
        raise ValueError("a watch event without an object")
    return event.type, _pod(event.object, deleted=event.type == "DELETED", watched=True)


@functools.cache
def page_decoder(model: type[BaseModel]) -> PageDecoder:
    """Decode a list reply of ``model`` objects straight from its bytes (pydantic-core's JSON parser: fields the model
    does not read — ``managedFields``, a container's ``env``, a node's ``images`` — are skipped in Rust, never
    made Python objects), about half the CPU of :func:`loads` then ``model_validate``; pods on a node as
    :class:`~scheduler.model.lean_pod.LeanPod` (about a fifth of that again). Raises ``ValueError``
    (pydantic's ``ValidationError``) when any item does not validate, the JSON is malformed or nests too
    deeply; the caller then decodes the page the plain way, object by object, so a bad object is refused
    alone (``ClusterCache.parse``)."""
    if model is Pod:
        return _pod_page
    page = pydantic.create_model(f"{model.__name__}Page", __base__=KubeModel,
                                 metadata=(ListMeta, ListMeta()), items=(list[model], []))  # type: ignore[valid-type]

    def decode(data: bytes) -> TypedPage:
        got = from_wire(page, data)
        return TypedPage(got.items, got.metadata, data)  # type: ignore[attr-defined]

    return decode


@functools.cache
def event_decoder(model: type[BaseModel]) -> EventDecoder:
    """Decode one watch event (``{"type", "object"}``) whose object is a ``model`` straight from its bytes, as
    :func:`page_decoder` does a page: (type, the model). Raises ``ValueError`` when the object is not a valid
    ``model`` (an ``ERROR`` event's ``Status``, a malformed object): the caller decodes the line the plain way. Pods
    on a node as :class:`~scheduler.model.lean_pod.LeanPod`."""
    if model is Pod:
        return _pod_event
    event = pydantic.create_model(f"{model.__name__}Event", __base__=KubeModel,
                                  type=(str, ""), object=(model, ...))

    def decode(data: bytes) -> tuple[str, Any]:
        got = from_wire(event, data)
        return got.type, got.object  # type: ignore[attr-defined]

    return decode
