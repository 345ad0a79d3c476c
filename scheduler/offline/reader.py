"""Reading snapshot files into raw documents (plain dicts and lists), at the speed of the parser.

A file is JSON when its first character (after a UTF-8 byte-order mark and whitespace) is ``{`` or ``[``
and it parses as JSON: one document (``kubectl get -o json``: a ``List`` with ``items``), or several
concatenated (NDJSON, ``kubectl get -o json`` per object, a watch's objects). Such a file is parsed
with :mod:`json` (measured: orjson 3.13 parses a 29 MB ``-o json`` dump 8 % faster, under 1 % of
``simulate``'s time: not worth a dependency; docs/benchmarks.md); for the loader, a file that is one ``List``
is instead split by msgspec into its items' JSON bytes (``raw_items``), which the loader decodes straight into
its models. A file that starts like JSON but
is not JSON (a YAML flow mapping such as ``{a: b}``, JSON documents between ``---`` lines) is read
as YAML, which JSON is a subset of; if it is not YAML either (a truncated dump, garbage after the last
document), the JSON error is reported, with its line and column.

Everything else is YAML, read with libyaml's parser (:class:`yaml.CSafeLoader`) when PyYAML was built
with it, else with PyYAML's pure-Python one (:class:`yaml.SafeLoader`: the same documents, about ten times
slower). The documents are built straight from the parser's events by :func:`_yaml_documents`, which
gives what ``yaml.safe_load_all`` gives — the same tag resolution (YAML 1.1: ``yes`` is true, ``1:30`` is
a number, timestamps become :class:`datetime.datetime`), anchors, aliases and ``<<`` merge keys (explicit
keys win; in a list of merges the first wins) — at twice the speed of ``CSafeLoader``'s own composer and
constructors, as it skips PyYAML's node graph (the YAML libraries measured instead, and why none reads a
snapshot as ``safe_load`` does: docs/benchmarks.md, "simulate input"). Explicit tags on scalars (``!!str``,
``!!binary``) go through PyYAML's safe constructors; a mapping or sequence with any tag but ``!!map`` /
``!!seq`` (``!!set``, ``!!omap``, an application tag) is refused, as are tags on scalars that ``safe_load``
refuses. Documents are yielded one at a time, so a
multi-document file never has every raw document in memory at once.

Errors (:class:`~scheduler.errors.SnapshotError`, naming the file): it cannot be read; it is not UTF-8
(what the API server and kubectl read and write; the byte, line and offset are given); it is not valid
YAML, or not valid JSON when it starts like JSON (line and column given).
"""

from __future__ import annotations

import codecs
import io
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgspec
import yaml
from yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import ScalarNode

from scheduler.errors import SnapshotError

YAML_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser with PyYAML's safe resolver and constructors when PyYAML has it (``yaml.__with_libyaml__``),
else the pure-Python :class:`yaml.SafeLoader`."""

STDIN = "-"
"""The file name that means standard input (``simulate -``); named ``<stdin>`` in messages."""

STR_TAG = "tag:yaml.org,2002:str"
MAP_TAGS = (None, "!", "tag:yaml.org,2002:map")
SEQ_TAGS = (None, "!", "tag:yaml.org,2002:seq")
MERGE_TAG = "tag:yaml.org,2002:merge"
_MERGE = object()
"""Stands for a ``<<`` key while its mapping is being built."""
_NO_KEY = object()
"""A mapping being built waits for its next key."""
_SEQUENCE = object()
"""The frame being built is a sequence (a mapping's pending key may be anything, ``None`` included)."""
_FIRST_CHARACTER = re.compile(rb"[^ \t\r\n]")
"""The first character that is not JSON whitespace (found without copying the data, as ``lstrip`` would)."""
MAX_REMEMBERED_TAGS = 1 << 16
"""Distinct plain scalars whose resolved tag one document remembers (then it starts over): bounds the memo."""


def name_of(path: Path) -> str:
    """How a file is named in messages: its path, or ``<stdin>`` for :data:`STDIN`."""
    return "<stdin>" if str(path) == STDIN else str(path)


def documents(path: Path, stdin: BinaryIO | None = None,
              loader: type[yaml.SafeLoader] = YAML_LOADER, raw_items: bool = False) -> Iterator[tuple[int, Any]]:
    """``(document number from 1, raw document)`` for each document of ``path``, ``None`` ones included.

    ``path`` :data:`STDIN` reads ``stdin`` (default ``sys.stdin.buffer``) to its end. ``loader``: the
    YAML loader class (tests compare the pure-Python one). ``raw_items``: a file that is one JSON ``List``
    (``kubectl get -o json``) is yielded as ``{"apiVersion", "kind", "items"}`` with each item left as its JSON
    bytes (:class:`msgspec.Raw`, checked to be JSON), for the caller to decode one by one.
    Raises :class:`SnapshotError` as the module docstring says; documents before a YAML error have been yielded
    by then.
    """
    name = name_of(path)
    try:
        data = (stdin or sys.stdin.buffer).read() if str(path) == STDIN else path.read_bytes()
    except OSError as exc:
        raise SnapshotError(f"{name}: cannot read: {exc.strerror or exc}") from exc
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    try:
        text = data.decode("utf-8")  # checked here for a clear message; YAML is then parsed from the bytes
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SnapshotError(
            f"{name}: not UTF-8 text: byte 0x{data[exc.start]:02x} at line {line} (offset {exc.start}); "
            "save the file as UTF-8"
        ) from exc
    first = _FIRST_CHARACTER.search(data)
    json_error: json.JSONDecodeError | None = None
    if first is not None and first.group() in (b"{", b"["):
        listed = _raw_list(data) if raw_items else None
        if listed is not None:
            del data, text
            yield 1, listed
            return
        try:
            parsed = _json_documents(text)
        except RecursionError as exc:  # json's decoder recurses per level: Python's recursion limit stops it
            raise SnapshotError(f"{name}: JSON nested too deeply to read (about {sys.getrecursionlimit()} levels "
                                "at most)") from exc
        if not isinstance(parsed, json.JSONDecodeError):
            del data, text
            parsed.reverse()  # popped from the end: each is released once the caller is done with it
            for i in range(1, len(parsed) + 1):
                yield i, parsed.pop()
            return
        json_error = parsed
    del text
    stream = io.BytesIO(data)
    stream.name = name  # both parsers name their marks (error positions) after it
    try:
        yield from enumerate(_yaml_documents(loader(stream)), start=1)
    except yaml.YAMLError as exc:
        if json_error is not None:  # it looked like JSON: the JSON error says where it went wrong
            raise SnapshotError(f"{name}: not valid JSON: line {json_error.lineno}, column {json_error.colno}: "
                                f"{json_error.msg}") from exc
        raise SnapshotError(f"{name}: not valid YAML: {exc}") from exc


class _JsonList(msgspec.Struct):
    """A JSON ``List`` with its items left as raw JSON (no field of it is required: a file that is not one is told
    apart by :func:`_raw_list`)."""

    apiVersion: str = ""
    kind: str = ""
    items: list[msgspec.Raw] | None = None


_JSON_LIST = msgspec.json.Decoder(_JsonList)


def _raw_list(data: bytes) -> dict[str, Any] | None:
    """``data`` as one ``List`` document whose items are raw JSON (:func:`documents`' ``raw_items``), or None when it
    is anything else (several documents, another kind, not JSON): then it is read as :func:`documents` reads any
    file. msgspec checks every item is well-formed JSON while it skips it."""
    try:
        listed = _JSON_LIST.decode(data)
    except (msgspec.DecodeError, RecursionError):  # not a List, or not JSON as msgspec reads it: the plain path says
        return None
    if not listed.kind.endswith("List") or listed.items is None:
        return None
    return {"apiVersion": listed.apiVersion, "kind": listed.kind, "items": listed.items}


def _json_documents(text: str) -> list[Any] | json.JSONDecodeError:
    """The JSON documents of ``text`` (one, or several concatenated or one per line), or the error where ``text``
    stops being that (the caller reads it as YAML: JSON documents between ``---`` lines, a flow mapping)."""
    decoder = json.JSONDecoder()
    docs: list[Any] = []
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos].isspace():
            pos += 1
        if pos == end:
            return docs
        try:
            doc, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            return exc
        docs.append(doc)


def _yaml_documents(loader: Any) -> Iterator[Any]:
    """Every document of ``loader``'s stream (a :data:`YAML_LOADER` instance: PyYAML is untyped), built from its
    events (see the module docstring)."""
    try:
        loader.get_event()  # StreamStartEvent
        while not isinstance(loader.peek_event(), StreamEndEvent):
            start = loader.get_event()
            assert isinstance(start, DocumentStartEvent)
            doc = _document(loader)
            end = loader.get_event()
            assert isinstance(end, DocumentEndEvent)
            yield doc
        loader.get_event()
    finally:
        loader.dispose()


def _document(loader: Any) -> Any:
    """One document's value, built without recursion (an explicit stack of open collections).

    The loop runs once per event (a million for a 14 MB dump), so the common cases are decided inline: a
    scalar without a tag that no implicit resolver can claim (a quoted one, or a plain one whose first
    character starts no implicit type) is its text, and so is a plain one whose text was resolved to a string
    before (``name``, ``namespace``, ``type``: a quarter of a dump's scalars start like an implicit type);
    a scalar without an anchor is not remembered; the rest goes through :func:`_scalar` and :func:`_anchor`."""
    get_event = loader.get_event
    resolvers = loader.yaml_implicit_resolvers
    plain_tags: dict[str, str] = {}
    anchors: dict[str, Any] = {}
    marks: dict[str, Any] = {}
    stack: list[list[Any]] = []  # [container, pending key or _NO_KEY (mappings) / _SEQUENCE, merges, mark]
    frame: list[Any] | None = None  # stack[-1]
    while True:
        event = get_event()
        kind = type(event)
        value: Any
        if kind is ScalarEvent:
            value = event.value
            if event.tag is not None or (event.implicit[0] and value[:1] in resolvers
                                         and plain_tags.get(value) != STR_TAG):
                value = _scalar(loader, event, plain_tags)
            if event.anchor is not None:
                _anchor(anchors, marks, event, value)
        elif kind is MappingStartEvent or kind is SequenceStartEvent:
            mapping = kind is MappingStartEvent
            if event.tag not in (MAP_TAGS if mapping else SEQ_TAGS):
                raise yaml.constructor.ConstructorError(
                    None, None, f"the tag {event.tag!r} is not supported in a snapshot", event.start_mark)
            container: Any = {} if mapping else []
            if event.anchor is not None:
                _anchor(anchors, marks, event, container)
            frame = [container, _NO_KEY if mapping else _SEQUENCE, None, event.start_mark]
            stack.append(frame)
            continue
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            value, _, merges, _ = stack.pop()
            frame = stack[-1] if stack else None
            if merges:
                explicit = dict(value)
                value.clear()
                for merged in merges:
                    value.update(merged)
                value.update(explicit)
        elif kind is AliasEvent:
            if event.anchor not in anchors:
                raise yaml.composer.ComposerError(None, None, f"found undefined alias {event.anchor!r}",
                                                  event.start_mark)
            value = anchors[event.anchor]
        else:  # pragma: no cover - the parser emits nothing else inside a document
            raise yaml.composer.ComposerError(None, None, f"unexpected {kind.__name__}", event.start_mark)
        if frame is None:
            if value is _MERGE:  # ``<<`` anywhere but as a key: PyYAML has no constructor
                raise yaml.constructor.ConstructorError(None, None, f"could not determine a constructor for the "
                                                        f"tag {MERGE_TAG!r}", event.start_mark)
            return value
        key = frame[1]
        if key is _NO_KEY:
            frame[1] = value
        elif value is _MERGE:  # ``<<`` anywhere but as a key: PyYAML has no constructor
            raise yaml.constructor.ConstructorError(None, None, f"could not determine a constructor for the tag "
                                                    f"{MERGE_TAG!r}", event.start_mark)
        elif key is _SEQUENCE:
            frame[0].append(value)
        elif key is _MERGE:
            frame[2] = (frame[2] or []) + _merges(value, frame[3], event.start_mark)
            frame[1] = _NO_KEY
        else:
            try:
                frame[0][key] = value
            except TypeError as exc:
                raise yaml.constructor.ConstructorError("while constructing a mapping", frame[3],
                                                        "found unhashable key", event.start_mark) from exc
            frame[1] = _NO_KEY


def _anchor(anchors: dict[str, Any], marks: dict[str, Any], event: Any, value: Any) -> None:
    """Remember ``value`` under the event's anchor (not None); a second anchor of that name is an error, as in
    PyYAML."""
    if event.anchor in anchors:
        raise yaml.composer.ComposerError(f"found duplicate anchor {event.anchor!r}; first occurrence",
                                          marks[event.anchor], "second occurrence", event.start_mark)
    anchors[event.anchor] = value
    marks[event.anchor] = event.start_mark


def _merges(value: Any, mapping_mark: Any, mark: Any) -> list[dict[Any, Any]]:
    """What a ``<<`` key merges, in update order (PyYAML's ``flatten_mapping``: the first of a list wins)."""
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        return list(reversed(value))
    raise yaml.constructor.ConstructorError("while constructing a mapping", mapping_mark,
                                            "expected a mapping or list of mappings for merging", mark)


def _scalar(loader: Any, event: Any, plain_tags: dict[str, str]) -> Any:
    """A scalar's value as ``safe_load`` makes it; a plain scalar whose first character starts no implicit
    type (``gpu-1``, ``Running``) is a string at once, without the resolver's regular expressions, and the tag
    of any other plain scalar is resolved once per distinct text (``plain_tags``: text → tag; keys such as
    ``name`` and ``namespace`` recur in every object)."""
    value: str = event.value
    tag = event.tag
    if tag is None or tag == "!":
        if not event.implicit[0] or value[:1] not in loader.yaml_implicit_resolvers:
            return value
        tag = plain_tags.get(value)
        if tag is None:
            tag = loader.resolve(ScalarNode, value, event.implicit)
            if len(plain_tags) >= MAX_REMEMBERED_TAGS:
                plain_tags.clear()
            plain_tags[value] = tag
    if tag == STR_TAG:
        return value
    if tag == MERGE_TAG:
        return _MERGE
    node = ScalarNode(tag, value, event.start_mark, event.end_mark, event.style)
    constructors = loader.yaml_constructors
    construct = constructors.get(tag, constructors[None])  # None: construct_undefined, an error
    return construct(loader, node)
