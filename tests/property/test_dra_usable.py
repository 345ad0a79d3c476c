"""DynamicResources' node mask per sub-request, counted with device masks, against its definition.

The plugin's PreFilter keeps only nodes reaching at least ``count`` matching devices that are not held
(allocated in the snapshot or assumed by earlier plans); ``All`` needs one matching device, taken or
not; a device with ``allowMultipleAllocations`` counts as many devices as one claim may hold (it may serve
each of its results with a share; KEP-5075), and only an exclusive use holds it. It counts held devices with
masks over the inventory's device index (:attr:`DraView.held`, kept up
to date by ``with_allocated``). Here, on random inventories (node-local pools with shared counters,
rack node-set pools, an all-nodes pool, stale and incomplete pools, preallocated claims) and random
chains of assumed devices, the mask is compared with the count made device by device from the
definition, and the incrementally kept ``held`` with the one built from scratch.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.dra.allocator import MAX_DEVICES_PER_CLAIM, SubRequest
from scheduler.dra.device_snapshot import DraView
from scheduler.framework import SolverConfig
from scheduler.model.dra import DeviceUse, taken_devices
from scheduler.offline.loader import Objects
from scheduler.offline.simulate import simulate
from scheduler.solver.plugins.dynamic_resources import DynamicResources, DynamicResourcesState
from tests.property.dra_strategies import DraCluster, dra_clusters

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def initial_view(c: DraCluster) -> DraView:
    objects = Objects()
    for i, raw in enumerate(c.objects):
        objects.add("prop.yaml", raw, f"document {i + 1}")
    sim = simulate(objects, "gang-scheduler", SolverConfig())
    assert sim.initial is not None and isinstance(sim.initial.dra, DraView)
    return sim.initial.dra


def sub_requests(view: DraView) -> list[SubRequest]:
    """Every sub-request of the pending pods' claims (per-pod and shared), once each."""
    subs = {sub for claims in view.pods.values() for needed in (*claims.allocate, *claims.shared)
            for request in needed.spec.requests for sub in request.options}
    return sorted(subs, key=repr)


def by_definition(view: DraView, sub: SubRequest) -> np.ndarray:
    """Per node: enough matching devices it reaches, outside the allocated and assumed ones (``All``: one
    matching device it reaches), counted device by device; a shared device counts
    :data:`~scheduler.dra.allocator.MAX_DEVICES_PER_CLAIM` times."""
    inventory = view.inventory
    held = taken_devices((*inventory.allocated, *view.assumed))
    counts = np.zeros(len(inventory.table), dtype=np.int64)
    for dev_id, device in inventory.devices.items():
        if inventory.matches(sub, device) and (sub.all or dev_id not in held):
            counts += inventory.reach[dev_id] * (MAX_DEVICES_PER_CLAIM if device.shared else 1)
    return counts >= (1 if sub.all else sub.count)


@SETTINGS
@given(dra_clusters(), st.data())
def test_usable_nodes_equal_the_count_by_definition(c: DraCluster, data: st.DataObject) -> None:
    view = initial_view(c)
    ids = sorted(view.inventory.devices)
    for _ in range(data.draw(st.integers(0, 3))):  # plans assumed one after another, ids unknown included
        view = view.with_allocated(DeviceUse(d) for d in data.draw(st.lists(
            st.sampled_from([*ids, "gone.example.com/p/d"]), max_size=4)))
        assert view.held.tolist() == view.inventory.held_mask(view.assumed).tolist()
    cycle = DynamicResourcesState(view, view.inventory.state(view.assumed))
    for sub in sub_requests(view):
        assert DynamicResources._usable(cycle, sub).tolist() == by_definition(view, sub).tolist(), sub
