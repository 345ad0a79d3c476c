"""The binds' and Events' HTTP/1.1 connections (``scheduler.client.http1``): framing, reuse, limits and failures,
against a raw socket server that answers exactly the bytes each test gives it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.client.http1 import ProtocolError, WritePool, _dechunk
from scheduler.client.kube import PODGROUPS, ApiError, Conflict, KubeClient

Answer = Callable[[bytes], bytes | None]
"""The raw reply to one request (its bytes, head and body); None: say nothing."""

REQUEST = b"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}"


class RawServer:
    """A TCP server on 127.0.0.1 answering each request with ``answer(request)``; counts connections and requests."""

    def __init__(self, answer: Answer, *, close_after: bool = False) -> None:
        self.answer = answer
        self.close_after = close_after
        self.connections = 0
        self.requests: list[bytes] = []
        self.port = 0

    async def __aenter__(self) -> RawServer:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
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
                else:
                    writer.write(reply)
                await writer.drain()
                if self.close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def reply(status: str = "201 Created", body: bytes = b'{"kind":"Status"}', extra: bytes = b"") -> Answer:
    return lambda _: (b"HTTP/1.1 " + status.encode() + b"\r\nContent-Type: application/json\r\n" + extra
                      + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


@pytest.fixture
async def pool() -> AsyncIterator[Callable[[int, int], WritePool]]:
    made: list[WritePool] = []

    def make(port: int, limit: int = 4) -> WritePool:
        made.append(WritePool("127.0.0.1", port, ssl_context=None, server_hostname=None, limit=limit))
        return made[-1]
    yield make
    for p in made:
        p.close()


async def test_replies_framed_by_length_reuse_one_connection(pool: Callable[[int, int], WritePool]) -> None:
    async with RawServer(reply()) as server:
        writes = pool(server.port, 4)
        for _ in range(3):
            assert await writes.send(REQUEST, 5) == (201, "Created", b'{"kind":"Status"}')
        assert server.connections == 1 and len(server.requests) == 3
        assert server.requests[0] == REQUEST


async def test_a_chunked_reply_is_reassembled() -> None:
    chunked = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n")
    async with RawServer(lambda _: chunked) as server:
        writes = WritePool("127.0.0.1", server.port, ssl_context=None, server_hostname=None, limit=1)
        assert await writes.send(REQUEST, 5) == (200, "OK", b"hello, world")
        assert await writes.send(REQUEST, 5) == (200, "OK", b"hello, world")
        assert server.connections == 1
        writes.close()


async def test_an_interim_reply_is_skipped_and_a_no_content_reply_has_no_body() -> None:
    answer = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"
    async with RawServer(lambda _: answer) as server:
        writes = WritePool("127.0.0.1", server.port, ssl_context=None, server_hostname=None, limit=1)
        assert await writes.send(REQUEST, 5) == (204, "No Content", b"")
        writes.close()


async def test_connection_close_and_a_close_framed_reply_open_a_new_connection() -> None:
    async with RawServer(reply(extra=b"Connection: close\r\n"), close_after=True) as server:
        writes = WritePool("127.0.0.1", server.port, ssl_context=None, server_hostname=None, limit=1)
        for _ in range(2):
            assert (await writes.send(REQUEST, 5))[0] == 201
        assert server.connections == 2
        writes.close()
    async with RawServer(lambda _: b"HTTP/1.0 200 OK\r\n\r\nuntil the end", close_after=True) as server:
        writes = WritePool("127.0.0.1", server.port, ssl_context=None, server_hostname=None, limit=1)
        assert await writes.send(REQUEST, 5) == (200, "OK", b"until the end")
        assert await writes.send(REQUEST, 5) == (200, "OK", b"until the end")
        assert server.connections == 2
        writes.close()


async def test_at_most_limit_connections_are_opened(pool: Callable[[int, int], WritePool]) -> None:
    async with RawServer(reply()) as server:
        writes = pool(server.port, 3)
        replies = await asyncio.gather(*(writes.send(REQUEST, 5) for _ in range(20)))
        assert {r[0] for r in replies} == {201} and len(server.requests) == 20
        assert server.connections <= 3


async def test_a_malformed_reply_fails_the_request_and_drops_the_connection() -> None:
    answers = iter([b"SPDY/3 200 OK\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n"])
    async with RawServer(lambda _: next(answers, reply()(b""))) as server:
        writes = WritePool("127.0.0.1", server.port, ssl_context=None, server_hostname=None, limit=1)
        for _ in range(2):
            with pytest.raises(ProtocolError):
                await writes.send(REQUEST, 5)
        assert (await writes.send(REQUEST, 5))[0] == 201
        assert server.connections == 3
        writes.close()


async def test_a_connection_lost_before_the_reply_is_a_connection_error() -> None:
    async with RawServer(lambda _: b"HTTP/1.1 201 Created\r\nContent-Length: 100\r\n\r\n{", close_after=True) as server:
        writes = WritePool("127.0.0.1", server.port, ssl_context=None, server_hostname=None, limit=1)
        with pytest.raises(ConnectionError):
            await writes.send(REQUEST, 5)
        writes.close()


@pytest.mark.looptime
async def test_a_silent_server_times_out_and_its_connection_is_dropped() -> None:
    answers = iter([None])
    async with RawServer(lambda _: next(answers, reply()(b""))) as server:
        writes = WritePool("127.0.0.1", server.port, ssl_context=None, server_hostname=None, limit=1)
        loop = asyncio.get_running_loop()
        start = loop.time()
        with pytest.raises(TimeoutError):
            await writes.send(REQUEST, 30)
        assert loop.time() - start == pytest.approx(30, abs=1)
        assert (await writes.send(REQUEST, 30))[0] == 201  # a fresh connection: the silent one was dropped
        assert server.connections == 2
        writes.close()


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


@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=300), sizes=st.lists(st.integers(1, 40), min_size=1, max_size=8),
       cut=st.integers(0, 10_000))
def test_dechunk_reassembles_any_split_and_waits_for_the_end(body: bytes, sizes: list[int], cut: int) -> None:
    message = bytearray()
    rest = body
    for size in sizes * (len(body) // max(1, sum(sizes)) + 1):
        if not rest:
            break
        piece, rest = rest[:size], rest[size:]
        message += f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    message += b"0\r\n\r\n"
    assert _dechunk(bytearray(message)) == body
    if cut < len(message):  # any prefix is incomplete, never a wrong body
        assert _dechunk(bytearray(message[:cut])) is None


async def test_kube_client_decodes_a_write_reply_and_keeps_reads_on_aiohttp() -> None:
    patched = b'{"kind":"PodGroup","metadata":{"name":"g","resourceVersion":"7"}}'
    chunked = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
               + f"{len(patched):x}\r\n".encode() + patched + b"\r\n0\r\n\r\n")
    async with RawServer(lambda _: chunked) as server:
        kube = KubeClient.for_host(f"http://127.0.0.1:{server.port}")
        obj = await kube.patch(PODGROUPS, "ns", "g", {"status": {}})
        await kube.get(PODGROUPS, "ns", "g")  # aiohttp: a connection of its own
        await kube.close()
    assert obj == {"kind": "PodGroup", "metadata": {"name": "g", "resourceVersion": "7"}}
    assert [r.split(b" ", 1)[0] for r in server.requests] == [b"PATCH", b"GET"] and server.connections == 2
    assert b"Content-Type: application/merge-patch+json" in server.requests[0]
