"""The assertions at rest, judged on what the API server shows, and the poll that waits for rest.

After the chaos of a variant stops, :func:`settle` re-reads the cluster every half second until
no :class:`Check` finds anything, or until its timeout; whatever is still found then is the
variant's verdict. The checks:

* no gang with 0 < bound < minCount;
* every gang with ≥ minCount members bound shows ``PodGroupInitiallyScheduled=True``;
* no node over its allocatable: the effective requests of the pods bound to it (containers summed,
  the largest init container if larger, plus overhead; a request unset but limited defaults to
  the limit, as the API server does) ≤ ``status.allocatable`` per resource, ``pods`` included, a
  resource the node does not list counting as 0;
* no device (driver, pool, device) in two ResourceClaims' ``status.allocation``;
* liveness, where a variant says which gangs fit by construction: those are fully bound (without
  it, a scheduler that binds nothing would pass the four above).

Quantities the API server would refuse (``"abc"`` as cpu) cannot be judged; they are listed as
notes, never silently counted as zero.
"""

from __future__ import annotations

import asyncio
import collections
import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from scheduler.client.kube import KubeClient
from tests.chaos.observe import JSON, Cluster, Gang, GangState, key_of, node_of, read_cluster


class Check(enum.StrEnum):
    NO_PARTIAL_GANG = "no gang with 0 < bound < minCount"
    INITIALLY_SCHEDULED = "every fully bound gang shows PodGroupInitiallyScheduled=True"
    NO_OVERCOMMIT = "no node over its allocatable"
    NO_DEVICE_TWICE = "no device in two ResourceClaim allocations"
    EXPECTED_BOUND = "the gangs that fit by construction are fully bound"


# -- quantities (apimachinery resource.Quantity, the forms the API server accepts) ---------------------------
_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1), "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6, "G": Decimal(10) ** 9, "T": Decimal(10) ** 12, "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    **{suffix: Decimal(2) ** (10 * (i + 1)) for i, suffix in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))}}
_QUANTITY = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+))(?:[eE]([+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?")


def quantity(value: Any) -> Decimal | None:
    """A quantity as a number, or None when the API server would refuse it."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Decimal(str(value))
    if not isinstance(value, str) or not (m := _QUANTITY.fullmatch(value)):
        return None
    try:
        number = Decimal(m.group(1))
        return number * (Decimal(10) ** int(m.group(2)) if m.group(2) else _SUFFIXES[m.group(3) or ""])
    except (InvalidOperation, ValueError):
        return None


def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _container_requests(container: Any) -> dict[str, Decimal] | None:
    resources = _dict(_dict(container).get("resources"))
    merged = {**_dict(resources.get("limits")), **_dict(resources.get("requests"))}
    out = {}
    for name, raw in merged.items():
        if (value := quantity(raw)) is None:
            return None
        out[name] = value
    return out


def pod_requests(pod: JSON) -> dict[str, Decimal] | None:
    """Effective requests of one pod (module docstring), ``pods: 1`` included; None if a quantity is refused."""
    spec = _dict(pod.get("spec"))
    total: dict[str, Decimal] = collections.defaultdict(Decimal)
    for container in _list(spec.get("containers")):
        if (req := _container_requests(container)) is None:
            return None
        for name, value in req.items():
            total[name] += value
    for container in _list(spec.get("initContainers")):
        if (req := _container_requests(container)) is None:
            return None
        for name, value in req.items():
            total[name] = max(total[name], value)
    for name, raw in _dict(spec.get("overhead")).items():
        if (overhead := quantity(raw)) is None:
            return None
        total[name] += overhead
    total["pods"] += 1
    return dict(total)


def overcommitted(cluster: Cluster) -> tuple[list[str], list[str]]:
    """(nodes over their allocatable, notes on what could not be judged)."""
    by_node: dict[str, list[JSON]] = collections.defaultdict(list)
    for pod in cluster.pods:
        if (bound_to := node_of(pod)) and _dict(pod.get("status")).get("phase") not in ("Succeeded", "Failed"):
            by_node[bound_to].append(pod)
    found, notes = [], []
    for node in cluster.nodes:
        name = key_of(node)
        pods = by_node.get(name, [])
        if not pods:
            continue
        allocatable = {r: quantity(v) for r, v in _dict(_dict(node.get("status")).get("allocatable")).items()}
        used: dict[str, Decimal] = collections.defaultdict(Decimal)
        for pod in pods:
            if (req := pod_requests(pod)) is None:
                notes.append(f"pod {key_of(pod)} on node {name}: a request the API server would refuse")
                continue
            for resource, amount in req.items():
                used[resource] += amount
        for resource, amount in sorted(used.items()):
            have = allocatable.get(resource, Decimal(0))
            if have is None:
                notes.append(f"node {name}: allocatable {resource} the API server would refuse")
            elif amount > have:
                found.append(f"node {name}: {resource} {amount.normalize():f} requested > {have.normalize():f} "
                             f"allocatable ({len(pods)} pods)")
    return found, notes


def devices_twice(cluster: Cluster) -> list[str]:
    """Devices listed in the allocations of two or more claims."""
    holders: dict[tuple[str, str, str], list[str]] = collections.defaultdict(list)
    for claim in cluster.claims:
        results = _dict(_dict(_dict(claim.get("status")).get("allocation")).get("devices")).get("results")
        for result in _list(results):
            r = _dict(result)
            holders[str(r.get("driver")), str(r.get("pool")), str(r.get("device"))].append(key_of(claim))
    return [f"device {'/'.join(d)} in {', '.join(sorted(c))}" for d, c in sorted(holders.items()) if len(c) > 1]


def violations(cluster: Cluster, expect_full: Iterable[str] = ()) -> tuple[dict[Check, list[str]], list[str]]:
    """What each :class:`Check` finds in one read (every check always present), and the notes."""
    gangs = cluster.gangs()
    over, notes = overcommitted(cluster)
    missing = [k for k in expect_full if k not in gangs]
    return {
        Check.NO_PARTIAL_GANG: [g.shown() for g in gangs.values() if g.state is GangState.PARTIAL],
        Check.INITIALLY_SCHEDULED: [g.shown() for g in gangs.values()
                                    if g.state is GangState.FULL and not g.initially_scheduled],
        Check.NO_OVERCOMMIT: over,
        Check.NO_DEVICE_TWICE: devices_twice(cluster),
        Check.EXPECTED_BOUND: [gangs[k].shown() for k in expect_full if k in gangs and
                               gangs[k].state is not GangState.FULL] + [f"{k}: PodGroup missing" for k in missing],
    }, notes


@dataclass
class Verdict:
    """The last read of :func:`settle` and what it found."""

    cluster: Cluster
    found: dict[Check, list[str]]
    notes: list[str]
    waited_s: float
    gangs: Mapping[str, Gang] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not any(self.found.values())

    def states(self) -> dict[str, int]:
        """Gangs at rest by state, ``full`` split into with and without the condition."""
        counts: collections.Counter[str] = collections.Counter()
        for gang in self.gangs.values():
            state = gang.state.value
            if gang.state is GangState.FULL and not gang.initially_scheduled:
                state = "full-without-condition"
            counts[state] += 1
        return dict(sorted(counts.items()))


async def settle(kube: KubeClient, expect_full: Iterable[str] = (), timeout_s: float = 20.0,
                 interval_s: float = 0.5) -> Verdict:
    """Poll until no check finds anything or ``timeout_s`` passed; the verdict of the last read."""
    expected = list(expect_full)
    loop = asyncio.get_running_loop()
    started = loop.time()
    while True:
        cluster = await read_cluster(kube)
        found, notes = violations(cluster, expected)
        waited = loop.time() - started
        if not any(found.values()) or waited >= timeout_s:
            return Verdict(cluster, found, notes, waited, cluster.gangs())
        await asyncio.sleep(interval_s)
