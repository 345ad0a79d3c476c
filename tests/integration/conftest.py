"""Shared fixtures for integration tests: an emulated API server (``k8s``) and our client to it (``kube``).

``k8s`` is a function-scoped :class:`ApiServer` (kmock 0.8 plus resourceVersions, PUT, binding,
``/status`` semantics; see ``apiserver.py``) on a random local port, with the kinds in
:data:`RESOURCES` registered for discovery — or, for a test marked ``@pytest.mark.kubernetes("1.36")``,
a Kubernetes 1.36 one (``apiserver136.py``, :data:`RESOURCES_1_36`), for ``kubernetes("1.25")`` the oldest
cluster the chart installs on (``apiserver125.py``, :data:`RESOURCES_1_25`). Seed objects through the API
(``await kube.create(...)``) so they get uid, resourceVersion and watch events. Inspect requests with
``list(k8s)`` or kmock views (``k8s['post', kmock.resource('events.k8s.io/v1/events')]``) and stored
objects with ``k8s.objects[resource, namespace, name]``. Strict mode is off: deliberate 404/409 answers
land in ``k8s.errors``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import kmock
import pytest
import pytest_asyncio

from scheduler.client.kube import KubeClient
from tests.integration.apiserver import ApiServer
from tests.integration.apiserver125 import ApiServer125
from tests.integration.apiserver136 import ApiServer136

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


RESOURCES_1_36: dict[str, tuple[str, bool, tuple[str, ...]]] = {
    **{path: info for path, info in RESOURCES.items()
       if path not in ("scheduling.k8s.io/v1beta1/podgroups", "scheduling.k8s.io/v1alpha3/compositepodgroups",
                       "scheduling.x-k8s.io/v1alpha1/podgroups")},
    "scheduling.k8s.io/v1alpha2/podgroups": ("PodGroup", True, ("status",)),
    "scheduling.k8s.io/v1alpha2/workloads": ("Workload", True, ()),
}
"""A Kubernetes 1.36 cluster with ``GenericWorkload`` on (KEP-5832, alpha in 1.36): PodGroups and Workloads only as
``scheduling.k8s.io/v1alpha2``; no v1beta1, no CompositePodGroup (v1alpha3), no scheduler-plugins CRD."""

RESOURCES_1_25: dict[str, tuple[str, bool, tuple[str, ...]]] = {
    path: info for path, info in RESOURCES.items()
    if not path.startswith(("scheduling.k8s.io/v1beta1/", "scheduling.k8s.io/v1alpha3/", "resource.k8s.io/"))}
"""A Kubernetes 1.25 cluster (the chart's ``kubeVersion`` floor) running scheduler-plugins: its PodGroup CRD
(``scheduling.x-k8s.io/v1alpha1``) and no ``scheduling.k8s.io`` PodGroup or CompositePodGroup (first served in
v1.36 and v1.37), no ``resource.k8s.io/v1`` (DRA is GA from v1.34); everything else the scheduler reads is."""

CLUSTERS: dict[str, tuple[type[ApiServer], dict[str, tuple[str, bool, tuple[str, ...]]]]] = {
    "1.37": (ApiServer, RESOURCES),
    "1.36": (ApiServer136, RESOURCES_1_36),
    "1.25": (ApiServer125, RESOURCES_1_25),
}
"""``@pytest.mark.kubernetes(VERSION)`` → the emulator class and what it serves (default ``1.37``)."""


KUBELET_AFTER_S = 0.2
"""How long after a graceful delete of a bound pod its kubelet confirms it (the pod is gone), seconds: the pod is
seen terminating first, as on a real cluster, without a test waiting out the 30 s grace period. A test that drives
the kubelet itself sets ``k8s.kubelet_after_s = None`` and calls ``k8s.kubelet_confirm()``."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kubernetes(version): the Kubernetes version `k8s` emulates: 1.37 (default) "
                                       "or 1.36 (apiserver136.py, RESOURCES_1_36) or 1.25 (apiserver125.py, "
                                       "RESOURCES_1_25)")


@pytest_asyncio.fixture
async def k8s(request: pytest.FixtureRequest) -> AsyncIterator[ApiServer]:
    """An emulated API server serving :data:`RESOURCES` (a test marked ``kubernetes("1.36")`` or ``("1.25")``:
    that version's, :data:`CLUSTERS`); ``k8s.url`` is its base URL. A test that made the server prune a field its
    CRD does not have (``k8s.warnings``, ``crds.py``) fails at teardown."""
    marker = request.node.get_closest_marker("kubernetes")
    server, resources = CLUSTERS[marker.args[0] if marker else "1.37"]
    async with server(kubelet_after_s=KUBELET_AFTER_S) as srv, kmock.Server(srv):
        for path, (kind, namespaced, subresources) in resources.items():
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
