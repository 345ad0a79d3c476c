"""Helpers for live-scheduling tests: API objects as dicts, a running scheduler, and polling.

Objects are created through the emulator's HTTP API (never by assigning ``k8s.objects``), so
the scheduler sees them exactly as it would from a real API server.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import kmock

from scheduler.client.kube import COMPOSITES, NODES, PODGROUPS, PODS, KubeClient
from scheduler.config import Settings
from scheduler.live.driver import Scheduler
from tests.integration.apiserver import ApiServer
from tests.unit.groups.builders import pg_dict

NS = "ml"
TOLERATE_GPU = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def node(name: str, cpu: str = "8", memory: str = "32Gi", gpu: int = 0, labels: dict[str, str] | None = None
         ) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": memory, "pods": "110"}
    if gpu:
        alloc["nvidia.com/gpu"] = str(gpu)
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "spec": {}, "status": {"allocatable": alloc, "capacity": dict(alloc)}}


def pod(name: str, group: str | None, cpu: str = "1", gpu: int = 0, scheduler: str = "gang-scheduler",
        node_name: str | None = None) -> dict[str, Any]:
    req: dict[str, str] = {"cpu": cpu, "memory": "1Gi"}
    if gpu:
        req["nvidia.com/gpu"] = str(gpu)
    spec: dict[str, Any] = {"schedulerName": scheduler, "tolerations": [TOLERATE_GPU],
                            "containers": [{"name": "main", "image": "example.com/x:1",
                                            "resources": {"requests": req, "limits": req}}]}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}, "spec": spec,
            "status": {"phase": "Running" if node_name else "Pending"}}


def podgroup(name: str, min_count: int | None, parent: str | None = None, topology: str | None = None,
             priority: int | None = None) -> dict[str, Any]:
    body = pg_dict(name, min_count, parent=parent, topology=topology, namespace=NS, priority=priority)
    del body["metadata"]["creationTimestamp"]  # the server stamps it
    return body


def composite(name: str, min_group_count: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"schedulingPolicy": {"gang": {"minGroupCount": min_group_count}},
                     "workloadRef": {"workloadName": "w", "templateName": name}}}


async def create_gang(kube: KubeClient, name: str, n: int, min_count: int | None = None, **pod_kw: Any) -> None:
    await kube.create(PODGROUPS, NS, podgroup(name, min_count if min_count is not None else n))
    for i in range(n):
        await kube.create(PODS, NS, pod(f"{name}-{i}", name, **pod_kw))


async def create_node(kube: KubeClient, name: str, **kw: Any) -> None:
    await kube.create(NODES, None, node(name, **kw))


async def create_composite(kube: KubeClient, name: str, min_group_count: int) -> None:
    await kube.create(COMPOSITES, NS, composite(name, min_group_count))


async def until(check: Callable[[], Any], timeout_s: float = 30.0, what: str = "condition") -> Any:
    """Poll ``check`` (sync or async) every 50 ms of loop time until it returns a truthy value."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        await asyncio.sleep(0.05)


async def node_of(kube: KubeClient, name: str) -> str | None:
    return (await kube.get(PODS, NS, name)).get("spec", {}).get("nodeName")


async def bound(kube: KubeClient, prefix: str) -> dict[str, str]:
    items, _ = await kube.list(PODS)
    return {p["metadata"]["name"]: p["spec"]["nodeName"] for p in items
            if p["metadata"]["name"].startswith(prefix) and p.get("spec", {}).get("nodeName")}


async def bound_at_least(kube: KubeClient, prefix: str, n: int) -> dict[str, str] | None:
    """The pods named ``prefix…`` that are bound (name → node), once at least ``n`` are; else None."""
    got = await bound(kube, prefix)
    return got if len(got) >= n else None


def settings(**kw: Any) -> Settings:
    base: dict[str, Any] = {"leader_elect": False, "bind_address": "127.0.0.1:0", "backoff_initial_s": 1.0,
                            "backoff_max_s": 8.0, "client_qps": 0}
    base.update(kw)
    return Settings.model_validate(base)


@contextlib.asynccontextmanager
async def running(kube: KubeClient, **kw: Any) -> AsyncIterator[Scheduler]:
    """A Scheduler running in this loop until the block ends; waits until it is ready."""
    identity = kw.pop("identity", None)
    sched = Scheduler(settings(**kw), kube, identity=identity)
    stop = asyncio.Event()
    task = asyncio.create_task(sched.run(stop), name="scheduler")
    try:
        await until(lambda: sched.ready()[0] or task.done(), 30, "scheduler ready")
        if task.done():
            task.result()
        yield sched
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


def refusing_first(k8s: ApiServer, times: int, status: int, serve: Callable[[kmock.Request], Awaitable[Any]],
                   *criteria: Any) -> dict[str, int]:
    """Answer the first ``times`` requests matching ``criteria`` (kmock's) *per object name* with ``status``
    although nothing changed; later ones go to ``serve`` (one of the emulator's handlers). Returns the count
    refused per name, filled in as they come."""
    refused: dict[str, int] = {}
    reasons = {409: "Conflict", 500: "InternalError", 503: "ServiceUnavailable"}

    async def react(request: kmock.Request) -> Any:
        if refused.get(request.name, 0) < times:
            refused[request.name] = refused.get(request.name, 0) + 1
            return kmock.KubernetesError(status=status, reason=reasons.get(status, "Error"), message="try again")
        return await serve(request)

    k8s[criteria] << react
    return refused


def conflicting(k8s: ApiServer, times: int, resource: str = "scheduling.k8s.io/v1beta1/podgroups") -> None:
    """Answer the first ``times`` PATCHes of ``resource``'s status (``group/version/plural``) with 409, as when
    another writer of the group (the level-triggered conditions, say) landed just before each; later ones go
    through."""
    left = [times]

    async def react(request: kmock.Request) -> Any:
        if left[0] > 0:
            left[0] -= 1
            return kmock.KubernetesError(status=409, reason="Conflict", message="the object has been modified")
        return await k8s._serve_update(request)

    k8s['patch', kmock.resource(resource), kmock.subresource('status')] << react
