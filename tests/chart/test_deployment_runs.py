"""The chart's Deployment, run as the image runs it, schedules the example gang against the emulator.

The container's command is the image's ENTRYPOINT (``gang-scheduler run``) plus the rendered
``args``, its environment exactly the rendered ``env`` (plus a kubeconfig for the emulator in
place of the in-cluster service account). So the values → environment → ``Settings`` path,
leader election with the Lease in the release namespace, the probes' endpoints and ``/metrics``
are exercised by the real process, and deploy/examples/gang.yaml is bound whole.

Not covered here: the image itself (no container engine on our machines), the read-only root
filesystem and the non-root user (the process is started as this test's user).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from scheduler.client.kube import LEASES, NODES, PODGROUPS, PODS, KubeClient
from tests.chart.helmchart import NAMESPACE, ROOT, objects, render
from tests.integration.apiserver import ApiServer
from tests.integration.livekit import node, until

CLI = Path(sys.executable).parent / "gang-scheduler"
EXAMPLE = ROOT / "deploy" / "examples" / "gang.yaml"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url, timeout=aiohttp.ClientTimeout(total=5)) as r:
        return r.status, await r.text()


async def bound(kube: KubeClient, namespace: str) -> dict[str, str] | None:
    items, _ = await kube.list(PODS, namespace)
    placed = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in items if p["spec"].get("nodeName")}
    return placed if len(placed) == 4 else None


async def test_rendered_deployment_schedules_the_example_gang(k8s: ApiServer, kube: KubeClient,
                                                               tmp_path: Path) -> None:
    port = free_port()
    deployment = next(o for o in objects(render({"config": {"bindAddress": f"127.0.0.1:{port}"}}))
                      if o["kind"] == "Deployment")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "emu",
        "clusters": [{"name": "emu", "cluster": {"server": str(k8s.url).rstrip("/")}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "emu", "context": {"cluster": "emu", "user": "u"}}],
    }))
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1",
           **{e["name"]: e["value"] for e in container["env"]}, "GANG_SCHEDULER_KUBECONFIG": str(kubeconfig)}

    await kube.create(NODES, None, node("n0", cpu="2"))
    example: list[dict[str, Any]] = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]
    namespace = example[0]["metadata"]["name"]
    for obj in example[1:]:
        await kube.create(PODGROUPS if obj["kind"] == "PodGroup" else PODS, namespace, obj)

    proc = await asyncio.create_subprocess_exec(str(CLI), "run", *container["args"], env=env,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    try:
        try:
            placed = await until(lambda: bound(kube, namespace), timeout_s=60, what="the example gang bound")
        except AssertionError:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
            out, _ = await asyncio.wait_for(proc.communicate(), 30)
            raise AssertionError("the example gang was not bound; the scheduler's log:\n" + out.decode()) from None
        assert set(placed.values()) == {"n0"}
        base = f"http://127.0.0.1:{port}"
        assert await get(base + container["livenessProbe"]["httpGet"]["path"]) == (200, "ok")
        assert await get(base + container["readinessProbe"]["httpGet"]["path"]) == (200, "ok")
        status, metrics = await get(base + "/metrics")
        assert status == 200
        assert 'scheduler_podgroup_schedule_attempts_total{profile="gang-scheduler",result="scheduled"} 1.0' in metrics
        assert "gang_scheduler_is_leader 1.0" in metrics
        lease = await kube.get(LEASES, NAMESPACE, "gang-scheduler")  # lease namespace = the release namespace
        assert lease["spec"]["holderIdentity"]
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        out, _ = await asyncio.wait_for(proc.communicate(), 30)
    log = out.decode()
    assert proc.returncode == 0, log
    assert '"leader_elect":true' in log and f'"lease_namespace":"{NAMESPACE}"' in log
    assert f"root=PodGroup {namespace}/train result=Scheduled pods=4 nodes=n0" in log
    lease = await kube.get(LEASES, NAMESPACE, "gang-scheduler")
    assert lease["spec"]["holderIdentity"] == ""  # released on SIGTERM: a standby takes over at once
