"""The storage half of the cache: claim users, plans' claim decisions in flight, and the storage view.

* **Users.** Per pod event (and per assume / forget) the cache hands over the pod as the scheduler
  sees it; :meth:`StorageCache.set_pod` keeps, per claim, the pods that use a node and name it (kube's
  ``PVCRefCounts``) and how many non-terminal pods name it at all (a claim named by two pods is
  *shared*: their decisions must agree). O(volumes of the pod); pods without claims cost nothing.
* **Held decisions.** A plan's :class:`~scheduler.framework.plan.VolumeClaimBinding` values are held
  from the moment it is assumed (:meth:`assume`) until the watch shows them (the claim annotated for
  that node or bound, the PV's claimRef naming the claim, or the object gone), or the plan settles
  (:meth:`forget`). While held, the view shows them as written (kube's assume cache), so another
  cycle sees the claim pinned and the PV taken.
* **The view.** :meth:`view` hands out an immutable :class:`~scheduler.framework.storage_view.StorageView`,
  memoised until a storage object, a user or a held decision changes; the mappings of an unchanged
  kind are reused (copied once per change of their kind), and the plugins' memo lives as long as the
  objects it was computed from.
* **Ephemeral claims.** ``synthesize`` (``simulate``, which has no ephemeral volume controller): a
  generic ephemeral volume's missing PVC is made from the pod's template as the controller would —
  named ``<pod>-<volume>``, owned by the pod, given the default StorageClass when the template names none, as
  the API server's admission gives it — and kept by key.

Not thread-safe: used from the event loop only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from scheduler.framework.plan import VolumeClaimBinding
from scheduler.framework.storage_view import (
    StorageView,
    claim_keys,
    index_by_class,
    index_claimed,
    overlays,
    uses_node,
)
from scheduler.model.base import OwnedObjectMeta, OwnerReference
from scheduler.model.kinds import CSI_NODE, PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, STORAGE_CLASS
from scheduler.model.pod import Pod
from scheduler.model.storage import SELECTED_NODE, PersistentVolumeClaim, default_class, names_no_class
from scheduler.model.volume import ephemeral_claim_name

STORAGE_KINDS = tuple(kind.name for kind in (PERSISTENT_VOLUME_CLAIM, PERSISTENT_VOLUME, STORAGE_CLASS, CSI_NODE))


def synthesized_claim(pod: Pod, volume_name: str, default: str | None = None) -> PersistentVolumeClaim | None:
    """The PVC the ephemeral volume controller makes for the pod's generic ephemeral volume ``volume_name``
    (``<pod>-<volume>``, the template's labels, annotations and spec, controlled by the pod), or None when
    the pod has no such volume. ``default``: the class the API server gives it when the template names none
    (:func:`~scheduler.model.storage.default_class`)."""
    volume = next((v for v in pod.spec.volumes if v.name == volume_name), None)
    template = volume.ephemeral.volume_claim_template if volume is not None and volume.ephemeral else None
    if volume is None or template is None:
        return None
    owner = OwnerReference(api_version="v1", kind="Pod", name=pod.metadata.name, uid=pod.metadata.uid,
                           controller=True)
    meta = OwnedObjectMeta(name=ephemeral_claim_name(pod.metadata.name, volume), namespace=pod.metadata.namespace,
                      labels=template.metadata.labels, annotations=template.metadata.annotations,
                      owner_references=(owner,))
    spec = template.spec
    if default is not None and names_no_class(spec.storage_class_name, meta.annotations):
        spec = spec.model_copy(update={"storage_class_name": default})  # the DefaultStorageClass admission plugin
    return PersistentVolumeClaim(metadata=meta, spec=spec)


def _shown(claim: PersistentVolumeClaim | None, binding: VolumeClaimBinding, volumes: Mapping[str, Any]) -> bool:
    """Whether the API shows ``binding`` (or makes it moot): the claim is gone or bound, annotated for the
    binding's node, or the PV is gone or its claimRef names the claim."""
    if claim is None or claim.is_bound:
        return True
    if binding.volume is None:
        return claim.metadata.annotations.get(SELECTED_NODE) == binding.node
    pv = volumes.get(binding.volume)
    return pv is None or bool(pv.bound_to(claim))


class StorageCache:
    """See the module docstring. ``objects``: the cache's live dicts of the four storage kinds (read only here)."""

    def __init__(self, objects: Mapping[str, Mapping[str, Any]], *, synthesize: bool = False) -> None:
        self._objects = objects
        self.synthesize = synthesize
        self._users: dict[str, dict[str, str]] = {}
        """Claim key → pod key → node, for pods using a node."""
        self._named: dict[str, set[str]] = {}
        """Claim key → keys of the non-terminal pods that name it."""
        self._pods: dict[str, tuple[tuple[str, ...], bool, str]] = {}
        """Pod key → (its claim keys, uses a node, node), as last counted."""
        self._ephemeral: dict[str, Pod] = {}
        """Pods with generic ephemeral volumes (``synthesize`` makes their claims)."""
        self.synthesized: dict[str, PersistentVolumeClaim] = {}
        self.held: dict[str, dict[str, VolumeClaimBinding]] = {}
        """Plan token → claim key → the decision, until the watch shows it or the plan settles."""
        self._parts: dict[str, Mapping[str, Any]] = {}
        self._indexes: tuple[Mapping[str, tuple[str, ...]], Mapping[str, tuple[str, ...]]] | None = None
        self._memo: dict[str, Any] = {}
        self._view: StorageView | None = None
        self._users_view: tuple[Mapping[str, frozenset[tuple[str, str]]], frozenset[str]] | None = None

    # -- feeding -------------------------------------------------------------------------------
    def changed(self, kind: str) -> None:
        """An object of ``kind`` (one of :data:`STORAGE_KINDS`) changed: drop what derives from it, and the
        held decisions the API now shows."""
        self._parts.pop(kind, None)
        if kind == PERSISTENT_VOLUME.name:
            self._indexes = None
        self._memo = {}
        self._view = None
        if kind in (PERSISTENT_VOLUME_CLAIM.name, PERSISTENT_VOLUME.name) and self.held:
            self._settle()

    def set_pod(self, key: str, pod: Pod | None) -> bool:
        """The pod of ``key`` is now ``pod`` as the scheduler sees it (assumed pods shown bound; None: gone).
        Returns whether any claim's users changed."""
        before = self._pods.pop(key, None)
        claims = claim_keys(pod) if pod is not None and not pod.is_terminal else ()
        now = (claims, pod is not None and uses_node(pod), pod.spec.node_name if pod is not None else "")
        if claims:
            self._pods[key] = now
        if pod is not None and any(v.ephemeral is not None for v in pod.spec.volumes) and not pod.is_terminal:
            if self.synthesize and key not in self._ephemeral:
                self._parts.pop(PERSISTENT_VOLUME_CLAIM.name, None)  # its claims may be made now
                self._view = None
            self._ephemeral[key] = pod
        else:
            self._ephemeral.pop(key, None)
        if before == (now if claims else None):
            return False
        for claim in before[0] if before else ():
            self._named.get(claim, set()).discard(key)
            self._users.get(claim, {}).pop(key, None)
        for claim in claims:
            self._named.setdefault(claim, set()).add(key)
            if now[1]:
                self._users.setdefault(claim, {})[key] = now[2]
        self._users_view = None
        self._view = None
        return True

    # -- plans in flight -----------------------------------------------------------------------
    def assume(self, token: str, bindings: Iterable[VolumeClaimBinding]) -> None:
        """Hold a plan's claim decisions under ``token`` (see the module docstring)."""
        held = {b.claim: b for b in bindings}
        if held:
            self.held[token] = held
            self._view = None

    def forget(self, token: str) -> None:
        """The plan settled: its decisions are no longer held (the watch shows those that were written)."""
        if self.held.pop(token, None) is not None:
            self._view = None

    def _settle(self) -> None:
        claims = self._objects[PERSISTENT_VOLUME_CLAIM.name]
        volumes = self._objects[PERSISTENT_VOLUME.name]
        for token in list(self.held):
            decisions = self.held[token]
            for key, b in list(decisions.items()):
                if _shown(claims.get(key), b, volumes):
                    del decisions[key]
            if not decisions:
                del self.held[token]
        self._view = None

    # -- the view ------------------------------------------------------------------------------
    def view(self) -> StorageView:
        """The storage view as of now (memoised until the next change; see the module docstring)."""
        if self._view is not None:
            return self._view
        claims = self._part(PERSISTENT_VOLUME_CLAIM.name)
        volumes = self._part(PERSISTENT_VOLUME.name)
        if self._indexes is None:
            self._indexes = (MappingProxyType(index_by_class(volumes.values())),
                             MappingProxyType(index_claimed(volumes.values())))
        by_class, claimed = self._indexes
        if self._users_view is None:
            users = {k: frozenset(v.items()) for k, v in self._users.items() if v}
            self._users_view = (MappingProxyType(users), frozenset(k for k, v in self._named.items() if len(v) > 1))
        users_view, shared = self._users_view
        decisions = [b for held in self.held.values() for b in held.values()]
        if decisions:
            claim_over, volume_over = overlays(claims, volumes, decisions)
            if claim_over:
                claims = MappingProxyType({**claims, **claim_over})
            if volume_over:
                volumes = MappingProxyType({**volumes, **volume_over})
                claimed = MappingProxyType(index_claimed(volumes.values()))
        view = StorageView(claims=claims, volumes=volumes, classes=self._part(STORAGE_CLASS.name),
                           csi_nodes=self._part(CSI_NODE.name), users=users_view, shared=shared,
                           by_class=by_class, claimed=claimed, memo=self._memo)
        self._view = view
        return view

    def _part(self, kind: str) -> Mapping[str, Any]:
        hit = self._parts.get(kind)
        if hit is None:
            objects = dict(self._objects[kind])
            if kind == PERSISTENT_VOLUME_CLAIM.name and self.synthesize:
                objects = {**self._synthesize(objects), **objects}
            hit = MappingProxyType(objects)
            self._parts[kind] = hit
        return hit

    def _synthesize(self, claims: Mapping[str, PersistentVolumeClaim]) -> dict[str, PersistentVolumeClaim]:
        default = default_class(self._objects[STORAGE_CLASS.name].values())
        for pod in self._ephemeral.values():
            for volume in pod.spec.volumes:
                if volume.ephemeral is None:
                    continue
                key = f"{pod.metadata.namespace}/{ephemeral_claim_name(pod.metadata.name, volume)}"
                if key not in claims and key not in self.synthesized:
                    made = synthesized_claim(pod, volume.name, default)
                    if made is not None:
                        self.synthesized[key] = made
        return {k: c for k, c in self.synthesized.items() if k not in claims}
