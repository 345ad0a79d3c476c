"""Reading cluster snapshots: YAML or JSON documents and ``kind: List`` files into typed objects.

Files are read into raw documents by :mod:`scheduler.offline.reader` (libyaml, a JSON fast path,
``-`` for standard input); each document, and each item of a ``List``, is dispatched here and
dropped once its model is built, so no raw dict is kept beside the models. The items of a JSON ``List``
(``kubectl get -o json``) come as their bytes: most are decoded straight into their models, a running pod
into the compact shape the cache keeps (:meth:`Objects.add_json`); the others, and any such object with
something to report, take the same path as a YAML object, so what is reported does not depend on the format.

Objects are dispatched on ``apiVersion`` + ``kind`` (the rows of :mod:`scheduler.model.kinds` read offline, each into
the ``Objects`` list its row names); scheduler-plugins' ``scheduling.x-k8s.io/v1alpha1``
PodGroup is read and converted to the PodGroup the scheduler reads (``model/coscheduling.py``), kept apart
from a ``scheduling.k8s.io`` PodGroup of the same name. ``batch/v1`` Jobs are kept as read (``Objects.jobs``): the
pods their controller would make are added before scheduling (:mod:`scheduler.offline.jobs`); so are
``jobset.x-k8s.io/v1alpha2`` JobSets, ``kubeflow.org/v1`` PyTorchJobs and ``leaderworkerset.x-k8s.io/v1``
LeaderWorkerSets (:mod:`~scheduler.offline.jobsets`, :mod:`~scheduler.offline.pytorchjobs`,
:mod:`~scheduler.offline.leaderworkersets`). Kinds the scheduler does not read (Deployments, JobSets of another
version, DRA objects of other API versions) are counted in ``Objects.skipped``;
an object of a kind we read under an API version we do not read is also named in ``Objects.unread``.
Kubernetes 1.36's ``scheduling.k8s.io/v1alpha2`` PodGroups are converted into the internal (v1beta1)
shape first (:data:`DECODERS`, :mod:`scheduler.model.podgroup_v1alpha2`); what of them is not
honoured is listed in ``Objects.warnings``.
Storage objects are read from ``v1`` (PersistentVolumeClaim, PersistentVolume) and
``storage.k8s.io/v1`` (StorageClass, CSINode), their sizes parsed at load time.
DRA objects are read from ``resource.k8s.io/v1`` (ResourceSlice, DeviceClass, ResourceClaim,
ResourceClaimTemplate); their quantities (device capacity, shared and consumed counters) are parsed
at load time, so a bad one is a :class:`LoadProblem`. One-of rules (a slice's node selection, a
request's ``exactly``/``firstAvailable``) are not checked here: the inventory reports a bad slice
and a pod with a bad claim waits with the reason (:mod:`scheduler.dra`). A namespaced
object without ``metadata.namespace`` is put in ``default``, as the API server does on create, and an
object without ``metadata.uid`` is given one derived from its kind and name (:func:`snapshot_uid`).
An object that fails to parse — a malformed field, a bad quantity — is reported as a
:class:`LoadProblem` naming file, kind, namespace/name and what is wrong, and a document that
is not an object at all (a scalar, a sequence) as one naming the file and the document's
position; the rest of the file still loads. A redefinition of an object (same kind, namespace and
name) that reads the same is a no-op (fields the scheduler does not read are not compared); a
different one is a problem and the first one is kept.

What the v1.37 API does not know is named in ``Objects.unknown`` (:mod:`scheduler.model.strict`): a field
of a Pod's, PodGroup's or CompositePodGroup's metadata or spec (a typo such as ``resoures:`` would
otherwise leave a pod without requests), with the closest known field, and a kind no API group serves
(``kind: PodGrup``, skipped), with the closest kind.

:class:`SnapshotError` is about the whole set of files: it is raised when a file cannot be read,
is not UTF-8 or is not YAML (or JSON), or when the files together hold no valid Node, Pod, PodGroup,
CompositePodGroup or workload to make into pods (so one good file beside a bad one still loads).
"""

from __future__ import annotations

import json
import re
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TypeVar, cast

import msgspec
from pydantic import BaseModel, ValidationError

from scheduler.errors import SnapshotError
from scheduler.groups.workloads import JOB, JOBSET, LEADERWORKERSET, PYTORCHJOB, WORKLOADS, WorkloadKind
from scheduler.model import podgroup_v1alpha2
from scheduler.model.base import describe, from_wire
from scheduler.model.coscheduling import CoscheduledPodGroup
from scheduler.model.dra import (
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
    counter_quantities,
)
from scheduler.model.kinds import KINDS as TABLE
from scheduler.model.kinds import Kind
from scheduler.model.lean_pod import LeanPod, decode_bound, lean_pod
from scheduler.model.namespace import Namespace
from scheduler.model.node import Node
from scheduler.model.pod import Pod, raw_group_name
from scheduler.model.podgroup_v1alpha2 import Decoded
from scheduler.model.policy import PodDisruptionBudget
from scheduler.model.quantity import QuantityError, locate
from scheduler.model.scheduling import CompositePodGroup, PodGroup, PriorityClass, Workload
from scheduler.model.storage import CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass
from scheduler.model.strict import SHAPES, known_only, unknown_fields, unknown_kind
from scheduler.offline.reader import STDIN, documents, name_of

UNEXPANDED_WORKLOADS: dict[tuple[str, str], str] = {(w.group, w.kind): w.pod_label for w in WORKLOADS if w is not JOB}
"""(API group, kind) → the label its controller gives its pods (the workload's name), of the workloads the operator
makes groups for that ``simulate`` makes no pods of when given in another API version than the one it expands: JobSets
other than ``v1alpha2``, PyTorchJobs other than ``kubeflow.org/v1``, LeaderWorkerSets other than
``leaderworkerset.x-k8s.io/v1`` (:data:`EXPANDED`)."""

EXPANDED = (JOBSET, PYTORCHJOB, LEADERWORKERSET)
"""The workload kinds besides Jobs whose objects are kept as read, to be made into pods (:attr:`Objects.workloads_of`),
in the API version each names."""

KINDS: dict[tuple[str, str], Kind[Any]] = {
    (kind.api_version(version), kind.kind): kind for kind in TABLE if kind.offline is not None
    for version in kind.versions}
"""(apiVersion, kind) → its row of :mod:`scheduler.model.kinds`, for every object the scheduler reads offline."""

DECODERS: dict[tuple[str, str], Callable[[Mapping[str, Any]], Decoded]] = {
    (kind.api_version(version), kind.kind): decode for kind in KINDS.values()
    for version, decode in kind.decoders.items()}
"""(apiVersion, kind) → the conversion into the model's shape, for versions whose shape differs from it."""

READ_KINDS = frozenset(kind for _, kind in KINDS)
"""Kinds read under some apiVersion: one of another version is named in ``Objects.unread``."""

NAMESPACED_KINDS = frozenset(kind for (_, kind), row in KINDS.items() if row.namespaced)
"""Kinds of namespaced rows: a missing ``metadata.namespace`` means ``default`` (Node, Namespace,
PriorityClass, ResourceSlice, DeviceClass, PersistentVolume, StorageClass and CSINode are
cluster-scoped and keep an empty namespace)."""

T = TypeVar("T")

DEFAULT_NAMESPACE = "default"
"""The namespace the API server gives a namespaced object created without one (kubectl's
default context namespace)."""
JOB_API_VERSION = "batch/v1"
"""The Jobs read (:attr:`Objects.jobs`): their pods and groups are made from them (:mod:`scheduler.offline.jobs`)."""

MAX_LISTED_PROBLEMS = 10
"""Problems quoted in the SnapshotError raised when nothing valid was loaded; the rest are counted."""
NOTHING_FOUND = "no Node, Pod, PodGroup, CompositePodGroup, Job, JobSet, PyTorchJob or LeaderWorkerSet found"
"""What :func:`load` says of files that hold nothing :attr:`Objects.usable`."""


@dataclass(frozen=True, slots=True)
class LoadProblem:
    """An object that could not be used: where it is and what is wrong.

    ``kind`` and ``name`` are empty for a document that is not an object (then ``message``
    gives its position in the file); ``namespace`` is empty for cluster-scoped kinds.
    """

    file: str
    kind: str
    namespace: str
    name: str
    message: str
    group: str = ""
    """For a pod: the PodGroup its ``spec.schedulingGroup`` names, as written (empty: none or unreadable)."""

    def __str__(self) -> str:
        if not self.kind and not self.name:
            return f"{self.file}: {self.message}"
        ident = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.file}: {self.kind} {ident}: {self.message}"


@dataclass(slots=True)
class Objects:
    """Everything read from a snapshot, by kind, plus what was skipped and what was wrong."""

    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod | LeanPod] = field(default_factory=list)
    """Pending pods as :class:`Pod`; a pod on a node read from a JSON ``List`` compact (:meth:`add_json`)."""
    podgroups: list[PodGroup] = field(default_factory=list)
    coscheduling: list[CoscheduledPodGroup] = field(default_factory=list)
    """scheduler-plugins' PodGroups, converted (``model/coscheduling.py``)."""
    composites: list[CompositePodGroup] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    priority_classes: list[PriorityClass] = field(default_factory=list)
    resource_slices: list[ResourceSlice] = field(default_factory=list)
    device_classes: list[DeviceClass] = field(default_factory=list)
    resource_claims: list[ResourceClaim] = field(default_factory=list)
    claim_templates: list[ResourceClaimTemplate] = field(default_factory=list)
    volume_claims: list[PersistentVolumeClaim] = field(default_factory=list)
    volumes: list[PersistentVolume] = field(default_factory=list)
    storage_classes: list[StorageClass] = field(default_factory=list)
    csi_nodes: list[CSINode] = field(default_factory=list)
    namespaces: list[Namespace] = field(default_factory=list)
    budgets: list[PodDisruptionBudget] = field(default_factory=list)
    jobs: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """``batch/v1`` Jobs as read (file, object with its namespace and uid set), each once: what the cluster would make
    of them is added before scheduling (:mod:`scheduler.offline.jobs`)."""
    jobsets: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """``jobset.x-k8s.io/v1alpha2`` JobSets as read, the same way (:mod:`scheduler.offline.jobsets`)."""
    pytorchjobs: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """``kubeflow.org/v1`` PyTorchJobs as read, the same way (:mod:`scheduler.offline.pytorchjobs`)."""
    leaderworkersets: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """``leaderworkerset.x-k8s.io/v1`` LeaderWorkerSets as read, the same way
    (:mod:`scheduler.offline.leaderworkersets`)."""
    composite: bool | None = None
    """Whether the cluster serves CompositePodGroups as ``--from-cluster``'s discovery found (None: files, read as
    v1.37's API unless they are 1.36's); :attr:`serves_composites` is what the expansions read."""
    v1alpha2_objects: bool = False
    """A ``scheduling.k8s.io/v1alpha2`` PodGroup or Workload (Kubernetes 1.36's API; 1.37 serves neither in
    ``v1alpha2``) was read."""
    problems: list[LoadProblem] = field(default_factory=list)
    warnings: list[LoadProblem] = field(default_factory=list)
    """Objects used with a field not honoured (a v1.36 PodGroup's unknown ``disruptionMode``), one per field."""
    unknown: list[tuple[LoadProblem, str | None]] = field(default_factory=list)
    """What the v1.37 API does not know: ``(where and why, field path)`` per unknown field, ``(…, None)`` per object
    skipped for an unknown kind (:mod:`scheduler.model.strict`)."""
    skipped: Counter[str] = field(default_factory=Counter)
    unread: dict[tuple[str, str, str], str] = field(default_factory=dict)
    """(kind, namespace, name) → apiVersion of each skipped object whose kind we read under another version."""
    unexpanded: list[tuple[str, str, str, str]] = field(default_factory=list)
    """``(apiVersion, kind, namespace, name)`` of each skipped object of a workload kind the operator knows but
    ``simulate`` does not expand into pods (:data:`UNEXPANDED_WORKLOADS`)."""
    _seen: dict[tuple[str, str, str, str], BaseModel | LeanPod] = field(default_factory=dict, repr=False)
    _workload_names: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict, repr=False)
    _workloads_seen: set[tuple[str, str, str, str]] = field(default_factory=set, repr=False)

    def workloads_of(self, kind: WorkloadKind) -> list[tuple[str, dict[str, Any]]]:
        """The workloads of ``kind`` (one of :data:`EXPANDED`) kept as read: (file, object with namespace and uid)."""
        return {JOBSET.kind: self.jobsets, PYTORCHJOB.kind: self.pytorchjobs,
                LEADERWORKERSET.kind: self.leaderworkersets}[kind.kind]

    def of(self, kind: Kind[T]) -> list[T]:
        """The objects of ``kind`` loaded so far: the list named by its row (``Kind.offline``)."""
        assert kind.offline is not None, kind.name
        return cast("list[T]", getattr(self, kind.offline))

    def by_kind(self) -> dict[str, list[Any]]:
        """The objects the scheduler's cache holds, by the cache's kind name, in table order (Workloads are
        context only: not cached)."""
        return {kind.name: self.of(kind) for kind in TABLE if kind.cached and kind.offline is not None}

    @property
    def usable(self) -> bool:
        """At least one valid Node, Pod, PodGroup or CompositePodGroup, or a workload to make into pods (a Job,
        JobSet, PyTorchJob or LeaderWorkerSet), was loaded."""
        return bool(self.nodes or self.pods or self.podgroups or self.coscheduling or self.composites or self.jobs
                    or any(self.workloads_of(kind) for kind in EXPANDED))

    @property
    def serves_composites(self) -> bool:
        """Whether the operator would make a multi-role workload a tree of CompositePodGroups here
        (:func:`~scheduler.groups.workloads.desired`), else one PodGroup of all its pods: as discovery found
        (:attr:`composite`; files given with ``--add`` do not change it), else — files alone — not for files of
        Kubernetes 1.36: v1alpha2 PodGroups or Workloads and no CompositePodGroup (1.36 serves none)."""
        if self.composite is not None:
            return self.composite
        return not (self.v1alpha2_objects and not self.composites)

    @property
    def has_dra(self) -> bool:
        """Any DRA object was loaded, or some pod has ``spec.resourceClaims``: the solver needs a device view."""
        return bool(self.resource_slices or self.device_classes or self.resource_claims or self.claim_templates
                    or any(p.spec.resource_claims for p in self.pods))

    def add(self, source: str, raw: Any, where: str = "") -> None:
        """Parse one raw object into its model, or record why it cannot be used.

        ``source``: the file name; ``where``: the document's position in it (``document 2``,
        ``document 1, items[3]``), quoted when the document is not an object.
        """
        if not isinstance(raw, dict):
            message = f"{where or 'document'} is {_shape(raw)}, not an object"
            self.problems.append(LoadProblem(source, "", "", "", message))
            return
        api_version, kind = str(raw.get("apiVersion", "")), str(raw.get("kind", ""))
        meta_raw = raw.get("metadata")
        meta: dict[str, Any] = meta_raw if isinstance(meta_raw, dict) else {}
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        row = KINDS.get((api_version, kind))
        if (api_version, kind) == (JOB_API_VERSION, "Job"):
            self._add_job(source, raw, meta)
            return
        if (workload_kind := _EXPANDED_BY_TYPE.get((api_version, kind))) is not None:
            self._add_workload(workload_kind, source, raw, meta)
            return
        if row is None:
            if not kind or not api_version:
                self.problems.append(LoadProblem(source, kind or "?", ns, name or "?", "missing apiVersion or kind"))
            else:
                self.skipped[f"{api_version} {kind}"] += 1
                if (problem := unknown_kind(api_version, kind, READ_KINDS)) is not None:
                    self.unknown.append((LoadProblem(source, kind, ns, name or "?", problem), None))
                if kind in READ_KINDS:
                    where = ns or (DEFAULT_NAMESPACE if kind in NAMESPACED_KINDS else "")
                    self.unread.setdefault((kind, where, name), api_version)
                workload = (api_version.partition("/")[0], kind, ns or DEFAULT_NAMESPACE, name or "?")
                if workload[:2] in UNEXPANDED_WORKLOADS and workload not in self._workloads_seen:
                    self._workloads_seen.add(workload)  # one given twice (a manifest and a dump) is named once
                    self.unexpanded.append((api_version, *workload[1:]))
            return
        if not ns and row.namespaced:
            ns = DEFAULT_NAMESPACE
            raw = {**raw, "metadata": {**meta, "namespace": ns}}
        if not name:
            self.problems.append(LoadProblem(source, kind, ns, "?", "metadata.name is missing"))
            return
        if not meta.get("uid"):
            raw = {**raw, "metadata": {**raw["metadata"], "uid": snapshot_uid(api_version, kind, ns, name)}}
        ident = (api_version.partition("/")[0], kind, ns, name)  # the API group keeps two PodGroup kinds apart
        first = self._seen.get(ident)
        if first is None:  # told once, whether or not the object can be used
            self.unknown += [(LoadProblem(source, kind, ns, name, str(f)), f.path) for f in unknown_fields(raw)]
        decoder = DECODERS.get((api_version, kind))
        decoded = decoder(raw) if decoder is not None else Decoded(raw)
        try:
            obj = row.parse(decoded.raw)
            _check_quantities(obj)
        except (ValidationError, QuantityError) as exc:
            if first is None:
                self.problems.append(LoadProblem(source, kind, ns, name, describe(exc),
                                                 raw_group_name(raw) if kind == "Pod" else ""))
            else:
                self._redefined(source, kind, ns, name)
            return
        if first is None:
            self._keep(ident, row, obj, api_version)
            self.warnings += [LoadProblem(source, kind, ns, name, problem) for problem in decoded.problems]
        elif not _same(obj, first):
            self._redefined(source, kind, ns, name)

    def add_json(self, source: str, data: bytes | msgspec.Raw, where: str = "", created: str | None = None) -> None:
        """:meth:`add` of one object's JSON bytes (an item of a JSON ``List``); ``created``: as :func:`load` says.

        An object that starts as ``kubectl`` writes one (``apiVersion`` then ``kind``), of a kind read as it is
        (no conversion, no unknown-field check: a Node, a PriorityClass, a ResourceSlice …) or a pod on a node with no
        field the v1.37 API does not know (:func:`~scheduler.model.strict.known_only`), is decoded straight from its
        bytes — a pod on a node into the compact shape the cache keeps of it
        (:func:`~scheduler.model.lean_pod.decode_bound`), the rest by its model — skipping what no model reads, as
        ``run`` decodes its lists; when it has its namespace (if namespaced), name and uid, was not defined before
        and its quantities parse, it is added so. Anything else — a pending pod, a PodGroup, a pod with an unknown
        field, an object its model refuses — is decoded and given to :meth:`add`, which says what is wrong with it.
        """
        if self._add_direct(data, created):
            return
        try:
            raw = json.loads(bytes(data))
        except RecursionError:  # the document parsed (msgspec): only Python's recursion limit refuses it
            self.problems.append(LoadProblem(source, "", "", "", f"{where or 'document'} is nested too deeply"))
            return
        self.add(source, _stamped(raw, created), where)

    def _add_direct(self, data: bytes | msgspec.Raw, created: str | None) -> bool:
        """Add ``data`` decoded straight from its bytes if it can be (:meth:`add_json`); whether it was."""
        head = _HEAD.match(memoryview(data)[:HEAD_BYTES])
        row = DIRECT.get((head[1], head[2])) if head is not None else None
        if row is None:
            return False
        obj: Any
        try:
            if row is POD_ROW:
                obj = decode_bound(data) if _POD_KNOWN(data) else None  # None: pending, or a field to tell about
            else:
                obj = from_wire(row.model, bytes(data))
                _check_quantities(obj)
        except (ValueError, RecursionError, QuantityError):  # ValidationError, msgspec's: add() says what is wrong
            return False
        if obj is None:
            return False
        meta = obj.metadata
        ident = (row.group or "v1", row.kind, meta.namespace, meta.name)  # as add() keys it
        if (not meta.name or not meta.uid or (row.namespaced and not meta.namespace) or ident in self._seen
                or (created is not None and meta.creation_timestamp is None)):
            return False
        self._keep(ident, row, obj, obj.api_version)
        return True

    def _keep(self, ident: tuple[str, str, str, str], row: Kind[Any], obj: Any, api_version: str) -> None:
        """Keep ``obj``, the first read of ``ident``, read as ``api_version`` (its own, before any conversion): one of
        ``scheduling.k8s.io/v1alpha2`` marks the files as Kubernetes 1.36's (:attr:`v1alpha2_objects`)."""
        self._seen[ident] = obj
        self.of(row).append(obj)
        self.v1alpha2_objects |= api_version == podgroup_v1alpha2.API_VERSION

    def _add_job(self, source: str, raw: dict[str, Any], meta: dict[str, Any]) -> None:
        """Keep a Job with its namespace filled in (``default`` when unset), as :meth:`add` fills it in, and its uid as
        a string when it has one (:mod:`scheduler.offline.jobs` gives it one otherwise). A name that is not a
        string, or neither a name nor a ``generateName`` (which :mod:`scheduler.offline.jobs` completes, as the
        API server does), is a problem; so is a second definition that differs from the first in what is read
        (labels, annotations, spec, status)."""
        name, generate, ns = meta.get("name"), meta.get("generateName"), meta.get("namespace") or DEFAULT_NAMESPACE
        shown = name if isinstance(name, str) and name else "?"
        named = isinstance(name, str) and bool(name)
        generated = not name and isinstance(generate, str) and bool(generate)
        if not isinstance(ns, str) or not (named or generated):
            self.problems.append(LoadProblem(source, "Job", str(ns), shown,
                                             "metadata.name (or generateName) and namespace must be strings"))
            return
        uid = meta.get("uid")
        job = {**raw, "metadata": {**meta, "namespace": ns, **({"uid": str(uid)} if uid else {})}}
        if not name or self._first("Job", source, job):  # a generateName Job is always a new one
            self.jobs.append((source, job))

    def _add_workload(self, kind: WorkloadKind, source: str, raw: dict[str, Any], meta: dict[str, Any]) -> None:
        """Keep a JobSet, PyTorchJob or LeaderWorkerSet (``kind``) as :meth:`_add_job` keeps a Job, its uid derived
        from its name when it has none (a ``generateName`` is not completed: a name is required)."""
        name, ns = meta.get("name"), meta.get("namespace") or DEFAULT_NAMESPACE
        if not isinstance(ns, str) or not isinstance(name, str) or not name:
            shown = name if isinstance(name, str) and name else "?"
            generate = meta.get("generateName")
            why = (f"metadata.generateName {generate!r} is not completed for a {kind.kind}: give it a metadata.name"
                   if not name and isinstance(generate, str) and generate and isinstance(ns, str)
                   else "metadata.name and namespace must be strings")
            self.problems.append(LoadProblem(source, kind.kind, str(ns), shown, why))
            return
        uid = meta.get("uid") or snapshot_uid(kind.api_version, kind.kind, ns, name)
        workload = {**raw, "metadata": {**meta, "namespace": ns, "uid": str(uid)}}
        if self._first(kind.kind, source, workload):
            self.workloads_of(kind).append((source, workload))

    def _first(self, kind: str, source: str, workload: dict[str, Any]) -> bool:
        """Whether raw ``workload`` (of ``kind``, named, namespace set) is the first of its name: a second definition
        is dropped, and is a problem when it differs from the first in what is read (labels, annotations, spec,
        status)."""
        meta = workload["metadata"]
        first = self._workload_names.setdefault((kind, meta["namespace"], meta["name"]), workload)
        if first is not workload and _workload_read(first) != _workload_read(workload):
            self._redefined(source, kind, meta["namespace"], meta["name"])
        return first is workload

    def _redefined(self, source: str, kind: str, ns: str, name: str) -> None:
        message = "defined again with different content; the first is kept"
        self.problems.append(LoadProblem(source, kind, ns, name, message))


_EXPANDED_BY_TYPE: dict[tuple[str, str], WorkloadKind] = {(kind.api_version, kind.kind): kind for kind in EXPANDED}


def snapshot_uid(api_version: str, kind: str, namespace: str, name: str) -> str:
    """The ``metadata.uid`` given to a snapshot object written without one (a hand-written file).

    The API server assigns every object a uid on create, and references to an object carry it
    (``status.reservedFor`` of a ResourceClaim, owner references); a uid derived from the object's
    API group, kind, namespace and name (a UUID version 5) stands in for it, the same on every run,
    so ``simulate``'s output is repeatable.
    """
    group = api_version.partition("/")[0] if "/" in api_version else ""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"snapshot:{group}/{kind}/{namespace}/{name}"))


HEAD_BYTES = 256
"""How far into an object's JSON :meth:`Objects.add_json` looks for its ``apiVersion`` and ``kind``."""
_HEAD = re.compile(rb'\s*\{\s*"apiVersion"\s*:\s*"([a-z0-9./-]+)"\s*,\s*"kind"\s*:\s*"([A-Za-z]+)"\s*,')
"""The start of an object as ``kubectl get -o json`` writes it: ``apiVersion``, then ``kind``."""
POD_ROW = KINDS[("v1", "Pod")]
_POD_KNOWN = known_only(SHAPES[("v1", "Pod")])
DIRECT: dict[tuple[bytes, bytes], Kind[Any]] = {
    (api_version.encode(), kind.encode()): row for (api_version, kind), row in KINDS.items()
    if row.convert is None and (api_version, kind) not in DECODERS
    and ((api_version, kind) not in SHAPES or row is POD_ROW)}
"""(apiVersion, kind) as bytes → the row of each kind :meth:`Objects.add_json` decodes straight from the bytes: read as
the model is (no conversion, no unknown-field check), or a Pod (checked by :func:`~scheduler.model.strict.known_only`,
taken when on a node)."""


def _workload_read(workload: dict[str, Any]) -> tuple[Any, ...]:
    """What of a workload kept as read (a Job, JobSet, PyTorchJob or LeaderWorkerSet) is read, to tell a redefinition
    that differs."""
    meta = workload["metadata"]
    return meta.get("labels"), meta.get("annotations"), workload.get("spec"), workload.get("status")


def _same(obj: BaseModel, first: BaseModel | LeanPod) -> bool:
    """Whether a redefinition reads the same as the object first loaded (fields the scheduler does not read are not
    compared); a pod first loaded compact (:meth:`Objects.add_json`) is compared in that shape."""
    if isinstance(first, LeanPod):
        return isinstance(obj, Pod) and lean_pod(obj) == first
    return bool(obj.model_dump() == first.model_dump())


def _stamped(raw: Any, created: str | None) -> Any:
    """``raw`` with ``metadata.creationTimestamp`` set to ``created`` when it has none (absent, or null as
    ``kubectl --dry-run -o`` writes it) and ``created`` is given (:func:`load`)."""
    if (created is not None and isinstance(raw, dict) and isinstance(meta := raw.get("metadata"), dict)
            and not meta.get("creationTimestamp")):
        meta["creationTimestamp"] = created
    return raw


def _shape(raw: Any) -> str:
    """What a non-object document is, for a :class:`LoadProblem`: ``a sequence``, ``a string ('abc')``."""
    if isinstance(raw, list):
        return "a sequence"
    word = {str: "string", bool: "boolean", int: "number", float: "number"}.get(type(raw), type(raw).__name__)
    return f"a {word} ({str(raw)[:40]!r})"


def _check_quantities(obj: BaseModel) -> None:
    """Parse the quantities the solver will read now, so a bad one is reported at load time; a pod's or node's
    error names the field (``spec.containers[0].resources.requests.cpu: invalid quantity …``)."""
    if isinstance(obj, (Pod, Node)):
        try:
            _ = obj.requests if isinstance(obj, Pod) else obj.allocatable
        except QuantityError as exc:
            raise locate(exc, obj.resource_quantities()) from exc
    elif isinstance(obj, PersistentVolumeClaim):
        _ = obj.request_bytes
    elif isinstance(obj, PersistentVolume):
        _ = obj.capacity_bytes
    elif isinstance(obj, ResourceSlice):
        for counter_set in obj.spec.shared_counters:
            counter_quantities(counter_set.counters)
        for device in obj.spec.devices:
            for cap in device.capacity.values():
                _ = cap.quantity
            for use in device.consumes_counters:
                counter_quantities(use.counters)


def _raw_objects(path: Path, stdin: BinaryIO | None) -> Iterator[tuple[str, Any]]:
    """``(position, raw object)`` for each non-empty document of ``path``; a ``kind: List``'s items one by one,
    each released once yielded (the list does not keep them). Raises what :func:`~scheduler.offline.reader.documents`
    raises."""
    for i, doc in documents(path, stdin, raw_items=True):
        if doc is None:
            continue
        if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") and "items" in doc:
            items = doc.pop("items") or []
            del doc
            if not isinstance(items, list):
                yield f"document {i}, items", items
                continue
            items.reverse()  # popped from the end: item j is released as soon as it is dispatched
            for j in range(len(items)):
                yield f"document {i}, items[{j}]", items.pop()
        else:
            yield f"document {i}", doc


def load(paths: Iterable[str | Path], stdin: BinaryIO | None = None, objects: Objects | None = None,
         created: str | None = None) -> Objects:
    """Read every file into one :class:`Objects`; a path ``-`` (:data:`~scheduler.offline.reader.STDIN`) is
    read from ``stdin`` (default: the process's standard input) and named ``<stdin>``.

    Raises :class:`SnapshotError` if a file cannot be read, is not UTF-8 or is not YAML or JSON, or if
    the files *together* hold nothing :attr:`Objects.usable`; in that case
    the message quotes the load problems (up to :data:`MAX_LISTED_PROBLEMS`), since no report
    follows to list them. ``objects``: add to these (what ``simulate --from-cluster`` listed) rather than to
    a new :class:`Objects`; an object of a file that is already there with other content is a problem, and
    the one already there is kept. ``created``: the ``metadata.creationTimestamp`` (RFC 3339) given to each
    object that has none (or null), as the API server stamps an object it creates (``--add``: queued after the
    cluster's older pending gangs of the same priority, not before them).
    """
    objects = Objects() if objects is None else objects
    names = [Path(p) for p in paths]
    for path in names:
        source = name_of(path)
        empty = True
        for where, raw in _raw_objects(path, stdin):
            empty = False
            if isinstance(raw, msgspec.Raw):  # an item of a JSON List
                objects.add_json(source, raw, where, created)
            else:
                objects.add(source, _stamped(raw, created), where)
        if empty and str(path) != STDIN and not path.read_bytes().strip():  # an empty file (not an empty List)
            objects.problems.append(LoadProblem(source, "", "", "", "is empty"))
    if not names:
        raise SnapshotError("no snapshot file given")
    if not objects.usable:
        head = f"{', '.join(map(name_of, names))}: {NOTHING_FOUND}"
        lines = [f"{head}; {len(objects.problems)} invalid:" if objects.problems else head]
        lines += [f"  {x}" for x in objects.problems[:MAX_LISTED_PROBLEMS]]
        if len(objects.problems) > MAX_LISTED_PROBLEMS:
            lines.append(f"  … and {len(objects.problems) - MAX_LISTED_PROBLEMS} more")
        raise SnapshotError("\n".join(lines))
    return objects
