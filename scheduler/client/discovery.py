"""What the scheduler lists and watches: the resources the server serves, chosen once at start-up.

:func:`watched_resources` is the discovery ``run`` does before starting one informer per resource
(:meth:`scheduler.live.driver.Scheduler.start_informers`); :func:`list_objects` lists those resources
(:func:`listed_resources`) once, page by page, for ``simulate --from-cluster`` (read-only: only ``GET``
requests).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from scheduler.client import podgroup_api
from scheduler.client.kube import (
    COMPOSITES,
    COSCHEDULING_PODGROUPS,
    CSI_NODES,
    DEVICE_CLASSES,
    DRA_RESOURCES,
    JSON,
    NAMESPACES,
    NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    POD_DISRUPTION_BUDGETS,
    PODS,
    PRIORITY_CLASSES,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    STORAGE_CLASSES,
    ApiError,
    KubeClient,
    Resource,
)

log = logging.getLogger(__name__)

COMPOSITE_GATE = "CompositePodGroup (and --runtime-config=scheduling.k8s.io/v1alpha3=true)"
"""What a cluster lacking the CompositePodGroup API must enable (named in the warning)."""


@dataclass(frozen=True, slots=True)
class GroupApis:
    """The PodGroup APIs a server serves (:func:`discover_group_apis`): the workload API's version
    (``podgroups``: v1beta1, else Kubernetes 1.36's v1alpha2, :mod:`scheduler.client.podgroup_api`; None when
    neither is), whether scheduler-plugins' ``scheduling.x-k8s.io/v1alpha1`` PodGroup CRD is served
    (``coscheduling``), and, when neither API is, what to enable (``problem``)."""

    podgroups: podgroup_api.PodGroupApi | None
    coscheduling: bool
    problem: str = ""

    @property
    def resources(self) -> tuple[Resource, ...]:
        """The PodGroup resources to read: the workload API's, then the CRD's (empty: none is served)."""
        return (*((self.podgroups.resource,) if self.podgroups is not None else ()),
                *((COSCHEDULING_PODGROUPS,) if self.coscheduling else ()))


async def discover_group_apis(kube: KubeClient) -> GroupApis:
    """Which PodGroup APIs ``kube``'s server serves (both the workload API's and the CRD may be: the two kinds are
    kept apart, ``model/coscheduling.py``). Raises :class:`~scheduler.client.kube.ApiError` when discovery fails."""
    api, reason = await podgroup_api.discover(kube)
    crd = COSCHEDULING_PODGROUPS.plural in await kube.served(COSCHEDULING_PODGROUPS.group_version)
    if api is not None or crd:
        return GroupApis(api, crd)
    return GroupApis(None, False, f"{reason}, or install scheduler-plugins' PodGroup CRD "
                                  f"({COSCHEDULING_PODGROUPS.group_version}, chart value crds.install)")


async def watched_resources(kube: KubeClient, preemption: bool, groups: GroupApis) -> list[Resource]:
    """The resources to list and watch, in this order: Pods, Nodes, the PodGroups of ``groups``, PriorityClasses,
    Namespaces
    (pod affinity's namespace selectors), PodDisruptionBudgets when ``preemption`` (policy/v1, always
    served), then those of the optional APIs the server serves — CompositePodGroups
    (``scheduling.k8s.io/v1alpha3``), the four DRA kinds (``resource.k8s.io/v1``, all or none) and the
    storage kinds (PersistentVolumeClaims and PersistentVolumes, StorageClasses and CSINodes).

    Each optional API missing or failing discovery is logged once at WARNING with what follows (trees are
    single PodGroups; pods with ResourceClaims wait; volumes that need it are not honoured). The PodGroup
    API itself is not checked here (``run`` waits for it first). Raises nothing for discovery failures.
    """
    resources = [PODS, NODES, *groups.resources, PRIORITY_CLASSES, NAMESPACES]
    if preemption:
        resources.append(POD_DISRUPTION_BUDGETS)
    try:
        if COMPOSITES.plural in await kube.served(COMPOSITES.group_version):
            resources.append(COMPOSITES)
        elif groups.podgroups is None:  # no workload API: not a gate away
            log.info("only scheduler-plugins PodGroups are served: each is a gang of its own, no trees")
        elif groups.podgroups is podgroup_api.V1ALPHA2:
            log.info("Kubernetes 1.36 has no CompositePodGroup: trees are single PodGroups")
        else:
            log.warning("API %s %s is not served (feature gate %s): trees are single PodGroups",
                        COMPOSITES.group_version, COMPOSITES.plural, COMPOSITE_GATE)
    except ApiError as exc:
        log.warning("could not discover %s: %s", COMPOSITES.group_version, exc)
    dra_api = RESOURCE_CLAIMS.group_version
    try:
        served = await kube.served(dra_api)
    except ApiError as exc:
        log.warning("could not discover %s: %s; pods with ResourceClaims wait", dra_api, exc)
    else:
        missing = [r.plural for r in DRA_RESOURCES if r.plural not in served]
        if missing:
            log.warning("API %s %s is not served: pods with ResourceClaims wait, extended resources are not "
                        "served through DRA", dra_api, ", ".join(missing))
        else:
            resources += [RESOURCE_SLICES, DEVICE_CLASSES, RESOURCE_CLAIMS, RESOURCE_CLAIM_TEMPLATES]
    # The storage kinds the volume plugins read (all GA): a server lacking one is logged once, and pods whose
    # volumes need it wait (claims) or are not limited by it (classes, CSINodes).
    for storage in ((PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES), (STORAGE_CLASSES, CSI_NODES)):
        api = storage[0].group_version
        try:
            served = await kube.served(api)
        except ApiError as exc:
            log.warning("could not discover %s: %s; volumes that need it are not honoured", api, exc)
            continue
        for res in storage:
            if res.plural in served:
                resources.append(res)
            else:
                log.warning("API %s %s is not served: volumes that need it are not honoured", api, res.plural)
    return resources


async def listed_resources(kube: KubeClient, preemption: bool) -> list[Resource]:
    """What ``simulate --from-cluster`` lists: :func:`watched_resources` with the PodGroup APIs the server serves
    (none: a WARNING says so, and pods naming a PodGroup then wait for it; ``run`` would wait for an API instead).
    Raises :class:`ApiError` when the PodGroup discovery fails."""
    groups = await discover_group_apis(kube)
    if not groups.resources:
        log.warning("%s: pods naming a PodGroup wait for it", groups.problem)
    return await watched_resources(kube, preemption, groups)


async def list_objects(kube: KubeClient, resources: list[Resource]) -> AsyncIterator[JSON]:
    """Every object of ``resources``, cluster-wide, listed once in pages (:meth:`KubeClient.list_pages`), each
    with its ``apiVersion`` and ``kind`` (a list's items may lack them: the API server sets them on the list
    only). Only ``GET`` requests are made. Raises :class:`ApiError` when a list fails."""
    for res in resources:
        async for items, _ in kube.list_pages(res):
            for item in items:
                item.setdefault("apiVersion", res.group_version)
                item.setdefault("kind", res.kind.partition(".")[0])  # the CRD's: the cache's "PodGroup.<group>"
                yield item
