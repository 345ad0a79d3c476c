"""A node whose allocatable shrinks while a plan's binds are in flight: the binds still to go there are not
sent; the gang is planned again against the node as it is, and no node ends overcommitted."""

from __future__ import annotations

import asyncio
from typing import Any

import kmock
import pytest

from scheduler.client.kube import NODES, PODS, KubeClient
from scheduler.model.quantity import to_units
from tests.integration.apiserver import ApiServer
from tests.integration.livekit import bound_at_least, create_gang, create_node, running, until

BIND_DELAY_S = 1.5


def slow_binds(k8s: ApiServer, sent: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Every bind waits :data:`BIND_DELAY_S` before the server takes it; (pod, node) is put in ``sent`` as each
    arrives, and in the list returned as each lands."""
    landed: list[tuple[str, str]] = []

    async def react(request: kmock.Request) -> Any:
        sent.append((request.name, request.data["target"]["name"]))
        await asyncio.sleep(BIND_DELAY_S)
        out = await k8s._serve_binding(request)
        landed.append((request.name, request.data["target"]["name"]))
        return out

    k8s['post', kmock.subresource('binding')] << react
    return landed


async def cpu_requested(kube: KubeClient, node: str) -> int:
    items, _ = await kube.list(PODS)
    return sum(to_units("cpu", c["resources"]["requests"]["cpu"]) for p in items
               if p["spec"].get("nodeName") == node for c in p["spec"]["containers"])


@pytest.mark.looptime
async def test_a_node_whose_allocatable_shrinks_mid_plan_gets_no_further_bind(k8s: ApiServer, kube: KubeClient) -> None:
    sent: list[tuple[str, str]] = []
    landed = slow_binds(k8s, sent)
    await create_node(kube, "n0", cpu="8")
    await create_node(kube, "n1", cpu="8")
    async with running(kube, bind_concurrency=1) as sched:  # one bind in flight at a time: 1.5 s apart
        await create_gang(kube, "g", 4, cpu="2")  # fits one node whole: packed there
        await until(lambda: len(landed) >= 1, what="the first bind")
        first = landed[0][1]
        await kube.patch(NODES, None, first, {"status": {"allocatable": {"cpu": "2"}}}, sub="status")  # the kubelet
        # reports less room while the plan's other binds there wait their turn
        await until(lambda: sched.cache.nodes[first].allocatable["cpu"] == 2000, what="the watch shows it")
        before = len(sent)  # a bind sent before the scheduler knew cannot be called back
        await until(lambda: bound_at_least(kube, "g-", 4), timeout_s=60, what="the gang bound")
        await asyncio.sleep(5)
        assert [node for _, node in sent[before:]].count(first) == 0, sent  # no bind sent there since
        assert await cpu_requested(kube, "n1" if first == "n0" else "n0") >= 4000  # the rest planned again there
