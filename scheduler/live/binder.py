"""The binder of ``run``: one plan's binding cycle (``scheduler.binding``) against the API server.

:class:`Binder` joins the binding profile every caller uses (:func:`~scheduler.binding.transaction.
default_plugins`: DynamicResources' claim writes, VolumeBinding, then ``DefaultBinder``, whose Bindings carry the
durable intent) to
the live :class:`~scheduler.live.api_writer.KubeWriter` (retries, the urgent lane, the leadership fence, the
bounded writes in flight, the wait on the cache's changes). What each step writes, and how it is rolled back,
is said by its plugin; the transaction's order and its result by ``scheduler.binding.transaction``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from scheduler.binding.claims import BINDING_TIMEOUT_S, ClaimOutcome, DynamicResourcesPreBind, WrittenClaim
from scheduler.binding.pods import bind_plan
from scheduler.binding.transaction import BindingRunner, default_plugins
from scheduler.binding.volumes import ClaimSource
from scheduler.binding.wait import Changes
from scheduler.cache.cluster import ClusterCache
from scheduler.client.kube import KubeClient
from scheduler.dra.writes import ClaimWrite
from scheduler.framework.binding_cycle import (
    BindingCycle,
    BindOutcome,
    BindResult,
    Precheck,
)
from scheduler.live.api_writer import KubeWriter
from scheduler.model.pod import Pod

__all__ = ["BindOutcome", "Binder", "ClaimOutcome", "WrittenClaim"]


class Binder:
    """See the module docstring. ``cache``: where DynamicResources reads the claims a plan writes (None: each
    cycle carries its claim writes); ``volumes``: the PersistentVolumeClaims VolumeBinding reads (None: a plan
    with claim bindings fails, as nothing could see them bound); ``changes``: what wakes a PreBind wait;
    ``rng``: the retries' jitter (seedable for tests)."""

    def __init__(self, kube: KubeClient, *, concurrency: int = 16, max_attempts: int = 5,
                 retry_initial_s: float = 0.2, retry_max_s: float = 5.0, rng: random.Random | None = None,
                 fence: Callable[[], bool] | None = None, cache: ClusterCache | None = None,
                 volumes: ClaimSource | None = None, changes: Changes | None = None,
                 volume_timeout_s: float = 300.0, binding_timeout_s: float = BINDING_TIMEOUT_S) -> None:
        self.writer = KubeWriter(kube, concurrency=concurrency, max_attempts=max_attempts,
                                 retry_initial_s=retry_initial_s, retry_max_s=retry_max_s, rng=rng, fence=fence,
                                 changes=changes)
        self.runner = BindingRunner(default_plugins(cache, volumes, volume_timeout_s=volume_timeout_s,
                                                    binding_timeout_s=binding_timeout_s))
        self._claims = DynamicResourcesPreBind(None)

    def start(self, cycle: BindingCycle) -> BindingCycle:
        """The PreBind plugins' pre-flight: call when the plan was assumed, before any await."""
        return self.runner.start(cycle)

    async def commit(self, cycle: BindingCycle) -> BindResult:
        """Run a started cycle (:meth:`start`): claims, volumes, binds — one transaction. Returns what
        the cache must give back; ``cycle.outcome`` holds the per-member outcome (filled in as binds land, so a
        caller whose transaction raised still knows which members are bound)."""
        return await self.runner.run(cycle, self.writer)

    # -- single steps (the plugins' own, against this writer) ------------------------------------------
    async def write_claims(self, writes: Sequence[ClaimWrite]) -> ClaimOutcome:
        """Write claims as DynamicResources' PreBind does (rolled back after a permanent failure)."""
        return await self._claims.write_claims(writes, self.writer)

    async def release_claims(self, written: Sequence[WrittenClaim]) -> list[str]:
        """Undo claim writes as DynamicResources' rollback does; the keys not released."""
        return await self._claims.release_claims(written, self.writer)

    async def bind_plan(self, placements: Sequence[tuple[Pod, str]], outcome: BindOutcome | None = None,
                        precheck: Precheck | None = None, token: str | None = None) -> BindOutcome:
        """Bind members as ``DefaultBinder`` does (``token``: the plan's, whose intent the Bindings carry)."""
        return await bind_plan(list(placements), self.writer, outcome, precheck, token)
