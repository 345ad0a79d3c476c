"""Keep-alive HTTP/1.1 connections for the API writes: above all those sent once per pod, a bind and its
``Scheduled`` Event; also status PATCHes, the durable intent, evictions and claims.

Why not aiohttp for these: each aiohttp request builds a ``ClientRequest`` and a ``ClientResponse``, a
``TimerContext``, a connector acquisition with its own timeout, and (on Python 3.11) a task that writes the
body, then feeds the reply through a stream reader. Over TLS against a local server that is about 250 µs
of client CPU per ``POST pods/{name}/binding``; the same request written as one buffer on a kept
connection, its reply parsed in :meth:`_Connection.data_received`, costs about 100 µs. With two such
requests per plain pod, the difference is a third of the scheduler's CPU per pod. client-go spends far
less per request (one HTTP/2 connection multiplexing them); no maintained asyncio HTTP/2 client is
available to us, so writes, whose replies are one object or a ``Status``, get this narrow path, and reads,
lists and watches (large, streamed replies) stay on aiohttp.

What it speaks: HTTP/1.1 (RFC 9112) requests with a ``Content-Length`` body, one request at a time per
connection; replies framed by ``Content-Length``, ``Transfer-Encoding: chunked`` or the end of the
connection; ``Connection: close`` honoured. It never sends ``Accept-Encoding``, so replies come
uncompressed. Not for a proxy: :class:`KubeClient` sends everything through aiohttp when one is configured.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
from typing import cast

MAX_HEAD_BYTES = 64 * 1024
"""Most bytes of a reply's status line and headers (Go's ``net/http`` server sends a few hundred)."""

MAX_BODY_BYTES = 16 * 1024 * 1024
"""Most bytes of a reply body on this path (a ``Status``, a created Event: a few KB)."""


class ProtocolError(ConnectionError):
    """The server's reply is not HTTP/1.1 as RFC 9112 frames it, or is larger than this path accepts."""


Reply = tuple[int, str, bytes]
"""(status code, reason phrase, body)."""


class _Connection(asyncio.Protocol):
    """One kept connection: :meth:`send` writes a request and resolves with its :data:`Reply`."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.reusable = True
        """False once the connection cannot carry another request (closed, ``Connection: close``, a failure)."""
        self._buf = bytearray()
        self._waiter: asyncio.Future[Reply] | None = None
        self._head: tuple[int, str, int | None, bool] | None = None  # status, reason, length, chunked

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass asyncio's

    def connection_lost(self, exc: Exception | None) -> None:
        self.reusable = False
        if self._waiter is not None and not self._waiter.done():
            if self._head is not None and self._head[2] is None and not self._head[3]:
                self._finish(bytes(self._buf))  # framed by the end of the connection
            else:
                self._waiter.set_exception(ConnectionError(f"connection lost before the reply ended: {exc}"))

    def send(self, data: bytes) -> asyncio.Future[Reply]:
        assert self.transport is not None and self._waiter is None
        self._waiter = asyncio.get_running_loop().create_future()
        self._buf.clear()
        self._head = None
        self.transport.write(data)
        return self._waiter

    def abort(self) -> None:
        """Drop the connection (a timeout, a cancelled request): its reply, if any comes, has no reader."""
        self.reusable = False
        if self.transport is not None:
            self.transport.abort()

    def data_received(self, data: bytes) -> None:
        if self._waiter is None or self._waiter.done():  # nothing asked: a server speaking out of turn
            self.abort()
            return
        self._buf += data
        try:
            self._parse()
        except ProtocolError as exc:
            self.abort()
            self._waiter.set_exception(exc)

    def _parse(self) -> None:
        buf = self._buf
        while self._head is None:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > MAX_HEAD_BYTES:
                    raise ProtocolError("reply headers too long")
                return
            lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
            del buf[:end + 4]
            version, _, rest = lines[0].partition(" ")
            code, _, reason = rest.partition(" ")
            if not version.startswith("HTTP/1.") or not code.isdigit():
                raise ProtocolError(f"not an HTTP/1.1 status line: {lines[0][:80]!r}")
            status = int(code)
            if 100 <= status < 200:  # an interim reply (we never ask for 100-continue): the real one follows
                continue
            length: int | None = None
            chunked = False
            for line in lines[1:]:
                name, _, value = line.partition(":")
                name, value = name.strip().lower(), value.strip()
                if name == "content-length":
                    if not value.isdigit():
                        raise ProtocolError(f"bad Content-Length {value[:40]!r}")
                    length = int(value)
                elif name == "transfer-encoding":
                    chunked = value.lower().endswith("chunked")
                elif name == "connection" and "close" in value.lower():
                    self.reusable = False
            if version == "HTTP/1.0":
                self.reusable = False
            if status in (204, 304):
                length, chunked = 0, False
            if chunked:
                length = None
            elif length is None:
                self.reusable = False  # framed by the end of the connection
            if (length or 0) > MAX_BODY_BYTES:
                raise ProtocolError(f"reply body of {length} bytes")
            self._head = (status, reason, length, chunked)
        _, _, length, chunked = self._head
        if chunked:
            body = _dechunk(buf)
            if body is not None:
                self._finish(body)
        elif length is not None and len(buf) >= length:
            if len(buf) > length:  # bytes past the reply: nothing was asked for them
                self.reusable = False
            self._finish(bytes(buf[:length]))
        elif len(buf) > MAX_BODY_BYTES:
            raise ProtocolError("reply body too long")

    def _finish(self, body: bytes) -> None:
        assert self._waiter is not None and self._head is not None
        waiter, (status, reason, _, _) = self._waiter, self._head
        self._waiter, self._head = None, None
        self._buf.clear()
        if not waiter.done():
            waiter.set_result((status, reason, body))


def _dechunk(buf: bytearray) -> bytes | None:
    """The body of a complete chunked message in ``buf`` (RFC 9112 §7.1: sizes in hex, extensions and trailers
    ignored), or None while it is incomplete. Raises :class:`ProtocolError` for a bad chunk size."""
    body = bytearray()
    pos = 0
    while True:
        eol = buf.find(b"\r\n", pos)
        if eol < 0:
            return None
        size_text = bytes(buf[pos:eol]).split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise ProtocolError(f"bad chunk size {size_text[:20]!r}") from None
        if size == 0:  # the last chunk; then trailers, if any, and an empty line
            return bytes(body) if buf.find(b"\r\n\r\n", eol) >= 0 else None
        start = eol + 2
        if len(buf) < start + size + 2:
            return None
        body += buf[start:start + size]
        if len(body) > MAX_BODY_BYTES:
            raise ProtocolError("reply body too long")
        pos = start + size + 2


class WritePool:
    """Up to ``limit`` kept HTTP/1.1 connections to one server (``host``: host name or address, ``port``; TLS when
    ``ssl_context`` is given, checked against ``server_hostname`` or ``host``), each carrying one request at a
    time. See the module docstring for what it speaks and why it exists.

    :meth:`send` raises ``ConnectionError`` / ``OSError`` (including ``ssl.SSLError``) for a transport
    failure or a malformed reply, and ``TimeoutError``; the caller maps them to a retryable API error.
    """

    def __init__(self, host: str, port: int, *, ssl_context: ssl.SSLContext | None, server_hostname: str | None,
                 limit: int) -> None:
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        self.server_hostname = server_hostname or (host if ssl_context is not None else None)
        self.limit = max(1, limit)
        self._idle: collections.deque[_Connection] = collections.deque()
        self._open = 0
        self._waiting: collections.deque[asyncio.Future[None]] = collections.deque()
        self._closed = False

    async def send(self, request: bytes, timeout_s: float) -> Reply:
        """Write ``request`` (request line, headers and body, as bytes) on a free connection and return the reply.
        ``timeout_s``: seconds for the whole exchange, connecting included."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        conn = self._idle_connection()
        if conn is None:
            async with asyncio.timeout_at(deadline):
                conn = await self._acquire()
        handle = loop.call_at(deadline, conn.abort)
        try:
            return await conn.send(request)
        except ConnectionError:
            if loop.time() >= deadline:
                raise TimeoutError(f"no reply within {timeout_s:.0f} s") from None
            raise
        except BaseException:  # cancelled: the reply, if it comes, has no reader
            conn.abort()
            raise
        finally:
            handle.cancel()
            self._release(conn)

    def _idle_connection(self) -> _Connection | None:
        """A kept connection still open, the most recently used first (the least likely to have been closed idle)."""
        while self._idle:
            conn = self._idle.pop()
            if conn.reusable and conn.transport is not None and not conn.transport.is_closing():
                return conn
            self._forget()
        return None

    async def _acquire(self) -> _Connection:
        while True:
            conn = self._idle_connection()
            if conn is not None:
                return conn
            if self._closed:
                raise ConnectionError("the client is closed")
            if self._open < self.limit:
                self._open += 1
                try:
                    _, conn = await asyncio.get_running_loop().create_connection(
                        _Connection, self.host, self.port, ssl=self.ssl_context,
                        server_hostname=self.server_hostname)
                except BaseException:
                    self._open -= 1
                    self._wake()
                    raise
                return conn
            ticket: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiting.append(ticket)
            try:
                await ticket
            except asyncio.CancelledError:
                if ticket.done() and not ticket.cancelled():
                    self._wake()  # woken, then cancelled: the turn passes to the next waiter
                raise

    def _release(self, conn: _Connection) -> None:
        if conn.reusable and not self._closed and conn.transport is not None and not conn.transport.is_closing():
            self._idle.append(conn)
        else:
            conn.abort()
            self._forget()
            return
        self._wake()

    def _forget(self) -> None:
        """A connection is closed: one fewer open, and a waiter may open another."""
        self._open -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiting:
            ticket = self._waiting.popleft()
            if not ticket.done():
                ticket.set_result(None)
                return

    def close(self) -> None:
        """Close every idle connection; those in use close when their request ends."""
        self._closed = True
        while self._idle:
            conn = self._idle.pop()
            conn.abort()
            self._open -= 1
        while self._waiting:
            ticket = self._waiting.popleft()
            if not ticket.done():
                ticket.set_result(None)
