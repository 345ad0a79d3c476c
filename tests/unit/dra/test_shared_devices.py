"""Devices with ``allowMultipleAllocations`` (KEP-5075) in the per-node allocator: shared within their capacity,
packed, backtracked over like node resources, and given back exactly on undo."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.dra.allocator import (
    ClaimSpec,
    Device,
    DeviceState,
    Request,
    SubRequest,
    _Budget,
    allocate_copies,
    allocate_pods,
    claim_alternatives,
)
from scheduler.dra.capacity import Capacity, CapacityPolicy
from scheduler.model.dra import DeviceUse

D = Decimal
DRIVER = "nic.example.com"
COUNTERS = f"{DRIVER}/node/nic-counters"


def nic(name: str, bandwidth: str = "10", policy: CapacityPolicy | None = None, shared: bool = True,
        weight: float = 0.0, consumes: tuple[tuple[str, tuple[tuple[str, Decimal], ...]], ...] = ()) -> Device:
    return Device(id=f"{DRIVER}/node/{name}", driver=DRIVER, pool="node", name=name, shared=shared, weight=weight,
                  capacity=(Capacity("bandwidth", f"{DRIVER}/bandwidth", D(bandwidth), policy),), consumes=consumes)


def share(gbps: str | None, count: int = 1) -> ClaimSpec:
    requests = (("bandwidth", D(gbps)),) if gbps is not None else ()
    return ClaimSpec((Request("net", (SubRequest("net", "nic", count=count, capacity=requests),)),))


def anything(sub: SubRequest, device: Device) -> bool:
    return True


def allocate(spec: ClaimSpec, devices: list[Device], state: DeviceState) -> list[tuple[str, str]] | None:
    got = next(claim_alternatives(spec, devices, anything, state, _Budget(1000)), None)
    return None if got is None else [(r, d.name) for r, d in got]


def test_two_claims_share_one_device_and_the_third_goes_to_another() -> None:
    devices, state = [nic("nic-0"), nic("nic-1")], DeviceState()
    for expected in ("nic-0", "nic-0", "nic-1"):
        assert allocate(share("4"), devices, state) == [("net", expected)]
    assert state.shares == {f"{DRIVER}/node/nic-0": 2, f"{DRIVER}/node/nic-1": 1}
    assert state.consumed == {f"{DRIVER}/node/nic-0": {"bandwidth": D(8)}, f"{DRIVER}/node/nic-1": {"bandwidth": D(4)}}
    assert state.taken == {}


def test_capacity_running_out_fails_when_no_other_device_has_room() -> None:
    devices, state = [nic("nic-0")], DeviceState()
    assert allocate(share("6"), devices, state) == [("net", "nic-0")]
    assert allocate(share("6"), devices, state) is None
    assert allocate(share("4"), devices, state) == [("net", "nic-0")]  # exactly what is left


def test_a_request_without_capacity_takes_the_whole_capacity_or_the_policy_default() -> None:
    state = DeviceState()
    assert allocate(share(None), [nic("nic-0")], state) == [("net", "nic-0")]
    assert allocate(share("1"), [nic("nic-0")], state) is None  # no policy: the whole 10 was consumed
    policy = CapacityPolicy(default=D(2), minimum=D(2), maximum=D(4), step=D(2))
    state = DeviceState()
    for _ in range(5):
        assert allocate(share(None), [nic("nic-0", policy=policy)], state) == [("net", "nic-0")]
    assert allocate(share(None), [nic("nic-0", policy=policy)], state) is None


def test_a_rounded_request_consumes_the_rounded_amount() -> None:
    policy = CapacityPolicy(default=D(2), minimum=D(2), maximum=D(4), step=D(2))
    state = DeviceState()
    assert allocate(share("3"), [nic("nic-0", policy=policy)], state) == [("net", "nic-0")]
    assert state.consumed[f"{DRIVER}/node/nic-0"] == {"bandwidth": D(4)}
    assert allocate(share("5"), [nic("nic-0", policy=policy)], DeviceState()) is None  # rounds above max


def test_partly_used_devices_are_preferred_fullest_first() -> None:
    """Packing: a share goes to a device already shared (the fullest), not to a fresh one that sorts first."""
    fresh, light, full = nic("a-fresh"), nic("b-light"), nic("c-full")
    state = DeviceState(shares={light.id: 1, full.id: 1}, consumed={light.id: {"bandwidth": D(2)},
                                                                    full.id: {"bandwidth": D(7)}})
    assert allocate(share("2"), [fresh, light, full], state) == [("net", "c-full")]
    assert allocate(share("2"), [fresh, light, full], state) == [("net", "b-light")]  # c-full has 1 left


def test_one_claim_may_take_two_shares_of_one_device() -> None:
    """As the structured allocator does: a shared device is never 'in use' for another result, only its
    capacity limits it."""
    assert allocate(share("4", count=2), [nic("nic-0"), nic("nic-1")], DeviceState()) == [
        ("net", "nic-0"), ("net", "nic-0")]
    assert allocate(share("6", count=2), [nic("nic-0"), nic("nic-1")], DeviceState()) == [
        ("net", "nic-0"), ("net", "nic-1")]


def test_an_exclusive_device_checks_capacity_requests_and_is_taken_whole() -> None:
    exclusive = nic("nic-0", shared=False)
    state = DeviceState()
    assert allocate(share("11"), [exclusive], state) is None  # more than it has
    assert allocate(share("4"), [exclusive], state) == [("net", "nic-0")]
    assert set(state.taken) == {exclusive.id} and state.shares == {} and state.consumed == {}
    assert allocate(share("4"), [exclusive], state) is None


def test_a_device_shared_in_the_cluster_is_not_taken_whole_and_a_taken_one_is_not_shared() -> None:
    shared_since, shared = nic("nic-0", shared=False), nic("nic-1")
    state = DeviceState(shares={shared_since.id: 1})  # shares made while its slice allowed them
    assert allocate(share("1"), [shared_since], state) is None
    state = DeviceState(taken={shared.id: DeviceUse(shared.id)})
    assert allocate(share("1"), [shared], state) is None


def test_gang_copies_share_a_device_and_fall_to_another_when_it_is_full() -> None:
    """The search treats remaining capacity like node resources: three members asking 4 of 10 each get two
    shares of the first device and one of the second."""
    devices, state = [nic("nic-0"), nic("nic-1")], DeviceState()
    copies = allocate_copies([share("4")], 3, devices, anything, state)
    assert [[d.name for _, d in copy[0]] for copy in copies] == [["nic-0"], ["nic-0"], ["nic-1"]]


def test_backtracking_moves_an_earlier_member_to_make_room() -> None:
    """The first member could use either device, the second only the big one and needs all of it: the search
    must move the first member's share off the big device."""
    big, small = nic("a-big", "8"), nic("b-small", "4")

    def matcher(sub: SubRequest, device: Device) -> bool:
        return sub.class_name == "nic" or device.name == "a-big"

    first = share("3")
    second = ClaimSpec((Request("net", (SubRequest("net", "big-only", capacity=(("bandwidth", D(8)),)),)),))
    state = DeviceState()
    got = allocate_pods([[first], [second]], [big, small], matcher, state)
    assert [[d.name for _, d in pod[0]] for pod in got] == [["b-small"], ["a-big"]]
    assert state.consumed == {big.id: {"bandwidth": D(8)}, small.id: {"bandwidth": D(3)}}


def test_a_shared_device_consumes_its_counters_once() -> None:
    counters = ((COUNTERS, (("lanes", D(4)),)),)
    device = nic("nic-0", consumes=counters)
    state = DeviceState(counters={COUNTERS: {"lanes": D(4)}})
    assert allocate(share("3"), [device], state) == [("net", "nic-0")]
    assert allocate(share("3"), [device], state) == [("net", "nic-0")]
    assert state.counters == {COUNTERS: {"lanes": D(0)}}
    whole = Device(id=f"{DRIVER}/node/other", driver=DRIVER, pool="node", name="other", consumes=counters)
    assert not state.fits(whole)


def test_admin_access_on_a_shared_device_needs_the_capacity_left_and_holds_none() -> None:
    """KEP-5018 on a KEP-5075 device, as the structured allocator does it: an admin request is one share, checked
    against what the device's allocations leave (``CmpRequestOverCapacity``), and nothing is held for it."""
    counters = ((COUNTERS, (("lanes", D(4)),)),)
    device = nic("nic-0", consumes=counters)
    state = DeviceState(counters={COUNTERS: {"lanes": D(4)}})
    assert allocate(share("6"), [device], state) == [("net", "nic-0")]

    def admin(gbps: str) -> ClaimSpec:
        return ClaimSpec((Request("net", (SubRequest("net", "nic", admin=True, capacity=(("bandwidth", D(gbps)),)),)),))

    before = (dict(state.shares), {k: dict(v) for k, v in state.consumed.items()}, dict(state.counters[COUNTERS]))
    assert allocate(admin("4"), [device], state) == [("net", "nic-0")]  # exactly what is left
    assert (state.shares, state.consumed, state.counters[COUNTERS]) == before
    assert allocate(admin("5"), [device], state) is None  # more than is left
    assert allocate(share("4"), [device], state) == [("net", "nic-0")]  # the admin share held nothing


@st.composite
def share_problems(draw: st.DrawFn) -> tuple[list[Device], list[ClaimSpec], DeviceState]:
    devices = [nic(f"nic-{i}", str(draw(st.integers(1, 10)))) for i in range(draw(st.integers(1, 3)))]
    state = DeviceState()
    for d in devices:
        if draw(st.booleans()):
            state.take(d, (("bandwidth", D(draw(st.integers(0, int(d.capacity[0].value))))),))
    state.journal.clear()
    claims = [share(str(draw(st.integers(0, 6))), count=draw(st.integers(1, 2)))
              for _ in range(draw(st.integers(1, 3)))]
    return devices, claims, state


@settings(max_examples=200, deadline=None)
@given(share_problems(), st.integers(1, 4))
def test_shares_never_exceed_capacity_and_undo_restores_them(problem: tuple[list[Device], list[ClaimSpec],
                                                                            DeviceState], copies: int) -> None:
    devices, claims, state = problem
    before = ({k: dict(v) for k, v in state.consumed.items()}, dict(state.shares))
    mark = state.mark()
    allocate_copies(claims, copies, devices, anything, state)
    for d in devices:
        assert state.consumed.get(d.id, {}).get("bandwidth", D(0)) <= d.capacity[0].value
    state.undo(mark)
    assert (state.consumed, state.shares) == before
