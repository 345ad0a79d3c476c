"""Custom resources for the emulator (``apiserver.py``): the CRDs it serves and how a real server checks their writes.

kmock stores any JSON; a real API server checks a custom resource against its CRD's ``openAPIV3Schema`` (a
structural schema, apiextensions-apiserver ``pkg/apiserver/schema``) on every create and update:

* **Pruning** (``pruning/algorithm.go``): a field the schema does not declare is dropped before the object is
  stored; with the default ``fieldValidation=Warn`` (KEP-2885, the default since v1.23) the request still succeeds
  and the response carries a ``Warning: unknown field "status.conditions"`` header; with ``Strict`` it is a 400.
  The emulator prunes, and records each warning in :attr:`ApiServer.warnings`; the ``k8s`` fixture fails the
  test when any was recorded, so a write of a field the CRD does not have can never pass unnoticed.
* **Validation** (``validation/validation.go``, kube-openapi ``validate``): a value of the wrong type, an int32
  out of range, a ``date-time`` that does not parse, a quantity string that does not match the pattern, is a
  422 ``Invalid`` naming the field: ``spec.minMember: Invalid value: "string": spec.minMember in body must be of
  type integer: "string"``.

:data:`SCHEMAS` holds the CRDs served: scheduler-plugins' PodGroup from the chart's vendored copy
(``charts/gang-scheduler/files/scheduling.x-k8s.io_podgroups.yaml``), so the schema tested is the one installed.
Covered: ``type``, ``properties``, ``additionalProperties``, ``anyOf`` (with ``x-kubernetes-int-or-string``),
``pattern``, ``format`` int32 / date-time; ``metadata`` is left to ``apivalidation.py``.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from tests.chart.helmchart import CHART_DIR
from tests.integration.apivalidation import MICRO_TIME, FieldError, invalid

JSON = dict[str, Any]
Schema = dict[str, Any]

INT32 = (-(2**31), 2**31 - 1)


def _load(path: str) -> tuple[tuple[str, str, str], Schema]:
    crd = yaml.safe_load((CHART_DIR / path).read_text())
    (version,) = crd["spec"]["versions"]
    return (crd["spec"]["group"], version["name"], crd["spec"]["names"]["plural"]), version["schema"]["openAPIV3Schema"]


SCHEMAS: dict[tuple[str, str, str], Schema] = dict([_load("files/scheduling.x-k8s.io_podgroups.yaml")])
"""(group, version, plural) → the CRD's ``openAPIV3Schema``."""

_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


def prune(value: Any, schema: Schema, path: str = "") -> list[str]:
    """Drop, in place, the fields of ``value`` that ``schema`` does not declare; the warnings a real server sends
    for them (``unknown field "<path>"``). ``metadata`` is not pruned (ObjectMeta is not in a CRD's schema)."""
    if not isinstance(value, dict) or schema.get("type") != "object":
        return []
    props = schema.get("properties")
    extra = schema.get("additionalProperties")
    warnings: list[str] = []
    for key in list(value):
        here = f"{path}.{key}" if path else key
        if props is not None and key in props:
            if key != "metadata" or path:
                warnings += prune(value[key], props[key], here)
        elif isinstance(extra, dict):
            warnings += prune(value[key], extra, here)
        elif props is not None and not schema.get("x-kubernetes-preserve-unknown-fields"):
            del value[key]
            warnings.append(f'unknown field "{here}"')
    return warnings


def validate(value: Any, schema: Schema, path: str = "") -> list[FieldError]:
    """The field errors ``value`` (already pruned) has against ``schema`` (see the module docstring)."""
    if value is None:
        return []
    if "anyOf" in schema:
        if schema.get("x-kubernetes-int-or-string") and isinstance(value, int | str) and not isinstance(value, bool):
            if isinstance(value, str) and "pattern" in schema and not re.search(schema["pattern"], value):
                return [invalid(path, value, f'{path} in body should match \'{schema["pattern"]}\'')]
            return []
        return [invalid(path, value, f"{path} in body must be of type integer or string")]
    kind = schema.get("type")
    errors: list[FieldError] = []
    if kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            return [invalid(path, value, f'{path} in body must be of type integer: "{_type_name(value)}"')]
        if schema.get("format") == "int32" and not INT32[0] <= value <= INT32[1]:
            return [invalid(path, value, f"{path} in body should be less than or equal to {INT32[1]}"
                            if value > 0 else f"{path} in body should be greater than or equal to {INT32[0]}")]
        return []
    if kind in _TYPES and not isinstance(value, _TYPES[kind]):
        return [invalid(path, value, f'{path} in body must be of type {kind}: "{_type_name(value)}"')]
    if kind == "string" and schema.get("format") == "date-time" and not MICRO_TIME.fullmatch(value):
        return [invalid(path, value, f"{path} in body must be of type date-time: \"{value}\"")]
    if kind == "object":
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            here = f"{path}.{key}" if path else key
            sub = props.get(key) if key in props else (extra if isinstance(extra, dict) else None)
            if sub is not None and not (key == "metadata" and not path):
                errors += validate(item, sub, here)
    return errors


def _type_name(value: Any) -> str:
    """The JSON type name kube-openapi reports for a value."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number" if isinstance(value, float) else "integer"
    return {str: "string", list: "array", dict: "object"}.get(type(value), "null")
