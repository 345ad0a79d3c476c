"""Builders for the storage objects volume tests need, from API (camelCase) dicts like ``builders.py``.

Defaults describe the common cloud case: a 10Gi ReadWriteOnce claim of class ``fast`` (a
WaitForFirstConsumer class provisioned by ``ebs.csi.aws.com``), a 10Gi Available PV, a CSINode with
the EBS driver. :func:`with_volumes` adds ``spec.volumes`` to a pod from ``builders.pod``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from scheduler.model import Pod
from scheduler.model.storage import CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass

EBS = "ebs.csi.aws.com"
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


def pvc(name: str, namespace: str = "default", size: str = "10Gi", storage_class: str | None = "fast",
        modes: Iterable[str] = ("ReadWriteOnce",), volume_name: str = "", phase: str = "Pending",
        annotations: Mapping[str, str] | None = None, selector: Mapping[str, Any] | None = None,
        owner: Pod | None = None, deleting: bool = False, uid: str = "") -> PersistentVolumeClaim:
    """A claim; ``volume_name`` with ``phase="Bound"`` is a bound one (the bind-completed annotation is added)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "annotations": dict(annotations or {}),
                            "uid": uid or f"uid-{namespace}-{name}"}
    if phase == "Bound":
        meta["annotations"]["pv.kubernetes.io/bind-completed"] = "yes"
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner.metadata.name,
                                    "uid": owner.metadata.uid, "controller": True}]
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: dict[str, Any] = {"accessModes": list(modes), "resources": {"requests": {"storage": size}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if volume_name:
        spec["volumeName"] = volume_name
    if selector is not None:
        spec["selector"] = dict(selector)
    return PersistentVolumeClaim.model_validate({"metadata": meta, "spec": spec, "status": {"phase": phase}})


def pv(name: str, size: str = "10Gi", storage_class: str = "fast", modes: Iterable[str] = ("ReadWriteOnce",),
       phase: str = "Available", node: str | None = None, zone: str | None = None,
       labels: Mapping[str, str] | None = None, claim: PersistentVolumeClaim | None = None,
       csi: tuple[str, str] | None = None, affinity: Mapping[str, Any] | None = None) -> PersistentVolume:
    """A PV; ``node`` gives it a local volume's hostname affinity, ``zone`` a zonal disk's affinity; ``claim``
    sets its claimRef (bound, or pre-bound when the claim is not bound yet); ``csi``: (driver, handle)."""
    spec: dict[str, Any] = {"capacity": {"storage": size}, "accessModes": list(modes),
                            "storageClassName": storage_class}
    terms = []
    if node is not None:
        terms.append({"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]})
    if zone is not None:
        terms.append({"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]})
    if terms or affinity is not None:
        spec["nodeAffinity"] = {"required": dict(affinity) if affinity is not None else {"nodeSelectorTerms": terms}}
    if claim is not None:
        spec["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": claim.metadata.namespace,
                            "name": claim.metadata.name, "uid": claim.metadata.uid}
    if csi is not None:
        spec["csi"] = {"driver": csi[0], "volumeHandle": csi[1]}
    return PersistentVolume.model_validate({"metadata": {"name": name, "labels": dict(labels or {})},
                                            "spec": spec, "status": {"phase": phase}})


def storage_class(name: str = "fast", provisioner: str = EBS, mode: str = "WaitForFirstConsumer",
                  zones: Iterable[str] | None = None) -> StorageClass:
    """A class; ``zones`` sets ``allowedTopologies`` on the zone label."""
    raw: dict[str, Any] = {"metadata": {"name": name}, "provisioner": provisioner, "volumeBindingMode": mode}
    if zones is not None:
        raw["allowedTopologies"] = [{"matchLabelExpressions": [{"key": ZONE, "values": list(zones)}]}]
    return StorageClass.model_validate(raw)


def csi_node(node: str, limit: int | None = None, driver: str = EBS) -> CSINode:
    allocatable = {"allocatable": {"count": limit}} if limit is not None else {}
    return CSINode.model_validate({"metadata": {"name": node}, "spec": {"drivers": [
        {"name": driver, "nodeID": f"i-{node}", "topologyKeys": [ZONE], **allocatable}]}})


def with_volumes(pod: Pod, *claims: str, ephemeral: Mapping[str, Mapping[str, Any]] | None = None,
                 inline: Iterable[Mapping[str, Any]] = (), uid: str | None = None) -> Pod:
    """``pod`` with ``persistentVolumeClaim`` volumes for ``claims``, generic ephemeral volumes (name → claim
    spec) and ``inline`` volume dicts (legacy disks); ``uid`` sets the pod's uid (ephemeral ownership)."""
    volumes: list[dict[str, Any]] = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                                     for i, c in enumerate(claims)]
    for name, spec in (ephemeral or {}).items():
        volumes.append({"name": name, "ephemeral": {"volumeClaimTemplate": {"spec": dict(spec)}}})
    volumes.extend(dict(v) for v in inline)
    raw = pod.model_dump(by_alias=True, exclude_none=True, mode="json")
    raw["spec"]["volumes"] = volumes
    if uid is not None:
        raw["metadata"]["uid"] = uid
    return Pod.model_validate(raw)
