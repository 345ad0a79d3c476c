"""What ``run`` lists and watches: the PodGroup APIs and kinds the server serves, one informer each.

:class:`Watches` finds the PodGroup APIs at start (``run`` is not ready until one is served), starts one informer per
resource :func:`~scheduler.client.discovery.watched_resources` chooses and waits for their first lists. Then, every
``--api-discovery-interval-s``, it looks again for what is not watched (:meth:`Watches.discover_more`): a kind found
served is listed before anything more is scheduled (:meth:`Watches.synced`), and one whose first list is refused or
too slow is left out and tried again after a backoff. Kinds are only ever added.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from scheduler.cache.cluster import ClusterCache
from scheduler.client.discovery import (
    GROUP_KINDS,
    GroupApis,
    discover_group_apis,
    merged,
    together,
    unread_apis,
    watched_resources,
)
from scheduler.client.kube import COSCHEDULING_PODGROUPS, ApiError, KubeClient, Resource
from scheduler.client.podgroup_api import V1BETA1, PodGroupApi
from scheduler.collector import collect_less_often, paused_then_frozen
from scheduler.config import Settings
from scheduler.framework.events import ClusterEvent
from scheduler.live.informers import DECODED_AS_MODELS, Informer
from scheduler.live.metrics import Metrics
from scheduler.live.tasks import Spawn
from scheduler.live.unhonoured import UnhonouredFields
from scheduler.queue import CLOCK_SLACK_S

log = logging.getLogger(__name__)

DISCOVERY_RETRY_S = 10.0
"""Pause between API discovery attempts while the PodGroup API is missing, seconds."""
UNLISTABLE_BACKOFF_DOUBLINGS = 4
"""A kind whose first list keeps failing is tried again after the discovery interval doubled with each failure, at
most this many times (16 × 30 s = 8 min)."""
FIRST_LIST_TIMEOUT_S = 60.0
"""How long scheduling waits for the first list of a kind found served after start before that kind is left unwatched
until the next discovery, seconds (its lists at 15,000 nodes take a few seconds)."""


class Watches:
    """The informers of ``run`` and the APIs they read (see the module docstring). ``on_change``: the informers'
    callback (the cache's events); ``wake``: wakes the scheduling loop."""

    def __init__(self, settings: Settings, kube: KubeClient, cache: ClusterCache, metrics: Metrics,
                 unhonoured: UnhonouredFields, spawn: Spawn, on_change: Callable[[list[ClusterEvent]], None],
                 wake: Callable[[], None]) -> None:
        self.settings = settings
        self.kube = kube
        self.cache = cache
        self.metrics = metrics
        self.unhonoured = unhonoured
        self.spawn = spawn
        self.on_change = on_change
        self.wake = wake
        self.informers: list[Informer] = []
        self.api_problem: str | None = "API discovery has not run yet"
        """Why ``run`` is not ready for want of a PodGroup API (None once one is served)."""
        self.unlistable: dict[Resource, tuple[int, str, float]] = {}
        """Kinds found served after start whose first list failed: how many times in a row, the last failure, and the
        loop time before which they are not tried again (:meth:`discover_more`)."""
        self.groups = GroupApis(None, False)
        """The PodGroup APIs read (:meth:`discover`): the workload API's (:attr:`podgroups`), scheduler-plugins'."""

    @property
    def podgroups(self) -> PodGroupApi:
        """The workload API's PodGroup version served (v1beta1, else v1.36's v1alpha2; v1beta1 until
        :meth:`discover` found it, or where only scheduler-plugins' CRD is served)."""
        return self.groups.podgroups or V1BETA1

    def synced(self) -> bool:
        """Every informer has read its first list (one added since start may still be listing)."""
        return all(i.synced.is_set() for i in self.informers)

    def unsynced(self) -> list[str]:
        """``group/version/resource`` of each informer whose first list is not read yet."""
        return [f"{i.resource.group_version}/{i.resource.plural}" for i in self.informers if not i.synced.is_set()]

    async def discover(self, stop: asyncio.Event) -> bool:
        """Wait until a PodGroup API is served — the workload API's (v1beta1 preferred, else v1.36's v1alpha2:
        ``podgroup_api``) or scheduler-plugins' CRD (:attr:`groups` says which are); returns False if stopped
        first."""
        logged = False
        while not stop.is_set():
            try:
                groups = await discover_group_apis(self.kube)
            except ApiError as exc:
                groups = GroupApis(None, False, f"API discovery failed: {exc}")
            if groups.resources:
                self.groups = groups
                self._apis_read()
                log.info("reading PodGroups as %s", ", ".join(r.group_version for r in groups.resources))
                self.api_problem = None
                return True
            self.api_problem = groups.problem
            if not logged:
                log.error("%s; not ready, retrying every %.0f s", groups.problem, DISCOVERY_RETRY_S)
                logged = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), DISCOVERY_RETRY_S)
        return False

    async def start(self) -> None:
        """One informer per resource served and watched (:func:`watched_resources`); returns once all have synced."""
        for res in await watched_resources(self.kube, self.settings.preemption, self.groups):
            self._watch(res)  # kept until stopped: at start, the caches sync or the scheduler is never ready
        with paused_then_frozen():  # the first lists make the objects the process keeps
            await asyncio.gather(*(i.synced.wait() for i in self.informers))
        collect_less_often()  # what is built later is mostly short-lived (requests, events) or kept (cache models)
        log.info("caches synced: %d nodes, %d pods, %d podgroups", len(self.cache.nodes),
                 len(self.cache.pods), sum(len(self.cache.objects[r.kind]) for r in self.groups.resources))

    def _watch(self, res: Resource) -> tuple[Informer, asyncio.Task[None]]:
        """Start the informer of ``res``, feeding the cache; returns it and its task."""
        decode = (self.podgroups.informer_decode(self.unhonoured.podgroup_problems)
                  if res is self.podgroups.resource else None)
        model = DECODED_AS_MODELS.get(res.kind) if decode is None else None
        informer = Informer(self.kube, res, self.cache, self.on_change, decode=self.unhonoured.checked(res, decode),
                            model=model, see=self.unhonoured.seen(res) if model is not None else None)
        self.informers.append(informer)
        self.metrics.track_informer(res.group, res.plural, informer)
        return informer, self.spawn(informer.run(), f"informer/{res.plural}")

    async def rediscover(self) -> None:
        """Every ``--api-discovery-interval-s``, :meth:`discover_more`; a failed discovery — whatever it raised: a
        reply of a shape not expected too — is logged and tried again at the next interval (the informers report
        the API server's state meanwhile)."""
        every = self.settings.api_discovery_interval_s
        while True:
            await asyncio.sleep(every)
            try:
                await self.discover_more()
            except ApiError as exc:
                log.warning("API discovery failed: %s; trying again in %g s", exc, every)
            except Exception:  # a reply of a shape not expected: never the end of looking again
                log.exception("API discovery failed; trying again in %g s", every)

    async def discover_more(self) -> list[Resource]:
        """Watch what the server serves now and did not before: a PodGroup API (scheduler-plugins' CRD, or the
        workload API where only the CRD was read; :func:`~scheduler.client.discovery.merged`) and the kinds read
        where served (CompositePodGroups, DRA's, storage's). Their informers feed the cache as the first ones did,
        and the pods that waited for an API's PodGroups are judged again once they have listed. No root is scheduled
        until then (``Scheduler.schedule_ready`` asks :meth:`synced`), as at start: a kind half listed may hold what
        a plan would take (DRA's claims, their devices). A kind whose first list is refused (401, 403, 404) or not
        read within :data:`FIRST_LIST_TIMEOUT_S` is not watched (:meth:`_first_lists`) and tried again after a
        backoff that doubles with each failure (:attr:`unlistable`). Never stops watching a kind once listed, so only
        what is not watched is asked about (nothing, once everything the server can serve is watched).
        Returns the resources now watched (logged at INFO). Raises :class:`~scheduler.client.kube.ApiError` when
        discovery fails."""
        found = merged(self.groups, await discover_group_apis(self.kube, self.groups))
        now = asyncio.get_running_loop().time()
        watched = {i.resource for i in self.informers}
        served = await watched_resources(self.kube, self.settings.preemption, found, quiet=True, watched=watched)
        for gone in self.unlistable.keys() - set(served):  # no longer served: "not served" is the news now
            del self.unlistable[gone]
        added = [r for r in served
                 if r not in watched and self.unlistable.get(r, (0, "", now))[2] <= now + CLOCK_SLACK_S]
        self.groups = found  # before the informers start: the PodGroup informer decodes the version found
        dropped = await self._first_lists([self._watch(res) for res in added])
        for res in added:
            if res not in dropped:
                self.unlistable.pop(res, None)
                log.info("API %s %s is served now: watching it", res.group_version, res.plural)
        watching = {i.resource for i in self.informers}  # what is read: not a kind dropped or waiting out its backoff
        self.groups = GroupApis(found.podgroups if found.podgroups and found.podgroups.resource in watching else None,
                                COSCHEDULING_PODGROUPS in watching)
        self._apis_read()
        self.wake()
        return [res for res in added if res not in dropped]

    def _apis_read(self) -> None:
        """Tell the group index which PodGroup APIs are not read and why (not served, or served but not listable:
        :attr:`unlistable`)."""
        unlisted = {res.group: why for res, (_, why, _) in self.unlistable.items() if res.kind in GROUP_KINDS}
        self.cache.groups.set_unread_apis(unread_apis(self.groups, self.settings.api_discovery_interval_s, unlisted))

    async def _first_lists(self, started: list[tuple[Informer, asyncio.Task[None]]]) -> set[Resource]:
        """Wait until each informer of ``started`` has read its first list, has had it refused or
        :data:`FIRST_LIST_TIMEOUT_S` has passed. Stop the ones that have not listed — and the others of a kind read
        all or none with one of them (DRA's four: a device view without the claims would give their devices again)
        — drop what they added to the cache, log why (WARNING) and note when to try again (:attr:`unlistable`).
        Returns their resources."""
        async def settle(informer: Informer) -> None:
            waits = {asyncio.ensure_future(informer.synced.wait()), asyncio.ensure_future(informer.refused.wait())}
            await asyncio.wait(waits, timeout=FIRST_LIST_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED)
            for waiting in waits:
                waiting.cancel()

        await asyncio.gather(*(settle(informer) for informer, _ in started))
        failed = {i.resource: i.failure or f"not listed within {FIRST_LIST_TIMEOUT_S:g} s"
                  for i, _ in started if not i.synced.is_set()}
        dropped = {i.resource for i, _ in started if failed.keys() & set(together(i.resource))}  # failed ones too
        now = asyncio.get_running_loop().time()
        for informer, task in started:
            res = informer.resource
            if res not in dropped:
                continue
            task.cancel()
            self.informers.remove(informer)
            self.metrics.untrack_informer(res.group, res.plural, informer)
            for other in self.informers:  # PodGroups v1beta1 and v1alpha2 share group and plural: the one left counts
                if (other.resource.group, other.resource.plural) == (res.group, res.plural):
                    self.metrics.track_informer(res.group, res.plural, other)
            self.on_change(self.cache.relist(res.kind).finish())  # nothing half listed stays
            why = failed.get(res) or "listed, but a kind read with it was not"
            failures = self.unlistable.get(res, (0, "", 0.0))[0] + 1
            wait = self.settings.api_discovery_interval_s * 2 ** min(failures - 1, UNLISTABLE_BACKOFF_DOUBLINGS)
            self.unlistable[res] = (failures, why, now + wait)
            log.warning("API %s %s is served but could not be watched (%s): tried again in %g s",
                        res.group_version, res.plural, why, wait)
        return dropped
