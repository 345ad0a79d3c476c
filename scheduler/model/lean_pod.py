"""LeanPod: a pod on a node as the cache keeps it — the fields of :class:`~scheduler.model.pod.Pod`, compact.

A cluster holds tens of thousands of running pods for every pod the scheduler places. Of each the scheduler reads
its node, its requests, its labels and affinity terms (inter-pod affinity, topology spread), its host ports and
volumes, its priority and group (preemption's victims), its identity and whether it is going away — never its
container details or its kubelet status. As a full :class:`Pod` (about 17 pydantic models, each with its own
``__dict__``) such a pod costs 12–15 KiB of Python objects; a :class:`LeanPod` costs well under 1 KiB:

* its parts are ``msgspec`` structs (no ``__dict__``) with the attribute names of :class:`Pod`'s models, made from
  those models' fields (:data:`LeanMeta`, :data:`LeanSpec`, :data:`LeanStatus`), so every read of a pod
  (``pod.spec.affinity``, ``pod.metadata.labels``, :class:`~scheduler.model.pod.PodReads`) works on both;
* what pods of one template have alike (containers, tolerations, affinity, volumes, labels …) is one shared
  object, validated once by the field's own pydantic type (:func:`decode_bound`);
* :attr:`LeanPod.requests` and :attr:`LeanPod.asks` are computed when it is made; ``status.containerStatuses``
  (which only feed the requests) are not kept, and of ``status.conditions`` only ``DisruptionTarget``
  (:attr:`~scheduler.model.pod.PodReads.terminating_by_preemption`).

Two ways in: :func:`lean_pod` (a :class:`Pod` already validated, or its copy bound to a node: how the cache shows
an assumed pod) and :func:`decode_bound` (a pod's JSON bytes straight from a list page or a watch event, about
a tenth of the CPU of validating a :class:`Pod`). Both give equal values for the same pod.

The ServiceAccount admission plugin names each pod's token volume ``kube-api-access-<random>`` and mounts it in every
container, so a real pod's ``containers`` and ``volumes`` JSON are its own: they are validated item by item, each item
memoised by what its model reads (:class:`_Items`), so the pods of a template still share their containers and all
their volumes but that one. Decoding a pod field by field still costs, so :func:`decode_pod` remembers each pod it
decodes without a node (:data:`_PENDING`); when the same pod (its uid) comes back with a node — the watch event of a
bind — and its metadata and spec are byte for byte those it had but for the per-pod strings (``nodeName``,
``resourceVersion``, read from the new bytes) and its annotations (read from the new bytes too: a gang's Bindings add
the plan's durable intent to them), its parts, requests and asks are taken from the pod decoded before
instead of being validated and computed again.

The kubelet then writes the pod's status as it starts it (its containers being created, then running; again on every
readiness change), and each write comes back as a watch event of the whole pod, larger than the bind's. So
:func:`decode_pod` remembers each pod it decodes with a node too (:data:`_BOUND`, by uid, a digest of its metadata and
spec and one of its container statuses' actuated resources): the next version whose metadata and spec digest the
same takes its parts and asks from the one before, and its requests too while the container statuses ask the same
resources (an in-place resize changes them); only its status is decoded afresh.
"""

from __future__ import annotations

import functools
import hashlib
import operator
import sys
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, ClassVar

import msgspec
from pydantic import BaseModel, TypeAdapter

from scheduler.model.base import ObjectMeta, Time, from_wire
from scheduler.model.pod import (
    DISRUPTION_TARGET,
    Container,
    Pod,
    PodCondition,
    PodReads,
    PodSpec,
    PodStatus,
    effective_requests,
    spec_asks,
)
from scheduler.model.quantity import ResourceList
from scheduler.model.volume import Volume

_DROPPED_STATUS = ("container_statuses", "init_container_statuses")
"""Status fields a :class:`LeanPod` keeps empty: they only feed :attr:`LeanPod.requests`."""


def _struct(name: str, model: type[BaseModel], doc: str) -> type[msgspec.Struct]:
    """A frozen struct with ``model``'s fields (snake_case names) and defaults."""
    fields = [(field, Any, msgspec.field(default=info.get_default(call_default_factory=True)))
              for field, info in model.model_fields.items()]
    struct = msgspec.defstruct(name, fields, frozen=True, module=__name__)
    struct.__doc__ = doc
    return struct


LeanMeta = _struct("LeanMeta", ObjectMeta, "A pod's ``metadata``: :class:`~scheduler.model.base.ObjectMeta`'s fields.")
LeanSpec = _struct("LeanSpec", PodSpec, "A pod's ``spec``: :class:`~scheduler.model.pod.PodSpec`'s fields.")
LeanStatus = _struct("LeanStatus", PodStatus, "A pod's ``status``: :class:`~scheduler.model.pod.PodStatus`'s fields, "
                                              "without container statuses and with ``DisruptionTarget`` only.")


class LeanPod(msgspec.Struct, PodReads, frozen=True):
    """A pod as the cache keeps it once it has a node (the module docstring): ``metadata``, ``spec`` and ``status``
    with :class:`~scheduler.model.pod.Pod`'s attribute names, its effective ``requests`` (integer units, ``pods``
    included) and ``asks`` (:attr:`Pod.asks`)."""

    metadata: Any
    spec: Any
    status: Any
    requests: ResourceList
    asks: frozenset[str]

    api_version: ClassVar[str] = "v1"
    kind: ClassVar[str] = "Pod"


def lean_pod(pod: Pod | LeanPod, node: str | None = None) -> LeanPod:
    """``pod`` as a :class:`LeanPod` (``node``: with ``spec.nodeName`` set to it, as an assumed pod is shown); a
    :class:`LeanPod` without ``node`` is returned as it is. Raises what computing ``pod.requests`` raises
    (:class:`~scheduler.model.quantity.QuantityError` on a malformed quantity)."""
    if isinstance(pod, LeanPod):
        return pod if node is None else msgspec.structs.replace(
            pod, spec=msgspec.structs.replace(pod.spec, node_name=sys.intern(node)))
    status = pod.status
    spec = dict(pod.spec.__dict__)  # a pydantic model's fields, by name
    if node is not None:
        spec["node_name"] = sys.intern(node)
    values = {name: value for name, value in status.__dict__.items() if name not in _DROPPED_STATUS}
    values["conditions"] = tuple(c for c in status.conditions if c.type == DISRUPTION_TARGET)
    return LeanPod(LeanMeta(**pod.metadata.__dict__), LeanSpec(**spec), LeanStatus(**values), pod.requests, pod.asks)


# -- from bytes -----------------------------------------------------------------------------------------------

class _WireContainerStatus(msgspec.Struct):
    """What :meth:`~scheduler.model.pod.ContainerStatus.actuated` reads of a container status, as raw JSON (empty:
    absent)."""

    name: msgspec.Raw = msgspec.Raw()
    allocatedResources: msgspec.Raw = msgspec.Raw()
    resources: msgspec.Raw = msgspec.Raw()


_WIRE_TYPES: dict[Any, Any] = {Time | None: Annotated[datetime, msgspec.Meta(tz=True)] | None}
"""Model field types msgspec spells otherwise: a :data:`~scheduler.model.base.Time` (pydantic's ``AwareDatetime``)
is a ``datetime`` that must carry a zone."""

_WireCondition: Any = msgspec.defstruct(
    "_WireCondition", [(info.alias or name, _WIRE_TYPES.get(info.annotation, info.annotation),
                        msgspec.NODEFAULT if info.is_required() else msgspec.field(default=info.default))
                       for name, info in PodCondition.model_fields.items()], module=__name__)
"""A pod condition checked against :class:`~scheduler.model.pod.PodCondition`'s field types (msgspec takes no value of
a type pydantic refuses: a pod whose conditions a :class:`Pod` refuses is refused here too; one only msgspec refuses
is validated as a :class:`Pod` by the caller's fallback)."""

_PER_POD = {(ObjectMeta, "name"), (ObjectMeta, "namespace"), (ObjectMeta, "uid"), (ObjectMeta, "resourceVersion"),
            (PodSpec, "nodeName")}
"""Strings that differ between pods of one template: decoded each time (as ``str``, their type in the models), never
memoised."""

_INTERNED = {(ObjectMeta, "namespace"), (PodSpec, "nodeName")}
"""Strings few in a cluster and held by every pod: one copy each."""

_STATUS_TYPES: dict[str, Any] = {"conditions": list[_WireCondition],
                                 "containerStatuses": list[_WireContainerStatus],
                                 "initContainerStatuses": list[_WireContainerStatus]}
"""Status fields not taken as they are: the container statuses only feed the requests, the conditions are checked and
filtered. Absent, each is None; ``null`` is refused, as :class:`~scheduler.model.pod.PodStatus` refuses it."""


def _plan(model: type[BaseModel], typed: dict[str, Any] | None = None) -> tuple[
        type[msgspec.Struct], tuple[tuple[str, str, bool, bool], ...]]:
    """A struct with ``model``'s fields by their wire names — per-pod strings as ``str``, ``typed`` fields as typed
    there, every other field raw JSON (empty when absent: what the scheduler does not read is never decoded) — and
    per field not in ``typed``: (wire name, name, decoded per pod, interned)."""
    typed = typed or {}
    fields = [(info.alias or name, name) for name, info in model.model_fields.items()]

    def wire_type(wire: str) -> tuple[Any, Any]:
        if wire in typed:
            return typed[wire], None
        return (str, "") if (model, wire) in _PER_POD else (msgspec.Raw, msgspec.Raw())

    struct = msgspec.defstruct(f"_Wire{model.__name__}", [(wire, *wire_type(wire)) for wire, _ in fields],
                               module=__name__)
    return struct, tuple((wire, name, (model, wire) in _PER_POD, (model, wire) in _INTERNED)
                         for wire, name in fields if wire not in typed)


_META, _META_FIELDS = _plan(ObjectMeta)
_SPEC, _SPEC_FIELDS = _plan(PodSpec)
_STATUS, _STATUS_FIELDS = _plan(PodStatus, _STATUS_TYPES)
_Wire: Any = msgspec.defstruct("_Wire", [("apiVersion", str, "v1"), ("kind", str, "Pod"),
                                         ("metadata", _META, msgspec.field(default_factory=_META)),
                                         ("spec", _SPEC, msgspec.field(default_factory=_SPEC)),
                                         ("status", _STATUS, msgspec.field(default_factory=_STATUS))],
                               module=__name__)
_WIRE = msgspec.json.Decoder(_Wire)

_ADAPTERS: dict[tuple[type[BaseModel], str], TypeAdapter[Any]] = {
    (model, info.alias or name): TypeAdapter(Annotated[info.annotation, *info.metadata]  # type: ignore[arg-type]
                                             if info.metadata else info.annotation)
    for model in (ObjectMeta, PodSpec, PodStatus) for name, info in model.model_fields.items()}
"""A validator of each field's own type with its constraints and validators (``Field(ge=…)``, ``Strict``,
``AfterValidator``), by (model, wire name)."""

MEMO_SIZE = 8192
"""Distinct values of one field remembered (:func:`_field`): a cluster's pod templates, several times over."""


@functools.lru_cache(maxsize=MEMO_SIZE)
def _field(model: type[BaseModel], wire_name: str, raw: bytes) -> Any:
    """The value of field ``wire_name`` of ``model`` validated from ``raw`` by the field's own pydantic type; equal
    JSON gives the same object, so pods of one template share their containers, tolerations, labels …"""
    return _ADAPTERS[model, wire_name].validate_json(raw, by_alias=True, by_name=False)  # as from_wire


class _Items:
    """A spec field holding a list of ``item`` objects (containers, volumes), validated item by item, each item
    memoised by the raw JSON of the fields ``item`` reads (by their API names only, as
    :func:`~scheduler.model.base.from_wire` reads them: a ``snake_case`` key is an unknown field, skipped). The
    ServiceAccount admission plugin's token volume ``kube-api-access-<random>``, which every container mounts, makes
    each real pod's ``containers`` and ``volumes`` JSON its own, though its containers read the same as its template's
    (a :class:`~scheduler.model.pod.Container` reads no mounts) and of its volumes only that one's name differs: the
    pods of a template share their containers and their other volumes, and each pod's token volume is validated
    alone (about 2.5 µs)."""

    def __init__(self, wire_name: str, item: type[BaseModel], named_key: bool) -> None:
        """``named_key``: the key :meth:`__call__` returns for the requests' memo (:func:`_derived`) holds the items'
        names (a container's name matches its status's), else not (a volume's: the asks read only its source)."""
        names = [info.alias or field for field, info in item.model_fields.items() if field != "name"]
        struct = msgspec.defstruct(f"_Key{item.__name__}", [("name", msgspec.Raw, msgspec.Raw()),
                                                           *((n, msgspec.Raw, msgspec.Raw()) for n in names)],
                                   module=__name__)
        self.wire_name = wire_name
        self.named_key = named_key
        self._names = [f'"{f.encode_name}":'.encode() for f in msgspec.structs.fields(struct)]
        self._decoder = msgspec.json.Decoder(list[struct])  # type: ignore[valid-type]
        self._adapter: TypeAdapter[Any] = TypeAdapter(item)
        self._memo: dict[bytes, Any] = {}

    def __call__(self, data: bytes) -> tuple[bytes, tuple[Any, ...]]:
        """(the key of ``data`` for :func:`_derived`, its items validated). Raises ``ValueError`` (pydantic's) where
        the field's own type refuses ``data``."""
        try:
            items = self._decoder.decode(data)
        except msgspec.DecodeError:  # not a list of objects: validated as it is, to be refused there
            return data, _field(PodSpec, self.wire_name, data)
        astuple, memo = msgspec.structs.astuple, self._memo
        keys, out = [], []
        for item in items:
            raws = [bytes(raw) for raw in astuple(item)]
            unnamed = b"\0".join(raws[1:])
            named = raws[0] + b"\0" + unnamed
            value = memo.get(named)
            if value is None:  # the item as an object of the fields read (what else it holds, its model ignores)
                value = self._adapter.validate_json(
                    b"{" + b",".join(label + raw for label, raw in zip(self._names, raws, strict=True) if raw) + b"}",
                    by_alias=True, by_name=False)  # as from_wire
                if len(memo) >= MEMO_SIZE:  # each token volume fills an entry: emptied every few thousand pods
                    memo.clear()
                memo[named] = value
            keys.append(named if self.named_key else unnamed)
            out.append(value)
        return b"\1".join(keys), tuple(out)


_ITEMS = {wire_name: _Items(wire_name, item, named_key) for wire_name, item, named_key in (
    ("containers", Container, True), ("initContainers", Container, True), ("volumes", Volume, False))}
"""The spec fields validated item by item (:class:`_Items`), by wire name."""


def _values(model: type[BaseModel], wire: msgspec.Struct, fields: tuple[tuple[str, str, bool, bool], ...],
            seen: dict[str, bytes]) -> dict[str, Any]:
    """The fields of ``model`` present in ``wire``, validated; the key of each memoised one (its raw JSON, or what
    :class:`_Items` makes of it) is put in ``seen``."""
    out: dict[str, Any] = {}
    for wire_name, name, per_pod, interned in fields:
        value = getattr(wire, wire_name)
        if per_pod:
            out[name] = sys.intern(value) if interned else value
        elif value:
            data = bytes(value)
            items = _ITEMS.get(wire_name) if model is PodSpec else None
            if items is None:
                seen[wire_name] = data
                out[name] = _field(model, wire_name, data)
            else:
                seen[wire_name], out[name] = items(data)
    return out


def _per_pod(wire: msgspec.Struct, fields: tuple[tuple[str, str, bool, bool], ...]) -> dict[str, str]:
    """The per-pod strings of ``wire`` (name, namespace, uid, resourceVersion; nodeName), by field name."""
    return {name: sys.intern(getattr(wire, wire_name)) if interned else getattr(wire, wire_name)
            for wire_name, name, per_pod, interned in fields if per_pod}


_CONDITIONS: TypeAdapter[tuple[PodCondition, ...]] = TypeAdapter(tuple[PodCondition, ...])

_REQUEST_INPUTS = ("containers", "initContainers", "overhead", "resources", "volumes", "topologySpreadConstraints",
                   "affinity")
"""The spec fields :func:`~scheduler.model.pod.effective_requests` and :func:`~scheduler.model.pod.spec_asks` read
(with the container statuses)."""

_DERIVED: dict[tuple[Any, ...], tuple[ResourceList, frozenset[str]]] = {}
"""The raw JSON a pod's requests and asks are computed from → (requests, asks), shared by the pods of one template;
emptied when it reaches :data:`MEMO_SIZE` entries."""

_STATUS_PARTS = ("name", "allocatedResources", "resources")

_Actuated = tuple[tuple[tuple[bytes, ...], ...], tuple[tuple[bytes, ...], ...]]
"""What the requests read of a pod's ``containerStatuses`` and ``initContainerStatuses``, as :func:`_rows` each."""


def _rows(statuses: list[Any] | None) -> tuple[tuple[bytes, ...], ...]:
    """Container statuses as rows of raw JSON (:data:`_STATUS_PARTS`): what the requests read of them, without the
    per-container ids and times that make every pod's list different."""
    return tuple((bytes(s.name), bytes(s.allocatedResources), bytes(s.resources)) for s in statuses or ())


def _actuated(status: Any) -> _Actuated:
    """:data:`_Actuated` of a decoded pod's ``status``; a list none of whose rows carries resources is empty, as it
    asks for nothing (:func:`~scheduler.model.pod.effective_requests` takes a container's spec requests where its
    status actuates none): the kubelet's first status of a pod names its containers before they run."""
    return _resourced(_rows(status.containerStatuses)), _resourced(_rows(status.initContainerStatuses))


def _resourced(rows: tuple[tuple[bytes, ...], ...]) -> tuple[tuple[bytes, ...], ...]:
    """``rows``, or none when no row carries ``allocatedResources`` or ``resources`` and every name is a string or
    absent: a row kept is validated with the rest when the requests are computed, so a name the full model refuses
    (a number, ``null``) keeps its list, to be refused there."""
    return rows if any(row[1] or row[2] or row[0][:1] not in (b"", b'"') for row in rows) else ()


def _requests(spec: Any, actuated: _Actuated) -> ResourceList:
    """The effective requests (:func:`~scheduler.model.pod.effective_requests`) of the pod whose spec is ``spec`` and
    whose container statuses ask ``actuated``."""
    status = PodStatus.model_validate({
        field: [{part: msgspec.json.decode(raw) for part, raw in zip(_STATUS_PARTS, row, strict=True) if raw}
                for row in rows]
        for field, rows in zip(("containerStatuses", "initContainerStatuses"), actuated, strict=True)},
        by_alias=True, by_name=False)  # as from_wire
    return effective_requests(spec, status)


def _as_asked(spec: Any, actuated: _Actuated) -> bool:
    """Whether each container status in ``actuated`` (rows of :func:`_rows`) reports what its container in ``spec``
    asks, resource by resource: its ``allocatedResources`` and ``resources.requests`` each hold only resources its
    container asks for (a limit counts where no request is set), with the same strings — as a kubelet reports the
    containers it started at the size asked. Each container then counts what its spec asks (a container status
    counts at most the larger of the two, :func:`~scheduler.model.pod.effective_requests`), so the pod's requests are
    its spec's alone. Anything else — another value, a number, a name the spec lacks, a field the requests do not
    read — answers False, and the requests are computed (and validated) in full."""
    for rows, containers in zip(actuated, (spec.containers, spec.init_containers), strict=True):
        if not rows:
            continue
        asked = {c.name: {**c.resources.limits, **c.resources.requests} for c in containers}
        if len(asked) < len(containers):  # names repeated (the API refuses them): each of them counts the status
            return False
        for name, allocated, resources in rows:
            want = asked.get(msgspec.json.decode(name)) if name[:1] == b'"' else None
            if want is None:
                return False
            reported = [msgspec.json.decode(allocated)] if allocated else []
            if resources:
                actual = msgspec.json.decode(resources)
                if not isinstance(actual, dict) or not actual.keys() <= {"requests", "limits"}:
                    return False
                reported.append(actual.get("requests", {}))
                if not _strings(actual.get("limits", {})):
                    return False
            if not all(_strings(r) and all(want.get(k) == v for k, v in r.items()) for r in reported):
                return False
    return True


def _strings(value: Any) -> bool:
    """``value`` is a JSON object of strings (resource name → quantity as a string)."""
    return isinstance(value, dict) and all(type(v) is str for v in value.values())


def _derived(spec: Any, actuated: _Actuated, seen: dict[str, bytes]) -> tuple[ResourceList, frozenset[str]]:
    """(effective requests, asks) of the pod whose spec is ``spec``, container statuses ask ``actuated``
    (:func:`_actuated`) and raw spec fields ``seen`` (memoised by their inputs)."""
    key = (*(seen.get(name, b"") for name in _REQUEST_INPUTS), *actuated)
    hit = _DERIVED.get(key)
    if hit is None:
        hit = _requests(spec, actuated), spec_asks(spec)
        if len(_DERIVED) >= MEMO_SIZE:
            _DERIVED.clear()
        _DERIVED[key] = hit
    return hit


PENDING_SIZE = 2 * MEMO_SIZE
"""Pods without a node remembered by :func:`decode_pod` at most (the oldest is let go of first): with about 2 KB of
JSON each, some 30 MB at most."""

_PENDING: OrderedDict[str, tuple[bytes, Pod]] = OrderedDict()
"""uid → (:func:`_compared` of its JSON, the :class:`Pod`) of each pod :func:`decode_pod` decoded without a node and
without container statuses (its requests then read its spec alone), until it is decoded with one or deleted; in the
order they came. An ``OrderedDict``: letting go of the oldest of a plain dict walks the slots its deletions left."""


def _picker(struct: type[msgspec.Struct], fields: tuple[tuple[str, str, bool, bool], ...],
            apart: tuple[str, ...] = ()) -> Callable[[Any], tuple[Any, ...]]:
    """The values, from ``msgspec.structs.astuple`` of a ``struct``, of its ``fields`` that are not per-pod strings
    nor compared ``apart``."""
    names = [f.encode_name for f in msgspec.structs.fields(struct)]
    picked = [names.index(wire) for wire, _, per_pod, _ in fields if not per_pod and wire not in apart]
    get = operator.itemgetter(*picked)
    return lambda values: get(values) if len(picked) > 1 else (get(values),)


_META_COMPARED = _picker(_META, _META_FIELDS, apart=("annotations",))


def _meta_per_pod(meta: Any) -> dict[str, Any]:
    """What a pod's metadata holds of its own: the per-pod strings (:func:`_per_pod`) and its annotations, read from
    these bytes (memoised as every field: the members of a small gang carry the same) — the Binding of a gang's
    member adds the plan's durable intent to them (``scheduler.groups.intent``), so a pod whose annotations alone
    changed as it was bound still takes its other parts from the version before."""
    values: dict[str, Any] = _per_pod(meta, _META_FIELDS)
    values["annotations"] = _field(ObjectMeta, "annotations", bytes(meta.annotations)) if meta.annotations else {}
    return values
_SPEC_COMPARED = _picker(_SPEC, _SPEC_FIELDS)


def _compared(wire: Any) -> bytes:
    """The raw JSON of ``wire``'s metadata and spec fields but the per-pod strings (name, namespace, uid,
    resourceVersion, nodeName) and the annotations (:func:`_meta_per_pod`), in field order, joined by a NUL byte
    (an absent field as nothing): raw JSON holds no NUL (JSON escapes control characters), so two pods with equal
    results have equal fields."""
    astuple = msgspec.structs.astuple
    return b"\0".join((*_META_COMPARED(astuple(wire.metadata)), *_SPEC_COMPARED(astuple(wire.spec))))


BOUND_SIZE = 4 * MEMO_SIZE
"""Pods with a node remembered by :func:`decode_pod` at most (the one decoded longest ago is let go of first): the pods
of any scheduler whose latest versions came by watch event (binds, kubelets' status writes) most recently. About 190
bytes each beside the pods the cache holds anyway: some 6 MB at most."""

_BOUND: OrderedDict[str, tuple[bytes, bytes, LeanPod]] = OrderedDict()
"""uid → (:func:`_digest` of its metadata and spec, :func:`_digest` of what the requests read of its container
statuses, the :class:`LeanPod`) of each pod :func:`decode_pod` decoded with a node, until it is deleted or let go of;
the one decoded last goes last."""


def _digest(data: bytes) -> bytes:
    """A 16-byte BLAKE2b digest of ``data`` (raw JSON in an unambiguous encoding): a pod's :func:`_compared` JSON (two
    versions of a pod with one digest have equal metadata and spec but for the per-pod strings, so equal parts and
    asks), or its :data:`_Actuated` rows joined by control characters, which raw JSON never holds."""
    return hashlib.blake2b(data, digest_size=16).digest()


def _actuated_digest(actuated: _Actuated) -> bytes:
    """:func:`_digest` of :data:`_Actuated` rows: a row's parts joined by NUL, rows by 0x01, the two lists by 0x02."""
    if not any(actuated):
        return _NOTHING_ACTUATED
    return _digest(b"\2".join(b"\1".join(b"\0".join(row) for row in rows) for rows in actuated))


_NOTHING_ACTUATED = _digest(b"\2")
""":func:`_actuated_digest` of a pod whose container statuses ask for nothing (a bind's watch event: none yet)."""


def decode_pod(data: bytes | msgspec.Raw, *, deleted: bool = False, watched: bool = False) -> LeanPod | Pod:
    """One pod's JSON as the cache keeps it: a :class:`LeanPod` when it has a node (:func:`decode_bound`), else a
    :class:`~scheduler.model.pod.Pod`, remembered (:data:`_PENDING`) so that its bound version reuses its parts
    (the module docstring). ``watched``: a watch event's object; a pod with a node is then remembered too
    (:data:`_BOUND`), so that its next versions — the kubelet's status writes — reuse its parts while its metadata,
    spec and actuated resources are unchanged (a list's pods are not: most of a cluster's pods run on, unchanged, and
    digesting each would only slow the first list). ``deleted``: the pod's ``DELETED`` watch event, which ends what is
    remembered of it. Raises as :func:`decode_bound` does, and pydantic's ``ValidationError`` (a ``ValueError``) for a
    pod without a node that a :class:`Pod` refuses."""
    wire = _WIRE.decode(data)
    if wire.spec.nodeName:
        return _remembered(wire, deleted) if watched else _bound(wire)
    pod = from_wire(Pod, bytes(data))
    _PENDING.pop(pod.metadata.uid, None)  # a newer version goes last, if it is kept
    if (not deleted and pod.metadata.uid and not wire.status.containerStatuses
            and not wire.status.initContainerStatuses):
        if len(_PENDING) >= PENDING_SIZE:
            _PENDING.popitem(last=False)
        _PENDING[pod.metadata.uid] = (_compared(wire), pod)
    return pod


def decode_bound(data: bytes | msgspec.Raw) -> LeanPod | None:
    """The :class:`LeanPod` of one pod's JSON when the pod has a node (``spec.nodeName``), else None (the caller
    validates it as a :class:`~scheduler.model.pod.Pod`). Each field the scheduler reads is validated by its
    model's own type, so what a :class:`Pod` refuses is refused here too: raises ``ValueError`` (msgspec's or
    pydantic's) on malformed JSON or a field its type refuses, and what computing the requests raises
    (:class:`~scheduler.model.quantity.QuantityError`). What no model reads (``managedFields``, a container's image,
    a ConfigMap volume) is skipped, not parsed: bytes no API server sends there (invalid UTF-8, nesting past
    pydantic's depth limit, integers of thousands of digits), which the full model's parser refuses, pass."""
    wire = _WIRE.decode(data)
    return _bound(wire) if wire.spec.nodeName else None


def _remembered(wire: Any, deleted: bool) -> LeanPod:
    """:func:`_bound` of a decoded pod with a node, its parts taken from the version of it remembered in :data:`_BOUND`
    when that has the same :func:`_digest` (and its requests too when its container statuses ask the same), and
    remembered there in turn (unless ``deleted``)."""
    uid = wire.metadata.uid
    prior = _BOUND.pop(uid, None) if _BOUND else None
    if deleted or not uid:
        return _bound(wire)
    compared = _compared(wire)
    actuated = _actuated(wire.status)
    digest, actuated_digest = _digest(compared), _actuated_digest(actuated)
    if prior is not None and prior[0] == digest:
        pod = prior[2]
        spec = msgspec.structs.replace(pod.spec, **_per_pod(wire.spec, _SPEC_FIELDS))
        if prior[1] == actuated_digest or (prior[1] == _NOTHING_ACTUATED and _as_asked(spec, actuated)):
            requests = pod.requests
        else:
            requests = _requests(spec, actuated)
        lean = LeanPod(msgspec.structs.replace(pod.metadata, **_meta_per_pod(wire.metadata)), spec,
                       _status(wire), requests, pod.asks)
    else:
        lean = _bound(wire, compared, actuated)
    if len(_BOUND) >= BOUND_SIZE:
        _BOUND.popitem(last=False)
    _BOUND[uid] = (digest, actuated_digest, lean)
    return lean


def _status(wire: Any) -> Any:
    """The :class:`LeanStatus` of a decoded pod: its fields validated, of its conditions ``DisruptionTarget`` only."""
    status = _values(PodStatus, wire.status, _STATUS_FIELDS, {})
    targets = [msgspec.to_builtins(c) for c in wire.status.conditions or () if c.type == DISRUPTION_TARGET]
    if targets:
        status["conditions"] = _CONDITIONS.validate_python(targets, by_alias=True, by_name=False)  # as from_wire
    return LeanStatus(**status)


def _bound(wire: Any, compared: bytes | None = None, actuated: _Actuated | None = None) -> LeanPod:
    """The :class:`LeanPod` of a decoded pod with a node: from the same pod decoded without one when its metadata and
    spec are unchanged and the kubelet reports no container (the requests then read the spec alone), else validated
    field by field. ``compared`` and ``actuated``: its :func:`_compared` JSON and :func:`_actuated` rows, when already
    made."""
    prior = _PENDING.pop(wire.metadata.uid, None) if _PENDING else None
    status = _status(wire)
    if (prior is not None and not wire.status.containerStatuses and not wire.status.initContainerStatuses
            and prior[0] == (compared if compared is not None else _compared(wire))):
        pod = prior[1]
        return LeanPod(LeanMeta(**{**pod.metadata.__dict__, **_meta_per_pod(wire.metadata)}),
                       LeanSpec(**{**pod.spec.__dict__, **_per_pod(wire.spec, _SPEC_FIELDS)}), status,
                       pod.requests, pod.asks)
    seen: dict[str, bytes] = {}
    spec = LeanSpec(**_values(PodSpec, wire.spec, _SPEC_FIELDS, seen))
    requests, asks = _derived(spec, _actuated(wire.status) if actuated is None else actuated, seen)
    return LeanPod(LeanMeta(**_values(ObjectMeta, wire.metadata, _META_FIELDS, {})), spec, status, requests, asks)
