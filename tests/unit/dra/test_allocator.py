"""The per-node structured allocator: requests, constraints, counters, taints, and the greedy trap."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.dra.allocator import (
    ClaimSpec,
    Constraint,
    Device,
    DeviceState,
    DeviceToleration,
    Request,
    SubRequest,
    allocate_copies,
    claim_alternatives,
)
from scheduler.model.dra import DeviceUse

D = Decimal


def gpu(name: str, product: str = "H100", root: str = "pci0", **kw: object) -> Device:
    return Device(id=f"gpu.example.com/node/{name}", driver="gpu.example.com", pool="node", name=name,
                  attributes={"gpu.example.com/productName": product, "resource.kubernetes.io/pcieRoot": root},
                  **kw)  # type: ignore[arg-type]


def by_class(sub: SubRequest, device: Device) -> bool:
    """Test matcher: class 'gpu' matches everything; 'h100' only productName H100; 'half' only names with 'half'."""
    if sub.class_name == "h100":
        return device.attributes.get("gpu.example.com/productName") == "H100"
    if sub.class_name == "half":
        return "half" in device.name
    if sub.class_name == "whole":
        return "half" not in device.name
    return True


def claim(*requests: Request, constraints: tuple[Constraint, ...] = ()) -> ClaimSpec:
    return ClaimSpec(requests=requests, constraints=constraints)


def exactly(name: str, count: int = 1, cls: str = "gpu", all_: bool = False, **kw: object) -> Request:
    return Request(name, (SubRequest(name, cls, count=count, all=all_, **kw),))  # type: ignore[arg-type]


def names(results: list[tuple[str, Device]]) -> list[tuple[str, str]]:
    return [(r, d.name) for r, d in results]


def first(spec: ClaimSpec, devices: list[Device], state: DeviceState | None = None) -> list[tuple[str, Device]] | None:
    from scheduler.dra.allocator import _Budget

    return next(claim_alternatives(spec, devices, by_class, state or DeviceState(), _Budget(1000)), None)


def test_exact_count_takes_that_many_devices_in_name_order() -> None:
    got = first(claim(exactly("g", 2)), [gpu("g1"), gpu("g0"), gpu("g2")])
    assert got is not None and names(got) == [("g", "g0"), ("g", "g1")]


def test_not_enough_matching_devices_fails() -> None:
    assert first(claim(exactly("g", 2, cls="h100")), [gpu("g0"), gpu("g1", product="A100")]) is None


def test_taken_devices_are_skipped() -> None:
    state = DeviceState(taken={"gpu.example.com/node/g0": DeviceUse("gpu.example.com/node/g0")})
    got = first(claim(exactly("g")), [gpu("g0"), gpu("g1")], state)
    assert got is not None and names(got) == [("g", "g1")]


def test_all_mode_takes_every_matching_device_and_fails_if_one_is_taken() -> None:
    devices = [gpu("g0"), gpu("g1"), gpu("a0", product="A100")]
    got = first(claim(exactly("g", cls="h100", all_=True)), devices)
    assert got is not None and names(got) == [("g", "g0"), ("g", "g1")]
    assert first(claim(exactly("g", cls="h100", all_=True)), devices,
                 DeviceState(taken={"gpu.example.com/node/g1": DeviceUse("gpu.example.com/node/g1")})) is None


def test_first_available_tries_sub_requests_in_order() -> None:
    req = Request("g", (SubRequest("g/big", "h100", count=2), SubRequest("g/any", "gpu", count=1)))
    got = first(claim(req), [gpu("g0"), gpu("a0", product="A100")])
    assert got is not None and names(got) == [("g/any", "a0")]


def test_match_attribute_keeps_devices_on_one_pcie_root() -> None:
    devices = [gpu("g0", root="r0"), gpu("g1", root="r1"), gpu("g2", root="r1")]
    spec = claim(exactly("g", 2), constraints=(Constraint(match_attribute="resource.kubernetes.io/pcieRoot"),))
    got = first(spec, devices)
    assert got is not None and names(got) == [("g", "g1"), ("g", "g2")]


def test_match_attribute_across_two_requests() -> None:
    nic = Device(id="dra.net/node/nic1", driver="dra.net", pool="node", name="nic1",
                 attributes={"resource.kubernetes.io/pcieRoot": "r1"})
    spec = claim(exactly("gpu", cls="h100"), exactly("nic", cls="nic"),
                 constraints=(Constraint(requests=("gpu", "nic"), match_attribute="resource.kubernetes.io/pcieRoot"),))

    def matcher(sub: SubRequest, d: Device) -> bool:
        return d.driver == "dra.net" if sub.class_name == "nic" else by_class(sub, d)

    from scheduler.dra.allocator import _Budget

    got = next(claim_alternatives(spec, [gpu("g0", root="r0"), gpu("g1", root="r1"), nic], matcher, DeviceState(),
                                  _Budget(100)), None)
    assert got is not None and names(got) == [("gpu", "g1"), ("nic", "nic1")]


def test_distinct_attribute() -> None:
    devices = [gpu("g0", root="r0"), gpu("g1", root="r0"), gpu("g2", root="r1")]
    spec = claim(exactly("g", 2), constraints=(Constraint(distinct_attribute="resource.kubernetes.io/pcieRoot"),))
    got = first(spec, devices)
    assert got is not None and names(got) == [("g", "g0"), ("g", "g2")]


def test_device_taint_blocks_unless_tolerated() -> None:
    tainted = [gpu("g0", taints=(("maintenance", "true", "NoSchedule"),))]
    assert first(claim(exactly("g")), tainted) is None
    tolerant = Request("g", (SubRequest("g", "gpu", tolerations=(DeviceToleration("maintenance", "Exists"),)),))
    assert first(claim(tolerant), tainted) is not None


def partitioned_gpu() -> tuple[list[Device], DeviceState]:
    """One physical GPU published three ways on shared counters: whole (all 8 slices) or two halves (4 each)."""
    whole = Device(id="gpu.example.com/node/gpu-0", driver="gpu.example.com", pool="node", name="gpu-0",
                   consumes=(("gpu.example.com/node/gpu-0-counters", (("slices", D(8)),)),), weight=1.0)
    halves = [Device(id=f"gpu.example.com/node/gpu-0-half-{x}", driver="gpu.example.com", pool="node",
                     name=f"gpu-0-half-{x}", consumes=(("gpu.example.com/node/gpu-0-counters", (("slices", D(4)),)),),
                     weight=0.5) for x in "ab"]
    state = DeviceState(counters={"gpu.example.com/node/gpu-0-counters": {"slices": D(8)}})
    return [whole, *halves], state


def test_counters_are_never_over_consumed() -> None:
    devices, state = partitioned_gpu()
    got = allocate_copies([claim(exactly("g", cls="whole"))], 3, devices, by_class, state)
    assert len(got) == 1
    assert state.counters["gpu.example.com/node/gpu-0-counters"]["slices"] == 0
    assert first(claim(exactly("g", cls="half")), devices, state) is None


def test_greedy_trap_two_halves_serve_two_members() -> None:
    """Any GPU device serves a member. First-fit by name gives gpu-0 (whole) to the first and starves the
    second; best fit plus backtracking gives each member a half."""
    devices, state = partitioned_gpu()
    got = allocate_copies([claim(exactly("g"))], 2, devices, by_class, state)
    assert [names(copy[0]) for copy in got] == [[("g", "gpu-0-half-a")], [("g", "gpu-0-half-b")]]


def test_backtracking_revisits_an_earlier_copy() -> None:
    """weights mislead best fit: the light device is the only one the second copy's request can use."""
    light = Device(id="x/p/light", driver="x", pool="p", name="light", attributes={"x/kind": "special"}, weight=0.1)
    heavy = Device(id="x/p/heavy", driver="x", pool="p", name="heavy", attributes={"x/kind": "plain"}, weight=0.9)

    def matcher(sub: SubRequest, d: Device) -> bool:
        return sub.class_name == "any" or d.attributes.get("x/kind") == "special"

    # one pod with two claims: the first takes any device, the second needs the special one
    spec_any, spec_special = claim(exactly("a", cls="any")), claim(exactly("s", cls="special"))
    state = DeviceState()
    got = allocate_copies([spec_any, spec_special], 1, [light, heavy], matcher, state)
    assert len(got) == 1
    assert names(got[0][0]) == [("a", "heavy")] and names(got[0][1]) == [("s", "light")]
    assert state.taken == {"x/p/light": DeviceUse("x/p/light"), "x/p/heavy": DeviceUse("x/p/heavy")}


@pytest.mark.parametrize("budget", [1, 3])
def test_budget_bounds_the_search_and_returns_the_best_so_far(budget: int) -> None:
    devices = [gpu(f"g{i}") for i in range(6)]
    state = DeviceState()
    got = allocate_copies([claim(exactly("g", 2))], 3, devices, by_class, state, budget_steps=budget)
    assert len(got) == budget
    assert len(state.taken) == 2 * budget


@st.composite
def copy_problems(draw: st.DrawFn) -> tuple[list[ClaimSpec], int, list[Device], DeviceState, int]:
    """Random one-node problems: plain GPUs and partitionable ones on a counter set, some taken already,
    one or two claims per copy (1–2 devices, sometimes on one PCIe root), a small budget or none."""
    counter = "gpu.example.com/node/counters"
    devices = [gpu(f"g{i}", root=f"pci{draw(st.integers(0, 1))}") for i in range(draw(st.integers(0, 4)))]
    devices += [Device(id=f"gpu.example.com/node/part-{i}", driver="gpu.example.com", pool="node", name=f"part-{i}",
                       attributes={"resource.kubernetes.io/pcieRoot": "pci0"},
                       consumes=((counter, (("slices", D(size)),)),), weight=size / 8)
                for i, size in enumerate(draw(st.lists(st.sampled_from([2, 4, 8]), max_size=3)))]
    state = DeviceState(counters={counter: {"slices": D(8)}})
    for i in draw(st.lists(st.integers(0, len(devices) - 1), unique=True)) if devices else []:
        if state.fits(device := devices[i]):
            state.take(device)
    state.journal.clear()  # what the solve started with, as :meth:`Inventory.state` hands it over
    pcie = Constraint(match_attribute="resource.kubernetes.io/pcieRoot")
    claims = [claim(exactly("g", draw(st.integers(1, 2))), constraints=(pcie,) if draw(st.booleans()) else ())
              for _ in range(draw(st.integers(1, 2)))]
    return claims, draw(st.integers(1, 4)), devices, state, draw(st.sampled_from([1, 2, 3, 5, 8, 2000]))


@settings(max_examples=300, deadline=None)
@given(copy_problems())
def test_allocate_copies_leaves_exactly_the_returned_copies_taken(
        problem: tuple[list[ClaimSpec], int, list[Device], DeviceState, int]) -> None:
    """Whichever way the search ends (every copy found, fewer, or the budget spent mid-copy), the state holds
    what it held before plus the devices of the copies returned — no device of a copy given up — and each
    copy is a valid allocation of the claims."""
    claims, copies, devices, state, budget = problem
    before, counters = set(state.taken), {s: dict(c) for s, c in state.counters.items()}
    got = allocate_copies(claims, copies, devices, by_class, state, budget_steps=budget)
    assert len(got) <= copies
    given_ = [d for copy in got for results in copy for _, d in results]
    assert len({d.id for d in given_}) == len(given_) and before.isdisjoint(d.id for d in given_)
    assert set(state.taken) == before | {d.id for d in given_}
    assert [d.id for d in state.journal] == [d.id for d in given_]
    expected = DeviceState({d: DeviceUse(d) for d in before}, counters)
    for d in given_:
        expected.take(d)
    assert state.counters == expected.counters
    for copy in got:
        assert len(copy) == len(claims)
        for spec, results in zip(claims, copy, strict=True):
            assert len(results) == spec.requests[0].options[0].count
            roots = {d.attributes.get("resource.kubernetes.io/pcieRoot") for _, d in results}
            assert not spec.constraints or len(roots) == 1


def cpu(name: str, numa: object) -> Device:
    return Device(id=f"cpu.example.com/node/{name}", driver="cpu.example.com", pool="node", name=name,
                  attributes={"resource.kubernetes.io/numaNode": numa})


@pytest.mark.parametrize(("constraint", "numas", "expected"), [
    pytest.param(Constraint(match_attribute="resource.kubernetes.io/numaNode"), [(0, 1), (1, 2)], True,
                 id="match-lists-that-overlap"),
    pytest.param(Constraint(match_attribute="resource.kubernetes.io/numaNode"), [(0, 1), 2], False,
                 id="match-list-and-scalar-disjoint"),
    pytest.param(Constraint(match_attribute="resource.kubernetes.io/numaNode"), [(0, 1), 1], True,
                 id="match-scalar-in-the-list"),
    pytest.param(Constraint(distinct_attribute="resource.kubernetes.io/numaNode"), [(0, 1), (1, 2)], False,
                 id="distinct-lists-that-overlap"),
    pytest.param(Constraint(distinct_attribute="resource.kubernetes.io/numaNode"), [(0, 1), (2, 3)], True,
                 id="distinct-disjoint-lists"),
    pytest.param(Constraint(match_attribute="resource.kubernetes.io/numaNode"), [True, 1], False,
                 id="match-bool-is-not-an-int"),
])
def test_constraints_over_list_attributes(constraint: Constraint, numas: list[object], expected: bool) -> None:
    """KEP-5491: matchAttribute needs a value common to all devices' sets, distinctAttribute pairwise
    disjoint sets; a scalar is a set of one."""
    devices = [cpu(f"c{i}", n) for i, n in enumerate(numas)]
    got = first(claim(exactly("c", len(devices)), constraints=(constraint,)), devices)
    assert (got is not None) is expected


@pytest.mark.parametrize(("spec", "expected"), [
    pytest.param(claim(exactly("g", admin=True)), [("g", "g0")], id="one-device-allocated-elsewhere"),
    pytest.param(claim(exactly("g", all_=True, admin=True)), [("g", "g0"), ("g", "g1")], id="all-devices-taken-or-not"),
    pytest.param(claim(exactly("g", 2, admin=True), exactly("h", admin=True)), None,
                 id="one-claim-never-names-a-device-twice"),
])
def test_admin_access_uses_allocated_devices_without_taking_them(spec: ClaimSpec,
                                                                 expected: list[tuple[str, str]] | None) -> None:
    """KEP-5018: an ``adminAccess`` request may get devices other claims hold, and takes nothing itself."""
    taken = {"gpu.example.com/node/g0": DeviceUse("gpu.example.com/node/g0")}
    state = DeviceState(taken=dict(taken))
    got = first(spec, [gpu("g0"), gpu("g1")], state)
    assert (names(got) if got is not None else None) == expected
    assert state.taken == taken and state.journal == []
