"""The API server's create/update validation that our writes can trip over, for the emulator (``apiserver.py``).

kmock stores whatever it is sent; a real API server answers ``422 Invalid``. A whole class
of writes (every Event) was once accepted by the emulator and rejected by every real cluster,
so the emulator applies the rules below and answers like the real server. Each rule names its
upstream source (kubernetes/kubernetes, v1.37-era sources read through the search index):

* object names on create, for every kind: ``ValidateObjectMetaAccessor`` in
  ``staging/src/k8s.io/apimachinery/pkg/api/validation/objectmeta.go`` with the kind's name
  rule: ``NameIsDNSSubdomain`` (pods, nodes, PodGroups, claims, events.k8s.io Events, ...) or
  ``NameIsDNSLabel`` (namespaces). ``generateName`` is checked as a prefix (only a trailing '-'
  is masked: ``maskTrailingDash`` in ``generic.go``), and the generated name as a name. Core
  ``v1`` Events are the exception: ``ValidateEventCreate`` skips ObjectMeta validation for
  ``v1`` requests "for backwards compatibility", so only the path-segment rule of
  ``rest.BeforeCreate`` applies to them.
* name generation: ``SimpleNameGenerator`` (``apiserver/pkg/storage/names/generate.go``): the
  prefix cut to 58 characters plus 5 random characters from ``utilrand``'s alphabet.
* ``events.k8s.io/v1`` Event bodies: ``ValidateEventCreate`` / ``ValidateEventUpdate`` and
  ``legacyValidateEvent`` in ``pkg/apis/core/validation/events.go``, on the internal field names
  the ``v1`` conversion maps to (``pkg/apis/events/v1/conversion.go``: ``note`` → ``message``,
  ``regarding`` → ``involvedObject``, ``deprecatedCount`` → ``count``, ...). Error paths use
  those internal names, as the real server's messages do.
* string checks: ``IsDNS1123Subdomain``, ``IsDNS1123Label``, ``IsQualifiedName``,
  ``RegexError``, ``MaxLenError`` (``apimachinery/pkg/util/validation/validation.go``); lengths
  are Go ``len``, i.e. UTF-8 bytes.

* strict schemas of a version (:func:`schema_errors`, used by the older-cluster emulators
  ``apiserver136.py`` and ``apiserver125.py``): the object against that version's OpenAPI in
  ``kubernetes-validate``, unknown fields refused — a server's ``fieldValidation=Strict``, stricter
  than its default (``Warn`` drops them): a write the old server could not store answers 422.

Not emulated: field-level schema validation of other kinds, admission, defaulting.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]

JSON = dict[str, Any]

# -- apimachinery/pkg/util/validation/validation.go -------------------------------------------------------------
DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
                     "must start and end with an alphanumeric character")
DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + r"(\." + DNS1123_LABEL_FMT + ")*"
DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                         "'.', and must start and end with an alphanumeric character")
DNS1123_SUBDOMAIN_MAX = 253
QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QUALIFIED_NAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                      "alphanumeric character")
QUALIFIED_NAME_MAX = 63

# -- pkg/apis/core/validation/events.go -------------------------------------------------------------------------
REPORTING_INSTANCE_MAX = 128
ACTION_MAX = 128
REASON_MAX = 128
NOTE_MAX = 1024

# -- apiserver/pkg/storage/names/generate.go, apimachinery/pkg/util/rand/rand.go --------------------------------
GENERATED_PREFIX_MAX = 58
GENERATED_SUFFIX_LEN = 5
GENERATED_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

MICRO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)")
"""RFC 3339 as Go's ``time.Parse`` accepts it for ``metav1.MicroTime`` / ``metav1.Time``; anything else is a
decode error (400), not a validation error."""

_LABEL = re.compile(DNS1123_LABEL_FMT)
_SUBDOMAIN = re.compile(DNS1123_SUBDOMAIN_FMT)
_QUALIFIED = re.compile(QUALIFIED_NAME_FMT)

EVENTS_V1 = ("events.k8s.io", "v1", "events")
CORE_EVENTS = ("", "v1", "events")


@dataclass(frozen=True)
class FieldError:
    """One ``field.Error``: ``type`` is the cause reason (``FieldValueInvalid``, ``FieldValueRequired``)."""

    type: str
    field: str
    bad_value: Any = None
    detail: str = ""

    def body(self) -> str:
        """``field.Error.ErrorBody()``: ``Invalid value: "x": detail`` / ``Required value: detail``."""
        if self.type == "FieldValueRequired":
            text = "Required value"
        elif self.type == "FieldValueTooLong":
            text = "Too long"
        elif self.type == "FieldValueForbidden":
            text = "Forbidden"
        elif self.type == "FieldValueDuplicate":
            text = f"Duplicate value: {json.dumps(self.bad_value)}"
        elif self.type == "FieldValueNotSupported":
            text = "Unsupported value" if self.bad_value is None else f"Unsupported value: {json.dumps(self.bad_value)}"
        elif isinstance(self.bad_value, str):
            text = f"Invalid value: {json.dumps(self.bad_value)}"
        else:
            text = f"Invalid value: {json.dumps(self.bad_value, sort_keys=True, separators=(',', ':'))}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


def invalid(field: str, value: Any, detail: str) -> FieldError:
    return FieldError("FieldValueInvalid", field, value, detail)


def required(field: str, detail: str = "") -> FieldError:
    return FieldError("FieldValueRequired", field, None, detail)


def forbidden(field: str, detail: str) -> FieldError:
    return FieldError("FieldValueForbidden", field, None, detail)


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """``RegexError``: ``msg (e.g. 'a' or 'b', regex used for validation is 'fmt')``."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}'" for e in examples)
    return f"{msg} (e.g. {shown}, regex used for validation is '{fmt}')"


def max_len_error(n: int) -> str:
    return f"must be no more than {n} characters"


def dns1123_subdomain(value: str) -> list[str]:
    """``IsDNS1123Subdomain``: the problems with ``value``, empty when it is a valid subdomain (≤ 253 bytes)."""
    errs = []
    if len(value.encode()) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _SUBDOMAIN.fullmatch(value):
        errs.append(regex_error(DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def dns1123_label(value: str) -> list[str]:
    """``IsDNS1123Label``: the problems with ``value``, empty when it is a valid label (≤ 63 bytes)."""
    errs = []
    if len(value.encode()) > DNS1123_LABEL_MAX:
        errs.append(max_len_error(DNS1123_LABEL_MAX))
    if not _LABEL.fullmatch(value):
        errs.append(regex_error(DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def qualified_name(value: str) -> list[str]:
    """``IsQualifiedName``: ``[prefix/]name``, name ≤ 63 characters, prefix a DNS subdomain."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) > 2:
        return ["a qualified name " + regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name",
                                                  "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        errs += [f"prefix part {m}" for m in dns1123_subdomain(prefix)] if prefix else []
    if not name:
        errs.append("name part must be non-empty")
    elif len(name.encode()) > QUALIFIED_NAME_MAX:
        errs.append("name part " + max_len_error(QUALIFIED_NAME_MAX))
    if not _QUALIFIED.fullmatch(name):
        errs.append("name part " + regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def path_segment(value: str, prefix: bool) -> list[str]:
    """``path.IsValidPathSegmentName`` / ``IsValidPathSegmentPrefix`` (apimachinery/pkg/api/validation/path)."""
    if not prefix and value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


def _mask_trailing_dash(name: str) -> str:
    """``maskTrailingDash``: a generateName may end in '-' (the suffix follows); it may not end in '.'."""
    return name[:-2] + "a" if name.endswith("-") else name  # upstream replaces the last two characters


def name_rule(group: str, version: str, plural: str, kind: str) -> str:
    """Which ``ValidateNameFunc`` the server applies to this kind: ``subdomain``, ``label`` or ``segment``."""
    if (group, version, plural) == CORE_EVENTS:
        return "segment"
    if kind == "Namespace":
        return "label"
    return "subdomain"


def _name_problems(rule: str, name: str, prefix: bool) -> list[str]:
    if rule == "segment":
        return path_segment(name, prefix)
    if prefix:
        name = _mask_trailing_dash(name)
    return dns1123_label(name) if rule == "label" else dns1123_subdomain(name)


def generate_name(prefix: str, rng: random.Random | None = None) -> str:
    """``SimpleNameGenerator.GenerateName``: ``prefix`` cut to 58 characters + 5 random characters."""
    pick = (rng or random).choice
    return prefix[:GENERATED_PREFIX_MAX] + "".join(pick(GENERATED_ALPHABET) for _ in range(GENERATED_SUFFIX_LEN))


def validate_metadata(md: JSON, rule: str) -> list[FieldError]:
    """``ValidateObjectMetaAccessor``'s name part, after name generation: ``generateName`` as a prefix, then
    ``name`` (required)."""
    errs: list[FieldError] = []
    gen, name = md.get("generateName") or "", md.get("name") or ""
    if gen:
        errs += [invalid("metadata.generateName", gen, m) for m in _name_problems(rule, gen, prefix=True)]
    if not name:
        errs.append(required("metadata.name", "name or generateName is required"))
    else:
        errs += [invalid("metadata.name", name, m) for m in _name_problems(rule, name, prefix=False)]
    return errs


TOTAL_ANNOTATION_SIZE_MAX = 256 * 1024
"""``TotalAnnotationSizeLimitB`` (apimachinery/pkg/api/validation/objectmeta.go)."""


def validate_annotations(md: JSON) -> list[FieldError]:
    """``ValidateAnnotations``, on create and on every update of any kind: each key a qualified name (checked
    lower-cased), keys and values together at most 256 KiB."""
    annotations: dict[str, Any] = md.get("annotations") or {}
    errs = [invalid("metadata.annotations", k, m) for k in annotations for m in qualified_name(k.lower())]
    total = sum(len(k.encode()) + len(str(v or "").encode()) for k, v in annotations.items())
    if total > TOTAL_ANNOTATION_SIZE_MAX:
        errs.append(FieldError("FieldValueTooLong", "metadata.annotations", None,
                               f"may not be more than {TOTAL_ANNOTATION_SIZE_MAX} bytes"))
    return errs


CONDITION_REASON_FMT = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
CONDITION_REASON_MSG = ("a condition reason must start with alphabetic character, optionally followed by a string of "
                        "alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'")
CONDITION_REASON_MAX = 1024
CONDITION_MESSAGE_MAX = 32 * 1024
CONDITION_STATUSES = ("False", "True", "Unknown")
_CONDITION_REASON = re.compile(CONDITION_REASON_FMT)


def validate_conditions(conditions: Any, path: str) -> list[FieldError]:
    """``metav1validation.ValidateConditions`` (apimachinery ``pkg/apis/meta/v1/validation/validation.go``) on a
    list of ``metav1.Condition``: each ``type`` a qualified name and unique, ``status`` True / False / Unknown,
    ``observedGeneration`` ≥ 0, ``lastTransitionTime`` set, ``reason`` set, CamelCase (``conditionReasonFmt``) and at
    most 1024 bytes, ``message`` at most 32768 bytes. That ``message`` may not be *omitted* (it may be "") is the
    schema's ``required``, checked with it."""
    if not isinstance(conditions, list):
        return []
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, cond in enumerate(conditions):
        if not isinstance(cond, dict):
            continue
        here = f"{path}[{i}]"
        ctype, status, reason = cond.get("type") or "", cond.get("status") or "", cond.get("reason") or ""
        if not isinstance(ctype, str) or not ctype:
            errs.append(required(f"{here}.type"))
        else:
            errs += [invalid(f"{here}.type", ctype, m) for m in qualified_name(ctype)]
            if ctype in seen:
                errs.append(FieldError("FieldValueDuplicate", f"{here}.type", ctype))
            seen.add(ctype)
        if status not in CONDITION_STATUSES:
            errs.append(FieldError("FieldValueNotSupported", f"{here}.status", status,
                                   "supported values: " + ", ".join(f'"{s}"' for s in CONDITION_STATUSES)))
        generation = cond.get("observedGeneration")
        if isinstance(generation, int) and generation < 0:
            errs.append(invalid(f"{here}.observedGeneration", generation, "must be greater than or equal to zero"))
        if not cond.get("lastTransitionTime"):
            errs.append(required(f"{here}.lastTransitionTime", "must be set"))
        if not isinstance(reason, str) or not reason:
            errs.append(required(f"{here}.reason", "must be set"))
        else:
            if not _CONDITION_REASON.fullmatch(reason):
                errs.append(invalid(f"{here}.reason", reason, CONDITION_REASON_MSG))
            if len(reason.encode()) > CONDITION_REASON_MAX:
                errs.append(FieldError("FieldValueTooLong", f"{here}.reason", None,
                                       f"may not be more than {CONDITION_REASON_MAX} bytes"))
        message = cond.get("message")
        if isinstance(message, str) and len(message.encode()) > CONDITION_MESSAGE_MAX:
            errs.append(FieldError("FieldValueTooLong", f"{here}.message", None,
                                   f"may not be more than {CONDITION_MESSAGE_MAX} bytes"))
    return errs


def fully_qualified_name(value: str) -> list[str]:
    """``IsFullyQualifiedName`` (apimachinery ``pkg/util/validation/validation.go``): a DNS subdomain of at least
    three dot-separated segments (webhook names)."""
    if not value:
        return ["Required value"]
    if problems := dns1123_subdomain(value):
        return problems
    if len(value.split(".")) < 3:
        return ["should be a domain with at least three segments separated by dots"]
    return []


def _internal_event(ev: JSON) -> JSON:
    """The fields of an ``events.k8s.io/v1`` Event under their internal (core) names (conversion.go)."""
    return {"namespace": (ev.get("metadata") or {}).get("namespace") or "",
            "eventTime": ev.get("eventTime"), "series": ev.get("series"),
            "reportingController": ev.get("reportingController") or "",
            "reportingInstance": ev.get("reportingInstance") or "", "action": ev.get("action") or "",
            "reason": ev.get("reason") or "", "message": ev.get("note") or "", "type": ev.get("type") or "",
            "involvedObject": ev.get("regarding") or {}, "related": ev.get("related"),
            "firstTimestamp": ev.get("deprecatedFirstTimestamp"), "lastTimestamp": ev.get("deprecatedLastTimestamp"),
            "count": ev.get("deprecatedCount") or 0, "source": ev.get("deprecatedSource") or {}}


def _legacy(e: JSON) -> list[FieldError]:
    """``legacyValidateEvent`` for an Event with ``eventTime`` set (all events.k8s.io/v1 Events)."""
    errs: list[FieldError] = []
    ns = e["namespace"]
    if not (e["involvedObject"].get("namespace") or "") and ns not in ("default", "kube-system"):
        errs.append(invalid("involvedObject.namespace", "", "does not match event.namespace"))
    controller = e["reportingController"]
    if not controller:
        errs.append(required("reportingController"))
    errs += [invalid("reportingController", controller, m) for m in qualified_name(controller)]
    for fld, limit in (("reportingInstance", REPORTING_INSTANCE_MAX), ("action", ACTION_MAX),
                       ("reason", REASON_MAX)):
        if not e[fld]:
            errs.append(required(fld))
        if len(e[fld].encode()) > limit:
            errs.append(invalid(fld, "", f"can have at most {limit} characters"))
    if len(e["message"].encode()) > NOTE_MAX:
        errs.append(invalid("message", "", f"can have at most {NOTE_MAX} characters"))
    errs += [invalid("namespace", ns, m) for m in dns1123_subdomain(ns)]
    return errs


def _series(e: JSON) -> list[FieldError]:
    """``validateV1EventSeries``: a series counts ≥ 2 observations and has a ``lastObservedTime``."""
    series = e["series"]
    if series is None:
        return []
    errs = []
    if int(series.get("count") or 0) < 2:
        errs.append(invalid("series.count", "", "should be at least 2"))
    if not series.get("lastObservedTime"):
        errs.append(required("series.lastObservedTime"))
    return errs


def bad_times(ev: JSON) -> list[str]:
    """Time fields that Go could not decode (the server answers 400 BadRequest before validating)."""
    stamps = [("eventTime", ev.get("eventTime")), ("series.lastObservedTime", (ev.get("series") or {}).get(
        "lastObservedTime"))]
    return [f"{path}: {value!r} is not RFC 3339" for path, value in stamps
            if value not in (None, "") and not (isinstance(value, str) and MICRO_TIME.fullmatch(value))]


def validate_event_create(ev: JSON) -> list[FieldError]:
    """``ValidateEventCreate`` for an ``events.k8s.io/v1`` request, on the generated name."""
    e = _internal_event(ev)
    errs = _legacy(e) + validate_metadata(ev.get("metadata") or {}, "subdomain") + _series(e)
    if not e["eventTime"]:
        errs.append(required("eventTime"))
    if e["type"] not in ("Normal", "Warning"):
        errs.append(invalid("type", "", f"has invalid value: {e['type']}"))
    for fld in ("firstTimestamp", "lastTimestamp"):
        if e[fld]:
            errs.append(invalid(fld, "", "needs to be unset"))
    if e["count"]:
        errs.append(invalid("count", "", "needs to be unset"))
    if e["source"].get("component") or e["source"].get("host"):
        errs.append(invalid("source", "", "needs to be unset"))
    return errs


IMMUTABLE_EVENT_FIELDS = ("involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp",
                          "count", "type", "eventTime", "action", "related", "reportingController",
                          "reportingInstance")
"""``ValidateEventUpdate``'s ``ValidateImmutableField`` calls, in its order."""


def validate_event_update(new: JSON, old: JSON) -> list[FieldError]:
    """``ValidateEventUpdate`` for an ``events.k8s.io/v1`` request (PATCH and PUT): legacy rules, the series when it
    changed, and every field but the series immutable."""
    n, o = _internal_event(new), _internal_event(old)
    errs = _legacy(n)
    if n["series"] != o["series"]:
        errs += _series(n)
    errs += [invalid(fld, n[fld], "field is immutable") for fld in IMMUTABLE_EVENT_FIELDS if n[fld] != o[fld]]
    return errs


def schema_errors(body: JSON, api_version: str, kind: str, kube_version: str) -> list[FieldError]:
    """``body`` (as stored, apiVersion/kind filled in) against the strict OpenAPI schema of ``kube_version``
    (``"1.25.0"``): the first violation (kubernetes-validate stops there) as a ``FieldInvalid``, or none."""
    try:
        kubernetes_validate.validate({**body, "apiVersion": api_version, "kind": kind}, kube_version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return [invalid(".".join(str(p) for p in exc.path) or "<root>", None, exc.message)]
    return []


def invalid_status(group: str, kind: str, name: str, errs: list[FieldError]) -> JSON:
    """``errors.NewInvalid``'s ``Status`` (apimachinery/pkg/api/errors/errors.go): code 422, reason ``Invalid``,
    ``details.causes`` one per field error, the message ``Kind.group "name" is invalid: <errors>``."""
    qualified = f"{kind}.{group}" if group else kind
    aggregate = str(errs[0]) if len(errs) == 1 else "[" + ", ".join(str(e) for e in errs) + "]"
    details: JSON = {"name": name, "kind": kind,
                     "causes": [{"reason": e.type, "message": e.body(), "field": e.field} for e in errs]}
    if group:
        details["group"] = group
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f"{qualified} {json.dumps(name)} is invalid: {aggregate}", "reason": "Invalid",
            "details": details, "code": 422}
