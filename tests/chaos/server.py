"""The emulator, made to misbehave on purpose: :class:`ChaosApiServer`.

It is the integration tests' :class:`~tests.integration.apiserver.ApiServer` (kmock plus
resourceVersions, binding, ``/status``, watch resume and 410) with four additions, all decided in
this process, so a test knows exactly what the scheduler went through:

* **Classification.** Every request is given a :class:`Kind` (a bind, a claim status write, a
  PodGroup status patch, ...) and counted. Requests of the harness's own client (its
  ``User-Agent`` is :data:`HARNESS_AGENT`) are :attr:`Kind.HARNESS`: never faulted, never dropped,
  never counted by a kill switch.
* **Faults.** :class:`FaultPlan` answers a share of the requests of chosen kinds with 409, 429,
  500 or 503 *instead of* serving them (nothing is written; a 429 says ``Retry-After: 1``, as API Priority and
  Fairness does), drawn from a seeded RNG.
* **Kill switches.** :class:`KillSwitch` counts *committed* writes that match a predicate and, at
  the Nth, calls its ``kill`` (a SIGKILL) synchronously inside the commit, with the server's lock
  held, so nothing else lands in between. Then, for :data:`BLACKOUT_S`, the scheduler's writes
  that were already on their way are refused unapplied: a process killed after its Nth bind has
  made exactly N binds, even with 16 binds in flight.
* **Watch trouble.** With ``watch_life_s`` set, every watch stream is cut (the TCP connection
  closed) after a random lifetime; :meth:`ChaosApiServer.compactions` calls ``compact()`` at random
  intervals, so the next resume from an older resourceVersion gets an in-stream ``ERROR`` 410.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import enum
import random
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import aiohttp.web
import attrs
import kmock
from kmock import KubernetesError

from tests.integration.apiserver import ApiServer
from tests.integration.conftest import KUBELET_AFTER_S, RESOURCES, VERBS

HARNESS_AGENT = "gang-scheduler-chaos-harness"
"""``User-Agent`` of the harness's own client (:func:`tests.chaos.harness.harness_client`)."""

FAULT_CODES = (409, 429, 500, 503)
"""What an injected fault answers, drawn uniformly."""

BLACKOUT_S = 0.5
"""After a kill, the scheduler's writes still in flight are refused for this long, seconds. Shorter
than any restart (≈ 2 s of imports) and than a lease takeover, so no live process is affected."""

KEEP_REQUESTS = 8
"""Requests kmock keeps. To dispatch a request it tests each reaction's source — a filtered view of the
whole request history — for that request, which turns quadratic over a chaos run's tens of thousands of
requests. The suite never reads old requests (its switches count commits), so only the last few are
kept; the one being dispatched is always the newest (nothing awaits between its arrival and dispatch)."""

_REASONS = {409: "Conflict", 429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable"}


class Kind(enum.StrEnum):
    """What a request is, as far as the chaos suite cares."""

    BIND = "bind"
    CLAIM_STATUS = "claim-status"
    POD_STATUS = "pod-status"
    PODGROUP_STATUS = "podgroup-status"
    COMPOSITE_STATUS = "composite-status"
    EVENT = "event"
    PODGROUP_PATCH = "podgroup-patch"
    """A PATCH/PUT of a PodGroup itself (not ``/status``): the scheduler sends none (its conditions go to
    ``/status``, its durable intent rides on the Bindings)."""
    LEASE = "lease"
    WATCH = "watch"
    READ = "read"
    OTHER_WRITE = "other-write"
    HARNESS = "harness"


STATUS_KINDS = frozenset({Kind.POD_STATUS, Kind.PODGROUP_STATUS, Kind.COMPOSITE_STATUS, Kind.EVENT})
"""The reports: conditions and Events."""

SCHEDULER_WRITES = frozenset({Kind.BIND, Kind.CLAIM_STATUS, Kind.PODGROUP_PATCH, Kind.OTHER_WRITE}) | STATUS_KINDS
"""What a blackout refuses (lease writes are left alone: a standby's renewals must not fail)."""

_CURRENT: contextvars.ContextVar[tuple[Kind, kmock.Request]] = contextvars.ContextVar("chaos_request")


def classify(request: kmock.Request) -> Kind:
    """The :class:`Kind` of one request (see the class)."""
    if any(k.lower() == "user-agent" and v == HARNESS_AGENT for k, v in request.headers.items()):
        return Kind.HARNESS
    plural = request.resource.plural if request.resource is not None else None
    sub, method = request.subresource, request.method
    if method == kmock.method.GET:
        return Kind.WATCH if request.params.get("watch") in ("true", "1") else Kind.READ
    if plural == "pods" and sub == "binding":
        return Kind.BIND
    if plural == "leases":
        return Kind.LEASE
    if plural == "events":
        return Kind.EVENT
    if sub == "status":
        return {"resourceclaims": Kind.CLAIM_STATUS, "pods": Kind.POD_STATUS, "podgroups": Kind.PODGROUP_STATUS,
                "compositepodgroups": Kind.COMPOSITE_STATUS}.get(plural or "", Kind.OTHER_WRITE)
    if plural == "podgroups" and method in (kmock.method.PATCH, kmock.method.PUT):
        return Kind.PODGROUP_PATCH
    return Kind.OTHER_WRITE


@dataclass
class FaultPlan:
    """Answer ``rate`` of the requests of each kind in ``kinds`` with an error from :data:`FAULT_CODES`."""

    kinds: frozenset[Kind]
    rate: float
    rng: random.Random
    injected: collections.Counter[tuple[Kind, int]] = field(default_factory=collections.Counter)

    def pick(self, kind: Kind) -> int | None:
        """The status to answer instead of serving, or None to serve."""
        if kind not in self.kinds or self.rng.random() >= self.rate:
            return None
        code = self.rng.choice(FAULT_CODES)
        self.injected[kind, code] += 1
        return code


@dataclass
class KillSwitch:
    """At the ``after``-th committed write matching ``match``, call ``kill`` (once) and set ``fired``."""

    what: str
    match: Callable[[Kind, kmock.Request], bool]
    after: int
    kill: Callable[[], None]
    seen: int = 0
    fired: asyncio.Event = field(default_factory=asyncio.Event)

    def observe(self, kind: Kind, request: kmock.Request) -> bool:
        """Count one committed write; True when this one fired the switch."""
        if self.fired.is_set() or not self.match(kind, request):
            return False
        self.seen += 1
        if self.seen < self.after:
            return False
        self.kill()
        self.fired.set()
        return True


def kinds_of(*kinds: Kind) -> Callable[[Kind, kmock.Request], bool]:
    """A kill-switch predicate: any committed write of these kinds."""
    wanted = frozenset(kinds)
    return lambda kind, _request: kind in wanted


def binds_of(prefix: str) -> Callable[[Kind, kmock.Request], bool]:
    """A kill-switch predicate: binds of pods whose name starts with ``prefix``."""
    return lambda kind, request: kind is Kind.BIND and (request.name or "").startswith(prefix)


@attrs.define(kw_only=True)
class ChaosApiServer(ApiServer):
    """See the module docstring."""

    faults: FaultPlan | None = None
    watch_life_s: tuple[float, float] | None = None
    """Every watch stream is cut after uniform(min, max) seconds; None: streams live until the client ends them."""
    rng: random.Random = attrs.field(factory=lambda: random.Random(0))
    requests_by_kind: collections.Counter[Kind] = attrs.field(factory=collections.Counter)
    switches: list[KillSwitch] = attrs.field(factory=list)
    kills: int = 0
    dropped: int = 0
    """Writes refused during a blackout (in flight from a killed process)."""
    watch_resets: int = 0
    watch_410s: int = 0
    """In-stream ERROR 410 events served (a resume from a resourceVersion older than the last compaction)."""
    compacted: int = 0
    _blackout_until: float = 0.0

    def arm(self, switch: KillSwitch) -> KillSwitch:
        self.switches.append(switch)
        return switch

    def disarm(self, switch: KillSwitch) -> None:
        if switch in self.switches:
            self.switches.remove(switch)

    def _forget_old_requests(self) -> None:
        if len(self._requests) > 2 * KEEP_REQUESTS:
            del self._requests[:-KEEP_REQUESTS]  # the request being served is the last one: kept
            for payload in self._payloads:
                del payload._requests[:-KEEP_REQUESTS]

    async def _handle(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        self._forget_old_requests()
        kind = classify(request)
        self.requests_by_kind[kind] += 1
        code = self.faults.pick(kind) if self.faults is not None else None
        if code is not None:
            return aiohttp.web.json_response(
                {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": code,
                 "reason": _REASONS[code], "message": f"injected by the chaos suite ({kind})"}, status=code,
                headers={"Retry-After": "1"} if code == 429 else None)  # as API Priority and Fairness throttles
        token = _CURRENT.set((kind, request))
        try:
            return await super()._handle(request)
        finally:
            _CURRENT.reset(token)

    async def _commit(self, key: tuple[Any, ...], body: dict[str, Any], type_: str) -> dict[str, Any]:
        current = _CURRENT.get(None)
        loop = asyncio.get_running_loop()
        if current is not None and current[0] in SCHEDULER_WRITES and loop.time() < self._blackout_until:
            self.dropped += 1
            raise KubernetesError(status=503, reason="ServiceUnavailable",
                                  message="dropped: its sender was killed before the request reached the server")
        committed = await super()._commit(key, body, type_)
        if current is not None:
            for switch in list(self.switches):
                if switch.observe(*current):
                    self.switches.remove(switch)
                    self.kills += 1
                    self._blackout_until = loop.time() + BLACKOUT_S
        return committed

    async def _serve_watch(self, req: kmock.Request) -> AsyncIterator[Any]:
        stream = self._counted(super()._serve_watch(req))
        loop = asyncio.get_running_loop()
        deadline = None if self.watch_life_s is None else loop.time() + self.rng.uniform(*self.watch_life_s)
        try:
            while True:
                timeout = None if deadline is None else max(0.0, deadline - loop.time())
                try:
                    chunk = await asyncio.wait_for(anext(stream), timeout)
                except StopAsyncIteration:
                    return
                except TimeoutError:
                    break
                yield chunk
        finally:
            await stream.aclose()
        self.watch_resets += 1
        transport = req._raw_request.transport if req._raw_request is not None else None
        if transport is not None:
            transport.close()  # the client sees the connection drop, not a clean end of stream

    async def _counted(self, stream: AsyncGenerator[Any, None]) -> AsyncGenerator[Any, None]:
        """``stream``, counting the ERROR (410) events it serves; closes it when closed."""
        try:
            async for chunk in stream:
                if isinstance(chunk, dict) and chunk.get("type") == "ERROR":
                    self.watch_410s += 1
                yield chunk
        finally:
            await stream.aclose()

    async def compactions(self, every_s: tuple[float, float]) -> None:
        """Forever: wait uniform(min, max) seconds, then ``compact()`` (run it as a task; cancel to stop)."""
        while True:
            await asyncio.sleep(self.rng.uniform(*every_s))
            self.compact()
            self.compacted += 1

    def injected(self) -> dict[str, dict[str, int]]:
        """Faults injected so far: kind → status → count."""
        out: dict[str, dict[str, int]] = {}
        if self.faults is not None:
            for (kind, code), n in sorted(self.faults.injected.items()):
                out.setdefault(kind.value, {})[str(code)] = n
        return out


def register(server: ApiServer, resources: Iterable[str] = RESOURCES) -> None:
    """Serve the integration tests' kinds (:data:`tests.integration.conftest.RESOURCES`) for discovery."""
    for path in resources:
        kind, namespaced, subresources = RESOURCES[path]
        server.resources[path] = kmock.ResourceInfo(kind=kind, singular=kind.lower(), namespaced=namespaced,
                                                    verbs=VERBS, subresources=subresources)


@contextlib.asynccontextmanager
async def chaos_server(**kw: Any) -> AsyncIterator[ChaosApiServer]:
    """A running :class:`ChaosApiServer` on a random local port with every kind registered."""
    async with ChaosApiServer(**{"kubelet_after_s": KUBELET_AFTER_S, **kw}) as srv, kmock.Server(srv):
        register(srv)
        yield srv
