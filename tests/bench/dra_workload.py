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

Three modes (:data:`MODES`) shape the same objects: ``exclusive`` (one whole GPU per claim), ``shared`` (each GPU
``allowMultipleAllocations: true``, each claim asking a :data:`SHARE` of its ``memory`` capacity, KEP-5075) and
``conditions`` (each GPU with ``bindingConditions`` / ``bindingFailureConditions``, KEP-5007; the benchmark then
plays the driver's controller with :func:`play_driver`).
"""

from __future__ import annotations

import asyncio
import copy
import time
import uuid
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from scheduler.client.kube import PODS, RESOURCE_CLAIMS, ApiError, KubeClient
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
MODES = ("exclusive", "shared", "conditions")
"""How the GPUs are used: whole, shared by capacity (KEP-5075), or after binding conditions (KEP-5007)."""
SHARE = "10Gi"
"""``shared``: the ``memory`` each claim asks of a GPU (``capacity.requests``); an A100 of 40Gi holds four."""
ATTACHED = f"{DRIVER}/FabricAttached"
"""``conditions``: the binding condition each GPU carries, set True by :func:`play_driver`."""
ATTACH_FAILED = f"{DRIVER}/FabricAttachFailed"
"""``conditions``: the binding failure condition each GPU carries (never set by the benchmark)."""


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


def node_slice(node: str, node_uid: str, mode: str = "exclusive") -> JSON:
    """The slice the driver's kubelet plugin publishes for ``node`` (uid ``node_uid``): one pool named after the
    node, generation 1, one slice; ``generateName`` ``<node>-gpu.nvidia.com-``, owned by the Node; the devices
    of the recorded slice with per-node GPU UUIDs, and per ``mode`` (:data:`MODES`) ``allowMultipleAllocations``
    (``shared``) or ``bindingConditions`` :data:`ATTACHED` and ``bindingFailureConditions``
    :data:`ATTACH_FAILED` (``conditions``). Raises ``ValueError`` on an unknown mode."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is not one of {MODES}")
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
        if mode == "shared":
            device["allowMultipleAllocations"] = True
        elif mode == "conditions":
            device |= {"bindingConditions": [ATTACHED], "bindingFailureConditions": [ATTACH_FAILED]}
    return body


def template_name(gang: str) -> str:
    return f"{gang}-{ENTRY}"


def claim_template(gang: str, count: int = 1, share: str | None = None) -> JSON:
    """The gang's ResourceClaimTemplate ``<gang>-gpu``: one request ``gpu`` for ``count`` device(s) of
    :data:`CLASS`; ``share`` (a quantity): only that much of each device's ``memory`` capacity
    (``exactly.capacity.requests``, KEP-5075), for devices with ``allowMultipleAllocations``."""
    exactly: JSON = {"deviceClassName": CLASS, "count": count}
    if share is not None:
        exactly["capacity"] = {"requests": {"memory": share}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": template_name(gang), "namespace": NS},
            "spec": {"spec": {"devices": {"requests": [{"name": ENTRY, "exactly": exactly}]}}}}


def mode_template(gang: str, mode: str) -> JSON:
    """:func:`claim_template` for one GPU as ``mode`` uses it: a :data:`SHARE` of it when ``shared``."""
    return claim_template(gang, share=SHARE if mode == "shared" else None)


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


def conditions_patch(claim: JSON, now: str) -> JSON | None:
    """What the driver's controller writes once ``claim`` is allocated on devices with binding conditions: the
    claim ``status`` merge patch setting each result's ``bindingConditions`` True in ``status.devices[]``
    (``AllocatedDeviceStatus``: driver, pool, device, shareID when set, conditions with ``lastTransitionTime``
    ``now``, RFC 3339), KEP-5007. ``None`` when the claim is not allocated, has no binding conditions, or
    already reports them all True."""
    status = claim.get("status") or {}
    results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
    wanted = [r for r in results if r.get("bindingConditions")]
    if not wanted:
        return None
    reported = {(d.get("driver"), d.get("pool"), d.get("device"), d.get("shareID")):
                {c["type"] for c in d.get("conditions") or [] if c.get("status") == "True"}
                for d in status.get("devices") or []}
    if all(set(r["bindingConditions"]) <= reported.get(
            (r["driver"], r["pool"], r["device"], r.get("shareID")), set()) for r in wanted):
        return None
    devices = [{"driver": r["driver"], "pool": r["pool"], "device": r["device"],
                **({"shareID": r["shareID"]} if r.get("shareID") else {}),
                "conditions": [{"type": t, "status": "True", "reason": "Attached", "message": "",
                                "lastTransitionTime": now} for t in r["bindingConditions"]]} for r in wanted]
    return {"status": {"devices": devices}}


async def play_driver(kube: KubeClient, sent: dict[str, float],
                      clock: Callable[[], float] = time.monotonic) -> None:
    """Play the driver's controller for ``conditions``: watch the claims in :data:`NS` and PATCH each newly
    allocated one's ``status.devices[]`` with :func:`conditions_patch`, recording in ``sent[claim name]`` the
    ``clock()`` instant just before the write (so a pod seen bound earlier was bound before its conditions).
    Runs until cancelled; re-lists after a dropped watch; a refused write is retried on the claim's next event."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

    async def seen(claim: JSON) -> None:
        name = claim["metadata"]["name"]
        body = conditions_patch(claim, now)
        if body is None or name in sent:
            return
        sent[name] = clock()
        try:
            await kube.patch(RESOURCE_CLAIMS, NS, name, body, sub="status")
        except ApiError:
            del sent[name]

    writes: set[asyncio.Task[None]] = set()

    def write(claim: JSON) -> None:  # each write its own task, so the watch is read on meanwhile
        task = asyncio.create_task(seen(claim))
        writes.add(task)
        task.add_done_callback(writes.discard)

    while True:
        items, rv = await kube.list(RESOURCE_CLAIMS, NS)
        for c in items:
            write(c)
        try:
            async for event in kube.watch(RESOURCE_CLAIMS, rv, NS):
                obj = event.get("object") or {}
                rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                if event.get("type") in ("ADDED", "MODIFIED") and (obj.get("metadata") or {}).get("name"):
                    write(obj)
        except ApiError:
            pass
