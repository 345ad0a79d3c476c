"""ClusterCache: the scheduler's picture of the cluster, fed only by the watch, plus assumptions.

Holds the current Pods, Nodes, PodGroups, CompositePodGroups and PriorityClasses by key (the
informers call :meth:`replace` after each list and :meth:`apply` for each watch event), and the
placements the scheduler has *assumed* but the API does not show yet (design §2: a plan's
capacity is held in memory from the moment it is decided, never by half-bound pods).

It returns what changed as a :class:`Changes` value; it never calls the queue (style guide:
data flows one way, the driver routes). A re-list replaces the whole kind, so a missed delete
or a replayed add can never double-count usage. An assumption ends when the watch shows the pod
bound (or gone), or when the driver calls :meth:`forget` after a failed bind.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from scheduler.groups.tree import Forest, build_trees
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.model.quantity import QuantityError
from scheduler.model.scheduling import CompositePodGroup, PodGroup, PriorityClass
from scheduler.solver.snapshot import NodeTable, Snapshot

log = logging.getLogger(__name__)

KINDS: dict[str, type[BaseModel]] = {
    "Pod": Pod,
    "Node": Node,
    "PodGroup": PodGroup,
    "CompositePodGroup": CompositePodGroup,
    "PriorityClass": PriorityClass,
}


@dataclass(slots=True)
class Changes:
    """What a cache update may have changed, for queue re-activation (design §7).

    ``capacity``: a node appeared or changed, or a pod stopped using a node (deleted or
    finished) — any waiting root may fit now. ``groups``: (namespace, group name) of PodGroups /
    CompositePodGroups that changed or whose member pods changed.
    """

    capacity: bool = False
    groups: set[tuple[str, str]] = field(default_factory=set)

    def merge(self, other: Changes) -> None:
        self.capacity |= other.capacity
        self.groups |= other.groups

    def __bool__(self) -> bool:
        return self.capacity or bool(self.groups)


def _key(obj: Any) -> str:
    meta = obj.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


def _parse(kind: str, raw: Mapping[str, Any]) -> Any | None:
    try:
        obj = KINDS[kind].model_validate(raw)
        if isinstance(obj, Pod):
            _ = obj.requests
        elif isinstance(obj, Node):
            _ = obj.allocatable
        return obj
    except (ValidationError, QuantityError) as exc:
        meta = raw.get("metadata") or {}
        log.warning("ignoring malformed %s %s/%s: %s", kind, meta.get("namespace", ""), meta.get("name", ""),
                    str(exc).splitlines()[0])
        return None


class ClusterCache:
    """See the module docstring. Not thread-safe: used from the event loop only."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}
        self.assumed: dict[str, str] = {}
        """pod key → node name, for pods planned and being bound."""
        self.version = 0
        """Bumped on every change; the driver rebuilds trees only when it moved."""
        self._node_version = 0
        self._table: tuple[int, NodeTable] | None = None

    # -- feeding -------------------------------------------------------------------
    def replace(self, kind: str, raws: Iterable[Mapping[str, Any]]) -> Changes:
        """Replace every object of ``kind`` with a fresh list (initial list and re-list after 410)."""
        fresh = {}
        for raw in raws:
            obj = _parse(kind, raw)
            if obj is not None:
                fresh[_key(obj)] = obj
        old = self.objects[kind]
        changes = Changes()
        for key in old.keys() | fresh.keys():
            if old.get(key) != fresh.get(key):
                changes.merge(self._changed(kind, old.get(key), fresh.get(key)))
        self.objects[kind] = fresh
        self._touch(kind)
        self._settle_assumptions()
        return changes

    def apply(self, kind: str, event_type: str, raw: Mapping[str, Any]) -> Changes:
        """Apply one watch event (ADDED / MODIFIED / DELETED)."""
        obj = _parse(kind, raw)
        if obj is None:
            return Changes()
        key = _key(obj)
        old = self.objects[kind].get(key)
        if event_type == "DELETED":
            self.objects[kind].pop(key, None)
            new = None
        else:
            self.objects[kind][key] = obj
            new = obj
        self._touch(kind)
        if kind == "Pod":
            self._settle_assumptions((key,))
        return self._changed(kind, old, new)

    def _touch(self, kind: str) -> None:
        self.version += 1
        if kind == "Node":
            self._node_version += 1

    def _changed(self, kind: str, old: Any, new: Any) -> Changes:
        changes = Changes()
        if kind == "Node":
            changes.capacity = new is not None  # a node added or changed may fit a waiting gang
        elif kind == "Pod":
            before: Pod | None = old
            after: Pod | None = new
            was_using = before is not None and before.is_bound and not before.is_terminal
            uses = after is not None and after.is_bound and not after.is_terminal
            changes.capacity = was_using and not uses
            for pod in (before, after):
                if pod is not None and pod.group_name:
                    changes.groups.add((pod.metadata.namespace, pod.group_name))
        elif kind in ("PodGroup", "CompositePodGroup"):
            for obj in (old, new):
                if obj is not None:
                    changes.groups.add((obj.metadata.namespace, obj.metadata.name))
        elif kind == "PriorityClass":
            changes.capacity = True  # priorities reorder the queue; cheap to re-check all
        return changes

    # -- assume / forget -----------------------------------------------------------
    def assume(self, placements: Iterable[tuple[Pod, str]]) -> None:
        """Hold a plan's capacity: each pod counts as bound to its node until the watch or
        :meth:`forget` says otherwise."""
        for pod, node in placements:
            self.assumed[pod.key] = node
        self.version += 1

    def forget(self, pod_keys: Iterable[str]) -> None:
        """Drop assumptions (a failed or abandoned bind): the capacity is free again."""
        for key in pod_keys:
            self.assumed.pop(key, None)
        self.version += 1

    def _settle_assumptions(self, keys: Iterable[str] | None = None) -> None:
        pods = self.objects["Pod"]
        for key in list(self.assumed if keys is None else keys):
            if key not in self.assumed:
                continue
            pod = pods.get(key)
            if pod is None or pod.is_bound or pod.is_terminal:
                del self.assumed[key]

    # -- views ---------------------------------------------------------------------
    def pods(self) -> list[Pod]:
        """Every pod, with assumed ones shown as bound to their planned node."""
        out = []
        for key, pod in self.objects["Pod"].items():
            node = self.assumed.get(key)
            if node is not None and not pod.is_bound:
                pod = pod.model_copy(update={"spec": pod.spec.model_copy(update={"node_name": node})})
            out.append(pod)
        return out

    def node_table(self) -> NodeTable:
        """The static node table, rebuilt only when nodes changed (static filter memo survives)."""
        if self._table is None or self._table[0] != self._node_version:
            self._table = (self._node_version, NodeTable.build(self.objects["Node"].values()))
        return self._table[1]

    def snapshot(self, pods: Iterable[Pod] | None = None) -> Snapshot:
        """Usage from every bound or assumed, non-terminal pod."""
        return Snapshot.build(self.node_table(), self.pods() if pods is None else pods)

    def forest(self, scheduler_name: str, pods: Iterable[Pod] | None = None) -> Forest:
        """Group trees over the current objects (assumed pods count as bound members)."""
        return build_trees(
            self.pods() if pods is None else pods,
            self.objects["PodGroup"].values(),
            self.objects["CompositePodGroup"].values(),
            self.objects["PriorityClass"].values(),
            scheduler_name=scheduler_name,
        )

    def group(self, kind: str, namespace: str, name: str) -> Any | None:
        """The current PodGroup / CompositePodGroup object, if known."""
        return self.objects[kind].get(f"{namespace}/{name}")

    def pod(self, key: str) -> Pod | None:
        return self.objects["Pod"].get(key)
