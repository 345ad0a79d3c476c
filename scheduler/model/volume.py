"""A pod's volumes (core/v1 ``Volume``), as far as scheduling reads them, and the PVC spec they can embed.

The scheduler reads three kinds of pod volume (kube-scheduler v1.37, ``plugins/volumebinding``,
``volumerestrictions``, ``nodevolumelimits``):

* ``persistentVolumeClaim.claimName``: a PVC in the pod's namespace;
* ``ephemeral.volumeClaimTemplate``: a generic ephemeral volume, whose PVC the ephemeral volume
  controller creates as ``<pod name>-<volume name>``, owned by the pod
  (``component-helpers/storage/ephemeral``: ``VolumeClaimName``, ``VolumeIsForPod``);
* the legacy inline disks VolumeRestrictions compares between pods on one node (GCE PD, AWS EBS,
  iSCSI, RBD).

Every other source (configMap, emptyDir, csi inline, …) asks nothing of the scheduler and is not
modelled. The :class:`PersistentVolumeClaimSpec` lives here because a pod embeds one in its
ephemeral volume template; ``scheduler.model.storage`` builds the PVC object on it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from scheduler.model.base import KubeModel, LabelSelector, ObjectMeta
from scheduler.model.quantity import NonNegativeQuantity

AccessMode = Literal["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"]
"""``core/v1 PersistentVolumeAccessMode``; the API server refuses any other value."""
VolumeMode = Literal["Filesystem", "Block"]
"""``core/v1 PersistentVolumeMode``; unset means ``Filesystem`` (``pv_helpers.go checkVolumeModeMismatches``)."""

READ_WRITE_ONCE_POD = "ReadWriteOncePod"
FILESYSTEM = "Filesystem"
STORAGE = "storage"
"""The resource name of a PVC's size request and a PV's capacity."""


class VolumeResourceRequirements(KubeModel):
    """``core/v1 VolumeResourceRequirements``: ``requests.storage`` is what a PV must hold (≥ 0)."""

    requests: dict[str, NonNegativeQuantity] = Field(default_factory=dict)
    limits: dict[str, NonNegativeQuantity] = Field(default_factory=dict)


class PersistentVolumeClaimSpec(KubeModel):
    """``core/v1 PersistentVolumeClaimSpec``: the fields PV matching and binding read.

    ``storage_class_name``: None (unset) and ``""`` differ in the API (unset takes the default
    class at admission; ``""`` asks for no class), so both are kept as given.
    """

    access_modes: tuple[AccessMode, ...] = ()
    selector: LabelSelector | None = None
    resources: VolumeResourceRequirements = VolumeResourceRequirements()
    volume_name: str = ""
    storage_class_name: str | None = None
    volume_mode: VolumeMode | None = None
    volume_attributes_class_name: str | None = None


class PersistentVolumeClaimTemplate(KubeModel):
    """``core/v1 PersistentVolumeClaimTemplate``: what the ephemeral volume controller creates the PVC from."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PersistentVolumeClaimSpec


class EphemeralVolumeSource(KubeModel):
    """``core/v1 EphemeralVolumeSource``."""

    volume_claim_template: PersistentVolumeClaimTemplate | None = None


class PersistentVolumeClaimVolumeSource(KubeModel):
    """``core/v1 PersistentVolumeClaimVolumeSource``: a PVC named in the pod's namespace."""

    claim_name: str
    read_only: bool = False


class GCEPersistentDiskVolumeSource(KubeModel):
    """``core/v1 GCEPersistentDiskVolumeSource`` (legacy inline disk)."""

    pd_name: str
    read_only: bool = False


class AWSElasticBlockStoreVolumeSource(KubeModel):
    """``core/v1 AWSElasticBlockStoreVolumeSource`` (legacy inline disk)."""

    volume_id: str = Field(alias="volumeID")
    read_only: bool = False


class ISCSIVolumeSource(KubeModel):
    """``core/v1 ISCSIVolumeSource`` (legacy inline disk): ``iqn`` names the target."""

    iqn: str
    read_only: bool = False


class RBDVolumeSource(KubeModel):
    """``core/v1 RBDVolumeSource`` (legacy inline disk); ``pool`` defaults to ``rbd`` as the API defaults it."""

    monitors: tuple[str, ...] = ()
    image: str
    pool: str = "rbd"
    read_only: bool = False


class Volume(KubeModel):
    """``core/v1 Volume``: its name and the sources the scheduler reads (see the module docstring)."""

    name: str
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    ephemeral: EphemeralVolumeSource | None = None
    gce_persistent_disk: GCEPersistentDiskVolumeSource | None = None
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource | None = None
    iscsi: ISCSIVolumeSource | None = None
    rbd: RBDVolumeSource | None = None

    @property
    def judged(self) -> bool:
        """A source the volume plugins judge: a PVC, a generic ephemeral volume or a legacy inline disk. Every
        other source (the projected service-account token volume every pod gets, configMap, secret, emptyDir,
        downwardAPI, hostPath …) is refused by none of them: kube-scheduler's VolumeBinding, VolumeZone and
        NodeVolumeLimits look only at claims, VolumeRestrictions at claims and legacy disks."""
        return self.persistent_volume_claim is not None or self.ephemeral is not None or self.has_legacy_disk

    @property
    def has_legacy_disk(self) -> bool:
        """A GCE PD, AWS EBS, iSCSI or RBD source: VolumeRestrictions compares it with the node's pods."""
        return any(s is not None for s in (self.gce_persistent_disk, self.aws_elastic_block_store, self.iscsi,
                                           self.rbd))


def ephemeral_claim_name(pod_name: str, volume: Volume) -> str:
    """The PVC of a generic ephemeral volume: ``<pod name>-<volume name>`` (``ephemeral.VolumeClaimName``)."""
    return f"{pod_name}-{volume.name}"
