"""Held claim allocations (:class:`~scheduler.cache.devices.DeviceCache`): the holds indexed by claim and by
owner pod end exactly when looking at every hold on every event would end them.

Random sequences of plans assumed and forgotten, claims added, allocated, emptied and deleted, and owner pods
finishing or going away are applied to a :class:`DeviceCache` (claim events through ``set_claim``, pod events
through ``settle_pod``) and to a model that, on a claim event, checks that claim's holds and every created
claim's, and on a pod event checks every hold — the rule as the module docstring states it, with no index.
After every step both hold the same, and the claims in flight are those of the holds of existing claims.
Plans are assumed as a solve makes them: they allocate claims that are not allocated yet, take devices no
claim has, and own created claims for pods that exist.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.cache.cluster import ClusterCache
from scheduler.cache.devices import DeviceCache, HeldClaim
from scheduler.framework.plan import ClaimAllocation
from scheduler.model.dra import ResourceClaim
from scheduler.model.pod import Pod

NS = "a"
CLAIMS = ("c0", "c1", "c2")
CREATED = ("p0-extended-resources", "p1-extended-resources")
DEVICES = ("d0", "d1", "d2", "d3")
TOKENS = ("t0", "t1", "t2")
PODS = ("p0", "p1")


def make_claim(name: str, devices: tuple[str, ...] | None) -> ResourceClaim:
    """A claim; ``devices``: its allocation (None: not allocated)."""
    body: dict[str, Any] = {"metadata": {"name": name, "namespace": NS},
                            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}}}
    if devices is not None:
        body["status"] = {"allocation": {"devices": {"results": [
            {"request": "r", "driver": "drv", "pool": "pool", "device": d} for d in devices]}}}
    return ResourceClaim.model_validate(body)


def make_pod(name: str, terminal: bool) -> Pod:
    return Pod.model_validate({"metadata": {"name": name, "namespace": NS},
                               "spec": {"schedulerName": "gang-scheduler", "containers": [{"name": "c"}]},
                               "status": {"phase": "Succeeded" if terminal else "Pending"}})


devices = st.lists(st.sampled_from(DEVICES), min_size=1, max_size=2, unique=True).map(tuple)
allocation = st.tuples(st.sampled_from(CLAIMS + CREATED), devices)
STEP = st.one_of(
    st.tuples(st.just("assume"), st.sampled_from(TOKENS), st.lists(allocation, max_size=3, unique_by=lambda a: a[0])),
    st.tuples(st.just("forget"), st.sampled_from(TOKENS), st.none() | st.lists(st.sampled_from(CLAIMS + CREATED))),
    st.tuples(st.just("claim"), st.sampled_from(CLAIMS + CREATED), st.none() | st.just(()) | devices),
    st.tuples(st.just("pod"), st.sampled_from(PODS), st.sampled_from(("gone", "running", "finished"))),
)


def model_settle(held: dict[str, dict[str, HeldClaim]], claims: dict[str, ResourceClaim], pods: dict[str, Pod],
                 changed: str | None) -> None:
    """Every hold looked at: ``changed`` — the claim of a claim event, or None for a pod event."""
    allocated = {(u.device, u.share_id) for c in claims.values() for u in c.allocated_uses}
    for token in list(held):
        for key, hold in list(held[token].items()):
            if hold.existed:
                done = changed is None or changed == key
                if done:
                    claim = claims.get(key)
                    done = claim is None or claim.is_allocated
            else:
                done = bool(hold.uses) and {(u.device, u.share_id) for u in hold.uses} <= allocated
            if not done and hold.pod is not None:
                owner = pods.get(hold.pod)
                done = owner is None or owner.is_terminal
            if done:
                del held[token][key]
        if not held[token]:
            del held[token]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(STEP, min_size=5, max_size=40))
def test_indexed_holds_end_as_checking_every_hold_ends_them(steps: list[tuple[Any, ...]]) -> None:
    claims: dict[str, ResourceClaim] = {}
    pods: dict[str, Pod] = {f"{NS}/{p}": make_pod(p, False) for p in PODS}
    cache = DeviceCache(claims, {}, {})
    model: dict[str, dict[str, HeldClaim]] = {}
    for step in steps:
        if step[0] == "assume":
            _, token, wanted = step
            taken = {u.device for c in claims.values() for u in c.allocated_uses}
            allocations = []
            for name, devs in wanted:  # as a solve makes them (see the module docstring)
                key, owner = f"{NS}/{name}", f"{NS}/{name.split('-')[0]}" if name in CREATED else None
                ids = {f"drv/pool/{d}" for d in devs}
                claim = claims.get(key)
                if (claim is not None and claim.is_allocated) or ids & taken or (owner is not None and (
                        owner not in pods or pods[owner].is_terminal)):
                    continue
                allocations.append(ClaimAllocation(key, (), None, tuple((("r", "drv", "pool", d)) for d in devs),
                                                   synthetic=owner is not None, pod=owner))
            cache.assume(token, allocations)
            if allocations:
                model[token] = {a.claim: HeldClaim(a.device_uses, a.claim in claims, a.pod) for a in allocations}
        elif step[0] == "forget":
            _, token, which = step
            keys = None if which is None else [f"{NS}/{n}" for n in which]
            cache.forget(token, keys)
            if token in model:
                for key in list(model[token]) if keys is None else keys:
                    model[token].pop(key, None)
                if not model[token]:
                    del model[token]
        elif step[0] == "claim":
            _, name, devs = step
            key = f"{NS}/{name}"
            if devs is None:
                claims.pop(key, None)
            else:
                claims[key] = make_claim(name, devs or None)
            cache.set_claim(key, claims.get(key))
            model_settle(model, claims, pods, key)
        else:
            _, name, state = step
            key = f"{NS}/{name}"
            if state == "gone":
                pods.pop(key, None)
            else:
                pods[key] = make_pod(name, state == "finished")
            cache.settle_pod(key, pods.get(key))
            if model:
                model_settle(model, claims, pods, None)
        assert cache.held == model, step
        assert cache.in_flight() == {k for held in model.values() for k, h in held.items() if h.existed}


MASK_STEP = st.one_of(
    st.tuples(st.just("claim"), st.sampled_from(CLAIMS), st.none() | st.just(()) | devices,
              st.sampled_from(("n0", "n1"))),
    st.tuples(st.just("slice"), st.sampled_from(("n0", "n1")), st.none() | st.integers(1, 4), st.none()),
    st.tuples(st.just("assume"), st.sampled_from(TOKENS), devices, st.sampled_from(("n0", "n1"))),
    st.tuples(st.just("forget"), st.sampled_from(TOKENS), st.none(), st.none()),
    st.tuples(st.just("exclude"), st.sampled_from(DEVICES), st.sampled_from(("n0", "n1")), st.none()),
)


def node_slice(node: str, count: int, generation: int) -> dict[str, Any]:
    return {"metadata": {"name": f"{node}-gpus"},
            "spec": {"driver": "drv", "nodeName": node,
                     "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
                     "devices": [{"name": f"d{i}"} for i in range(count)]}}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(MASK_STEP, min_size=3, max_size=30))
def test_the_taken_devices_kept_per_claim_event_equal_a_recount(steps: list[tuple[Any, ...]]) -> None:
    cache = ClusterCache("gang-scheduler", dra=True)
    cache.replace("Node", [{"metadata": {"name": n}, "status": {"allocatable": {"cpu": "8", "pods": "110"}}}
                           for n in ("n0", "n1")])
    cache.replace("ResourceSlice", [node_slice("n0", 4, 1)])
    for i, (kind, a, b, c) in enumerate(steps):
        if kind == "claim":
            body: dict[str, Any] = {"metadata": {"name": a, "namespace": NS, "resourceVersion": str(i)},
                                    "spec": {"devices": {"requests": [{"name": "r", "exactly": {
                                        "deviceClassName": "gpu"}}]}}}
            if b:
                body["status"] = {"allocation": {"devices": {"results": [
                    {"request": "r", "driver": "drv", "pool": c, "device": d} for d in b]}}}
            cache.apply("ResourceClaim", "DELETED" if b is None else "MODIFIED", body)
        elif kind == "slice":
            raw = node_slice(a, b or 1, i + 2)
            cache.apply("ResourceSlice", "DELETED" if b is None else "MODIFIED", raw)
        elif kind == "assume":
            cache.devices.assume(a, [ClaimAllocation(f"{NS}/held-{a}", (), c, tuple(("r", "drv", c, d) for d in b))])
        elif kind == "forget":
            cache.forget_devices(a)
        else:
            cache.exclude_devices([f"drv/{b}/{a}"])
        cache._bump()
        view = cache.snapshot().dra
        assert view is not None
        want = view.inventory.held_mask(view.assumed)
        assert view.held.tolist() == want.tolist(), steps[: i + 1]
