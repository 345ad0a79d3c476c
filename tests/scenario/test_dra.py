"""DRA in ``simulate`` on the shared example snapshots (copied into tests/data): devices chosen in the
same all-or-nothing plan as the nodes, group claims allocated once, problems reported, JSON ``allocations``.

``clusters/small-gpu-cluster.yaml`` is DRA-only: its H100s are ResourceSlice devices of driver
``gpu.nvidia.com`` (pool = node name), node allocatable has no ``nvidia.com/gpu``, and the DeviceClass
``gpu.nvidia.com`` serves that extended resource. Its header states the intended outcome: (a)
``llm-pretrain`` (8 × ``nvidia.com/gpu: 2``) in us-east-1a, (b) ``train-llm`` workers (claim template
``gpu-x2``) in rack-b1 of us-east-1b, the driver in rack-b1 or on gpu-b2-1.
"""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from scheduler.framework import SolverConfig
from scheduler.model.dra import taken_devices
from scheduler.offline.loader import load
from scheduler.offline.report import render_text, to_json
from scheduler.offline.simulate import AllocationOutcome, Simulation, simulate
from tests.scenario.conftest import DATA
from tests.unit.dra.example_devices import OVER_COST_LIMIT

CLUSTER = DATA / "clusters" / "small-gpu-cluster.yaml"
SHARED_CLAIMS = DATA / "workloads" / "c-podgroup-shared-claims.yaml"
PRETRAIN = "llm-pretrain-6f7c9-workers-2rl42"
NOT_HELPFUL_8 = ("pod group preemption: Preemption is not helpful for scheduling (devices are the limit, and "
                 "preemption frees node resources, not the victims' devices: no fit even with all 8 lower-priority "
                 "pods evicted: monitoring/prometheus-k8s-0, inference/llama3-70b-7c9d4b6f5-k2x8p, "
                 "research/finetune-lora-7-5rq2w and 5 more)")
"""The PostFilter's verdict on a probe gang short of devices in the small GPU cluster (8 running pods below it)."""
ZONE_A = {"gpu-a1-1", "gpu-a1-2", "gpu-a2-1", "gpu-a2-2", "cpu-m5-1"}
RACKS = {"rack-a1": {"gpu-a1-1", "gpu-a1-2"}, "rack-a2": {"gpu-a2-1", "gpu-a2-2"},
         "rack-b1": {"gpu-b1-1", "gpu-b1-2"}, "rack-b2": {"gpu-b2-1", "gpu-b2-2"}}
ALLOCATED_IN_SNAPSHOT = {  # from the running pods' allocated claims (header table)
    "gpu-a1-1": 8, "gpu-a1-2": 4, "gpu-a2-1": 2, "gpu-b1-1": 4, "gpu-b2-1": 8}


def run(*paths: Path) -> Simulation:
    return simulate(load(paths), "gang-scheduler", SolverConfig())


def status(sim: Simulation) -> dict[str, str]:
    return {g.key.name: g.status for g in sim.groups}


def placements(sim: Simulation, group: str) -> dict[str, str]:
    return next(g.placements for g in sim.groups if g.key.name == group)


def of_root(sim: Simulation, root: str) -> list[AllocationOutcome]:
    return [a for a in sim.allocations if a.root.name == root]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def without(tmp_path: Path, source: Path, prefix: str) -> Path:
    """``source`` without the objects whose name starts with ``prefix`` (one gang taken out)."""
    docs = [d for d in yaml.safe_load_all(source.read_text()) if d and not d["metadata"]["name"].startswith(prefix)]
    path = tmp_path / f"without-{prefix}.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


def claim_template_gang(tmp_path: Path, name: str, n: int, template: str) -> Path:
    """A PodGroup ``name`` of ``n`` pods (``<name>-<i>``, tolerating the GPU taint), each with one claim
    ``net`` made from ResourceClaimTemplate ``template``."""
    text = f"""
    apiVersion: scheduling.k8s.io/v1beta1
    kind: PodGroup
    metadata: {{name: {name}, namespace: default}}
    spec: {{schedulingPolicy: {{gang: {{minCount: {n}}}}}}}
    """
    for i in range(n):
        text += f"""
    ---
    apiVersion: v1
    kind: Pod
    metadata: {{name: {name}-{i}, namespace: default}}
    spec:
      schedulerName: gang-scheduler
      schedulingGroup: {{podGroupName: {name}}}
      resourceClaims: [{{name: net, resourceClaimTemplateName: {template}}}]
      tolerations: [{{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}}]
      containers: [{{name: c, resources: {{requests: {{cpu: "1"}}, claims: [{{name: net}}]}}}}]
    """
    return write(tmp_path, f"{name}-{n}.yaml", text)


def assert_no_device_twice(sim: Simulation) -> None:
    """No device given to two claims in the run, nor one the snapshot's claims already hold."""
    given = Counter(d for a in sim.allocations for d in a.allocation.device_ids)
    assert not [d for d, n in given.items() if n > 1]
    assert sim.initial is not None and sim.initial.dra is not None
    assert not set(given) & taken_devices(sim.initial.dra.inventory.allocated)


def test_small_gpu_cluster_places_both_gangs_where_its_header_says_with_their_devices() -> None:
    sim = run(CLUSTER)
    assert status(sim) == {PRETRAIN: "Scheduled", "train-llm-workload-root": "Scheduled",
                           "train-llm-driver": "Scheduled", "train-llm-workers": "Scheduled"}
    # (a) nvidia.com/gpu: 2 per pod, served by DeviceClass gpu.nvidia.com: one synthesised claim per pod
    pretrain = placements(sim, PRETRAIN)
    assert len(pretrain) == 8 and set(pretrain.values()) <= ZONE_A
    a = of_root(sim, PRETRAIN)
    assert len(a) == 8 and all(x.synthesized and x.allocation.synthetic for x in a)
    for x in a:
        ((pod, node),) = x.pods
        assert pretrain[pod] == node == x.allocation.node
        assert x.allocation.claim == f"ml-team/{pod}-extended-resources"
        assert x.allocation.reserved_for[0][:2] == ("Pod", pod)
        # j = 2: nvidia.com/gpu after cpu and memory among the container's requests (createRequestsAndMappings)
        assert [(r, d, p) for r, d, p, _ in x.allocation.results] == [("container-0-request-2", "gpu.nvidia.com",
                                                                       node)] * 2
    # (b) workers: the existing template-generated claims (gpu-x2) in rack-b1; driver needs no device
    workers = placements(sim, "train-llm-workers")
    assert len(workers) == 4 and set(workers.values()) <= RACKS["rack-b1"]
    assert set(placements(sim, "train-llm-driver").values()) <= RACKS["rack-b1"] | {"gpu-b2-1"}
    b = of_root(sim, "train-llm-workload-root")
    assert sorted(x.allocation.claim.split("-gpus-")[0] for x in b) == sorted(f"ml-team/{p}" for p in workers)
    assert not any(x.synthesized for x in b)
    assert all(len(x.allocation.results) == 2 and x.allocation.node == workers[x.pods[0][0]] for x in b)
    on_b1_1 = sorted(d for x in b for _, _, pool, d in x.allocation.results if pool == "gpu-b1-1")
    assert set(on_b1_1) <= {"gpu-4", "gpu-5", "gpu-6", "gpu-7"}  # gpu-0..3 belong to batch/eval-suite-4
    assert_no_device_twice(sim)
    # free GPUs afterwards never negative: allocated ≤ 8 per node
    per_node = Counter(x.allocation.node for x in sim.allocations)
    assert all(2 * n + ALLOCATED_IN_SNAPSHOT.get(node, 0) <= 8 for node, n in per_node.items() if node)


def test_small_gpu_cluster_text_report_shows_devices_per_pod_and_per_node() -> None:
    text = render_text(run(CLUSTER)).splitlines()
    assert not any(line.startswith("warning:") for line in text)
    workers = [line.strip() for line in text if line.strip().startswith(("devices: train-llm-workers",
                                                                          "train-llm-workers-0-"))]
    assert len(workers) == 4
    assert workers[0].startswith("devices: train-llm-workers-0-0-ggp8c -> gpu-b1-")
    assert all(line.endswith(" (gpu.nvidia.com)") for line in workers)
    start = text.index("Devices (allocated/published after placement; +N = added by this run; "
                       "free = still allocatable):")
    rows = {line.split()[0]: line.split() for line in text[start + 1:]}
    assert rows["gpu-a1-1"][1:] == ["gpu.nvidia.com", "8/8", "free", "0"]  # all in use before the run
    assert rows["gpu-b2-2"][1:] == ["gpu.nvidia.com", "0/8", "free", "8"]  # cordoned: nothing placed
    assert rows["gpu-b1-1"][1:] == ["gpu.nvidia.com", "8/8", "+4", "free", "0"]
    assert rows["rack-b1"][1:] == ["(node", "set)", "interconnect.example.com", "0/4", "free", "4"]


def test_shared_claim_gang_does_not_fit_beside_both_gangs_and_takes_nothing() -> None:
    """With (a) and (b) placed, no rack has 8 free GPUs (rack-a2 keeps 2, rack-b1 4): allreduce-bench
    (4 × 2 GPUs + one rack channel) is Unschedulable whole — no pod, no GPU, no channel."""
    sim = run(CLUSTER, SHARED_CLAIMS)
    assert status(sim)["allreduce-bench"] == "Unschedulable"
    assert placements(sim, "allreduce-bench") == {} and of_root(sim, "allreduce-bench") == []
    reason = next(g.reason for g in sim.groups if g.key.name == "allreduce-bench")
    assert reason == ("gang allreduce-bench: 2/4 placeable (minCount 4) in topology.example.com/rack rack-b1 "
                      "(best of 4 domains); 0/2 nodes are available: 2 cannot allocate all claims. request gpu: 2 "
                      "wanted; 64 device(s) of class gpu.nvidia.com in the cluster, at most 0 unallocated on any one "
                      "of the 2 nodes. pod group preemption: Preemption is not helpful for scheduling (devices are "
                      "the limit, and preemption frees node resources, not the victims' devices: no fit even with "
                      "all 3 lower-priority pods evicted: research/finetune-lora-7-5rq2w, research/nb-research-0, "
                      "batch/eval-suite-4-0-xk5mb)")
    assert status(sim)[PRETRAIN] == status(sim)["train-llm-workload-root"] == "Scheduled"
    assert_no_device_twice(sim)


def test_group_claim_is_allocated_once_reserved_for_the_podgroup_and_pins_the_gang_to_its_rack(
        tmp_path: Path) -> None:
    sim = run(without(tmp_path, CLUSTER, "llm-pretrain"), SHARED_CLAIMS)
    assert status(sim)["allreduce-bench"] == "Scheduled"
    bench = placements(sim, "allreduce-bench")
    allocations = of_root(sim, "allreduce-bench")
    (fabric,) = [x for x in allocations if x.allocation.claim == "ml-team/allreduce-bench-fabric-hmzwx"]
    assert fabric.allocation.reserved_for == (("PodGroup", "allreduce-bench", ""),)
    assert fabric.allocation.node is None and not fabric.synthesized
    ((_, driver, rack, channel),) = fabric.allocation.results
    assert driver == "interconnect.example.com" and channel.startswith("channel-")
    assert set(bench.values()) <= RACKS[rack]  # every member where the channel is reachable
    assert fabric.allocation.node_selector == {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "topology.example.com/rack", "operator": "In", "values": [rack]}]}]}
    assert sorted(p for p, _ in fabric.pods) == sorted(bench)
    gpus = [x for x in allocations if x is not fabric]
    assert sorted(x.pods[0][0] for x in gpus) == sorted(bench) and all(len(x.allocation.results) == 2 for x in gpus)
    assert_no_device_twice(sim)
    text = render_text(sim)
    assert (f"claim allreduce-bench-fabric-hmzwx (reserved for the PodGroup) -> {rack}/{channel} "
            "(interconnect.example.com)") in text


def test_absent_template_generated_claims_are_synthesised_for_pods_and_for_the_podgroup(tmp_path: Path) -> None:
    """A hand-written snapshot: no generated ResourceClaims, no resourceClaimStatuses. simulate makes them
    from the templates as the resourceclaim controller would: one per pod, one for the PodGroup."""
    docs = []
    for d in yaml.safe_load_all(SHARED_CLAIMS.read_text()):
        if d["kind"] == "ResourceClaim":
            continue
        d.pop("status", None)
        docs.append(d)
    bare = tmp_path / "bare.yaml"
    bare.write_text(yaml.safe_dump_all(docs))
    sim = run(without(tmp_path, CLUSTER, "llm-pretrain"), bare)
    assert status(sim)["allreduce-bench"] == "Scheduled"
    claims = sorted(x.allocation.claim for x in of_root(sim, "allreduce-bench"))
    assert claims == ["ml-team/allreduce-bench-0-gpus", "ml-team/allreduce-bench-1-gpus",
                      "ml-team/allreduce-bench-2-gpus", "ml-team/allreduce-bench-3-gpus",
                      "ml-team/allreduce-bench-fabric"]
    assert all(x.synthesized for x in of_root(sim, "allreduce-bench"))
    assert sim.synthesized >= set(claims)
    assert "note: 5 ResourceClaim(s) not in the snapshot made from their ResourceClaimTemplate, as the " \
           "resourceclaim controller would" in render_text(sim).splitlines()


PROBE_GANG = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: probe-x1, namespace: ml-team}}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: {device_class}
          selectors: [{{cel: {{expression: "{selector}"}}}}]
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {{name: probe, namespace: ml-team, creationTimestamp: "2026-11-29T09:00:00Z"}}
spec:
  schedulingPolicy: {{gang: {{minCount: 2}}}}
  priority: 300000
""" + "".join(f"""
---
apiVersion: v1
kind: Pod
metadata: {{{{name: probe-{i}, namespace: ml-team, creationTimestamp: "2026-11-29T09:00:00Z"}}}}
spec:
  schedulerName: gang-scheduler
  schedulingGroup: {{{{podGroupName: probe}}}}
  resourceClaims: [{{{{name: gpu, resourceClaimTemplateName: probe-x1}}}}]
  tolerations: [{{{{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}}}}]
  containers: [{{{{name: main, resources: {{{{requests: {{{{cpu: "1"}}}}, claims: [{{{{name: gpu}}}}]}}}}}}}}]
""" for i in range(2))
BROKEN_CLASS = """
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: broken.nvidia.com}
spec:
  selectors:
  - cel: {expression: "device.attributes['gpu.nvidia.com'].productName.startsWith("}
"""


def test_gang_whose_cel_selector_matches_no_device_is_unschedulable_whole_and_the_rest_fits(
        tmp_path: Path) -> None:
    """Tried first (priority 300000): no H100 is a B200, so neither member is placed; nothing is taken."""
    extra = PROBE_GANG.format(device_class="gpu.nvidia.com",
                              selector="device.attributes['gpu.nvidia.com'].productName == 'NVIDIA B200'")
    sim = run(CLUSTER, write(tmp_path, "probe.yaml", extra))
    assert status(sim)["probe"] == "Unschedulable" and placements(sim, "probe") == {}
    assert of_root(sim, "probe") == []
    assert next(g.reason for g in sim.groups if g.key.name == "probe") == (
        "gang probe: 0/2 placeable (minCount 2); 0/9 nodes are available: 1 node(s) were unschedulable, "
        "8 cannot allocate all claims. request gpu: 1 wanted; 64 device(s) of class gpu.nvidia.com in the cluster, "
        f"none matching its selectors. {NOT_HELPFUL_8}")
    assert status(sim)[PRETRAIN] == status(sim)["train-llm-workload-root"] == "Scheduled"
    assert sim.dra_problems == []


def test_bad_cel_in_a_device_class_makes_that_claim_unschedulable_and_the_rest_is_scheduled(tmp_path: Path) -> None:
    extra = PROBE_GANG.format(device_class="broken.nvidia.com", selector="true") + BROKEN_CLASS
    sim = run(CLUSTER, write(tmp_path, "broken.yaml", extra))
    assert status(sim) == {"probe": "Unschedulable", PRETRAIN: "Scheduled", "train-llm-workload-root": "Scheduled",
                           "train-llm-driver": "Scheduled", "train-llm-workers": "Scheduled"}
    reason = next(g.reason for g in sim.groups if g.key.name == "probe")
    assert reason is not None
    assert reason.startswith("gang probe: 0/2 placeable (minCount 2); 0/9 nodes are available: ")
    selector = "device.attributes['gpu.nvidia.com'].productName.startsWith("
    assert f'DeviceClass broken.nvidia.com: selector "{selector}": ' in reason
    (problem,) = sim.dra_problems
    assert problem.startswith(f'DeviceClass broken.nvidia.com: selector "{selector}": ') and "compile error" in problem
    text = render_text(sim).splitlines()
    assert text[1] == 'warning: 1 DRA problem(s), listed under "DRA problems" (JSON: dra_problems)'
    start = text.index("DRA problems (devices not used, selectors that failed):")
    assert text[start + 1] == f"  {problem.splitlines()[0]}"
    # the other gangs' reasons do not inherit the error
    assert all(g.reason is None for g in sim.groups if g.key.name != "probe")


def test_a_claim_naming_a_device_class_that_does_not_exist_is_told_so_with_the_closest_name(tmp_path: Path) -> None:
    """A misspelt class in the small GPU cluster: the reason names the request, the class and the closest class.
    The pod is refused before any node is looked at (kube-scheduler's PreFilter: UnschedulableAndUnresolvable), so
    preemption is not tried: no eviction makes a class exist."""
    extra = PROBE_GANG.format(device_class="gpu.nvidai.com", selector="true")
    sim = run(CLUSTER, write(tmp_path, "typo.yaml", extra))
    assert status(sim)["probe"] == "Unschedulable"
    missing = "request gpu: DeviceClass gpu.nvidai.com not found (did you mean gpu.nvidia.com?)"
    reason = next(g.reason for g in sim.groups if g.key.name == "probe")
    assert reason == f"gang probe: 0/2 placeable (minCount 2); {missing}"
    assert sim.dra_problems == [f"{missing}; asked by PodGroup ml-team/probe"] and sim.preemptions == []


def test_a_missing_device_class_is_named_also_when_no_device_is_published(tmp_path: Path) -> None:
    """No ResourceSlice at all (a dump made without the DRA kinds): kube-scheduler's allocator checks the class
    before any device, so the missing class is still the reason, not a bare ``cannot allocate all claims``."""
    sim = run(write(tmp_path, "pair.yaml", one_gpu_pair("n1", "gpu.nvidia.com")))
    assert status(sim) == {"pair": "Unschedulable"}
    assert sim.dra_problems == ["request gpu: DeviceClass gpu.nvidia.com not found; asked by PodGroup default/pair"]
    (group,) = sim.groups
    assert group.reason == "gang pair: 0/2 placeable (minCount 2); request gpu: DeviceClass gpu.nvidia.com not found"


def test_a_claim_whose_selector_is_over_the_cost_limit_is_refused_unevaluated_and_the_rest_is_scheduled(
        tmp_path: Path) -> None:
    """The API server refuses such a claim template (validation.go: ``too complex, exceeds cost limit``);
    read from a file, it gets that reason at admission and the gang stays pending, nothing allocated."""
    extra = PROBE_GANG.format(device_class="gpu.nvidia.com", selector=OVER_COST_LIMIT)
    sim = run(CLUSTER, write(tmp_path, "costly.yaml", extra))
    assert status(sim)["probe"] == "Unschedulable" and placements(sim, "probe") == {}
    assert of_root(sim, "probe") == []
    assert status(sim)[PRETRAIN] == status(sim)["train-llm-workload-root"] == "Scheduled"
    reason = next(g.reason for g in sim.groups if g.key.name == "probe")
    problem = (f"request 'gpu': CEL selector {OVER_COST_LIMIT!r}: CEL compile error: too complex, exceeds "
               "cost limit (estimated cost 24,714,531, limit 1,000,000)")
    assert reason == ("gang probe: 0/2 placeable (minCount 2); ResourceClaimTemplate ml-team/probe-x1 is invalid "
                      f"(claim ml-team/probe-0-gpu made from it): {problem}")
    assert reason in render_text(sim)
    assert sim.dra_problems == [f"ResourceClaimTemplate ml-team/probe-x1: {problem}"]  # once for both members


def test_gpu_and_efa_of_one_claim_share_a_pcie_root_on_the_p4d_node(tmp_path: Path) -> None:
    """dranet's aligned template (matchAttribute resource.kubernetes.io/pcieRoot) on the real p4d slices:
    4 EFA NICs, so a gang of 4 gets one GPU + one EFA on the same root each; a 5th member cannot."""
    files = [DATA / "nodes" / "a100-8gpu-eks-p4d-dra.yaml", DATA / "resourceslices" / "nvidia-gpu-a100-p4d.yaml",
             DATA / "resourceslices" / "dranet-efa-p4d.yaml", DATA / "resourceslices" / "deviceclasses.yaml",
             DATA / "resourceslices" / "dranet-gpu-efa-claimtemplates.yaml"]

    def gang(n: int) -> Path:
        return claim_template_gang(tmp_path, "nccl", n, "gpu-efa-aligned")

    sim = run(*files, gang(4))
    assert status(sim) == {"nccl": "Scheduled"}
    assert sim.initial is not None and sim.initial.dra is not None
    inventory = sim.initial.dra.inventory
    for x in sim.allocations:
        devices = [inventory.devices[f"{d}/{p}/{n}"] for _, d, p, n in x.allocation.results]
        assert sorted(dev.driver for dev in devices) == ["dra.net", "gpu.nvidia.com"]
        assert len({dev.attributes["resource.kubernetes.io/pcieRoot"] for dev in devices}) == 1
    assert_no_device_twice(sim)
    roots = [inventory.devices[f"{d}/{p}/{n}"].attributes["resource.kubernetes.io/pcieRoot"]
             for x in sim.allocations for _, d, p, n in x.allocation.results if d == "dra.net"]
    assert sorted(roots) == ["pci0000:10", "pci0000:20", "pci0000:90", "pci0000:a0"]
    five = run(*files, gang(5))
    assert status(five) == {"nccl": "Unschedulable"} and five.allocations == []
    assert five.groups[0].reason == ("gang nccl: 4/5 placeable (minCount 5); 0/1 nodes are available: "
                                     "1 cannot allocate all claims. request efa: 1 wanted; 4 device(s) of "
                                     "class efa.networking.k8s.aws in the cluster, at most 0 unallocated on the "
                                     "node. pod group preemption: No preemption victims found for incoming pod.")


def test_netdevs_picked_by_cidr_and_find_on_the_address_dranet_publishes(tmp_path: Path) -> None:
    """dranet publishes a netdev's address with its prefix (``dra.net/ipv4: 198.51.100.11/24``) and its
    interface name; a DeviceClass keeps the ENA netdevs (``find`` on ``ifName``) and the claim the two whose
    address is in ``198.51.100.12/31`` (``cidr``/``containsIP``): a gang of 2 gets exactly those, a gang of 3
    cannot be placed."""
    files = [DATA / "nodes" / "a100-8gpu-eks-p4d-dra.yaml", DATA / "resourceslices" / "dranet-efa-p4d.yaml"]
    net = "device.attributes['dra.net']"
    objects = write(tmp_path, "netdevs.yaml", f"""
        apiVersion: resource.k8s.io/v1
        kind: DeviceClass
        metadata: {{name: netdev.dra.net}}
        spec:
          selectors:
          - cel:
              expression: "device.driver == 'dra.net' && 'ifName' in {net} && {net}.ifName.find('^ens[0-9]+$') != ''"
        ---
        apiVersion: resource.k8s.io/v1
        kind: ResourceClaimTemplate
        metadata: {{name: upper-half, namespace: default}}
        spec:
          spec:
            devices:
              requests:
              - name: nic
                exactly:
                  deviceClassName: netdev.dra.net
                  selectors:
                  - cel: {{expression: "cidr('198.51.100.12/31').containsIP(cidr({net}.ipv4).ip())"}}
        """)

    def gang(n: int) -> Path:
        return claim_template_gang(tmp_path, "net", n, "upper-half")

    sim = run(*files, objects, gang(2))
    assert status(sim) == {"net": "Scheduled"}
    assert sim.initial is not None and sim.initial.dra is not None
    inventory = sim.initial.dra.inventory
    addresses = sorted(inventory.devices[f"{d}/{p}/{n}"].attributes["dra.net/ipv4"]
                       for x in sim.allocations for _, d, p, n in x.allocation.results)
    assert addresses == ["198.51.100.12/24", "198.51.100.13/24"]
    assert_no_device_twice(sim)
    three = run(*files, objects, gang(3))
    assert status(three) == {"net": "Unschedulable"} and three.allocations == []
    assert three.groups[0].reason == ("gang net: 2/3 placeable (minCount 3); 0/1 nodes are available: "
                                      "1 cannot allocate all claims. request nic: 1 wanted; 3 device(s) of "
                                      "class netdev.dra.net in the cluster, 2 matching its selectors, at most 0 of "
                                      "them unallocated on the node. pod group preemption: No preemption victims found "
                                      "for incoming pod.")



SMALL = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n1-gpus}
spec:
  driver: gpu.example.com
  nodeName: n1
  pool: {name: n1, generation: 1, resourceSliceCount: 1}
  devices:
  - {name: gpu-0, attributes: {model: {string: LATEST-GPU-MODEL}}}
  - {name: gpu-1, attributes: {model: {string: LATEST-GPU-MODEL}}}
  - {name: gpu-2, attributes: {model: {string: OLD-GPU-MODEL}}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors: [{cel: {expression: "device.driver == 'gpu.example.com'"}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: latest, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
          selectors: [{cel: {expression: "device.attributes['gpu.example.com'].model == 'LATEST-GPU-MODEL'"}}]
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: pair, namespace: ml}
spec: {schedulingPolicy: {gang: {minCount: 2}}}
---
apiVersion: v1
kind: Pod
metadata: {name: w-0, namespace: ml, uid: uid-w-0}
spec:
  schedulerName: gang-scheduler
  schedulingGroup: {podGroupName: pair}
  resourceClaims: [{name: gpu, resourceClaimTemplateName: latest}]
  containers: [{name: c, resources: {requests: {cpu: "1"}, claims: [{name: gpu}]}}]
---
apiVersion: v1
kind: Pod
metadata: {name: w-1, namespace: ml, uid: uid-w-1}
spec:
  schedulerName: gang-scheduler
  schedulingGroup: {podGroupName: pair}
  resourceClaims: [{name: gpu, resourceClaimTemplateName: latest}]
  containers: [{name: c, resources: {requests: {cpu: "1"}, claims: [{name: gpu}]}}]
"""


def test_json_allocations_of_a_small_snapshot(tmp_path: Path) -> None:
    doc: dict[str, Any] = json.loads(json.dumps(to_json(run(write(tmp_path, "small.yaml", SMALL)))))
    assert doc["allocations"] == [
        {"claim": "ml/w-0-gpu", "reservedFor": {"kind": "Pod", "name": "w-0"}, "node": "n1",
         "devices": [{"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}],
         "pods": ["w-0"], "synthesized": True},
        {"claim": "ml/w-1-gpu", "reservedFor": {"kind": "Pod", "name": "w-1"}, "node": "n1",
         "devices": [{"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-1"}],
         "pods": ["w-1"], "synthesized": True},
    ]
    assert doc["groups"][0]["placements"] == {"w-0": "n1", "w-1": "n1"}


def device_class(name: str, driver: str) -> str:
    """YAML for a DeviceClass selecting ``driver``'s devices, followed by a document separator."""
    return f"""
    ---
    apiVersion: resource.k8s.io/v1
    kind: DeviceClass
    metadata: {{name: {name}}}
    spec: {{selectors: [{{cel: {{expression: "device.driver == '{driver}'"}}}}]}}
    ---
    """


def node_class_and_gang(node: str, device_class_name: str, driver: str, gang: str, min_count: int) -> str:
    """YAML for one node (32 cores), a DeviceClass selecting ``driver``'s devices and a gang PodGroup in
    ``default``: the frame of the small scenarios below."""
    return f"""
    apiVersion: v1
    kind: Node
    metadata: {{name: {node}, labels: {{kubernetes.io/hostname: {node}}}}}
    status: {{allocatable: {{cpu: "32", memory: 256Gi, pods: "110"}}}}
    """ + device_class(device_class_name, driver) + f"""
    apiVersion: scheduling.k8s.io/v1beta1
    kind: PodGroup
    metadata: {{name: {gang}, namespace: default}}
    spec: {{schedulingPolicy: {{gang: {{minCount: {min_count}}}}}}}
    """


def member(name: str, group: str, claim: str, extra: str = "") -> str:
    """YAML for a pending pod of ours in ``default``, member of ``group``, with one claim entry ``dev``
    (``claim``: the entry's source, e.g. ``resourceClaimName: x``); ``extra``: more spec lines."""
    return f"""
    ---
    apiVersion: v1
    kind: Pod
    metadata: {{name: {name}, namespace: default}}
    spec:
      schedulerName: gang-scheduler
      schedulingGroup: {{podGroupName: {group}}}
      resourceClaims: [{{name: dev, {claim}}}]{extra}
      containers: [{{name: c, resources: {{requests: {{cpu: "1"}}, claims: [{{name: dev}}]}}}}]
    """


def one_gpu_pair(node: str, claim_class: str) -> str:
    """YAML for :func:`node_class_and_gang` (class ``gpu.example.com``, gang ``pair`` of 2) and its members
    ``w-0``, ``w-1``, each with a claim from template ``one-gpu``: one device of ``claim_class``."""
    text = node_class_and_gang(node, "gpu.example.com", "gpu.example.com", "pair", 2) + f"""
    ---
    apiVersion: resource.k8s.io/v1
    kind: ResourceClaimTemplate
    metadata: {{name: one-gpu, namespace: default}}
    spec: {{spec: {{devices: {{requests: [{{name: gpu, exactly: {{deviceClassName: {claim_class}}}}}]}}}}}}
    """
    return text + "".join(member(f"w-{i}", "pair", "resourceClaimTemplateName: one-gpu") for i in range(2))


def test_members_own_claims_swap_mig_devices_when_the_first_choice_is_the_only_fit_of_the_second(
        tmp_path: Path) -> None:
    """The static-MIG A100 node: ``w-0``'s claim accepts any device with ≥ 19Gi (the 3g.20gb instance or
    the full gpu-1), ``w-1``'s only the 3g.20gb instance. Tried first, ``w-0`` takes the 3g.20gb (first in
    order); the search gives it back and allocates both claims together: ``w-0`` gets gpu-1."""
    text = node_class_and_gang("gpu-a100-mig-1", "a100.nvidia.com", "gpu.nvidia.com", "pair", 2)
    selectors = {"w-0": "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('19Gi')) >= 0",
                 "w-1": "'profile' in device.attributes['gpu.nvidia.com'] && "
                        "device.attributes['gpu.nvidia.com'].profile == '3g.20gb'"}
    for name, selector in selectors.items():
        text += f"""
    ---
    apiVersion: resource.k8s.io/v1
    kind: ResourceClaim
    metadata: {{name: {name}-gpu, namespace: default}}
    spec:
      devices:
        requests:
        - name: gpu
          exactly:
            deviceClassName: a100.nvidia.com
            selectors: [{{cel: {{expression: "{selector}"}}}}]
    """ + member(name, "pair", f"resourceClaimName: {name}-gpu")
    sim = run(DATA / "resourceslices" / "nvidia-mig-a100-static.yaml", write(tmp_path, "pair.yaml", text))
    assert status(sim) == {"pair": "Scheduled"}
    got = {a.allocation.claim: [n for _, _, _, n in a.allocation.results] for a in sim.allocations}
    assert got == {"default/w-0-gpu": ["gpu-1"], "default/w-1-gpu": ["gpu-0-mig-3g20gb-9-4"]}
    assert_no_device_twice(sim)


def test_a_pool_whose_two_slices_list_the_same_devices_is_ignored_and_the_gang_is_told_why(tmp_path: Path) -> None:
    """dra-example-driver's slice published twice under two names, each saying the pool has two slices (the
    resourceslice controller's duplicate, upstream's ``duplicate-slice`` case): the pool is invalid, none of
    its GPUs is used, the problem is reported, and a gang needing them waits with kube's reason."""
    (item,) = yaml.safe_load((DATA / "resourceslices" / "dra-example-driver-gpu.yaml").read_text())["items"]
    item["spec"]["pool"]["resourceSliceCount"] = 2
    twin = json.loads(json.dumps(item))
    twin["metadata"]["name"] += "-2"
    node = item["spec"]["nodeName"]
    text = one_gpu_pair(node, "gpu.example.com")
    slices = tmp_path / "slices.yaml"
    slices.write_text(yaml.safe_dump_all([item, twin]))
    sim = run(slices, write(tmp_path, "pair.yaml", text))
    assert status(sim) == {"pair": "Unschedulable"}
    (group,) = sim.groups
    assert "1 invalid resource pools were encountered" in (group.reason or "")
    assert sim.dra_problems == [f"pool gpu.example.com/{node}: invalid resource pools were encountered: "
                                "duplicate device name gpu-0; none of its devices is used"]
    assert sim.allocations == []


def test_list_attribute_pcie_roots_let_a_cpu_device_match_the_gpus_root(tmp_path: Path) -> None:
    """A CPU driver publishing each socket's PCIe roots as a list attribute (KEP-5491, as dra-driver-cpu does
    with ``--expose-pcie-roots``), next to the real p4d GPU slice (a scalar ``pcieRoot`` per GPU): a claim
    asking for one GPU and one socket on the same root gets a socket whose list holds the GPU's root, and
    a selector reads the list with ``includes``."""
    text = """
    apiVersion: resource.k8s.io/v1
    kind: ResourceSlice
    metadata: {name: gpu-a100-p4d-1-cpu.example.com}
    spec:
      driver: cpu.example.com
      nodeName: gpu-a100-p4d-1
      pool: {name: gpu-a100-p4d-1, generation: 1, resourceSliceCount: 1}
      devices:
      - name: socket-0
        attributes:
          numaNode: {int: 0}
          resource.kubernetes.io/pcieRoot: {strings: ["pci0000:10", "pci0000:20"]}
      - name: socket-1
        attributes:
          numaNode: {int: 1}
          resource.kubernetes.io/pcieRoot: {strings: ["pci0000:90", "pci0000:a0"]}
    """ + device_class("cpu.example.com", "cpu.example.com") + """
    apiVersion: resource.k8s.io/v1
    kind: ResourceClaim
    metadata: {name: aligned, namespace: default}
    spec:
      devices:
        requests:
        - name: gpu
          exactly:
            deviceClassName: gpu.nvidia.com
            selectors: [{cel: {expression: "device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0000:90'"}}]
        - name: cpu
          exactly:
            deviceClassName: cpu.example.com
            selectors:
            - cel: {expression: "device.attributes['resource.kubernetes.io'].pcieRoot.includes('pci0000:a0')"}
        constraints: [{matchAttribute: resource.kubernetes.io/pcieRoot}]
    ---
    apiVersion: v1
    kind: Pod
    metadata: {name: aligned, namespace: default}
    spec:
      schedulerName: gang-scheduler
      resourceClaims: [{name: dev, resourceClaimName: aligned}]
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers: [{name: c, resources: {requests: {cpu: "1"}, claims: [{name: dev}]}}]
    """
    sim = run(DATA / "nodes" / "a100-8gpu-eks-p4d-dra.yaml", DATA / "resourceslices" / "nvidia-gpu-a100-p4d.yaml",
              DATA / "resourceslices" / "deviceclasses.yaml", write(tmp_path, "aligned.yaml", text))
    (alloc,) = sim.allocations
    assert [(r, d) for r, _, _, d in alloc.allocation.results if r == "cpu"] == [("cpu", "socket-1")]
    assert sim.dra_problems == []


ADMIN_PROBE = """
apiVersion: v1
kind: Namespace
metadata:
  name: gpu-ops
  labels: {resource.kubernetes.io/admin-access: "true"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: health-probe-gpus, namespace: gpu-ops}
spec:
  devices:
    requests:
    - name: gpus
      exactly: {deviceClassName: gpu.nvidia.com, allocationMode: All, adminAccess: true}
---
apiVersion: v1
kind: Pod
metadata: {name: health-probe, namespace: gpu-ops, uid: 0b5d3c1e-1f7a-4c1e-9a53-7f1f3b2a9c10}
spec:
  schedulerName: gang-scheduler
  nodeSelector: {kubernetes.io/hostname: gpu-a1-1}
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  resourceClaims: [{name: gpus, resourceClaimName: health-probe-gpus}]
  containers:
  - name: probe
    image: nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04
    resources: {requests: {cpu: 100m}, claims: [{name: gpus}]}
"""


def test_admin_access_probe_gets_every_gpu_of_a_busy_node_and_takes_none(tmp_path: Path) -> None:
    """KEP-5018 in simulate: gpu-a1-1's eight H100s are all allocated to running pods; a health probe in an
    admin namespace asking for all of them with ``adminAccess`` is placed there, each result says so in JSON,
    and the devices stay allocated to their owners (no device given twice, none counted as taken again)."""
    sim = run(CLUSTER, write(tmp_path, "probe.yaml", ADMIN_PROBE))
    doc = to_json(sim)
    (pod,) = [p for p in doc["pods"] if p["name"] == "health-probe"]
    assert pod["node"] == "gpu-a1-1"
    (probe,) = [a for a in doc["allocations"] if a["claim"] == "gpu-ops/health-probe-gpus"]
    assert len(probe["devices"]) == ALLOCATED_IN_SNAPSHOT["gpu-a1-1"]
    assert all(d["adminAccess"] is True and d["pool"] == "gpu-a1-1" for d in probe["devices"])
    others = [a for a in sim.allocations if a.allocation.claim != "gpu-ops/health-probe-gpus"]
    assert not {d for a in others for d in a.allocation.device_ids} & {
        f"{d['driver']}/{d['pool']}/{d['device']}" for d in probe["devices"]}


def test_admin_access_outside_an_admin_namespace_leaves_the_probe_pending_with_the_api_servers_words(
        tmp_path: Path) -> None:
    unlabelled = ADMIN_PROBE.replace('  labels: {resource.kubernetes.io/admin-access: "true"}\n', "")
    sim = run(CLUSTER, write(tmp_path, "probe.yaml", unlabelled))
    text = render_text(sim)
    assert "health-probe" in text
    assert ("admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the "
            "containing namespace") in text
    assert not [a for a in sim.allocations if a.allocation.claim == "gpu-ops/health-probe-gpus"]


FABRIC = """
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1, fabric: f1}}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {kubernetes.io/hostname: n2, fabric: f1}}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: fabric-f1-fabric.example.com}
spec:
  driver: fabric.example.com
  pool: {name: fabric-f1, generation: 1, resourceSliceCount: 1}
  nodeSelector:
    nodeSelectorTerms:
    - matchExpressions: [{key: fabric, operator: In, values: [f1]}]
  devices:
  - name: link-0
    attributes: {kind: {string: link}}
    bindsToNode: true
    bindingConditions: [fabric.example.com/Attached]
    bindingFailureConditions: [fabric.example.com/AttachFailed]
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: fabric.example.com}
spec:
  selectors: [{cel: {expression: "device.driver == 'fabric.example.com'"}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: trainer-link, namespace: ml}
spec:
  devices:
    requests: [{name: link, exactly: {deviceClassName: fabric.example.com}}]
---
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: ml, uid: 6c0f6a1e-3b1d-4d8e-9a0e-2f4f3c9d8b71}
spec:
  schedulerName: gang-scheduler
  resourceClaims: [{name: link, resourceClaimName: trainer-link}]
  containers:
  - name: main
    image: example.com/trainer:1
    resources: {requests: {cpu: "1"}, claims: [{name: link}]}
"""


def test_a_device_with_binding_conditions_is_allocated_pinned_to_its_node_and_reported_as_waited_for(
        tmp_path: Path) -> None:
    """KEP-5007 in simulate: the allocation carries the device's conditions, ``bindsToNode`` pins its node
    selector to the node chosen (not the slice's node set), and the report says the plan would wait."""
    sim = run(write(tmp_path, "fabric.yaml", FABRIC))
    doc = to_json(sim)
    (pod,) = doc["pods"]
    (alloc,) = doc["allocations"]
    assert alloc["devices"] == [{"request": "link", "driver": "fabric.example.com", "pool": "fabric-f1",
                                 "device": "link-0", "bindingConditions": ["fabric.example.com/Attached"],
                                 "bindingFailureConditions": ["fabric.example.com/AttachFailed"]}]
    (outcome,) = sim.allocations
    assert outcome.allocation.node_selector == {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": [pod["node"]]}]}]}
    (waiting,) = doc["waiting"]
    assert waiting["conditions"] == ["ml/trainer-link: fabric.example.com/fabric-f1/link-0 fabric.example.com/Attached"]
    assert "  Pod ml/trainer: ml/trainer-link: fabric.example.com/fabric-f1/link-0 fabric.example.com/Attached" \
        in render_text(sim).splitlines()


SHARED_LINK = "".join(f"""apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}, fabric: f1}}}}
status: {{allocatable: {{cpu: "{cpu}", memory: 32Gi, pods: "110"}}}}
---
""" for name, cpu in (("n1", 1), ("n2", 1), ("n3", 2))) + (  # FABRIC's slice, class and claim
    FABRIC.split("---\n", 2)[2].split("---\napiVersion: v1\nkind: Pod")[0].replace("trainer-link", "allreduce-link")
) + """---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: allreduce, namespace: ml}
spec: {schedulingPolicy: {gang: {minCount: 2}}}
""" + "".join(f"""---
apiVersion: v1
kind: Pod
metadata: {{name: allreduce-{i}, namespace: ml}}
spec:
  schedulerName: gang-scheduler
  schedulingGroup: {{podGroupName: allreduce}}
  resourceClaims: [{{name: link, resourceClaimName: allreduce-link}}]
  containers:
  - name: main
    image: example.com/allreduce:1
    resources: {{requests: {{cpu: "1"}}, claims: [{{name: link}}]}}
""" for i in range(2))


def test_a_claim_two_pods_share_whose_device_binds_to_a_node_puts_both_on_one_node_and_pins_it_there(
        tmp_path: Path) -> None:
    """KEP-5007 on a claim shared by name: the fabric link reaches n1, n2 and n3, and binds the allocation to the
    node chosen. n1 and n2 have room for one member each, n3 for both: both go to n3, the allocation's node
    selector names n3, and the plan would wait for the link's binding condition."""
    sim = run(write(tmp_path, "link.yaml", SHARED_LINK))
    assert status(sim)["allreduce"] == "Scheduled"
    assert placements(sim, "allreduce") == {"allreduce-0": "n3", "allreduce-1": "n3"}
    doc = to_json(sim)
    (alloc,) = doc["allocations"]
    assert alloc["claim"] == "ml/allreduce-link" and alloc["node"] == "n3"
    assert sorted(alloc["pods"]) == ["allreduce-0", "allreduce-1"]
    (outcome,) = sim.allocations
    assert outcome.allocation.node_selector == {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n3"]}]}]}
    (waiting,) = doc["waiting"]
    assert waiting["conditions"] == ["ml/allreduce-link: fabric.example.com/fabric-f1/link-0 "
                                     "fabric.example.com/Attached"]
    assert ("devices: claim allreduce-link (shared by 2 pod(s)) -> fabric-f1/link-0 (fabric.example.com), bound to "
            "n3 (bindsToNode)") in render_text(sim)


def test_a_claim_two_pods_share_bound_to_a_node_none_of_which_takes_both_leaves_the_gang_pending(
        tmp_path: Path) -> None:
    """The same gang when n3 is outside the link's reach: no node reaching the link has room for both members,
    so nothing is placed, and the report names the claim, its device and why."""
    sim = run(write(tmp_path, "link.yaml", SHARED_LINK.replace("n3, fabric: f1", "n3, fabric: f2")))
    assert status(sim)["allreduce"] != "Scheduled"
    assert not sim.allocations and not placements(sim, "allreduce")
    assert ("ResourceClaim ml/allreduce-link: device fabric.example.com/fabric-f1/link-0 binds the allocation to "
            "one node (bindsToNode), and no node reaching it has room for 2 consumer(s)") in render_text(sim)


def test_objects_written_without_uids_get_stable_ones_and_the_group_claim_is_reserved(tmp_path: Path) -> None:
    """A hand-written snapshot has no ``metadata.uid``; the API server would have given each object one, and a
    PodGroup's claim is reserved for the PodGroup by uid. simulate derives one per object, the same each run."""
    docs = []
    for d in yaml.safe_load_all(SHARED_CLAIMS.read_text()):
        d["metadata"].pop("uid", None)
        docs.append(d)
    bare = tmp_path / "bare.yaml"
    bare.write_text(yaml.safe_dump_all(docs))
    cluster = without(tmp_path, CLUSTER, "llm-pretrain")
    first, again = run(cluster, bare), run(cluster, bare)
    assert status(first)["allreduce-bench"] == "Scheduled"
    assert to_json(first) == to_json(again)
    groups = load([bare]).podgroups
    assert all(g.metadata.uid for g in groups) and len({g.metadata.uid for g in groups}) == len(groups)


GPU_CLASS = """
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors: [{cel: {expression: "device.driver == 'gpu.example.com'"}}]
  extendedResourceName: example.com/gpu
"""
"""A DeviceClass serving ``example.com/gpu`` with every device of driver ``gpu.example.com``."""


def gpu_pod(metadata: str, gpus: str, group: str | None = None) -> str:
    """A pod document (``metadata`` as YAML flow) whose container asks for ``gpus`` × ``example.com/gpu``."""
    member = f"\n  schedulingGroup: {{podGroupName: {group}}}" if group else ""
    return f"""
---
apiVersion: v1
kind: Pod
metadata:
  {metadata}
spec:
  schedulerName: gang-scheduler{member}
  containers:
  - name: main
    image: example.com/trainer:1
    resources: {{limits: {{example.com/gpu: "{gpus}"}}}}
"""


ZERO_ALLOCATABLE = """
apiVersion: v1
kind: Node
metadata: {name: n0, labels: {kubernetes.io/hostname: n0}}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110", example.com/gpu: "0"}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n0-gpu.example.com}
spec:
  driver: gpu.example.com
  nodeName: n0
  pool: {name: n0, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0}, {name: gpu-1}]
""" + GPU_CLASS + gpu_pod("{name: x, namespace: ml, uid: 5d1e0c3a-7b2f-4e6d-8a9c-1f2e3d4c5b6a}", "2")


def test_an_extended_resource_every_node_lists_at_zero_is_served_through_dra(tmp_path: Path) -> None:
    """kube-scheduler's DynamicResources plugin serves an extended resource through DRA on a node whose
    allocatable amount of it is 0 (``extendeddynamicresources.go``), as where the node does not list it; a node
    offering a non-zero amount serves it itself."""
    sim = run(write(tmp_path, "zero.yaml", ZERO_ALLOCATABLE))
    (outcome,) = sim.allocations
    assert outcome.allocation.claim == "ml/x-extended-resources"
    assert [(r, d) for r, _, _, d in outcome.allocation.results] == [("container-0-request-0", "gpu-0"),
                                                                     ("container-0-request-0", "gpu-1")]
    assert [p["node"] for p in to_json(sim)["pods"]] == ["n0"]
    offered = ZERO_ALLOCATABLE.replace('example.com/gpu: "0"}', 'example.com/gpu: "2"}')
    sim = run(write(tmp_path, "offered.yaml", offered))
    assert sim.allocations == []
    assert [p["node"] for p in to_json(sim)["pods"]] == ["n0"]


def mixed_cluster(later: str = "") -> str:
    """dp-0 and dp-1 serve example.com/gpu by device plugin (4 each in allocatable); dra-0 and dra-1 list none and
    publish 4 devices each of a DeviceClass serving it (a cluster moving from one to the other). PodGroup ``g``:
    4 members × 3 GPUs, more than the device-plugin nodes hold; ``later``: more objects, created after it."""
    text = ""
    for name, gpus in (("dp-0", "4"), ("dp-1", "4"), ("dra-0", None), ("dra-1", None)):
        extra = f", example.com/gpu: \"{gpus}\"" if gpus else ""
        text += f"""
---
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}
status: {{allocatable: {{cpu: "8", memory: 32Gi, pods: "110"{extra}}}}}
"""
    for name in ("dra-0", "dra-1"):
        text += f"""
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: {name}-gpu.example.com}}
spec:
  driver: gpu.example.com
  nodeName: {name}
  pool: {{name: {name}, generation: 1, resourceSliceCount: 1}}
  devices: [{{name: gpu-0}}, {{name: gpu-1}}, {{name: gpu-2}}, {{name: gpu-3}}]
"""
    text += GPU_CLASS + """
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: g, namespace: ml, creationTimestamp: "2026-11-29T09:00:00Z"}
spec: {schedulingPolicy: {gang: {minCount: 4}}}
"""
    for i in range(4):
        text += gpu_pod(f'{{name: g-{i}, namespace: ml, uid: 00000000-0000-4000-8000-00000000000{i}, '
                        f'creationTimestamp: "2026-11-29T09:00:00Z"}}', "3", "g")
    return text + later


def late_pod(gpus: str) -> str:
    return gpu_pod('{name: late, namespace: ml, uid: 00000000-0000-4000-8000-0000000000ff, '
                   'creationTimestamp: "2026-11-29T10:00:00Z"}', gpus)


def test_a_gang_larger_than_the_device_plugin_nodes_also_uses_the_dra_nodes(tmp_path: Path) -> None:
    """Node by node, as kube-scheduler decides it: the members on dp-* take 3 of the node's 4 allocatable GPUs and
    get no claim; the members on dra-* each get a claim of 3 devices of their node. A later pod asking for 2
    finds 1 left everywhere (allocatable on dp-*, devices on dra-*): nothing is given twice."""
    sim = run(write(tmp_path, "mixed.yaml", mixed_cluster(late_pod("2"))))
    assert status(sim)["g"] == "Scheduled"
    where = placements(sim, "g")
    assert sorted(where.values()) == ["dp-0", "dp-1", "dra-0", "dra-1"]
    claims = {a.allocation.pod: a.allocation for a in sim.allocations}
    assert set(claims) == {f"ml/{p}" for p, n in where.items() if n.startswith("dra-")}
    for pod, a in claims.items():
        assert a.synthetic and a.node == where[pod.removeprefix("ml/")]
        assert [r for r, _, _, _ in a.results] == ["container-0-request-0"] * 3
    pods = {p["name"]: p for p in to_json(sim)["pods"]}
    assert pods["late"].get("node") is None  # 1 GPU left on each node, by either means
    sim = run(write(tmp_path, "mixed-small.yaml", mixed_cluster(late_pod("1"))))
    assert {p["name"]: p.get("node") for p in to_json(sim)["pods"]}["late"] is not None


def test_a_pool_with_a_slice_missing_is_named_as_why_its_node_cannot_serve_the_gang(tmp_path: Path) -> None:
    """dra-example-driver's slice saying its pool has two slices, one published: the pool is incomplete, none of its
    GPUs is used until the other arrives, and the gang's reason says so rather than that the node's devices are all
    allocated."""
    (item,) = yaml.safe_load((DATA / "resourceslices" / "dra-example-driver-gpu.yaml").read_text())["items"]
    item["spec"]["pool"]["resourceSliceCount"] = 2
    node = item["spec"]["nodeName"]
    slices = tmp_path / "slices.yaml"
    slices.write_text(yaml.safe_dump_all([item]))
    sim = run(slices, write(tmp_path, "pair.yaml", one_gpu_pair(node, "gpu.example.com")))
    assert status(sim) == {"pair": "Unschedulable"}
    (group,) = sim.groups
    assert "1 resource pools were incomplete (not all their slices published yet)" in (group.reason or "")
    assert sim.dra_problems == [f"pool gpu.example.com/{node}: 1/2 slices of generation 0 seen; not used until "
                                "complete"]
