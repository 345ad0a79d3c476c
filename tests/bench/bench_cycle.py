"""The plain and gang drains in one process: the scheduler's own CPU per pod outside HTTP.

Run with ``.venv/bin/python -m tests.bench.bench_cycle [--case plain|gangs4] [--in-flight N] [--profile]``.

The objects of ``bench_e2e --case plain`` (500 nodes as kubelets register them; 4,000 pods of ours without a
group, 1 cpu) or ``--case gangs4`` (the same nodes; 1,000 PodGroups of 4 pods, every 4th gang GPU pods), each pod
as the API server stores it (defaulted, admitted, ``managedFields``: ``tests/bench/realistic.py``), are fed to a
:class:`~scheduler.cache.cluster.ClusterCache` as the informers' first lists feed it (the pods decoded from a list
page's bytes, ``scheduler.client.decoding.page_decoder``); then ``gc.freeze()``, as
``run`` does once its caches are synced. Each root is then decided as the live driver decides it
(:meth:`CycleRunner.attempt <scheduler.cycle.CycleRunner.attempt>`: the tree, the snapshot, the solve, assume),
and ``--in-flight`` cycles later each of its pods' watch events comes back as the server streams a bind — the
pod with ``spec.nodeName``, ``PodScheduled`` and a new resourceVersion, as JSON bytes decoded the informer's way
(``scheduler.client.decoding.event_decoder``) and applied to the cache; ``--in-flight`` cycles after that come the
watch events of the kubelet's two status writes as it starts the pod (:func:`kubelet_events`), decoded and applied
the same way.

Timed (``time.process_time``): the cycles, the binds' watch events and the kubelets', each apart; building the events'
JSON is not.
Printed: CPU per pod for each, and with ``--profile`` a cProfile of the timed calls. Checked after timing: every
pod bound, no node over its allocatable, every gang whole (exit 1 otherwise). Not measured here: HTTP (the binds,
Events and PATCHes and their replies), the driver's bookkeeping around a decision, and the event loop;
``bench_e2e`` measures the whole.
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import gc
import json
import pstats
import sys
import time
from collections import Counter
from typing import Any

from scheduler.cache.cluster import ClusterCache
from scheduler.client.decoding import event_decoder, page_decoder
from scheduler.cycle import CycleRunner
from scheduler.framework.plan import Plan, SolverConfig
from scheduler.model.pod import Pod
from tests.bench import realistic
from tests.bench.bench_e2e import case_gang_pod, gang_name, node_dicts, plain_pod
from tests.integration.livekit import podgroup


def objects(case: str, nodes: int, pods: int) -> dict[str, list[dict[str, Any]]]:
    """Raw API dicts by kind, as the server stores them (``pods``: the plain pods, or 4 × the gangs)."""
    node_bodies = [realistic.node_body(raw, 1) for raw in node_dicts(nodes, 1)]
    groups = [podgroup(gang_name(g), 4) for g in range(pods // 4)] if case == "gangs4" else []
    sent = ([case_gang_pod(gang_name(g), g, m, True) for g in range(pods // 4) for m in range(4)] if case == "gangs4"
            else [plain_pod(i) for i in range(pods)])
    stored = []
    for i, body in enumerate(sent):
        pod, created = realistic.default_pod(body)
        realistic.track_fields(pod, {k: v for k, v in created.items() if k != "status"}, "bench", None)
        pod["metadata"].update(uid=f"pod-uid-{i}", resourceVersion="1", creationTimestamp=realistic.now())
        stored.append(pod)
    return {"Node": node_bodies, "PodGroup": groups, "Pod": stored}


def bound_event(raw: dict[str, Any], node: str, rv: int) -> bytes:
    """The watch event of ``raw`` bound to ``node``, as the server streams it."""
    pod = copy.deepcopy(raw)
    pod["metadata"]["resourceVersion"] = str(rv)
    pod["spec"]["nodeName"] = node
    pod["status"]["conditions"] = [realistic.scheduled_condition()]
    return json.dumps({"type": "MODIFIED", "object": pod}).encode()


def kubelet_events(raw: dict[str, Any], node: str, index: int, rv: int) -> list[bytes]:
    """The watch events of the kubelet's two status writes for ``raw`` once bound to ``node``: its containers being
    created, then running (:func:`~tests.bench.realistic.starting_status`,
    :func:`~tests.bench.realistic.running_status`; ``index`` picks the pod IP), each recorded in ``managedFields``
    under the kubelet, resourceVersions ``rv`` and ``rv + 1``."""
    pod = copy.deepcopy(raw)
    pod["spec"]["nodeName"] = node
    events = []
    running = realistic.running_status(pod, index)
    for i, status in enumerate((realistic.starting_status(running), running)):
        pod["status"] = status
        pod["metadata"]["resourceVersion"] = str(rv + i)
        realistic.track_fields(pod, {"status": status}, "kubelet", "status")
        events.append(json.dumps({"type": "MODIFIED", "object": pod}).encode())
    return events


def check(cache: ClusterCache, pods: int) -> list[str]:
    """Every pod bound, no node over its allocatable, every gang whole."""
    problems = []
    bound = [p for p in cache.pods.values() if p.spec.node_name]
    if len(bound) != pods:
        problems.append(f"{len(bound)}/{pods} pods bound")
    for node in cache.nodes.values():
        for name, used, allocatable in cache.usage.overcommitted(node.name, node.allocatable):
            problems.append(f"node {node.name}: {name} {used} > {allocatable}")
    per_gang = Counter(p.group_name for p in bound if p.group_name)
    problems += [f"gang {g}: {n}/4 bound" for g, n in per_gang.items() if n != 4]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", choices=("plain", "gangs4"), default="plain")
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=4000)
    parser.add_argument("--in-flight", type=int, default=16, help="cycles before a plan's watch events arrive")
    parser.add_argument("--profile", action="store_true", help="cProfile the timed calls")
    args = parser.parse_args(argv)
    raws = objects(args.case, args.nodes, args.pods)
    by_key = {f"{r['metadata']['namespace']}/{r['metadata']['name']}": r for r in raws["Pod"]}
    cache = ClusterCache("gang-scheduler", dra=True)
    for kind, items in raws.items():  # pods as the informer decodes its list pages, from their bytes
        cache.replace(kind, page_decoder(Pod)(json.dumps({"items": items}).encode()) if kind == "Pod" else items)
    roots = sorted(cache.take_changed_roots(), key=str)
    gc.collect()
    gc.freeze()
    print(f"{args.case} drain in process: {args.nodes} nodes, {len(roots)} roots, {len(by_key)} pods "
          f"({len(json.dumps(raws['Pod'][0]))} bytes of JSON each)")
    runner, decode = CycleRunner(cache, SolverConfig()), event_decoder(Pod)
    profile = cProfile.Profile() if args.profile else None
    cycle_s = watch_s = kubelet_s = 0.0
    placed, rv = 0, 10
    lag: list[Plan] = []
    started: list[Plan] = []  # bound, the kubelet's writes still to come

    def apply(lines: list[bytes]) -> float:
        if profile is not None:
            profile.enable()
        start = time.process_time()
        for line in lines:
            kind, obj = decode(line)
            cache.apply("Pod", kind, obj)
        elapsed = time.process_time() - start
        if profile is not None:
            profile.disable()
        return elapsed

    def deliver(plan: Plan) -> None:
        nonlocal watch_s, rv
        lines = [bound_event(by_key[pod.key], node, rv + i) for i, (pod, node) in enumerate(plan.placements, 1)]
        rv += len(lines)
        watch_s += apply(lines)
        started.append(plan)

    def kubelet(plan: Plan) -> None:
        nonlocal kubelet_s, rv
        lines = []
        for pod, node in plan.placements:
            lines += kubelet_events(by_key[pod.key], node, rv, rv)
            rv += 2
        kubelet_s += apply(lines)

    for key in roots:
        if profile is not None:
            profile.enable()
        start = time.process_time()
        attempt = runner.attempt(key)
        cycle_s += time.process_time() - start
        if profile is not None:
            profile.disable()
        if attempt is not None and attempt.plan is not None:
            placed += len(attempt.plan.placements)
            lag.append(attempt.plan)
        if len(lag) > args.in_flight:
            deliver(lag.pop(0))
        if len(started) > args.in_flight:
            kubelet(started.pop(0))
    while lag:
        deliver(lag.pop(0))
    while started:
        kubelet(started.pop(0))
    per = 1000 / max(placed, 1)
    print(f"  scheduler CPU per pod: cycle {cycle_s * per:.3f} ms (tree, snapshot, solve, assume), watch event "
          f"{watch_s * per:.3f} ms (decode, apply); {placed} pods placed")
    print(f"  and the kubelet's two status writes per pod, as the watch brings them: {kubelet_s * per:.3f} ms per pod "
          f"(decode, apply)")
    problems = check(cache, len(by_key))
    for problem in problems[:10]:
        print(f"  CHECK FAILED: {problem}")
    if profile is not None:
        pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
