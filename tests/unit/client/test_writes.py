"""The writes of :class:`KubeClient` (binds, Events, PATCHes, on the aiohttp session that also carries reads): the
request it sends, the kept connections, the TLS set-up and how replies and failures map to :class:`ApiError`, against
a raw socket server (plain or TLS) that answers exactly the bytes each test gives it."""

from __future__ import annotations

import asyncio
import ssl
import tempfile
from collections.abc import Callable, Iterator

import pytest
import uvloop
from kubernetes_asyncio import client

from scheduler.client.kube import PODGROUPS, ApiError, Conflict, KubeClient, api_client
from scheduler.live.api_writer import KubeWriter
from scheduler.model.pod import Pod
from scheduler.operator.certificates import ServiceWebhookServer

Answer = Callable[[bytes], bytes | tuple[bytes, ...] | None]
"""The raw reply to one request (its bytes, head and body; a tuple: parts sent a second apart); None: say nothing."""


class RawServer:
    """A TCP server on 127.0.0.1 answering each request with ``answer(request)``; counts connections and requests."""

    def __init__(self, answer: Answer, *, close_after: bool = False, tls: ssl.SSLContext | None = None) -> None:
        self.answer = answer
        self.tls = tls
        self.close_after = close_after
        self.connections = 0
        self.requests: list[bytes] = []
        self.port = 0

    async def __aenter__(self) -> RawServer:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                reply = self.answer(request)
                if reply is None:
                    await asyncio.Event().wait()  # never answers
                elif isinstance(reply, tuple):
                    for i, part in enumerate(reply):
                        if i:
                            await asyncio.sleep(1)
                        writer.write(part)
                        await writer.drain()
                else:
                    writer.write(reply)
                await writer.drain()
                if self.close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()


def reply(status: str = "201 Created", body: bytes = b'{"kind":"Status"}', extra: bytes = b"") -> Answer:
    return lambda _: (b"HTTP/1.1 " + status.encode() + b"\r\nContent-Type: application/json\r\n" + extra
                      + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


async def test_kube_client_sends_binds_on_it_with_headers_and_maps_errors() -> None:
    answers = iter([reply()(b""), reply("409 Conflict", b'{"kind":"Status","reason":"AlreadyExists",'
                                                         b'"message":"pod p is already assigned"}')(b"")])
    async with RawServer(lambda _: next(answers)) as server:
        kube = KubeClient.for_host(f"http://127.0.0.1:{server.port}/prefix")
        kube.api.user_agent = "test-agent"
        await kube.bind("ns", "p", "node-1", uid="u-1")
        with pytest.raises(Conflict) as caught:
            await kube.bind("ns", "p", "node-1", uid="u-1")
        await kube.close()
    assert caught.value.reason == "AlreadyExists" and "already assigned" in caught.value.message
    head, _, body = server.requests[0].partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /prefix/api/v1/namespaces/ns/pods/p/binding HTTP/1.1"
    assert f"Host: 127.0.0.1:{server.port}" in lines and "User-Agent: test-agent" in lines
    assert "Content-Type: application/json" in lines and f"Content-Length: {len(body)}" in lines
    assert body == (b'{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p","namespace":"ns","uid":"u-1"},'
                    b'"target":{"apiVersion":"v1","kind":"Node","name":"node-1"}}')


async def test_kube_client_reports_a_refused_connection_as_retryable() -> None:
    async with RawServer(reply()) as server:
        port = server.port
    kube = KubeClient.for_host(f"http://127.0.0.1:{port}")
    with pytest.raises(ApiError) as caught:
        await kube.bind("ns", "p", "node-1")
    await kube.close()
    assert caught.value.status == 0 and caught.value.retryable


async def test_kube_client_decodes_a_write_reply_or_not_and_a_read_shares_its_connection() -> None:
    patched = b'{"kind":"PodGroup","metadata":{"name":"g","resourceVersion":"7"}}'
    chunked = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
               + f"{len(patched):x}\r\n".encode() + patched + b"\r\n0\r\n\r\n")
    async with RawServer(lambda _: chunked) as server:
        kube = KubeClient.for_host(f"http://127.0.0.1:{server.port}")
        obj = await kube.patch(PODGROUPS, "ns", "g", {"status": {}})
        unread = await kube.patch(PODGROUPS, "ns", "g", {"status": {}}, sub="status", reply=False)
        await kube.get(PODGROUPS, "ns", "g")
        await kube.close()
    assert obj == {"kind": "PodGroup", "metadata": {"name": "g", "resourceVersion": "7"}} and unread == {}
    assert [r.split(b" ", 1)[0] for r in server.requests] == [b"PATCH", b"PATCH", b"GET"] and server.connections == 1
    assert b"Content-Type: application/merge-patch+json" in server.requests[0]


async def test_writes_reuse_kept_connections_up_to_the_limit() -> None:
    async with RawServer(reply()) as server:
        kube = KubeClient.for_host(f"http://127.0.0.1:{server.port}", connections=3)
        for i in range(3):
            await kube.bind("ns", f"p{i}", "node-1")
        assert server.connections == 1  # one after the other: one kept connection
        await asyncio.gather(*(kube.bind("ns", f"q{i}", "node-1") for i in range(20)))
        await kube.close()
    assert len(server.requests) == 23 and server.connections <= 3


@pytest.mark.looptime
async def test_a_reply_not_read_is_still_received_whole_so_its_connection_is_kept() -> None:
    """A bind's ``Status`` is not decoded; whether its body came with the head or after it, the next write goes on the
    same connection (a reply left unread would close it)."""
    whole = reply()(b"")
    assert isinstance(whole, bytes)
    head, _, body = whole.partition(b"\r\n\r\n")
    answers = iter([(head + b"\r\n\r\n", body), whole])
    async with RawServer(lambda _: next(answers, whole)) as server:
        kube = KubeClient.for_host(f"http://127.0.0.1:{server.port}")
        loop = asyncio.get_running_loop()
        start = loop.time()
        await kube.bind("ns", "p", "node-1")  # its body a second after its head
        assert loop.time() - start == pytest.approx(1, abs=0.1)
        await kube.bind("ns", "q", "node-1")
        await kube.bind("ns", "r", "node-1")
        await kube.close()
    assert len(server.requests) == 3 and server.connections == 1


async def test_a_bearer_token_is_sent_as_the_configuration_has_it_at_each_request() -> None:
    """The token is read per request through kubernetes-asyncio's refresh hook (an exec plugin's or a rotated
    service-account token); without one no ``Authorization`` header is sent."""
    async with RawServer(reply()) as server:
        cfg = client.Configuration(host=f"http://127.0.0.1:{server.port}")
        tokens = iter(["t-1", "t-2"])

        def refresh(c: client.Configuration) -> None:
            c.api_key["BearerToken"] = next(tokens)

        cfg.api_key = {"BearerToken": "t-0"}
        cfg.api_key_prefix = {"BearerToken": "Bearer"}
        cfg.refresh_api_key_hook = refresh
        kube = KubeClient(api_client(cfg, 2), qps=0.0)
        await kube.bind("ns", "p", "node-1")
        await kube.bind("ns", "q", "node-1")
        await kube.close()
        anonymous = KubeClient.for_host(f"http://127.0.0.1:{server.port}")
        await anonymous.bind("ns", "r", "node-1")
        await anonymous.close()
    sent = [[line for line in r.split(b"\r\n") if line.lower().startswith(b"authorization:")] for r in server.requests]
    assert sent == [[b"authorization: Bearer t-1"], [b"authorization: Bearer t-2"], []]


async def test_a_malformed_or_cut_reply_is_a_retryable_failure_and_the_next_write_gets_a_new_connection() -> None:
    answers = iter([b"SPDY/3 200 OK\r\n\r\n", b"HTTP/1.1 201 Created\r\nContent-Length: 100\r\n\r\n{"])
    async with RawServer(lambda _: next(answers, reply()(b"")), close_after=True) as server:
        kube = KubeClient.for_host(f"http://127.0.0.1:{server.port}")
        for _ in range(2):
            with pytest.raises(ApiError) as caught:
                await kube.bind("ns", "p", "node-1")
            assert caught.value.status == 0 and caught.value.retryable
        await kube.bind("ns", "p", "node-1")
        await kube.close()
    assert server.connections == 3


async def test_an_error_without_a_status_body_keeps_the_reply_text_and_a_5xx_is_retryable() -> None:
    async with RawServer(reply("503 Service Unavailable", b"overloaded")) as server:
        kube = KubeClient.for_host(f"http://127.0.0.1:{server.port}")
        with pytest.raises(ApiError) as caught:
            await kube.patch(PODGROUPS, "ns", "g", {"status": {}})
        await kube.close()
    assert (caught.value.status, caught.value.reason, caught.value.message) == (503, "Service Unavailable",
                                                                                 "overloaded")
    assert caught.value.retryable


@pytest.mark.parametrize(("header", "seconds"), [
    pytest.param(b"Retry-After: 3\r\n", 3.0, id="delta-seconds"),
    pytest.param(b"Retry-After: 0\r\n", 0.0, id="zero"),
    pytest.param(b"Retry-After: Wed, 21 Oct 2026 07:28:00 GMT\r\n", None, id="http-date-ignored"),
    pytest.param(b"Retry-After: 1.5\r\n", None, id="fraction-ignored"),
    pytest.param(b"", None, id="absent")])
async def test_a_throttled_reply_carries_the_wait_its_retry_after_asks(header: bytes, seconds: float | None) -> None:
    """The API server's API Priority and Fairness answers 429 with ``Retry-After: 1``; only delta-seconds are read,
    as client-go reads them."""
    status = b'{"kind":"Status","reason":"TooManyRequests","message":"too many requests, please try again later"}'
    async with RawServer(reply("429 Too Many Requests", status, header)) as server:
        kube = KubeClient.for_host(f"http://127.0.0.1:{server.port}")
        with pytest.raises(ApiError) as caught:
            await kube.bind("ns", "p", "node-1")
        await kube.close()
    assert (caught.value.status, caught.value.reason, caught.value.retryable) == (429, "TooManyRequests", True)
    assert caught.value.retry_after_s == seconds


@pytest.mark.looptime
@pytest.mark.parametrize(("header", "waited"), [
    pytest.param(b"Retry-After: 3\r\n", 3.0, id="the-server-asks-longer-than-the-backoff"),
    pytest.param(b"Retry-After: 600\r\n", 5.0, id="capped-at-retry-max-s"),
    pytest.param(b"", None, id="no-header-the-jittered-backoff")])
async def test_the_binding_writer_waits_what_retry_after_asks_before_trying_again(header: bytes,
                                                                                  waited: float | None) -> None:
    throttled = reply("429 Too Many Requests", b'{"kind":"Status","reason":"TooManyRequests"}', header)(b"")
    answers = iter([throttled])
    async with RawServer(lambda _: next(answers, reply()(b""))) as server:
        kube = KubeClient.for_host(f"http://127.0.0.1:{server.port}")
        writer = KubeWriter(kube, retry_initial_s=0.2, retry_max_s=5.0)
        loop = asyncio.get_running_loop()
        start = loop.time()
        await writer.bind(Pod.model_validate({"metadata": {"name": "p", "namespace": "ns", "uid": "u"}}), "node-1")
        elapsed = loop.time() - start
        await kube.close()
    assert len(server.requests) == 2
    if waited is None:
        assert 0.1 <= elapsed < 0.3 + 0.05  # retry_initial_s times a factor in [0.5, 1.5)
    else:
        assert elapsed == pytest.approx(waited, abs=0.05)


@pytest.mark.looptime
async def test_a_silent_server_times_out_as_a_retryable_failure_and_its_connection_is_dropped() -> None:
    answers = iter([None])
    async with RawServer(lambda _: next(answers, reply()(b""))) as server:
        kube = KubeClient.for_host(f"http://127.0.0.1:{server.port}")
        loop = asyncio.get_running_loop()
        start = loop.time()
        with pytest.raises(ApiError) as caught:
            await kube.bind("ns", "p", "node-1")
        assert loop.time() - start == pytest.approx(30, abs=1)
        assert caught.value.status == 0 and caught.value.retryable and "TimeoutError" in caught.value.reason
        await kube.bind("ns", "p", "node-1")  # a fresh connection: the silent one was dropped
        await kube.close()
    assert server.connections == 2


async def test_a_header_with_a_line_break_is_refused_before_anything_is_sent() -> None:
    async with RawServer(reply()) as server:
        kube = KubeClient.for_host(f"http://127.0.0.1:{server.port}")
        kube.api.user_agent = "agent\r\nX-Injected: 1"
        with pytest.raises(ApiError) as caught:
            await kube.bind("ns", "p", "node-1")
        await kube.close()
    assert caught.value.status == 0 and server.requests == []


@pytest.fixture(scope="module")
def certificate() -> Iterator[tuple[str, ssl.SSLContext]]:
    """A CA file naming only ``api.example`` (not the address the server listens on) and the server's context."""
    cert_pem, key_pem = ServiceWebhookServer.build_certificate(["api.example"])
    with tempfile.NamedTemporaryFile() as certf, tempfile.NamedTemporaryFile() as keyf:
        certf.write(cert_pem)
        keyf.write(key_pem)
        certf.flush()
        keyf.flush()
        server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server.load_cert_chain(certf.name, keyf.name)
        yield certf.name, server


def tls_client(port: int, ca: str, server_name: str | None) -> KubeClient:
    cfg = client.Configuration(host=f"https://127.0.0.1:{port}")
    cfg.ssl_ca_cert = ca
    cfg.tls_server_name = server_name
    return KubeClient(api_client(cfg, 4), qps=0.0)


async def test_tls_checks_the_server_against_the_ca_and_tls_server_name(
        certificate: tuple[str, ssl.SSLContext]) -> None:
    ca, server_context = certificate
    async with RawServer(reply(), tls=server_context) as server:
        kube = tls_client(server.port, ca, "api.example")
        await kube.bind("ns", "p", "node-1")
        await kube.close()
        kube = tls_client(server.port, ca, None)  # 127.0.0.1 is not a name the certificate holds
        with pytest.raises(ApiError) as caught:
            await kube.bind("ns", "p", "node-1")
        await kube.close()
    assert len(server.requests) == 1
    assert caught.value.status == 0 and caught.value.retryable and "certificate" in caught.value.message.lower()


def test_writes_run_under_uvloop(certificate: tuple[str, ssl.SSLContext]) -> None:
    """``run`` starts the scheduler on uvloop: writes work there, over TLS, on kept connections."""
    ca, server_context = certificate

    async def main() -> tuple[int, int]:
        assert isinstance(asyncio.get_running_loop(), uvloop.Loop)
        async with RawServer(reply(), tls=server_context) as server:
            kube = tls_client(server.port, ca, "api.example")
            await asyncio.gather(*(kube.bind("ns", f"p{i}", "node-1") for i in range(5)))
            await kube.bind("ns", "last", "node-1")
            await kube.close()
        return len(server.requests), server.connections

    requests, connections = uvloop.run(main())
    assert requests == 6 and 1 <= connections <= 4
