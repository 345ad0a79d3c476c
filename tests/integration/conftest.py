"""Shared fixtures for integration tests: an emulated API server (``k8s``) and our client to it (``kube``).

``k8s`` is a function-scoped :class:`ApiServer` (kmock 0.8 plus resourceVersions, PUT, binding,
``/status`` semantics; see ``apiserver.py``) on a random local port, with the kinds in
:data:`RESOURCES` registered for discovery. Seed objects through the API (``await kube.create(...)``)
so they get uid, resourceVersion and watch events. Inspect requests with ``list(k8s)`` or kmock
views (``k8s['post', kmock.resource('events.k8s.io/v1/events')]``) and stored objects with
``k8s.objects[resource, namespace, name]``. Strict mode is off: deliberate 404/409 answers land in
``k8s.errors``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import kmock
import pytest_asyncio

from scheduler.live.kube import KubeClient
from tests.integration.apiserver import ApiServer

VERBS = {"get", "list", "watch", "create", "update", "patch", "delete"}

RESOURCES: dict[str, tuple[str, bool, tuple[str, ...]]] = {
    # "group/version/plural": (kind, namespaced, subresources)
    "v1/namespaces": ("Namespace", False, ()),  # kopf's discovery waits for it
    "v1/nodes": ("Node", False, ("status",)),
    "v1/pods": ("Pod", True, ("status", "binding")),
    "v1/events": ("Event", True, ()),
    "events.k8s.io/v1/events": ("Event", True, ()),
    "coordination.k8s.io/v1/leases": ("Lease", True, ()),
    "scheduling.k8s.io/v1beta1/podgroups": ("PodGroup", True, ("status",)),
    "scheduling.k8s.io/v1alpha3/compositepodgroups": ("CompositePodGroup", True, ("status",)),
    "scheduling.k8s.io/v1/priorityclasses": ("PriorityClass", False, ()),
    "scheduling.x-k8s.io/v1alpha1/podgroups": ("PodGroup", True, ("status",)),  # scheduler-plugins' CRD (crds.py)
    "policy/v1/poddisruptionbudgets": ("PodDisruptionBudget", True, ()),
    "resource.k8s.io/v1/resourceslices": ("ResourceSlice", False, ()),
    "resource.k8s.io/v1/deviceclasses": ("DeviceClass", False, ()),
    "resource.k8s.io/v1/resourceclaims": ("ResourceClaim", True, ("status",)),
    "resource.k8s.io/v1/resourceclaimtemplates": ("ResourceClaimTemplate", True, ()),
    "v1/persistentvolumeclaims": ("PersistentVolumeClaim", True, ("status",)),
    "v1/persistentvolumes": ("PersistentVolume", False, ("status",)),
    "storage.k8s.io/v1/storageclasses": ("StorageClass", False, ()),
    "storage.k8s.io/v1/csinodes": ("CSINode", False, ()),
}


@pytest_asyncio.fixture
async def k8s() -> AsyncIterator[ApiServer]:
    """An emulated API server serving :data:`RESOURCES`; ``k8s.url`` is its base URL. A test that made the server
    prune a field its CRD does not have (``k8s.warnings``, ``crds.py``) fails at teardown."""
    async with ApiServer() as srv, kmock.Server(srv):
        for path, (kind, namespaced, subresources) in RESOURCES.items():
            srv.resources[path] = kmock.ResourceInfo(kind=kind, singular=kind.lower(), namespaced=namespaced,
                                                     verbs=VERBS, subresources=subresources)
        yield srv
        assert srv.warnings == [], "writes of fields the CRD does not have (a real server drops them)"


@pytest_asyncio.fixture
async def kube(k8s: ApiServer) -> AsyncIterator[KubeClient]:
    """Our real client (no rate limit) pointed at ``k8s``; closed after the test."""
    client = KubeClient.for_host(str(k8s.url))
    try:
        yield client
    finally:
        await client.close()
