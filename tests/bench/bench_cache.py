"""Benchmark of the incremental cache: events, re-list, start-up and memory at 5,000 nodes / 50,000 pods.

Run with ``make bench`` or ``.venv/bin/python -m tests.bench.bench_cache [--nodes N --pods N]``.

What it measures, on a :class:`~scheduler.cache.cluster.ClusterCache` fed raw API dicts exactly as the
informers feed it (``replace`` after a list, ``apply`` per watch event):

* **start-up**: every kind listed and indexed (``replace`` of Nodes, PriorityClasses, PodGroups, Pods),
  then the first snapshot and the first tree refresh — what happens before the scheduler is ready;
* **events**: one ``apply`` per watch event plus the work it causes before the next cycle
  (``take_changed_roots``: the trees it touched rebuilt), for four kinds of pod event — a status-only
  update (a condition: quiet), a label change of a bound pod, a new pending member of a gang, a delete;
  and node events (a heartbeat, a label change). Reported as p50 / p99 / max per event, milliseconds;
* **re-list**: ``replace`` of every kind again with the same objects (nothing changed), and of the pods
  with 1 % changed — what a 410 costs;
* **snapshot**: one ``snapshot()`` after a change (the per-cycle cost);
* **memory**: the process's peak RSS (``VmHWM``).

Targets: an event ≤ 1 ms p99; a full re-list ≤ 10 s; RSS ≤ 1 GiB; start-up ≤ 10 s. Timing is
``time.perf_counter`` around each call on one thread; CPU time of the process is printed beside the
wall time, so load from other processes on the machine can be told apart.
"""

from __future__ import annotations

import argparse
import copy
import gc
import random
import resource
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from scheduler.cache.cluster import ClusterCache
from tests.bench.bench_solver import GPU, GPU_TOLERATION, node_dicts

NS = "bench"
SCHEDULER = "gang-scheduler"

TARGET_EVENT_P99_MS = 1.0
TARGET_RELIST_S = 10.0
TARGET_STARTUP_S = 10.0
TARGET_RSS_MIB = 1024.0


def pod_dict(name: str, group: str | None, node: str | None, gpu: bool, rng: random.Random) -> dict[str, Any]:
    """A realistic pod as a list returns it: two containers, labels, owner, conditions, statuses."""
    req: dict[str, str] = {"cpu": f"{rng.choice([1, 2, 4])}", "memory": f"{rng.choice([2, 4, 8])}Gi"}
    if gpu:
        req[GPU] = "1"
    spec: dict[str, Any] = {
        "schedulerName": SCHEDULER if group else "default-scheduler",
        "containers": [{"name": "main", "image": "registry.example.com/train:1.2.3",
                        "resources": {"requests": req, "limits": req},
                        "ports": [{"containerPort": 8080, "protocol": "TCP"}]},
                       {"name": "sidecar", "image": "registry.example.com/log:2",
                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}],
        "tolerations": [GPU_TOLERATION] if gpu else [],
    }
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if node:
        spec["nodeName"] = node
    status: dict[str, Any] = {"phase": "Running" if node else "Pending",
                              "conditions": [{"type": "PodScheduled", "status": "True" if node else "False"}]}
    if node:
        status["containerStatuses"] = [{"name": "main", "ready": True, "restartCount": 0},
                                       {"name": "sidecar", "ready": True, "restartCount": 0}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "resourceVersion": "1",
                         "creationTimestamp": "2026-11-01T00:00:00Z",
                         "labels": {"app": group or "web", "tier": rng.choice(["a", "b"])},
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": group or name,
                                              "uid": f"job-{group or name}", "controller": True}]},
            "spec": spec, "status": status}


def podgroup_dict(name: str, min_count: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "resourceVersion": "1",
                         "creationTimestamp": "2026-11-01T00:00:00Z"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}


def pods_of(nodes: list[str], gangs: int, seed: int) -> Iterator[dict[str, Any]]:
    """The pods, made one at a time (as pages of a list arrive): gangs of 10, ~90 % of them bound (one pod per
    node slot, round robin), the rest pending. The same ``seed`` gives the same pods."""
    rng = random.Random(seed)
    for g in range(gangs):
        name = f"g{g:05d}"
        bound = rng.random() < 0.9
        for i in range(10):
            node = nodes[(g * 10 + i) % len(nodes)] if bound else None
            yield pod_dict(f"{name}-{i}", name, node, gpu=node is not None and node.startswith("gpu"), rng=rng)


def pages(items: Iterator[dict[str, Any]], size: int = 500) -> Iterator[list[dict[str, Any]]]:
    """``items`` in lists of ``size`` (the informer's list pages)."""
    page: list[dict[str, Any]] = []
    for item in items:
        page.append(item)
        if len(page) == size:
            yield page
            page = []
    if page:
        yield page


def relist(cache: ClusterCache, kind: str, items: Iterator[dict[str, Any]]) -> None:
    """Feed a list page by page, as the informer does."""
    r = cache.relist(kind)
    for page in pages(items):
        r.add(page)  # the events go to the driver page by page; nothing keeps them here
    r.finish()


def current_rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def peak_rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(call: Callable[[], object]) -> tuple[float, float]:
    """(wall ms, CPU ms) of one call."""
    cpu, wall = time.process_time(), time.perf_counter()
    call()
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


def summary(label: str, times_ms: list[float]) -> str:
    times = sorted(times_ms)
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
    return (f"  {label:<38} n={len(times):5d}  p50 {statistics.median(times):7.3f} ms  p99 {p99:7.3f} ms  "
            f"max {times[-1]:7.3f} ms")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50000)
    parser.add_argument("--events", type=int, default=2000, help="events of each kind")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    node_list = node_dicts(args.nodes, args.seed)
    names = [n["metadata"]["name"] for n in node_list]
    gangs = args.pods // 10
    groups = [podgroup_dict(f"g{g:05d}", 10) for g in range(gangs)]
    print(f"cache benchmark: {len(node_list)} nodes, {gangs * 10} pods, {len(groups)} PodGroups "
          f"(Python {sys.version.split()[0]}); lists fed in pages of 500 as the informers do")
    gc.collect()
    base_rss = current_rss_mib()

    cache = ClusterCache(SCHEDULER)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    relist(cache, "Node", iter(node_list))
    relist(cache, "PriorityClass", iter(()))
    relist(cache, "PodGroup", iter(groups))
    relist(cache, "CompositePodGroup", iter(()))
    relist(cache, "Pod", pods_of(names, gangs, args.seed))
    cache.snapshot()
    changed = cache.take_changed_roots()
    startup_s, startup_cpu_s = time.perf_counter() - wall0, time.process_time() - cpu0
    print(f"start-up (list every kind, index, first snapshot and trees): {startup_s:.2f} s wall, "
          f"{startup_cpu_s:.2f} s CPU; {len(changed)} roots; target ≤ {TARGET_STARTUP_S:.0f} s")
    gc.collect()
    print(f"memory after start-up: RSS {current_rss_mib():.0f} MiB (the process held {base_rss:.0f} MiB before "
          "the cache: interpreter, numpy, the node and PodGroup dicts)")

    sample = [p for i, p in enumerate(pods_of(names, gangs, args.seed)) if i % 7 == 0]
    bound = [p for p in sample if p["spec"].get("nodeName")]
    pending = [p for p in sample if not p["spec"].get("nodeName")]
    rv = iter(range(10, 10_000_000))
    results: dict[str, list[float]] = {}

    def event(label: str, kind: str, type_: str, body: dict[str, Any]) -> None:
        def run() -> None:
            cache.apply(kind, type_, body)
            cache.take_changed_roots()
        wall, _ = timed(run)
        results.setdefault(label, []).append(wall)

    for _ in range(args.events):
        p = copy.deepcopy(rng.choice(bound))
        p["metadata"]["resourceVersion"] = str(next(rv))
        p["status"]["conditions"].append({"type": "Ready", "status": rng.choice(["True", "False"])})
        event("pod status-only update (quiet)", "Pod", "MODIFIED", p)
    for _ in range(args.events):
        p = copy.deepcopy(rng.choice(bound))
        p["metadata"]["resourceVersion"] = str(next(rv))
        p["metadata"]["labels"]["rollout"] = str(next(rv))
        event("pod label change (tree rebuilt)", "Pod", "MODIFIED", p)
    for i in range(args.events):
        group = rng.choice(groups)["metadata"]["name"]
        p = pod_dict(f"{group}-extra-{i}", group, None, gpu=False, rng=rng)
        p["metadata"]["resourceVersion"] = str(next(rv))
        event("pod added (pending member)", "Pod", "ADDED", p)
    victims = rng.sample(bound, args.events)
    for p in victims:
        event("pod deleted (bound)", "Pod", "DELETED", p)
    for _ in range(args.events // 4):
        n = copy.deepcopy(rng.choice(node_list))
        n["metadata"]["resourceVersion"] = str(next(rv))
        n["status"]["conditions"][0]["lastHeartbeatTime"] = f"2026-11-01T00:{next(rv) % 60:02d}:00Z"
        event("node heartbeat (quiet)", "Node", "MODIFIED", n)
    for _ in range(20):
        n = copy.deepcopy(rng.choice(node_list))
        n["metadata"]["resourceVersion"] = str(next(rv))
        n["metadata"]["labels"]["pool"] = str(next(rv))
        event("node label change (new table)", "Node", "MODIFIED", n)
    print("events (apply + the trees they touch rebuilt), wall time per event:")
    for label, times in results.items():
        print(summary(label, times))
    pod_events = [t for label, times in results.items() if label.startswith("pod") for t in times]
    pod_p99 = sorted(pod_events)[int(len(pod_events) * 0.99)]
    print(f"  every pod event: p99 {pod_p99:.3f} ms; target ≤ {TARGET_EVENT_P99_MS} ms")

    snap_times = []
    for _ in range(20):
        p = copy.deepcopy(rng.choice(pending))
        p["metadata"]["resourceVersion"] = str(next(rv))
        p["metadata"]["labels"]["touch"] = str(next(rv))
        cache.apply("Pod", "MODIFIED", p)
        wall, _ = timed(cache.snapshot)
        snap_times.append(wall)
    print(summary("snapshot after a change", snap_times))

    del sample, bound, pending
    gc.collect()
    current = {k: p.metadata.resource_version for k, p in cache.objects["Pod"].items()}

    def listed(changed_share: float) -> Iterator[dict[str, Any]]:
        """The pods as a re-list shows them now (each with its cached resourceVersion), ``changed_share`` of
        them changed since (a new label and resourceVersion)."""
        for raw in pods_of(names, gangs, args.seed):
            key = f"{NS}/{raw['metadata']['name']}"
            if key not in current:
                continue
            raw["metadata"]["resourceVersion"] = current[key]
            if rng.random() < changed_share:
                raw["metadata"]["labels"]["relisted"] = "yes"
                raw["metadata"]["resourceVersion"] = str(next(rv))
            yield raw

    wall, cpu = timed(lambda: (relist(cache, "Node", iter(node_list)), relist(cache, "PodGroup", iter(groups)),
                               relist(cache, "Pod", listed(0.0)), cache.take_changed_roots()))
    relist_s = wall / 1000
    print(f"re-list of every kind, nothing changed: {wall / 1000:.2f} s wall, {cpu / 1000:.2f} s CPU "
          f"(making the raw dicts included); target ≤ {TARGET_RELIST_S:.0f} s")
    wall, cpu = timed(lambda: (relist(cache, "Pod", listed(0.01)), cache.take_changed_roots()))
    print(f"re-list of the pods, 1 % changed: {wall / 1000:.2f} s wall, {cpu / 1000:.2f} s CPU")
    wall, cpu = timed(lambda: (relist(cache, "Pod", listed(1.0)), cache.take_changed_roots()))
    print(f"re-list of the pods, every pod changed: {wall / 1000:.2f} s wall, {cpu / 1000:.2f} s CPU")
    rss = peak_rss_mib()
    print(f"peak RSS {rss:.0f} MiB (benchmark objects included); target ≤ {TARGET_RSS_MIB:.0f} MiB")
    ok = (pod_p99 <= TARGET_EVENT_P99_MS and startup_s <= TARGET_STARTUP_S and rss <= TARGET_RSS_MIB
          and relist_s <= TARGET_RELIST_S)
    print("verdict:", "targets met" if ok else "a target was missed (see above)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
