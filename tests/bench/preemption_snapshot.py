"""Snapshots of a busy GPU cluster in which every pending gang must preempt lower-priority work.

``python -m tests.bench.preemption_snapshot --nodes 2000 -o busy.json`` (or ``.yaml``) writes one
``kind: List`` as ``kubectl get nodes,pods,podgroups,priorityclasses -A -o json`` would; ``simulate``
reads it as is, and ``bench_preemption --snapshot`` times ``simulate`` on it. Seeded and deterministic.

Shape for ``--nodes N`` (defaults give the 2,000-node / 20,000-pod case; 1,000, 5,000 and 15,000 nodes
scale every count with N):

* N nodes of 8 GPUs, 96 cpu, 1Ti (tainted for GPUs), spread over 3 zones × 40 racks;
* 8·N running pods of 1 GPU + 8 cpu + 64Gi, so every node is full:

  - three quarters of them in running 8-pod gangs of priority 10 (PriorityClass ``batch-low``, PodGroup
    ``minCount`` 8), each gang across two nodes (4 + 4); every other gang has ``disruptionMode: all``
    (evicted whole or not at all), the rest are evicted pod by pod;
  - the last quarter lone pods of priority 0 (``default-scheduler``, no group), 8 per node;

* N/4 pending gangs of ours, priority 1000 (PriorityClass ``training-high``), of 4, 8, 8 and 12 pods in
  turn (2·N pending pods), the same 1-GPU pods: none fits without evicting lower-priority pods, and all
  of them fit once about a quarter of the running pods are gone.

So 2,000 nodes give 16,000 running + 4,000 pending = 20,000 pods and 500 preemptions.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
import uuid
from pathlib import Path
from typing import Any

import yaml

from tests.bench.bench_solver import GPU, GPU_TOLERATION, RACK_KEY, RACKS_PER_ZONE, ZONE_KEY, ZONES

SCHEDULER = "gang-scheduler"
EPOCH = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
NAMESPACE = "ml"
LOW, HIGH = "batch-low", "training-high"
PRIORITY = {LOW: 10, HIGH: 1000}
PENDING_SIZES = (4, 8, 8, 12)
"""Pending gang sizes, in turn (8 on average)."""
POD_REQUESTS = {"cpu": "8", "memory": "64Gi", GPU: "1"}
NODE_ALLOCATABLE = {"cpu": "96", "memory": "1Ti", GPU: "8", "pods": "110"}


def _ts(seconds: int) -> str:
    return (EPOCH + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def node(i: int, rng: random.Random) -> dict[str, Any]:
    """Node ``i``: 8 GPUs, tainted for them, in a seeded zone and rack."""
    name = f"gpu-{i:05d}"
    zone = ZONES[rng.randrange(len(ZONES))]
    rack = f"{zone}-rack-{rng.randrange(RACKS_PER_ZONE):02d}"
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": _uid(rng), "creationTimestamp": _ts(0),
                         "labels": {"kubernetes.io/hostname": name, ZONE_KEY: zone, RACK_KEY: rack}},
            "spec": {"taints": [{"key": GPU, "value": "present", "effect": "NoSchedule"}]},
            "status": {"allocatable": NODE_ALLOCATABLE, "capacity": NODE_ALLOCATABLE,
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name: str, created: int, rng: random.Random, *, node_name: str | None, group: str | None,
        priority_class: str | None) -> dict[str, Any]:
    """A 1-GPU pod: running on ``node_name`` or pending; of ours when in ``group`` (else ``default-scheduler``)."""
    spec: dict[str, Any] = {
        "schedulerName": SCHEDULER if group else "default-scheduler",
        "containers": [{"name": "main", "image": "registry.example.com/ml/train:1.3.0",
                        "resources": {"requests": POD_REQUESTS, "limits": POD_REQUESTS}}],
        "tolerations": [GPU_TOLERATION],
        "priority": PRIORITY[priority_class] if priority_class else 0,
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    status: dict[str, Any] = {"phase": "Pending"}
    if node_name:
        spec["nodeName"] = node_name
        status = {"phase": "Running", "startTime": _ts(created), "qosClass": "Guaranteed"}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE, "uid": _uid(rng), "creationTimestamp": _ts(created),
                         "labels": {"app": group or "svc"}},
            "spec": spec, "status": status}


def podgroup(name: str, min_count: int, priority_class: str, created: int, rng: random.Random,
             mode: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}},
                            "priorityClassName": priority_class}
    if mode:
        spec["disruptionMode"] = {mode: {}}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NAMESPACE, "uid": _uid(rng), "creationTimestamp": _ts(created)},
            "spec": spec}


def cluster(nodes: int, seed: int = 23) -> dict[str, Any]:
    """The snapshot of ``nodes`` nodes (see the module docstring), as a ``kind: List``."""
    rng = random.Random(seed)
    items: list[dict[str, Any]] = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
         "metadata": {"name": name, "uid": _uid(rng), "creationTimestamp": _ts(0)}, "value": value}
        for name, value in PRIORITY.items()]
    node_items = [node(i, rng) for i in range(nodes)]
    items.extend(node_items)
    names = [n["metadata"]["name"] for n in node_items]
    slots = 8 * nodes
    grouped = slots * 3 // 4 // 8  # running 8-pod gangs
    for g in range(grouped):
        group = f"low-{g:05d}"
        items.append(podgroup(group, 8, LOW, g, rng, "all" if g % 2 == 0 else None))
        for j in range(8):
            where = names[(g * 8 + j + 4) % (grouped * 8) // 8]  # 4 pods on one node, 4 on the next
            items.append(pod(f"{group}-{j}", g, rng, node_name=where, group=group, priority_class=LOW))
    for s in range(grouped * 8, slots):
        items.append(pod(f"svc-{s:06d}", s % 3600, rng, node_name=names[s // 8], group=None, priority_class=None))
    for g in range(nodes // 4):
        group, size = f"train-{g:05d}", PENDING_SIZES[g % len(PENDING_SIZES)]
        items.append(podgroup(group, size, HIGH, 3600 + g, rng))
        items.extend(pod(f"{group}-{j}", 3600 + g, rng, node_name=None, group=group, priority_class=HIGH)
                     for j in range(size))
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


def write(nodes: int, path: Path, seed: int = 23) -> int:
    """Write the snapshot to ``path`` (JSON as ``-o json`` writes it, YAML for ``.yaml``/``.yml``); its pod count."""
    dump = cluster(nodes, seed)
    with path.open("w") as f:
        if path.suffix in (".yaml", ".yml"):
            yaml.dump(dump, f, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), default_flow_style=False,
                      sort_keys=False, width=4096)
        else:
            json.dump(dump, f, indent=4)
    return sum(1 for item in dump["items"] if item["kind"] == "Pod")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.bench.preemption_snapshot", description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=2000, help="nodes (default 2000: 20,000 pods, 500 pending gangs)")
    ap.add_argument("--seed", type=int, default=23)
    ap.add_argument("-o", "--output", type=Path, required=True, help="file to write (.json, or .yaml)")
    args = ap.parse_args(argv)
    pods = write(args.nodes, args.output, args.seed)
    print(f"{args.output}: {args.nodes} nodes, {pods} pods, {args.nodes // 4} pending gangs, "
          f"{args.output.stat().st_size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
