"""Inventory.with_allocated: the live cache's per-cycle copy shares the device index and the CEL memo."""

from __future__ import annotations

from scheduler.dra.allocator import SubRequest
from scheduler.dra.inventory import Inventory
from scheduler.framework import NodeTable
from tests.unit.solver.builders import node
from tests.unit.solver.test_search_dra import DRIVER, device_class, gpu_slice


def inventory(selector: str = f'device.driver == "{DRIVER}"') -> Inventory:
    return Inventory.build(NodeTable.build([node("n0", cpu="8")]), [gpu_slice("n0", ["H100", "A100"])],
                           [device_class(selector=selector)], ())


def test_with_allocated_shares_devices_and_memo_but_not_allocations() -> None:
    base = inventory()
    sub = SubRequest("gpus", "gpu.example.com")
    assert base.matches(sub, base.devices[f"{DRIVER}/n0/gpu-0"])
    copy = base.with_allocated([f"{DRIVER}/n0/gpu-1"])
    assert copy.devices is base.devices and copy.on_node(0) is base.on_node(0)
    assert len(base._match) == 1 and copy._match is base._match
    assert copy.allocated == {f"{DRIVER}/n0/gpu-1"} and base.allocated == set()
    assert copy.state().taken == {f"{DRIVER}/n0/gpu-1"}


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
