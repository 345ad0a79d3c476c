"""Storage API objects the volume plugins read: PersistentVolumeClaim, PersistentVolume, StorageClass, CSINode.

Lenient for fields the scheduler does not read (ignored), strict for values the API server refuses
(an access mode, volume mode or binding mode outside its enum, a negative size or attach count).
The annotation names and helpers follow ``component-helpers/storage/volume/pv_helpers.go`` and
``helpers.go`` (v1.37): a claim's or volume's class is the beta annotation if present, else
``spec.storageClassName`` (``GetPersistentVolumeClaimClass`` / ``GetPersistentVolumeClass``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cached_property
from typing import Literal

from pydantic import Field

from scheduler.model.base import Int32, KubeModel, ObjectMeta, OwnedObjectMeta
from scheduler.model.pod import NodeSelector
from scheduler.model.quantity import NonNegativeQuantity, resource_list
from scheduler.model.volume import (
    FILESYSTEM,
    READ_WRITE_ONCE_POD,
    STORAGE,
    AccessMode,
    PersistentVolumeClaimSpec,
    VolumeMode,
)

SELECTED_NODE = "volume.kubernetes.io/selected-node"
"""PVC annotation naming the node a WaitForFirstConsumer claim is provisioned for (``AnnSelectedNode``)."""
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
"""PVC annotation the PV controller sets once it bound the claim (``AnnBindCompleted``)."""
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
"""PV annotation: a controller made the binding (the scheduler's static binding sets it; ``AnnBoundByController``)."""
BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
"""The deprecated class annotation; it wins over ``spec.storageClassName`` where present."""
MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
"""CSINode annotation listing in-tree plugins migrated to CSI (not honoured: see docs/architecture.md)."""

WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
IMMEDIATE = "Immediate"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
"""A class whose PVs are made by hand (local volumes): nothing provisions for it."""

LOST = "Lost"
AVAILABLE = "Available"
BOUND = "Bound"


class TypedObjectReference(KubeModel):
    """``core/v1 ObjectReference`` as a PV's ``claimRef``: the claim it is bound, or reserved, to."""

    api_version: str = ""
    kind: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""
    resource_version: str = ""


class PersistentVolumeClaimStatus(KubeModel):
    """``core/v1 PersistentVolumeClaimStatus``: ``phase`` (Pending | Bound | Lost)."""

    phase: str = "Pending"


class PersistentVolumeClaim(KubeModel):
    """``core/v1 PersistentVolumeClaim``."""

    api_version: str = "v1"
    kind: str = "PersistentVolumeClaim"
    metadata: OwnedObjectMeta = Field(default_factory=OwnedObjectMeta)
    """With ``ownerReferences``: a generic ephemeral volume's claim must be controlled by its pod."""
    spec: PersistentVolumeClaimSpec = Field(default_factory=PersistentVolumeClaimSpec)
    status: PersistentVolumeClaimStatus = Field(default_factory=PersistentVolumeClaimStatus)

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.metadata.namespace}/{self.metadata.name}"

    @property
    def storage_class(self) -> str:
        """The claim's class: the beta annotation, else ``spec.storageClassName``, else ``""``
        (``GetPersistentVolumeClaimClass``)."""
        if BETA_STORAGE_CLASS in self.metadata.annotations:
            return self.metadata.annotations[BETA_STORAGE_CLASS]
        return self.spec.storage_class_name or ""

    @cached_property
    def request_bytes(self) -> int:
        """``spec.resources.requests.storage`` in bytes (0 when unset)."""
        return resource_list(self.spec.resources.requests).get(STORAGE, 0)

    @property
    def is_bound(self) -> bool:
        """Fully bound: ``spec.volumeName`` set and the PV controller finished (``pv.kubernetes.io/bind-completed``,
        kube's ``isPVCFullyBound``). ``status.phase: Bound`` counts too: the controller writes it only after
        the annotation, so they agree on real objects, and hand-written snapshots often carry only the phase."""
        return bool(self.spec.volume_name) and (BIND_COMPLETED in self.metadata.annotations
                                                or self.status.phase == BOUND)

    @property
    def selected_node(self) -> str | None:
        """The ``volume.kubernetes.io/selected-node`` annotation, if set."""
        return self.metadata.annotations.get(SELECTED_NODE)

    @property
    def read_write_once_pod(self) -> bool:
        """``spec.accessModes`` contains ReadWriteOncePod."""
        return READ_WRITE_ONCE_POD in self.spec.access_modes

    @property
    def volume_mode(self) -> str:
        """``spec.volumeMode``; unset is Filesystem."""
        return self.spec.volume_mode or FILESYSTEM


class VolumeNodeAffinity(KubeModel):
    """``core/v1 VolumeNodeAffinity``: the nodes a PV can be used from."""

    required: NodeSelector | None = None


class CSIPersistentVolumeSource(KubeModel):
    """``core/v1 CSIPersistentVolumeSource``: ``driver`` and ``volumeHandle`` identify the volume for attach limits."""

    driver: str
    volume_handle: str


class PersistentVolumeSpec(KubeModel):
    """``core/v1 PersistentVolumeSpec``: what matching, node affinity and attach counting read."""

    capacity: dict[str, NonNegativeQuantity] = Field(default_factory=dict)
    access_modes: tuple[AccessMode, ...] = ()
    claim_ref: TypedObjectReference | None = None
    storage_class_name: str = ""
    node_affinity: VolumeNodeAffinity | None = None
    volume_mode: VolumeMode | None = None
    csi: CSIPersistentVolumeSource | None = None


class PersistentVolumeStatus(KubeModel):
    """``core/v1 PersistentVolumeStatus``: ``phase`` (Pending | Available | Bound | Released | Failed)."""

    phase: str = "Pending"


class PersistentVolume(KubeModel):
    """``core/v1 PersistentVolume`` (cluster-scoped)."""

    api_version: str = "v1"
    kind: str = "PersistentVolume"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PersistentVolumeSpec = Field(default_factory=PersistentVolumeSpec)
    status: PersistentVolumeStatus = Field(default_factory=PersistentVolumeStatus)

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def storage_class(self) -> str:
        """The beta annotation, else ``spec.storageClassName`` (``GetPersistentVolumeClass``)."""
        return self.metadata.annotations.get(BETA_STORAGE_CLASS, self.spec.storage_class_name)

    @cached_property
    def capacity_bytes(self) -> int:
        """``spec.capacity.storage`` in bytes (0 when unset)."""
        return resource_list(self.spec.capacity).get(STORAGE, 0)

    @property
    def volume_mode(self) -> str:
        return self.spec.volume_mode or FILESYSTEM

    def bound_to(self, claim: PersistentVolumeClaim) -> bool:
        """Whether ``claimRef`` names ``claim``: namespace, name, and uid if it has one (``IsVolumeBoundToClaim``)."""
        ref = self.spec.claim_ref
        if ref is None or ref.name != claim.metadata.name or ref.namespace != claim.metadata.namespace:
            return False
        return not ref.uid or ref.uid == claim.metadata.uid


class TopologySelectorLabelRequirement(KubeModel):
    """``core/v1 TopologySelectorLabelRequirement``: the node label ``key`` must have one of ``values``."""

    key: str
    values: tuple[str, ...] = ()


class TopologySelectorTerm(KubeModel):
    """``core/v1 TopologySelectorTerm``: requirements ANDed."""

    match_label_expressions: tuple[TopologySelectorLabelRequirement, ...] = ()


class StorageClass(KubeModel):
    """``storage.k8s.io/v1 StorageClass`` (cluster-scoped).

    ``volume_binding_mode``: the API server defaults an unset mode to Immediate; a snapshot written
    by hand may leave it out and is read the same way.
    """

    api_version: str = "storage.k8s.io/v1"
    kind: str = "StorageClass"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    provisioner: str = ""
    volume_binding_mode: Literal["Immediate", "WaitForFirstConsumer"] = "Immediate"
    allowed_topologies: tuple[TopologySelectorTerm, ...] = ()

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def delays_binding(self) -> bool:
        """``volumeBindingMode: WaitForFirstConsumer``."""
        return self.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER

    @property
    def provisions(self) -> bool:
        """Something provisions for the class: a provisioner other than ``""`` and ``kubernetes.io/no-provisioner``."""
        return self.provisioner not in ("", NO_PROVISIONER)


class VolumeNodeResources(KubeModel):
    """``storage.k8s.io/v1 VolumeNodeResources``: ``count`` volumes of the driver may be attached (None: no limit)."""

    count: Int32 | None = Field(default=None, ge=0)


class CSINodeDriver(KubeModel):
    """``storage.k8s.io/v1 CSINodeDriver``."""

    name: str
    node_id: str = Field(default="", alias="nodeID")
    topology_keys: tuple[str, ...] = ()
    allocatable: VolumeNodeResources | None = None


class CSINodeSpec(KubeModel):
    """``storage.k8s.io/v1 CSINodeSpec``."""

    drivers: tuple[CSINodeDriver, ...] = ()


class CSINode(KubeModel):
    """``storage.k8s.io/v1 CSINode`` (cluster-scoped, named after its node)."""

    api_version: str = "storage.k8s.io/v1"
    kind: str = "CSINode"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: CSINodeSpec = Field(default_factory=CSINodeSpec)

    @property
    def name(self) -> str:
        return self.metadata.name

    def limit(self, driver: str) -> int | None:
        """``allocatable.count`` of ``driver`` on this node, or None (not listed, or no limit)."""
        for d in self.spec.drivers:
            if d.name == driver:
                return d.allocatable.count if d.allocatable is not None else None
        return None


DEFAULT_CLASS_ANNOTATIONS = ("storageclass.kubernetes.io/is-default-class",
                             "storageclass.beta.kubernetes.io/is-default-class")
"""The annotations (value ``"true"``) that make a StorageClass the default (kubernetes ``IsDefaultAnnotation``)."""


def names_no_class(class_name: str | None, annotations: Mapping[str, str]) -> bool:
    """Whether a claim created with ``spec.storageClassName`` ``class_name`` and ``annotations`` names no class, so
    the API server gives it :func:`default_class` (kubernetes ``PersistentVolumeClaimHasClass``: an empty name is a
    class, "none")."""
    return class_name is None and BETA_STORAGE_CLASS not in annotations


def default_class(classes: Iterable[StorageClass]) -> str | None:
    """The StorageClass the API server gives a claim created with no class (neither ``spec.storageClassName`` nor
    :data:`BETA_STORAGE_CLASS`): the newest of ``classes`` annotated default, the first by name among equals, or None
    (the DefaultStorageClass admission plugin; kubernetes ``pkg/volume/util`` ``GetDefaultClass``)."""
    defaults = [c for c in classes if any(c.metadata.annotations.get(k) == "true" for k in DEFAULT_CLASS_ANNOTATIONS)]
    newest = sorted(defaults, key=lambda c: (-(c.metadata.creation_timestamp.timestamp()
                                               if c.metadata.creation_timestamp else 0), c.metadata.name))
    return newest[0].metadata.name if newest else None
