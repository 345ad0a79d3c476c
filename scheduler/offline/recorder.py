"""The recording binder: ``simulate``'s stand-in for the API server, so offline runs the live binding cycle.

After the cycle assumed a plan, :meth:`RecordingBinder.commit` runs the binding plugins ``run`` runs
(:func:`~scheduler.binding.transaction.default_plugins`: DynamicResources' claim writes, VolumeBinding,
``DefaultBinder``, whose Bindings carry the durable intent) against a :class:`CacheWriter`: each write is applied
to the :class:`~scheduler.cache.cluster.ClusterCache` the way the API server would show it to the watch — a merge
patch merged into the object, a created claim named as its ``generateName`` without the random suffix, a bind
setting ``spec.nodeName`` and merging the Binding's annotations into the pod's — and the controllers' answers
follow at once: a PersistentVolumeClaim annotated with ``volume.kubernetes.io/selected-node``, or whose PV got its
``claimRef``, shows bound (:func:`bound_claim`: what the PV controller and the external provisioner would make of
it). So a PreBind wait for a condition ends at its first read, unless the condition is one nothing offline would
set. The cache then ends the plan's assumptions exactly as it does live: a claim allocated by one plan pins the pods
of later plans to it, never allocated twice.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

from scheduler.binding.transaction import BindingRunner, default_plugins
from scheduler.binding.volumes import ClaimSource
from scheduler.cache.cluster import ClusterCache
from scheduler.errors import Conflict, NotFound, TargetChanged
from scheduler.framework.binding_cycle import BindingCycle, BindResult, Failure
from scheduler.framework.interface import JSON, Condition
from scheduler.framework.plan import VolumeClaimBinding
from scheduler.framework.snapshot import bound_copy
from scheduler.framework.storage_view import annotated, claimed
from scheduler.model.base import ObjectMeta
from scheduler.model.kinds import PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, POD, RESOURCE_CLAIM, Kind
from scheduler.model.node import Node
from scheduler.model.pod import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod
from scheduler.model.storage import (
    BIND_COMPLETED,
    BOUND,
    BOUND_BY_CONTROLLER,
    SELECTED_NODE,
    CSINode,
    CSIPersistentVolumeSource,
    PersistentVolume,
    PersistentVolumeClaim,
    PersistentVolumeSpec,
    PersistentVolumeStatus,
    StorageClass,
    VolumeNodeAffinity,
)
from scheduler.model.volume import STORAGE

VOLUME_TIMEOUT_S = 300.0
"""The VolumeBinding wait's bound offline, seconds: never reached (the writer does not wait); named in a message."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: objects merge key by key, ``null`` removes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


class CacheWriter:
    """The :class:`~scheduler.framework.interface.ApiWriter` of ``simulate``: every write applied to ``cache`` as
    the watch would show it (see the module docstring). ``made``: keys of ResourceClaims a write brought into
    the cache (created, or made from a template by the cache and written for the first time)."""

    def __init__(self, cache: ClusterCache) -> None:
        self.cache = cache
        self.made: set[str] = set()

    def leading(self) -> bool:
        return True

    def slot(self) -> AbstractAsyncContextManager[Any]:
        return contextlib.nullcontext()

    def _current(self, kind: Kind[Any], key: str) -> Any:
        obj = self.cache.objects[kind.name].get(key)
        if obj is None and kind is RESOURCE_CLAIM:
            obj = self.cache.devices.synthesized.get(key)
        if obj is None and kind is PERSISTENT_VOLUME_CLAIM:
            obj = self.cache.storage.synthesized.get(key)
        return obj

    async def get(self, kind: Kind[Any], namespace: str | None, name: str) -> JSON:
        obj = self._current(kind, f"{namespace}/{name}" if namespace else name)
        if obj is None:
            raise NotFound(404, "NotFound", f"{kind.plural} {name} not found")
        raw: JSON = obj.model_dump(by_alias=True, exclude_none=True, mode="json")
        return raw

    async def create(self, kind: Kind[Any], namespace: str | None, body: JSON) -> JSON:
        meta = {k: v for k, v in (body.get("metadata") or {}).items() if k != "generateName"}
        name = meta.get("name") or str(body["metadata"]["generateName"]).rstrip("-")
        raw = {**body, "metadata": {**meta, "name": name, "namespace": namespace}}
        self.cache.apply(kind.name, "ADDED", raw)
        if kind is RESOURCE_CLAIM:
            self.made.add(f"{namespace}/{name}")
        return raw

    async def patch(self, kind: Kind[Any], namespace: str | None, name: str, body: JSON, *,
                    sub: str | None = None, reply: bool = True) -> JSON:
        key = f"{namespace}/{name}" if namespace else name
        if kind is RESOURCE_CLAIM and key not in self.cache.resource_claims:
            self.made.add(key)
        current = await self.get(kind, namespace, name)
        want = (body.get("metadata") or {}).get("resourceVersion")
        have = (current.get("metadata") or {}).get("resourceVersion")
        if want and have and want != have:
            raise Conflict(409, "Conflict", f"{kind.plural} {name}: the object has been modified")
        patch = {**body, "metadata": {k: v for k, v in (body.get("metadata") or {}).items()
                                      if k != "resourceVersion"}}
        merged: JSON = merge_patch(current, patch)
        self.cache.apply(kind.name, "MODIFIED", merged)
        if kind is PERSISTENT_VOLUME_CLAIM or kind is PERSISTENT_VOLUME:
            self._controllers(kind, merged)
        return merged

    async def delete(self, kind: Kind[Any], namespace: str | None, name: str) -> None:
        key = f"{namespace}/{name}" if namespace else name
        self.made.discard(key)
        self.cache.delete_one(kind.name, key)

    async def bind(self, pod: Pod, node: str, annotations: Mapping[str, str] | None = None,
                   check: Callable[[], str | None] | None = None) -> None:
        if check is not None and (why := check()) is not None:
            raise TargetChanged(why)
        current = self.cache.pod(pod.key)
        if current is None:
            raise NotFound(404, "NotFound", f'pods "{pod.metadata.name}" not found')
        if annotations:  # merged into the pod's, as the API server's binding storage does
            meta = current.metadata.model_copy(update={"annotations": {**current.metadata.annotations, **annotations}})
            current = current.model_copy(update={"metadata": meta})
        self.cache.load_one(POD.name, bound_copy(current, node))

    def waits(self) -> bool:
        return False

    async def wait(self, condition: Condition, kinds: frozenset[str], timeout_s: float) -> bool | Failure:
        return condition()  # nothing changes offline between two reads

    def _controllers(self, kind: Kind[Any], raw: JSON) -> None:
        """What the PV controller and the provisioner make of a claim annotated for a node, or of a PV claimed."""
        cache = self.cache
        meta = raw.get("metadata") or {}
        if kind is PERSISTENT_VOLUME_CLAIM:
            node = (meta.get("annotations") or {}).get(SELECTED_NODE)
            key = f"{meta.get('namespace')}/{meta.get('name')}"
            claim = self._current(PERSISTENT_VOLUME_CLAIM, key)
            if node is None or claim is None or claim.is_bound:
                return
            binding = VolumeClaimBinding(key, node)
            volume = None
        else:
            ref = (raw.get("spec") or {}).get("claimRef") or {}
            key = f"{ref.get('namespace')}/{ref.get('name')}"
            claim = self._current(PERSISTENT_VOLUME_CLAIM, key)
            volume = cache.volumes.get(str(meta.get("name")))
            if claim is None or volume is None or claim.is_bound:
                return
            binding = VolumeClaimBinding(key, "", volume.name)
        pv, pvc = bound_claim(claim, binding, volume, cache.storage_classes.get(claim.storage_class),
                              cache.nodes.get(binding.node), cache.csi_nodes.get(binding.node))
        cache.load_one(PERSISTENT_VOLUME.name, pv)
        cache.load_one(PERSISTENT_VOLUME_CLAIM.name, pvc)


class RecordingBinder:
    """Runs the binding plugins against ``cache`` (see the module docstring), on an event loop of its own."""

    def __init__(self, cache: ClusterCache) -> None:
        self.cache = cache
        source = ClaimSource(claims=lambda key: cache.volume_claims.get(key) or cache.storage.synthesized.get(key),
                             volumes=lambda name: cache.volumes.get(name), nodes=lambda name: cache.nodes.get(name))
        self.runner = BindingRunner(default_plugins(cache, source, volume_timeout_s=VOLUME_TIMEOUT_S))
        self._loop: asyncio.AbstractEventLoop | None = None

    def commit(self, cycle: BindingCycle) -> tuple[BindResult, set[str]]:
        """Start and run ``cycle``. Returns the result and the keys of the claims the plan brought into existence
        (made from a template, or scheduler-made extended-resource claims)."""
        writer = CacheWriter(self.cache)
        self.runner.start(cycle)
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        result = self._loop.run_until_complete(self.runner.run(cycle, writer))
        return result, writer.made

    def close(self) -> None:
        if self._loop is not None:
            self._loop.close()
            self._loop = None


def bound_claim(claim: PersistentVolumeClaim, binding: VolumeClaimBinding, volume: PersistentVolume | None,
                klass: StorageClass | None, node: Node | None, csi_node: CSINode | None
                ) -> tuple[PersistentVolume, PersistentVolumeClaim]:
    """The PV and the claim once ``binding`` is done: the claim's ``spec.volumeName``, ``pv.kubernetes.io/
    bind-completed`` and phase Bound; the PV's ``claimRef`` and phase Bound.

    A statically bound claim gets ``volume``. A provisioned one gets a new PV as the external provisioner
    makes it: named ``pvc-<claim uid>`` (``pvc-<namespace>-<name>`` without a uid), the claim's size,
    access modes and class, a CSI source of the class's provisioner, and node affinity on the node's
    values of the topology keys its CSINode lists for that driver (none without a CSINode) — the
    provisioner's accessible topology for a volume made for that node.
    """
    if volume is None:
        ns, name = claim.metadata.namespace, claim.metadata.name
        pv_name = f"pvc-{claim.metadata.uid}" if claim.metadata.uid else f"pvc-{ns}-{name}"
        driver = klass.provisioner if klass is not None else ""
        keys = next((d.topology_keys for d in csi_node.spec.drivers if d.name == driver), ()) if csi_node else ()
        labels = node.metadata.labels if node is not None else {}
        terms = [NodeSelectorRequirement(key=k, operator="In", values=(labels[k],)) for k in keys if k in labels]
        affinity = (VolumeNodeAffinity(required=NodeSelector(node_selector_terms=(
            NodeSelectorTerm(match_expressions=tuple(terms)),))) if terms else None)
        volume = PersistentVolume(metadata=ObjectMeta(name=pv_name), spec=PersistentVolumeSpec(
            capacity={STORAGE: claim.spec.resources.requests.get(STORAGE, "0")},
            access_modes=claim.spec.access_modes, storage_class_name=claim.storage_class, node_affinity=affinity,
            volume_mode=claim.spec.volume_mode, csi=CSIPersistentVolumeSource(driver=driver, volume_handle=pv_name)))
        claim = annotated(claim, binding.node)
    pv = claimed(volume, claim)
    pv = pv.model_copy(update={"status": PersistentVolumeStatus(phase=BOUND)})
    annotations = {**claim.metadata.annotations, BIND_COMPLETED: "yes"}
    if binding.volume is not None:
        annotations[BOUND_BY_CONTROLLER] = "yes"
    pvc = claim.model_copy(update={
        "metadata": claim.metadata.model_copy(update={"annotations": annotations}),
        "spec": claim.spec.model_copy(update={"volume_name": pv.name}),
        "status": claim.status.model_copy(update={"phase": BOUND})})
    return pv, pvc
