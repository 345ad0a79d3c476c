"""``simulate`` input benchmark: a cluster dump read and scheduled by ``gang-scheduler simulate``.

Run with ``make bench`` or ``.venv/bin/python -m tests.bench.bench_simulate [--quick] [--cases ...] [--repeat N]
[--profile]`` (results and findings: ``docs/benchmarks.md``, "simulate input").

Snapshots are generated (seeded, deterministic) as ``kubectl get nodes,pods,podgroups,... -A`` writes them:
one ``kind: List`` whose items carry what a real API server returns — ``metadata.uid``, ``resourceVersion``,
``creationTimestamp``, owner references (``managedFields`` left out, as kubectl does by default); nodes with
their addresses, conditions, node info and image list (the bulk of a real Node); running pods with env,
volume mounts, the projected service-account volume, default tolerations, conditions and container
statuses. Nodes are :func:`node_dicts` of the solver benchmark (3 zones × 40 racks, 40 % 8-GPU tainted
nodes). Beside them, kinds ``simulate`` does not read (ReplicaSets, Services, Events), as a ``get all`` dump
holds them.

Cases (each in YAML, as ``kubectl get -o yaml`` writes it, and in JSON, as ``-o json`` does):

* **5k** — 5,000 nodes, 5,000 running pods (``default-scheduler``, one per node), 300 PodGroups × 4 pending
  pods of ours (6,200 pods), the objects trimmed to what a generated snapshot holds (:func:`_trim`: 14 MB of
  YAML); target ≥ 5,000 pods/s wall, parse included.
* **50mb** — the same cluster with its objects in full, plus 10,000 objects of kinds not read: 49 MB of YAML;
  target ≤ 20 s and ≤ 1.5 GB peak RSS.

Each run is ``gang-scheduler simulate FILE`` as a child process (or ``gang-scheduler simulate -`` with the file
on standard input: the ``stdin`` variants), its report sent to ``/dev/null``; measured are the wall time, the
child's user+sys CPU seconds and its peak RSS (``os.wait4``'s ``rusage``, so only the child counts; the dumps
are generated in a spawned process, as a forked child starts from its parent's peak RSS), and the pods read
per wall second and per CPU second (on a loaded machine the second is the one to compare). The package's
bytecode is compiled first (:func:`compile_package`), as ``pip install`` does: an editable install run with
``PYTHONDONTWRITEBYTECODE`` (the container image's setting, and this repository's dev shells') would otherwise
compile every module of the scheduler again in each child. ``--profile`` runs
the 5k YAML case in-process under cProfile (load, then simulate) and prints the top functions by cumulative
time.
"""

from __future__ import annotations

import argparse
import compileall
import cProfile
import datetime as dt
import importlib.util
import io
import json
import multiprocessing
import os
import platform
import pstats
import random
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.bench.bench_solver import GPU, GPU_TOLERATION, node_dicts

SCHEDULER = "gang-scheduler"
EPOCH = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
TARGET_PODS_S = 5000.0
TARGET_50MB_S = 20.0
TARGET_50MB_RSS_MIB = 1536.0
NAMESPACES = ("ml-team", "inference", "batch", "web", "data")
IMAGES = [f"registry.example.com/{team}/{app}:{v}" for team in ("ml", "platform", "web") for app in
          ("train", "serve", "etl", "proxy", "agent", "exporter") for v in ("1.2.3", "1.3.0")]


def _ts(seconds: int) -> str:
    return (EPOCH + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _managed(manager: str, operation: str, fields: dict[str, Any], when: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": fields, "manager": manager,
            "operation": operation, "time": when}


def node_objects(count: int, seed: int) -> Iterator[dict[str, Any]]:
    """The solver benchmark's nodes, dressed as a list returns them (uid, managedFields, status in full)."""
    rng = random.Random(seed)
    for i, node in enumerate(node_dicts(count, seed)):
        name = node["metadata"]["name"]
        when = _ts(i)
        meta = node["metadata"]
        meta["labels"].update({"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux",
                               "node.kubernetes.io/instance-type": "p5.48xlarge" if GPU in node["status"]["allocatable"]
                               else "m5.16xlarge", "beta.kubernetes.io/arch": "amd64"})
        meta.update({"uid": _uid(rng), "resourceVersion": str(100000 + i), "creationTimestamp": when,
                     "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                                     "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
                     "managedFields": [
                         _managed("kubelet", "Update", {"f:metadata": {"f:labels": {f"f:{k}": {} for k in
                                                                                    meta["labels"]}}}, when),
                         _managed("kubelet", "Update", {"f:status": {"f:conditions": {}, "f:images": {},
                                                                     "f:nodeInfo": {}}}, when)]})
        node["spec"]["providerID"] = f"aws:///{meta['labels']['topology.kubernetes.io/zone']}/i-{i:017x}"
        status = node["status"]
        status["addresses"] = [{"type": "InternalIP", "address": f"10.{i // 65536}.{i // 256 % 256}.{i % 256}"},
                               {"type": "Hostname", "address": name}]
        status["conditions"] = [{"type": t, "status": s, "reason": r, "message": m, "lastHeartbeatTime": when,
                                 "lastTransitionTime": when} for t, s, r, m in (
            ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            ("Ready", "True", "KubeletReady", "kubelet is posting ready status"))]
        status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": 10250}}
        status["nodeInfo"] = {"architecture": "amd64", "bootID": _uid(rng), "containerRuntimeVersion":
                              "containerd://2.1.4", "kernelVersion": "6.8.0-1021-aws", "kubeProxyVersion": "",
                              "kubeletVersion": "v1.37.0", "machineID": f"{i:032x}", "operatingSystem": "linux",
                              "osImage": "Ubuntu 24.04.3 LTS", "systemUUID": _uid(rng)}
        status["images"] = [{"names": [f"{img}@sha256:{rng.getrandbits(256):064x}", img],
                             "sizeBytes": rng.randrange(10**7, 10**10)} for img in rng.sample(IMAGES, 12)]
        yield node


def pod_object(name: str, ns: str, node: str | None, group: str | None, gpu: bool, created: int,
               rng: random.Random) -> dict[str, Any]:
    """One pod as a list returns it: a running ``default-scheduler`` pod on ``node``, or a pending one of ours in
    PodGroup ``group``."""
    cpu, mem = (("8", "64Gi") if gpu else (rng.choice(["500m", "1", "2"]), rng.choice(["1Gi", "2Gi", "4Gi"])))
    req = {"cpu": cpu, "memory": mem, **({GPU: "1"} if gpu else {})}
    when = _ts(created)
    app = group or f"svc-{created % 97}"
    spec: dict[str, Any] = {
        "schedulerName": SCHEDULER if group else "default-scheduler",
        "containers": [{"name": "main", "image": rng.choice(IMAGES), "imagePullPolicy": "IfNotPresent",
                        "args": ["--port=8080", "--log-level=info"],
                        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1",
                                                                                "fieldPath": "metadata.name"}}},
                                {"name": "LOG_FORMAT", "value": "json"}],
                        "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
                        "resources": {"requests": req, "limits": req},
                        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                        "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                          "name": "kube-api-access", "readOnly": True}]}],
        "dnsPolicy": "ClusterFirst", "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority",
        "priority": 0, "restartPolicy": "Always", "securityContext": {}, "serviceAccount": "default",
        "serviceAccountName": "default", "terminationGracePeriodSeconds": 30,
        "tolerations": [{"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists",
                         "tolerationSeconds": 300},
                        {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists",
                         "tolerationSeconds": 300}] + ([GPU_TOLERATION] if gpu else []),
        "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}}]}}],
    }
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if node:
        spec["nodeName"] = node
    status: dict[str, Any] = {"phase": "Running" if node else "Pending", "qosClass": "Guaranteed"}
    if node:
        status.update({
            "conditions": [{"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": when}
                           for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                                     "PodScheduled")],
            "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0, "started": True,
                                   "image": spec["containers"][0]["image"], "imageID": f"sha256:{created:064x}",
                                   "containerID": f"containerd://{rng.getrandbits(256):064x}",
                                   "state": {"running": {"startedAt": when}}}],
            "hostIP": "10.0.0.1", "podIP": f"100.64.{created // 256 % 256}.{created % 256}", "startTime": when})
    else:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "lastProbeTime": None,
                                 "lastTransitionTime": when}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "uid": _uid(rng), "resourceVersion": str(200000 + created),
                         "creationTimestamp": when, "generateName": f"{app}-",
                         "labels": {"app": app, "pod-template-hash": f"{created % 9973:05x}"},
                         "ownerReferences": [{"apiVersion": "apps/v1" if not group else "batch/v1",
                                              "kind": "ReplicaSet" if not group else "Job", "name": app,
                                              "uid": f"owner-{app}", "controller": True,
                                              "blockOwnerDeletion": True}],
                         "managedFields": [_managed("kube-controller-manager", "Update",
                                                    {"f:metadata": {"f:generateName": {}, "f:labels": {}},
                                                     "f:spec": {"f:containers": {}}}, when),
                                           _managed("kubelet", "Update", {"f:status": {"f:conditions": {}}},
                                                    when)]},
            "spec": spec, "status": status}


def other_objects(count: int, rng: random.Random) -> Iterator[dict[str, Any]]:
    """``count`` objects of kinds ``simulate`` does not read: ReplicaSets, Services and Events, in turn."""
    for i in range(count):
        ns, when = NAMESPACES[i % len(NAMESPACES)], _ts(i)
        meta = {"name": f"obj-{i:06d}", "namespace": ns, "uid": _uid(rng), "resourceVersion": str(300000 + i),
                "creationTimestamp": when}
        if i % 3 == 0:
            yield {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta,
                   "spec": {"replicas": 2, "selector": {"matchLabels": {"app": meta["name"]}},
                            "template": {"metadata": {"labels": {"app": meta["name"]}},
                                         "spec": {"containers": [{"name": "main", "image": rng.choice(IMAGES)}]}}},
                   "status": {"replicas": 2, "readyReplicas": 2, "availableReplicas": 2}}
        elif i % 3 == 1:
            yield {"apiVersion": "v1", "kind": "Service", "metadata": meta,
                   "spec": {"clusterIP": f"172.20.{i // 256 % 256}.{i % 256}", "ports": [
                       {"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}],
                       "selector": {"app": meta["name"]}, "type": "ClusterIP"}, "status": {"loadBalancer": {}}}
        else:
            yield {"apiVersion": "v1", "kind": "Event", "metadata": meta, "type": "Normal", "reason": "Pulled",
                   "message": f"Container image \"{rng.choice(IMAGES)}\" already present on machine",
                   "involvedObject": {"kind": "Pod", "namespace": ns, "name": meta["name"]},
                   "firstTimestamp": when, "lastTimestamp": when, "count": 1,
                   "source": {"component": "kubelet"}}


def cluster(nodes: int, running: int, gangs: int, others: int, lean: bool, seed: int = 14) -> dict[str, Any]:
    """The dump: a ``kind: List`` of ``nodes`` Nodes, ``running`` bound pods (round robin over the nodes),
    ``gangs`` PodGroups (minCount 4, one in five of GPU pods) with 4 pending pods each, and ``others``
    objects of kinds not read; ``lean``: objects trimmed to what a generated snapshot holds (:func:`_trim`)."""
    rng = random.Random(seed)
    node_list = list(node_objects(nodes, seed))
    names = [n["metadata"]["name"] for n in node_list]
    items: list[dict[str, Any]] = [*node_list]
    items.append({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                  "metadata": {"name": "training", "uid": _uid(rng), "creationTimestamp": _ts(0)}, "value": 50000})
    for i in range(running):
        node = names[i % len(names)]
        items.append(pod_object(f"web-{i:06d}", NAMESPACES[i % len(NAMESPACES)], node, None, False, i, rng))
    for g in range(gangs):
        group, gpu = f"job-{g:04d}", g % 5 == 0
        items.append({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                      "metadata": {"name": group, "namespace": "ml-team", "uid": _uid(rng),
                                   "resourceVersion": str(400000 + g), "creationTimestamp": _ts(g)},
                      "spec": {"schedulingPolicy": {"gang": {"minCount": 4}}}})
        for i in range(4):
            items.append(pod_object(f"{group}-{i}", "ml-team", None, group, gpu, g, rng))
    items.extend(other_objects(others, rng))
    for item in items:
        item["metadata"].pop("managedFields", None)  # kubectl get hides them (--show-managed-fields=false)
        if lean:
            _trim(item)
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}


def _trim(item: dict[str, Any]) -> None:
    """Keep what a generated test snapshot holds: a node without its image list, node info and addresses and
    with its Ready condition only; a pod without env, volumes, container statuses and conditions."""
    status = item.get("status") or {}
    if item["kind"] == "Node":
        for key in ("images", "nodeInfo", "addresses", "daemonEndpoints"):
            status.pop(key, None)
        status["conditions"] = [c for c in status["conditions"] if c["type"] == "Ready"]
    elif item["kind"] == "Pod":
        spec = item["spec"]
        for key in ("volumes", "enableServiceLinks", "securityContext", "dnsPolicy"):
            spec.pop(key, None)
        for container in spec["containers"]:
            for key in ("env", "volumeMounts", "args", "terminationMessagePath", "terminationMessagePolicy"):
                container.pop(key, None)
        for key in ("containerStatuses", "conditions"):
            status.pop(key, None)


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    nodes: int
    running: int
    gangs: int
    others: int
    lean: bool


CASES = {"5k": Case("5k", 5000, 5000, 300, 0, True), "50mb": Case("50mb", 5000, 5000, 300, 10000, False)}
QUICK = {"5k": Case("5k", 500, 500, 30, 0, True), "50mb": Case("50mb", 500, 500, 30, 1000, False)}


def write(case: Case, directory: Path) -> None:
    """The case's dump as ``NAME.yaml`` (``kubectl -o yaml`` style) and ``NAME.json`` (``-o json``: 4-space
    indent)."""
    dump = cluster(case.nodes, case.running, case.gangs, case.others, case.lean)
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    with (directory / f"{case.name}.yaml").open("w") as f:
        yaml.dump(dump, f, Dumper=dumper, default_flow_style=False, sort_keys=False, width=4096)
    with (directory / f"{case.name}.json").open("w") as f:
        json.dump(dump, f, indent=4)


def dumps(case: Case, directory: Path) -> tuple[Path, Path, int]:
    """The case's YAML and JSON dumps in ``directory`` (written by :func:`write` unless both are there) and its
    pod count. They are written in a spawned process: a child inherits its parent's peak RSS at ``fork``, so
    the children measured must be started by a parent that never held a dump."""
    yaml_path, json_path = directory / f"{case.name}.yaml", directory / f"{case.name}.json"
    if not (yaml_path.exists() and json_path.exists()):
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            pool.apply(write, (case, directory))
    return yaml_path, json_path, case.running + 4 * case.gangs


def compile_package(name: str = "scheduler") -> None:
    """Write the bytecode of package ``name``'s modules (``__pycache__`` beside them) unless it is up to date: what
    ``pip install`` does at install time, so each child reads the compiled modules instead of compiling them."""
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.submodule_search_locations, name
    for directory in spec.submodule_search_locations:
        if not compileall.compile_dir(directory, quiet=1):
            raise RuntimeError(f"compiling {directory} failed")


INPUTS = ("yaml", "json", "yaml-stdin", "json-stdin")
"""How the dump is given: the YAML or the JSON file named, or either on standard input (``simulate -``)."""


@dataclass(frozen=True, slots=True)
class Run:
    wall_s: float
    cpu_s: float
    rss_mib: float
    code: int


def run_simulate(path: Path, stdin: bool) -> Run:
    """``gang-scheduler simulate FILE`` (or ``-`` fed from the file) in a child; its own rusage."""
    exe = Path(sys.executable).with_name("gang-scheduler")
    args = [str(exe), "simulate", "-" if stdin else str(path)]
    with open(os.devnull, "wb") as out, (path.open("rb") if stdin else open(os.devnull, "rb")) as feed:
        t0 = time.perf_counter()
        child = subprocess.Popen(args, stdin=feed, stdout=out, stderr=subprocess.PIPE)
        assert child.stderr is not None
        err = child.stderr.read()
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t0
        child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        print(err.decode(errors="replace")[-2000:], file=sys.stderr)
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, child.returncode)


def profile(path: Path, top: int) -> None:
    """The load and the simulation of ``path`` in this process under cProfile; prints the top functions."""
    from scheduler.config import Settings
    from scheduler.offline.loader import load
    from scheduler.offline.report import render_text
    from scheduler.offline.simulate import simulate

    settings = Settings()
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    objects = load([path])
    t1 = time.perf_counter()
    sim = simulate(objects, settings.scheduler_name, settings.solver(), settings.preemption)
    t2 = time.perf_counter()
    render_text(sim)
    prof.disable()
    t3 = time.perf_counter()
    print(f"profile {path.name}: load {t1 - t0:.2f} s, simulate {t2 - t1:.2f} s, report {t3 - t2:.2f} s "
          "(under cProfile)")
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(top)
    print(buf.getvalue())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the sizes (a smoke run)")
    parser.add_argument("--cases", default="5k,50mb", help="comma-separated: 5k, 50mb")
    parser.add_argument("--inputs", default=",".join(INPUTS), help=f"comma-separated: {', '.join(INPUTS)}")
    parser.add_argument("--repeat", type=int, default=1, help="runs per file and input (best wall and CPU kept)")
    parser.add_argument("--profile", action="store_true", help="also profile the 5k YAML case in-process")
    parser.add_argument("--top", type=int, default=30, help="functions printed by --profile")
    parser.add_argument("--dir", type=Path, help="keep the generated dumps here, or reuse those already there "
                                                 "(default: a temporary directory)")
    args = parser.parse_args()
    sizes = QUICK if args.quick else CASES
    print(f"simulate input benchmark: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, libyaml {'yes' if yaml.__with_libyaml__ else 'no'}, "
          f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC")
    compile_package()
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        directory = args.dir or Path(tmp)
        directory.mkdir(parents=True, exist_ok=True)
        for name in args.cases.split(","):
            case = sizes[name]
            yaml_path, json_path, pods = dumps(case, directory)
            print(f"\ncase {name}: {case.nodes} nodes, {pods} pods ({case.gangs} gangs x 4 pending), "
                  f"{case.others} other objects; YAML {yaml_path.stat().st_size / 1e6:.1f} MB, "
                  f"JSON {json_path.stat().st_size / 1e6:.1f} MB")
            print(f"  {'input':<12} {'wall s':>8} {'pods/s':>8} {'CPU s':>7} {'pods/CPU s':>10} {'peak RSS MiB':>13}")
            for label in args.inputs.split(","):
                path, stdin = (yaml_path if label.startswith("yaml") else json_path), label.endswith("stdin")
                runs = [run_simulate(path, stdin) for _ in range(args.repeat)]
                best = min(runs, key=lambda r: r.wall_s)
                note = "" if all(r.code == 0 for r in runs) else f"  exit {[r.code for r in runs]}"
                failed |= bool(note)
                cpu = min(r.cpu_s for r in runs)
                print(f"  {label:<12} {best.wall_s:8.2f} {pods / best.wall_s:8.0f} {cpu:7.2f} {pods / cpu:10.0f} "
                      f"{max(r.rss_mib for r in runs):13.0f}{note}")
            if name == "5k" and not args.quick:
                print(f"  target: >= {TARGET_PODS_S:.0f} pods/s wall")
            if name == "50mb" and not args.quick:
                print(f"  target: <= {TARGET_50MB_S:.0f} s and <= {TARGET_50MB_RSS_MIB:.0f} MiB")
            if args.profile and name == "5k":
                profile(yaml_path, args.top)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
