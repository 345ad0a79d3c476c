"""A DRA cluster that keeps changing never makes a cycle raise, and never gives one device to two plans.

On ``tests/property/dra_strategies.py``'s clusters (loaded as ``simulate`` loads them), a random sequence of steps:
decide a root (its plan assumed, holding its claims' devices, as the driver holds them until the binder is done),
forget a plan assumed earlier (its binding failed: the binder gives its pods and devices back), or change the cluster
as ``tests/property/test_dra_hints_complete.py`` does (claims freed, slices published or removed, nodes added or
relabelled, classes widened, pods deleted). Checked at every step: the cycle returns a decision (no exception: one
bad state must not stop the scheduler), a plan never allocates a device that the claims allocated in the cluster or
another plan still assumed hold — unless the device allows several allocations (KEP-5075) — and what they all take
together never over-consumes a shared counter set (a GPU's whole, halves and quarters).
"""

from __future__ import annotations

from decimal import Decimal

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from scheduler.cycle import CycleRunner
from scheduler.framework import SolverConfig
from scheduler.framework.binding_cycle import BindResult
from scheduler.groups import TreeState
from tests.property.dra_strategies import DraCluster, dra_clusters
from tests.property.test_dra_hints_complete import changes, load

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(data=st.data(), c=dra_clusters(max_nodes=3, max_roots=4))
def test_a_changing_dra_cluster_never_raises_nor_gives_a_device_twice(data: st.DataObject, c: DraCluster) -> None:
    cache = load(c)
    runner = CycleRunner(cache, SolverConfig())
    assumed: list[tuple[object, set[str]]] = []  # each plan still assumed: its attempt, the devices it took whole
    for _ in range(data.draw(st.integers(4, 12), label="steps")):
        step = data.draw(st.sampled_from(["decide", "decide", "forget", "change"]), label="step")
        if step == "forget" and assumed:
            attempt, _devices = assumed.pop(data.draw(st.integers(0, len(assumed) - 1), label="plan"))
            plan = attempt.plan  # type: ignore[attr-defined]
            runner.settle(attempt, BindResult(forget=[p.key for p, _ in plan.placements], release=None))  # type: ignore[arg-type]
        elif step == "change":
            kind, event_type, raw = data.draw(changes(c), label="change")
            cache.apply(kind, event_type, raw)
        else:
            ready = sorted(t.key for t in cache.forest().trees if t.state is TreeState.READY)
            if not ready:
                continue
            attempt = runner.attempt(data.draw(st.sampled_from(ready), label="root"))
            assert attempt is not None
            plan = attempt.plan
            if plan is None or not plan.allocations:
                continue
            inventory = attempt.snapshot.dra.inventory  # type: ignore[union-attr]
            whole = {use.device for a in plan.allocations for use in a.device_uses
                     if use.takes and not inventory.devices[use.device].shared}
            own = {a.claim for a in plan.allocations}
            taken = {use.device for key, claim in cache.resource_claims.items() if key not in own
                     and claim.is_allocated for use in claim.allocated_uses if use.takes}
            held = set().union(*(devices for _, devices in assumed))
            assert not whole & held, f"{sorted(whole & held)} given to two plans"
            assert not whole & taken, f"{sorted(whole & taken)} allocated in the cluster already"
            used: dict[tuple[str, str], Decimal] = {}  # partitions of one GPU draw on one shared counter set
            for device in (whole | held | taken) & inventory.devices.keys():
                for set_id, amounts in inventory.devices[device].consumes:
                    for counter, amount in amounts:
                        used[(set_id, counter)] = used.get((set_id, counter), Decimal(0)) + amount
            over = {k: v for k, v in used.items() if v > inventory.counters[k[0]][k[1]]}
            assert not over, f"counter sets over-consumed: {over}"
            event("a plan allocated devices beside others still assumed" if assumed else "a plan allocated devices")
            assumed.append((attempt, whole))
