"""ClusterCache: the scheduler's picture of the cluster, fed only by the watch, plus assumptions.

Holds the current Pods, Nodes, PodGroups (scheduler-plugins' too), CompositePodGroups, PriorityClasses,
Namespaces (their labels, for pod affinity's ``namespaceSelector``) and PodDisruptionBudgets (preemption's
preferences) — and, when the server serves ``resource.k8s.io/v1``, ResourceSlices, DeviceClasses, ResourceClaims and
ResourceClaimTemplates; PersistentVolumeClaims, PersistentVolumes, StorageClasses and CSINodes — by
key (the informers call :meth:`ClusterCache.replace` after each list and :meth:`ClusterCache.apply`
for each watch event; ``simulate`` calls :meth:`ClusterCache.load` with its snapshot), and the
placements, devices and PVC decisions the scheduler has *assumed* but the API does not show yet (a
plan's capacity is held in memory from the moment it is decided, never by half-bound pods or
half-written claims).

A pod on a node is kept in a compact shape (:class:`~scheduler.model.lean_pod.LeanPod`: the reads of a
:class:`~scheduler.model.pod.Pod`, its parts shared with the pods of its template, without its container statuses),
whether the informer decoded it so from the reply's bytes or it came as a model — a cluster's running pods are most
of what the cache holds.

Everything derived is **incremental**: an event updates what it touches and nothing else —

* :class:`~scheduler.cache.usage.NodeUsage`: one row of the used matrix and one NodeInfo per pod
  event; a new table only when nodes change;
* :class:`~scheduler.groups.index.GroupIndex`: only the trees a pod or group event touches are
  rebuilt (:meth:`take_changed_roots` says which);
* :class:`~scheduler.cache.devices.DeviceCache`: the device inventory per pool, allocations per claim;
* :class:`~scheduler.cache.volumes.StorageCache`: which pods use which PVC, plans' PVC decisions in
  flight, the storage view of the snapshot;
* :attr:`ClusterCache.holds`: the room each *partial* tree (members bound below its minCount) holds on
  the nodes the durable intent on its bound members names (:func:`held_room`, architecture §14), recomputed with
  its tree and added to every snapshot's nominated room.

Every change is returned as typed :class:`~scheduler.framework.events.ClusterEvent` values; a change
the scheduler does not read — a node heartbeat, a status condition (our own writes included), the
watch confirming one of our own binds — returns none and rebuilds nothing. The cache never calls
the queue: the driver routes events to queueing hints. A re-list replaces the whole kind, so a
missed delete or a replayed add can never double-count usage. An assumption ends when the watch
shows the pod bound (or gone), or when the driver calls :meth:`forget` after a failed bind; a pod
already assumed or bound is never assumed again.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, TypeVar, cast

from pydantic import BaseModel

from scheduler.cache.devices import DeviceCache
from scheduler.cache.usage import NodeUsage
from scheduler.cache.volumes import STORAGE_KINDS, StorageCache
from scheduler.dra.device_snapshot import DraView
from scheduler.framework.events import Action, ClusterEvent
from scheduler.framework.plan import ClaimAllocation, Plan
from scheduler.framework.snapshot import Nominated, Snapshot, bound_copy, pod_vector
from scheduler.groups.index import GroupIndex
from scheduler.groups.intent import INTENT_ANNOTATION, held_intent, intended_node, intent_problem
from scheduler.groups.tree import Forest, GroupTree
from scheduler.model.base import NESTED_TOO_DEEP, describe
from scheduler.model.coscheduling import CoscheduledPodGroup, label_link
from scheduler.model.dra import DeviceClass, ResourceClaim
from scheduler.model.kinds import (
    CACHED,
    COMPOSITE_POD_GROUP,
    COSCHEDULING_POD_GROUP,
    CSI_NODE,
    DEVICE_CLASS,
    NAMESPACE,
    NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    POD,
    POD_DISRUPTION_BUDGET,
    POD_GROUP,
    PRIORITY_CLASS,
    RESOURCE_CLAIM,
    RESOURCE_CLAIM_TEMPLATE,
    RESOURCE_SLICE,
    STORAGE_CLASS,
    Kind,
)
from scheduler.model.lean_pod import LeanPod, lean_pod
from scheduler.model.namespace import Namespace
from scheduler.model.node import Node
from scheduler.model.pod import Pod, raw_group_name
from scheduler.model.policy import PodDisruptionBudget
from scheduler.model.quantity import QuantityError, is_extended, locate
from scheduler.model.scheduling import CompositePodGroup, GroupKey, PodGroup
from scheduler.model.storage import CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass

log = logging.getLogger(__name__)

KINDS: dict[str, Kind[Any]] = {kind.name: kind for kind in CACHED}
"""The cache's kinds by name (``Kind.name``): the cached rows of :mod:`scheduler.model.kinds`. A scheduler-plugins
PodGroup is kept as what the scheduler reads of it, a PodGroup (``model/coscheduling.py``, the one conversion)."""

T = TypeVar("T")

_ACTIONS = {"ADDED": Action.ADD, "MODIFIED": Action.UPDATE, "DELETED": Action.DELETE}


class AssumeError(ValueError):
    """A plan names a pod that is already bound or assumed: assuming it again would count it twice.

    Permanent for that plan: it was made from a stale tree; drop it and schedule the root again.
    """


def key_of(obj: Any) -> str:
    """The cache key of an object: ``namespace/name``, or ``name`` for a cluster-scoped one."""
    meta = obj.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


def node_essence(node: Node) -> tuple[object, ...]:
    """What the scheduler reads of a node: labels, spec (taints, cordon), allocatable, condition statuses."""
    return (node.metadata.labels, node.spec, node.status.allocatable,
            tuple((c.type, c.status) for c in node.status.conditions))


def pod_essence(pod: Pod) -> tuple[object, ...]:
    """What the scheduler reads of a pod: spec, labels, deletion, phase, nomination, generated claim names,
    requests (actuated resources included) — not its conditions (our own status writes) nor its resourceVersion.
    The nomination only while the pod is not bound: a bound pod holds its node, not the room it was nominated to
    (kube-scheduler's nominator drops a pod once it is assigned), so the nomination cleared on its bind — by the
    API server (``ClearingNominatedNodeNameAfterBinding``) or by us — changes nothing, and does not decide its
    root again.
    Of the phase only whether the pod finished (``Succeeded`` / ``Failed``: the queueing hints and every count read
    no more), unless the pod carries scheduler-plugins' PodGroup label, whose PodGroup's status counts its running
    members: the kubelet's write that starts a pod (``Pending`` → ``Running``) then changes nothing the scheduler
    reads but what a snapshot holds (``status.startTime``, which preemption orders victims by: ``ClusterCache``
    lets its snapshot go on every pod update). Its first :data:`ENTRY_ESSENCE` items are all its entry in the pod
    index reads (``pod_index.pod_entry``)."""
    phase = pod.status.phase if label_link(pod.metadata.labels) else pod.is_terminal
    nominated = None if pod.spec.node_name else pod.status.nominated_node_name
    return (pod.metadata.uid, pod.spec, pod.metadata.labels, pod.metadata.deletion_timestamp, phase,
            nominated, pod.status.resource_claim_statuses, pod.requests)


ENTRY_ESSENCE = 4
"""How many of :func:`pod_essence`'s items (uid, spec, labels, deletion) a pod's entry in the pod index derives from:
a pod whose status alone changed (its phase as the kubelet starts it) keeps its entry."""


def group_essence(group: PodGroup | CompositePodGroup) -> tuple[object, ...]:
    """What the scheduler reads of a group: spec, deletion and (PodGroup) generated claim names — not its
    conditions, which the scheduler writes itself."""
    claims = group.status.resource_claim_statuses if isinstance(group, PodGroup) else ()
    return group.metadata.uid, group.spec, group.metadata.deletion_timestamp, claims


def claim_essence(claim: PersistentVolumeClaim) -> tuple[object, ...]:
    """What the volume plugins read of a PVC: spec, annotations (class, selected node, bind completed),
    owners (ephemeral claims), deletion and phase — not its conditions or capacity."""
    meta = claim.metadata
    return (meta.uid, claim.spec, meta.annotations, meta.owner_references, meta.deletion_timestamp,
            claim.status.phase)


def volume_essence(volume: PersistentVolume) -> tuple[object, ...]:
    """What the volume plugins read of a PV: labels (zones), the class annotation, spec, deletion and phase."""
    meta = volume.metadata
    return meta.labels, meta.annotations, volume.spec, meta.deletion_timestamp, volume.status.phase


def namespace_essence(namespace: Namespace) -> tuple[object, ...]:
    """What the scheduler reads of a namespace: its labels."""
    return (namespace.metadata.labels,)


_ESSENCE: dict[str, Callable[[Any], tuple[object, ...]]] = {
    NODE.name: node_essence, POD_GROUP.name: group_essence,
    COMPOSITE_POD_GROUP.name: group_essence, COSCHEDULING_POD_GROUP.name: group_essence,
    PERSISTENT_VOLUME_CLAIM.name: claim_essence, PERSISTENT_VOLUME.name: volume_essence,
    NAMESPACE.name: namespace_essence}


RefusalReason = Literal["invalid", "too_deep", "undecodable", "invalid_intent"]
REFUSAL_REASONS: tuple[RefusalReason, ...] = ("invalid", "too_deep", "undecodable", "invalid_intent")
"""Why an object was refused (``gang_scheduler_objects_refused_total{reason}``):

- ``invalid``: it does not validate against its kind's model (a wrong type, a negative quantity, a
  missing required field) — the object is left out of the cache;
- ``too_deep``: decoding it hit the interpreter's nesting limit (:class:`RecursionError`) — left out;
- ``undecodable``: its decoding raised anything else — left out, and the traceback logged;
- ``invalid_intent``: a pod whose durable intent annotation is invalid
  (:func:`~scheduler.groups.intent.intent_problem`) — the pod is kept, read as having no intent.
"""


@dataclasses.dataclass(frozen=True, slots=True)
class Refusal:
    """One object the cache could not take as it is: its kind (the cache's name), what its metadata
    names (empty strings where that metadata is missing or malformed), the reason and a one-line message."""

    kind: str
    namespace: str
    name: str
    uid: str
    reason: RefusalReason
    message: str
    group: str = ""
    """For a pod: the PodGroup it names (:func:`~scheduler.model.pod.raw_group_name`; empty: none)."""


def refusal(kind: str, raw: object, reason: RefusalReason, message: str) -> Refusal:
    """A :class:`Refusal` of ``raw`` (any JSON value: its metadata is read defensively)."""
    meta = raw.get("metadata") if isinstance(raw, Mapping) else None
    meta = meta if isinstance(meta, Mapping) else {}

    def field(name: str) -> str:
        value = meta.get(name)
        return value if isinstance(value, str) else ""

    return Refusal(kind, field("namespace"), field("name"), field("uid"), reason, message,
                   raw_group_name(raw) if kind == POD.name else "")


def refusal_of(kind: str, raw: object, exc: BaseException) -> Refusal:
    """The :class:`Refusal` of ``raw``, whose decoding raised ``exc``; logs it (with the traceback when the
    exception is not a validation error)."""
    if isinstance(exc, RecursionError):
        reason: RefusalReason = "too_deep"
        message = "nested too deeply to decode"
    elif isinstance(exc, (ValueError, ArithmeticError)):  # pydantic ValidationError, QuantityError, decimal errors
        reason, message = "invalid", describe(exc)
    else:
        reason, message = "undecodable", f"{type(exc).__name__}: {exc}"[:1024]
    refused = refusal(kind, raw, reason, message)
    log.warning("ignoring malformed %s %s/%s: %s", kind, refused.namespace, refused.name, message,
                exc_info=exc if reason == "undecodable" else None)
    return refused


_GROUP_KINDS: Mapping[str, tuple[str, str]] = {
    POD_GROUP.name: ("PodGroup", "PodGroup"), COMPOSITE_POD_GROUP.name: ("CompositePodGroup", "CompositePodGroup"),
    COSCHEDULING_POD_GROUP.name: ("PodGroup", f"{COSCHEDULING_POD_GROUP.group} PodGroup")}
"""Cache kind of a group → the kind its members wait for (:attr:`~scheduler.groups.index.GroupIndex.absent`) and how
a message names it."""


def _parse(kind: str, raw: Mapping[str, Any]) -> Any:
    """The model of ``raw`` as the cache keeps it; raises what its model's validation or our derived
    properties raise (see :func:`refusal_of`)."""
    return _derived(KINDS[kind].parse(raw))


def _derived(obj: Any) -> Any:
    """``obj``, after computing the derived properties that can refuse it (a pod's requests, a node's allocatable:
    a malformed quantity raises here, once, rather than in a plugin)."""
    if isinstance(obj, Pod):
        _ = obj.requests
    elif isinstance(obj, Node):
        _ = obj.allocatable
    return obj


_CLAIM_INPUTS = {RESOURCE_CLAIM_TEMPLATE.name: "template"}
"""Kinds (besides claims, PodGroups and namespaces, reported where they are handled) whose objects claim
resolution reads → what :meth:`~scheduler.cache.devices.DeviceCache.changed` calls them."""


def _wants_devices(pod: Pod) -> bool:
    """A pending pod that may need DRA: it has claims, or requests an extended resource (which a
    DeviceClass may serve)."""
    if pod.is_bound or pod.is_terminal:
        return False
    return bool(pod.spec.resource_claims) or any(is_extended(r) for r in pod.requests)


class ClusterCache:
    """See the module docstring. Not thread-safe: used from the event loop only.

    Longer than our ~300-line rule, on purpose: it is the one door to the cluster's state — feeding every kind,
    assume / forget across the parts, the snapshot, and one typed accessor per kind (a third of its length) —
    while what each part computes lives in its own module (``usage.py``, ``devices.py``, ``volumes.py``,
    ``scheduler.groups``).

    ``scheduler_name``: our ``spec.schedulerName`` (which trees are ours). ``dra``: whether snapshots
    carry a device view (live: whether the DRA API is watched; without it, pods that name a claim
    wait). ``synthesize_claims``: make template claims that are missing from their template, and
    generic ephemeral volumes' missing PVCs from the pod's template (``simulate``, which has neither
    the resourceclaim controller nor the ephemeral volume controller).
    """

    def __init__(self, scheduler_name: str, *, dra: bool = False, synthesize_claims: bool = False) -> None:
        self.scheduler_name = scheduler_name
        self.objects: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}
        self.assumed: dict[str, str] = {}
        """Pod key → node name, for pods planned and being bound."""
        self.nominations: dict[str, str | None] = {}
        """Pod key → the ``status.nominatedNodeName`` decided but not yet shown by the watch (None: cleared):
        the in-memory nominator, so the room preemption frees is held from the moment it is decided."""
        self.dra = dra
        self.usage = NodeUsage()
        self.groups = GroupIndex(scheduler_name)
        self.devices = DeviceCache(self.objects[RESOURCE_CLAIM.name], self.objects[RESOURCE_CLAIM_TEMPLATE.name],
                                   self.objects[POD_GROUP.name], synthesize=synthesize_claims,
                                   namespaces=self.objects[NAMESPACE.name])
        self.storage = StorageCache(self.objects, synthesize=synthesize_claims)
        self.version = 0
        """Bumped on every change the scheduler reads (and on assume/forget): a snapshot older than it is stale."""
        self._namespace_labels: dict[str, Mapping[str, str]] = {}
        """Namespace name → labels, replaced (a new dict) when a namespace's labels change."""
        self._snapshot: tuple[int, Snapshot] | None = None
        self._changed_roots: set[GroupKey] = set()
        self.holds: dict[GroupKey, tuple[tuple[Pod, str, int], ...]] = {}
        """Partial roots → the room they hold (:func:`held_room`), kept with their trees."""
        self.room_released = False
        """Room in :attr:`holds` was given up since :meth:`take_room_released` last said so."""
        self._refused_now: dict[str, dict[tuple[str, str], Refusal]] = {}
        """Kind → (namespace, name) → the refusal of each group, and each pod naming a group, refused as it is now:
        what waits for it is told why (:meth:`_tell`) until it is stored, deleted, or not refused again by a re-list
        (:class:`Relist`)."""
        self.on_refused: Callable[[Refusal], None] = lambda refused: None
        """Told of every object refused, or taken with a part ignored (:data:`REFUSAL_REASONS`); the live
        driver counts them and posts a Warning Event on the object. Must not raise."""
        self.on_group: Callable[[PodGroup | CompositePodGroup], None] = lambda group: None
        """Told of every PodGroup (of the workload API) and CompositePodGroup stored, status-only updates (the
        scheduler's own condition writes) included; the live driver judges its conditions again
        (:meth:`~scheduler.live.group_conditions.GroupConditions.shown`). Must not raise."""

    def parse(self, kind: str, raw: object) -> Any | None:
        """The model of one raw object of ``kind``, or None when it cannot be taken: every exception its
        decoding can raise is caught here, per object, and reported to :attr:`on_refused`, so no object
        can stop an informer. A pod with an invalid durable intent is taken (read as having none)
        and reported too. ``raw`` may be the kind's model already (the client decoded it from the reply's bytes,
        ``scheduler.client.decoding``; never a converted kind's): only its derived properties are checked."""
        if isinstance(raw, (BaseModel, LeanPod)):
            try:
                return self._intent_checked(kind, _derived(raw))
            except Exception as exc:  # the decoding boundary, as below
                meta = raw.metadata  # type: ignore[union-attr]
                if isinstance(exc, QuantityError) and isinstance(raw, (Pod, Node)):
                    exc = locate(exc, raw.resource_quantities())
                refused = refusal_of(kind, {"metadata": {"name": meta.name, "namespace": meta.namespace,
                                                         "uid": meta.uid}}, exc)
                if isinstance(raw, Pod) and raw.group_name:
                    refused = dataclasses.replace(refused, group=raw.group_name)
                self._refused(refused)
                return None
        try:
            if not isinstance(raw, Mapping):
                raise TypeError(f"expected an object, got {type(raw).__name__}")
            if NESTED_TOO_DEEP in raw:  # the stub of an object the client could not decode
                raise RecursionError("nested too deeply to decode")
            obj = _parse(kind, raw)
        except Exception as exc:  # the decoding boundary: whatever one object makes a decoder raise
            self._refused(refusal_of(kind, raw, exc))
            return None
        return self._intent_checked(kind, obj)

    def _intent_checked(self, kind: str, obj: Any) -> Any:
        """``obj``, reported to :attr:`on_refused` first when it is a pod whose durable intent annotation is invalid
        (it is taken, read as having none)."""
        if (kind == POD.name and INTENT_ANNOTATION in obj.metadata.annotations
                and (problem := intent_problem(obj)) is not None):
            meta = obj.metadata
            log.warning("%s %s/%s: %s; read as no intent", kind, meta.namespace, meta.name, problem)
            self.on_refused(Refusal(kind, meta.namespace, meta.name, meta.uid, "invalid_intent", problem))
        return obj

    def _refused(self, refused: Refusal) -> None:
        """Tell :attr:`on_refused`. A group refused is, for the pods and groups that name it, a group that is invalid,
        not one that does not exist, and a pod refused is a member its gang is short of: they are told so
        (:meth:`_tell`) until it is stored, deleted, or missing from a re-list (:meth:`_no_longer_refused`)."""
        self.on_refused(refused)
        if refused.name and (refused.group or refused.kind in _GROUP_KINDS):
            self._refused_now.setdefault(refused.kind, {})[(refused.namespace, refused.name)] = refused
            self._tell(refused, refused.message)

    def _tell(self, refused: Refusal, why: str | None) -> None:
        """What waits for the object of ``refused`` is told ``why`` it is invalid (None: that no longer holds):
        :meth:`~scheduler.groups.index.GroupIndex.set_refused_member`,
        :meth:`~scheduler.groups.index.GroupIndex.set_absent`."""
        if refused.group:
            self.groups.set_refused_member((refused.namespace, refused.group), refused.name, why)
        shown = _GROUP_KINDS.get(refused.kind)
        if shown is not None:
            self.groups.set_absent(shown[0], (refused.namespace, refused.name), None if why is None else
                                   f"{shown[1]} {refused.namespace}/{refused.name} is invalid: {why}")

    def _no_longer_refused(self, kind: str, namespace: str, name: str) -> None:
        """The object ``namespace/name`` of ``kind`` was stored, deleted or not listed again: if it was refused, what
        waited for it is no longer told it is invalid."""
        refused = self._refused_now.get(kind, {}).pop((namespace, name), None)
        if refused is not None:
            self._tell(refused, None)

    # -- feeding -------------------------------------------------------------------------------
    def replace(self, kind: str, raws: Iterable[Mapping[str, Any]]) -> list[ClusterEvent]:
        """Replace every object of ``kind`` with a fresh list (initial list and re-list after 410)."""
        relist = self.relist(kind)
        events = relist.add(raws)
        return events + relist.finish()

    def relist(self, kind: str) -> Relist:
        """A re-list of ``kind`` fed page by page (:meth:`Relist.add`), applied when :meth:`Relist.finish`."""
        return Relist(self, kind)

    def load(self, kind: str, objects: Iterable[BaseModel]) -> list[ClusterEvent]:
        """Replace every object of ``kind`` with parsed models (``simulate``'s snapshot)."""
        return self._replace(kind, {key_of(obj): obj for obj in objects})

    def load_one(self, kind: str, obj: BaseModel) -> list[ClusterEvent]:
        """Add or update one parsed object, as a watch event would (``simulate``'s recording binder)."""
        key = key_of(obj)
        return self._set(kind, key, self.objects[kind].get(key), obj)

    def delete_one(self, kind: str, key: str) -> list[ClusterEvent]:
        """Remove one object, as a watch DELETED event would (``simulate``: preemption victims gone)."""
        old = self.objects[kind].get(key)
        return [] if old is None else self._set(kind, key, old, None)

    def _replace(self, kind: str, fresh: dict[str, Any]) -> list[ClusterEvent]:
        old = self.objects[kind]
        events: list[ClusterEvent] = []
        if kind == NODE.name:
            return self._set_nodes(fresh)
        for key in sorted(old.keys() | fresh.keys()):
            before, after = old.get(key), fresh.get(key)
            if before is not after and before != after:
                events.extend(self._set(kind, key, before, after))
        return events

    def apply(self, kind: str, event_type: str, raw: Any) -> list[ClusterEvent]:
        """Apply one watch event (``ADDED`` / ``MODIFIED`` / ``DELETED``); an object that cannot be taken
        (:meth:`parse`) changes nothing, unless it was deleted: then a copy stored before it went bad goes too."""
        obj = self.parse(kind, raw)
        if obj is None:
            if event_type != "DELETED":
                return []
            gone = refusal(kind, raw, "invalid", "")  # its metadata, read defensively
            self._no_longer_refused(kind, gone.namespace, gone.name)
            key = f"{gone.namespace}/{gone.name}" if gone.namespace else gone.name
            old = self.objects[kind].get(key) if gone.name else None
            return [] if old is None else self._set(kind, key, old, None)  # a copy stored before it went bad
        key = key_of(obj)
        old = self.objects[kind].get(key)
        new = None if event_type == "DELETED" else obj
        if new is None:
            self._no_longer_refused(kind, obj.metadata.namespace or "", obj.metadata.name)
            if old is None:
                return []
        return self._set(kind, key, old, new)

    def _set(self, kind: str, key: str, old: Any, new: Any) -> list[ClusterEvent]:
        """Store ``new`` (None: delete) under ``key`` and update what derives from it; the events it makes. A pod on a
        node is kept in its compact shape (:class:`~scheduler.model.lean_pod.LeanPod`), however it came."""
        if isinstance(new, Pod) and new.is_bound:
            new = lean_pod(new)
        if new is not None and self._refused_now and kind in self._refused_now:  # stored: no longer refused
            self._no_longer_refused(kind, new.metadata.namespace or "", new.metadata.name)
        if new is None:
            self.objects[kind].pop(key, None)
        else:
            self.objects[kind][key] = new
        action = Action.ADD if old is None else Action.DELETE if new is None else Action.UPDATE
        essence = _ESSENCE.get(kind)  # a pod's (:func:`pod_essence`) is judged in _set_pod, as the scheduler shows it
        was: tuple[object, ...] = ()  # both versions' essences; none for an added or deleted object
        now: tuple[object, ...] = ()
        if essence is not None and old is not None and new is not None:
            was, now = essence(old), essence(new)
        quiet = bool(now) and was == now
        if kind == NODE.name:
            if quiet:
                return []
            return self._set_nodes(self.objects[NODE.name], ClusterEvent(kind, action, old, new))
        if kind == POD.name:
            quiet, shown = self._set_pod(key, old, new)
            old = shown  # as the scheduler showed it: an assumed pod's delete frees its room (handleAssumedPodDeletion)
            self._snapshot = None  # it holds the pod objects, whose unread fields preemption may read (startTime)
        elif kind in (POD_GROUP.name, COSCHEDULING_POD_GROUP.name):  # the index holds each name's group (group())
            self.groups.set_podgroup(_name(key), self.group(POD_GROUP.name, *_name(key)), quiet=quiet)
            if kind == POD_GROUP.name:
                self.devices.changed("podgroup", key)
                if new is not None:
                    self.on_group(new)
        elif kind == COMPOSITE_POD_GROUP.name:
            self.groups.set_composite(_name(key), new, quiet=quiet)
            if new is not None:
                self.on_group(new)
        elif kind == PRIORITY_CLASS.name:
            self.groups.set_priority_class(key, new)
        elif kind == RESOURCE_SLICE.name:
            self.devices.set_slice(old, new)
        elif kind == DEVICE_CLASS.name:
            self.devices.set_class(key, new)
        elif kind == RESOURCE_CLAIM.name:
            self.devices.set_claim(key, new)
        elif kind in _CLAIM_INPUTS:  # what claim resolution reads: replaced, even when quiet
            self.devices.changed(_CLAIM_INPUTS[kind], key)
        elif kind in STORAGE_KINDS and not quiet:
            self.storage.changed(kind)
        elif kind == NAMESPACE.name:
            self.devices.changed("namespace", key)
            if not quiet:
                self._namespace_labels = {name: ns.metadata.labels for name, ns in self.namespaces.items()}
        if quiet:
            return []
        if kind in (POD_GROUP.name, COSCHEDULING_POD_GROUP.name, COMPOSITE_POD_GROUP.name, PRIORITY_CLASS.name):
            self.usage.invalidate()  # nominated room is held at the group's priority
        self._bump()
        return [ClusterEvent(kind, action, old, new)]

    def _set_nodes(self, nodes: dict[str, Node], event: ClusterEvent | None = None) -> list[ClusterEvent]:
        """Nodes changed (a re-list, or one event): the fast path for an allocatable-only update, else a
        new table (and the inventory's reach against it)."""
        if nodes is not self.objects[NODE.name]:  # a re-list: diff to events
            old = self.nodes
            events = []
            for key in sorted(old.keys() | nodes.keys()):
                before, after = old.get(key), nodes.get(key)
                if before is None or after is None or node_essence(before) != node_essence(after):
                    action = Action.ADD if before is None else Action.DELETE if after is None else Action.UPDATE
                    events.append(ClusterEvent(NODE.name, action, before, after))
            self.objects[NODE.name] = nodes
        else:
            assert event is not None
            events = [event]
        if not events:
            return []
        fast = (len(events) == 1 and events[0].action is Action.UPDATE
                and events[0].old.metadata.labels == events[0].new.metadata.labels
                and events[0].old.spec == events[0].new.spec
                and [(c.type, c.status) for c in events[0].old.status.conditions]
                == [(c.type, c.status) for c in events[0].new.status.conditions]
                and self.usage.update_node(events[0].new))
        if not fast:
            self.usage.set_nodes(self.nodes.values())
            self.devices.set_table(self.usage.table)
        self._bump()
        return events

    def _set_pod(self, key: str, old: Pod | None, pod: Pod | None) -> tuple[bool, Pod | None]:
        """Update what derives from one pod; returns whether nothing the scheduler reads changed (a status
        condition, or the watch confirming our own bind where we assumed it), and ``old`` as the scheduler showed
        it (:meth:`_shown`)."""
        before = self._shown(key, old)
        if key in self.assumed and (pod is None or pod.is_bound or pod.is_terminal):
            del self.assumed[key]  # the watch caught up (or the pod is gone / bound by someone else)
        if key in self.nominations and (pod is None or pod.is_bound or pod.is_terminal
                                        or pod.status.nominated_node_name == self.nominations[key]):
            del self.nominations[key]  # the watch shows it (or the pod no longer waits for room)
        shown = self._shown(key, pod)
        was, now = (pod_essence(before), pod_essence(shown)) if before is not None and shown is not None else ((), ())
        quiet = bool(now) and was == now
        same_entry = quiet or (bool(now) and was[:ENTRY_ESSENCE] == now[:ENTRY_ESSENCE])
        self.usage.set_pod(key, shown, same_entry=same_entry)
        self.storage.set_pod(key, shown)
        self.groups.set_pod(key, shown, quiet=quiet)
        wants = self.dra and pod is not None and _wants_devices(pod)
        self.devices.set_pod(key, pod if wants and key not in self.assumed else None)
        self.devices.settle_pod(key, pod)
        return quiet, before

    def _shown(self, key: str, pod: Pod | None) -> Pod | None:
        """``pod`` as the scheduler sees it: bound to its node while assumed, nominated as decided."""
        if pod is None:
            return None
        node = self.assumed.get(key)
        if node is not None:
            return bound_copy(pod, node)
        if key in self.nominations:
            status = pod.status.model_copy(update={"nominated_node_name": self.nominations[key]})
            return pod.model_copy(update={"status": status})
        return pod

    # -- nominations ---------------------------------------------------------------------------
    def nominate(self, nominations: Iterable[tuple[str, str | None]]) -> list[ClusterEvent]:
        """Show pods nominated to nodes (None: not nominated) before the watch does: (pod key, node).

        The cache's in-memory nominator (kube-scheduler updates its nominator before the API write,
        ``schedule_one.go``): the room preemption frees is held for the preemptor at once
        (:class:`~scheduler.framework.snapshot.Nominated`). Each entry lasts until the watch shows the same
        ``status.nominatedNodeName``, or the pod is bound, finished or gone. Pods unknown or bound are skipped.
        Returns a Pod ``Update`` per pod whose shown nomination changed: a withdrawn one frees the room it held
        (kube's ``updatePodInSchedulingQueue`` on a changed nominated node), which the watch will not say again.
        """
        events: list[ClusterEvent] = []
        for key, node in nominations:
            pod = self.pods.get(key)
            if pod is None or pod.is_bound or pod.is_terminal:
                continue
            before = self._shown(key, pod)
            if pod.status.nominated_node_name == node:
                self.nominations.pop(key, None)
            else:
                self.nominations[key] = node
            shown = self._shown(key, pod)
            self.usage.set_pod(key, shown)
            self.groups.set_pod(key, shown)
            if before is not None and shown is not None and (before.status.nominated_node_name
                                                             != shown.status.nominated_node_name):
                events.append(ClusterEvent(POD.name, Action.UPDATE, before, shown))
        self._bump()
        return events

    def nominated_node(self, key: str) -> str | None:
        """The node pod ``key`` is nominated to as the scheduler sees it (in memory first, then the API)."""
        if key in self.nominations:
            return self.nominations[key]
        pod = self.pod(key)
        return pod.status.nominated_node_name if pod is not None else None

    # -- assume / forget -----------------------------------------------------------------------
    def assume(self, plan: Plan, token: str) -> list[ClusterEvent]:
        """Hold a plan's capacity: each pod counts as bound to its node until the watch or :meth:`forget`
        says otherwise, and its claim allocations hold their devices (``token``: unique to the plan).

        Returns one Pod ``Update`` event per placement (the pending pod, then as bound where it is assumed): what
        kube-scheduler's ``EventAssignedPodAdd`` tells the plugins (``eventhandlers.go`` ``addAssignedPodToCache``),
        for a pod whose bind the watch will confirm quietly — so a root waiting for it (inter-pod affinity, topology
        spread) is moved when the room it needs appears in the snapshots.

        Raises :class:`AssumeError` (and assumes nothing) if a pod of the plan is gone, already bound or
        already assumed.
        """
        pods = self.pods
        for pod, _ in plan.placements:
            current = pods.get(pod.key)
            if pod.key in self.assumed or current is None or current.is_bound:
                raise AssumeError(f"pod {pod.key} is {'gone' if current is None else 'already bound or assumed'}")
        events: list[ClusterEvent] = []
        for pod, node in plan.placements:
            self.assumed[pod.key] = node
            self.devices.set_pod(pod.key, None)
            shown = bound_copy(pods[pod.key], node)
            self.usage.set_pod(pod.key, shown)
            self.storage.set_pod(pod.key, shown)
            self.groups.set_pod(pod.key, shown)
            events.append(ClusterEvent(POD.name, Action.UPDATE, pods[pod.key], shown))
        self.devices.assume(token, plan.allocations)
        self.storage.assume(token, plan.volumes)
        self._bump()
        return events

    def forget(self, pod_keys: Iterable[str]) -> None:
        """Drop assumptions (a failed or abandoned bind): the capacity is free again and the pods pending."""
        for key in pod_keys:
            if self.assumed.pop(key, None) is None:
                continue
            current = self.pods.get(key)
            self.devices.set_pod(key, current if self.dra and current is not None and _wants_devices(current) else None)
            pod = self._shown(key, current)
            self.usage.set_pod(key, pod)
            self.storage.set_pod(key, pod)
            self.groups.set_pod(key, pod)
        self._bump()

    def forget_volumes(self, token: str) -> None:
        """A plan settled: its claim decisions are no longer held (those written show through the watch)."""
        self.storage.forget(token)
        self._bump()

    def forget_devices(self, token: str, claims: Iterable[str] | None = None) -> None:
        """Release a plan's held devices: all, or only those of ``claims`` (keys as in the plan)."""
        self.devices.forget(token, claims)
        self._bump()

    def exclude_devices(self, device_ids: Iterable[str]) -> None:
        """Keep devices whose binding failed out of the next plans, until their ResourceSlice changes (KEP-5007)."""
        self.devices.exclude(device_ids)
        self._bump()

    def held_claims(self, token: str) -> frozenset[str]:
        """The claims whose devices a plan still holds."""
        return frozenset(self.devices.held.get(token, {}))

    def _bump(self) -> None:
        """Something the scheduler reads changed: snapshots taken before are stale (and are let go of, so an
        old snapshot never keeps replaced objects alive)."""
        self.version += 1
        self._snapshot = None

    # -- views ---------------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        """Usage, NodeInfos, (with DRA) the device view and the nominated room — the pods' own
        ``status.nominatedNodeName`` and the room partial gangs hold (:attr:`holds`) — as of now; memoised
        until the next change."""
        self._refresh_groups()
        hit = self._snapshot
        if hit is not None and hit[0] == self.version:
            return hit[1]
        view: DraView | None = None
        if self.dra:
            view = self.devices.view(self.usage.table, self.device_classes)
        snap = self.usage.snapshot(view, self.storage.view(), self._namespace_labels,
                                   self.groups.chains.effective_priority)
        if self.holds:
            table = snap.table
            held = tuple(Nominated(pod.key, row, pod_vector(table, pod), priority)
                         for room in self.holds.values() for pod, node, priority in room
                         if (row := table.index.get(node)) is not None)
            snap = self.usage.with_nominated(snap, snap.nominated + held)  # its pod index carried forward
        self._snapshot = (self.version, snap)
        return snap

    def take_changed_roots(self) -> set[GroupKey]:
        """Roots whose tree appeared, changed or disappeared since the last call (their trees rebuilt)."""
        self._refresh_groups()
        changed, self._changed_roots = self._changed_roots, set()
        return changed

    def take_quiet_roots(self) -> set[GroupKey]:
        """Roots whose trees were rebuilt since the last call for quiet updates only — pod objects replaced, nothing
        the scheduler reads changed (its own status writes) — and not reported by :meth:`take_changed_roots`."""
        self._refresh_groups()
        quiet, self.groups.quiet = self.groups.quiet, set()
        return quiet

    def tree(self, key: GroupKey) -> GroupTree | None:
        """The current tree of root ``key`` (rebuilding what changed first), or None."""
        self._refresh_groups()
        return self.groups.trees.get(key)

    def forest(self) -> Forest:
        """Every tree, orphan and empty tree, as of now."""
        self._refresh_groups()
        return self.groups.forest()

    def _refresh_groups(self) -> None:
        """Rebuild the trees that changed; note their roots as changed and recompute the held room of every tree
        rebuilt (a quiet pod update may bring or withdraw the durable intent its Binding carried)."""
        self._changed_roots |= self.groups.refresh()
        trees, touched = self.groups.trees, False
        for key in self.groups.rebuilt:
            tree = trees.get(key)
            held = held_room(tree) if tree is not None else ()
            before = self.holds.pop(key, ())
            if held:
                self.holds[key] = held
            if before or held:
                touched = True
                self.room_released |= self._released(before, held)
        if touched:
            self._bump()

    def _released(self, before: Sequence[tuple[Pod, str, int]], after: Sequence[tuple[Pod, str, int]]) -> bool:
        """Whether room held ``before`` is no longer held ``after`` without its pod now bound or assumed there."""
        kept = {(pod.key, node) for pod, node, _ in after}
        pods = self.pods
        return any((pod.key, node) not in kept and not ((now := pods.get(pod.key)) is not None and now.is_bound)
                   and pod.key not in self.assumed for pod, node, _ in before)

    def take_room_released(self) -> bool:
        """Whether room a partial tree held was given up since the last call (its pending member deleted, its
        intent withdrawn, its group gone): as kube-scheduler moves the unschedulable pods when a nominated pod is
        deleted or its nomination changes (``eventhandlers.go``), the caller moves the roots parked."""
        released, self.room_released = self.room_released, False
        return released

    def group(self, kind: str, namespace: str, name: str) -> Any | None:
        """The current PodGroup / CompositePodGroup object, if known.

        A ``PodGroup`` is the ``scheduling.k8s.io`` one of that name, else the scheduler-plugins one (a
        :class:`~scheduler.model.coscheduling.CoscheduledPodGroup`): where both kinds have one name the
        workload API's is the group, and pods linking the other one make its tree Invalid
        (``groups/index.py``), so the two are never merged."""
        key = f"{namespace}/{name}"
        if kind == POD_GROUP.name:
            return self.podgroups.get(key) or self.coscheduling_podgroups.get(key)
        return self.objects[kind].get(key)

    def pod(self, key: str) -> Pod | None:
        """The current pod of ``key`` as the API shows it (not the assumed copy)."""
        return self.pods.get(key)

    # -- typed reads: the objects of one kind by key, as the API shows them (not assumed copies) ------
    def _of(self, kind: Kind[T]) -> Mapping[str, T]:
        return cast("Mapping[str, T]", self.objects[kind.name])  # filled by kind.parse: values are T

    @property
    def pods(self) -> Mapping[str, Pod]:
        """Pods by ``namespace/name``; a pod on a node is a :class:`~scheduler.model.lean_pod.LeanPod` (the same
        reads)."""
        return self._of(POD)

    @property
    def nodes(self) -> Mapping[str, Node]:
        """Nodes by name (a re-list replaces the mapping: read it per use, do not keep it)."""
        return self._of(NODE)

    @property
    def podgroups(self) -> Mapping[str, PodGroup]:
        """``scheduling.k8s.io`` PodGroups by ``namespace/name``."""
        return self._of(POD_GROUP)

    @property
    def coscheduling_podgroups(self) -> Mapping[str, CoscheduledPodGroup]:
        """scheduler-plugins' PodGroups (``scheduling.x-k8s.io``), as PodGroups, by ``namespace/name``."""
        return self._of(COSCHEDULING_POD_GROUP)

    @property
    def namespaces(self) -> Mapping[str, Namespace]:
        """Namespaces by name."""
        return self._of(NAMESPACE)

    @property
    def budgets(self) -> Mapping[str, PodDisruptionBudget]:
        """PodDisruptionBudgets by ``namespace/name``."""
        return self._of(POD_DISRUPTION_BUDGET)

    @property
    def device_classes(self) -> Mapping[str, DeviceClass]:
        """DeviceClasses by name."""
        return self._of(DEVICE_CLASS)

    @property
    def resource_claims(self) -> Mapping[str, ResourceClaim]:
        """ResourceClaims by ``namespace/name`` (not the synthesized ones, ``devices.synthesized``)."""
        return self._of(RESOURCE_CLAIM)

    @property
    def volume_claims(self) -> Mapping[str, PersistentVolumeClaim]:
        """PersistentVolumeClaims by ``namespace/name`` (not the synthesized ones, ``storage.synthesized``)."""
        return self._of(PERSISTENT_VOLUME_CLAIM)

    @property
    def volumes(self) -> Mapping[str, PersistentVolume]:
        """PersistentVolumes by name."""
        return self._of(PERSISTENT_VOLUME)

    @property
    def storage_classes(self) -> Mapping[str, StorageClass]:
        """StorageClasses by name."""
        return self._of(STORAGE_CLASS)

    @property
    def csi_nodes(self) -> Mapping[str, CSINode]:
        """CSINodes by node name."""
        return self._of(CSI_NODE)

    def claim_allocations_in_flight(self) -> Mapping[str, Mapping[str, object]]:
        """Plan token → claim key → what the plan holds (for diagnostics and tests)."""
        return self.devices.held

    def assumed_allocations(self, plan: Plan) -> tuple[ClaimAllocation, ...]:
        """The claim allocations of ``plan`` whose devices are still held."""
        return tuple(a for a in plan.allocations if any(a.claim in h for h in self.devices.held.values()))


class Relist:
    """One list of a kind, replacing it in the cache as pages arrive.

    Each object of a page is applied at once, unless it is the version the cache already has: an object
    whose ``metadata.resourceVersion`` equals the cached one's is not even parsed, so a re-list after a
    410 costs little more than reading it. :meth:`add` returns the page's events (the caller routes them
    page by page, so a re-list of 50,000 changed pods never holds 50,000 old objects); :meth:`finish`
    deletes what the list did not contain and returns those events. Nodes are gathered and applied at
    once in :meth:`finish` (one new table). Memory: one page of raw objects, plus its changed objects.
    """

    def __init__(self, cache: ClusterCache, kind: str) -> None:
        self.cache = cache
        self.kind = kind
        self.seen: set[str] = set()
        self._nodes: dict[str, Any] = {}
        self._refused_before: dict[tuple[str, str], Refusal] = cache._refused_now.pop(kind, {})
        """The kind's refusals before this list: those it does not refuse again end at :meth:`finish`."""

    def add(self, raws: Iterable[Any]) -> list[ClusterEvent]:
        """Apply one page of raw API objects (or of the kind's models, :meth:`ClusterCache.parse`); returns its
        events."""
        current = self.cache.objects[self.kind]
        events: list[ClusterEvent] = []
        for raw in raws:
            old = None
            if isinstance(raw, (BaseModel, LeanPod)):  # decoded by the client into its model
                old = current.get(key_of(raw))
                rv = raw.metadata.resource_version  # type: ignore[union-attr]
            else:
                meta = raw.get("metadata") if isinstance(raw, Mapping) else None
                name, namespace = (meta.get("name"), meta.get("namespace")) if isinstance(meta, Mapping) else ("", "")
                rv = None
                if isinstance(meta, Mapping) and isinstance(name, str) and isinstance(namespace, (str, type(None))):
                    # a name of another type is the parser's to refuse: never format it (a deeply nested one
                    # would exhaust the stack in str())
                    old = current.get(f"{namespace}/{name}" if namespace else name)
                    rv = meta.get("resourceVersion")
            if old is not None and rv and rv == old.metadata.resource_version:
                key = key_of(old)
                self.seen.add(key)
                if self.kind == NODE.name:
                    self._nodes[key] = old
                continue
            obj = self.cache.parse(self.kind, raw)
            if obj is None:
                continue
            key = key_of(obj)
            self.seen.add(key)
            if self.kind == NODE.name:
                self._nodes[key] = obj
            elif old is not obj and old != obj:
                events.extend(self.cache._set(self.kind, key, old, obj))
        if self.kind != NODE.name:  # trees let go of the page's old objects now, not after the whole list
            self.cache._refresh_groups()
        return events

    def finish(self) -> list[ClusterEvent]:
        """Delete what the list did not contain; returns the events of that (and of the nodes)."""
        if self.kind == NODE.name:
            return self.cache._set_nodes(self._nodes)
        current = self.cache.objects[self.kind]
        events: list[ClusterEvent] = []
        for key in sorted(k for k in current if k not in self.seen):  # a copy refused now is deleted too
            events.extend(self.cache._set(self.kind, key, current[key], None))
        refused_now = self.cache._refused_now.get(self.kind, {})
        for name, was in self._refused_before.items():  # taken in this list, or gone while the watch was down
            if name not in refused_now:
                self.cache._tell(was, None)
        return events


def held_room(tree: GroupTree) -> tuple[tuple[Pod, str, int], ...]:
    """The room a partial tree holds: (pending pod, the node the durable intent on its bound members names, the
    root's priority) (:func:`~scheduler.groups.intent.held_intent`: the latest plan naming each pod).

    A gang with members bound below its minCount keeps the nodes its plan chose for the rest,
    against every root of lower or equal priority (as nominated room, kube-scheduler's
    ``addGENominatedPods``), until it is satisfied or torn down. A pod that carries its own
    ``status.nominatedNodeName`` (preemption) is held there instead. Empty for any other tree.
    """
    if not tree.partial:
        return ()
    leaves = tuple(tree.root.leaves())
    intent = held_intent(pod for leaf in leaves for pod in leaf.bound)
    if not intent:
        return ()
    return tuple((pod, node, tree.priority) for leaf in leaves for pod in leaf.pending
                 if not pod.status.nominated_node_name and (node := intended_node(intent, pod)) is not None)


def _name(key: str) -> tuple[str, str]:
    ns, _, name = key.partition("/")
    return ns, name
