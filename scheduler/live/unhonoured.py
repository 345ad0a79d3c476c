"""Warnings about what the scheduler does not honour: one Warning Event per object, when its root is decided.

Three sources, all reported as ``not honoured: …`` (reason :data:`~scheduler.live.status_writer.EVENT_UNHONOURED`):

* fields of a pending pod of ours that no plugin honours (:func:`~scheduler.solver.unsupported.unhonoured`);
* fields the v1.37 API does not know, in a pod of ours, a PodGroup or a CompositePodGroup as the watch delivered
  it (:meth:`UnhonouredFields.checked`): the API server has dropped what its own version does not know, so what
  is found is a field of a newer version, which no plugin here honours;
* what a v1.36 PodGroup's or a scheduler-plugins PodGroup's spec holds that is not honoured
  (:meth:`UnhonouredFields.podgroup_problems`, :func:`~scheduler.model.coscheduling.unhonoured_fields`).

Each object is warned once (remembered by uid, the newest :data:`MAX_WARNED_PODS` kept), so a root retried every
backoff does not repeat its Events.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from scheduler.cache.cluster import ClusterCache
from scheduler.client.kube import Resource
from scheduler.groups.tree import GroupTree, Leaf, walk
from scheduler.live.informers import See
from scheduler.live.status_writer import EVENT_UNHONOURED, StatusWriter
from scheduler.live.tasks import Spawn
from scheduler.model.coscheduling import CoscheduledPodGroup, unhonoured_fields
from scheduler.model.pod import Pod
from scheduler.model.scheduling import GroupKey, PodGroup
from scheduler.model.strict import SHAPES, Shape, unknown_fields
from scheduler.solver.unsupported import Context, unhonoured

log = logging.getLogger(__name__)

Decode = Callable[[Mapping[str, Any]], Mapping[str, Any]]
"""What an informer applies to each object it receives before the cache sees it."""

V = TypeVar("V")

MAX_WARNED_PODS = 65536
"""Objects remembered as warned about (oldest forgotten first; a forgotten pod is warned again), and objects
whose unknown fields are kept."""


def _remember(memory: dict[str, V], uid: str, value: V) -> None:
    """``memory[uid] = value``, forgetting the oldest entry beyond :data:`MAX_WARNED_PODS`."""
    memory[uid] = value
    if len(memory) > MAX_WARNED_PODS:
        del memory[next(iter(memory))]


class UnhonouredFields:
    """The objects warned about and what is not honoured in each (see the module docstring)."""

    def __init__(self, scheduler_name: str, cache: ClusterCache, status: StatusWriter, spawn: Spawn) -> None:
        self.scheduler_name = scheduler_name
        self.cache = cache
        self.status = status
        self.spawn = spawn
        self._warned: dict[str, None] = {}
        """Uids of pods (and PodGroups) warned about fields no plugin honours (once per object), oldest first."""
        self._not_honoured: dict[GroupKey, str] = {}
        """PodGroups whose spec holds something not honoured (a v1.36 ``disruptionMode`` we do not know) → what."""
        self._unknown: dict[str, str] = {}
        """Uid → the fields the v1.37 API does not know in a pod of ours, a PodGroup or a CompositePodGroup, as the
        watch delivered it (:meth:`checked`); the newest :data:`MAX_WARNED_PODS`."""
        self._seen_generation: dict[str, int] = {}
        """Uid → the ``metadata.generation`` of a pending pod of ours as last checked (:meth:`seen`); the newest
        :data:`MAX_WARNED_PODS`."""

    def checked(self, res: Resource, decode: Decode | None) -> Decode | None:
        """``decode`` (None: none), after noting the fields the v1.37 API does not know in each object the informer
        of ``res`` receives — a Pod of ours, a v1beta1 PodGroup, a v1alpha3 CompositePodGroup
        (:data:`~scheduler.model.strict.SHAPES`; other resources are not checked) — for :meth:`warn`."""
        shape = SHAPES.get((res.group_version, res.kind))
        if shape is None:
            return decode
        pods, ours = res.kind == "Pod", self.scheduler_name

        def check(raw: Mapping[str, Any]) -> Mapping[str, Any]:
            spec = raw.get("spec")
            if not pods or (isinstance(spec, dict) and spec.get("schedulerName") == ours):
                meta = raw.get("metadata") or {}
                uid = str(meta.get("uid") or f"{res.kind}/{meta.get('namespace')}/{meta.get('name')}")
                if pods and isinstance(spec, dict) and spec.get("nodeName"):  # bound: warnings are for pending pods
                    self._unknown.pop(uid, None)
                else:
                    self._note(uid, raw, shape)
            return raw if decode is None else decode(raw)

        return check

    def seen(self, res: Resource) -> See | None:
        """What :meth:`checked` does, for an informer that decodes pods into models (``Informer.see``): a pending pod
        of ours is decoded again as sent and its unknown fields noted; any other pod is not. A pod already checked
        at its ``metadata.generation`` is not decoded again: the API server counts only spec changes there (pods
        since Kubernetes 1.33, KEP-5067), so an update of its status — the scheduler's own ``PodScheduled``
        condition — or its labels brings no new field; a pod without a generation is checked at every update. None
        for a resource other than pods (their informers decode the plain way)."""
        shape = SHAPES.get((res.group_version, res.kind))
        if shape is None or res.kind != "Pod":
            return None
        ours = self.scheduler_name
        checked_at = self._seen_generation

        def see(pod: Pod, raw: Callable[[], Any]) -> None:
            if pod.spec.scheduler_name != ours:
                return
            uid = pod.metadata.uid or f"Pod/{pod.metadata.namespace}/{pod.metadata.name}"
            if pod.spec.node_name:  # bound: warnings are for pending pods
                self._unknown.pop(uid, None)
                checked_at.pop(uid, None)
                return
            generation = pod.metadata.generation
            if generation and checked_at.get(uid) == generation:
                return
            sent = raw()
            if isinstance(sent, Mapping):
                self._note(uid, sent, shape)
                if generation:
                    _remember(checked_at, uid, generation)

        return see

    def _note(self, uid: str, raw: Mapping[str, Any], shape: Shape) -> None:
        """Note (or forget) the fields of ``raw`` that ``shape`` does not know, under ``uid``."""
        found = unknown_fields(raw, shape)
        if found:
            _remember(self._unknown, uid, "; ".join(map(str, found)))
        else:
            self._unknown.pop(uid, None)

    def warn(self, tree: GroupTree) -> None:
        """A Warning Event, once per pod, on the tree's pending pods that set fields no plugin honours or the v1.37
        API does not know (:meth:`checked`) — and once per group on its PodGroups and CompositePodGroups whose
        spec holds such a field, or something not honoured: a v1.36 one's (:meth:`podgroup_problems`), a
        scheduler-plugins one's (:func:`~scheduler.model.coscheduling.unhonoured_fields`)."""
        context: Context | None = None
        for node in walk(tree.root):
            if isinstance(node, Leaf):
                for pod in node.pending:
                    if not self._first_warning(pod.metadata.uid or pod.key):
                        continue
                    if context is None:
                        context = Context(storage=self.cache.storage.view())  # not a whole snapshot
                    findings = [str(f) for f in unhonoured(pod, context)]
                    findings += filter(None, [self._unknown.get(pod.metadata.uid)])
                    if findings:
                        note = "not honoured: " + "; ".join(findings)
                        self.spawn(self.status.pod_warning(pod, EVENT_UNHONOURED, note), f"status/{pod.key}")
            key = node.key
            group = None if key.kind == "Pod" else self.cache.group(key.kind, key.namespace, key.name)
            problems = [self._not_honoured.get(key)]
            if isinstance(group, CoscheduledPodGroup) and (fields := unhonoured_fields(group)):
                problems = ["; ".join(f"{path}: {why}" for path, why in fields)]
            if group is not None:
                problems.append(self._unknown.get(group.metadata.uid))
            note = "; ".join(filter(None, problems))
            if note and group is not None and self._first_warning(group.metadata.uid or str(key)):
                self.spawn(self.status.group_warning(group, EVENT_UNHONOURED, f"not honoured: {note}"),
                           f"status/{key}")

    def podgroup_problems(self, group: PodGroup, problems: str) -> None:
        """The PodGroup informer's report of what of a (v1.36) PodGroup's spec is not honoured: kept until the
        leader decides its tree (:meth:`warn` writes the Event, as for pods), logged once here."""
        key = GroupKey("PodGroup", group.metadata.namespace, group.metadata.name)
        if self._not_honoured.get(key) != problems:
            log.warning("%s: not honoured: %s", key, problems)
            self._not_honoured[key] = problems

    def forget(self, key: GroupKey) -> None:
        """Root ``key`` is gone: what its PodGroup did not honour is dropped."""
        self._not_honoured.pop(key, None)

    def _first_warning(self, uid: str) -> bool:
        """True the first time ``uid`` (a pod's, a PodGroup's) is warned about fields not honoured (remembered:
        the newest :data:`MAX_WARNED_PODS`)."""
        if uid in self._warned:
            return False
        _remember(self._warned, uid, None)
        return True
