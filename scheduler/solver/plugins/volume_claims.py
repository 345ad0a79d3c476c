"""A pod's PersistentVolumeClaims resolved against the snapshot's storage view: the volume plugins' shared helper.

kube-scheduler resolves a pod's claims in each volume plugin's PreFilter (``volumebinding``
``podHasPVCs`` and ``GetPodVolumeClaims``, ``volumerestrictions``, ``nodevolumelimits``); here it is
done once per pod per solve (:func:`pod_volumes`, memoised in the cycle state) and every plugin reads
the result. The first problem, in volume order, makes the pod wait with kube's text (v1.37
``volume_binding.go`` ``podHasPVCs``, ``component-helpers/storage/ephemeral``):

* ``persistentvolumeclaim "data" not found`` (the lister's NotFound text);
* ``waiting for ephemeral volume controller to create the persistentvolumeclaim "p-scratch"``;
* ``persistentvolumeclaim "data" bound to non-existent persistentvolume "pv-1"`` (phase Lost);
* ``persistentvolumeclaim "data" is being deleted``;
* ``PVC ns/p-scratch was not created for pod ns/p (pod is not owner)`` (``VolumeIsForPod``);
* then, as ``GetPodVolumeClaims`` classifies them: :data:`UNBOUND_IMMEDIATE` for a claim that is not
  bound and does not wait for its first consumer (no class, a class that does not exist, an
  Immediate class, or ``spec.volumeName`` set before the PV controller finished).
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.framework.cycle_state import CycleState, StateKey
from scheduler.framework.storage_view import StorageView
from scheduler.model.pod import Pod
from scheduler.model.storage import LOST, PersistentVolume, PersistentVolumeClaim
from scheduler.model.volume import Volume, ephemeral_claim_name

UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
"""PreFilter rejection (``volume_binding.go`` ``ErrReasonBindConflict``'s PreFilter sibling, v1.37)."""

EMPTY_VIEW = StorageView()


@dataclass(frozen=True, slots=True)
class PodVolumes:
    """What a pod's claims are, resolved.

    ``error``: why the pod waits (see the module docstring), else None. ``bound``: fully bound claims
    with their PV (None: the PV does not exist). ``delay``: unbound WaitForFirstConsumer claims, to be
    bound with the pod's node. ``claims``: every claim found, in volume order (the other plugins read
    them). ``legacy``: the pod's GCE PD / AWS EBS / iSCSI / RBD inline volumes.
    """

    error: str | None = None
    bound: tuple[tuple[PersistentVolumeClaim, PersistentVolume | None], ...] = ()
    delay: tuple[PersistentVolumeClaim, ...] = ()
    claims: tuple[PersistentVolumeClaim, ...] = ()
    legacy: tuple[Volume, ...] = ()

    @property
    def any(self) -> bool:
        """The pod has a claim (or a claim it waits for) or a legacy disk."""
        return bool(self.error or self.claims or self.legacy)


NONE = PodVolumes()

PODS: StateKey[dict[str, PodVolumes]] = StateKey("VolumeBinding/pods")
"""Per solve: pod key → its resolved claims."""


def view_of(state: CycleState) -> StorageView:
    """The snapshot's storage view (an empty one when the snapshot has none: every claim is missing)."""
    return state.snapshot.volumes or EMPTY_VIEW


def pod_volumes(state: CycleState, pod: Pod) -> PodVolumes:
    """The pod's claims, resolved once per solve (see :func:`resolve`)."""
    memo = state.setdefault(PODS, dict)
    hit = memo.get(pod.key)
    if hit is None:
        hit = memo[pod.key] = resolve(view_of(state), pod)
    return hit


def resolve(view: StorageView, pod: Pod) -> PodVolumes:
    """Resolve ``pod``'s claims against ``view``; see the module docstring for the errors, in kube's order."""
    if not pod.spec.volumes:
        return NONE
    ns = pod.metadata.namespace
    claims: list[PersistentVolumeClaim] = []
    legacy = tuple(v for v in pod.spec.volumes if v.has_legacy_disk)
    for volume in pod.spec.volumes:
        if volume.persistent_volume_claim is not None:
            name, ephemeral = volume.persistent_volume_claim.claim_name, False
        elif volume.ephemeral is not None:
            name, ephemeral = ephemeral_claim_name(pod.metadata.name, volume), True
        else:
            continue
        claim = view.claims.get(f"{ns}/{name}")
        if claim is None:
            error = (f"waiting for ephemeral volume controller to create the persistentvolumeclaim {_q(name)}"
                     if ephemeral else f"persistentvolumeclaim {_q(name)} not found")
            return PodVolumes(error=error)
        if claim.status.phase == LOST:
            return PodVolumes(error=f"persistentvolumeclaim {_q(name)} bound to non-existent persistentvolume "
                                    f"{_q(claim.spec.volume_name)}")
        if claim.metadata.deletion_timestamp is not None:
            return PodVolumes(error=f"persistentvolumeclaim {_q(name)} is being deleted")
        if ephemeral and not _controlled_by(claim, pod):
            return PodVolumes(error=f"PVC {ns}/{name} was not created for pod {ns}/{pod.metadata.name} "
                                    "(pod is not owner)")
        if claim not in claims:
            claims.append(claim)
    bound: list[tuple[PersistentVolumeClaim, PersistentVolume | None]] = []
    delay: list[PersistentVolumeClaim] = []
    for claim in claims:
        if claim.is_bound:
            bound.append((claim, view.volumes.get(claim.spec.volume_name)))
            continue
        klass = view.class_of(claim)
        if klass is None or not klass.delays_binding or claim.spec.volume_name:
            return PodVolumes(error=UNBOUND_IMMEDIATE, claims=tuple(claims), legacy=legacy)
        delay.append(claim)
    return PodVolumes(None, tuple(bound), tuple(delay), tuple(claims), legacy)


def not_honoured(view: StorageView, pod: Pod) -> tuple[tuple[str, str], ...]:
    """What ``pod``'s volumes ask for that the volume plugins do not honour: (field path of the pod's volume,
    what is not honoured) each, for :mod:`scheduler.solver.unsupported` (nothing a pod asks for is dropped
    silently).

    * an unbound claim's ``spec.volumeAttributesClassName``: kube's ``FindMatchingVolume`` also matches it
      against a PV's; here PVs are matched without it.

    What no pod field shows (CSIStorageCapacity, VolumeAttachments, in-tree volumes migrated to CSI) is
    listed under Known limitations instead (docs/architecture.md, "Volumes").
    """
    out: list[tuple[str, str]] = []
    ns = pod.metadata.namespace
    seen: set[str] = set()
    for i, volume in enumerate(pod.spec.volumes):
        if volume.persistent_volume_claim is not None:
            name, path = volume.persistent_volume_claim.claim_name, f"spec.volumes[{i}].persistentVolumeClaim"
        elif volume.ephemeral is not None:
            name, path = ephemeral_claim_name(pod.metadata.name, volume), f"spec.volumes[{i}].ephemeral"
        else:
            continue
        key = f"{ns}/{name}"
        claim = view.claims.get(key)
        if claim is None or key in seen:
            continue
        seen.add(key)
        if claim.spec.volume_attributes_class_name and not claim.is_bound:
            value = _q(claim.spec.volume_attributes_class_name)
            out.append((path, f"PersistentVolumeClaim {key}: spec.volumeAttributesClassName {value} is not matched "
                              "against PersistentVolumes"))
    return tuple(out)


def _controlled_by(claim: PersistentVolumeClaim, pod: Pod) -> bool:
    """``metav1.IsControlledBy``: the claim's controller owner reference has the pod's uid."""
    return any(o.controller and o.uid == pod.metadata.uid for o in claim.metadata.owner_references)


def _q(text: str) -> str:
    """Go's ``%q`` for the names we quote (API names hold no characters that need escaping)."""
    return f'"{text}"'
