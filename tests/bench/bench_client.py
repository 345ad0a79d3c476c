"""Benchmark of the API client's write path: client CPU per ``POST pods/{name}/binding`` over TLS.

Run with ``.venv/bin/python -m tests.bench.bench_client [--binds N] [--concurrency N] [--rounds N] [--profile]
[--token] [--transport-floor]``.

A local HTTPS server in a child process (its own CPU, not counted) answers every request as the API server
answers a bind: ``201 Created`` with a ``Status`` body. The client is :class:`~scheduler.client.kube.KubeClient`
on uvloop (as ``gang-scheduler run`` starts it), verifying the server's certificate, sending ``--binds`` binds
``--concurrency`` at a time on its aiohttp session (kept connections, as many as ``--concurrency``).

Reported: the client process's CPU time (``time.process_time``, user + system) per bind, in µs, the best of
``--rounds`` rounds (the least disturbed by other processes), and the wall time beside it. ``--profile``: one more
round under cProfile (timed in process CPU time), its top functions by own time printed after the figures.
``--transport-floor``: the same binds written as bytes on uvloop's TLS transport, without an HTTP client
(:func:`floor_round`): what TLS, the system calls and the event loop cost, below any HTTP library.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import multiprocessing
import os
import pstats
import ssl
import tempfile
import time
from typing import Any

import pydantic_core
import uvloop
from kubernetes_asyncio import client

from scheduler.client.kube import KubeClient, api_client
from scheduler.operator.certificates import ServiceWebhookServer

STATUS = (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}')
REPLY = (b"HTTP/1.1 201 Created\r\nAudit-Id: 5f0e4c2a-6b43-4a4e-9d4e-2f1d3c4b5a69\r\n"
         b"Cache-Control: no-cache, private\r\nContent-Type: application/json\r\n"
         b"Date: Wed, 02 Dec 2026 05:00:00 GMT\r\n"
         b"Content-Length: " + str(len(STATUS)).encode() + b"\r\n\r\n" + STATUS)


def content_length(head: bytes) -> int:
    """The ``Content-Length`` of a message's head (0 without one)."""
    return next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                 if line.lower().startswith(b"content-length:")), 0)


def serve(cert: str, key: str, ready: Any, port: Any) -> None:
    """The server process: answers every request on every connection with :data:`REPLY`; sets ``ready`` (a
    ``multiprocessing`` Event) once listening, its port in ``port`` (a ``multiprocessing`` Value)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)

    async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                await reader.readexactly(content_length(head))
                writer.write(REPLY)
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(one, "127.0.0.1", 0, ssl=context)
        port.value = server.sockets[0].getsockname()[1]
        ready.set()
        await asyncio.Event().wait()

    uvloop.run(main())


async def round_(port: int, ca: str, binds: int, concurrency: int, token: bool = False) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of ``binds`` binds, after a warm-up that opens the connections. ``token``: the
    configuration carries a bearer token, as kubernetes-asyncio loads a kubeconfig user's ``token``."""
    cfg = client.Configuration(host=f"https://127.0.0.1:{port}")
    cfg.ssl_ca_cert = ca
    if token:
        cfg.api_key["BearerToken"] = "Bearer bench-token"
    kube = KubeClient(api_client(cfg, concurrency), qps=0.0)
    queue = iter(range(binds))

    async def worker() -> None:
        for i in queue:
            await kube.bind("bench", f"p-{i}", "node-1", uid="4b6f3c1e-0a57-4f5e-9c83-2a9d1e7b6c40")

    queue_warm = iter(range(concurrency * 4))

    async def warm() -> None:
        for i in queue_warm:
            await kube.bind("bench", f"w-{i}", "node-1")

    await asyncio.gather(*(warm() for _ in range(concurrency)))
    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    await kube.close()
    return cpu, wall


class _Exchange(asyncio.Protocol):
    """One connection of :func:`floor_round`: each reply (``Content-Length`` framed, as :data:`REPLY`) completes
    :attr:`reply`."""

    def __init__(self) -> None:
        self.buffer = b""
        self.reply: asyncio.Future[bytes] | None = None
        self.transport: Any = None  # uvloop's TLS transport (not an asyncio.Transport subclass)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        head, sep, rest = self.buffer.partition(b"\r\n\r\n")
        length = content_length(head)
        if sep and len(rest) >= length and self.reply is not None:
            self.buffer = rest[length:]
            self.reply.set_result(rest[:length])


async def floor_round(port: int, ca: str, binds: int, concurrency: int) -> tuple[float, float]:
    """:func:`round_` without an HTTP client: each bind's request written as one buffer on uvloop's TLS transport
    and its reply framed by ``Content-Length``, ``concurrency`` connections. What the transport itself costs (TLS,
    system calls, the event loop), below any HTTP library."""
    loop = asyncio.get_running_loop()
    context = ssl.create_default_context(cafile=ca)
    exchanges = [(await loop.create_connection(_Exchange, "127.0.0.1", port, ssl=context))[1]
                 for _ in range(concurrency)]
    queue = iter(range(binds))

    async def worker(exchange: _Exchange) -> None:
        assert exchange.transport is not None
        for i in queue:
            body = pydantic_core.to_json({
                "apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": f"p-{i}", "namespace": "bench", "uid": "4b6f3c1e-0a57-4f5e-9c83-2a9d1e7b6c40"},
                "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}})
            exchange.reply = loop.create_future()
            exchange.transport.write(
                f"POST /api/v1/namespaces/bench/pods/p-{i}/binding HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
            await exchange.reply

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker(e) for e in exchanges))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    for exchange in exchanges:
        assert exchange.transport is not None
        exchange.transport.close()
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binds", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="one more round under cProfile")
    parser.add_argument("--token", action="store_true",
                        help="send a bearer token with each request, as with a kubeconfig user's token")
    parser.add_argument("--transport-floor", action="store_true",
                        help="the same binds without an HTTP client (floor_round), for comparison")
    args = parser.parse_args()
    cert_pem, key_pem = ServiceWebhookServer.build_certificate(["127.0.0.1"])
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
        with open(cert, "wb") as f:
            f.write(cert_pem)
        with open(key, "wb") as f:
            f.write(key_pem)
        ctx = multiprocessing.get_context("spawn")
        ready, port = ctx.Event(), ctx.Value("i", 0)
        server = ctx.Process(target=serve, args=(cert, key, ready, port), daemon=True)
        server.start()
        ready.wait(30)
        try:
            def one_round() -> Any:
                if args.transport_floor:
                    return floor_round(port.value, cert, args.binds, args.concurrency)
                return round_(port.value, cert, args.binds, args.concurrency, args.token)

            cpu, wall = min(uvloop.run(one_round()) for _ in range(args.rounds))
            profile = cProfile.Profile(time.process_time) if args.profile else None
            if profile is not None:
                profile.runcall(uvloop.run, round_(port.value, cert, args.binds, args.concurrency, args.token))
        finally:
            server.terminate()
    how = (" without an HTTP client (--transport-floor)" if args.transport_floor
           else ", a bearer token on each" if args.token else "")
    print(f"{args.binds} binds, {args.concurrency} at a time, over TLS{how}; best of {args.rounds} rounds; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"  client CPU {cpu / args.binds * 1e6:.0f} µs per bind, wall {wall / args.binds * 1e6:.0f} µs")
    if profile is not None:
        pstats.Stats(profile).sort_stats("tottime").print_stats(40)


if __name__ == "__main__":
    main()
