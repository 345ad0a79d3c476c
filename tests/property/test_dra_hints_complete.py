"""Queueing hints never miss with DRA: a change after which a parked root is placeable fires a hint of a plugin that
rejected it.

``tests/property/test_hints_complete.py`` checks this on clusters without devices. Here the clusters are
``tests/property/dra_strategies.py``'s (node-local GPU pools with partitions, node-set and all-node network pools,
NIC shares, claims allocated in the snapshot, per-pod and PodGroup claim templates, claims shared by name),
loaded as ``simulate`` loads them (claims from templates synthesised). Every root is decided once in queue order,
plans assumed as the driver assumes them; then one change is made — a claim allocated in the snapshot deleted or
deallocated, a ResourceSlice added or deleted, a node added or relabelled, a DeviceClass widened — and every parked
root is decided again. Each one now placed must have been moved by the events since it was parked (the change's and
those of the plans assumed after it). A hint may fire where nothing helped; it must not stay silent where something
did, or the root waits for ``--unschedulable-retry-s``.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.cache.cluster import ClusterCache
from scheduler.offline.loader import Objects
from tests.property.dra_strategies import GPU, NIC, DraCluster, dra_clusters, raw_device, raw_nic, raw_node, raw_slice
from tests.property.test_hints_complete import check

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
OURS = "gang-scheduler"


def load(c: DraCluster) -> ClusterCache:
    objects = Objects()
    for i, raw in enumerate(c.objects):
        objects.add("prop.yaml", raw, f"document {i + 1}")
    assert objects.problems == []
    cache = ClusterCache(OURS, dra=True, synthesize_claims=True)
    for kind, items in objects.by_kind().items():
        cache.load(kind, items)
    return cache


@st.composite
def changes(draw: st.DrawFn, c: DraCluster) -> tuple[str, str, dict[str, Any]]:
    """One change: ``(kind, watch event type, the raw object after, or before for a delete)``."""
    of_kind = {kind: [o for o in c.objects if o["kind"] == kind] for kind in ("Node", "ResourceSlice", "DeviceClass")}
    held = [o for o in c.objects if o["kind"] == "ResourceClaim" and "status" in o]
    pods = [o for o in c.objects if o["kind"] == "Pod"]
    nodes = of_kind["Node"]
    what = draw(st.sampled_from(["slice-add", "node-add", "relabel", "class-widen", "pod-gone",
                                 *(["slice-gone"] if of_kind["ResourceSlice"] else []),
                                 *(["claim-gone", "claim-deallocated"] if held else [])]))
    if what == "pod-gone":  # a pod of ours deleted: placed by a plan, it gives back its room and its claims' devices
        return "Pod", "DELETED", copy.deepcopy(draw(st.sampled_from(pods)))
    if what.startswith("claim-"):
        claim = copy.deepcopy(draw(st.sampled_from(held)))
        if what == "claim-gone":
            return "ResourceClaim", "DELETED", claim
        del claim["status"]
        return "ResourceClaim", "MODIFIED", claim
    if what == "slice-gone":
        return "ResourceSlice", "DELETED", copy.deepcopy(draw(st.sampled_from(of_kind["ResourceSlice"])))
    if what == "slice-add":
        node = draw(st.sampled_from(nodes))["metadata"]["name"]
        if draw(st.booleans()):
            devices = [raw_device(f"extra-{j}", "plain", j % 2) for j in range(draw(st.integers(1, 2)))]
            return "ResourceSlice", "ADDED", raw_slice(f"{node}-extra-gpus", GPU, f"{node}-extra", devices,
                                                   {"nodeName": node})
        return "ResourceSlice", "ADDED", raw_slice(f"{node}-extra-nics", NIC, f"{node}-extra-nics",
                                               [raw_nic("nic-x", draw(st.booleans()))], {"nodeName": node})
    if what == "class-widen":
        cls = copy.deepcopy(draw(st.sampled_from(of_kind["DeviceClass"])))
        cls["spec"]["selectors"] = [{"cel": {"expression": "true"}}]
        return "DeviceClass", "MODIFIED", cls
    if what == "node-add":
        raw = raw_node(len(nodes))
        raw["metadata"]["labels"]["rack"] = draw(st.sampled_from(["r0", "r1"]))
        return "Node", "ADDED", raw
    raw = copy.deepcopy(draw(st.sampled_from(nodes)))
    labels = raw["metadata"]["labels"]
    labels["rack"] = "r1" if labels["rack"] == "r0" else "r0"
    return "Node", "MODIFIED", raw


@SETTINGS
@given(data=st.data(), c=dra_clusters(max_nodes=3, max_roots=4))
def test_a_device_change_that_makes_a_parked_root_placeable_moves_it(data: st.DataObject, c: DraCluster) -> None:
    check(data, load(c), changes(c))
