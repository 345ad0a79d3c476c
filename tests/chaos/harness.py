"""One variant's bench: the chaos server, the harness's client, the scheduler processes, the sampler, the report.

``async with open_harness("kill-bind", log_dir) as h:`` starts a :class:`ChaosApiServer`, a
client marked as the harness's (its writes are never faulted or dropped), a kubeconfig for the
subprocesses and the :class:`HalfGangSampler`. On the way out every process is stopped (SIGTERM,
then SIGKILL), the sampler cancelled, and the server's counters copied into ``h.report`` — also
when the variant failed, so its figures still reach the summary.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from pathlib import Path

from scheduler.client.kube import KubeClient
from tests.chaos.atrest import Verdict, settle
from tests.chaos.observe import HalfGangSampler, partial, read_cluster
from tests.chaos.process import SchedulerProcess, write_kubeconfig
from tests.chaos.report import VariantReport
from tests.chaos.server import HARNESS_AGENT, ChaosApiServer, KillSwitch, chaos_server

DEFAULT_SEED = 12
DEFAULT_SETTLE_S = 20.0
TRACEBACKS = "no traceback in the scheduler's log"
NO_EXIT = "the scheduler never exited on its own"
KILLS_FIRED = "every kill switch fired (the writes it waited for came)"

OpenVariant = Callable[[str], contextlib.AbstractAsyncContextManager["Harness"]]
"""The ``chaos`` fixture: ``async with chaos("variant") as h``."""


def base_seed() -> int:
    return int(os.environ.get("CHAOS_SEED", DEFAULT_SEED))


def settle_s() -> float:
    return float(os.environ.get("CHAOS_SETTLE_S", DEFAULT_SETTLE_S))


def harness_client(url: str) -> KubeClient:
    """Our real client, unlimited, announcing itself as the harness (see ``server.classify``)."""
    kube = KubeClient.for_host(url)
    kube.api.user_agent = HARNESS_AGENT
    return kube


class Harness:
    """See the module docstring. ``rng`` is the variant's own, seeded from ``CHAOS_SEED`` and its name."""

    def __init__(self, variant: str, server: ChaosApiServer, kube: KubeClient, log_dir: Path) -> None:
        seed = base_seed()
        self.report = VariantReport(variant, seed)
        self.rng = random.Random(f"{seed}/{variant}")
        self.server = server
        self.server.rng = random.Random(f"{seed}/{variant}/server")
        self.kube = kube
        self.log_dir = log_dir
        self.kubeconfig = write_kubeconfig(log_dir / "kubeconfig", str(server.url))
        self.processes: list[SchedulerProcess] = []
        self.sampler = HalfGangSampler(kube)
        self.missed: list[str] = []
        self.judged = False
        """Set by :meth:`finish`: the variant ran to its end and its report holds the verdict."""

    def fault_rng(self) -> random.Random:
        return random.Random(f"{self.report.seed}/{self.report.variant}/faults")

    def process(self, name: str = "scheduler", flags: Sequence[str] = ("--no-leader-elect",)) -> SchedulerProcess:
        proc = SchedulerProcess(name, self.kubeconfig, self.log_dir, flags)
        self.processes.append(proc)
        return proc

    async def start(self, proc: SchedulerProcess) -> None:
        await proc.start()
        if proc.starts > 1:
            self.report.restarts += 1

    async def killed(self, switch: KillSwitch, proc: SchedulerProcess, timeout_s: float = 30.0) -> bool:
        """Wait for ``switch`` to fire and ``proc`` (its target) to be gone, then count the gangs left partial.

        False (counted as missed, the switch disarmed) when it did not fire within ``timeout_s``, or when the
        process exited on its own first (noted by the process, judged by :meth:`finish`).
        """
        assert proc.proc is not None
        fired = asyncio.ensure_future(switch.fired.wait())
        exited = asyncio.ensure_future(proc.proc.wait())
        await asyncio.wait({fired, exited}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        fired.cancel()
        exited.cancel()
        if not switch.fired.is_set():
            self.server.disarm(switch)
            self.report.kills_missed += 1
            self.missed.append(f"{switch.what}: {switch.seen} matching write(s) in {timeout_s:.0f} s")
            return False
        await proc.wait_exit()
        self.report.kills += 1
        self.report.kill_points.append(switch.what)
        left = [g.key for g in partial((await read_cluster(self.kube)).gangs())]
        self.report.half_at_kill.append(len(left))
        self.report.half_after_kills += [k for k in left if k not in self.report.half_after_kills]
        return True

    async def finish(self, expect_full: Iterable[str] = (), extra: dict[str, list[str]] | None = None,
                     timeout_s: float | None = None) -> Verdict:
        """Wait for rest (``CHAOS_SETTLE_S``), judge, add the traceback check, record it all in the report."""
        verdict = await settle(self.kube, expect_full, settle_s() if timeout_s is None else timeout_s)
        checks = {TRACEBACKS: [t for p in self.processes for t in p.tracebacks()],
                  NO_EXIT: [e for p in self.processes for e in p.exits] +
                  [f"{p.name} is not running" for p in self.processes if p.starts and not p.alive],
                  KILLS_FIRED: self.missed}
        checks.update(extra or {})
        self.report.record(verdict, checks)
        self.judged = True
        return verdict

    def collect(self) -> None:
        """Copy the server's and the sampler's counters into the report."""
        r, s = self.report, self.server
        r.faults = s.injected()
        r.dropped_in_flight = s.dropped
        r.watch_resets = s.watch_resets
        r.compactions = s.compacted
        r.watch_410s = s.watch_410s
        r.requests = {k.value: n for k, n in sorted(s.requests_by_kind.items())}
        r.half_seen = self.sampler.seen
        r.half_longest_s = round(self.sampler.longest_s, 1)


@contextlib.asynccontextmanager
async def open_harness(variant: str, log_root: Path) -> AsyncIterator[Harness]:
    log_dir = log_root / variant
    log_dir.mkdir(parents=True, exist_ok=True)
    for old in log_dir.glob("*.log"):
        old.unlink()
    started = time.monotonic()
    async with chaos_server() as server:
        kube = harness_client(str(server.url))
        h = Harness(variant, server, kube, log_dir)
        sampler = asyncio.create_task(h.sampler.run(), name=f"chaos/{variant}/sampler")
        try:
            yield h
        finally:
            for proc in h.processes:
                await proc.stop()
            sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampler
            h.collect()
            h.report.duration_s = round(time.monotonic() - started, 1)
            await kube.close()
