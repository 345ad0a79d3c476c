"""End-to-end benchmark: ``gang-scheduler run`` binding gangs on the emulated API server, over HTTPS.

Run with ``make bench`` (after the solver benchmark) or
``.venv/bin/python -m tests.bench.bench_e2e [--quick] [--nodes N] [--gangs G] [--pods-per-gang P]``
(``--help`` lists every flag; results and analysis: ``docs/benchmarks.md``, section *End to end*).
Not collected by pytest (the file is not named ``test_*.py``).

Three processes, each with its own event loop:

* the **emulator** (``tests/bench/emulator.py``: the integration tests' ``ApiServer`` serving the kinds of
  ``tests.integration.conftest.RESOURCES`` on 127.0.0.1), started as
  ``python -m tests.bench.bench_e2e --serve-emulator``. By default (``--emulator real``) it serves HTTPS with
  a self-signed CA and returns and streams objects as a real kube-apiserver does (``tests/bench/realistic.py``:
  defaulted and admitted pods, ``managedFields``, kubelet-shaped nodes); ``--emulator small`` is plain HTTP
  with the objects as sent (the figures before);
* the **scheduler**, ``gang-scheduler run --kubeconfig … --no-leader-elect --client-qps 0``, exactly
  as a user runs it, so its RSS and CPU time are its own; the kubeconfig carries the CA and a bearer token;
* this **driver**: creates the nodes (as kubelets register them), then (once ``/readyz`` answers 200) the
  PodGroups and pods (gang members as an Indexed Job's), concurrently with at most ``--concurrency`` requests
  in flight, and watches pods to see them bound.

Workload (defaults): 1,000 nodes from ``bench_solver.node_dicts`` (40 % 8-GPU tainted, 60 % CPU,
3 zones × 40 racks); 200 gangs × 8 pods, all created at once. Even gangs are CPU pods (4 cpu,
1Gi), odd gangs GPU pods (1 GPU, 8 cpu, 1Gi, tolerating the taint); PodGroup ``gang.minCount`` 8.

Measured: pods bound/s = pods / (last bound − first pod created); last pod created → last pod
bound; total wall time; the scheduler's and the emulator's ``VmHWM``; each process's CPU time
(``/proc/<pid>/stat`` utime+stime) per phase, to show which process bounds the figure. Checked:
every pod bound, no node overcommitted (requests summed per node ≤ allocatable), every gang
whole. Then, unless ``--no-baseline``, the same API traffic without the scheduler on a fresh
emulator: the creates alone, then one binding POST + one Event per pod (what the scheduler
sends per bound pod) — the emulator's floor for this workload.

**Drains** (``--case NAME``, repeatable, or ``--case all``; ``make bench`` runs all five):
nodes, already-bound pods, PodGroups and pending pods are all created first, then ``gang-scheduler run``
is started and the driver waits for every pending pod to be bound. Cases (:data:`CASES`): ``gangs4``
1,000 × 4-pod gangs on 500 nodes; ``plain`` 4,000 group-less pods of ours on 500 nodes; ``gangs64``
200 × 64-pod gangs on 2,000 nodes; ``gangs4-big`` the 4-pod case on 5,000 nodes with 20,000 pods of
another scheduler already bound (``startup-50k`` and ``startup-150k``, not in ``all``: 5,000 nodes and 50,000 pods,
15,000 nodes and 150,000 pods); ``dra``
500 nodes each publishing a ResourceSlice of 8 GPUs as the NVIDIA DRA driver does, 250 × 4-pod gangs, each
gang with a ResourceClaimTemplate and each pod one claim generated from it (the driver plays the
resourceclaim controller: it creates the claim and names it in the pod's ``status.resourceClaimStatuses``;
:mod:`tests.bench.dra_workload`), checked as well for every claim allocated on its pod's node, reserved for
the pod, and no device allocated twice; ``dra-shared`` and ``dra-conditions`` (not in ``all``) the same with
each GPU shared by up to four 10Gi claims (``allowMultipleAllocations``, KEP-5075; checked for a ``shareID`` per
share and no device's ``consumedCapacity`` over its capacity) or carrying binding conditions that the driver sets
True in each allocated claim's ``status.devices[]`` as the device driver would (KEP-5007; checked that no pod was
bound before its claim's conditions were written). Reported per
case: ready and start → first bind (seconds after the launch, and the scheduler's CPU by then: start-up),
pods bound/s after the first bind, the scheduler's **steady-state CPU per pod** (``/proc`` utime+stime from
the first bind to the last, divided by the pods bound in that window) and its CPU per pod over the whole
drain (start-up included), its share of one core over the drain (the emulator's beside it: which process
bounds the rate), and ``VmHWM``; then one ``case:`` summary line. Checked as above (every pod bound, no
node overcommitted, every gang whole). ``--repeat N`` runs the cases N times in turn and ends with each case's
minimum, median and maximum; ``--against DIR`` runs every case a second time right after the first with the
``scheduler`` package of the checkout ``DIR`` (the scheduler process's ``PYTHONPATH``; the emulator and the driver
stay this checkout's), so two versions of the code are compared in the same minutes, at the same load.
``plain-kubelets`` and ``gangs4-kubelets`` (not in ``all``) are ``plain`` and ``gangs4`` with the driver playing the
kubelets too (:mod:`tests.bench.kubelets`): each pod bound is started with two status writes, whose watch events the
scheduler receives as on a cluster, and the steady window ends when the last pod runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import functools
import io
import os
import pstats
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import aiohttp
import uvloop

from scheduler.client.kube import (
    DEVICE_CLASSES,
    EVENTS,
    NODES,
    PODGROUPS,
    PODS,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    ApiError,
    KubeClient,
    Resource,
)
from scheduler.live.status_writer import event_name, micro_time
from scheduler.model import Node, Pod
from scheduler.model.quantity import parse as parse_quantity
from scheduler.model.scheduling import INITIALLY_SCHEDULED
from tests.bench import dra_workload, realistic
from tests.bench.bench_solver import GPU, GPU_SHARE, RACKS_PER_ZONE, ZONES, machine, node_dicts
from tests.bench.emulator import SHAPES, Preload, Tls, emulator, serve, stop, write_kubeconfig
from tests.bench.kubelets import KUBELET_AGENT, Kubelets
from tests.integration.livekit import NS, pod, podgroup

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).parent / "gang-scheduler"
CLK_TCK = os.sysconf("SC_CLK_TCK")
REFERENCE_PODS_PER_S = (40, 81)
"""The in-tree kube-scheduler with DRA claim templates at 500 nodes (scheduler_perf; the issue's reference)."""


# -- /proc -------------------------------------------------------------------------------------

def cpu_s(pid: int) -> float:
    """utime + stime of ``pid`` in seconds (its threads included); NaN once it has been reaped."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def status_mib(pid: int, key: str) -> float:
    """A ``/proc/<pid>/status`` memory line (``VmHWM``, ``VmRSS``) in MiB; NaN if gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024
    except FileNotFoundError:
        pass
    return float("nan")


CALIBRATION_ROUNDS = 5
"""Rounds of :func:`calibration_ms`; the fastest one is reported."""


def calibration_ms() -> float:
    """The machine's speed for pure Python: CPU milliseconds (``time.process_time``) of a fixed loop of dict, string
    and integer work (100,000 turns), the fastest of :data:`CALIBRATION_ROUNDS` rounds, so that another process taking
    the core during one round does not count. It moves with the host's load as every CPU figure does (on one boot of
    the 2-vCPU VM: 30–67 ms between runs at load 1–15), so it tells apart hosts that differ by more than that — boots
    of the VM have differed by 3× — rather than ranking runs of one boot."""
    def one_round() -> float:
        start = time.process_time()
        table: dict[str, int] = {}
        for i in range(100_000):
            key = f"pod-{i % 4096}"
            table[key] = table.get(key, 0) + len(key) * (i & 7)
        return (time.process_time() - start) * 1000

    return min(one_round() for _ in range(CALIBRATION_ROUNDS))


def machine_busy_s() -> float:
    """Busy CPU seconds of the whole machine, all CPUs (``/proc/stat``: everything but idle and iowait)."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    return (sum(values[:8]) - values[3] - values[4]) / CLK_TCK


def self_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


@dataclass
class Cpu:
    """CPU seconds of each process at named instants."""

    pids: dict[str, int]
    marks: dict[str, tuple[float, dict[str, float]]] = field(default_factory=dict)

    def mark(self, name: str) -> None:
        now = {who: cpu_s(pid) for who, pid in self.pids.items()}
        now["driver"] = self_cpu_s()
        now["machine"] = machine_busy_s()
        self.marks[name] = (time.monotonic(), now)

    def between(self, a: str, b: str) -> tuple[float, dict[str, float]]:
        (ta, ca), (tb, cb) = self.marks[a], self.marks[b]
        used = {who: cb[who] - ca[who] for who in cb}
        used["other"] = max(0.0, used.pop("machine") - sum(used.values()))  # other processes on the machine
        return tb - ta, used


# -- the workload --------------------------------------------------------------------------------

def gang_pod(gang: str, index: int, member: int, real: bool = False) -> dict[str, Any]:
    """Member ``member`` of gang number ``index``: odd gangs GPU (1 GPU + 8 cpu), even gangs CPU (4 cpu).
    ``real``: as the Job controller creates it (the gang is an Indexed Job of that name,
    :func:`~tests.bench.realistic.owned_by_job`)."""
    if index % 2:
        body = pod(f"{gang}-{member}", gang, cpu="8", gpu=1)
    else:
        body = pod(f"{gang}-{member}", gang, cpu="4")
        del body["spec"]["tolerations"]  # CPU pods stay off the tainted GPU nodes
    return realistic.owned_by_job(body, gang, member, str(uuid.uuid5(uuid.NAMESPACE_DNS, gang))) if real else body


def gang_name(index: int) -> str:
    return f"g-{index:04d}"


async def bounded(concurrency: int, calls: list[Callable[[], Awaitable[Any]]]) -> list[Any]:
    sem = asyncio.Semaphore(concurrency)

    async def one(call: Callable[[], Awaitable[Any]]) -> Any:
        async with sem:
            return await call()

    return await asyncio.gather(*(one(c) for c in calls))


async def create_nodes(kube: KubeClient, count: int, seed: int, concurrency: int, real: bool = False) -> float:
    """Create the nodes (``real``: as kubelets register them, :func:`~tests.bench.realistic.node_body`); returns
    the seconds it took."""
    t0 = time.monotonic()
    bodies = [realistic.node_body(raw, seed) if real else raw for raw in node_dicts(count, seed)]
    await bounded(concurrency, [functools.partial(kube.create, NODES, None, body) for body in bodies])
    return time.monotonic() - t0


@dataclass
class Created:
    first_sent: float = 0.0
    first_pod: float = float("inf")
    last_pod: float = 0.0
    pods: int = 0
    uids: dict[str, str] = field(default_factory=dict)
    """Pod name -> uid, from the create responses (the baseline's Events name the pod by uid, as ours do)."""


async def create_gangs(kube: KubeClient, gangs: int, per_gang: int, concurrency: int, real: bool = False) -> Created:
    """All gangs at once: each gang's PodGroup, then its pods; at most ``concurrency`` requests in flight."""
    sem = asyncio.Semaphore(concurrency)
    out = Created(first_sent=time.monotonic())

    async def call(res: Any, body: dict[str, Any]) -> float:
        async with sem:
            made = await kube.create(res, NS, body)
        if res is PODS:
            out.uids[body["metadata"]["name"]] = str((made.get("metadata") or {}).get("uid") or "")
        return time.monotonic()

    async def gang(index: int) -> None:
        name = gang_name(index)
        await call(PODGROUPS, podgroup(name, per_gang))
        done = await asyncio.gather(*(call(PODS, gang_pod(name, index, m, real)) for m in range(per_gang)))
        out.first_pod = min(out.first_pod, *done)
        out.last_pod = max(out.last_pod, *done)
        out.pods += len(done)

    await asyncio.gather(*(gang(i) for i in range(gangs)))
    return out


async def list_all(kube: KubeClient, res: Resource, namespace: str | None = None) -> tuple[list[dict[str, Any]], str]:
    """Every object, read in pages (one unpaged list of 50,000 real-sized pods is 200 MB), and the list's
    resourceVersion."""
    items: list[dict[str, Any]] = []
    version = ""
    async for page, page_rv in kube.list_pages(res, namespace):
        items += page
        version = page_rv
    return items, version


class BindWatch:
    """Watches pods in :data:`NS` and records when each was first seen with ``spec.nodeName``."""

    def __init__(self, kube: KubeClient, expected: int, *, ignore: str | None = None,
                 on_first: Callable[[], None] | None = None,
                 on_bound: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.kube = kube
        self.expected = expected
        self.ignore = ignore
        """Pods whose name starts with this are not counted (the cases' already-bound pods)."""
        self.on_first = on_first
        """Called when the first pod is seen bound (the cases mark the scheduler's CPU there)."""
        self.on_bound = on_bound
        """Called with each pod (as the watch brought it) when first seen bound (the ``*-kubelets`` drains)."""
        self.bound: dict[str, tuple[float, str]] = {}
        self.all_bound = asyncio.Event()
        self.events = 0

    def _see(self, obj: dict[str, Any]) -> None:
        node = (obj.get("spec") or {}).get("nodeName")
        name = (obj.get("metadata") or {}).get("name")
        if node and name and name not in self.bound and not (self.ignore and name.startswith(self.ignore)):
            self.bound[name] = (time.monotonic(), node)
            if self.on_bound is not None:
                self.on_bound(obj)
            if len(self.bound) == 1 and self.on_first is not None:
                self.on_first()
            if len(self.bound) >= self.expected:
                self.all_bound.set()

    async def start(self) -> asyncio.Task[None]:
        items, rv = await list_all(self.kube, PODS, NS)
        for obj in items:
            self._see(obj)
        return asyncio.create_task(self._run(rv), name="bind-watch")

    async def _run(self, rv: str) -> None:
        while True:
            try:
                async for event in self.kube.watch(PODS, rv, NS):
                    obj = event.get("object") or {}
                    rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                    self.events += 1
                    self._see(obj)
            except ApiError:  # 410 or a dropped stream: re-list (bind times seen late are upper bounds)
                items, rv = await list_all(self.kube, PODS, NS)
                for obj in items:
                    self._see(obj)


# -- correctness ---------------------------------------------------------------------------------

async def groups_marked_scheduled(kube: KubeClient, gangs: int, wait_s: float = 5.0) -> int:
    """PodGroups whose ``PodGroupInitiallyScheduled`` condition is True, waiting up to ``wait_s`` for
    the scheduler's status writes (they trail the binds) to settle."""
    deadline = time.monotonic() + wait_s
    while True:
        items, _ = await list_all(kube, PODGROUPS, NS)
        marked = sum(1 for g in items if any(c.get("type") == INITIALLY_SCHEDULED and c.get("status") == "True"
                                             for c in (g.get("status") or {}).get("conditions") or []))
        if marked >= gangs or time.monotonic() > deadline:
            return marked
        await asyncio.sleep(0.25)


async def check(kube: KubeClient, gangs: int, per_gang: int, plain: int = 0, backlog: int = 0) -> list[str]:
    """No node overcommitted; every gang whole (all members bound); ``plain`` group-less pods named
    ``plain-…`` all bound; no pod of the ``backlog`` gangs bound. Returns the violations."""
    raw_nodes, _ = await list_all(kube, NODES)
    raw_pods, _ = await list_all(kube, PODS, NS)
    nodes = {n.metadata.name: n for n in (Node.model_validate(r) for r in raw_nodes)}
    used: dict[str, Counter[str]] = defaultdict(Counter)
    per_group: dict[str, list[str | None]] = defaultdict(list)
    problems: list[str] = []
    for raw in raw_pods:
        p = Pod.model_validate(raw)
        per_group[p.group_name or "-"].append(p.spec.node_name)
        if p.spec.node_name:
            if p.spec.node_name not in nodes:
                problems.append(f"{p.key} bound to unknown node {p.spec.node_name}")
                continue
            used[p.spec.node_name].update(p.requests)
    over = [(name, res, amount, nodes[name].allocatable.get(res, 0)) for name, c in used.items()
            for res, amount in c.items() if amount > nodes[name].allocatable.get(res, 0)]
    problems += [f"node {n} overcommitted on {r}: {a} > allocatable {al}" for n, r, a, al in over[:5]]
    if over:
        problems.append(f"{len({o[0] for o in over})} node(s) overcommitted in total")
    for index in range(gangs):
        members = per_group.get(gang_name(index), [])
        bound = sum(1 for n in members if n)
        if len(members) != per_gang or bound != per_gang:
            problems.append(f"gang {gang_name(index)}: {bound}/{len(members)} pods bound, expected {per_gang}")
    for index in range(backlog):
        members = per_group.get(backlog_name(index), [])
        if len(members) != per_gang or any(members):
            problems.append(f"backlog gang {backlog_name(index)}: {sum(1 for n in members if n)}/{len(members)} "
                            "pods bound, expected none")
    singles = sum(1 for raw in raw_pods if raw["metadata"]["name"].startswith(PLAIN_PREFIX)
                  and (raw.get("spec") or {}).get("nodeName"))
    if singles != plain:
        problems.append(f"plain pods: {singles} bound, expected {plain}")
    return problems


# -- the scheduler process -----------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


DRIVER_AGENT = "bench-e2e/v1.37.0 (linux/amd64)"
"""The driver's User-Agent: the field manager its creates are recorded under (it stands in for kubelets and
the Job controller)."""


async def driver_client(kubeconfig: Path, url: str, tls: Tls | None) -> KubeClient:
    """Write the kubeconfig of the emulator at ``url`` (the scheduler reads the same file) and connect the
    driver with it: no client rate limit, :data:`DRIVER_AGENT`."""
    write_kubeconfig(kubeconfig, url, tls)
    kube = await KubeClient.connect(str(kubeconfig), qps=0)
    kube.api.user_agent = DRIVER_AGENT
    return kube


async def wait_ready(port: int, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    async with aiohttp.ClientSession() as http:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"the scheduler exited with code {proc.returncode} before it was ready")
            with contextlib.suppress(aiohttp.ClientError, OSError):
                async with http.get(f"http://127.0.0.1:{port}/readyz") as resp:
                    if resp.status == 200:
                        return
            await asyncio.sleep(0.05)
    raise TimeoutError(f"the scheduler was not ready within {timeout_s} s")


LOG_SCHEDULED = re.compile(r"^(\S+ \S+) .*result=Scheduled pods=(\d+) .*duration_ms=([\d.]+)", re.MULTILINE)
LOG_RESULT = re.compile(r"result=(\w+)")


def summarize_log(text: str, mono_offset: float) -> dict[str, Any]:
    """Counts and solve times from the scheduler's log; decision instants on this process's monotonic
    clock (``mono_offset`` = wall − monotonic; log timestamps have millisecond resolution)."""
    solves = [(int(m[2]), float(m[3]), m[1]) for m in LOG_SCHEDULED.finditer(text)]
    decided = [dt.datetime.strptime(ts, "%Y-%m-%d %H:%M:%S,%f").timestamp() - mono_offset for _, _, ts in solves]
    return {
        "results": Counter(m[1] for m in LOG_RESULT.finditer(text)),
        "solve_ms": sorted(ms for _, ms, _ in solves),
        "pods_in_plans": sum(n for n, _, _ in solves),
        "first_decided": min(decided, default=float("nan")),
        "last_decided": max(decided, default=float("nan")),
        "warnings": [line for line in text.splitlines() if " WARNING " in line or " ERROR " in line],
    }


# -- profiling -----------------------------------------------------------------------------------

def pyspy_summary(raw_path: Path, top: int = 25) -> str:
    """Self and inclusive sample shares per function from py-spy's ``--format raw`` (collapsed stacks)."""
    own: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    total = 0
    for line in raw_path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [f for f in stack.split(";") if f]
        total += n
        if frames:
            own[frames[-1]] += n
        for f in set(frames):
            incl[f] += n
    if not total:
        return "  (no samples)"
    out = [f"  {total} samples (threads holding the GIL)", "  self time:"]
    out += [f"    {100 * n / total:5.1f}%  {f}" for f, n in own.most_common(top)]
    out.append("  inclusive time:")
    out += [f"    {100 * n / total:5.1f}%  {f}" for f, n in incl.most_common(top * 2)]
    return "\n".join(out)


def cprofile_summary(path: Path, top: int = 30) -> str:
    out = io.StringIO()
    stats = pstats.Stats(str(path), stream=out)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    return out.getvalue()


# -- the scheduler process, shared by the burst and the drains ------------------------------------

def scheduler_cmd(kubeconfig: Path, port: int, prof: Path | None) -> list[str]:
    """``gang-scheduler run`` as a user runs it against the emulator (``prof``: under cProfile timed in CPU time,
    writing there, :mod:`tests.bench.cpu_profile`)."""
    cmd = [str(CLI), "run", "--kubeconfig", str(kubeconfig), "--no-leader-elect",
           "--bind-address", f"127.0.0.1:{port}", "--client-qps", "0", "--log-level", "INFO"]
    return [sys.executable, "-m", "tests.bench.cpu_profile", str(prof), *cmd] if prof is not None else cmd


def start_spy(pid: int, out: Path, rate_hz: int) -> subprocess.Popen[bytes]:
    """py-spy recording ``pid`` (``rate_hz`` samples per second, threads holding the GIL) into ``out`` until
    :func:`stop_spy`."""
    return subprocess.Popen([str(Path(sys.executable).parent / "py-spy"), "record", "--pid", str(pid), "--format",
                             "raw", "--nolineno", "--rate", str(rate_hz), "--gil", "--output", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


async def wait_bound(watch: BindWatch, sched: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Until every expected pod is seen bound, the scheduler exits, or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while not watch.all_bound.is_set() and sched.poll() is None and time.monotonic() < deadline:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(watch.all_bound.wait(), 0.2)


def not_all_bound(bound: int, expected: int, sched: subprocess.Popen[bytes], timeout_s: float) -> str:
    why = f"the scheduler exited (code {sched.returncode})" if sched.poll() is not None else f"within {timeout_s:.0f} s"
    return f"only {bound}/{expected} pods bound: {why}"


def stop_scheduler(sched: subprocess.Popen[bytes], log_path: Path, failed: bool) -> tuple[int | None, dict[str, Any]]:
    """SIGTERM the scheduler; its exit code and :func:`summarize_log` of its log (the log's tail printed if it
    failed or ``failed``)."""
    code = stop(sched)
    text = log_path.read_text(errors="replace")
    if code != 0 or failed:
        print("  last lines of the scheduler log:\n    " + "\n    ".join(text.splitlines()[-30:]))
    return code, summarize_log(text, time.time() - time.monotonic())


@dataclass
class Run:
    """What every run of the scheduler measured: pods seen bound and when (driver's monotonic clock), the
    scheduler's CPU marks and ``VmHWM``, its log summary, exit code, profile and the violations found."""

    bound: int = 0
    first_bound: float = 0.0
    last_bound: float = 0.0
    sched_hwm: float = 0.0
    cpu: Cpu | None = None
    log: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    exit_code: int | None = None
    profile: str = ""

    def seen(self, watch: BindWatch) -> None:
        """Take the bind times from ``watch``."""
        self.bound = len(watch.bound)
        times = [t for t, _ in watch.bound.values()]
        self.first_bound, self.last_bound = (min(times), max(times)) if times else (0.0, 0.0)


# -- the run -------------------------------------------------------------------------------------

@dataclass
class Result(Run):
    """The burst's figures beside :class:`Run`'s."""

    nodes_s: float = 0.0
    ready_s: float = 0.0
    created: Created = field(default_factory=Created)
    bound_by_last_created: int = 0
    emu_hwm: float = 0.0
    emu_rss: float = 0.0
    groups_marked: int = 0
    wall_s: float = 0.0


async def run_e2e(args: argparse.Namespace, tmp: Path) -> Result:
    r = Result()
    expected = args.gangs * args.pods_per_gang
    wall = time.monotonic()
    real = args.emulator == "real"
    with emulator(args.emulator_loop, args.emulator, tmp, args.stock_emulator) as (emu, url, tls):
        kubeconfig = tmp / "kubeconfig"
        kube = await driver_client(kubeconfig, url, tls)
        sched: subprocess.Popen[bytes] | None = None
        spy: subprocess.Popen[bytes] | None = None
        log_path = tmp / "scheduler.log"
        try:
            r.nodes_s = await create_nodes(kube, args.nodes, args.seed, args.concurrency, real)
            port = free_port()
            cmd = scheduler_cmd(kubeconfig, port, tmp / "scheduler.prof" if args.profile == "cprofile" else None)
            t0 = time.monotonic()
            with open(log_path, "wb") as log_file:
                sched = subprocess.Popen(cmd, cwd=ROOT, stdout=log_file, stderr=subprocess.STDOUT)
            await wait_ready(port, sched, args.ready_timeout)
            r.ready_s = time.monotonic() - t0
            if args.profile == "py-spy":
                spy = start_spy(sched.pid, tmp / "pyspy.txt", args.profile_rate)
                await asyncio.sleep(1.0)  # attach before the burst
            watch = BindWatch(kube, expected)
            watcher = await watch.start()
            r.cpu = Cpu({"scheduler": sched.pid, "emulator": emu.pid})
            r.cpu.mark("ready")
            try:
                r.created = await create_gangs(kube, args.gangs, args.pods_per_gang, args.concurrency, real)
                r.cpu.mark("created")
                r.bound_by_last_created = len(watch.bound)
                await wait_bound(watch, sched, args.timeout)
                r.cpu.mark("bound")
            finally:
                if spy is not None:  # the profile covers ready -> last bound only
                    stop_spy(spy)
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher
            r.seen(watch)
            if r.bound < expected:
                r.problems.append(not_all_bound(r.bound, expected, sched, args.timeout))
                print(f"  ! {r.problems[-1]}")
            r.sched_hwm = status_mib(sched.pid, "VmHWM")
            r.emu_hwm = status_mib(emu.pid, "VmHWM")
            r.emu_rss = status_mib(emu.pid, "VmRSS")
            r.problems += await check(kube, args.gangs, args.pods_per_gang)
            r.groups_marked = await groups_marked_scheduled(kube, args.gangs)
        finally:
            if spy is not None:
                stop_spy(spy)
                if (tmp / "pyspy.txt").exists():
                    r.profile = pyspy_summary(tmp / "pyspy.txt")
            if sched is not None:
                r.exit_code, r.log = stop_scheduler(sched, log_path, bool(r.problems))
            if args.profile == "cprofile" and (tmp / "scheduler.prof").exists():
                r.profile = cprofile_summary(tmp / "scheduler.prof")
            await kube.close()
    r.wall_s = time.monotonic() - wall
    return r


def stop_spy(spy: subprocess.Popen[bytes]) -> None:
    """py-spy writes its output on SIGINT. Idempotent."""
    if spy.returncode is not None:
        return
    if spy.poll() is None:
        spy.send_signal(signal.SIGINT)
        try:
            spy.wait(30)
        except subprocess.TimeoutExpired:
            spy.kill()
            spy.wait(10)
    if spy.returncode and spy.stderr is not None:
        print(f"  py-spy exited {spy.returncode}: {spy.stderr.read().decode(errors='replace')[-500:]}")


@dataclass
class Baseline:
    create_s: float = 0.0
    create_cpu_s: float = 0.0
    bind_s: float = 0.0
    bind_cpu_s: float = 0.0
    create_driver_cpu_s: float = 0.0
    bind_driver_cpu_s: float = 0.0
    pods: int = 0


async def run_baseline(args: argparse.Namespace, work: Path) -> Baseline:
    """The same creates, then one binding + one Event per pod from the driver, no scheduler.

    Two pod watches stay open (the driver's and one standing in for the scheduler's informer),
    so the emulator serializes each pod event twice, as in the real run.
    """
    b = Baseline()
    real = args.emulator == "real"
    with emulator(args.emulator_loop, args.emulator, work, args.stock_emulator) as (emu, url, tls):
        kube = await driver_client(work / "kubeconfig-baseline", url, tls)
        try:
            await create_nodes(kube, args.nodes, args.seed, args.concurrency, real)
            expected = args.gangs * args.pods_per_gang
            watches = [BindWatch(kube, expected) for _ in range(2)]
            tasks = [await w.start() for w in watches]
            try:
                c0, d0 = cpu_s(emu.pid), self_cpu_s()
                created = await create_gangs(kube, args.gangs, args.pods_per_gang, args.concurrency, real)
                b.create_s, b.pods = created.last_pod - created.first_sent, created.pods
                c1, d1 = cpu_s(emu.pid), self_cpu_s()
                b.create_cpu_s, b.create_driver_cpu_s = c1 - c0, d1 - d0
                node_names = [n["metadata"]["name"] for n in node_dicts(args.nodes, args.seed)]
                gpu_nodes = [n for n in node_names if n.startswith("gpu")]
                cpu_nodes = [n for n in node_names if n.startswith("cpu")]

                async def bind_one(index: int, member: int) -> None:
                    name = f"{gang_name(index)}-{member}"
                    pool = gpu_nodes if index % 2 else cpu_nodes
                    node = pool[(index // 2) % len(pool)]
                    await kube.bind(NS, name, node)
                    # The Scheduled Event as the scheduler's StatusWriter builds it: named
                    # ``<pod>.<hex ns>``, not ``generateName``, which the API server (and the emulator) refuse
                    # for Events; eventTime a MicroTime; regarding carries the pod's uid.
                    unix_ns = time.time_ns()
                    await kube.create(EVENTS, NS, {
                        "apiVersion": "events.k8s.io/v1", "kind": "Event",
                        "metadata": {"name": event_name(name, unix_ns), "namespace": NS},
                        "eventTime": micro_time(unix_ns),
                        "reportingController": "gang-scheduler", "reportingInstance": "bench",
                        "action": "Binding", "reason": "Scheduled", "type": "Normal",
                        "note": f"Successfully assigned {NS}/{name} to {node}",
                        "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": NS, "name": name,
                                      "uid": created.uids[name]}})

                t0 = time.monotonic()
                await bounded(16, [functools.partial(bind_one, g, m) for g in range(args.gangs)
                                   for m in range(args.pods_per_gang)])
                await asyncio.wait_for(watches[0].all_bound.wait(), args.timeout)
                b.bind_s = time.monotonic() - t0
                b.bind_cpu_s, b.bind_driver_cpu_s = cpu_s(emu.pid) - c1, self_cpu_s() - d1
            finally:
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            await kube.close()
    return b


# -- the drain cases: everything created first, then the scheduler started ---------------

PLAIN_PREFIX = "plain-"
BOUND_PREFIX = "pre-"


@dataclass(frozen=True)
class Case:
    """A drain: ``nodes``, then ``prebound`` running pods (another scheduler's, ``spec.nodeName`` set at
    create), ``gangs`` PodGroups × ``per_gang`` pods (``minCount`` = ``per_gang``) and ``plain`` group-less
    pods of ours, all created before ``gang-scheduler run`` starts."""

    name: str
    nodes: int
    gangs: int = 0
    per_gang: int = 0
    plain: int = 0
    prebound: int = 0
    backlog: int = 0
    """Gangs of ``per_gang`` pods no node can hold (each pod asks :data:`BACKLOG_CPU` cpu), created with the rest:
    a backlog waiting for capacity. After the drain the scheduler's CPU is measured over :data:`BACKLOG_WINDOW_S`
    more seconds while they wait, and none of their pods may be bound."""
    kubelets: bool = False
    """The driver plays the kubelets: each pod bound is started with two status writes (:mod:`tests.bench.kubelets`),
    and the drain ends when the last pod runs."""
    dra: str = ""
    """A :data:`~tests.bench.dra_workload.MODES` mode, or empty: every node publishes a ResourceSlice of the NVIDIA
    driver's 8 GPUs; each gang has a ResourceClaimTemplate and each of its pods (1 cpu) one claim generated from
    it for one GPU (``exclusive``), a 10Gi share of one (``shared``), or one GPU whose binding conditions the
    benchmark sets True as the driver would (``conditions``) (:mod:`tests.bench.dra_workload`)."""

    @property
    def pods(self) -> int:
        return self.gangs * self.per_gang + self.plain

    def describe(self) -> str:
        parts = [f"{self.nodes:,} nodes"]
        if self.prebound:
            parts.append(f"{self.prebound:,} pods already bound")
        if self.gangs:
            parts.append(f"{self.gangs:,} gangs x {self.per_gang} pods")
        if self.plain:
            parts.append(f"{self.plain:,} plain pods (ours, no group)")
        if self.backlog:
            parts.append(f"{self.backlog:,} gangs x {self.per_gang} pods that cannot fit")
        if self.kubelets:
            parts.append("each pod started by its kubelet (two status writes)")
        if self.dra:
            use = {"exclusive": "1 GPU", "shared": f"a {dra_workload.SHARE} share of a shared GPU",
                   "conditions": "1 GPU with binding conditions, set True by the bench"}[self.dra]
            parts.insert(1, f"one ResourceSlice of {dra_workload.devices_per_slice()} {dra_workload.DRIVER} devices "
                            f"per node; one ResourceClaimTemplate per gang, one generated claim ({use}) per pod")
        return ", ".join(parts)


CASES = {c.name: c for c in (
    Case("gangs4", nodes=500, gangs=1000, per_gang=4),
    Case("plain", nodes=500, plain=4000),
    Case("gangs4-kubelets", nodes=500, gangs=1000, per_gang=4, kubelets=True),
    Case("plain-kubelets", nodes=500, plain=4000, kubelets=True),
    Case("gangs64", nodes=2000, gangs=200, per_gang=64),
    Case("gangs4-big", nodes=5000, gangs=1000, per_gang=4, prebound=20000),
    Case("startup-50k", nodes=5000, gangs=1000, per_gang=4, prebound=46000),
    Case("startup-150k", nodes=15000, gangs=1000, per_gang=4, prebound=146000),
    Case("backlog", nodes=1000, gangs=1000, per_gang=4, backlog=1000),
    Case("backlog-5k", nodes=5000, gangs=1000, per_gang=4, backlog=5000),
    Case("dra", nodes=500, gangs=250, per_gang=4, dra="exclusive"),
    Case("dra-shared", nodes=500, gangs=250, per_gang=4, dra="shared"),
    Case("dra-conditions", nodes=500, gangs=250, per_gang=4, dra="conditions"),
)}
"""The drain workloads (``gangs4`` and ``gangs4-big`` differ only in the cluster's size and load; ``dra``
holds 1,000 pods in 4-pod gangs on 500 nodes, each pod with a claim for one GPU), and
``startup-50k`` and ``startup-150k``: the start-up targets' clusters, 5,000 nodes and 50,000 pods, 15,000 nodes and
150,000 pods (not in ``all``: each takes minutes); ``dra-shared`` and ``dra-conditions``: ``dra`` with each claim a
share of a shared GPU, or with GPUs whose binding conditions the benchmark sets True, and ``backlog-5k``: ``backlog``
on 5,000 nodes with 5,000 gangs that cannot fit, and ``gangs4-kubelets`` and ``plain-kubelets``: ``gangs4`` and
``plain`` with each pod started by its kubelet (not in ``all``, to keep ``make bench`` short)."""
ALL = ("gangs4", "plain", "gangs64", "gangs4-big", "backlog", "dra")
"""What ``--case all`` (and ``make bench``) runs."""


def case_gang_pod(gang: str, index: int, member: int, real: bool = False) -> dict[str, Any]:
    """Member ``member`` of gang ``index`` in a case: every 4th gang GPU pods (1 GPU + 8 cpu), the rest CPU
    pods (4 cpu), so 1,000 × 4-pod gangs fit 500 nodes' 1,600 GPUs (``real``: see :func:`gang_pod`)."""
    return gang_pod(gang, 1 if index % 4 == 1 else 0, member, real)


BACKLOG_CPU = "1000"
"""What a backlog gang's pod asks: more cpu than any node has."""
BACKLOG_WINDOW_S = 60.0
"""How long a case with a backlog is watched after its drain."""


def backlog_name(index: int) -> str:
    return f"backlog-{index:04d}"


def plain_pod(index: int) -> dict[str, Any]:
    """A group-less pod of ours: 1 cpu, 1Gi, tolerating the GPU taint (it fits any node)."""
    return pod(f"{PLAIN_PREFIX}{index:05d}", None, cpu="1")


def bound_pod(index: int, node: str, real: bool = False) -> dict[str, Any]:
    """A running pod of another scheduler, already on ``node`` (1 cpu, 1Gi); ``real``: with the status its
    kubelet reports (:func:`~tests.bench.realistic.running_status`)."""
    body = pod(f"{BOUND_PREFIX}{index:05d}", None, cpu="1", scheduler="default-scheduler", node_name=node)
    if real:
        body["status"] = realistic.running_status(body, index)
    return body


def preloaded(nodes: int, prebound: int, seed: int) -> Preload:
    """What a case's emulator holds before it serves: its ``nodes`` (as kubelets register them when ``real``) and
    ``prebound`` running pods of another scheduler spread over them (:func:`bound_pods`)."""
    def objects(real: bool) -> Iterator[tuple[str, Iterable[dict[str, Any]]]]:
        bench = node_dicts(nodes, seed)
        yield "v1/nodes", (realistic.node_body(n, seed) if real else n for n in bench)
        yield "v1/pods", bound_pods(prebound, [n["metadata"]["name"] for n in bench], real)

    return objects


def bound_pods(count: int, nodes: list[str], real: bool) -> Iterator[dict[str, Any]]:
    """``count`` pods of :func:`bound_pod`, pod ``i`` on ``nodes[i % len(nodes)]``; ``real``: each as the server
    stores a running pod (:func:`~tests.bench.realistic.running_pod`: defaulted, admitted, ``managedFields``, the
    kubelet's status). Made from one such pod, renamed, moved and given its own pod IP and (``real``) its own token
    volume (:func:`~tests.bench.realistic.with_own_token`): the pods share the nested parts that do not vary
    (``managedFields``, most of the spec), which the emulator never changes in place."""
    template = bound_pod(0, nodes[0], real)
    if real:
        template = realistic.running_pod(template)
    for i in range(count):
        name = f"{BOUND_PREFIX}{i:05d}"
        status, spec = template["status"], template["spec"]
        if real:
            ip = f"10.{128 + i // 65536 % 64}.{i // 256 % 256}.{i % 256}"
            status = {**status, "podIP": ip, "podIPs": [{"ip": ip}]}
            spec = realistic.with_own_token(spec, name)
        yield {**template, "metadata": {**template["metadata"], "name": name},
               "spec": {**spec, "nodeName": nodes[i % len(nodes)]}, "status": status}


def preload_args(case: Case, seed: int) -> list[str]:
    """The ``--serve-emulator`` arguments that preload ``case``'s nodes and bound pods (:func:`preloaded`)."""
    return ["--preload-nodes", str(case.nodes), "--preload-bound", str(case.prebound), "--seed", str(seed)]


async def create_case(kube: KubeClient, case: Case, seed: int, concurrency: int, real: bool) -> dict[str, float]:
    """Create the case's objects over the API (``real``: shaped as in a cluster) but its nodes and bound pods,
    which its emulator holds from the start (:func:`preloaded`); returns seconds per phase."""
    took: dict[str, float] = {}
    t0 = time.monotonic()
    if case.dra:
        took |= await create_dra(kube, case, concurrency, real)
        return took
    calls: list[Callable[[], Awaitable[Any]]] = []
    for g in range(case.gangs):
        calls.append(functools.partial(kube.create, PODGROUPS, NS, podgroup(gang_name(g), case.per_gang)))
        calls += [functools.partial(kube.create, PODS, NS, case_gang_pod(gang_name(g), g, m, real))
                  for m in range(case.per_gang)]
    calls += [functools.partial(kube.create, PODS, NS, plain_pod(i)) for i in range(case.plain)]
    for b in range(case.backlog):
        calls.append(functools.partial(kube.create, PODGROUPS, NS, podgroup(backlog_name(b), case.per_gang)))
        calls += [functools.partial(kube.create, PODS, NS, pod(f"{backlog_name(b)}-{m}", backlog_name(b),
                                                              cpu=BACKLOG_CPU)) for m in range(case.per_gang)]
    await bounded(concurrency, calls)
    took["pending pods"] = time.monotonic() - t0
    return took


async def create_dra(kube: KubeClient, case: Case, concurrency: int, real: bool) -> dict[str, float]:
    """The DRA case's objects after its nodes: the DeviceClass and one slice per node (as the driver publishes
    them), then per gang its template, PodGroup and pods, and for each pod what the resourceclaim controller
    does: create its claim from the template, then name it in the pod's ``status.resourceClaimStatuses``."""
    took: dict[str, float] = {}
    t0 = time.monotonic()
    nodes, _ = await list_all(kube, NODES)
    await kube.create(DEVICE_CLASSES, None, dra_workload.device_class())
    await bounded(concurrency, [functools.partial(kube.create, RESOURCE_SLICES, None, dra_workload.node_slice(
        n["metadata"]["name"], n["metadata"]["uid"], case.dra)) for n in nodes])
    took["slices"] = time.monotonic() - t0
    t0 = time.monotonic()

    calls: list[Callable[[], Awaitable[Any]]] = []
    for g in range(case.gangs):
        template = dra_workload.mode_template(gang_name(g), case.dra)
        calls.append(functools.partial(kube.create, RESOURCE_CLAIM_TEMPLATES, NS, template))
        calls.append(functools.partial(kube.create, PODGROUPS, NS, podgroup(gang_name(g), case.per_gang)))
        calls += [functools.partial(dra_workload.create_member, kube, gang_name(g), m, template, real)
                  for m in range(case.per_gang)]
    await bounded(concurrency, calls)
    took["pending pods + claims"] = time.monotonic() - t0
    return took


async def check_dra(kube: KubeClient, mode: str = "exclusive", sent: dict[str, float] | None = None,
                    bound: dict[str, tuple[float, str]] | None = None) -> list[str]:
    """Every pod's generated claim allocated on the pod's node (the slice's pool is named after its node) and
    reserved for the pod. ``exclusive`` and ``conditions``: no device allocated twice; ``shared`` (KEP-5075):
    each share of a device has its own ``shareID`` and the ``consumedCapacity`` of a device's shares sums to at
    most its ``capacity``; ``conditions`` (KEP-5007): no pod seen bound (``bound``: pod -> (instant, node), from
    :class:`BindWatch`) before the driver began writing its claim's conditions (``sent``: claim -> instant, from
    :func:`~tests.bench.dra_workload.play_driver`). Returns the violations."""
    raw_pods, _ = await list_all(kube, PODS, NS)
    claims, _ = await list_all(kube, RESOURCE_CLAIMS, NS)
    slices, _ = await list_all(kube, RESOURCE_SLICES)
    capacity = {(s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"], k): parse_quantity(v["value"])
                for s in slices for d in s["spec"].get("devices") or [] for k, v in (d.get("capacity") or {}).items()}
    by_name = {c["metadata"]["name"]: c for c in claims}
    taken: Counter[tuple[str, str, str, str]] = Counter()
    consumed: defaultdict[tuple[str, str, str, str], Decimal] = defaultdict(Decimal)
    problems: list[str] = []
    for raw in raw_pods:
        name, node, uid = raw["metadata"]["name"], raw["spec"].get("nodeName"), raw["metadata"]["uid"]
        for entry in (raw.get("status") or {}).get("resourceClaimStatuses") or []:
            claim = by_name.get(entry.get("resourceClaimName") or "")
            status = (claim or {}).get("status") or {}
            results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
            if not results:
                problems.append(f"pod {name}: claim {entry.get('resourceClaimName')} not allocated")
                continue
            taken.update((r["driver"], r["pool"], r["device"], r.get("shareID") or "") for r in results)
            for r in results:
                if mode == "shared" and not r.get("shareID"):
                    problems.append(f"pod {name}: share of {r['device']} without a shareID")
                for k, v in (r.get("consumedCapacity") or {}).items():
                    consumed[(r["driver"], r["pool"], r["device"], k)] += parse_quantity(v)
            if any(r["pool"] != node for r in results):
                problems.append(f"pod {name} on {node}: claim devices in pools {[r['pool'] for r in results]}")
            if uid not in {r.get("uid") for r in status.get("reservedFor") or []}:
                problems.append(f"pod {name}: claim {entry['resourceClaimName']} not reserved for it")
            if mode == "conditions":
                problems += conditions_problems(name, entry["resourceClaimName"], status, sent or {}, bound or {})
    twice = [d for d, n in taken.items() if n > 1]
    problems += [f"device {d} allocated {taken[d]} times" for d in twice[:5]]
    over = [k for k, v in consumed.items() if v > capacity.get(k, Decimal(0))]
    problems += [f"device {k[:3]} {k[3]}: {consumed[k]} consumed of {capacity.get(k)}" for k in over[:5]]
    if mode == "shared" and not consumed:
        problems.append("no consumedCapacity recorded on any share")
    return problems


def conditions_problems(pod_name: str, claim_name: str, status: dict[str, Any], sent: dict[str, float],
                        bound: dict[str, tuple[float, str]]) -> list[str]:
    """One pod's binding-condition violations (KEP-5007): its claim's results lack the devices' conditions, its
    ``status.devices[]`` lacks them True, or the pod was seen bound before the driver began writing them."""
    problems: list[str] = []
    results = status["allocation"]["devices"]["results"]
    if not all(r.get("bindingConditions") for r in results):
        problems.append(f"pod {pod_name}: claim {claim_name} results without bindingConditions")
    true = {(d["device"], c["type"]) for d in status.get("devices") or [] for c in d.get("conditions") or []
            if c.get("status") == "True"}
    if not all((r["device"], t) in true for r in results for t in r.get("bindingConditions") or []):
        problems.append(f"pod {pod_name}: claim {claim_name} bound without its conditions True")
    if claim_name not in sent:
        problems.append(f"pod {pod_name}: the driver never wrote claim {claim_name}'s conditions")
    elif pod_name in bound and bound[pod_name][0] < sent[claim_name]:
        problems.append(f"pod {pod_name}: bound {sent[claim_name] - bound[pod_name][0]:.3f} s before its claim's "
                        "conditions were written")
    return problems


@dataclass(kw_only=True)
class Drain(Run):
    """What one case measured beside :class:`Run`'s figures: setup seconds, launch and ready instants, load."""

    case: Case
    setup_s: dict[str, float] = field(default_factory=dict)
    launched: float = 0.0
    ready: float = 0.0
    load: tuple[str, str] = ("", "")
    rss: dict[str, float] = field(default_factory=dict)
    """The scheduler's ``VmRSS`` (MiB) when ready (lists done) and at its first bind."""
    code: Path | None = None
    """The checkout whose ``scheduler`` package ran (``--against``); None: this one."""

    def steady(self) -> tuple[float, float]:
        """(pods bound per second, scheduler CPU per pod in ms) from the first bind to the last (a case with kubelets:
        to the last pod's second kubelet write); NaN without two binds."""
        if self.cpu is None or "first" not in self.cpu.marks or "bound" not in self.cpu.marks or self.bound < 2:
            return float("nan"), float("nan")
        _, used = self.cpu.between("first", "bound")
        drained = self.bound - 1
        rate = drained / (self.last_bound - self.first_bound) if self.last_bound > self.first_bound else float("nan")
        return rate, 1000 * used["scheduler"] / drained


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


async def run_case(case: Case, args: argparse.Namespace, work: Path, code: Path | None = None) -> Drain:
    """One drain: create everything, start the scheduler, wait for every pending pod to be bound, check. ``code``:
    a checkout whose ``scheduler`` package the scheduler process imports instead of this one's."""
    d = Drain(case=case, load=(loadavg(), ""), code=code)
    run_name = case.name + ("-against" if code else "")  # the files of a run with --against's code apart
    t0 = time.monotonic()
    with emulator(args.emulator_loop, args.emulator, work, preload=preload_args(case, args.seed),
                  ready_s=max(30.0, args.ready_timeout)) as (emu, url, tls):
        d.setup_s["preload"] = time.monotonic() - t0
        kubeconfig = work / "kubeconfig"
        kube = await driver_client(kubeconfig, url, tls)
        sched: subprocess.Popen[bytes] | None = None
        spy: subprocess.Popen[bytes] | None = None
        log_path = work / f"scheduler-{run_name}.log"
        try:
            d.setup_s |= await create_case(kube, case, args.seed, args.concurrency, args.emulator == "real")
            port = free_port()
            cmd = scheduler_cmd(kubeconfig, port,
                                work / f"scheduler-{run_name}.prof" if args.profile == "cprofile" else None)
            cpu = Cpu({"emulator": emu.pid})
            spy_path = work / f"pyspy-{run_name}.txt"
            spies: list[subprocess.Popen[bytes]] = []

            def first_bound() -> None:
                cpu.mark("first")
                if sched is not None:
                    d.rss["first bind"] = status_mib(sched.pid, "VmRSS")
                if args.profile == "py-spy" and args.profile_from == "first-bind" and sched is not None:
                    spies.append(start_spy(emu.pid if args.profile_process == "emulator" else sched.pid, spy_path,
                                           args.profile_rate))
                elif args.profile == "py-spy" and args.profile_from == "launch" and spies:
                    spies[0].send_signal(signal.SIGINT)  # the start-up window ends: py-spy writes its output

            kubelets = None
            if case.kubelets:
                kubelet_kube = await KubeClient.connect(str(kubeconfig), qps=0)
                kubelet_kube.api.user_agent = KUBELET_AGENT
                kubelets = Kubelets(kubelet_kube, NS, args.concurrency)
            watch = BindWatch(kube, case.pods, ignore=BOUND_PREFIX, on_first=first_bound,
                              on_bound=kubelets.bound if kubelets is not None else None)
            watcher = await watch.start()
            sent: dict[str, float] = {}  # claim -> instant its binding conditions were about to be written
            driver = asyncio.create_task(dra_workload.play_driver(kube, sent), name="dra-driver") \
                if case.dra == "conditions" else None
            try:
                cpu.mark("launch")
                d.launched = time.monotonic()
                env = None if code is None else {**os.environ, "PYTHONPATH": str(code)}
                with open(log_path, "wb") as log_file:
                    sched = subprocess.Popen(cmd, cwd=ROOT, stdout=log_file, stderr=subprocess.STDOUT, env=env)
                cpu.pids["scheduler"] = sched.pid
                cpu.marks["launch"][1]["scheduler"] = 0.0  # a new process: no CPU used yet
                if args.profile == "py-spy" and args.profile_from == "launch":  # start-up: launch to the first bind
                    spies.append(start_spy(emu.pid if args.profile_process == "emulator" else sched.pid, spy_path,
                                           args.profile_rate))
                await wait_ready(port, sched, args.ready_timeout)
                d.ready = time.monotonic()
                d.rss["ready"] = status_mib(sched.pid, "VmRSS")
                if args.profile == "py-spy" and args.profile_from == "ready":  # the first plans and the drain
                    spy = start_spy(emu.pid if args.profile_process == "emulator" else sched.pid, spy_path,
                                    args.profile_rate)
                await wait_bound(watch, sched, args.timeout)
                if kubelets is not None:
                    await kubelets.wait()  # the drain ends when the last pod runs: its kubelet's writes counted
                cpu.mark("bound")
                if case.backlog and len(watch.bound) >= case.pods:
                    await asyncio.sleep(BACKLOG_WINDOW_S)  # the drain is over: what the backlog's retries cost
                    cpu.mark("backlog")
            finally:
                spy = spy or (spies[0] if spies else None)
                if spy is not None:
                    stop_spy(spy)
                for task in (watcher, driver):
                    if task is not None:
                        task.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await task
                if kubelets is not None:
                    await kubelets.close()
                    await kubelets.kube.close()
                    d.problems += kubelets.failures[:10]
            d.cpu = cpu
            d.seen(watch)
            if d.bound < case.pods:
                d.problems.append(not_all_bound(d.bound, case.pods, sched, args.timeout))
            d.sched_hwm = status_mib(sched.pid, "VmHWM")
            d.problems += await check(kube, case.gangs, case.per_gang, case.plain, case.backlog)
            if case.dra:
                d.problems += await check_dra(kube, case.dra, sent, watch.bound)
        finally:
            if spy is not None and spy_path.exists():
                d.profile = pyspy_summary(spy_path)
            if sched is not None:
                d.exit_code, d.log = stop_scheduler(sched, log_path, bool(d.problems))
            await kube.close()
    prof = work / f"scheduler-{run_name}.prof"
    if args.profile == "cprofile" and prof.exists():
        d.profile = cprofile_summary(prof)
    d.load = (d.load[0], loadavg())
    return d


def report_case(d: Drain) -> bool:
    """Print one case's figures and its ``case:`` summary line; True if every check passed."""
    c = d.case
    print(f"\n== case {c.name}: {c.describe()}" + (f" (the scheduler of {d.code})" if d.code else "") + " ==")
    print("setup: " + ", ".join(f"{k} {v:.1f} s" for k, v in d.setup_s.items())
          + f"; load average {d.load[0]} before, {d.load[1]} after")
    ok = not d.problems and d.exit_code == 0
    if d.cpu is None or "first" not in d.cpu.marks or "bound" not in d.cpu.marks:
        print(f"  ! no pod bound; problems: {d.problems}")
        return False
    drain_wall, used = d.cpu.between("first", "bound")
    _, whole = d.cpu.between("launch", "bound")
    drained = d.bound - 1
    rate, per_pod = d.steady()
    start_cpu = whole["scheduler"] - used["scheduler"]
    print(f"  ready (list + sync)        {d.ready - d.launched:7.2f} s after launch")
    print(f"  start -> first bind        {d.first_bound - d.launched:7.2f} s (scheduler CPU {start_cpu:.2f} s)")
    print(f"  first -> last bind         {d.last_bound - d.first_bound:7.2f} s for {drained} pods")
    print(f"  pods bound / s             {rate:7.1f}   ((bound - 1) / (last bind - first bind))")
    print(f"  scheduler CPU per pod      {per_pod:7.3f} ms  ({used['scheduler']:.2f} s utime+stime over the drain; "
          f"{1000 * whole['scheduler'] / d.bound:.3f} ms counting start-up)")
    emu_per_pod = 1000 * used["emulator"] / drained if drained else float("nan")
    print(f"  emulator CPU per pod       {emu_per_pod:7.3f} ms  (the rate it allows with a whole core: "
          f"{1000 / emu_per_pod if emu_per_pod > 0 else float('nan'):.0f} pods/s; the scheduler's: "
          f"{1000 / per_pod if per_pod > 0 else float('nan'):.0f})")
    print("  CPU share of one core during the drain: " + ", ".join(
        f"{who} {100 * used[who] / drain_wall:.0f}%" for who in ("scheduler", "emulator", "driver", "other")
        if drain_wall > 0))
    print(f"  scheduler VmHWM            {d.sched_hwm:7.0f} MiB"
          + "".join(f"; VmRSS {v:.0f} MiB at {k}" for k, v in d.rss.items()))
    backlog = ""
    if "backlog" in d.cpu.marks:
        window, idle = d.cpu.between("bound", "backlog")
        share = 100 * idle["scheduler"] / window
        print(f"  after the drain            {share:7.1f} % of a core for the scheduler over {window:.0f} s, with "
              f"{c.backlog} gangs that cannot fit waiting")
        backlog = f"; backlog {share:.1f}% of a core"
    if d.log:
        ms = d.log["solve_ms"]
        print(f"  log: results {dict(d.log['results'])}; solve ms p50 {pct(ms, 50):.2f} p99 {pct(ms, 99):.2f}; "
              f"{len(d.log['warnings'])} warning/error lines")
        for line in d.log["warnings"][:3]:
            print(f"    ! {line}")
    if d.profile:
        print(f"  profile:\n{d.profile}")
    for p in d.problems[:10]:
        print(f"  ! VIOLATION {p}")
    if d.exit_code != 0:
        print(f"  ! the scheduler exited with code {d.exit_code} on SIGTERM")
    util = 100 * used["scheduler"] / drain_wall if drain_wall > 0 else float("nan")
    print(f"case: {c.name}{' against' if d.code else ''} bound/s {rate:.1f}; "
          f"start->first bind {d.first_bound - d.launched:.2f} s "
          f"(CPU {start_cpu:.2f} s); CPU {per_pod:.3f} ms/pod steady, {1000 * whole['scheduler'] / d.bound:.3f} "
          f"whole drain; load {d.load[0]}; utilisation {util:.0f}%; "
          f"emulator {100 * used['emulator'] / drain_wall:.0f}% ({emu_per_pod:.3f} ms/pod); "
          f"VmHWM {d.sched_hwm:.0f} MiB; bound {d.bound}/{c.pods}{backlog}; {'OK' if ok else 'FAILED'}")
    return ok


# -- reporting -----------------------------------------------------------------------------------

def code_version(checkout: Path | None = None) -> str:
    """The commit of the ``scheduler`` package the scheduler subprocess imports (this checkout's, or that of
    ``checkout``), and whether it is modified."""
    if checkout is None:
        import scheduler
        src = Path(scheduler.__file__).parent
    else:
        src = checkout / "scheduler"
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=src, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "."], cwd=src, capture_output=True,
                               text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        head, dirty = "", ""
    state = (f"commit {head}" + (" + uncommitted changes in scheduler/" if dirty else "")) if head else "not a git tree"
    return f"scheduler package {src} ({state})"


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    return values[min(len(values) - 1, round(q / 100 * (len(values) - 1)))]


def report(args: argparse.Namespace, r: Result, b: Baseline | None) -> bool:
    expected = args.gangs * args.pods_per_gang
    c = r.created
    span = r.last_bound - c.first_pod if r.bound else float("nan")
    rate = r.bound / span if r.bound and span > 0 else float("nan")
    print(f"\nsetup: {args.nodes} nodes created in {r.nodes_s:.1f} s ({args.nodes / r.nodes_s:,.0f}/s); "
          f"scheduler ready {r.ready_s:.1f} s after launch")
    print(f"creates: {c.pods} pods + {args.gangs} PodGroups in {c.last_pod - c.first_sent:.2f} s "
          f"({c.pods / max(1e-9, c.last_pod - c.first_sent):,.0f} pods/s, {args.concurrency} requests in flight)")
    print(f"bound: {r.bound}/{expected} pods; {r.bound_by_last_created} already bound when the last pod was created")
    if r.bound:
        print(f"  first pod created -> first bound   {r.first_bound - c.first_pod:7.2f} s")
        print(f"  last pod created  -> last bound    {r.last_bound - c.last_pod:7.2f} s")
        print(f"  first pod created -> last bound    {span:7.2f} s")
        if r.log:
            print(f"  last pod created  -> last decided  {r.log['last_decided'] - c.last_pod:7.2f} s   "
                  f"(last 'result=Scheduled' in the scheduler log)")
            print(f"  last decided      -> last bound    {r.last_bound - r.log['last_decided']:7.2f} s   "
                  f"(binds and their watch events still in flight)")
        print(f"  pods bound / s                     {rate:7.1f}   (pods / (last bound - first pod created))")
    print(f"  wall time of the whole run         {r.wall_s:7.1f} s")
    print(f"memory: scheduler VmHWM {r.sched_hwm:.0f} MiB; emulator VmHWM {r.emu_hwm:.0f} MiB "
          f"(VmRSS {r.emu_rss:.0f} MiB at the end); driver ru_maxrss "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    if r.cpu is not None and "bound" in r.cpu.marks:
        print(f"cpu seconds (share of one core) per phase; nproc {len(os.sched_getaffinity(0))}:")
        print(f"  {'phase':<34} {'wall s':>7} {'scheduler':>15} {'emulator':>15} {'driver':>15} {'other procs':>15}")
        for a, z, title in (("ready", "created", "creating (ready -> last created)"),
                            ("created", "bound", "tail (last created -> last bound)"),
                            ("ready", "bound", "whole burst")):
            wall, used = r.cpu.between(a, z)
            cells = " ".join(f"{used[w]:6.2f} ({100 * used[w] / wall:3.0f}%)" if wall > 0 else "-"
                             for w in ("scheduler", "emulator", "driver", "other"))
            print(f"  {title:<34} {wall:7.2f} {cells}")
    sched_ms_per_pod = float("nan")
    if r.cpu is not None and "bound" in r.cpu.marks and r.bound:
        _, used = r.cpu.between("ready", "bound")
        launched = r.cpu.marks["bound"][1]["scheduler"]  # utime+stime since the process started
        sched_ms_per_pod = 1000 * used["scheduler"] / r.bound
        print(f"scheduler CPU per bound pod: {sched_ms_per_pod:.2f} ms = {used['scheduler']:.2f} s "
              f"(/proc/{r.cpu.pids['scheduler']}/stat utime+stime, ready -> last bound) / {r.bound} pods; "
              f"{1000 * launched / r.bound:.2f} ms counting its start-up too ({launched:.2f} s since launch)")
    lg = r.log
    if lg:
        ms = lg["solve_ms"]
        print(f"scheduler log: results {dict(lg['results'])}; {lg['pods_in_plans']} pods in plans; solve ms "
              f"p50 {pct(ms, 50):.1f} p99 {pct(ms, 99):.1f} max {max(ms, default=0):.1f} "
              f"total {sum(ms) / 1000:.2f} s; {len(lg['warnings'])} warning/error lines; exit code {r.exit_code}")
        for line in lg["warnings"][:5]:
            print(f"  ! {line}")
    print(f"PodGroups with {INITIALLY_SCHEDULED}=True: {r.groups_marked}/{args.gangs} "
          f"(status writes are best effort; not part of the pass/fail check)")
    if b is not None:
        print(f"baseline (fresh emulator, no scheduler, 2 pod watches open): {b.pods} creates in {b.create_s:.2f} s "
              f"({b.pods / b.create_s:,.0f}/s; CPU s emulator {b.create_cpu_s:.2f}, "
              f"driver {b.create_driver_cpu_s:.2f}); "
              f"then binding + Event per pod at 16 in flight: {b.bind_s:.2f} s ({b.pods / b.bind_s:,.0f} pods/s; "
              f"CPU s emulator {b.bind_cpu_s:.2f}, driver {b.bind_driver_cpu_s:.2f})")
        floor = b.create_s + b.bind_s
        print(f"  emulator floor for create+bind: {floor:.2f} s = {b.pods / floor:,.0f} pods/s end to end "
              f"(the scheduler run took {span:.2f} s from first pod created to last bound)")
    floor_rate = f"{b.pods / (b.create_s + b.bind_s):.0f}" if b is not None else "-"
    print(f"summary: bound/s {rate:.1f}; last created -> last bound {r.last_bound - c.last_pod:.2f} s; "
          f"scheduler CPU {sched_ms_per_pod:.2f} ms per bound pod; scheduler VmHWM {r.sched_hwm:.0f} MiB; "
          f"emulator floor {floor_rate} pods/s; bound {r.bound}/{expected}")
    print(f"reference: in-tree kube-scheduler {REFERENCE_PODS_PER_S[0]}-{REFERENCE_PODS_PER_S[1]} pods/s with DRA "
          f"claim templates at 500 nodes (scheduler_perf; a different workload, not like for like)")
    if r.profile:
        window = "ready -> last bound" if args.profile == "py-spy" else "the whole process, startup included"
        print(f"\nscheduler profile ({args.profile}, {window}):\n{r.profile}")
    ok = not r.problems and r.exit_code == 0
    if r.problems:
        for p in r.problems[:10]:
            print(f"  ! VIOLATION {p}")
        if len(r.problems) > 10:
            print(f"  ! … and {len(r.problems) - 10} more")
    else:
        print("correctness: OK (every pod bound, no node overcommitted, every gang whole)")
    if r.exit_code != 0:
        print(f"  ! the scheduler exited with code {r.exit_code} on SIGTERM")
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.bench.bench_e2e", description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=None, help="cluster size (default 1000; 200 with --quick)")
    ap.add_argument("--gangs", type=int, default=None, help="gangs created at once (default 200; 40 with --quick)")
    ap.add_argument("--pods-per-gang", type=int, default=8, help="pods per gang = its minCount (default 8)")
    ap.add_argument("--quick", action="store_true", help="200 nodes, 40 gangs, no baseline: a few seconds")
    ap.add_argument("--concurrency", type=int, default=32, help="driver requests in flight (default 32)")
    ap.add_argument("--timeout", type=float, default=120.0, help="most seconds to wait for every pod bound")
    ap.add_argument("--ready-timeout", type=float, default=60.0, help="most seconds to wait for /readyz")
    ap.add_argument("--seed", type=int, default=20261129)
    ap.add_argument("--no-baseline", action="store_true", help="skip the emulator-only run")
    ap.add_argument("--emulator-loop", choices=("uvloop", "asyncio"), default="uvloop",
                    help="event loop of the emulator process (the scheduler always runs on uvloop)")
    ap.add_argument("--profile", choices=("py-spy", "cprofile"), default=None,
                    help="profile the scheduler: py-spy attached from ready to last bound (needs `pip install "
                         "py-spy` in the venv), or the whole process under cProfile timed in CPU time (slower; "
                         "the collector's CPU ends the scheduler's log)")
    ap.add_argument("--profile-from", choices=("ready", "first-bind", "launch"), default="ready",
                    help="drains: start py-spy when the scheduler is ready (the first plans and the drain), at "
                         "the first bind (the steady state only, the window of the steady CPU per pod), or at its "
                         "launch until the first bind (start-up: lists, caches, the first plans)")
    ap.add_argument("--profile-rate", type=int, default=100, metavar="HZ",
                    help="with --profile py-spy: samples per second (default 100; 1000 gives ten times the samples "
                         "of a short drain, and slows the process it records a little)")
    ap.add_argument("--profile-process", choices=("scheduler", "emulator"), default="scheduler",
                    help="drains, with --profile py-spy: the process py-spy records (the emulator: to see what bounds "
                         "the rate when the emulator uses a whole core)")
    ap.add_argument("--keep", metavar="DIR", default=None,
                    help="write the scheduler log, kubeconfig and raw profile to DIR instead of a temporary directory")
    ap.add_argument("--stock-emulator", action="store_true",
                    help="serve with the unmodified ApiServer, whose kmock request history makes every request "
                         "O(requests so far); see BenchApiServer (only practical with --quick)")
    ap.add_argument("--case", action="append", choices=[*CASES, "all"], default=None,
                    help="a drain instead of the burst: everything created first, then the scheduler "
                         f"started (repeatable; 'all' runs {', '.join(ALL)}; "
                         "--nodes/--gangs/--pods-per-gang do not apply)")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="drains: run the cases N times in turn, then print each case's minimum, median and maximum")
    ap.add_argument("--against", metavar="DIR", default=None,
                    help="drains: run every case twice in a row, the second time with the scheduler package of the "
                         "checkout DIR (the scheduler process's PYTHONPATH), and summarise each code apart")
    ap.add_argument("--emulator", choices=SHAPES, default="real",
                    help="real (default): HTTPS, objects shaped and sized as a real API server's "
                         "(tests/bench/emulator.py); small: plain HTTP and objects as sent (the figures before)")
    ap.add_argument("--serve-emulator", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--emulator-dir", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--preload-nodes", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--preload-bound", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve_emulator:
        preload = preloaded(args.preload_nodes, args.preload_bound, args.seed) if args.preload_nodes else None
        (uvloop.run if args.emulator_loop == "uvloop" else asyncio.run)(
            serve(args.emulator, Path(args.emulator_dir), args.stock_emulator, preload))
        return 0
    if args.profile == "py-spy" and not (Path(sys.executable).parent / "py-spy").exists():
        ap.error("--profile py-spy needs py-spy in the venv: .venv/bin/pip install py-spy (not a project dependency)")
    if (args.repeat != 1 or args.against) and not args.case:
        ap.error("--repeat and --against apply to the drains (--case)")
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    if args.against and not (Path(args.against) / "scheduler" / "__init__.py").is_file():
        ap.error(f"--against {args.against}: not a checkout (no scheduler/__init__.py there)")
    if args.case:
        return run_cases(args, list(ALL) if "all" in args.case else args.case)
    args.nodes = args.nodes or (200 if args.quick else 1000)
    args.gangs = args.gangs or (40 if args.quick else 200)
    if args.quick:
        args.no_baseline = True

    print(f"gang-scheduler end-to-end benchmark (live scheduler against the kmock emulator: {emulator_line(args)})")
    print(f"date: {dt.datetime.now().astimezone().isoformat(timespec='seconds')}")
    print(f"machine: {machine()}; calibration {calibration_ms():.1f} ms CPU (a fixed pure-Python loop, best of "
          f"{CALIBRATION_ROUNDS}: lower is faster)")
    print(f"code: {code_version()}")
    print(f"cluster: {args.nodes} nodes ({GPU_SHARE:.0%} 8-GPU tainted, rest CPU), {len(ZONES)} zones x "
          f"{RACKS_PER_ZONE} racks; workload: {args.gangs} gangs x {args.pods_per_gang} pods created at once "
          f"(even gangs 4 cpu, odd gangs 1 {GPU} + 8 cpu); emulator loop {args.emulator_loop}")
    with tempfile.TemporaryDirectory(prefix="bench-e2e-") as tmp:
        work = Path(args.keep or tmp)
        work.mkdir(parents=True, exist_ok=True)
        result = uvloop.run(run_e2e(args, work))
        baseline = None if args.no_baseline else uvloop.run(run_baseline(args, work))
        if args.keep:
            print(f"scheduler log, kubeconfig and profile kept in {work}")
    ok = report(args, result, baseline)
    return 0 if ok else 1


def emulator_line(args: argparse.Namespace) -> str:
    return ("HTTPS, objects as a real API server returns them" if args.emulator == "real"
            else "plain HTTP, objects as sent")


def run_cases(args: argparse.Namespace, names: list[str]) -> int:
    """``--case``: run each drain in turn and print its figures; 1 if any check failed."""
    print("gang-scheduler end-to-end drains (objects created first, then `gang-scheduler run` started; "
          f"emulator: {emulator_line(args)})")
    print(f"date: {dt.datetime.now().astimezone().isoformat(timespec='seconds')}")
    print(f"machine: {machine()}; calibration {calibration_ms():.1f} ms CPU (a fixed pure-Python loop, best of "
          f"{CALIBRATION_ROUNDS}: lower is faster)")
    print(f"code: {code_version()}")
    codes: list[Path | None] = [None]
    if args.against:
        codes.append(Path(args.against).resolve())
        print(f"against: {code_version(codes[1])}")
    ok = True
    runs: defaultdict[tuple[str, Path | None], list[Drain]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="bench-e2e-") as tmp:
        work = Path(args.keep or tmp)
        work.mkdir(parents=True, exist_ok=True)
        for _ in range(args.repeat):
            for name in names:
                for code in codes:
                    d = uvloop.run(run_case(CASES[name], args, work, code))
                    ok = report_case(d) and ok
                    runs[name, code].append(d)
        if args.keep:
            print(f"scheduler logs, kubeconfig and profiles kept in {work}")
    if len(codes) > 1 or args.repeat > 1:
        print()
        for (name, code), drains in runs.items():
            print(summary_line(name, code, drains))
    return 0 if ok else 1


def summary_line(name: str, code: Path | None, drains: list[Drain]) -> str:
    """One case's runs (``--repeat``, ``--against``): minimum, median and maximum of the steady CPU per pod and
    of the pods bound per second, and the load averages (1 minute) they ran at."""
    figures = [d.steady() for d in drains]
    cpu = sorted(ms for _, ms in figures)
    rate = sorted(r for r, _ in figures)
    load = sorted(float(d.load[0].split()[0]) for d in drains)

    def spread(values: list[float], fmt: str) -> str:
        return "/".join(format(v, fmt) for v in (values[0], statistics.median(values), values[-1]))

    who = f"the scheduler of {code}" if code else "this checkout"
    return (f"summary: {name}, {who}, {len(drains)} run(s): steady CPU per pod min/median/max "
            f"{spread(cpu, '.3f')} ms; pods bound/s {spread(rate, '.1f')}; load {load[0]:.2f}-{load[-1]:.2f}")


if __name__ == "__main__":
    sys.exit(main())
