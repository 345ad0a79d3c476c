"""Helpers for operator tests: the kinds the operator watches, the operator running in the test's
loop against the emulator, and the API server's admission step played by the test.

The emulator (kmock) runs no admission and no Job controller, so tests do what a kube-apiserver
does with the webhook configurations the operator's kopf wrote: send an ``admission.k8s.io/v1``
AdmissionReview over HTTPS to the URL in the configuration, trusting its ``caBundle``, and apply
the JSONPatch that comes back (:func:`admit`). Pods are created as the Job controller creates
them (``generateName``, the Job's labels), through the API.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ssl
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import jsonpatch
import kmock
import kopf

from scheduler.client.kube import KubeClient, Resource
from scheduler.operator.labels import WEBHOOK_CONFIGURATION
from scheduler.operator.runner import OperatorOptions, run
from tests.integration.apiserver import ApiServer
from tests.integration.conftest import VERBS
from tests.integration.livekit import NS, until

JOBS = Resource("batch", "v1", "jobs", True, "Job")
LWS = Resource("leaderworkerset.x-k8s.io", "v1", "leaderworkersets", True, "LeaderWorkerSet")
MUTATING = Resource("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", False,
                    "MutatingWebhookConfiguration")
VALIDATING = Resource("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", False,
                      "ValidatingWebhookConfiguration")
CONFIGURATION = WEBHOOK_CONFIGURATION
OPERATOR_RESOURCES = {
    "batch/v1/jobs": ("Job", True, ("status",)),
    "leaderworkerset.x-k8s.io/v1/leaderworkersets": ("LeaderWorkerSet", True, ("status", "scale")),
    "admissionregistration.k8s.io/v1/mutatingwebhookconfigurations": ("MutatingWebhookConfiguration", False, ()),
    "admissionregistration.k8s.io/v1/validatingwebhookconfigurations": ("ValidatingWebhookConfiguration", False, ()),
}
"""What the operator needs served beyond ``conftest.RESOURCES`` (JobSet and PyTorchJob are left out:
a cluster without them is the common case, and kopf must cope)."""


def register(k8s: ApiServer) -> None:
    for path, (kind, namespaced, subresources) in OPERATOR_RESOURCES.items():
        k8s.resources[path] = kmock.ResourceInfo(kind=kind, singular=kind.lower(), namespaced=namespaced,
                                                 verbs=VERBS, subresources=subresources)


def drop_workload_api(k8s: ApiServer) -> None:
    """Make ``k8s`` a cluster with no workload API (no ``scheduling.k8s.io`` PodGroup or CompositePodGroup), only
    scheduler-plugins' PodGroup CRD, which the default emulator serves with its schema (``crds.py``)."""
    for path in ("scheduling.k8s.io/v1beta1/podgroups", "scheduling.k8s.io/v1alpha3/compositepodgroups"):
        del k8s.resources[path]


def job(name: str, parallelism: int, cpu: str = "1", opted_in: bool = True, **spec: Any) -> dict[str, Any]:
    labels = {"gang-scheduler.io/gang": "true"} if opted_in else {}
    template = {"metadata": {}, "spec": {"restartPolicy": "Never", "containers": [
        {"name": "main", "image": "example.com/x:1",
         "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}, "limits": {"cpu": cpu, "memory": "1Gi"}}}]}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": NS, "labels": labels},
            "spec": {"parallelism": parallelism, "template": template, **spec}}


def job_pod(job_obj: dict[str, Any]) -> dict[str, Any]:
    """A pod as the Job controller makes it from ``job_obj``'s template (after admission of the Job)."""
    template = job_obj["spec"]["template"]
    name = job_obj["metadata"]["name"]
    labels = {**(template.get("metadata") or {}).get("labels", {}), "batch.kubernetes.io/job-name": name,
              "job-name": name, "batch.kubernetes.io/controller-uid": job_obj["metadata"].get("uid", "")}
    spec = {"schedulerName": "default-scheduler", **template["spec"]}  # the API server's default, before admission
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": job_obj["metadata"].get("uid", ""),
             "controller": True, "blockOwnerDeletion": True}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": f"{name}-", "namespace": NS, "labels": labels, "ownerReferences": [owner]},
            "spec": spec}


def review(resource: Resource, obj: dict[str, Any], operation: str = "CREATE",
           old: dict[str, Any] | None = None) -> dict[str, Any]:
    """An ``admission.k8s.io/v1`` AdmissionReview request as kube-apiserver sends it."""
    gvk = {"group": resource.group, "version": resource.version, "kind": resource.kind}
    gvr = {"group": resource.group, "version": resource.version, "resource": resource.plural}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": str(uuid.uuid4()), "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
        "name": obj["metadata"].get("name", ""), "namespace": obj["metadata"].get("namespace"),
        "operation": operation, "userInfo": {"username": "system:serviceaccount:kube-system:job-controller"},
        "object": obj, "oldObject": old, "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}}}


class Admission:
    """The API server's side of the webhooks in the managed configurations."""

    def __init__(self, kube: KubeClient) -> None:
        self.kube = kube

    async def webhook(self, config: Resource, resource: Resource) -> dict[str, Any]:
        """The webhook of configuration ``config`` whose rules cover ``resource``."""
        obj = await self.kube.get(config, None, CONFIGURATION)
        for hook in obj.get("webhooks") or []:
            for rule in hook["rules"]:
                if resource.plural in rule["resources"] and resource.group in rule["apiGroups"]:
                    return hook  # type: ignore[no-any-return]
        raise AssertionError(f"no webhook for {resource.plural} in {config.kind} {CONFIGURATION}")

    async def call(self, config: Resource, resource: Resource, request: dict[str, Any]) -> dict[str, Any]:
        """POST ``request`` to the webhook over HTTPS, verifying the server against the caBundle;
        returns the AdmissionReview response."""
        hook = await self.webhook(config, resource)
        client = hook["clientConfig"]
        context = ssl.create_default_context(cadata=base64.b64decode(client["caBundle"]).decode())
        async with aiohttp.ClientSession() as session, session.post(client["url"], json=request, ssl=context) as resp:
            assert resp.status == 200, await resp.text()
            answer: dict[str, Any] = await resp.json()
        assert answer["apiVersion"] == "admission.k8s.io/v1" and answer["kind"] == "AdmissionReview"
        assert answer["response"]["uid"] == request["request"]["uid"]
        return answer["response"]

    async def mutated(self, resource: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        """``obj`` after the mutating webhook for ``resource`` (on CREATE), as the API server would store it."""
        response = await self.call(MUTATING, resource, review(resource, obj))
        assert response["allowed"], response
        if "patch" not in response:
            return obj
        assert response["patchType"] == "JSONPatch"
        ops = jsonpatch.JsonPatch.from_string(base64.b64decode(response["patch"]).decode())
        return ops.apply(obj)  # type: ignore[no-any-return]


@contextlib.asynccontextmanager
async def operating(k8s: ApiServer, kube: KubeClient, **options: Any) -> AsyncIterator[asyncio.Task[None]]:
    """The operator (``scheduler.operator.runner.run``) in this loop until the block ends, its webhook
    server on 127.0.0.1 and a random port; waits until the managed webhook configurations exist and
    the Job watch is open."""
    settings = kopf.OperatorSettings()
    settings.scanning.disabled = True  # no CRD watch (the emulator serves no CRDs)
    settings.process.ultimate_exiting_timeout = None  # else a crash SIGKILLs pytest
    stop = asyncio.Event()
    opts = OperatorOptions(webhook_addr="127.0.0.1", webhook_port=0, liveness=None, **options)
    task = asyncio.create_task(run(opts, kube, stop, settings=settings), name="operator")

    async def ready() -> bool:
        if task.done():
            task.result()
        watching = any(r.action == kmock.action.WATCH and r.resource == "batch/v1/jobs" for r in k8s)
        try:
            await kube.get(MUTATING, None, CONFIGURATION)
            await kube.get(VALIDATING, None, CONFIGURATION)
        except Exception:
            return False
        return watching

    try:
        await until(ready, 30, "operator ready")
        yield task
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
