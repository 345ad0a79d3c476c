"""The strict OpenAPI schemas of a Kubernetes version, for the emulator (``apiserver.py``): what a real API server
refuses of an object's fields, as field errors in the server's own words.

The schemas are the ones ``kubernetes-validate`` ships (``kubernetes-json-schema/v<version>-local-strict``: the
OpenAPI of that release, with ``additionalProperties: false`` on every object). ``kubernetes_validate.validate``
reads its 1.8 MB ``_definitions.json`` on every call; the emulator validates every write, so each
(version, apiVersion, kind) validator is built once here (:func:`validator`) and kept.

Most writes are valid, and walking a schema with ``jsonschema`` costs about half a millisecond per object (the
end-to-end benchmark's emulator validates several writes per pod). So :func:`errors` first asks a validator
compiled to Python code by ``fastjsonschema`` (:func:`fast_check`, the same schema and format rules), which only
says whether the object passes, in about a twentieth of the time; only an object it refuses is walked by
``jsonschema`` for its field errors. The two agree on every object (``tests/property/test_schema_fast_check.py``);
were the fast check ever to refuse what ``jsonschema`` passes, the result would still be ``jsonschema``'s.

What a JSON-schema error becomes (apimachinery ``field.Error``, ``staging/src/k8s.io/apimachinery/pkg/util/
validation/field/errors.go``):

* a ``required`` property missing: ``FieldValueRequired`` at the property's path
  (``status.conditions[0].message: Required value``);
* a property the schema does not declare: ``FieldValueNotSupported`` ``unknown field`` — a server with
  ``fieldValidation=Strict`` refuses it; with the default (``Warn``) it drops it, which is no better for a writer
  that meant it;
* a wrong type, an enum value not listed, an ``int32`` out of range, a ``date-time`` Go's RFC 3339 parser would
  not take: ``FieldValueInvalid``.

Paths are written as the server writes them: names joined by dots, list indices in brackets.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from typing import Any

import fastjsonschema
import jsonschema
import referencing
from kubernetes_validate import utils as kv  # type: ignore[import-untyped]

from tests.integration.apivalidation import MICRO_TIME, FieldError, invalid, required

JSON = dict[str, Any]

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)

FORMATS = jsonschema.FormatChecker(formats=())


def _within(value: object, bounds: tuple[int, int]) -> bool:
    """A number within ``bounds``, or not a number: a float counts (JSON Schema's ``integer`` admits ``2.0``, and Go
    refuses ``9.223372036854776e+18`` for an int64 as it refuses ``2**63``)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return True
    return bounds[0] <= value <= bounds[1]


@FORMATS.checks("int32")
def _int32(value: object) -> bool:
    return _within(value, INT32)


@FORMATS.checks("int64")
def _int64(value: object) -> bool:
    return _within(value, INT64)


@FORMATS.checks("date-time")
def _date_time(value: object) -> bool:
    return not isinstance(value, str) or MICRO_TIME.fullmatch(value) is not None


def _schema_dir(kube_version: str) -> str:
    return f"kubernetes-json-schema/v{kube_version}-local-strict"


@functools.cache
def _definitions_json(kube_version: str) -> JSON:
    return kv.schema_contents(f"{_schema_dir(kube_version)}/_definitions.json", kube_version)  # type: ignore[no-any-return]


@functools.cache
def _definitions(kube_version: str) -> referencing.Registry[Any]:
    defs = _definitions_json(kube_version)
    return referencing.Resource.from_contents(defs) @ referencing.Registry()  # type: ignore[return-value]


def _kind_schema(kube_version: str, api_version: str, kind: str) -> JSON | None:
    """The release's strict schema of ``kind`` in ``api_version``, or None when it has none (a custom resource)."""
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        return kv.schema_contents(  # type: ignore[no-any-return]
            f"{_schema_dir(kube_version)}/{kind.lower()}-{group_version}.json", kube_version)
    except FileNotFoundError:
        return None


@functools.cache
def validator(kube_version: str, api_version: str, kind: str) -> jsonschema.protocols.Validator | None:
    """The strict validator of ``kind`` in ``api_version`` (``"scheduling.k8s.io/v1beta1"``, ``"v1"``) at
    ``kube_version`` (``"1.37.0"``), or None when that release has no schema for it (a custom resource)."""
    schema = _kind_schema(kube_version, api_version, kind)
    if schema is None:
        return None
    registry = referencing.Resource.from_contents(schema) @ _definitions(kube_version)
    return jsonschema.Draft202012Validator(schema, registry=registry, format_checker=FORMATS)


FAST_FORMATS: dict[str, Any] = {"int32": _int32, "int64": _int64, "date-time": _date_time,
                                 "byte": lambda _: True, "double": lambda _: True}
"""The formats :data:`FORMATS` checks, for ``fastjsonschema``; the schemas' other formats (``byte``, ``double``) are
not checked by :data:`FORMATS` either."""


@functools.cache
def fast_check(kube_version: str, api_version: str, kind: str) -> Any:
    """The strict schema of :func:`validator` compiled by ``fastjsonschema``: a callable that returns for an object
    that passes and raises ``fastjsonschema.JsonSchemaException`` (without details) for one that does not; None when
    the release has no schema for the kind. It neither fills in defaults nor changes the object."""
    schema = _kind_schema(kube_version, api_version, kind)
    if schema is None:
        return None
    definitions = _integer_ranges(_definitions_json(kube_version))
    return fastjsonschema.compile(_integer_ranges(schema), handlers={"https": lambda _uri: definitions},
                                  formats=FAST_FORMATS, use_default=False, detailed_exceptions=False)


def _integer_ranges(node: Any) -> Any:
    """A copy of ``node`` where each ``int32`` / ``int64`` format also states its range as ``minimum`` and
    ``maximum``: ``fastjsonschema`` checks a format on strings only, so an out-of-range integer would pass it."""
    if isinstance(node, list):
        return [_integer_ranges(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _integer_ranges(value) for key, value in node.items()}
    fmt = out.get("format")
    bounds = {"int32": INT32, "int64": INT64}.get(fmt) if isinstance(fmt, str) else None  # not a property "format"
    if bounds is not None:
        out.setdefault("minimum", bounds[0])
        out.setdefault("maximum", bounds[1])
    return out


def known(kube_version: str, api_version: str, kind: str) -> bool:
    """Whether the release has a schema for ``kind`` (built-in), so :func:`errors` checks it."""
    return validator(kube_version, api_version, kind) is not None


def path_of(parts: Any) -> str:
    """A JSON-schema path (``deque(["status", "conditions", 0])``) as a field path (``status.conditions[0]``)."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _field_errors(err: jsonschema.ValidationError) -> Iterator[FieldError]:
    path = path_of(err.absolute_path)
    if err.validator == "required":
        have = err.instance if isinstance(err.instance, dict) else {}
        for name in err.validator_value:
            if name not in have:
                yield required(_join(path, name))
    elif err.validator == "additionalProperties":
        props = set((err.schema.get("properties") or {}) if isinstance(err.schema, dict) else ())
        for name in (err.instance if isinstance(err.instance, dict) else {}):
            if name not in props:
                yield FieldError("FieldValueNotSupported", _join(path, name), None, "unknown field")
    elif err.validator in ("oneOf", "anyOf") and err.context:
        best = min(err.context, key=lambda e: len(list(e.absolute_path)))  # type: ignore[no-any-return]
        yield invalid(path, err.instance, best.message)
    elif err.validator == "format":
        yield invalid(path, err.instance, f"{path or 'value'} in body must be of type {err.validator_value}: "
                                          f"{json.dumps(err.instance)}")
    else:
        yield invalid(path, err.instance, err.message)


def errors(body: JSON, api_version: str, kind: str, kube_version: str) -> list[FieldError]:
    """Every field error ``body`` (as it would be stored) has against the strict schema of ``kind``; empty when it
    passes or the release has no schema for the kind. ``apiVersion`` and ``kind`` are filled in when missing (list
    items and PATCH results may lack them)."""
    fast = fast_check(kube_version, api_version, kind)
    if fast is None:
        return []
    doc = {**body, "apiVersion": api_version, "kind": kind}
    try:
        fast(doc)
        return []
    except fastjsonschema.JsonSchemaException:
        pass
    check = validator(kube_version, api_version, kind)
    assert check is not None  # the same schema file
    found = {str(fe): fe for err in check.iter_errors(doc) for fe in _field_errors(err)}
    return [found[k] for k in sorted(found)]
