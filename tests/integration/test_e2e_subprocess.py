"""End to end, as a user runs it: ``gang-scheduler run --kubeconfig …`` as a subprocess against the emulator.

Real time (no fake clock): the subprocess has its own event loop. Bounded: every wait has a
timeout, and the process is always terminated.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

from scheduler.client.kube import KubeClient
from tests.integration.livekit import bound_at_least, create_gang, create_node, until

CLI = Path(sys.executable).parent / "gang-scheduler"


async def test_gang_scheduler_run_subprocess_binds_a_gang_and_exits_cleanly_on_sigterm(
        k8s, kube: KubeClient, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "emu",
        "clusters": [{"name": "emu", "cluster": {"server": str(k8s.url).rstrip("/")}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "emu", "context": {"cluster": "emu", "user": "u"}}],
    }))
    await create_node(kube, "n0", cpu="4")
    await create_gang(kube, "g", 4, cpu="1")
    proc = await asyncio.create_subprocess_exec(
        str(CLI), "run", "--kubeconfig", str(kubeconfig), "--no-leader-elect", "--bind-address", "127.0.0.1:0",
        "--log-level", "INFO", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    try:
        placed = await until(lambda: bound_at_least(kube, "g-", 4), timeout_s=60, what="gang bound by the subprocess")
        assert set(placed.values()) == {"n0"}
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        out, _ = await asyncio.wait_for(proc.communicate(), 30)
    log = out.decode()
    assert proc.returncode == 0, log
    assert "result=Scheduled pods=4 nodes=n0" in log
    assert "caches synced" in log
