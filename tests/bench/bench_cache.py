"""Benchmark of the incremental cache: events, re-list, start-up and memory at 5,000 nodes / 50,000 pods.

Run with ``make bench`` or ``.venv/bin/python -m tests.bench.bench_cache [--nodes N --pods N]``.

What it measures, on a :class:`~scheduler.cache.cluster.ClusterCache` fed as the informers of ``run`` feed it:
objects as the API server stores and serves them (:mod:`tests.bench.realistic`: pods defaulted and admitted, each
with its own service-account token volume, ``managedFields``, a running pod's kubelet status; nodes as their
kubelets register them, images included), each list page and watch event as JSON bytes, decoded the way ``run``
decodes them (pods and nodes straight into their models, :data:`~scheduler.live.informers.DECODED_AS_MODELS`;
PodGroups as plain JSON), then ``relist(...).add`` per page, ``apply`` per event:

* **start-up**: every kind listed and indexed (Nodes, PriorityClasses, PodGroups, Pods), then the first snapshot
  and the first tree refresh — what happens before the scheduler is ready;
* **events**: one event decoded and applied plus the work it causes before the next cycle
  (``take_changed_roots``: the trees it touched rebuilt), for four kinds of pod event — a status-only
  update (a condition: quiet), a label change of a bound pod, a new pending member of a gang, a delete;
  and node events (a heartbeat, a label change). Reported as p50 / p99 / max per event, milliseconds;
* **re-list**: every kind listed again with the same objects (nothing changed), and the pods with 1 % and with
  all of them changed — what a 410 costs;
* **snapshot**: one ``snapshot()`` after a change (the per-cycle cost);
* **memory**: the process's peak RSS (``VmHWM``).

Targets: an event ≤ 1 ms p99; a full re-list ≤ 10 s; RSS ≤ 1 GiB; start-up ≤ 10 s. Start-up and re-lists are the
CPU time of decoding and of the cache (the benchmark's own making of the JSON is not counted; the wall time of the
whole step is printed beside it); an event is its wall time (``time.perf_counter``) on one thread.
"""

from __future__ import annotations

import argparse
import copy
import gc
import hashlib
import json
import random
import resource
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from scheduler.cache.cluster import ClusterCache
from scheduler.client.decoding import event_decoder, page_decoder
from scheduler.live.informers import DECODED_AS_MODELS
from tests.bench import realistic
from tests.bench.bench_solver import GPU, GPU_TOLERATION, node_dicts

NS = "bench"
SCHEDULER = "gang-scheduler"

TARGET_EVENT_P99_MS = 1.0
TARGET_RELIST_S = 10.0
TARGET_STARTUP_S = 10.0
TARGET_RSS_MIB = 1024.0


def pod_dict(name: str, group: str | None, node: str | None, gpu: bool, rng: random.Random) -> dict[str, Any]:
    """A pod as a list returns it (:func:`stored`): two containers, labels, owner; on ``node``, running there."""
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
    return stored({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": name, "namespace": NS,
                                "labels": {"app": group or "web", "tier": rng.choice(["a", "b"])},
                                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": group or name,
                                                     "uid": f"job-{group or name}", "controller": True}]},
                   "spec": spec})


_STORED: dict[str, dict[str, Any]] = {}
"""One pod as stored per shape of what its creator sent (:func:`stored`), by that shape's JSON."""


def stored(sent: dict[str, Any]) -> dict[str, Any]:
    """``sent`` (a pod's body as its creator POSTs it; ``spec.nodeName`` set for a pod another scheduler bound) as the
    API server stores and lists it: defaulted and admitted with its own service-account token volume and the
    creator's ``managedFields`` (:func:`~tests.bench.realistic.default_pod`), and when bound, running with its
    kubelet's status (:func:`~tests.bench.realistic.running_pod`), its own pod IP; the server's stamps (uid,
    resourceVersion, creationTimestamp). Made from one stored pod per shape, renamed and moved, as the end-to-end
    benchmark preloads its running pods: the pods share the nested parts that do not vary."""
    meta, spec = sent["metadata"], sent["spec"]
    node = spec.get("nodeName")
    shape = {**spec, "nodeName": bool(node), "schedulingGroup": "schedulingGroup" in spec}
    key = json.dumps(shape, sort_keys=True)
    template = _STORED.get(key)
    if template is None:
        body = {**sent, "metadata": {"name": "template", "namespace": NS}}
        if node:
            template = realistic.running_pod({**body, "status": realistic.running_status(body, 0)})
        else:
            template, created = realistic.default_pod(body)
            realistic.track_fields(template, {k: v for k, v in created.items() if k != "status"},
                                   "kube-controller-manager", None)
        _STORED[key] = template
    name = meta["name"]
    own = realistic.with_own_token({**template["spec"], **{k: spec[k] for k in ("nodeName", "schedulingGroup")
                                                            if k in spec}}, name)
    status = template["status"]
    if node:
        index = int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)
        ip = f"10.{128 + index // 65536 % 64}.{index // 256 % 256}.{index % 256}"
        status = {**status, "podIP": ip, "podIPs": [{"ip": ip}]}
    return {**template, "metadata": {**template["metadata"], **meta, "uid": f"uid-{name}", "resourceVersion": "1",
                                     "creationTimestamp": "2026-11-01T00:00:00Z"},
            "spec": own, "status": status}


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


def relist(cache: ClusterCache, kind: str, items: Iterator[dict[str, Any]]) -> float:
    """Feed a list page by page as the informer does: each page's JSON bytes decoded as ``run`` decodes them (pods and
    nodes straight into their models, other kinds as plain JSON), then added. Returns the CPU seconds of the decoding
    and the cache (making the bytes is the benchmark's own work, not counted)."""
    r = cache.relist(kind)
    model = DECODED_AS_MODELS.get(kind)
    spent = 0.0
    for page in pages(items):
        data = json.dumps({"kind": f"{kind}List", "metadata": {"resourceVersion": "1"}, "items": page}).encode()
        start = time.process_time()
        r.add(page_decoder(model)(data) if model is not None else json.loads(data)["items"])
        spent += time.process_time() - start
    start = time.process_time()
    r.finish()
    return spent + time.process_time() - start


def event_line(type_: str, body: dict[str, Any]) -> bytes:
    """One line of a watch stream: the event of ``body`` as the API server sends it."""
    return json.dumps({"type": type_, "object": body}).encode()


def decoded(kind: str, line: bytes) -> tuple[str, Any]:
    """A watch event's line as ``run`` decodes it: (type, the object — a model for pods and nodes)."""
    model = DECODED_AS_MODELS.get(kind)
    if model is not None:
        return event_decoder(model)(line)
    event = json.loads(line)
    return event["type"], event["object"]


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


def timed(call: Callable[[], object]) -> float:
    """The wall time of one call, ms."""
    wall = time.perf_counter()
    call()
    return (time.perf_counter() - wall) * 1000


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
    node_list = [{**(body := realistic.node_body(n, args.seed)),
                  "metadata": {**body["metadata"], "uid": f"uid-{n['metadata']['name']}", "resourceVersion": "1",
                               "creationTimestamp": "2026-11-01T00:00:00Z"}}
                 for n in node_dicts(args.nodes, args.seed)]
    names = [n["metadata"]["name"] for n in node_list]
    gangs = args.pods // 10
    groups = [podgroup_dict(f"g{g:05d}", 10) for g in range(gangs)]
    print(f"cache benchmark: {len(node_list)} nodes, {gangs * 10} pods, {len(groups)} PodGroups "
          f"(Python {sys.version.split()[0]}); objects as the API server serves them, lists in pages of 500 and "
          "watch events as JSON bytes, decoded as the informers do")
    gc.collect()
    base_rss = current_rss_mib()

    cache = ClusterCache(SCHEDULER)
    wall0 = time.perf_counter()
    startup_s = sum(relist(cache, kind, items) for kind, items in (
        ("Node", iter(node_list)), ("PriorityClass", iter(())), ("PodGroup", iter(groups)),
        ("CompositePodGroup", iter(())), ("Pod", pods_of(names, gangs, args.seed))))
    cpu0 = time.process_time()
    cache.snapshot()
    changed = cache.take_changed_roots()
    startup_s += time.process_time() - cpu0
    print(f"start-up (list every kind, decode, index, first snapshot and trees): {startup_s:.2f} s CPU "
          f"({time.perf_counter() - wall0:.2f} s wall, making the JSON included); {len(changed)} roots; "
          f"target ≤ {TARGET_STARTUP_S:.0f} s")
    gc.collect()
    print(f"memory after start-up: RSS {current_rss_mib():.0f} MiB (the process held {base_rss:.0f} MiB before "
          "the cache: interpreter, numpy, the node and PodGroup dicts)")

    sample = [p for i, p in enumerate(pods_of(names, gangs, args.seed)) if i % 7 == 0]
    bound = [p for p in sample if p["spec"].get("nodeName")]
    pending = [p for p in sample if not p["spec"].get("nodeName")]
    rv = iter(range(10, 10_000_000))
    results: dict[str, list[float]] = {}

    def event(label: str, kind: str, type_: str, body: dict[str, Any]) -> None:
        line = event_line(type_, body)

        def run() -> None:
            cache.apply(kind, *decoded(kind, line))
            cache.take_changed_roots()
        wall = timed(run)
        results.setdefault(label, []).append(wall)

    for _ in range(args.events):
        p = copy.deepcopy(rng.choice(bound))
        p["metadata"]["resourceVersion"] = str(next(rv))
        ready = rng.choice(["True", "False"])
        p["status"]["conditions"] = [{**c, "status": ready, "lastTransitionTime": realistic.now()}
                                     if c["type"] in ("Ready", "ContainersReady") else c
                                     for c in p["status"]["conditions"]]
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
    print("events (decoded, applied, the trees they touch rebuilt), wall time per event:")
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
        cache.apply("Pod", *decoded("Pod", event_line("MODIFIED", p)))
        wall = timed(cache.snapshot)
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

    def relisted(*lists: tuple[str, Iterator[dict[str, Any]]]) -> tuple[float, float]:
        """(CPU seconds of decoding and the cache, wall seconds in all) of re-listing ``lists`` (kind, items) and
        rebuilding the trees they touched."""
        wall = time.perf_counter()
        cpu = sum(relist(cache, kind, items) for kind, items in lists)
        start = time.process_time()
        cache.take_changed_roots()
        return cpu + time.process_time() - start, time.perf_counter() - wall

    relist_s, wall_s = relisted(("Node", iter(node_list)), ("PodGroup", iter(groups)), ("Pod", listed(0.0)))
    print(f"re-list of every kind, nothing changed: {relist_s:.2f} s CPU ({wall_s:.2f} s wall, making the JSON "
          f"included); target ≤ {TARGET_RELIST_S:.0f} s")
    for share, what in ((0.01, "1 % changed"), (1.0, "every pod changed")):
        cpu_s, wall_s = relisted(("Pod", listed(share)))
        print(f"re-list of the pods, {what}: {cpu_s:.2f} s CPU ({wall_s:.2f} s wall)")
    rss = peak_rss_mib()
    print(f"peak RSS {rss:.0f} MiB (benchmark objects included); target ≤ {TARGET_RSS_MIB:.0f} MiB")
    ok = (pod_p99 <= TARGET_EVENT_P99_MS and startup_s <= TARGET_STARTUP_S and rss <= TARGET_RSS_MIB
          and relist_s <= TARGET_RELIST_S)
    print("verdict:", "targets met" if ok else "a target was missed (see above)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
