"""The end-to-end benchmark's kubelets: each bound pod started as its kubelet starts it (the ``*-kubelets`` drains).

On a cluster every pod the scheduler binds comes back at least twice more by watch event as its kubelet starts it: its
containers being created (phase ``Pending``, the host IP, each container named and waiting), then running and ready
(the pod IP, container IDs, the actuated resources) — each the whole pod, with the kubelet's ``managedFields`` entry.
:class:`Kubelets` makes those two writes for every pod the driver's watch sees bound: ``PATCH pods/{name}/status``
(a merge patch of the whole status, shaped as a v1.37 kubelet writes it: :func:`~tests.bench.realistic.starting_status`,
:func:`~tests.bench.realistic.running_status`) under the User-Agent :data:`KUBELET_AGENT`, so the emulator records them
under the field manager ``kubelet``. The driver's CPU is its own: the scheduler's figures count only what the writes'
watch events cost it.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from typing import Any

from scheduler.client.kube import PODS, ApiError, KubeClient
from tests.bench import realistic

KUBELET_AGENT = "kubelet/v1.37.0 (linux/amd64) kubernetes/5f2c1a9"
"""The kubelets' User-Agent: the emulator names the field manager of their writes after it (``kubelet``)."""


class Kubelets:
    """Starts each pod :meth:`bound` hands it with two status writes, at most ``concurrency`` pods at a time; ``kube``
    a client whose User-Agent is :data:`KUBELET_AGENT`. :meth:`wait` returns once every pod handed over is running;
    :attr:`failures` holds a line per write refused."""

    def __init__(self, kube: KubeClient, namespace: str, concurrency: int) -> None:
        self.kube = kube
        self.namespace = namespace
        self.failures: list[str] = []
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._index = itertools.count()
        self._workers = [asyncio.create_task(self._work(), name=f"kubelet-{i}") for i in range(concurrency)]

    def bound(self, pod: dict[str, Any]) -> None:
        """``pod`` (as the watch brought it, with ``spec.nodeName``) is bound: its kubelet starts it."""
        self._queue.put_nowait(copy.deepcopy(pod))

    async def wait(self) -> None:
        """Until every pod handed over so far is running (both its writes answered)."""
        await self._queue.join()

    async def close(self) -> None:
        for worker in self._workers:
            worker.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)

    async def _work(self) -> None:
        while True:
            pod = await self._queue.get()
            try:
                await self._start(pod)
            finally:
                self._queue.task_done()

    async def _start(self, pod: dict[str, Any]) -> None:
        index, name = next(self._index), pod["metadata"]["name"]
        started = realistic.running_status(pod, index)
        for status in (realistic.starting_status(started), started):
            try:
                await self.kube.patch(PODS, self.namespace, name, {"status": status}, sub="status", reply=False)
            except ApiError as exc:
                self.failures.append(f"kubelet status write of pod {name} refused: {exc}")
                return
