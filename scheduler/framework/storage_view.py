"""The storage half of a snapshot: claims, volumes, classes, CSINodes and which pods use which claim.

kube-scheduler keeps PVCs, PVs and StorageClasses in listers plus an *assume cache* (a claim or
volume a Reserve decided on is shown with that decision until the API shows it), and the snapshot's
``StorageInfos`` (``IsPVCUsedByPods``, from every NodeInfo's ``PVCRefCounts``). :class:`StorageView` is
that, as one immutable value per snapshot:

* ``claims`` (``namespace/name``), ``volumes`` (PV name), ``classes``, ``csi_nodes`` (node name) — as
  the API shows them, with the decisions of plans in flight applied (:meth:`StorageView.with_assumed`):
  a claim a plan provisions carries ``volume.kubernetes.io/selected-node``, a PV a plan binds carries
  the ``claimRef``;
* ``users``: claim → the (pod key, node) of each pod that uses a node and names the claim (bound,
  non-terminal, or assumed). A plugin asks :meth:`used_by_pods` with its snapshot's NodeInfos, so a
  what-if snapshot (``Snapshot.without``) that removed a user answers for the pods it still holds;
* ``shared``: claims named by more than one non-terminal pod (pods that must share its decision);
* ``by_class``: PVs by class (candidates for WaitForFirstConsumer matching); ``claimed``: claim key
  → PVs whose ``claimRef`` names it (pre-bound volumes);
* ``memo``: plugins' memos of pure functions of the objects above (attach counts per node), shared by
  the views built from the same objects — the cache replaces it when a claim, volume, class or
  CSINode changes.

Built by the cache per change (``scheduler.cache.volumes``) or from lists (:meth:`StorageView.build`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from scheduler.framework.node_info import NodeInfo
from scheduler.framework.plan import VolumeClaimBinding
from scheduler.model.pod import Pod
from scheduler.model.storage import (
    SELECTED_NODE,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    TypedObjectReference,
)
from scheduler.model.volume import ephemeral_claim_name

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def claim_keys(pod: Pod) -> tuple[str, ...]:
    """``namespace/name`` of every PVC the pod names: ``persistentVolumeClaim`` volumes and the PVCs of its
    generic ephemeral volumes (``<pod>-<volume>``), in volume order, each once."""
    ns = pod.metadata.namespace
    keys: list[str] = []
    for volume in pod.spec.volumes:
        if volume.persistent_volume_claim is not None:
            keys.append(f"{ns}/{volume.persistent_volume_claim.claim_name}")
        elif volume.ephemeral is not None:
            keys.append(f"{ns}/{ephemeral_claim_name(pod.metadata.name, volume)}")
    return tuple(dict.fromkeys(keys))


def uses_node(pod: Pod) -> bool:
    """Bound (or assumed, shown bound) and not Succeeded/Failed: the pod's claims are in use on its node."""
    return pod.is_bound and not pod.is_terminal


def annotated(claim: PersistentVolumeClaim, node: str) -> PersistentVolumeClaim:
    """``claim`` as it looks once ``volume.kubernetes.io/selected-node: node`` is written."""
    meta = claim.metadata.model_copy(update={"annotations": {**claim.metadata.annotations, SELECTED_NODE: node}})
    return claim.model_copy(update={"metadata": meta})


def claimed(volume: PersistentVolume, claim: PersistentVolumeClaim) -> PersistentVolume:
    """``volume`` as it looks once its ``claimRef`` names ``claim`` (kube's ``GetBindVolumeToClaim``)."""
    ref = TypedObjectReference(api_version="v1", kind="PersistentVolumeClaim", namespace=claim.metadata.namespace,
                               name=claim.metadata.name, uid=claim.metadata.uid,
                               resource_version=claim.metadata.resource_version)
    return volume.model_copy(update={"spec": volume.spec.model_copy(update={"claim_ref": ref})})


def overlays(claims: Mapping[str, PersistentVolumeClaim], volumes: Mapping[str, PersistentVolume],
             bindings: Iterable[VolumeClaimBinding]) -> tuple[dict[str, PersistentVolumeClaim],
                                                               dict[str, PersistentVolume]]:
    """The claims and volumes ``bindings`` change, as the API will show them once written: a provisioned
    claim annotated for its node, a statically bound PV with its ``claimRef``. Bindings naming a claim or
    volume that is not in ``claims`` / ``volumes`` are left out."""
    claim_over: dict[str, PersistentVolumeClaim] = {}
    volume_over: dict[str, PersistentVolume] = {}
    for b in bindings:
        claim = claims.get(b.claim)
        if claim is None:
            continue
        if b.volume is None:
            claim_over[b.claim] = annotated(claim, b.node)
        elif (volume := volumes.get(b.volume)) is not None:
            volume_over[b.volume] = claimed(volume, claim)
    return claim_over, volume_over


@dataclass(frozen=True, eq=False)
class StorageView:
    """See the module docstring. Every mapping is read-only."""

    claims: Mapping[str, PersistentVolumeClaim] = field(default_factory=lambda: _EMPTY)
    volumes: Mapping[str, PersistentVolume] = field(default_factory=lambda: _EMPTY)
    classes: Mapping[str, StorageClass] = field(default_factory=lambda: _EMPTY)
    csi_nodes: Mapping[str, CSINode] = field(default_factory=lambda: _EMPTY)
    users: Mapping[str, frozenset[tuple[str, str]]] = field(default_factory=lambda: _EMPTY)
    shared: frozenset[str] = frozenset()
    by_class: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: _EMPTY)
    """Class name → names of its PVs, sorted."""
    claimed: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: _EMPTY)
    """Claim key (``namespace/name`` of a ``claimRef``) → names of the PVs whose claimRef names it."""
    memo: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def build(cls, claims: Iterable[PersistentVolumeClaim] = (), volumes: Iterable[PersistentVolume] = (),
              classes: Iterable[StorageClass] = (), csi_nodes: Iterable[CSINode] = (),
              pods: Iterable[Pod] = ()) -> StorageView:
        """A view from lists (tests, benchmarks): ``pods`` are every pod, bound ones counted as users."""
        users: dict[str, set[tuple[str, str]]] = {}
        refs: dict[str, int] = {}
        for pod in pods:
            if pod.is_terminal:
                continue
            for key in claim_keys(pod):
                refs[key] = refs.get(key, 0) + 1
                if uses_node(pod):
                    users.setdefault(key, set()).add((pod.key, pod.spec.node_name))
        pv = {v.name: v for v in volumes}
        return cls(claims=MappingProxyType({c.key: c for c in claims}), volumes=MappingProxyType(pv),
                   classes=MappingProxyType({c.name: c for c in classes}),
                   csi_nodes=MappingProxyType({c.name: c for c in csi_nodes}),
                   users=MappingProxyType({k: frozenset(v) for k, v in users.items()}),
                   shared=frozenset(k for k, n in refs.items() if n > 1),
                   by_class=MappingProxyType(index_by_class(pv.values())),
                   claimed=MappingProxyType(index_claimed(pv.values())))

    def with_assumed(self, placements: Sequence[tuple[Pod, str]],
                     bindings: Iterable[VolumeClaimBinding] = ()) -> StorageView:
        """This view with a plan assumed: its pods use their claims on their nodes, and its claim decisions
        show as they will once written (:func:`overlays`)."""
        users = dict(self.users)
        for pod, node in placements:
            for key in claim_keys(pod):
                users[key] = users.get(key, frozenset()) | {(pod.key, node)}
        claim_over, volume_over = overlays(self.claims, self.volumes, bindings)
        claims = MappingProxyType({**self.claims, **claim_over}) if claim_over else self.claims
        volumes = MappingProxyType({**self.volumes, **volume_over}) if volume_over else self.volumes
        return replace(self, users=MappingProxyType(users), claims=claims, volumes=volumes,
                       claimed=MappingProxyType(index_claimed(volumes.values())) if volume_over else self.claimed)

    def used_by_pods(self, claim: str, infos: Sequence[NodeInfo], rows: Mapping[str, int]) -> bool:
        """Whether a pod using a node names ``claim`` in the snapshot whose NodeInfos are ``infos`` (``rows``:
        node name → row): kube's ``StorageInfos().IsPVCUsedByPods``. A user the snapshot no longer holds
        (removed by ``Snapshot.without``) does not count."""
        for pod_key, node in self.users.get(claim, ()):
            row = rows.get(node)
            if row is not None and pod_key in infos[row].pods:
                return True
        return False

    def class_of(self, claim: PersistentVolumeClaim) -> StorageClass | None:
        """The claim's StorageClass, or None (no class, or a class that does not exist)."""
        name = claim.storage_class
        return self.classes.get(name) if name else None


def index_by_class(volumes: Iterable[PersistentVolume]) -> dict[str, tuple[str, ...]]:
    """Class name → its PVs' names, sorted."""
    out: dict[str, list[str]] = {}
    for v in volumes:
        out.setdefault(v.storage_class, []).append(v.name)
    return {k: tuple(sorted(names)) for k, names in out.items()}


def index_claimed(volumes: Iterable[PersistentVolume]) -> dict[str, tuple[str, ...]]:
    """``namespace/name`` of each ``claimRef`` → the PVs that carry it, sorted."""
    out: dict[str, list[str]] = {}
    for v in volumes:
        ref = v.spec.claim_ref
        if ref is not None and ref.name:
            out.setdefault(f"{ref.namespace}/{ref.name}", []).append(v.name)
    return {k: tuple(sorted(names)) for k, names in out.items()}
