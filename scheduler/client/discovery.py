"""What the scheduler lists and watches: the resources the server serves.

:func:`watched_resources` is the discovery ``run`` does before starting one informer per resource
(:meth:`scheduler.live.watches.Watches.start`), and again every ``--api-discovery-interval-s`` for what
was not served (:meth:`scheduler.live.watches.Watches.discover_more`); :func:`list_objects` lists those resources
(:func:`listed_resources`) once, page by page, for ``simulate --from-cluster`` (read-only: only ``GET``
requests).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.client import podgroup_api
from scheduler.client.kube import COSCHEDULING_PODGROUPS, JSON, ApiError, KubeClient, Resource
from scheduler.model import kinds
from scheduler.model.kinds import IfServed, Kind, Watch
from scheduler.model.scheduling import API_GROUP as WORKLOAD_API_GROUP

log = logging.getLogger(__name__)


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


def unread_apis(groups: GroupApis, every_s: float, unlisted: Mapping[str, str] | None = None) -> dict[str, str]:
    """PodGroup API group → why a pod that links to one of its PodGroups waits, for the APIs ``groups`` does not
    read (:attr:`~scheduler.groups.index.GroupIndex.unread_apis`): not served — ``run`` looks for them again every
    ``every_s`` seconds (``--api-discovery-interval-s``) and reads them once they are served — or served but its
    list failed (``unlisted``: API group → why)."""
    unlisted = unlisted or {}
    again = f"looked for again every {every_s:g} s"
    crd = f"scheduler-plugins' PodGroup CRD ({COSCHEDULING_PODGROUPS.group_version})"
    out = {}
    for group, what, read in ((WORKLOAD_API_GROUP, f"the {WORKLOAD_API_GROUP} PodGroup API", groups.podgroups),
                              (COSCHEDULING_PODGROUPS.group, crd, groups.coscheduling)):
        if not read:
            out[group] = (f"{what} is served but could not be listed ({unlisted[group]}; tried again later)"
                          if group in unlisted else f"{what} is not served ({again})")
    return out


GROUP_KINDS = frozenset({kinds.POD_GROUP.name, kinds.COSCHEDULING_POD_GROUP.name})
"""The cache's names of the PodGroup kinds (the workload API's, scheduler-plugins')."""


def together(res: Resource) -> list[Resource]:
    """The resources watched all or none with ``res``, itself included, in table order (DRA's four kinds:
    :attr:`~scheduler.model.kinds.IfServed.all_or_none`); ``[res]`` for any other."""
    row = next((k for k in kinds.KINDS if k.name == res.kind), None)
    if row is None or not isinstance(row.live, IfServed) or not row.live.all_or_none:
        return [res]
    return [Resource.of(k) for k in kinds.KINDS if k.live == row.live and k.api_version() == row.api_version()]


def merged(known: GroupApis, found: GroupApis) -> GroupApis:
    """The PodGroup APIs to read once discovery ``found`` more than ``known`` (read since start): an API is added,
    never dropped or changed (a workload API read as v1.36's v1alpha2 stays so after an upgrade serves v1beta1 too,
    until a restart)."""
    return GroupApis(known.podgroups or found.podgroups, known.coscheduling or found.coscheduling)


async def discover_group_apis(kube: KubeClient, known: GroupApis | None = None) -> GroupApis:
    """Which PodGroup APIs ``kube``'s server serves (both the workload API's and the CRD may be: the two kinds are
    kept apart, ``model/coscheduling.py``). ``known``: the APIs read already (``run`` looking again), taken as served
    without asking again — what is read is never dropped (:func:`merged`). Raises
    :class:`~scheduler.client.kube.ApiError` when discovery fails."""
    known = known or GroupApis(None, False)
    api, reason = (known.podgroups, "") if known.podgroups is not None else await podgroup_api.discover(kube)
    crd = known.coscheduling or COSCHEDULING_PODGROUPS.plural in await kube.served(
        COSCHEDULING_PODGROUPS.group_version)
    if api is not None or crd:
        return GroupApis(api, crd)
    return GroupApis(None, False, f"{reason}, or install scheduler-plugins' PodGroup CRD "
                                  f"({COSCHEDULING_PODGROUPS.group_version}, chart value crds.install)")


async def watched_resources(kube: KubeClient, preemption: bool, groups: GroupApis, *, quiet: bool = False,
                            watched: Collection[Resource] = ()) -> list[Resource]:
    """The resources to list and watch: the rows of :mod:`scheduler.model.kinds` that ``run`` watches,
    in table order, each as its :attr:`~scheduler.model.kinds.Kind.live` says — always; the PodGroups of ``groups``;
    with ``preemption`` (PodDisruptionBudgets); or when API discovery finds it served (:class:`IfServed`:
    CompositePodGroups, the four DRA kinds, all or none, and the storage kinds).

    Discovery asks once per API group/version. Each optional API missing or failing discovery is logged once at
    WARNING with what follows (trees are single PodGroups; pods with ResourceClaims wait; volumes that need it are
    not honoured); ``quiet``: nothing is logged (``run`` looking again for what was missing). ``watched``: the
    resources watched already, taken as served without asking (``run`` never stops watching a kind it listed), so
    looking again asks only about what is not watched. The PodGroup API itself is not checked here (``run`` waits
    for it first). Raises nothing for discovery failures.
    """
    resources: list[Resource] = []
    served: dict[str, set[str] | None] = {}  # group/version -> plurals served; None: discovery failed
    done: set[tuple[str, IfServed]] = set()
    for kind in kinds.KINDS:
        live = kind.live
        if live is Watch.ALWAYS or (live is Watch.PREEMPTION and preemption):
            resources.append(Resource.of(kind))
        elif live is Watch.GROUP_API:
            resources += [r for r in groups.resources if r.kind == kind.name]
        elif isinstance(live, IfServed):
            api = kind.api_version()
            if live.all_or_none:
                if (api, live) in done:
                    continue
                done.add((api, live))
            these = together(Resource.of(kind))
            if all(r in watched for r in these):
                resources += these
                continue
            if api not in served:
                try:
                    served[api] = await kube.served(api)
                except ApiError as exc:
                    served[api] = None
                    if not quiet:
                        log.warning("could not discover %s: %s%s", api, exc,
                                    f"; {live.undiscovered}" if live.undiscovered else "")
            plurals = served[api]
            if plurals is None:
                continue
            missing = [r.plural for r in these if r.plural not in plurals]
            if not missing:
                resources += these
            elif quiet:
                continue
            elif (absent := _absent(kind, groups)) is not None:
                log.info("%s", absent)
            else:
                log.warning("API %s %s is not served%s: %s", api, ", ".join(missing),
                            f" (feature gate {live.gate})" if live.gate else "", live.unserved)
    return resources


def _absent(kind: Kind[Any], groups: GroupApis) -> str | None:
    """Why ``kind`` cannot be served by a cluster that serves ``groups`` (logged at INFO: not a gate away), or None:
    CompositePodGroups where no workload API is served, or on Kubernetes 1.36 (they are v1.37's)."""
    if kind is not kinds.COMPOSITE_POD_GROUP:
        return None
    if groups.podgroups is None:
        return "only scheduler-plugins PodGroups are served: each is a gang of its own, no trees"
    if groups.podgroups is podgroup_api.V1ALPHA2:
        return "Kubernetes 1.36 has no CompositePodGroup: trees are single PodGroups"
    return None


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
