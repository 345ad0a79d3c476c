"""The probe server (``scheduler.live.health``): real HTTP on a free loopback port."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web

from scheduler.live.health import HealthServer


class Readiness:
    """A switchable ``ready()`` callable."""

    def __init__(self) -> None:
        self.ok, self.reason = False, "caches not synced"

    def __call__(self) -> tuple[bool, str]:
        return self.ok, self.reason


@pytest_asyncio.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def fetch(http: aiohttp.ClientSession, server: HealthServer, path: str) -> tuple[int, str]:
    async with http.get(f"http://127.0.0.1:{server.port}{path}") as resp:
        return resp.status, await resp.text()


async def test_port_zero_binds_a_free_port_and_healthz_answers_ok(http: aiohttp.ClientSession) -> None:
    server = HealthServer("127.0.0.1", 0, Readiness())
    await server.start()
    try:
        assert server.port > 0
        assert await fetch(http, server, "/healthz") == (200, "ok")
    finally:
        await server.stop()


@pytest.mark.parametrize("reason", [
    pytest.param("caches not synced", id="caches not synced"),
    pytest.param("API scheduling.k8s.io/v1beta1 podgroups not served (enable feature gate GenericWorkload)",
                 id="podgroup API not served"),
])
async def test_readyz_is_503_with_the_reason_until_ready_then_200(http: aiohttp.ClientSession, reason: str) -> None:
    ready = Readiness()
    ready.reason = reason
    server = HealthServer("127.0.0.1", 0, ready)
    await server.start()
    try:
        assert await fetch(http, server, "/readyz") == (503, reason)
        assert await fetch(http, server, "/healthz") == (200, "ok")  # alive while not ready
        ready.ok, ready.reason = True, ""
        assert await fetch(http, server, "/readyz") == (200, "ok")
        ready.ok, ready.reason = False, "caches not synced"  # asked on every request, not cached
        assert await fetch(http, server, "/readyz") == (503, "caches not synced")
    finally:
        await server.stop()


async def test_unknown_paths_are_404(http: aiohttp.ClientSession) -> None:
    server = HealthServer("127.0.0.1", 0, Readiness())
    await server.start()
    try:
        assert (await fetch(http, server, "/metrics"))[0] == 404
    finally:
        await server.stop()


async def test_routes_added_before_start_are_served_and_after_start_are_refused(
        http: aiohttp.ClientSession) -> None:
    async def extra(request: web.Request) -> web.Response:
        return web.Response(text="extra")

    server = HealthServer("127.0.0.1", 0, Readiness())
    server.add_route("GET", "/extra", extra)
    await server.start()
    try:
        assert await fetch(http, server, "/extra") == (200, "extra")
        with pytest.raises(RuntimeError, match="after start"):
            server.add_route("GET", "/late", extra)
    finally:
        await server.stop()


async def test_stop_closes_the_port_and_is_idempotent(http: aiohttp.ClientSession) -> None:
    server = HealthServer("127.0.0.1", 0, Readiness())
    await server.start()
    await server.stop()
    with pytest.raises(aiohttp.ClientConnectionError):
        await fetch(http, server, "/healthz")
    await server.stop()


async def test_a_taken_port_raises_oserror_on_start() -> None:
    first = HealthServer("127.0.0.1", 0, Readiness())
    await first.start()
    try:
        second = HealthServer("127.0.0.1", first.port, Readiness())
        with pytest.raises(OSError):
            await second.start()
    finally:
        await first.stop()
