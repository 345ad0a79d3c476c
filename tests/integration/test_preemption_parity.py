"""``simulate`` and ``run`` make the same preemption decisions on the same cluster.

One set of objects is written as a snapshot file for ``simulate`` and created in the emulated API server for
the live scheduler. Both must evict the same pods, for the same roots, and place the preemptors on the same
nodes: the PostFilter, the cycle and the queue order are shared, and the live path adds only the API writes
and the wait for the victims to go.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.client.kube import NODES, PODGROUPS, PODS, KubeClient
from scheduler.config import Settings
from scheduler.offline.loader import load
from scheduler.offline.simulate import simulate
from tests.integration.apiserver import ApiServer
from tests.integration.livekit import NS, bound_at_least, node, pod, podgroup, running, until


def lower(name: str, node_name: str, cpu: str, priority: int) -> dict[str, Any]:
    """A running pod of another scheduler, of ``priority``."""
    body = pod(name, None, cpu=cpu, scheduler="default-scheduler", node_name=node_name)
    body["spec"]["priority"] = priority
    return body


def cluster() -> list[dict[str, Any]]:
    """Three 4-cpu nodes: n0 holds one 4-cpu pod of priority 5, n1 two 2-cpu pods of priority 1, n2 one 4-cpu
    pod of priority 50. Pending: the gang ``high`` (2 × 2 cpu, priority 100) — room on n1 — and the basic group
    ``basic`` (3 × 1 cpu, priority 10), whose minimum and members above it need n0's pod gone (priority 5)."""
    objects: list[dict[str, Any]] = [node(f"n{i}", cpu="4") for i in range(3)]
    objects += [lower("low-a", "n0", "4", 5), lower("low-b-0", "n1", "2", 1), lower("low-b-1", "n1", "2", 1),
                lower("keep-c", "n2", "4", 50)]
    objects += [podgroup("high", 2, priority=100), podgroup("basic", None, priority=10)]
    objects += [pod(f"high-{i}", "high", cpu="2") for i in range(2)]
    objects += [pod(f"basic-{i}", "basic", cpu="1") for i in range(3)]
    return objects


@pytest.fixture
def simulated(tmp_path: Path) -> tuple[dict[str, list[str]], dict[str, str]]:
    """``simulate``'s victims per preempting root (sorted names) and the placements of the pending pods, on
    :func:`cluster`. A synchronous fixture: ``simulate`` runs its binding cycle on an event loop of its own, as
    the CLI calls it, outside the test's loop."""
    objects = cluster()
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    settings = Settings()
    sim = simulate(load([path]), settings.scheduler_name, settings.solver(), True)
    victims = {p.root.name: sorted(v.metadata.name for v, _ in p.victims) for p in sim.preemptions}
    placed = {o.pod.metadata.name: o.node for o in sim.pods if o.node is not None}
    return victims, placed


async def create(kube: KubeClient, objects: list[dict[str, Any]]) -> None:
    resources = {"Node": NODES, "Pod": PODS, "PodGroup": PODGROUPS}
    for body in objects:
        await kube.create(resources[body["kind"]], None if body["kind"] == "Node" else NS, body)


@pytest.mark.looptime
async def test_simulate_and_run_evict_the_same_victims_and_place_the_same_way(
        simulated: tuple[dict[str, list[str]], dict[str, str]], k8s: ApiServer, kube: KubeClient) -> None:
    objects = cluster()
    victims, placed = simulated
    assert victims == {"high": ["low-b-0", "low-b-1"], "basic": ["low-a"]}  # the decisions compared below
    assert placed == {"high-0": "n1", "high-1": "n1", "basic-0": "n0", "basic-1": "n0", "basic-2": "n0"}
    await create(kube, objects)
    async with running(kube):
        live = await until(lambda: bound_at_least(kube, "high-", 2), timeout_s=120, what="high bound")
        live |= await until(lambda: bound_at_least(kube, "basic-", 3), timeout_s=120, what="basic bound")
        live |= await bound_at_least(kube, "keep-", 1) or {}
    deleted = sorted({r.name for r in k8s if r.method == "DELETE" and r.resource == "v1/pods"})
    assert deleted == sorted(name for names in victims.values() for name in names)
    assert {name: live[name] for name in placed} == placed
    assert live["keep-c"] == "n2"
