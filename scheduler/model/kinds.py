"""The kinds the scheduler reads, one row each: the table every list of kinds is read from.

A row (:class:`Kind`) says what the API serves — the kind, its API group, the versions read (preferred
first), the plural and whether it is namespaced — which model parses it (and the conversion into what the
scheduler keeps, for scheduler-plugins' PodGroup), whether ``run`` watches it and when (:attr:`Kind.live`),
whether ``simulate`` reads it from snapshot files (:attr:`Kind.offline`: the loader's ``Objects`` attribute it
is loaded into) and whether the cache holds it. Read by:

* the API client (``scheduler.client.kube``'s resources, ``scheduler.client.discovery.watched_resources``:
  the rows watched live, in table order);
* the cache (``ClusterCache.objects``: one mapping per cached row, and the cache's typed accessors);
* the loader (``scheduler.offline.loader``: which ``apiVersion`` / ``kind`` documents are read, their model,
  their scope, the version conversions, and the ``Objects`` attribute each goes to).

Adding a kind is one row here and its model (plus, when snapshot files carry it, the ``Objects`` list it is
loaded into); the consumers above follow, and ``tests/unit/model/test_kinds.py`` checks that they do.
Kinds the scheduler only writes (Events, Leases, Bindings) are not rows: the client names those itself.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic, TypeVar, cast

from pydantic import BaseModel

from scheduler.model import coscheduling, podgroup_v1alpha2
from scheduler.model.base import from_wire
from scheduler.model.coscheduling import CoscheduledPodGroup, CoschedulingPodGroup, to_podgroup
from scheduler.model.dra import API_GROUP as DRA_GROUP
from scheduler.model.dra import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from scheduler.model.namespace import Namespace
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.model.podgroup_v1alpha2 import Decoded
from scheduler.model.policy import PodDisruptionBudget
from scheduler.model.scheduling import API_GROUP as SCHEDULING_GROUP
from scheduler.model.scheduling import CompositePodGroup, PodGroup, PriorityClass, Workload
from scheduler.model.storage import CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass

T = TypeVar("T")


class Watch(enum.Enum):
    """When ``run`` watches a kind that every server it supports serves."""

    ALWAYS = "always"
    GROUP_API = "the PodGroup API discovery chose"
    """The workload API's PodGroup in the version discovery chose, scheduler-plugins' where its CRD is served
    (``scheduler.client.discovery.GroupApis``)."""
    PREEMPTION = "with preemption on"


@dataclass(frozen=True, slots=True)
class IfServed:
    """``run`` watches the kind when API discovery finds it served; otherwise it logs once what follows.

    ``unserved``: what follows when the server does not serve it; ``undiscovered``: what follows when
    discovery itself fails (empty: nothing is said beyond the failure); ``gate``: the feature gate a
    cluster enables to serve it (named in the warning); ``all_or_none``: the rows of one API group/version
    with this value are watched together or not at all (DRA: a device view needs all four kinds).
    """

    unserved: str
    undiscovered: str = ""
    gate: str = ""
    all_or_none: bool = False


@dataclass(frozen=True, slots=True, eq=False)
class Kind(Generic[T]):
    """One kind the scheduler reads; ``T`` is what the cache and the loader keep of an object of it.

    ``name``: the cache's and the informers' name for the kind — the API's ``kind``, or
    ``<kind>.<group>`` for a second kind of the same name (:data:`COSCHEDULING_POD_GROUP`);
    ``kind``: the API's ``kind``; ``group``: the API group (``""`` for the core group); ``versions``:
    the versions read, preferred first (``run`` watches the first; PodGroup's is chosen by discovery among
    the ones ``scheduler.client.podgroup_api`` speaks); ``plural``: the resource name in API paths;
    ``model``: the pydantic model parsing it; ``namespaced``: whether objects live in a namespace (a
    snapshot object without one is put in ``default``, as the API server does); ``live``: when ``run``
    watches it (None: never); ``offline``: the loader's ``Objects`` attribute snapshot files are loaded
    into (None: not read offline); ``cached``: whether the ``ClusterCache`` holds it (a Workload is context
    only); ``convert``: from the parsed model to what is kept (None: the model itself); ``decoders``:
    version → the conversion of that version's JSON into the model's shape (Kubernetes 1.36's PodGroup).
    """

    name: str
    kind: str
    group: str
    versions: tuple[str, ...]
    plural: str
    model: type[BaseModel]
    namespaced: bool
    live: Watch | IfServed | None
    offline: str | None
    cached: bool = True
    convert: Callable[[Any], T] | None = None
    decoders: Mapping[str, Callable[[Mapping[str, Any]], Decoded]] = field(
        default_factory=lambda: MappingProxyType({}))

    def api_version(self, version: str | None = None) -> str:
        """``apiVersion`` of ``version`` (default: the preferred one): ``group/version``, or ``version`` for core."""
        version = version or self.versions[0]
        return f"{self.group}/{version}" if self.group else version

    @property
    def api_versions(self) -> tuple[str, ...]:
        """Every ``apiVersion`` read, preferred first."""
        return tuple(self.api_version(v) for v in self.versions)

    def parse(self, raw: Mapping[str, Any]) -> T:
        """What is kept of ``raw`` (JSON in the model's shape). Raises pydantic's ``ValidationError`` for a
        malformed object (and what the conversion raises)."""
        obj = from_wire(self.model, raw)
        return self.convert(obj) if self.convert is not None else cast(T, obj)


POD: Kind[Pod] = Kind("Pod", "Pod", "", ("v1",), "pods", Pod, True, Watch.ALWAYS, "pods")
NODE: Kind[Node] = Kind("Node", "Node", "", ("v1",), "nodes", Node, False, Watch.ALWAYS, "nodes")
POD_GROUP: Kind[PodGroup] = Kind(
    "PodGroup", "PodGroup", SCHEDULING_GROUP, ("v1beta1", "v1alpha3", podgroup_v1alpha2.VERSION), "podgroups",
    PodGroup, True, Watch.GROUP_API, "podgroups",
    decoders=MappingProxyType({podgroup_v1alpha2.VERSION: podgroup_v1alpha2.decode}))
COSCHEDULING_POD_GROUP: Kind[CoscheduledPodGroup] = Kind(
    coscheduling.CACHE_KIND, coscheduling.KIND, coscheduling.API_GROUP, (coscheduling.VERSION,),
    coscheduling.PLURAL, CoschedulingPodGroup, True, Watch.GROUP_API, "coscheduling", convert=to_podgroup)
PRIORITY_CLASS: Kind[PriorityClass] = Kind(
    "PriorityClass", "PriorityClass", SCHEDULING_GROUP, ("v1",), "priorityclasses", PriorityClass, False,
    Watch.ALWAYS, "priority_classes")
NAMESPACE: Kind[Namespace] = Kind(
    "Namespace", "Namespace", "", ("v1",), "namespaces", Namespace, False, Watch.ALWAYS, "namespaces")
POD_DISRUPTION_BUDGET: Kind[PodDisruptionBudget] = Kind(
    "PodDisruptionBudget", "PodDisruptionBudget", "policy", ("v1",), "poddisruptionbudgets", PodDisruptionBudget,
    True, Watch.PREEMPTION, "budgets")
COMPOSITE_POD_GROUP: Kind[CompositePodGroup] = Kind(
    "CompositePodGroup", "CompositePodGroup", SCHEDULING_GROUP, ("v1alpha3",), "compositepodgroups",
    CompositePodGroup, True,
    IfServed("trees are single PodGroups",
             gate="CompositePodGroup (and --runtime-config=scheduling.k8s.io/v1alpha3=true)"),
    "composites")
_DRA = IfServed("pods with ResourceClaims wait, extended resources are not served through DRA",
                "pods with ResourceClaims wait", all_or_none=True)
RESOURCE_SLICE: Kind[ResourceSlice] = Kind(
    "ResourceSlice", "ResourceSlice", DRA_GROUP, ("v1",), "resourceslices", ResourceSlice, False, _DRA,
    "resource_slices")
DEVICE_CLASS: Kind[DeviceClass] = Kind(
    "DeviceClass", "DeviceClass", DRA_GROUP, ("v1",), "deviceclasses", DeviceClass, False, _DRA, "device_classes")
RESOURCE_CLAIM: Kind[ResourceClaim] = Kind(
    "ResourceClaim", "ResourceClaim", DRA_GROUP, ("v1",), "resourceclaims", ResourceClaim, True, _DRA,
    "resource_claims")
RESOURCE_CLAIM_TEMPLATE: Kind[ResourceClaimTemplate] = Kind(
    "ResourceClaimTemplate", "ResourceClaimTemplate", DRA_GROUP, ("v1",), "resourceclaimtemplates",
    ResourceClaimTemplate, True, _DRA, "claim_templates")
_STORAGE = IfServed("volumes that need it are not honoured", "volumes that need it are not honoured")
PERSISTENT_VOLUME_CLAIM: Kind[PersistentVolumeClaim] = Kind(
    "PersistentVolumeClaim", "PersistentVolumeClaim", "", ("v1",), "persistentvolumeclaims", PersistentVolumeClaim,
    True, _STORAGE, "volume_claims")
PERSISTENT_VOLUME: Kind[PersistentVolume] = Kind(
    "PersistentVolume", "PersistentVolume", "", ("v1",), "persistentvolumes", PersistentVolume, False, _STORAGE,
    "volumes")
STORAGE_CLASS: Kind[StorageClass] = Kind(
    "StorageClass", "StorageClass", "storage.k8s.io", ("v1",), "storageclasses", StorageClass, False, _STORAGE,
    "storage_classes")
CSI_NODE: Kind[CSINode] = Kind(
    "CSINode", "CSINode", "storage.k8s.io", ("v1",), "csinodes", CSINode, False, _STORAGE, "csi_nodes")
WORKLOAD: Kind[Workload] = Kind(
    "Workload", "Workload", SCHEDULING_GROUP, ("v1beta1", "v1alpha3", podgroup_v1alpha2.VERSION), "workloads",
    Workload, True, None, "workloads", cached=False)  # context only: controllerRef has one shape in each version

KINDS: tuple[Kind[Any], ...] = (
    POD, NODE, POD_GROUP, COSCHEDULING_POD_GROUP, PRIORITY_CLASS, NAMESPACE, POD_DISRUPTION_BUDGET,
    COMPOSITE_POD_GROUP, RESOURCE_SLICE, DEVICE_CLASS, RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE,
    PERSISTENT_VOLUME_CLAIM, PERSISTENT_VOLUME, STORAGE_CLASS, CSI_NODE, WORKLOAD,
)
"""Every kind the scheduler reads, in the order ``run`` lists and watches them."""

CACHED: tuple[Kind[Any], ...] = tuple(k for k in KINDS if k.cached)
"""The kinds the ``ClusterCache`` holds."""
