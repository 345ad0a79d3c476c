"""Preemption benchmark: CPU time to choose victims as the cluster grows, nodes full of low-priority 8-pod gangs.

Run with ``make bench`` or ``.venv/bin/python -m tests.bench.bench_preemption [--repeat N] [--sizes 1000,5000]
[--layout packed,spread] [--mode all,single] [--cases ab]`` (results: ``docs/benchmarks.md``, section
*Preemption*). Not collected by pytest.

Cluster, per size N of ``--sizes`` (default 1,000 then 5,000 nodes): N nodes of 8 GPUs, 96 cpu, 600Gi; N running
8-pod gangs (priority 1, ``disruptionMode`` from ``--mode``), each pod 1 GPU + 8 cpu + 64Gi, so every node's GPUs
are taken; and 2 lone pods per node (priority 0, 2 cpu, no GPU: candidates that free no GPU) — 10·N pods, so
1,000 nodes hold 1,000 gangs and 5,000 nodes 50,000 pods. Layouts: ``packed`` — gang g on node g (how ``pack``
places them); ``spread`` — pod j of gang g on node (g + 125·j) mod N, so every node holds one pod of 8 different
gangs (volcano#4607's shape) and a gang's victims span 8 nodes.

Cases: **(a)** a 1-pod gang of priority 1000 (1 GPU + 8 cpu) preempting — targets p50 ≤ 10 ms at 1,000 nodes,
≤ 15 ms at 5,000 nodes, and at most 1.5× from the first size to the largest (upstream measured P50 12.5 ms for
this at 1,000 nodes in kubernetes PR #140651); **(b)** a 64-pod gang of priority 1000 — target p50 ≤ 50 ms at
5,000 nodes; **(c)** a 1-pod gang of priority 0, below which nothing runs — a gang of a backlog waiting for
capacity, tried again with the cluster unchanged: no victim (no target; ``first`` reads every node's floor);
**(d)** a 1-pod gang of priority 1, below which only the lone pods run: they free no GPU, so preemption is not
helpful after every window (no target).

Timed, in CPU seconds of this process (``time.process_time``: the machine is shared): one
``DefaultPreemption.post_filter`` call — the victim selection (candidate units, PDB split, the what-if solves,
the reprieve) — on the cache's snapshot, repeated ``--repeat`` times on the same state; the first call
(static filters over every node and the per-node memos, kept across calls as in a live scheduler) is reported
apart as ``first``. The failing solve before it is not timed (printed). Checked after each case: every victim
of strictly lower priority, whole units only, and the tree fits on the snapshot without the victims.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from scheduler.cache.cluster import ClusterCache
from scheduler.cache.group_view import CacheGroupView
from scheduler.framework import Plan, Preemption, SolverConfig, Unschedulable
from scheduler.model import Node, Pod, PodGroup
from scheduler.model.scheduling import GroupKey
from scheduler.preemption import DefaultPreemption
from scheduler.solver import solve
from tests.bench.bench_solver import machine

NS = "bench"
GPU = "nvidia.com/gpu"
SCHEDULER = "gang-scheduler"
TARGETS_MS = {("a", 1000): 10.0, ("a", 5000): 15.0, ("b", 5000): 50.0}
"""p50 targets per (case, nodes)."""
FLAT = 1.5
"""Case (a): the largest size's p50 at most this many times the smallest's."""
SIZES = {"a": 1, "b": 64, "c": 1, "d": 1}
PRIORITY = {"a": 1000, "b": 1000, "c": 0, "d": 1}
"""The preemptor's priority per case (the running gangs': 1; the lone pods': 0)."""
UPSTREAM_A_MS = 12.5
POD_REQUESTS = {"cpu": "8", "memory": "64Gi", GPU: "1"}
LONE_REQUESTS = {"cpu": "2", "memory": "4Gi"}
LONE_PER_NODE = 2


def nodes(count: int) -> list[Node]:
    alloc = {"cpu": "96", "memory": "600Gi", GPU: "8", "pods": "110"}
    return [Node.model_validate({"metadata": {"name": f"node-{i:05d}", "labels": {"kubernetes.io/hostname":
                                                                                   f"node-{i:05d}"}},
                                 "status": {"allocatable": alloc, "capacity": alloc,
                                            "conditions": [{"type": "Ready", "status": "True"}]}})
            for i in range(count)]


def group(name: str, min_count: int, priority: int, mode: str | None) -> PodGroup:
    spec = {"schedulingPolicy": {"gang": {"minCount": min_count}}, "priority": priority}
    if mode:
        spec["disruptionMode"] = {mode: {}}
    return PodGroup.model_validate({"metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}",
                                                 "creationTimestamp": "2026-11-01T00:00:00Z"}, "spec": spec})


def pod(name: str, group_name: str | None, node: str | None, started: int = 0) -> Pod:
    spec: dict[str, object] = {"schedulerName": SCHEDULER,
                               "containers": [{"name": "main", "resources": {"requests": POD_REQUESTS}}]}
    if group_name is None:
        spec.update(schedulerName="default-scheduler", priority=0,
                    containers=[{"name": "main", "resources": {"requests": LONE_REQUESTS}}])
    else:
        spec["schedulingGroup"] = {"podGroupName": group_name}
    status: dict[str, object] = {"phase": "Pending"}
    if node:
        spec["nodeName"] = node
        status = {"phase": "Running", "startTime": f"2026-11-01T{started // 3600 % 24:02d}:{started // 60 % 60:02d}:"
                                                   f"{started % 60:02d}Z"}
    return Pod.model_validate({"metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}",
                                            "creationTimestamp": "2026-11-01T00:00:00Z"},
                               "spec": spec, "status": status})


def cluster(count: int, layout: str, mode: str | None, size: int,
            priority: int = 1000) -> tuple[ClusterCache, GroupKey]:
    """The cache with ``count`` full nodes of running gangs and lone pods, and the pending preemptor of ``size``
    pods at ``priority``."""
    ns = nodes(count)
    groups = [group(f"low-{g:05d}", 8, 1, mode) for g in range(count)]
    pods: list[Pod] = []
    for g in range(count):
        for j in range(8):
            where = g if layout == "packed" else (g + 125 * j) % count
            pods.append(pod(f"low-{g:05d}-{j}", f"low-{g:05d}", ns[where].name, started=g))
    pods += [pod(f"svc-{i:05d}-{k}", None, n.name, started=i) for i, n in enumerate(ns) for k in range(LONE_PER_NODE)]
    groups.append(group("high", size, priority, None))
    pods += [pod(f"high-{i:02d}", "high", None) for i in range(size)]
    cache = ClusterCache(SCHEDULER)
    cache.load("Node", ns)
    cache.load("PodGroup", groups)
    cache.load("Pod", pods)
    return cache, GroupKey("PodGroup", NS, "high")


@dataclass
class Result:
    case: str
    nodes: int
    layout: str
    mode: str
    times_ms: list[float] = field(default_factory=list)
    first_ms: float = 0.0
    solve_ms: float = 0.0
    setup_s: float = 0.0
    victims: int = 0
    units: int = 0
    reprieved: int = 0
    violations: list[str] = field(default_factory=list)

    def pct(self, q: float) -> float:
        return float(np.percentile(self.times_ms, q))


def run(case: str, count: int, layout: str, mode: str | None, repeat: int, freeze: bool = False) -> Result:
    t0 = time.perf_counter()
    cache, key = cluster(count, layout, mode, SIZES[case], PRIORITY[case])
    tree = cache.tree(key)
    assert tree is not None
    snapshot = cache.snapshot()
    config = SolverConfig()
    plugin = DefaultPreemption(CacheGroupView(cache))
    out = Result(case, count, layout, mode or "single", setup_s=time.perf_counter() - t0)
    t = time.process_time()
    failure = solve(tree, snapshot, config)
    out.solve_ms = (time.process_time() - t) * 1000
    assert isinstance(failure, Unschedulable), "the preemptor must not fit without preemption"
    gc.collect()
    if freeze:
        gc.freeze()
    decision = None
    for i in range(repeat + 1):
        t = time.process_time()
        decision = plugin.post_filter(tree, snapshot, failure, config)
        elapsed = (time.process_time() - t) * 1000
        if i == 0:
            out.first_ms = elapsed
        else:
            out.times_ms.append(elapsed)
    if freeze:
        gc.unfreeze()
    if case in ("c", "d"):  # no victim: nothing to do (None), or not helpful (Unschedulable)
        if isinstance(decision, Preemption):
            out.violations.append(f"preemption where none helps: {len(decision.victims)} victim(s)")
        return out
    assert isinstance(decision, Preemption), decision
    out.victims, out.units, out.reprieved = len(decision.victims), decision.units, decision.reprieved
    view = CacheGroupView(cache)
    for victim in decision.victims:
        if view.membership(victim).priority >= tree.priority:
            out.violations.append(f"victim {victim.key} not of lower priority")
    if mode == "all":
        grouped = [v for v in decision.victims if v.group_name]
        if len(grouped) != 8 * len({v.group_name for v in grouped}):
            out.violations.append("an all-mode gang was split")
    if not isinstance(solve(tree, snapshot.without(decision.victims), config), Plan):
        out.violations.append("the tree does not fit without the victims")
    return out


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.bench.bench_preemption", description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,5000", help="comma-separated node counts (default 1000,5000)")
    ap.add_argument("--nodes", type=int, help="one size only (same as --sizes N)")
    ap.add_argument("--repeat", type=int, default=30, help="timed calls per case after the first (default 30)")
    ap.add_argument("--layout", default="packed,spread", help="packed, spread or both (default)")
    ap.add_argument("--mode", default="all,single", help="disruptionMode of the running gangs: all, single or both")
    ap.add_argument("--cases", default="abcd", help="a (1-pod preemptor), b (64-pod preemptor), c (1-pod, nothing "
                    "below it), d (1-pod, only pods that free nothing it needs below it) or any of them (default all)")
    ap.add_argument("--gc-freeze", action="store_true",
                    help="gc.freeze() after building each cluster: the cache's objects leave the collector's "
                         "generations, as a long-running process that froze its heap after start-up would see")
    args = ap.parse_args(argv)
    sizes = [args.nodes] if args.nodes else [int(n) for n in args.sizes.split(",")]
    print("gang-scheduler preemption benchmark")
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.1f}")
    print(f"clusters: {', '.join(str(n) for n in sizes)} nodes x 8 GPUs, as many running 8-pod gangs of priority 1 "
          f"(1 GPU each, every GPU taken) and {LONE_PER_NODE} lone pods per node; "
          f"preemptor priority 1000 (c: 0, d: 1); "
          f"{args.repeat} timed calls per case after the first, CPU ms; "
          f"gc {'frozen after set-up' if args.gc_freeze else 'enabled, nothing frozen'}")
    results: list[Result] = []
    wall = time.perf_counter()
    for count in sizes:
        print(f"\n{count} nodes, {count} gangs, {10 * count} running pods")
        for case in args.cases:
            for layout in args.layout.split(","):
                for mode in args.mode.split(","):
                    r = run(case, count, layout, None if mode == "single" else mode, args.repeat, args.gc_freeze)
                    results.append(r)
                    print(f"({case}) {SIZES[case]:>2}-pod preemptor, {layout:<6} layout, disruptionMode {r.mode:<6}: "
                          f"p50 {r.pct(50):6.2f} ms  p90 {r.pct(90):6.2f}  p99 {r.pct(99):6.2f}  "
                          f"max {max(r.times_ms):6.2f}  first {r.first_ms:6.1f} ms | failing solve {r.solve_ms:.1f} ms "
                          f"| victims {r.victims} in {r.units} unit(s), {r.reprieved} reprieved "
                          f"| setup {r.setup_s:.1f} s"
                          + "".join(f"\n  ! {v}" for v in r.violations))
    print("\ntargets (worst p50 over layouts and modes):")
    worst: dict[tuple[str, int], Result] = {}
    for r in results:
        key = (r.case, r.nodes)
        if key not in worst or r.pct(50) > worst[key].pct(50):
            worst[key] = r
    for (case, count), r in sorted(worst.items()):
        target = TARGETS_MS.get((case, count))
        verdict = (f"vs target <= {target:.0f} ms: {'MET' if r.pct(50) <= target else 'MISSED'}" if target
                   else "no target")
        ref = f" (upstream PR #140651: P50 {UPSTREAM_A_MS} ms at 1,000 nodes)" if case == "a" and count == 1000 else ""
        print(f"  ({case}) {count} nodes: p50 {r.pct(50):.2f} ms ({r.layout}, {r.mode}) {verdict}{ref}")
    if "a" in args.cases and len(sizes) > 1:
        small, large = worst[("a", min(sizes))].pct(50), worst[("a", max(sizes))].pct(50)
        print(f"  (a) flat cost: {max(sizes)} / {min(sizes)} nodes = {large / small:.2f}x vs target <= {FLAT}x: "
              f"{'MET' if large <= FLAT * small else 'MISSED'}")
    print(f"\nwall time {time.perf_counter() - wall:.1f} s; peak RSS {peak_rss_mib():.0f} MiB")
    return 0 if all(not r.violations for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
