"""The recording binder: ``simulate``'s stand-in for the API server, so offline runs the live bookkeeping.

After the cycle assumed a plan, :meth:`RecordingBinder.commit` makes the plan's writes the way the
API server would show them to the watch — each :class:`~scheduler.dra.writes.ClaimWrite` applied to
its claim (``status.allocation`` and ``status.reservedFor``; a claim the plan creates, or made from
its template, appears allocated), each PersistentVolumeClaim of the plan bound (:func:`bound_claim`:
what the PV controller and the external provisioner would make of it), then each pod bound to its
node — and feeds them to the
:class:`~scheduler.cache.cluster.ClusterCache` as watch events. The cache then ends the plan's
assumptions exactly as it does live: a claim allocated by one plan pins the pods of later plans to
it, never allocated twice. Nothing fails here, so the result always says every pod was bound.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.cache.cluster import ClusterCache
from scheduler.cycle import BindResult
from scheduler.dra.writes import ClaimWrite, merged_reservations
from scheduler.framework.plan import Plan, VolumeClaimBinding
from scheduler.framework.snapshot import bound_copy
from scheduler.framework.storage_view import annotated, claimed
from scheduler.model.base import ObjectMeta
from scheduler.model.dra import ResourceClaim
from scheduler.model.kinds import PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, POD, RESOURCE_CLAIM
from scheduler.model.node import Node
from scheduler.model.pod import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from scheduler.model.storage import (
    BIND_COMPLETED,
    BOUND,
    BOUND_BY_CONTROLLER,
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


class RecordingBinder:
    """Applies plans to ``cache`` as the watch would show them; see the module docstring."""

    def __init__(self, cache: ClusterCache) -> None:
        self.cache = cache

    def commit(self, plan: Plan, writes: Sequence[ClaimWrite]) -> tuple[BindResult, set[str]]:
        """Apply the plan's claim writes, then bind its pods. Returns the result (every pod bound, nothing
        to forget) and the keys of the claims the plan brought into existence (made from a template, or
        scheduler-made extended-resource claims)."""
        made: set[str] = set()
        claims = self.cache.resource_claims
        for write in writes:
            current = claims.get(write.claim)
            if current is None:
                current = self.cache.devices.synthesized.get(write.claim) or _created(write)
                made.add(write.claim)
            body = current.model_dump(by_alias=True, exclude_none=True, mode="json")
            status = dict(body.get("status") or {})
            existing = tuple(status.get("reservedFor") or ())
            status["reservedFor"] = merged_reservations(existing, write.reserve)
            if write.allocation is not None:
                status["allocation"] = write.allocation
            self.cache.load_one(RESOURCE_CLAIM.name, ResourceClaim.model_validate({**body, "status": status}))
        for binding in plan.volumes:
            self._bind_claim(binding)
        for pod, node in plan.placements:
            current_pod = self.cache.pod(pod.key)
            if current_pod is not None:
                self.cache.load_one(POD.name, bound_copy(current_pod, node))
        return BindResult(bound=list(plan.placements)), made


    def _bind_claim(self, binding: VolumeClaimBinding) -> None:
        """Show one of the plan's claims bound, with its PV, as the watch would once the controllers are done."""
        cache = self.cache
        claim = cache.volume_claims.get(binding.claim) or cache.storage.synthesized.get(binding.claim)
        if claim is None:
            return
        volume = cache.volumes.get(binding.volume) if binding.volume is not None else None
        klass = cache.storage_classes.get(claim.storage_class)
        node = cache.nodes.get(binding.node)
        pv, pvc = bound_claim(claim, binding, volume, klass, node, cache.csi_nodes.get(binding.node))
        cache.load_one(PERSISTENT_VOLUME.name, pv)
        cache.load_one(PERSISTENT_VOLUME_CLAIM.name, pvc)


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


def _created(write: ClaimWrite) -> ResourceClaim:
    """The claim a write creates (an extended-resource claim), under the solver's name for it."""
    assert write.create is not None, f"claim {write.claim} is neither known nor created by its write"
    ns, _, name = write.claim.partition("/")
    body = dict(write.create)
    meta = {k: v for k, v in body.get("metadata", {}).items() if k != "generateName"}
    return ResourceClaim.model_validate({**body, "metadata": {**meta, "name": name, "namespace": ns}})
