"""The end-to-end benchmark's API server: the test emulator over HTTPS, with objects as a real server's.

``python -m tests.bench.bench_e2e --serve-emulator`` runs :func:`serve` in its own process (its CPU is its
own). Two shapes (``--emulator``):

* ``real`` (the default): **HTTPS** with a self-signed CA (:func:`make_tls`; the kubeconfig carries the CA and
  a bearer token, as a cluster's does), and objects as a real kube-apiserver stores and streams them
  (``tests/bench/realistic.py``): a created pod defaulted and admitted (~2.4 KB of JSON for a minimal pod,
  ~3.9 KB for a Job's), ``managedFields`` kept up to date on every write by the manager the User-Agent names,
  the binding's ``PodScheduled`` condition with its timestamps. Every write is a watch event carrying the
  whole object, the scheduler's own (binds, intent and condition PATCHes) included.
* ``small``: plain HTTP and the objects as the client sent them (what the benchmark served before; kept so
  the two can be compared).

:class:`BenchApiServer` also forgets each request once it has been dispatched (see its docstring).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import contextvars
import datetime as dt
import gc
import ipaddress
import json
import selectors
import signal
import ssl
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp.test_utils
import attrs
import kmock
import msgspec
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.bench import realistic
from tests.integration import schemas
from tests.integration.apiserver import ApiServer
from tests.integration.conftest import RESOURCES, VERBS

ROOT = Path(__file__).resolve().parents[2]
SHAPES = ("real", "small")
TOKEN = "bench-e2e-token"
"""The bearer token in the kubeconfig (the emulator does not check it; the header is sent as to a cluster)."""

_REQUEST: contextvars.ContextVar[Any] = contextvars.ContextVar("request")
"""The request being served (aiohttp serves each connection's requests in one task, one at a time)."""


@attrs.frozen(kw_only=True)
class Listed:
    """A list being paged: the objects still to send, as (store key, kmock's ``ObjectVersion``), and what every
    page of it says (``kind``, ``apiVersion``, ``metadata.resourceVersion``)."""

    kind: str
    api_version: str
    resource_version: str
    items: list[tuple[Any, Any]]


@attrs.define(kw_only=True)
class BenchApiServer(ApiServer):
    """:class:`ApiServer` that forgets each request once it has been dispatched, and (:attr:`real`) shapes
    objects as a real server does (``tests/bench/realistic.py``).

    kmock records every request for test assertions, and dispatching a request (``request in
    payload._source``) walks that whole history through each reaction's filters: O(requests
    served so far) per request, so the stock emulator slows down quadratically (the 4th batch of
    200 node creates took 7x as long as the 1st). The benchmark asserts nothing on requests, so it
    keeps only the request being dispatched. Matching runs synchronously before the first ``await``
    of ``_handle``, and kmock appends each request just before calling ``_handle``, so the current
    request is always the last one and is never dropped too early.
    """

    real: bool = False
    """Shape objects as a real server: pods defaulted and admitted on create, ``managedFields`` on every
    write, the binding's condition with its timestamps."""

    pages: dict[str, Listed] = attrs.field(factory=dict)
    """Continue token → the rest of a paged list (:class:`Listed`)."""

    stored_json: dict[Any, tuple[Any, bytes]] = attrs.field(factory=dict)
    """Store key → (its latest version, kmock's ``ObjectVersion``; that version's JSON): each version is encoded
    once, the first time a list sends it (:func:`preload` encodes the preloaded ones), as etcd keeps every object
    serialized; a write adds a new version, so the identity check finds the bytes stale and the next list encodes
    the new one."""

    async def _serve_list(self, req: Any) -> Any:
        """``real``: a list with ``limit`` is served in pages (``continue`` / ``remainingItemCount``), every page
        from the one snapshot taken for the first, at its resourceVersion, as the server pages a list read from
        etcd; an unknown ``continue`` token answers 410 Expired. A page is its objects' stored JSON joined
        (:meth:`stored_bytes`), not encoded again."""
        limit = str(req.params.get("limit") or "")
        if not self.real or not limit.isdigit() or int(limit) <= 0:
            return await super()._serve_list(req)  # type: ignore[no-untyped-call]
        token = req.params.get("continue")
        if token and token not in self.pages:
            raise kmock.KubernetesError(status=410, reason="Expired", message="the continue token expired")
        listed = self.pages.pop(token) if token else await self._snapshot(req)
        page, rest = listed.items[:int(limit)], listed.items[int(limit):]
        meta: dict[str, Any] = {"resourceVersion": listed.resource_version}
        if rest:
            token = uuid.uuid4().hex
            self.pages[token] = attrs.evolve(listed, items=rest)
            meta.update({"continue": token, "remainingItemCount": len(rest)})
        # the real server's order (its list types' fields): metadata before items
        head = json.dumps({"kind": listed.kind, "apiVersion": listed.api_version, "metadata": meta},
                          separators=(",", ":"))
        body = b"".join((head[:-1].encode(), b',"items":[', b",".join(self.stored_bytes(k, o) for k, o in page), b"]}"))
        return kmock.Response(payload=body, headers={"Content-Type": "application/json"})

    def stored_bytes(self, key: Any, version: Any) -> bytes:
        """The JSON of ``version`` (kmock's ``ObjectVersion``, the latest of store ``key``; :attr:`stored_json`)."""
        hit = self.stored_json.get(key)
        if hit is None or hit[0] is not version:
            hit = self.stored_json[key] = (version, msgspec.json.encode(version.raw))
        return hit[1]

    async def _snapshot(self, req: Any) -> Listed:
        """The list of ``req``: its objects' store keys and latest versions, not copied (a write adds a version
        and never changes one: every write of :class:`ApiServer` works on a copy)."""
        # the declared resources first: kmock's _get_resources walks the whole store
        if req.resource not in self.resources and req.resource not in self._get_resources():
            raise kmock.KubernetesResourceNotFoundError()
        async with self._lock:
            items = [(key, o.last) for key, o in self._objects.items()
                     if key[0] == req.resource and not o.deleted and self._matches(req, o.raw)]
            return Listed(kind=f"{self._kind(req.resource)}List", items=items, resource_version=str(self.rv),
                          api_version=f"{req.resource.group}/{req.resource.version}".lstrip("/"))

    routes: dict[tuple[Any, ...] | None, Any] = attrs.field(factory=dict)
    """A request's route (:func:`_route`) → the reaction that served the last request of that route; under None,
    how many reactions there were then (a reaction added since empties it)."""

    encoded: dict[int, tuple[dict[str, Any], bytes]] = attrs.field(factory=dict)
    """``id(event)`` → (the watch event, its JSON line): each event is encoded once for all the watches it is sent
    on (the event is kept with its bytes, so its id is not reused while the entry lives); the oldest half is
    dropped past :data:`ENCODED_KEPT` entries."""

    async def _handle(self, request: Any) -> Any:
        """Dispatch as kmock does — the first reaction, in priority order, whose filters take the request — but
        remember which reaction served each route: the emulator's reactions are its fixed fallbacks, whose filters
        read only what :func:`_route` keeps (the method, the Kubernetes action, the subresource, and a GET's
        path), so a request of a route seen before goes to the same reaction without running every filter
        before it again (they cost as much as the write itself)."""
        del self._requests[:-1]
        for payload in self._payloads:
            payload._requests.clear()
        _REQUEST.set(request)
        _OWNED.set(None)
        if self.routes and self.routes.get(None) != len(self._payloads):  # a reaction added since: learn again
            self.routes.clear()
        route = _route(request)
        known = self.routes.get(route)
        if known is not None and not known._disabled.is_set():
            return await known(request)
        response = await super()._handle(request)  # type: ignore[no-untyped-call]
        served = [p for p in self._payloads if p._requests and p._requests[-1] is request]
        if len(served) == 1:
            self.routes[route] = served[0]
            self.routes[None] = len(self._payloads)
        return response

    async def _serve_watch(self, req: Any) -> Any:
        """The watch of :class:`ApiServer`, each event sent as its JSON line encoded once (:attr:`encoded`)."""
        async for event in super()._serve_watch(req):  # type: ignore[misc]
            if not isinstance(event, dict):
                yield event
                continue
            hit = self.encoded.get(id(event))
            if hit is None or hit[0] is not event:
                # compact, as the list pages (stored_bytes) and as a real API server writes both (Go's encoding/json):
                # one object's fields are the same bytes in a list and in a watch event
                hit = (event, msgspec.json.encode(event) + b"\n")
                if len(self.encoded) >= ENCODED_KEPT:
                    for key in list(self.encoded)[:ENCODED_KEPT // 2]:
                        del self.encoded[key]
                self.encoded[id(event)] = hit
            yield hit[1]

    async def _serve_create(self, req: Any) -> Any:
        if self.real and req.resource.plural == "pods" and isinstance(req.data, dict):
            pod, owned = realistic.default_pod(req.data)
            _OWNED.set(owned)
            req = attrs.evolve(req, data=pod)
        return await super()._serve_create(req)  # type: ignore[no-untyped-call]

    async def _commit(self, key: Any, body: dict[str, Any], type_: str) -> Any:
        req = _REQUEST.get(None)
        if self.real and req is not None and type_ != "DELETED":
            if req.subresource == "binding":  # the binding storage updates the pod directly: no field manager
                conditions = body["status"]["conditions"]
                conditions[-1] = realistic.scheduled_condition()
            else:
                sent = _OWNED.get() or req.data
                realistic.track_fields(body, sent, realistic.manager_of(req.headers.get("User-Agent", "")),
                                       req.subresource)
        return await super()._commit(key, body, type_)  # type: ignore[no-untyped-call]


def preload(srv: ApiServer, resource: str, bodies: Iterable[dict[str, Any]]) -> int:
    """Store ``bodies`` as if each had been created, straight into the store: no HTTP, no watch event (nothing
    watches yet), no copy. Each body is an object as the server stores it, but for what the server stamps on
    a create — ``uid``, ``creationTimestamp``, ``generation`` and ``resourceVersion``, set here. The first body
    is checked against the release's strict schema, as a create would be (the rest come from the same builder:
    a benchmark's preloaded objects differ only in names, addresses and nodes), and encoded once as lists send it
    (:attr:`BenchApiServer.stored_json`). ``resource``: ``group/version/plural`` (``v1/pods``). Returns how many
    were stored."""
    res, count, stamp = kmock.resource(resource), 0, dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    kind = srv._kind(res)
    for body in bodies:
        if not count and (errors := schemas.errors(body, f"{res.group}/{res.version}".lstrip("/"), kind,
                                                   srv.kube_version)):
            raise ValueError(f"preloaded {kind} {body['metadata'].get('name')}: {errors[:3]}")
        srv.rv += 1
        body["metadata"].update(uid=str(uuid.uuid4()), creationTimestamp=stamp, generation=1,
                                resourceVersion=str(srv.rv))
        key = res, body["metadata"].get("namespace"), body["metadata"]["name"]
        srv._objects[key] = body
        if isinstance(srv, BenchApiServer):
            srv.stored_bytes(key, srv._objects[key].last)
        count += 1
    return count


ENCODED_KEPT = 4096
"""How many encoded watch events :class:`BenchApiServer` keeps (an event goes to all its watches within moments)."""


def _route(request: Any) -> tuple[Any, ...]:
    """What the emulator's fallback reactions match a request on: method, Kubernetes action, subresource, and for
    a GET its path (discovery and ``/version`` are told apart by path)."""
    return (request.method, request.action, request.subresource,
            request.url.path if request.method == kmock.method.GET else None)


_OWNED: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("owned", default=None)
"""The fields the creator of the pod being created set (defaulted, before admission): its managedFields."""


# -- TLS --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Tls:
    """A self-signed CA (PEM) and a serving certificate for 127.0.0.1 / localhost signed by it, sent with the CA
    as its chain (PEM), and the serving key: what kube-apiserver makes for itself when given no certificate
    (``GenerateSelfSignedCertKey``, k8s.io/client-go/util/cert)."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    def write(self, workdir: Path) -> None:
        """The three PEM files the emulator process reads (:meth:`read`)."""
        for name, pem in (("ca.crt", self.ca_pem), ("apiserver.crt", self.cert_pem), ("apiserver.key", self.key_pem)):
            (workdir / name).write_bytes(pem)

    @staticmethod
    def read(workdir: Path) -> Tls:
        return Tls(*((workdir / name).read_bytes() for name in ("ca.crt", "apiserver.crt", "apiserver.key")))

    def server_context(self, workdir: Path) -> ssl.SSLContext:
        """The emulator's TLS context (TLS 1.2+, as kube-apiserver's default minimum), from the files in ``workdir``."""
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(workdir / "apiserver.crt", workdir / "apiserver.key")
        return ctx


def make_tls() -> Tls:
    """An ECDSA P-256 CA (kube-apiserver's self-signed default is ECDSA too) and a serving certificate it signs,
    valid for 127.0.0.1 and localhost."""
    now = dt.datetime.now(dt.UTC)

    def signed(subject: str, public: Any, issuer: str, signer: Any, ca: bool) -> x509.Certificate:
        builder = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
                   .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
                   .public_key(public).serial_number(x509.random_serial_number())
                   .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca:
            builder = builder.add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        return builder.sign(signer, hashes.SHA256())

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = signed("bench-e2e-ca", ca_key.public_key(), "bench-e2e-ca", ca_key, True)
    leaf = signed("127.0.0.1", key.public_key(), "bench-e2e-ca", ca_key, False)
    pem = serialization.Encoding.PEM
    return Tls(ca.public_bytes(pem), leaf.public_bytes(pem) + ca.public_bytes(pem),
               key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))


def write_kubeconfig(path: Path, url: str, tls: Tls | None) -> None:
    """A kubeconfig for ``url``: with ``tls``, its CA as ``certificate-authority-data`` and a bearer token, as a
    cluster's; else a plain-HTTP cluster without credentials."""
    cluster: dict[str, Any] = {"server": url}
    user: dict[str, Any] = {}
    if tls is not None:
        cluster["certificate-authority-data"] = base64.b64encode(tls.ca_pem).decode()
        user["token"] = TOKEN
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "emu",
        "clusters": [{"name": "emu", "cluster": cluster}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "emu", "context": {"cluster": "emu", "user": "u"}}],
    }))


# -- the emulator process ---------------------------------------------------------------------------------

def _server_class(ctx: ssl.SSLContext | None) -> type[aiohttp.test_utils.RawTestServer]:
    class Served(aiohttp.test_utils.RawTestServer):
        async def start_server(self, loop: Any = None, **kwargs: Any) -> None:
            await super().start_server(loop=loop, ssl=ctx, **kwargs)

    return Served


Preload = Callable[[bool], Iterable[tuple[str, Iterable[dict[str, Any]]]]]
"""What an emulator holds before it serves: given whether objects are shaped as a real server's, the
(``group/version/plural``, objects) to store (:func:`preload`)."""


async def serve(shape: str, workdir: Path, stock: bool = False, objects: Preload | None = None) -> None:
    """Serve until stdin closes; print the base URL as the first stdout line. ``shape``: one of :data:`SHAPES`
    (``real``: HTTPS with the CA and key in ``workdir``, made by the parent); ``stock``: the plain
    :class:`ApiServer`; ``objects``: what is stored before the URL is printed (:func:`preload`)."""
    gc.disable()  # millions of JSON dicts at 50,000 pods: full collections over them stalled requests past 30 s
    ctx = None
    if shape == "real":
        ctx = Tls.read(workdir).server_context(workdir)
    server = ApiServer() if stock else BenchApiServer(real=shape == "real")
    async with server as srv, kmock.Server(srv, server_cls=_server_class(ctx)) as http:
        for path, (kind, namespaced, subresources) in RESOURCES.items():
            srv.resources[path] = kmock.ResourceInfo(kind=kind, singular=kind.lower(), namespaced=namespaced,
                                                     verbs=VERBS, subresources=subresources)
        for resource, bodies in objects(shape == "real") if objects is not None else ():
            preload(srv, resource, bodies)
        print(str(http.url).rstrip("/"), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


@contextlib.contextmanager
def emulator(loop: str, shape: str, workdir: Path, stock: bool = False, preload: list[str] | None = None,
             ready_s: float = 30.0) -> Iterator[tuple[subprocess.Popen[str], str, Tls | None]]:
    """An emulator process (``loop``: uvloop or asyncio; ``shape``: :data:`SHAPES`; ``stock``: the plain
    :class:`ApiServer`; ``preload``: extra arguments of ``--serve-emulator`` naming what it stores before it
    serves, given ``ready_s`` seconds to do so); yields (process, base URL, its TLS or None); always stopped."""
    tls = make_tls() if shape == "real" else None
    if tls is not None:
        tls.write(workdir)
    cmd = [sys.executable, "-m", "tests.bench.bench_e2e", "--serve-emulator", "--emulator-loop", loop,
           "--emulator", shape, "--emulator-dir", str(workdir)]
    proc = subprocess.Popen(cmd + (["--stock-emulator"] if stock else []) + (preload or []), cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        yield proc, _readline_within(proc, ready_s), tls
    finally:
        stop(proc, close_stdin=True)


def _readline_within(proc: subprocess.Popen[str], timeout_s: float) -> str:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout_s):
            raise RuntimeError(f"emulator did not print its URL within {timeout_s} s")
    line = proc.stdout.readline().strip()
    if not line.startswith("http"):
        raise RuntimeError(f"emulator failed to start (exit {proc.poll()}): {line!r}")
    return line


def stop(proc: subprocess.Popen[Any], *, close_stdin: bool = False, grace_s: float = 30.0) -> int | None:
    """Ask ``proc`` to exit (stdin EOF or SIGTERM), wait ``grace_s``, then kill it. Returns the exit code."""
    if proc.poll() is None:
        if close_stdin and proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        else:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
            return None
    return proc.returncode
