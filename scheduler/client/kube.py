"""The one seam to the API server: raw JSON requests over kubernetes-asyncio's configured client.

Everything the scheduler reads or writes goes through :class:`KubeClient`, so tests run the real
client against an emulated server (kmock) and nothing else talks HTTP. Objects stay plain JSON
dicts here; the cache turns them into models. We use kubernetes-asyncio for configuration
(kubeconfig, in-cluster service account, TLS, token refresh) and its connector, but neither its
generated typed models (they do not know the v1.37 scheduling APIs, and the Binding call answers
with a ``Status`` that the typed method fails to deserialise, kubernetes-client/python#825) nor its
``call_api``: each request is sent on our own aiohttp session (:attr:`KubeClient.session`), which
never trusts the environment — the proxy the environment names for the API server is read once
(:func:`proxy_from_env`) — on a connector sized to the binds in flight (per request,
``call_api`` walks every header and body through ``sanitize_for_serialization``, and its session
reads ``~/.netrc`` and the proxy variables in worker threads while the request's timeout runs). Request bodies
are encoded by pydantic-core (``to_json``, installed with pydantic); replies are decoded by
:mod:`scheduler.client.decoding`.

Errors: every non-2xx answer raises :class:`ApiError` (or :class:`NotFound` / :class:`Conflict`);
``ApiError.retryable`` is True for 429, 5xx and transport failures, where a retry can help.
"""

from __future__ import annotations

import asyncio
import collections
import copy
import enum
import functools
import json
import logging
import os
import urllib.request
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import aiohttp
import pydantic_core
import yaml
import yarl
from kubernetes_asyncio import client, config
from pydantic import BaseModel

from scheduler.client import decoding
from scheduler.errors import ApiError as ApiError
from scheduler.errors import ClusterConfigError, TargetChanged
from scheduler.errors import Conflict as Conflict
from scheduler.errors import Gone as Gone
from scheduler.errors import NotFound as NotFound
from scheduler.errors import NotLeading as NotLeading
from scheduler.model import kinds, podgroup_v1alpha2
from scheduler.model.kinds import Kind

JSON = dict[str, Any]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Resource:
    """An API resource: group ('' for core), version, plural, scope and the cache's name of its kind."""

    group: str
    version: str
    plural: str
    namespaced: bool
    kind: str

    @staticmethod
    def of(kind: Kind[Any], version: str | None = None) -> Resource:
        """The resource of a row of :mod:`scheduler.model.kinds` in ``version`` (default: its preferred one);
        :attr:`kind` is the cache's name for it (``Kind.name``). One object per row and version, so a resource
        can be told by identity (``informer.resource is PODS``)."""
        return _resource(kind, version or kind.versions[0])

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
        """``/api/v1/namespaces/ns/pods/name/binding`` and friends."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
        if sub:
            base += f"/{sub}"
        return base


@functools.cache
def _resource(kind: Kind[Any], version: str) -> Resource:
    return Resource(kind.group, version, kind.plural, kind.namespaced, kind.name)


# The resources of rows of scheduler.model.kinds, by the names requests use.
PODS = Resource.of(kinds.POD)
NODES = Resource.of(kinds.NODE)
NAMESPACES = Resource.of(kinds.NAMESPACE)
PODGROUPS = Resource.of(kinds.POD_GROUP, "v1beta1")
PODGROUPS_V1ALPHA2 = Resource.of(kinds.POD_GROUP, podgroup_v1alpha2.VERSION)
"""Kubernetes 1.36's PodGroups (``scheduler.client.podgroup_api``: used when v1beta1 is not served)."""
COMPOSITES = Resource.of(kinds.COMPOSITE_POD_GROUP)
COSCHEDULING_PODGROUPS = Resource.of(kinds.COSCHEDULING_POD_GROUP)
"""scheduler-plugins' PodGroup CRD (``podgroups.scheduling.x-k8s.io``), read where it is served."""
RESOURCE_SLICES = Resource.of(kinds.RESOURCE_SLICE)
DEVICE_CLASSES = Resource.of(kinds.DEVICE_CLASS)
PRIORITY_CLASSES = Resource.of(kinds.PRIORITY_CLASS)
POD_DISRUPTION_BUDGETS = Resource.of(kinds.POD_DISRUPTION_BUDGET)
RESOURCE_CLAIMS = Resource.of(kinds.RESOURCE_CLAIM)
RESOURCE_CLAIM_TEMPLATES = Resource.of(kinds.RESOURCE_CLAIM_TEMPLATE)
PERSISTENT_VOLUME_CLAIMS = Resource.of(kinds.PERSISTENT_VOLUME_CLAIM)
PERSISTENT_VOLUMES = Resource.of(kinds.PERSISTENT_VOLUME)
STORAGE_CLASSES = Resource.of(kinds.STORAGE_CLASS)
CSI_NODES = Resource.of(kinds.CSI_NODE)
# Written, never read: not rows of scheduler.model.kinds.
EVENTS = Resource("events.k8s.io", "v1", "events", True, "Event")
LEASES = Resource("coordination.k8s.io", "v1", "leases", True, "Lease")

USER_AGENT = "gang-scheduler"
"""Our requests' default ``User-Agent`` (the API server's audit log and metrics name clients by it); the
client's ``api.default_headers`` (``api.user_agent``) are sent with every request."""

READ_BUFSIZE = 2**21
"""aiohttp's read buffer, bytes: kubernetes-asyncio's, as a watch event can carry an object up to etcd's 1.5 MiB."""

PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")
"""The variables through which an environment asks for a proxy: those client-go's ``http.ProxyFromEnvironment``
reads (it ignores ``ALL_PROXY``); ``NO_PROXY`` / ``no_proxy`` exempts hosts from them."""

WATCH_CONNECTIONS = 20
"""Connections kept for watches: one per informer (at most 16: the rows of :mod:`scheduler.model.kinds`
watched live, ``discovery.watched_resources``)."""

SPARE_CONNECTIONS = 8
"""Connections beyond the binds and watches: reads, leases, status writes and Events."""



def connections_for(binds: int) -> int:
    """Keep-alive connections to the API server for ``binds`` binds in flight (``--bind-concurrency``): those, plus
    :data:`WATCH_CONNECTIONS` and :data:`SPARE_CONNECTIONS`."""
    return WATCH_CONNECTIONS + binds + SPARE_CONNECTIONS


DEFAULT_CONNECTIONS = connections_for(16)
"""Connections with the default 16 binds in flight (``--bind-concurrency``)."""

LIST_PAGE_SIZE = 500
"""Objects per list page (client-go's reflector default): bounds the raw JSON held during a re-list."""

BOOKMARK_INTERVAL_S = 60.0
"""How often the API server sends a watch that asked for them a BOOKMARK event (seconds): the watch cache's
``bookmarkFrequency``, one minute (kube-apiserver ``pkg/storage/cacher``)."""
WATCH_SILENCE_S = BOOKMARK_INTERVAL_S + 30.0
"""A watch that received nothing — no event, no bookmark — for this long is taken as dropped (seconds): one
bookmark interval plus a margin for a busy server. A quiet resource on a server that sends no bookmarks is
then watched again from its resourceVersion every 1½ minutes, a cheap request."""
WATCH_DEADLINE_MARGIN_S = 30
"""How long after its ``timeoutSeconds`` the client gives up on a watch the server did not end (seconds)."""

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"


class Lane(enum.IntEnum):
    """Which requests go first when the client rate limit makes them wait (lower value first).

    ``LEASE``: the leader lease's reads and writes, ahead of everything (kube-scheduler's leader election has a client
    and a rate limiter of its own): a gang's binds never make the leader miss its renewal. ``URGENT``: what a gang's
    atomicity depends on — binds (which carry the durable intent), claim writes, evictions: a bind never waits behind
    reports.
    ``NORMAL``: reads. ``REPORT``: conditions and Events, which are repaired by the next reconciliation if late.
    """

    LEASE = -1
    URGENT = 0
    NORMAL = 1
    REPORT = 2


class RateLimiter:
    """Token bucket on the event loop's clock: ``qps`` tokens per second, at most ``burst`` saved, handed
    to waiting requests by :class:`Lane` (then first come, first served).

    Mirrors client-go's client-side rate limiter (``--kube-api-qps`` / ``--kube-api-burst``), with
    lanes in front of it so a backlog of status writes (after a restart, 500 of them) cannot delay a
    bind. A waiter that is cancelled gives its place up without using a token.
    """

    def __init__(self, qps: float, burst: int) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._tokens = float(self.burst)
        self._stamp: float | None = None
        self._waiting: dict[Lane, collections.deque[asyncio.Future[None]]] = {
            lane: collections.deque() for lane in Lane}
        self._pump: asyncio.Task[None] | None = None

    def _refill(self, now: float) -> None:
        if self._stamp is not None:
            self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.qps)
        self._stamp = now

    async def acquire(self, lane: Lane = Lane.NORMAL) -> None:
        """Wait until a token is available for ``lane`` and take it. ``qps <= 0`` disables limiting."""
        if self.qps <= 0:
            return
        loop = asyncio.get_running_loop()
        self._refill(loop.time())
        if self._tokens >= 1 and not any(self._waiting.values()):
            self._tokens -= 1
            return
        ticket: asyncio.Future[None] = loop.create_future()
        self._waiting[lane].append(ticket)
        if self._pump is None or self._pump.done():
            self._pump = loop.create_task(self._hand_out(), name="kube/rate-limiter")
        await ticket

    async def _hand_out(self) -> None:
        """Give tokens to waiters, the most urgent lane first, as they accrue."""
        loop = asyncio.get_running_loop()
        while True:
            lane = next((ln for ln in Lane if self._waiting[ln]), None)
            if lane is None:
                return
            ticket = self._waiting[lane][0]
            if ticket.done():  # cancelled while waiting: no token used
                self._waiting[lane].popleft()
                continue
            self._refill(loop.time())
            if self._tokens < 1:
                await asyncio.sleep((1 - self._tokens) / self.qps)
                continue
            self._tokens -= 1
            self._waiting[lane].popleft()
            ticket.set_result(None)


class KubeClient:
    """Raw JSON access to the API server; see the module docstring."""

    def __init__(self, api: client.ApiClient, qps: float = 50.0, burst: int = 100) -> None:
        self.api = api
        self.limiter = RateLimiter(qps, burst)
        self.fence: Callable[[], bool] | None = None
        """Whether this replica may write (it holds the leader lease; None: always): checked after a write's wait for
        the rate limiter, just before it is sent, for every write but the lease's own (``Lane.LEASE``) — a write
        queued while leading is not sent once the lease is lost (:class:`NotLeading`)."""
        self.watch_silence_s = WATCH_SILENCE_S
        """Seconds of silence after which :meth:`watch` takes a stream as dropped (:data:`WATCH_SILENCE_S`)."""
        self._session: aiohttp.ClientSession | None = None
        self._env_proxy = proxy_from_env(api.configuration.host or "")

    def fenced(self, fence: Callable[[], bool]) -> KubeClient:
        """This client for a replica that writes only while ``fence`` says it leads (:attr:`fence`), sharing this one's
        connections, HTTP client and rate limiter (call it inside the event loop)."""
        other = copy.copy(self)
        other._session = self.session
        other.fence = fence
        return other

    @property
    def session(self) -> aiohttp.ClientSession:
        """Our HTTP session, made on first use (inside the event loop) over kubernetes-asyncio's connector (its
        TLS context and connection limit, :func:`api_client`), never trusting the environment: aiohttp's
        ``trust_env`` reads ``~/.netrc`` and the proxy variables in worker threads on every request, while its
        timeout runs (the proxy the environment names is read once instead, :func:`proxy_from_env`). No cookie
        jar: nothing filters cookies per request."""
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=self.api.rest_client.pool_manager.connector, connector_owner=False,
                trust_env=False, read_bufsize=READ_BUFSIZE,
                cookie_jar=aiohttp.DummyCookieJar())  # client-go keeps no cookies either
        return self._session

    @classmethod
    async def connect(cls, kubeconfig: str | None = None, context: str | None = None, *, qps: float = 50.0,
                      burst: int = 100, connections: int = DEFAULT_CONNECTIONS) -> KubeClient:
        """Configure from a kubeconfig, else from the in-cluster service account (client-go's order).

        ``kubeconfig``: a path; only that file is used. Unset: the files in ``$KUBECONFIG``
        (``:``-separated, merged), else ``~/.kube/config``; when none of them exists, the
        in-cluster configuration (``KUBERNETES_SERVICE_HOST`` / ``KUBERNETES_SERVICE_PORT`` and the
        service-account token). Makes no request. ``connections``: keep-alive connections to the API server
        (:func:`api_client`).

        Raises :class:`~scheduler.errors.ClusterConfigError` with one line naming every path and
        variable looked at: the kubeconfig is missing or invalid (no ``current-context``, a bad
        ``context``, unreadable YAML), or none exists and the process is not in a cluster.
        """
        def one_line(exc: BaseException) -> str:
            return " ".join(str(exc).split()) or type(exc).__name__

        # What kubernetes-asyncio raises for a configuration it cannot use: ConfigException, an
        # unreadable file, bad YAML, or Type/Attribute/KeyError from a file that is not a kubeconfig.
        unusable = (config.ConfigException, OSError, yaml.YAMLError, ValueError, TypeError, AttributeError, KeyError)
        cfg = client.Configuration()
        found: str | None
        if kubeconfig:
            path = os.path.expanduser(kubeconfig)
            if not os.path.isfile(path):
                raise ClusterConfigError(f"kubeconfig {kubeconfig}: no such file")
            found, where = path, f"kubeconfig {kubeconfig}"
        else:
            listed = os.environ.get("KUBECONFIG", "")
            paths = [os.path.expanduser(p) for p in listed.split(os.pathsep) if p] or [
                os.path.expanduser(os.path.join("~", ".kube", "config"))]
            source = "from $KUBECONFIG" if listed else "$KUBECONFIG unset"
            existing = [p for p in paths if os.path.isfile(p)]
            found = os.pathsep.join(existing) if existing else None
            where = f"kubeconfig {', '.join(existing)} ({source})" if existing else \
                f"no kubeconfig at {', '.join(paths)} ({source})"
        if found is not None:
            try:
                await config.load_kube_config(config_file=found, context=context, client_configuration=cfg)
            except unusable as exc:
                if kubeconfig:
                    raise ClusterConfigError(f"{where}: {one_line(exc)}") from exc
                problem = f"{where}: {one_line(exc)}"
            else:
                return cls(api_client(cfg, connections), qps=qps, burst=burst)
        else:
            problem = where
        host, port = "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"
        if not (os.environ.get(host) and os.environ.get(port)):
            raise ClusterConfigError(f"{problem}, and not in a cluster ({host} / {port} not set)")
        try:
            config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        except unusable as exc:
            raise ClusterConfigError(f"{problem}; in-cluster configuration ({host}={os.environ[host]}): "
                                     f"{one_line(exc)}") from exc
        if found is not None:
            log.warning("%s; using the in-cluster configuration instead", problem)
        return cls(api_client(cfg, connections), qps=qps, burst=burst)

    @classmethod
    def for_host(cls, host: str, *, qps: float = 0.0, burst: int = 100,
                 connections: int = DEFAULT_CONNECTIONS) -> KubeClient:
        """An unauthenticated client for ``host`` (tests and local emulators)."""
        return cls(api_client(client.Configuration(host=host.rstrip("/")), connections), qps=qps, burst=burst)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
        await self.api.close()

    async def _send(self, method: str, path: str, query: list[tuple[str, str]] | None = None,
                    body: Any = None, content_type: str = "application/json",
                    timeout: float | aiohttp.ClientTimeout = 30.0) -> aiohttp.ClientResponse:
        """One HTTP request on the event loop: the body serialised to JSON bytes (pydantic-core), the bearer token from
        the configuration (its refresh hook runs first: exec plugins, a rotated service-account token), the
        kubeconfig's ``proxy-url`` (else the environment's proxy, :func:`proxy_from_env`) and ``tls-server-name``
        applied. kubernetes-asyncio's ``call_api`` did the same
        and more per request (every header, parameter and body walked by ``sanitize_for_serialization``)."""
        cfg, api = self.api.configuration, self.api
        headers = {**api.default_headers, "Accept": "application/json", "Content-Type": content_type}
        if api.cookie:
            headers["Cookie"] = api.cookie
        if "BearerToken" in cfg.api_key:  # the only credential kubernetes-asyncio applies, as its auth_settings does:
            # the token read through its refresh hook, without the settings dict and two coroutines of
            # update_params_for_auth per request
            headers["authorization"] = await cfg.get_api_key_with_prefix("BearerToken")
        # built encoded: paths are object names (DNS labels and subdomains) and the query is urlencoded already,
        # so aiohttp need not parse and quote it again
        url = yarl.URL(f"{cfg.host}{path}?{urlencode(query)}" if query else f"{cfg.host}{path}", encoded=True)
        try:
            resp = await self.session.request(
                method, url, headers=headers, data=None if body is None else pydantic_core.to_json(body),
                timeout=timeout if isinstance(timeout, aiohttp.ClientTimeout) else _total(timeout),
                proxy=cfg.proxy or self._env_proxy, proxy_headers=cfg.proxy_headers or None,
                server_hostname=cfg.tls_server_name or None)
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:  # ValueError: a header aiohttp refuses
            raise ApiError(0, type(exc).__name__, str(exc)) from exc
        if resp.status >= 300:
            text = await resp.text()
            resp.release()
            raise _failure(resp.status, resp.reason or "", text, retry_after(resp.headers.get("Retry-After")))
        return resp

    async def request(self, method: str, path: str, query: list[tuple[str, str]] | None = None,
                      body: Any = None, content_type: str = "application/json", lane: Lane = Lane.NORMAL,
                      reply: bool = True, check: Callable[[], str | None] | None = None) -> JSON:
        """One rate-limited request in ``lane``; returns the decoded JSON body. Raises :class:`ApiError`.
        ``check``: asked once the rate limiter let the request go, just before it is sent: a reason not to send it
        raises :class:`~scheduler.errors.TargetChanged` (a bind's target re-checked after its wait).
        ``reply=False``: the caller does not read the answer (a bind's ``Status``, a created Event): it is received
        to its end, so the connection is kept (a short reply arrives with its head, and aiohttp has then put the
        connection back already; a body still on its way is read), but not decoded, and ``{}`` is returned."""
        await self.limiter.acquire(lane)
        if self.fence is not None and method != "GET" and lane is not Lane.LEASE and not self.fence():
            raise NotLeading(f"{method} {path} not sent: this replica no longer holds the leader lease")
        if check is not None and (why := check()) is not None:
            raise TargetChanged(why)
        resp = await self._send(method, path, query, body, content_type)
        try:
            if not reply:
                if not resp.content.is_eof():  # a short reply arrives whole with its head: nothing to read
                    await resp.read()
                return {}
            data = decoding.loads(await resp.read())
        except (TimeoutError, aiohttp.ClientError, ValueError) as exc:  # body cut off or not JSON
            raise ApiError(0, type(exc).__name__, f"reading the reply of {method} {path}: {exc}") from exc
        finally:
            resp.release()
        return data if isinstance(data, dict) else {}

    async def list(self, res: Resource, namespace: str | None = None) -> tuple[list[JSON], str]:
        """All objects (of a namespace, or cluster-wide) and the list's resourceVersion."""
        data = await self.request("GET", res.path(namespace))
        return list(data.get("items") or []), str((data.get("metadata") or {}).get("resourceVersion") or "")

    async def list_pages(self, res: Resource, namespace: str | None = None, limit: int = LIST_PAGE_SIZE, *,
                         model: type[BaseModel] | None = None) -> AsyncIterator[tuple[Sequence[Any], str]]:
        """The objects in pages of at most ``limit`` (``limit`` / ``continue``, as client-go's reflector lists),
        each with the list's resourceVersion, so a caller never holds more than one page of raw objects.

        ``model``: each page is decoded straight from its bytes into ``model`` objects, a
        :class:`~scheduler.client.decoding.TypedPage` (:func:`~scheduler.client.decoding.page_decoder`); a page
        that does not validate as a whole is yielded as plain JSON objects instead, as without ``model``.
        A server that ignores ``limit`` answers everything in one page. Raises :class:`Gone` when a
        ``continue`` token expired (the caller lists again), :class:`ApiError` for other failures.
        """
        if model is not None:
            async for page in self._typed_pages(res.path(namespace), limit, decoding.page_decoder(model)):
                yield page
            return
        token = ""
        while True:
            query = [("limit", str(limit))] + ([("continue", token)] if token else [])
            data = await self.request("GET", res.path(namespace), query)
            meta = data.get("metadata") or {}
            yield list(data.get("items") or []), str(meta.get("resourceVersion") or "")
            token = str(meta.get("continue") or "")
            if not token:
                return

    async def _typed_pages(self, path: str, limit: int,
                           decode: decoding.PageDecoder) -> AsyncIterator[tuple[Sequence[Any], str]]:
        """:meth:`list_pages` with a model. The next page is asked for as soon as its ``continue`` token is read from
        the head of the reply (:func:`~scheduler.client.decoding.continue_of`), before this page is decoded and
        applied, so the server's work on it overlaps ours; a token read wrongly is never used (the decoded page's
        own token decides, and a request made with another is dropped)."""
        def query(token: str) -> list[tuple[str, str]]:
            return [("limit", str(limit))] + ([("continue", token)] if token else [])

        ahead: asyncio.Future[bytes] | None = None
        raw = await self._read("GET", path, query(""))
        try:
            while True:
                guess = decoding.continue_of(raw)
                ahead = asyncio.ensure_future(self._read("GET", path, query(guess))) if guess else None
                try:
                    page = decode(raw)
                except ValueError:  # an object the model refuses, or JSON it cannot take: the plain way
                    data = self._decoded("GET", path, raw)
                    meta = data.get("metadata") or {}
                    token = str(meta.get("continue") or "")
                    yield list(data.get("items") or []), str(meta.get("resourceVersion") or "")
                else:
                    token = page.metadata.continue_
                    yield page, page.metadata.resource_version
                if not token:
                    return
                if ahead is not None and token == guess:
                    raw = await ahead
                else:
                    _drop(ahead)
                    raw = await self._read("GET", path, query(token))
                ahead = None
        finally:
            _drop(ahead)

    async def _read(self, method: str, path: str, query: Sequence[tuple[str, str]] = ()) -> bytes:
        """One rate-limited request without a body; the reply's bytes. Raises :class:`ApiError`."""
        await self.limiter.acquire(Lane.NORMAL)
        resp = await self._send(method, path, list(query))
        try:
            return await resp.read()
        except (TimeoutError, aiohttp.ClientError) as exc:  # body cut off
            raise ApiError(0, type(exc).__name__, f"reading the reply of {method} {path}: {exc}") from exc
        finally:
            resp.release()

    @staticmethod
    def _decoded(method: str, path: str, raw: bytes) -> JSON:
        """``raw`` (a reply's body) decoded (:func:`~scheduler.client.decoding.loads`); ``{}`` for JSON that is not
        an object. Raises :class:`ApiError` when it is not JSON."""
        try:
            data = decoding.loads(raw)
        except ValueError as exc:
            raise ApiError(0, type(exc).__name__, f"reading the reply of {method} {path}: {exc}") from exc
        return data if isinstance(data, dict) else {}

    async def watch(self, res: Resource, resource_version: str, namespace: str | None = None,
                    timeout_s: int = 300, silence_s: float | None = None, *,
                    model: type[BaseModel] | None = None) -> AsyncIterator[JSON]:
        """Watch events (``{"type", "object"}``) after ``resource_version``, until the stream ends.

        The iterator simply ends when the server closes the stream or the connection drops (the
        caller resumes from the last resourceVersion it saw). Bookmarks are asked for
        (``allowWatchBookmarks``) and yielded like any event. The server ends the stream after ``timeout_s``
        (``timeoutSeconds``); the client gives up :data:`WATCH_DEADLINE_MARGIN_S` later if it has not, and
        as soon as nothing at all — not even a bookmark — arrived for ``silence_s`` seconds (default
        :attr:`watch_silence_s`): a watch that stays open but silent is taken as dropped. Raises :class:`Gone` for an
        expired resourceVersion (HTTP 410 or an in-stream ERROR 410), :class:`ApiError` for other failures.

        ``model``: each event's object is decoded straight from the line's bytes into a ``model``
        (:func:`~scheduler.client.decoding.event_decoder`), and the event carries the line as ``"line"`` (bytes) for a
        caller that needs the object as sent; an event whose object the model refuses, and every ``ERROR``, is decoded
        the plain way (its ``"object"`` plain JSON, no ``"line"``).
        """
        decode = decoding.event_decoder(model) if model is not None else None
        query = [("watch", "true"), ("resourceVersion", resource_version), ("allowWatchBookmarks", "true"),
                 ("timeoutSeconds", str(timeout_s))]
        resp = await self._send("GET", res.path(namespace), query, timeout=aiohttp.ClientTimeout(
            total=timeout_s + WATCH_DEADLINE_MARGIN_S,
            sock_read=self.watch_silence_s if silence_s is None else silence_s))
        try:
            async for line in resp.content:
                if not line.strip():
                    continue
                if decode is not None:
                    try:
                        kind, obj = decode(line)
                    except ValueError:  # not a valid object of the model (an ERROR's Status, a malformed object)
                        pass
                    else:
                        if kind != "ERROR":
                            yield {"type": kind, "object": obj, "line": line}
                            continue
                event = decoding.loads(line)
                if event.get("type") == "ERROR":
                    obj = event.get("object") or {}
                    raise _error(int(obj.get("code") or 500), str(obj.get("reason", "")), str(obj.get("message", "")))
                yield event
        except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
            log.info("watch %s dropped (%s: %s); the caller resumes from its resourceVersion",
                     res.plural, type(exc).__name__, exc)
        finally:
            resp.release()

    async def get(self, res: Resource, namespace: str | None, name: str, *, lane: Lane = Lane.NORMAL) -> JSON:
        return await self.request("GET", res.path(namespace, name), lane=lane)

    async def create(self, res: Resource, namespace: str | None, body: JSON, *, lane: Lane = Lane.NORMAL,
                     reply: bool = True) -> JSON:
        """``POST`` ``body``; the object as created (``reply=False``: ``{}``, see :meth:`request`)."""
        return await self.request("POST", res.path(namespace), body=body, lane=lane, reply=reply)

    async def replace(self, res: Resource, namespace: str | None, name: str, body: JSON, *,
                      lane: Lane = Lane.NORMAL) -> JSON:
        return await self.request("PUT", res.path(namespace, name), body=body, lane=lane)

    async def patch(self, res: Resource, namespace: str | None, name: str, body: JSON, *, sub: str | None = None,
                    content_type: str = MERGE_PATCH, lane: Lane = Lane.NORMAL, reply: bool = True) -> JSON:
        """``PATCH`` ``body`` (``content_type``: a merge patch unless told) into the object or its ``sub``-resource;
        the object as patched (``reply=False``: ``{}``, see :meth:`request`)."""
        return await self.request("PATCH", res.path(namespace, name, sub), body=body, content_type=content_type,
                                  lane=lane, reply=reply)

    async def delete(self, res: Resource, namespace: str | None, name: str, *, uid: str | None = None,
                     body: JSON | None = None, lane: Lane = Lane.NORMAL) -> JSON:
        """``DELETE`` one object; ``body``: ``DeleteOptions``. ``uid``: only if it is still that object
        (``DeleteOptions.preconditions.uid``): a pod of the same name created since answers 409 :class:`Conflict`
        instead of being deleted. No grace period is given, so the object's own (a pod's
        ``terminationGracePeriodSeconds``) applies."""
        if uid is not None:
            body = {"apiVersion": "v1", "kind": "DeleteOptions", **(body or {}), "preconditions": {"uid": uid}}
        return await self.request("DELETE", res.path(namespace, name), body=body, lane=lane)

    async def bind(self, namespace: str, name: str, node: str, uid: str | None = None,
                   annotations: Mapping[str, str] | None = None, check: Callable[[], str | None] | None = None) -> None:
        """``POST pods/{name}/binding`` (v1 Binding to a Node), in the URGENT lane; ``annotations``: the Binding's,
        which the API server merges into the pod's in the same update that sets its node; ``check``: the target's
        check, asked again once the rate limiter let the bind go (:meth:`request`). The 201 reply is a
        ``Status``, ignored.

        Raises :class:`Conflict` (already bound, gated, being deleted, stale uid) or :class:`NotFound`.
        """
        meta: JSON = {"name": name, "namespace": namespace}
        if uid:
            meta["uid"] = uid
        if annotations:
            meta["annotations"] = dict(annotations)
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": meta,
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        await self.request("POST", PODS.path(namespace, name, "binding"), body=body, lane=Lane.URGENT, reply=False,
                           check=check)

    async def served(self, group_version: str) -> set[str]:
        """Plural resource names served under ``group_version`` (``"scheduling.k8s.io/v1beta1"``); empty if none. An
        entry of the reply that is not an ``APIResource`` with a name is skipped."""
        path = f"/apis/{group_version}" if "/" in group_version else f"/api/{group_version}"
        try:
            data = await self.request("GET", path)
        except NotFound:
            return set()
        resources = data.get("resources")
        return {name for r in resources if isinstance(r, dict) and isinstance(name := r.get("name"), str)
                and "/" not in name} if isinstance(resources, list) else set()


def proxy_from_env(url: str) -> str | None:
    """The proxy the environment names for requests to ``url`` (an API server's base URL), or None: ``HTTPS_PROXY``
    for an https URL, ``HTTP_PROXY`` for an http one (either case, :data:`PROXY_VARIABLES`), unless ``NO_PROXY``
    names its host — client-go's ``http.ProxyFromEnvironment``, read once per client rather than per request.
    Credentials in the proxy URL are sent to the proxy; ``~/.netrc`` is not read."""
    proxies = urllib.request.getproxies_environment()
    parts = urlsplit(url)
    proxy = proxies.get(parts.scheme)
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):  # NO_PROXY (on Linux, as read above)
        return None
    return proxy


def api_client(cfg: client.Configuration, connections: int) -> client.ApiClient:
    """kubernetes-asyncio's client for ``cfg``, its connector limited to ``connections`` (keep-alive connections
    to the API server, watches included: :func:`connections_for`)."""
    cfg.connection_pool_maxsize = connections
    api = client.ApiClient(cfg)
    api.user_agent = USER_AGENT  # a caller may set its own (``api.user_agent``): every request sends it
    return api


def _drop(request: asyncio.Future[Any] | None) -> None:
    """Cancel a request made ahead that is no longer wanted; its failure, if it already failed, is not reported."""
    if request is None:
        return
    if request.done():
        if not request.cancelled():
            request.exception()  # retrieved: not logged as never retrieved
    else:
        request.cancel()


@functools.cache
def _total(seconds: float) -> aiohttp.ClientTimeout:
    """A request timeout of ``seconds`` in all, made once per value (a request's timeout is read, never changed)."""
    return aiohttp.ClientTimeout(total=seconds)


def retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header, or None. Only delta-seconds (a non-negative integer) is read: what
    the API server sends (``Retry-After: 1`` on a 429 from API Priority and Fairness) and all client-go reads
    (``retryAfterSeconds`` in ``rest/request.go``); an HTTP date, a fraction or garbage is ignored."""
    seconds = (value or "").strip()
    return float(int(seconds)) if seconds.isascii() and seconds.isdigit() else None


def _failure(status: int, reason: str, text: str, retry_after_s: float | None = None) -> ApiError:
    """The error of a non-2xx reply: its ``Status``'s reason and message when the body is one, else the body;
    ``retry_after_s``: the reply's ``Retry-After`` (:func:`retry_after`)."""
    message = text
    try:
        found = json.loads(text)
        if isinstance(found, dict):
            reason, message = found.get("reason", reason), found.get("message", text)
    except ValueError:
        pass
    return _error(status, str(reason), str(message), retry_after_s)


def _error(status: int, reason: str, message: str, retry_after_s: float | None = None) -> ApiError:
    kind: type[ApiError] = {404: NotFound, 409: Conflict, 410: Gone}.get(status, ApiError)
    return kind(status, reason, message, retry_after_s)
