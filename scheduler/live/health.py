"""The scheduler's HTTP probe endpoints: ``/healthz`` (liveness) and ``/readyz`` (readiness).

Kubelet probes and load balancers read these; they say nothing about scheduling decisions.

- ``GET /healthz`` answers 200 ``ok`` whenever the event loop gets to serve the request, so a
  wedged loop fails the liveness probe by timing out.
- ``GET /readyz`` asks the caller's ``ready()`` callable and answers 200 ``ok`` or 503 with its
  reason, e.g. ``caches not synced`` or ``API scheduling.k8s.io/v1beta1 podgroups not served
  (enable feature gate GenericWorkload)``. What "ready" means is the caller's business; this
  module must not import the cache, the queue or the elector.

Other endpoints (``/metrics``) are added by their owners with :meth:`HealthServer.add_route`
before :meth:`HealthServer.start`. Runs on the caller's event loop with aiohttp's server.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
ReadyCheck = Callable[[], tuple[bool, str]]


class HealthServer:
    """Serves ``/healthz`` and ``/readyz`` on ``host:port``; see the module docstring.

    ``port``: the TCP port; 0 picks a free one, and after :meth:`start` the attribute holds the
    port actually bound. ``ready``: called on every ``/readyz`` request; returns ``(True, _)`` when
    ready, else ``(False, reason)`` with a short human-readable reason. It runs on the event
    loop, so it must be quick and must not block.
    """

    def __init__(self, host: str, port: int, ready: ReadyCheck) -> None:
        self.host = host
        self.port = port
        self._ready = ready
        self._app = web.Application()
        self._app.router.add_get("/healthz", self._healthz)
        self._app.router.add_get("/readyz", self._readyz)
        self._runner: web.AppRunner | None = None

    def add_route(self, method: str, path: str, handler: Handler) -> None:
        """Serve ``handler`` for ``method path`` too (e.g. ``GET /metrics``).

        Raises RuntimeError after :meth:`start`: aiohttp freezes the routes when it starts.
        """
        if self._runner is not None:
            raise RuntimeError(f"add_route({method} {path}) after start(): routes are frozen")
        self._app.router.add_route(method, path, handler)

    async def start(self) -> None:
        """Bind and start serving; ``port`` then holds the bound port. Raises OSError if it can't bind."""
        runner = web.AppRunner(self._app, access_log=None)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self.port)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = int(runner.addresses[0][1])

    async def stop(self) -> None:
        """Stop serving and close the listening socket. Safe to call twice or before start."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _readyz(self, request: web.Request) -> web.Response:
        ok, reason = self._ready()
        if ok:
            return web.Response(text="ok")
        return web.Response(status=503, text=reason)
