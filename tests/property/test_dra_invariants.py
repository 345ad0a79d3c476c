"""DRA invariants over random slices, claims and gangs, across every plan of a ``simulate`` run.

1. No device is allocated to two claims: not by two plans, not twice by one plan, and never one that a
   claim in the snapshot already holds; no claim is allocated twice (a claim shared by name or a
   PodGroup claim is allocated once, later users are pinned to it). A device with
   ``allowMultipleAllocations`` is the exception (KEP-5075): it may be given many times, but the sum its
   allocations consume — the snapshot's and every plan's — never exceeds its capacity, each share has its own
   ``shareID``, and it is never given whole.
2. No shared counter set is over-consumed (partitionable GPUs: whole, halves and quarters of one GPU).
3. Every allocated device is usable where its pods run: a per-pod claim's devices are reachable from
   the pod's node, a shared claim's from every node of the pods that use it (in this plan or later
   ones), and only devices of the newest complete pool generation are used.
4. A claim with a device that binds to a node (``bindsToNode``, KEP-5007) is pinned to one node, its
   ``nodeSelector`` naming it, and every pod using the claim (in this plan or later ones) runs there.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

from hypothesis import HealthCheck, given, settings

from scheduler.dra.inventory import Inventory
from scheduler.framework import SolverConfig
from scheduler.offline.loader import Objects
from scheduler.offline.simulate import Simulation, simulate
from tests.property.dra_strategies import BANDWIDTH, DraCluster, dra_clusters

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def run(c: DraCluster) -> Simulation:
    objects = Objects()
    for i, raw in enumerate(c.objects):
        objects.add("prop.yaml", raw, f"document {i + 1}")
    assert objects.problems == []
    return simulate(objects, "gang-scheduler", SolverConfig())


def inventory_of(sim: Simulation) -> Inventory:
    assert sim.initial is not None and sim.initial.dra is not None
    return sim.initial.dra.inventory


@SETTINGS
@given(dra_clusters())
def test_no_device_is_allocated_to_two_claims(c: DraCluster) -> None:
    sim = run(c)
    inventory = inventory_of(sim)
    given_ = Counter(d for a in sim.allocations for d in a.allocation.device_ids)
    assert [d for d, n in given_.items() if n > 1 and not inventory.devices[d].shared] == []
    assert set(given_).isdisjoint(c.preallocated)
    claims = Counter(a.allocation.claim for a in sim.allocations)
    assert [k for k, n in claims.items() if n > 1] == []


@SETTINGS
@given(dra_clusters())
def test_no_counter_set_is_over_consumed(c: DraCluster) -> None:
    sim = run(c)
    inventory = inventory_of(sim)
    used: dict[tuple[str, str], Decimal] = {}
    for dev_id in c.preallocated | {d for a in sim.allocations for d in a.allocation.device_ids}:
        for set_id, amounts in inventory.devices[dev_id].consumes:
            for counter, amount in amounts:
                used[(set_id, counter)] = used.get((set_id, counter), Decimal(0)) + amount
    for (set_id, counter), amount in used.items():
        assert amount <= inventory.counters[set_id][counter], f"{set_id}/{counter}: {amount} used"


@SETTINGS
@given(dra_clusters())
def test_allocated_devices_are_reachable_from_their_pods_and_current(c: DraCluster) -> None:
    sim = run(c)
    inventory = inventory_of(sim)
    row = inventory.table.index
    node_of = {p.pod.key: p.node for p in sim.pods}
    devices_of = {a.allocation.claim: a.allocation.device_ids for a in sim.allocations}
    for a in sim.allocations:
        for dev_id in a.allocation.device_ids:
            assert "ghost" not in dev_id and "orphan" not in dev_id, dev_id
            assert all(inventory.reach[dev_id][row[node]] for _, node in a.pods), (a, dev_id)
        if a.allocation.node is not None:
            assert {node for _, node in a.pods} == {a.allocation.node}
    for p in sim.pods:  # pods placed by a later plan, using a claim shared by name that an earlier one allocated
        node = node_of[p.pod.key]
        if node is None:
            continue
        for entry in p.pod.spec.resource_claims:
            claim = f"{p.pod.metadata.namespace}/{entry.resource_claim_name}"
            for dev_id in devices_of.get(claim, ()) if entry.resource_claim_name else ():
                assert inventory.reach[dev_id][row[node]], (p.pod.key, claim, dev_id)


@SETTINGS
@given(dra_clusters())
def test_a_shared_device_is_never_given_past_its_capacity(c: DraCluster) -> None:
    """KEP-5075: per device with ``allowMultipleAllocations``, what the snapshot's shares and every plan's consume
    stays within its ``bandwidth``; every allocation of it is a share (a ``shareID`` of its own, the consumed
    capacity recorded), none takes it whole."""
    sim = run(c)
    inventory = inventory_of(sim)
    consumed: dict[str, Decimal] = {d: Decimal(n) for d, n in c.preshared.items()}
    ids: list[str] = []
    for a in sim.allocations:
        for use in a.allocation.device_uses:
            if not inventory.devices[use.device].shared:
                assert use.share_id is None and not use.consumed
                continue
            assert use.share_id is not None and use.exclusive is False
            ids.append(f"{use.device}/{use.share_id}")
            assert [name for name, _ in use.consumed] == ["bandwidth"]
            consumed[use.device] = consumed.get(use.device, Decimal(0)) + dict(use.consumed)["bandwidth"]
    assert len(ids) == len(set(ids))
    assert {d: n for d, n in consumed.items() if n > BANDWIDTH} == {}


@SETTINGS
@given(dra_clusters())
def test_a_claim_whose_device_binds_to_a_node_has_all_its_pods_on_that_node(c: DraCluster) -> None:
    sim = run(c)
    inventory = inventory_of(sim)
    bound_to = {}
    for a in sim.allocations:
        if any(inventory.devices[d].binds_to_node for d in a.allocation.device_ids):
            node = a.allocation.node
            assert node is not None, a
            assert a.allocation.node_selector == {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}
            bound_to[a.allocation.claim] = node
    for p in sim.pods:
        if p.node is None:
            continue
        users = {f"{p.pod.metadata.namespace}/{e.resource_claim_name}" for e in p.pod.spec.resource_claims
                 if e.resource_claim_name}
        users |= {a.allocation.claim for a in sim.allocations if (p.pod.metadata.name, p.node) in a.pods}
        for claim in users & bound_to.keys():
            assert p.node == bound_to[claim], (p.pod.key, claim)
