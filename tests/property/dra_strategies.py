"""Hypothesis strategies for DRA snapshots: nodes, ResourceSlices, DeviceClasses, claims and gangs, as raw
API objects (dicts) that go through the loader like a user's YAML.

* node-local GPU pools (driver ``gpu.example.com``, pool = node name): plain GPUs, and partitionable
  GPUs published whole, as halves and as quarters on a shared counter set (``mem: 8``) in a separate
  counters slice of the same pool; sometimes a stale older generation (``ghost-*`` devices) or an
  incomplete pool (``orphan-*`` devices) that must never be used;
* node-set pools (driver ``net.example.com``, one per rack, ``nodeSelector`` on the rack label) with
  ``channel`` devices, and one ``allNodes`` pool with ``link`` devices, each pool's devices sometimes binding
  their allocation to the node chosen (``bindsToNode``, KEP-5007);
* node-local NIC pools (driver ``nic.example.com``) of devices with ``allowMultipleAllocations`` and a
  ``bandwidth`` capacity of 10, sometimes with a request policy (default 2, min 2, step 2), sometimes with
  shares already allocated in the snapshot (KEP-5075);
* claims already allocated in the snapshot (never over a counter set), per-pod claim templates of
  several shapes (exact counts, selectors, ``firstAvailable``, ``matchAttribute``, ``All``, bandwidth shares),
  PodGroup claims (synthesised by ``simulate``) and claims shared by name between pods of different roots (a
  GPU, or a channel or link of the network pools).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

NS = "prop"
GPU = "gpu.example.com"
NET = "net.example.com"
NIC = "nic.example.com"
BANDWIDTH = 10
"""Every NIC's ``bandwidth`` capacity."""
RACKS = ("r0", "r1")
HALVES = ("a", "b")


def kind_is(driver: str, *kinds: str) -> str:
    return " || ".join(f"device.attributes['{driver}'].kind == '{k}'" for k in kinds)


TEMPLATES: dict[str, dict[str, Any]] = {
    "one-gpu": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 1}}]},
    "two-gpus": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 2}}]},
    "whole": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "gpu", "selectors": [{"cel": {"expression": kind_is(GPU, "whole", "plain")}}]}}]},
    "half": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "gpu", "selectors": [{"cel": {"expression": kind_is(GPU, "half")}}]}}]},
    "whole-or-two-halves": {"requests": [{"name": "gpu", "firstAvailable": [
        {"name": "whole", "deviceClassName": "gpu", "selectors": [{"cel": {"expression": kind_is(GPU, "whole")}}]},
        {"name": "halves", "deviceClassName": "gpu", "count": 2,
         "selectors": [{"cel": {"expression": kind_is(GPU, "half")}}]}]}]},
    "same-numa-pair": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 2}}],
                       "constraints": [{"matchAttribute": f"{GPU}/numa"}]},
    "all-quarters": {"requests": [{"name": "q", "exactly": {
        "deviceClassName": "gpu", "allocationMode": "All",
        "selectors": [{"cel": {"expression": kind_is(GPU, "quarter")}}]}}]},
    "gpu-and-link": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 1}},
        {"name": "link", "exactly": {"deviceClassName": "net",
                                     "selectors": [{"cel": {"expression": kind_is(NET, "link")}}]}}]},
    "channel": {"requests": [{"name": "ch", "exactly": {
        "deviceClassName": "net", "selectors": [{"cel": {"expression": kind_is(NET, "channel")}}]}}]},
    "nic-3": {"requests": [{"name": "nic", "exactly": {
        "deviceClassName": "nic", "capacity": {"requests": {"bandwidth": "3"}}}}]},
    "nic-default": {"requests": [{"name": "nic", "exactly": {"deviceClassName": "nic"}}]},
    "two-nic-shares": {"requests": [{"name": "nic", "exactly": {
        "deviceClassName": "nic", "count": 2, "capacity": {"requests": {f"{NIC}/bandwidth": "4"}}}}]},
    "gpu-and-nic": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 1}},
        {"name": "nic", "exactly": {"deviceClassName": "nic", "capacity": {"requests": {"bandwidth": "5"}}}}]},
}
POD_TEMPLATES = tuple(t for t in TEMPLATES if t != "channel")
TEMPLATE_CHOICES = POD_TEMPLATES + tuple(t for t in POD_TEMPLATES if "nic" in t)
"""What a root's pods use: every per-pod template, the NIC shares twice as likely (so shares meet often)."""


@dataclass
class DraCluster:
    """Raw objects, plus what the test needs to know about them."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    preallocated: set[str] = field(default_factory=set)
    """Device ids held by claims allocated in the snapshot."""
    preshared: dict[str, int] = field(default_factory=dict)
    """Shared device id → bandwidth the snapshot's allocated claims consume of it."""


def raw_node(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}", "rack": RACKS[i % 2]}},
            "status": {"allocatable": {"cpu": "32", "memory": "64Gi", "pods": "110"}}}


def raw_slice(name: str, driver: str, pool: str, devices: list[dict[str, Any]], where: dict[str, Any],
           generation: int = 1, count: int = 1, counters: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"driver": driver, "pool": {"name": pool, "generation": generation,
                                                       "resourceSliceCount": count}, **where}
    if devices:
        spec["devices"] = devices
    if counters:
        spec["sharedCounters"] = counters
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}


def raw_device(name: str, kind: str, numa: int, uses: tuple[str, int] | None = None, binds: bool = False
            ) -> dict[str, Any]:
    dev: dict[str, Any] = {"name": name, "attributes": {"kind": {"string": kind}, "numa": {"int": numa}}}
    if binds:
        dev["bindsToNode"] = True
    if uses:
        dev["consumesCounters"] = [{"counterSet": uses[0], "counters": {"mem": {"value": str(uses[1])}}}]
    return dev


def raw_nic(name: str, policy: bool) -> dict[str, Any]:
    capacity: dict[str, Any] = {"value": str(BANDWIDTH)}
    if policy:
        capacity["requestPolicy"] = {"default": "2", "validRange": {"min": "2", "step": "2"}}
    return {"name": name, "allowMultipleAllocations": True, "attributes": {"kind": {"string": "nic"}},
            "capacity": {"bandwidth": capacity}}


def _shared_claim(name: str, node: str, shares: list[tuple[int, int]]) -> dict[str, Any]:
    """A claim allocated in the snapshot with one share per (NIC index, bandwidth) entry."""
    results = [{"request": "r", "driver": NIC, "pool": f"{node}-nics", "device": f"nic-{j}",
                "shareID": f"00000000-0000-4000-8000-{i:012d}", "consumedCapacity": {"bandwidth": str(amount)}}
               for i, (j, amount) in enumerate(shares)]
    selector = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": NS},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "nic",
                                                                        "count": len(shares)}}]}},
            "status": {"allocation": {"devices": {"results": results}, "nodeSelector": selector}}}


def _allocated_claim(name: str, results: list[tuple[str, str, str]], node: str | None,
                     rack: str | None = None) -> dict[str, Any]:
    if node:
        selector = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                            "values": [node]}]}]}
    else:
        selector = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": [rack]}]}]}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": NS},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
            "status": {"allocation": {"devices": {"results": [
                {"request": "r", "driver": d, "pool": p, "device": n} for d, p, n in results]},
                "nodeSelector": selector}}}


@st.composite
def dra_clusters(draw: st.DrawFn, max_nodes: int = 4, max_roots: int = 4) -> DraCluster:
    c = DraCluster()
    add = c.objects.append
    n_nodes = draw(st.integers(1, max_nodes))
    for i in range(n_nodes):
        node = f"n{i}"
        add(raw_node(i))
        devices: list[dict[str, Any]] = []
        counters: list[dict[str, Any]] = []
        held: list[tuple[str, str, str]] = []
        for j in range(draw(st.integers(0, 2))):
            devices.append(raw_device(f"plain-{j}", "plain", j % 2))
            if draw(st.integers(0, 3)) == 0:
                held.append((GPU, node, f"plain-{j}"))
        for k in range(draw(st.integers(0, 2))):
            cs = f"gpu-{k}"
            counters.append({"name": cs, "counters": {"mem": {"value": "8"}}})
            devices.append(raw_device(f"gpu-{k}", "whole", k % 2, (cs, 8)))
            devices += [raw_device(f"gpu-{k}-half-{h}", "half", k % 2, (cs, 4)) for h in HALVES]
            devices += [raw_device(f"gpu-{k}-quarter-{q}", "quarter", k % 2, (cs, 2)) for q in range(4)]
            taken = draw(st.sampled_from([[], [], [f"gpu-{k}"], [f"gpu-{k}-half-a"],
                                          [f"gpu-{k}-half-b", f"gpu-{k}-quarter-0"]]))
            held += [(GPU, node, d) for d in taken]
        local = {"nodeName": node}
        if counters:
            add(raw_slice(f"{node}-gpus", GPU, node, devices, local, count=2))
            add(raw_slice(f"{node}-counters", GPU, node, [], local, count=2, counters=counters))
        elif devices:
            add(raw_slice(f"{node}-gpus", GPU, node, devices, local))
        if devices and draw(st.integers(0, 4)) == 0:  # a stale generation of the same pool: never used
            add(raw_slice(f"{node}-old", GPU, node, [raw_device("ghost-0", "whole", 0)], local, generation=0))
        if draw(st.integers(0, 4)) == 0:  # a pool with a slice still missing: never used
            add(raw_slice(f"{node}-partial", GPU, f"{node}-extra", [raw_device("orphan-0", "whole", 0)], local,
                          count=2))
        if held:
            add(_allocated_claim(f"held-{node}", held, node))
            c.preallocated |= {"/".join(h) for h in held}
        nics = draw(st.sampled_from([0, 1, 2, 2]))
        if nics:
            policy = draw(st.booleans())
            add(raw_slice(f"{node}-nics", NIC, f"{node}-nics", [raw_nic(f"nic-{j}", policy) for j in range(nics)],
                          local))
            shares = [(j, amount) for j in range(nics)
                      for amount in draw(st.lists(st.sampled_from([2, 4, 6]), max_size=2))]
            used: dict[str, int] = {}
            kept = []
            for j, amount in shares:  # the snapshot's shares never exceed a device's bandwidth either
                dev = f"{NIC}/{node}-nics/nic-{j}"
                if used.get(dev, 0) + amount <= BANDWIDTH:
                    used[dev] = used.get(dev, 0) + amount
                    kept.append((j, amount))
            if kept:
                add(_shared_claim(f"shares-{node}", node, kept))
                c.preshared.update(used)
    for rack in RACKS:
        channels = draw(st.integers(0, 3))
        if channels:
            selector = {"nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "rack", "operator": "In", "values": [rack]}]}]}}
            binds = draw(st.booleans())
            add(raw_slice(f"rack-{rack}", NET, f"rack-{rack}",
                       [raw_device(f"channel-{j}", "channel", 0, binds=binds) for j in range(channels)], selector))
            if draw(st.booleans()):
                add(_allocated_claim(f"held-{rack}", [(NET, f"rack-{rack}", "channel-0")], None, rack))
                c.preallocated.add(f"{NET}/rack-{rack}/channel-0")
    links = draw(st.integers(0, 3))
    if links:
        binds = draw(st.booleans())
        add(raw_slice("global-links", NET, "global", [raw_device(f"link-{j}", "link", 0, binds=binds)
                                                   for j in range(links)], {"allNodes": True}))
    for name, driver in (("gpu", GPU), ("net", NET), ("nic", NIC)):
        add({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
             "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{driver}'"}}]}})
    for name, devices_spec in TEMPLATES.items():
        add({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
             "metadata": {"name": name, "namespace": NS}, "spec": {"spec": {"devices": devices_spec}}})
    shared = draw(st.integers(0, 2))
    for s in range(shared):
        cls = draw(st.sampled_from(["gpu", "net"]))
        add({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": f"shared-{s}",
                                                                                      "namespace": NS},
             "spec": {"devices": {"requests": [{"name": "dev", "exactly": {"deviceClassName": cls}}]}}})
    for r in range(draw(st.integers(1, max_roots))):
        group = f"g{r}"
        n_pods = draw(st.integers(1, 4))
        spec: dict[str, Any] = {"schedulingPolicy": ({"gang": {"minCount": draw(st.integers(1, n_pods))}}
                                                     if draw(st.booleans()) else {"basic": {}})}
        if draw(st.booleans()):
            spec["schedulingConstraints"] = {"topology": [{"key": "rack"}]}
        group_claim = draw(st.integers(0, 2)) == 0
        if group_claim:
            spec["resourceClaims"] = [{"name": "fabric", "resourceClaimTemplateName": "channel"}]
        add({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
             "metadata": {"name": group, "namespace": NS, "creationTimestamp": f"2026-01-01T00:00:{r:02d}Z"},
             "spec": spec})
        template = draw(st.sampled_from(TEMPLATE_CHOICES))
        by_name = draw(st.sampled_from([None, *(f"shared-{s}" for s in range(shared))]))
        for p in range(n_pods):
            entries: list[dict[str, Any]] = [{"name": "dev", "resourceClaimTemplateName": template}]
            if group_claim:
                entries.append({"name": "fabric", "resourceClaimTemplateName": "channel"})
            if by_name:
                entries.append({"name": "shared", "resourceClaimName": by_name})
            add({"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": f"{group}-p{p}", "namespace": NS, "uid": f"uid-{group}-p{p}",
                              "creationTimestamp": f"2026-01-01T00:00:{r:02d}Z"},
                 "spec": {"schedulerName": "gang-scheduler", "schedulingGroup": {"podGroupName": group},
                          "priority": draw(st.integers(0, 2)), "resourceClaims": entries,
                          "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
                 "status": {"phase": "Pending"}})
    return c
