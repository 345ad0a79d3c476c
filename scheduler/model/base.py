"""The pydantic base for API objects: camelCase aliases, unknown fields ignored, immutable.

Models describe exactly the fields the scheduler reads (architecture §1); everything else
in an object is ignored so newer servers and extra fields never break parsing.
``tests/unit/model/test_schema.py`` checks every alias against the v1.37 OpenAPI schema.

Where the API server's decoder or validation would refuse a value the scheduler reads, the field
type refuses it too (:data:`Int32`; quantities in :mod:`scheduler.model.quantity`), so a bad
object is reported, by :func:`describe`, instead of being scheduled wrongly.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, TypeVar

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, Strict, ValidationError
from pydantic.alias_generators import to_camel

from scheduler.field_errors import plain_message

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

Int32 = Annotated[int, Strict(), Field(ge=INT32_MIN, le=INT32_MAX)]
"""An ``int32`` API field: a JSON integer within int32. Strict: a string (``"2"``) or a boolean is
refused, as Go's JSON decoder refuses it for an ``int32`` (``cannot unmarshal string into Go
struct field … of type int32``), and so is ``10**30``, which does not fit."""

Time = AwareDatetime
"""A ``metav1.Time`` field: RFC 3339 with a time zone (``2026-01-01T00:00:00Z``), as the API server writes it and as
it requires it; a time without a zone (``2026-01-01T00:00:00``, a bare YAML date) is refused, as Go's
``time.Time`` JSON decoder refuses it, so objects of a snapshot are never compared by an ambiguous time."""

NESTED_TOO_DEEP = "gang-scheduler.io/nested-too-deep"
"""Key set (True) on the stub the client's decoder puts in place of an object nested too deeply to decode
(``scheduler.client.decoding``): the cache refuses such a stub as ``too_deep``."""

MAX_MESSAGE_ERRORS = 3
"""Errors :func:`describe` spells out; the rest are counted (the first few name the mistake)."""


class KubeModel(BaseModel):
    """Base of every API model: ``snake_case`` attributes, ``camelCase`` on the wire, frozen. Python code builds
    models by attribute name; what comes from the API (or a file in its shape) goes through :func:`from_wire`."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        frozen=True,
    )


class OwnerReference(KubeModel):
    """``metav1.OwnerReference``."""

    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None


class ObjectMeta(KubeModel):
    """``metav1.ObjectMeta``: the identity and bookkeeping fields the scheduler reads.

    Kept small on purpose: it is parsed for every pod of the cluster (50,000 of them cost the cache
    about 12 KiB each), so fields only some kinds need live in subclasses (:class:`OwnedObjectMeta`).
    """

    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int | None = None
    creation_timestamp: Time | None = None
    deletion_timestamp: Time | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class OwnedObjectMeta(ObjectMeta):
    """:class:`ObjectMeta` with ``ownerReferences``, for the kinds whose owners are read or reported:
    ResourceClaims (generated for a pod or a PodGroup), PodGroups and CompositePodGroups (owned by their
    workload's controller)."""

    owner_references: tuple[OwnerReference, ...] = ()


class LabelSelectorRequirement(KubeModel):
    """``metav1.LabelSelectorRequirement``: ``key``, ``operator`` (In | NotIn | Exists | DoesNotExist), ``values``."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


class LabelSelector(KubeModel):
    """``metav1.LabelSelector``: ``matchLabels`` and ``matchExpressions``, ANDed."""

    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: tuple[LabelSelectorRequirement, ...] = ()


class ConditionFields(KubeModel):
    """The fields every condition shape shares: ``type``, ``status``, ``reason``, ``message``."""

    type: str
    status: str = "Unknown"
    reason: str = ""
    message: str = ""
    last_transition_time: Time | None = None

    @property
    def is_true(self) -> bool:
        """``status == "True"``."""
        return self.status == "True"


class Condition(ConditionFields):
    """``metav1.Condition``, as on PodGroup / CompositePodGroup status."""

    observed_generation: int | None = None


def true_condition(conditions: Iterable[Condition], ctype: str) -> Condition | None:
    """The condition of type ``ctype`` among ``conditions`` when its status is True, else None."""
    return next((c for c in conditions if c.type == ctype and c.is_true), None)


def field_path(loc: Sequence[int | str]) -> str:
    """A pydantic error location as a Kubernetes field path: ``("spec", "containers", 0, "resources")``
    → ``spec.containers[0].resources`` (apimachinery ``field.Path.String()``: list indices in
    brackets, names joined by dots; map keys are joined by dots too, ``requests.cpu``, also when the key itself
    is wrong)."""
    out = ""
    for part in loc:
        if part == "[key]":  # pydantic's mark of a map key's own error: the key is the part before it
            continue
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def describe(exc: Exception) -> str:
    """One line saying why an object could not be used.

    ``exc``: a pydantic ``ValidationError`` from ``model_validate`` — each error as
    ``<field path>: <message> (got <value as JSON>)`` (the message in the API server's words,
    :func:`~scheduler.field_errors.plain_message`; the value only when it is a scalar), up
    to :data:`MAX_MESSAGE_ERRORS` joined by ``; `` — or any other error (a ``QuantityError``
    raised while converting), as the first line of its message.
    """
    if not isinstance(exc, ValidationError):
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    errors = exc.errors(include_url=False)
    parts = [f"{field_path(e['loc'])}: {plain_message(e)}{_got(e['input'])}" for e in errors[:MAX_MESSAGE_ERRORS]]
    if len(errors) > MAX_MESSAGE_ERRORS:
        parts.append(f"and {len(errors) - MAX_MESSAGE_ERRORS} more")
    return "; ".join(parts)



def first_named(names: Sequence[str], limit: int) -> str:
    """The first ``limit`` of ``names`` joined by commas, then how many more: ``a, b, c and 4 more`` (a message that
    names what it counts)."""
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return f"{', '.join(names[:limit])}{more}"


def named_within(items: Sequence[tuple[str, str]], namespace: str | None, limit: int | None = None) -> str:
    """``items`` (an object's ``ns/name`` key, its text) in a message read in ``namespace``: the texts of those in it
    (:func:`first_named` with ``limit``; None: all), the others counted — ``ml/a on n0, 2 in other namespaces`` —
    as who may read one namespace's objects may not read another's. ``namespace`` None: every text."""
    own = [text for key, text in items if namespace is None or key.startswith(f"{namespace}/")]
    elsewhere = len(items) - len(own)
    return ", ".join(([first_named(own, len(own) if limit is None else limit)] if own else [])
                     + ([f"{elsewhere} in other namespaces"] if elsewhere else []))

def _got(value: object) -> str:
    """`` (got "-6")`` for a scalar input, as written in JSON (truncated); empty for an object or a list."""
    if not isinstance(value, str | int | float | bool) and value is not None:
        return ""
    text = json.dumps(value)
    return f" (got {text[:60]}…)" if len(text) > 60 else f" (got {text})"


M = TypeVar("M", bound=BaseModel)


def from_wire(model: type[M], raw: Mapping[str, Any] | bytes) -> M:
    """``model`` validated from API JSON (a decoded dict, or the bytes): by the wire's ``camelCase`` names only. A
    ``snake_case`` key (``node_name`` in a hand-written file) is an unknown field, dropped as the API server drops
    it (the loader reports it as ignored), never read as the field it resembles. Raises pydantic's
    ``ValidationError``."""
    if isinstance(raw, bytes):
        return model.model_validate_json(raw, by_alias=True, by_name=False)
    return model.model_validate(raw, by_alias=True, by_name=False)
