"""Inventory.with_allocated: the live cache's per-cycle copy shares the device index and the CEL memo."""

from __future__ import annotations

from decimal import Decimal

from scheduler.dra.allocator import SubRequest
from scheduler.dra.inventory import Inventory
from scheduler.framework import NodeTable
from scheduler.model.dra import DeviceUse, ResourceClaim
from tests.unit.solver.builders import node
from tests.unit.solver.test_search_dra import DRIVER, device_class, gpu_slice


def inventory(selector: str = f'device.driver == "{DRIVER}"') -> Inventory:
    return Inventory.build(NodeTable.build([node("n0", cpu="8")]), [gpu_slice("n0", ["H100", "A100"])],
                           [device_class(selector=selector)], ())


def test_with_allocated_shares_devices_and_memo_but_not_allocations() -> None:
    base = inventory()
    sub = SubRequest("gpus", "gpu.example.com")
    assert base.matches(sub, base.devices[f"{DRIVER}/n0/gpu-0"])
    copy = base.with_allocated([DeviceUse(f"{DRIVER}/n0/gpu-1")])
    assert copy.devices is base.devices and copy.on_node(0) is base.on_node(0)
    assert len(base._match) == 1 and copy._match is base._match
    assert copy.allocated == (DeviceUse(f"{DRIVER}/n0/gpu-1"),) and base.allocated == ()
    assert set(copy.state().taken) == {f"{DRIVER}/n0/gpu-1"}


def test_a_memoised_selector_error_is_reported_again_by_every_copy() -> None:
    """The memo answers later copies without evaluating; the error must still name the class each time."""
    base = inventory(selector="device.attributes[")
    sub = SubRequest("gpus", "gpu.example.com")
    for _ in range(2):
        copy = base.with_allocated(())
        errors: dict[str, str] = {}  # each solve brings its own sink
        assert not copy.matches(sub, copy.devices[f"{DRIVER}/n0/gpu-0"], errors)
        (message,) = errors.values()
        assert message.startswith("DeviceClass gpu.example.com: selector 'device.attributes['")


def test_an_allocation_is_read_as_device_uses_and_admin_access_takes_no_device() -> None:
    """``status.allocation.devices.results`` become :class:`DeviceUse` values (adminAccess, shareID,
    consumedCapacity as the API names them); admin access takes nothing, a share is counted with what it
    consumes (its capacity name resolved to the device's spelling) and leaves the device to other shares."""
    claim = ResourceClaim.model_validate({
        "metadata": {"name": "c", "namespace": "ml"},
        "spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu"}}]}},
        "status": {"allocation": {"devices": {"results": [
            {"request": "g", "driver": DRIVER, "pool": "n0", "device": "gpu-0", "adminAccess": True},
            {"request": "g", "driver": DRIVER, "pool": "n0", "device": "gpu-1", "shareID": "a1b2",
             "consumedCapacity": {"memory": "8Gi"}}]}}}})
    admin, shared = claim.allocated_uses
    assert admin == DeviceUse(f"{DRIVER}/n0/gpu-0", admin=True) and not admin.takes and not admin.exclusive
    assert shared == DeviceUse(f"{DRIVER}/n0/gpu-1", (("memory", Decimal(8 * 2**30)),), share_id="a1b2")
    assert shared.takes and not shared.exclusive
    copy = inventory().with_allocated(claim.allocated_uses)
    assert not copy.held_mask().any()
    state = copy.state()
    assert state.taken == {}
    assert state.shares == {f"{DRIVER}/n0/gpu-1": 1}
    assert state.consumed == {f"{DRIVER}/n0/gpu-1": {"memory": Decimal(8 * 2**30)}}
    whole = inventory().with_allocated([DeviceUse(f"{DRIVER}/n0/gpu-0")])
    index = whole.device_index()
    assert [index.ids[i] for i in whole.held_mask().nonzero()[0]] == [f"{DRIVER}/n0/gpu-0"]


def test_missing_class_hint_follows_the_classes_that_exist_now() -> None:
    """A request of a class that does not exist is told the closest existing name; adding a closer class later
    (not the missing one) changes that hint on every path — a device's memoised answer included."""
    inv = Inventory.build(NodeTable.build([node("n0", cpu="8")]), [gpu_slice("n0", ["H100", "A100"])],
                          [device_class("gpu.example.com")], ())
    sub = SubRequest("gpus", "gpu.exampel.org")
    device = inv.devices[f"{DRIVER}/n0/gpu-0"]

    def hints() -> tuple[dict[str, str], dict[str, str]]:
        by_device: dict[str, str] = {}
        assert not inv.matches(sub, device, by_device)
        by_count: dict[str, str] = {}
        inv.usable_counts(sub, by_count)
        return by_device, by_count

    before = {"DeviceClass gpu.exampel.org": "request gpus: DeviceClass gpu.exampel.org not found "
                                             "(did you mean gpu.example.com?)"}
    assert hints() == (before, before)
    inv.set_class(device_class("gpu.exampel.com"))
    after = {"DeviceClass gpu.exampel.org": "request gpus: DeviceClass gpu.exampel.org not found "
                                            "(did you mean gpu.exampel.com?)"}
    assert hints() == (after, after)
    inv.remove_class("gpu.exampel.com")
    assert hints() == (before, before)


def test_a_node_added_to_a_cluster_without_slices_has_its_own_row_of_devices() -> None:
    """With no ResourceSlice yet (a DRA driver not installed), nodes changing still rebuild the per-node views: a
    node added is a row the solver asks about (it raised IndexError, failing every cycle of a gang with claims)."""
    base = Inventory.build(NodeTable.build([node("n0", cpu="8")]), [], [device_class()], ())
    assert base.on_node(0) == []
    base.set_table(NodeTable.build([node("n0", cpu="8"), node("n1", cpu="8")]))
    assert base.on_node(1) == [] and base.with_allocated(()).on_node(1) == []


def test_a_device_with_a_malformed_version_is_left_out_whole_and_its_neighbours_are_used() -> None:
    """A ``version`` that is not Major.Minor.Patch is reported; nothing of that device is kept (before, the device
    was indexed without its CEL view, and the first selector over it raised KeyError)."""
    devices = [{"name": "gpu-0", "attributes": {"driverVersion": {"version": "1.0"}}},
               {"name": "gpu-1", "attributes": {"driverVersion": {"version": "1.0.0"}}}]
    inv = Inventory.build(NodeTable.build([node("n0", cpu="8")]), [gpu_slice("n0", [], devices=devices)],
                          [device_class()], ())
    assert set(inv.devices) == {f"{DRIVER}/n0/gpu-1"}
    assert inv.problems == [f"device {DRIVER}/n0/gpu-0: '1.0': no Major.Minor.Patch elements found"]
    assert [d.name for d in inv.on_node(0) if inv.matches(SubRequest("gpus", "gpu.example.com"), d)] == ["gpu-1"]


def test_a_selector_that_fails_on_one_device_leaves_the_request_no_device() -> None:
    """kube-scheduler's allocator stops at a CEL runtime error rather than skipping the device: the request
    gets no device on any node, however many others match, and the error is reported."""
    devices = [{"name": f"gpu-{i}", "attributes": {"index": {"int": i}}} for i in range(3)]
    inv = Inventory.build(NodeTable.build([node("n0", cpu="8")]), [gpu_slice("n0", [], devices=devices)],
                          [device_class()], ())
    fails_on_gpu_0 = SubRequest("gpus", "gpu.example.com", selectors=(f"10 / device.attributes['{DRIVER}'].index > 0",))
    errors: dict[str, str] = {}
    counts, matching = inv.usable_counts(fails_on_gpu_0, errors)
    assert counts.tolist() == [0] and not matching.any()
    assert list(errors.values()) == [
        f"request gpus: selector \"10 / device.attributes['{DRIVER}'].index > 0\": CEL runtime error: division by "
        "zero in CEL expression"]
    assert not inv.matches(fails_on_gpu_0, inv.devices[f"{DRIVER}/n0/gpu-1"])  # the allocator agrees
    fine = SubRequest("gpus", "gpu.example.com", selectors=(f"device.attributes['{DRIVER}'].index > 0",))
    assert inv.usable_counts(fine, errors)[0].tolist() == [2]
