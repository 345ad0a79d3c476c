"""The binding cycle's runner: every PreBind plugin in order, then the Bind plugin; rollback on failure.

One transaction per plan (architecture §6): the claims' allocations, the volumes, then the binds, which carry
the plan's durable intent. A PreBind failure binds no member: every plugin whose ``pre_bind`` started is rolled
back, in reverse order. A failed bind stops the plan's remaining binds; the members not bound are forgotten and
each PreBind plugin rolls back what it wrote only for them, so the next plan may choose other devices. The result
says what the cache must give back (:class:`~scheduler.framework.binding_cycle.BindResult`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scheduler.binding.claims import BINDING_TIMEOUT_S, DynamicResourcesPreBind
from scheduler.binding.pods import DefaultBinder
from scheduler.binding.volumes import ClaimSource, VolumeBindingPreBind
from scheduler.cache.cluster import ClusterCache
from scheduler.errors import ApiError, TargetChanged
from scheduler.framework.binding_cycle import BindingCycle, BindResult, Failure, Undone
from scheduler.framework.cycle_state import StateKey
from scheduler.framework.interface import ApiWriter, BindPlugin, PreBindPlugin

ACTIVE: StateKey[tuple[PreBindPlugin, ...]] = StateKey("binding/active")
"""The PreBind plugins whose ``pre_flight`` found work, in order."""


@dataclass(frozen=True, slots=True)
class BindingPlugins:
    """A binding profile: the PreBind plugins in the order they run, and the Bind plugin."""

    pre_bind: tuple[PreBindPlugin, ...]
    bind: BindPlugin


def default_plugins(cache: ClusterCache | None, volumes: ClaimSource | None, *,
                    volume_timeout_s: float, binding_timeout_s: float = BINDING_TIMEOUT_S) -> BindingPlugins:
    """The one profile ``run`` and ``simulate`` bind with: DynamicResources' claim writes
    (built from ``cache``; None: the cycle carries them) and its wait for binding conditions (at most
    ``binding_timeout_s``), VolumeBinding (``volumes``: the claims it reads; None fails a plan with claim
    bindings), then ``DefaultBinder`` (its Bindings carry the durable intent)."""
    return BindingPlugins((DynamicResourcesPreBind(cache, binding_timeout_s=binding_timeout_s),
                           VolumeBindingPreBind(volumes, timeout_s=volume_timeout_s)), DefaultBinder())


class BindingRunner:
    """Runs ``plugins`` for one plan at a time (see the module docstring)."""

    def __init__(self, plugins: BindingPlugins) -> None:
        self.plugins = plugins

    def start(self, cycle: BindingCycle) -> BindingCycle:
        """Run every PreBind plugin's ``pre_flight`` (before any await: they read the cache as the plan saw it)
        and remember the ones with work; returns ``cycle``."""
        cycle.write(ACTIVE, tuple(p for p in self.plugins.pre_bind if p.pre_flight(cycle)))
        return cycle

    async def run(self, cycle: BindingCycle, writer: ApiWriter) -> BindResult:
        """The transaction; never raises :class:`ApiError` (a failure is the result's ``failure``)."""
        outcome = cycle.outcome
        pods = cycle.pods
        started: list[PreBindPlugin] = []
        for plugin in cycle.read(ACTIVE, ()):
            started.append(plugin)
            failure = await plugin.pre_bind(cycle, writer)
            if failure is None:
                continue
            undone = [await p.rollback(cycle, writer) for p in reversed(started)]
            outcome.failed = (failure.key, failure.error or ApiError(failure.status, plugin.name, failure.message))
            outcome.skipped = pods
            kept = sorted({k for u in undone for k in u.kept})
            message = (f"{failure.message}; no member bound{_summaries(undone)}, the group requeued"
                       + "".join(f"; {u.note}" for u in undone if u.note)
                       + (f" (could not roll back {', '.join(kept)})" if kept else ""))
            release = [k for u in undone for k in u.released] if any(u.released or u.kept for u in undone) else None
            return BindResult(failure=Failure(failure.key, message, failure.status), forget=pods, release=release,
                              exclude=[d for u in undone for d in u.excluded])
        await self.plugins.bind.bind(cycle, writer)
        if outcome.ok:
            return BindResult(bound=list(outcome.bound))
        bound = cycle.bound_keys
        undone = [await p.rollback(cycle, writer) for p in reversed(started)]
        if outcome.failed is not None:
            failed_key, error = outcome.failed
            what, status = f"binding {failed_key} failed: {error}", error.status
            if isinstance(error, TargetChanged):
                what = f"not binding {failed_key}: {error.message}"
        else:
            failed_key, what, status = outcome.skipped[0], "leadership lost before binding", 0
        message = (f"{what}; {len(bound)}/{len(cycle.plan.placements)} members bound, the rest forgotten and the "
                   "group requeued")
        return BindResult(bound=list(outcome.bound), failure=Failure(failed_key, message, status),
                          forget=[k for k in pods if k not in bound],
                          release=[k for u in undone for k in u.released])


def _summaries(undone: Sequence[Undone]) -> str:
    return "".join(f", {u.summary}" for u in undone if u.summary)
