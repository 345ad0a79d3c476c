"""The binder: writes a plan's bindings, all members concurrently, and reports the outcome.

Design §6: each member is bound with ``POST pods/{name}/binding``; there is no group bind.
What keeps the gang atomic is that the plan was complete and assumed before the first write,
and that the driver forgets the rest of the plan as soon as one member cannot be bound.

* 429, 5xx and transport failures are retried with jittered exponential backoff
  (``retry_initial_s`` doubling up to ``retry_max_s``, at most ``max_attempts`` tries).
* 409 for a pod that turns out to be bound to our node is success (an earlier attempt landed;
  decided by reading the pod, not by parsing the message).
* 404 (pod deleted) or any other 409 (bound elsewhere, gated, being deleted) is permanent for
  that member: the binder stops starting new binds for the plan and reports the failure.
* Concurrency is bounded by ``concurrency`` in-flight binds per binder (client QPS is the
  client's rate limiter).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from scheduler.kube import PODS, ApiError, Conflict, KubeClient, NotFound
from scheduler.model.pod import Pod

log = logging.getLogger(__name__)


@dataclass(slots=True)
class BindOutcome:
    """What happened to a plan: pods bound, the first permanent failure (pod key, error), pods not attempted."""

    bound: list[tuple[Pod, str]] = field(default_factory=list)
    failed: tuple[str, ApiError] | None = None
    skipped: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failed is None and not self.skipped


class Binder:
    """See the module docstring. ``rng`` gives the jitter (seedable for tests)."""

    def __init__(self, kube: KubeClient, *, concurrency: int = 16, max_attempts: int = 5,
                 retry_initial_s: float = 0.2, retry_max_s: float = 5.0, rng: random.Random | None = None) -> None:
        self.kube = kube
        self.semaphore = asyncio.Semaphore(concurrency)
        self.max_attempts = max_attempts
        self.retry_initial_s = retry_initial_s
        self.retry_max_s = retry_max_s
        self.rng = rng or random.Random()

    async def bind_plan(self, placements: Sequence[tuple[Pod, str]]) -> BindOutcome:
        """Bind every (pod, node) of a plan; stop starting new binds after a permanent failure."""
        outcome = BindOutcome()
        stop = asyncio.Event()

        async def one(pod: Pod, node: str) -> None:
            async with self.semaphore:
                if stop.is_set():
                    outcome.skipped.append(pod.key)
                    return
                try:
                    await self._bind(pod, node)
                except ApiError as exc:
                    if outcome.failed is None:
                        outcome.failed = (pod.key, exc)
                    stop.set()
                    return
                outcome.bound.append((pod, node))

        await asyncio.gather(*(one(pod, node) for pod, node in placements))
        return outcome

    async def _bind(self, pod: Pod, node: str) -> None:
        delay = self.retry_initial_s
        for attempt in range(1, self.max_attempts + 1):
            try:
                await self.kube.bind(pod.metadata.namespace, pod.metadata.name, node, uid=pod.metadata.uid or None)
                return
            except Conflict:
                if await self._bound_to(pod, node):
                    return  # an earlier attempt of ours landed (reference §1.3: treat as success)
                raise
            except NotFound:
                raise
            except ApiError as exc:
                if not exc.retryable or attempt == self.max_attempts:
                    raise
                log.info("bind %s -> %s failed (%s), retry %d in %.2f s", pod.key, node, exc, attempt, delay)
                await asyncio.sleep(delay * (0.5 + self.rng.random()))
                delay = min(delay * 2, self.retry_max_s)

    async def _bound_to(self, pod: Pod, node: str) -> bool:
        """Whether the pod is bound to ``node`` now (decides a 409 by the object, not the message text)."""
        try:
            current = await self.kube.get(PODS, pod.metadata.namespace, pod.metadata.name)
        except ApiError:
            return False
        return bool((current.get("spec") or {}).get("nodeName") == node)
