"""``gang-scheduler run`` as a subprocess: started, SIGKILLed, restarted, always reaped.

:class:`SchedulerProcess` is one replica (one name, many lives). Each start writes its own log
file; :meth:`SchedulerProcess.kill` is synchronous so a kill switch can call it inside a request
handler. Used as an async context manager, the process is killed on the way out whatever happened.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

CLI = Path(sys.executable).parent / "gang-scheduler"

CHAOS_FLAGS = ("--backoff-initial-s", "0.5", "--backoff-max-s", "4", "--gang-repair-timeout-s", "8")
"""Backoff short enough that a failed root is retried several times inside the at-rest poll, and a repair
timeout well inside it (a partial ``disruptionMode: all`` gang the thief rounds leave is torn down at 8 s)."""

_IDENTITY = re.compile(r"starting \S+ as (\S+):")


def extra_flags() -> list[str]:
    """``CHAOS_SCHEDULER_ARGS``, shell-split: flags a newer scheduler needs (e.g. a short repair timeout)."""
    return shlex.split(os.environ.get("CHAOS_SCHEDULER_ARGS", ""))


def write_kubeconfig(path: Path, server_url: str) -> Path:
    """A kubeconfig (JSON is YAML) pointing at the emulator, no credentials."""
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "emu",
        "clusters": [{"name": "emu", "cluster": {"server": server_url.rstrip("/")}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "emu", "context": {"cluster": "emu", "user": "u"}}],
    }))
    return path


class SchedulerProcess:
    """One replica of ``gang-scheduler run --kubeconfig …``; ``flags`` are added to every start."""

    def __init__(self, name: str, kubeconfig: Path, log_dir: Path, flags: Sequence[str] = ()) -> None:
        self.name = name
        self.kubeconfig = kubeconfig
        self.log_dir = log_dir
        self.flags = [*CHAOS_FLAGS, *flags, *extra_flags()]
        self.proc: asyncio.subprocess.Process | None = None
        self.logs: list[Path] = []
        self.starts = 0
        self.kills = 0
        self.exits: list[str] = []
        """Lives that ended without our SIGKILL or SIGTERM: ``log name: exit code``."""
        self._ended_by_us = False

    async def __aenter__(self) -> SchedulerProcess:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    @property
    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.returncode

    async def start(self) -> None:
        """Start a new life (the previous one must be over)."""
        assert not self.alive, f"{self.name} is still running"
        self._note_exit()
        self.starts += 1
        self._ended_by_us = False
        log = self.log_dir / f"{self.name}-{self.starts}.log"
        self.logs.append(log)
        with log.open("wb") as out:  # the child keeps its own descriptor
            self.proc = await asyncio.create_subprocess_exec(
                str(CLI), "run", "--kubeconfig", str(self.kubeconfig), "--bind-address", "127.0.0.1:0",
                "--log-level", "INFO", *self.flags, stdout=out, stderr=asyncio.subprocess.STDOUT,
                stdin=asyncio.subprocess.DEVNULL)

    def kill(self) -> None:
        """SIGKILL now (synchronous: callable from inside a request handler)."""
        if self.alive:
            assert self.proc is not None
            self._ended_by_us = True
            os.kill(self.proc.pid, signal.SIGKILL)
            self.kills += 1

    async def wait_exit(self, timeout_s: float = 10.0) -> int:
        assert self.proc is not None
        return await asyncio.wait_for(self.proc.wait(), timeout_s)

    async def stop(self) -> None:
        """SIGTERM, then SIGKILL after 10 s; reaps the process. Safe to call at any time."""
        if self.proc is None or self.proc.returncode is not None:
            self._note_exit()
            return
        self._ended_by_us = True
        self.proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()

    def _note_exit(self) -> None:
        if self.proc is not None and self.proc.returncode is not None and not self._ended_by_us:
            self.exits.append(f"{self.logs[-1].name}: exited with {self.proc.returncode}")
            self._ended_by_us = True  # noted once

    def identity(self) -> str | None:
        """The Lease identity of the current life, from its first log line (None before it is written)."""
        if not self.logs or not self.logs[-1].exists():
            return None
        match = _IDENTITY.search(self.logs[-1].read_text(errors="replace"))
        return match.group(1) if match else None

    async def wait_identity(self, timeout_s: float = 30.0) -> str:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while (identity := self.identity()) is None:
            if loop.time() > deadline or not self.alive:
                raise AssertionError(f"{self.name} logged no identity (alive={self.alive})")
            await asyncio.sleep(0.1)
        return identity

    def tracebacks(self) -> list[str]:
        """Each ``Traceback`` in any life's log, as ``file: the log line before it``."""
        found = []
        for log in self.logs:
            lines = log.read_text(errors="replace").splitlines() if log.exists() else []
            for i, line in enumerate(lines):
                if line.startswith("Traceback (most recent call last)"):
                    found.append(f"{log.name}: {lines[i - 1][:200] if i else line}")
        return found
