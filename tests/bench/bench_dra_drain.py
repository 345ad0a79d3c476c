"""The DRA drain in one process: the scheduler's own CPU per pod, without the API server, HTTP or JSON.

Run with ``.venv/bin/python -m tests.bench.bench_dra_drain [--gangs N] [--in-flight N] [--profile]``.

The objects of ``bench_e2e --case dra`` (500 nodes each publishing the p4d's slice of eight A100s, the driver's
DeviceClass, 250 gangs × 4 pods, each pod with its claim generated from the gang's ResourceClaimTemplate and
named in its ``status.resourceClaimStatuses``) are fed to a :class:`~scheduler.cache.cluster.ClusterCache` as raw
API dicts, as the informers feed it; then ``gc.freeze()``, as ``run`` does once its caches are synced. Each gang
is then decided as a live cycle decides it: ``snapshot()``, ``schedule_one`` and ``assume``; the watch events
its writes cause — each claim's ``status.allocation`` and ``reservedFor``, each pod's ``spec.nodeName`` — are
applied ``--in-flight`` cycles later (plans in flight hold their devices meanwhile, as when binds lag).

Timed (``time.process_time``) are those calls only, from the second gang on (the first solve evaluates the CEL
selectors over every device: start-up). Building the event dicts is not timed. Printed: CPU per pod, and with
``--profile`` a cProfile of the timed calls. Checks after timing: every pod placed, every claim allocated on its
pod's node, no device allocated twice (exit 1 otherwise).
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import gc
import pstats
import sys
import time
from typing import Any

from scheduler.cache.cluster import ClusterCache
from scheduler.cycle import schedule_one
from scheduler.framework.plan import Plan, SolverConfig
from tests.bench import dra_workload, realistic
from tests.bench.bench_e2e import gang_name, node_dicts
from tests.integration.livekit import podgroup


def objects(nodes: int, gangs: int, per_gang: int) -> dict[str, list[dict[str, Any]]]:
    """Raw API dicts by kind, named and versioned as the API server would return them."""
    node_bodies = [realistic.node_body(raw, 1) for raw in node_dicts(nodes, 1)]
    slices = []
    for i, n in enumerate(node_bodies):
        n["metadata"]["uid"] = f"node-uid-{i}"
        s = dra_workload.node_slice(n["metadata"]["name"], n["metadata"]["uid"])
        s["metadata"]["name"] = f"{n['metadata']['name']}-gpu.nvidia.com-x{i}"
        slices.append(s)
    pods, claims, templates, groups = [], [], [], []
    for g in range(gangs):
        template = dra_workload.claim_template(gang_name(g))
        templates.append(template)
        groups.append(podgroup(gang_name(g), per_gang))
        for m in range(per_gang):
            pod = dra_workload.dra_pod(gang_name(g), m, True)
            pod["metadata"].update(name=f"{gang_name(g)}-{m}", uid=f"pod-uid-{g}-{m}", resourceVersion="1")
            claim = dra_workload.generated_claim(pod, template)
            claim["metadata"].update(name=f"{gang_name(g)}-{m}-gpu-x", resourceVersion="1")
            pod.setdefault("status", {}).update(
                dra_workload.claim_status_patch(dra_workload.ENTRY, claim["metadata"]["name"])["status"])
            pods.append(pod)
            claims.append(claim)
    return {"Node": node_bodies, "DeviceClass": [dra_workload.device_class()], "ResourceSlice": slices,
            "ResourceClaimTemplate": templates, "PodGroup": groups, "ResourceClaim": claims, "Pod": pods}


def watch_events(plan: Plan, raws: dict[str, dict[str, Any]], rv: int) -> list[tuple[str, dict[str, Any]]]:
    """What the watch shows after ``plan``'s writes: each claim allocated and reserved, then each pod bound."""
    events: list[tuple[str, dict[str, Any]]] = []
    for a in plan.allocations:
        raw = copy.deepcopy(raws[a.claim])
        rv += 1
        raw["metadata"]["resourceVersion"] = str(rv)
        raw["status"] = {"allocation": {"devices": {"results": [
            {"request": r, "driver": d, "pool": p, "device": dev} for r, d, p, dev in a.results]},
            "nodeSelector": a.node_selector},
            "reservedFor": [{"resource": "pods", "name": n, "uid": u} for _, n, u in a.reserved_for]}
        events.append(("ResourceClaim", raw))
    for pod, node in plan.placements:
        raw = copy.deepcopy(raws[pod.key])
        rv += 1
        raw["metadata"]["resourceVersion"] = str(rv)
        raw["spec"]["nodeName"] = node
        events.append(("Pod", raw))
    return events


def check(cache: ClusterCache, pods: int) -> list[str]:
    """Every pod bound, every claim allocated on its pod's node, no device allocated twice."""
    problems = []
    bound = {key: p.spec.node_name for key, p in cache.pods.items() if p.spec.node_name}
    if len(bound) != pods:
        problems.append(f"{len(bound)}/{pods} pods bound")
    seen: dict[str, str] = {}
    for key, claim in cache.resource_claims.items():
        alloc = claim.status.allocation
        if alloc is None:
            problems.append(f"claim {key} not allocated")
            continue
        owner = f"{claim.metadata.namespace}/{claim.metadata.owner_references[0].name}"
        for r in alloc.devices.results:
            if r.pool != bound.get(owner):
                problems.append(f"claim {key}: device {r.device_id} not on its pod's node {bound.get(owner)}")
            if r.device_id in seen:
                problems.append(f"device {r.device_id} allocated to {seen[r.device_id]} and {key}")
            seen[r.device_id] = key
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--gangs", type=int, default=250)
    parser.add_argument("--pods-per-gang", type=int, default=4)
    parser.add_argument("--in-flight", type=int, default=8, help="cycles before a plan's watch events arrive")
    parser.add_argument("--profile", action="store_true", help="cProfile the timed calls")
    args = parser.parse_args(argv)
    raws = objects(args.nodes, args.gangs, args.pods_per_gang)
    by_key = {f"{r['metadata']['namespace']}/{r['metadata']['name']}": r for kind in ("Pod", "ResourceClaim")
              for r in raws[kind]}
    cache = ClusterCache("gang-scheduler", dra=True)
    t0 = time.process_time()
    for kind, items in raws.items():
        cache.replace(kind, items)
    roots = sorted(cache.take_changed_roots(), key=str)
    gc.collect()
    gc.freeze()
    print(f"DRA drain in process: {args.nodes} nodes, {args.gangs} gangs x {args.pods_per_gang} pods; "
          f"objects indexed in {time.process_time() - t0:.2f} s CPU")
    config, spent, timed_pods, rv = SolverConfig(), 0.0, 0, 10
    profile = cProfile.Profile() if args.profile else None
    lag: list[Plan] = []
    first_s = 0.0

    def deliver(plan: Plan, timed: bool) -> None:
        nonlocal spent, rv
        events = watch_events(plan, by_key, rv)
        rv += len(events)
        start = time.process_time()
        for kind, raw in events:
            cache.apply(kind, "MODIFIED", raw)
        if timed:
            spent += time.process_time() - start

    for i, key in enumerate(roots):
        timed = i > 0
        if profile is not None and timed:
            profile.enable()
        start = time.process_time()
        tree = cache.tree(key)
        assert tree is not None
        decision = schedule_one(tree, cache.snapshot(), config)
        if isinstance(decision, Plan):
            cache.assume(decision, f"plan-{i}")
            lag.append(decision)
            timed_pods += len(decision.placements) if timed else 0
        if timed:
            spent += time.process_time() - start
        else:
            first_s = time.process_time() - start
        if len(lag) > args.in_flight:
            deliver(lag.pop(0), timed)
        if profile is not None:
            profile.disable()
    while lag:
        deliver(lag.pop(0), True)
    print(f"  first gang (CEL over every device): {first_s * 1000:.0f} ms CPU")
    print(f"  scheduler CPU per pod: {1000 * spent / max(timed_pods, 1):.3f} ms ({timed_pods} pods, "
          f"{spent:.2f} s CPU: snapshot, solve, assume, watch events)")
    problems = check(cache, args.gangs * args.pods_per_gang)
    for problem in problems[:10]:
        print(f"  CHECK FAILED: {problem}")
    if profile is not None:
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
