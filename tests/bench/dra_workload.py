"""The DRA drain's objects: ResourceSlices as the NVIDIA GPU driver publishes them, its DeviceClass, one
ResourceClaimTemplate per gang, pods claiming one GPU each through it, and the claims the resourceclaim
controller generates for them.

Every builder is pure (no I/O); ``bench_e2e`` creates what they return, each pod with its claim through
:func:`create_member`. The slice and the class are the
driver's own (``tests/data/resourceslices``: an EKS p4d.24xlarge's eight A100s published by
``gpu.nvidia.com``, and the class from the driver's Helm chart), re-targeted at each benchmark node.
The claim and the pod's ``status.resourceClaimStatuses`` entry are what the resourceclaim controller
(``pkg/controller/resourceclaim/controller.go``, v1.37) writes for a pod's template entry: a claim with
``generateName`` ``<pod>-<entry>-`` (cut to 57 characters), the template's ``spec``, the
``resource.kubernetes.io/pod-claim-name`` annotation and the pod as its controlling owner.
"""

from __future__ import annotations

import copy
import uuid
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from scheduler.client.kube import PODS, RESOURCE_CLAIMS, KubeClient
from tests.bench import realistic
from tests.integration.livekit import NS, pod

JSON = dict[str, Any]

DATA = Path(__file__).resolve().parents[1] / "data" / "resourceslices"
SLICE_FILE = "nvidia-gpu-a100-p4d.yaml"
CLASS_FILE = "deviceclasses.yaml"
DRIVER = "gpu.nvidia.com"
CLASS = "gpu.nvidia.com"
ENTRY = "gpu"
"""The pod's ``spec.resourceClaims[].name`` (and the container's ``resources.claims[].name``)."""
POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"
"""Annotation the resourceclaim controller puts on a generated claim: the pod's claim entry."""
GENERATE_NAME_MAX = 57
"""The controller cuts ``<pod>-<entry>-`` to 57 characters: 63 less a hyphen and 5 random characters."""


@cache
def _driver_slice() -> JSON:
    items = yaml.safe_load((DATA / SLICE_FILE).read_text())["items"]
    return next(s for s in items if s["spec"]["driver"] == DRIVER)


def devices_per_slice() -> int:
    """Devices in one node's slice (8: the p4d's A100s)."""
    return len(_driver_slice()["spec"]["devices"])


def device_class() -> JSON:
    """The driver's ``gpu.nvidia.com`` DeviceClass (CEL selector on driver and ``type == 'gpu'``)."""
    docs = yaml.safe_load_all((DATA / CLASS_FILE).read_text())
    return copy.deepcopy(next(d for d in docs if d and d["metadata"]["name"] == CLASS))


def node_slice(node: str, node_uid: str) -> JSON:
    """The slice the driver's kubelet plugin publishes for ``node`` (uid ``node_uid``): one pool named after the
    node, generation 1, one slice; ``generateName`` ``<node>-gpu.nvidia.com-``, owned by the Node; the devices
    of the recorded slice with per-node GPU UUIDs."""
    body = copy.deepcopy(_driver_slice())
    meta = body["metadata"]
    meta.pop("name", None)
    meta["generateName"] = f"{node}-{DRIVER}-"
    meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid,
                                "controller": True}]
    spec = body["spec"]
    spec["nodeName"] = node
    spec["pool"] = {"name": node, "generation": 1, "resourceSliceCount": 1}
    for device in spec["devices"]:
        device["attributes"]["uuid"] = {"string": f"GPU-{uuid.uuid5(uuid.NAMESPACE_DNS, node + device['name'])}"}
    return body


def template_name(gang: str) -> str:
    return f"{gang}-{ENTRY}"


def claim_template(gang: str, count: int = 1) -> JSON:
    """The gang's ResourceClaimTemplate ``<gang>-gpu``: one request ``gpu`` for ``count`` device(s) of
    :data:`CLASS`."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": template_name(gang), "namespace": NS},
            "spec": {"spec": {"devices": {"requests": [
                {"name": ENTRY, "exactly": {"deviceClassName": CLASS, "count": count}}]}}}}


def dra_pod(gang: str, member: int, real: bool = False) -> JSON:
    """Member ``member`` of ``gang``: 1 cpu, 1Gi, and the claim entry :data:`ENTRY` from the gang's template,
    used by its container (``real``: as the Job controller creates it, named by ``generateName``)."""
    body = pod(f"{gang}-{member}", gang, cpu="1")
    body["spec"]["resourceClaims"] = [{"name": ENTRY, "resourceClaimTemplateName": template_name(gang)}]
    body["spec"]["containers"][0]["resources"]["claims"] = [{"name": ENTRY}]
    if real:
        body = realistic.owned_by_job(body, gang, member, str(uuid.uuid5(uuid.NAMESPACE_DNS, gang)))
    return body


def generated_claim(created_pod: JSON, template: JSON, entry: str = ENTRY) -> JSON:
    """The claim the resourceclaim controller creates for ``created_pod``'s ``entry`` (the pod as the server
    returned it: name and uid set) from ``template``."""
    meta = created_pod["metadata"]
    tmeta = template["spec"].get("metadata") or {}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"generateName": f"{meta['name']}-{entry}-"[:GENERATE_NAME_MAX], "namespace": meta["namespace"],
                         "annotations": {**(tmeta.get("annotations") or {}), POD_CLAIM_NAME: entry},
                         **({"labels": tmeta["labels"]} if tmeta.get("labels") else {}),
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                                              "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}]},
            "spec": copy.deepcopy(template["spec"]["spec"])}


def claim_status_patch(entry: str, claim: str) -> JSON:
    """The pod ``status`` merge patch naming the generated claim (``status.resourceClaimStatuses``)."""
    return {"status": {"resourceClaimStatuses": [{"name": entry, "resourceClaimName": claim}]}}


async def create_member(kube: KubeClient, gang: str, member: int, template: JSON,
                        real: bool = False) -> tuple[JSON, JSON]:
    """Create :func:`dra_pod`, then do what the resourceclaim controller does for it: create its claim from
    ``template`` (:func:`generated_claim`) and name it in the pod's ``status.resourceClaimStatuses``. Returns
    (the pod as created, the claim as created); raises :class:`~scheduler.client.kube.ApiError` on a refused
    write."""
    made = await kube.create(PODS, NS, dra_pod(gang, member, real))
    claim = await kube.create(RESOURCE_CLAIMS, NS, generated_claim(made, template))
    await kube.patch(PODS, NS, made["metadata"]["name"], claim_status_patch(ENTRY, claim["metadata"]["name"]),
                     sub="status")
    return made, claim
