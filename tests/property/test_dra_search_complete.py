"""The device search is complete on one node: whenever some assignment of devices satisfies every member's
claims, the gang is placed — whatever order the members' claims are tried in — and never with a device twice.

Each member of a gang names its own ResourceClaim (``resourceClaimName``), so members whose claims differ
are different signatures, reserved one after the other on the node. A brute-force enumeration of every
assignment (each request: any of its ``firstAvailable`` choices, any combination of matching devices; the
claim's ``matchAttribute`` / ``distinctAttribute`` constraints; shared counter sets never over-consumed;
no device given twice) is the oracle.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.framework import Plan
from scheduler.model.dra import ResourceSlice
from tests.unit.groups.builders import pg
from tests.unit.solver.builders import node
from tests.unit.solver.test_search_dra import DRIVER, claim, pod_with_claim, run

PRODUCTS = ("A", "B")
COUNTER_SET = "gpu-0"


@dataclass(frozen=True)
class Dev:
    """A device of the node: its attributes and how much of the counter set it consumes (0: none)."""

    name: str
    product: str
    numa: int
    mem: int = 0


@dataclass(frozen=True)
class Choice:
    """One way to satisfy a request: ``count`` devices, of ``product`` (None: any)."""

    name: str | None
    count: int
    product: str | None


@dataclass(frozen=True)
class Spec:
    """A claim: its requests (each a list of choices; more than one is ``firstAvailable``) and constraint."""

    requests: tuple[tuple[Choice, ...], ...]
    constraint: str | None = None
    """``match`` or ``distinct`` on the ``numa`` attribute, over every request, or None."""

    def api(self) -> dict[str, Any]:
        requests = []
        for i, choices in enumerate(self.requests):
            def exact(c: Choice) -> dict[str, Any]:
                body: dict[str, Any] = {"deviceClassName": "gpu.example.com", "count": c.count}
                if c.product is not None:
                    body["selectors"] = [{"cel": {"expression":
                                                  f'device.attributes["{DRIVER}"].product == "{c.product}"'}}]
                return body
            if len(choices) == 1:
                requests.append({"name": f"r{i}", "exactly": exact(choices[0])})
            else:
                requests.append({"name": f"r{i}", "firstAvailable": [{"name": c.name, **exact(c)} for c in choices]})
        constraints = []
        if self.constraint == "match":
            constraints.append({"matchAttribute": f"{DRIVER}/numa"})
        elif self.constraint == "distinct":
            constraints.append({"distinctAttribute": f"{DRIVER}/numa"})
        return {"devices": {"requests": requests, "constraints": constraints}}


choices = st.builds(Choice, st.just(None), st.integers(1, 2), st.sampled_from([None, *PRODUCTS]))
first_available = st.tuples(st.builds(Choice, st.just("big"), st.just(2), st.sampled_from(PRODUCTS)),
                            st.builds(Choice, st.just("small"), st.just(1), st.sampled_from([None, *PRODUCTS])))
specs = st.builds(Spec, st.lists(st.one_of(choices.map(lambda c: (c,)), first_available), min_size=1,
                                 max_size=2).map(tuple),
                  st.sampled_from([None, None, "match", "distinct"]))


@st.composite
def problems(draw: st.DrawFn) -> tuple[list[Dev], list[Spec]]:
    """Up to five devices (plain, or partitions of one GPU on a counter set of 8) and one to three members."""
    devices = [Dev(f"d{i}", draw(st.sampled_from(PRODUCTS)), draw(st.integers(0, 1)))
               for i in range(draw(st.integers(1, 4)))]
    if draw(st.booleans()):
        devices += [Dev(f"part-{i}", draw(st.sampled_from(PRODUCTS)), 0, mem)
                    for i, mem in enumerate(draw(st.lists(st.sampled_from([4, 8]), min_size=1, max_size=2)))]
    return devices, draw(st.lists(specs, min_size=1, max_size=3))


def node_slice(devices: Sequence[Dev]) -> ResourceSlice:
    api = []
    for d in devices:
        body: dict[str, Any] = {"name": d.name, "attributes": {"product": {"string": d.product},
                                                              "numa": {"int": d.numa}}}
        if d.mem:
            body["consumesCounters"] = [{"counterSet": COUNTER_SET, "counters": {"mem": {"value": str(d.mem)}}}]
        api.append(body)
    spec: dict[str, Any] = {"driver": DRIVER, "nodeName": "n0", "devices": api,
                            "pool": {"name": "n0", "generation": 1, "resourceSliceCount": 1}}
    if any(d.mem for d in devices):
        spec["sharedCounters"] = [{"name": COUNTER_SET, "counters": {"mem": {"value": "8"}}}]
    return ResourceSlice.model_validate({"metadata": {"name": "n0-gpus"}, "spec": spec})


def allocations(spec: Spec, devices: Sequence[Dev], free: frozenset[str]) -> Iterator[frozenset[str]]:
    """Every set of devices (among ``free``) that satisfies ``spec``."""
    def requests(i: int, chosen: tuple[Dev, ...]) -> Iterator[tuple[Dev, ...]]:
        if i == len(spec.requests):
            yield chosen
            return
        for c in spec.requests[i]:
            pool = [d for d in devices if d.name in free and d not in chosen
                    and (c.product is None or d.product == c.product)]
            for combo in itertools.combinations(pool, c.count):
                yield from requests(i + 1, chosen + combo)

    for chosen in requests(0, ()):
        numas = [d.numa for d in chosen]
        if spec.constraint == "match" and len(set(numas)) > 1:
            continue
        if spec.constraint == "distinct" and len(set(numas)) != len(numas):
            continue
        yield frozenset(d.name for d in chosen)


def brute_force(devices: Sequence[Dev], claims: Sequence[Spec]) -> bool:
    """Whether every claim can be allocated at once (distinct devices, the counter set within 8)."""
    mem = {d.name: d.mem for d in devices}

    def go(i: int, free: frozenset[str], used: int) -> bool:
        if i == len(claims):
            return True
        for taken in allocations(claims[i], devices, free):
            more = sum(mem[n] for n in taken)
            if used + more <= 8 and go(i + 1, free - taken, used + more):
                return True
        return False

    return go(0, frozenset(d.name for d in devices), 0)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_members_get_devices_whenever_an_assignment_exists(problem: tuple[list[Dev], list[Spec]]) -> None:
    devices, claims = problem
    pods = [pod_with_claim(f"w-{i}", "g", f"w-{i}-gpus", template=False) for i in range(len(claims))]
    api_claims = [claim(f"w-{i}-gpus", spec.api()) for i, spec in enumerate(claims)]
    result = run([node("n0", cpu="32")], pods, [pg("g", len(pods))], [node_slice(devices)], api_claims)
    possible = brute_force(devices, claims)
    assert isinstance(result, Plan) == possible, result
    if isinstance(result, Plan):
        given_ = [d for a in result.allocations for _, _, _, d in a.results]
        assert len(given_) == len(set(given_)), given_
        by_name = {d.name: d for d in devices}
        assert sum(by_name[d].mem for d in given_) <= 8
        for i, spec in enumerate(claims):
            (alloc,) = [a for a in result.allocations if a.claim.endswith(f"/w-{i}-gpus")]
            names = frozenset(d for _, _, _, d in alloc.results)
            assert names in set(allocations(spec, devices, names)), (spec, alloc.results)
