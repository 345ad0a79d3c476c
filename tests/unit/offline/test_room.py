"""``simulate`` says when a root left unschedulable fits the cluster as given, and whose placement took its room
(``scheduler/offline/room.py``); nothing is said of a root that does not fit the cluster as given either."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from scheduler.framework import SolverConfig
from scheduler.model.scheduling import GroupKey
from scheduler.offline.loader import load
from scheduler.offline.report import render_json, render_text
from scheduler.offline.room import RoomTaken
from scheduler.offline.simulate import Simulation, simulate
from tests.unit.offline.test_simulate import group, member, podgroup, run

GANG = "{gang: {minCount: %d}}"


def gang(name: str, pods: int, cpu: str = "1") -> list[str]:
    return [podgroup(name, GANG % pods), *(member(f"{name}-{i}", name, cpu) for i in range(pods))]


def test_a_gang_whose_room_an_earlier_gang_took_is_told_so_with_the_nodes_and_the_gang(tmp_path: Path) -> None:
    sim = run(tmp_path, *gang("a-big", 3), *gang("b-small", 2))  # n1 has 4 cpu; a-big comes first (by name)
    assert group(sim, "a-big")[0] == "Scheduled"
    assert group(sim, "b-small")[0] == "Unschedulable"
    big, small = GroupKey("PodGroup", "ml", "a-big"), GroupKey("PodGroup", "ml", "b-small")
    assert sim.room_taken == {small: RoomTaken((("n1", 2),), ((big, 0),))}
    assert ("fits the cluster as given (on n1 x2): the room went to PodGroup ml/a-big (priority 0), placed before "
            "it in this run") in render_text(sim)
    doc = json.loads(render_json(sim))
    assert doc["roomTaken"] == [{"root": {"namespace": "ml", "name": "b-small", "kind": "PodGroup"},
                                 "nodes": {"n1": 2},
                                 "takenBy": [{"namespace": "ml", "name": "a-big", "kind": "PodGroup",
                                              "priority": 0}]}]


def test_nothing_is_said_of_a_gang_too_big_for_the_cluster_as_given(tmp_path: Path) -> None:
    sim = run(tmp_path, *gang("a-small", 1), *gang("b-huge", 5))
    assert group(sim, "b-huge")[0] == "Unschedulable"
    assert sim.room_taken == {}
    assert "fits the cluster as given" not in render_text(sim)
    assert json.loads(render_json(sim))["roomTaken"] == []


def test_nothing_is_said_when_no_gang_was_placed_before_it(tmp_path: Path) -> None:
    sim = run(tmp_path, *gang("a-huge", 5), *gang("b-small", 1))
    assert group(sim, "a-huge")[0] == "Unschedulable"
    assert group(sim, "b-small")[0] == "Scheduled"
    assert sim.room_taken == {}


def test_only_the_gangs_placed_on_the_nodes_it_would_use_are_named(tmp_path: Path) -> None:
    second = """
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {kubernetes.io/hostname: n2}}
status: {allocatable: {cpu: "1", memory: 8Gi, pods: "110"}}
"""
    pinned = """
apiVersion: v1
kind: Pod
metadata: {name: a-one-0, namespace: ml}
spec:
  schedulerName: gang-scheduler
  schedulingGroup: {podGroupName: a-one}
  nodeSelector: {kubernetes.io/hostname: n2}
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
"""
    # a-one takes n2's one cpu, b-big 3 of n1's 4: c-pair (2 pods) fits no more; on the cluster as given both its
    # pods go to n1 (the packing order), where only b-big placed pods
    sim = run(tmp_path, second, podgroup("a-one", GANG % 1), pinned, *gang("b-big", 3), *gang("c-pair", 2))
    assert {g.key.name: set(g.placements.values()) for g in sim.groups if g.placements} == {
        "a-one": {"n2"}, "b-big": {"n1"}}
    assert sim.room_taken == {GroupKey("PodGroup", "ml", "c-pair"): RoomTaken(
        (("n1", 2),), ((GroupKey("PodGroup", "ml", "b-big"), 0),))}


def test_nothing_is_said_of_a_gang_whose_minimum_was_placed(tmp_path: Path) -> None:
    members = [member(f"b-three-{i}", "b-three") for i in range(3)]
    sim = run(tmp_path, *gang("a-two", 2), podgroup("b-three", GANG % 2), *members)  # 2 of n1's 4 cpu left
    assert group(sim, "b-three")[0] == "Scheduled"
    assert sum(p.node is None for p in sim.pods) == 1
    assert sim.room_taken == {}



def node(name: str, cpu: str = "4") -> str:
    return f"""
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}, topology.kubernetes.io/zone: z1}}}}
status: {{allocatable: {{cpu: "{cpu}", memory: 8Gi, pods: "110"}}}}
"""


def pod(name: str, group: str | None, cpu: str, priority: int = 0, labels: str = "{}", extra: str = "",
        host_port: bool = False) -> str:
    """A pending pod of ours in namespace ml; ``extra``: more lines of its spec (two spaces in)."""
    grouping = f"\n  schedulingGroup: {{podGroupName: {group}}}" if group else ""
    ports = "ports: [{containerPort: 8080, hostPort: 8080}], " if host_port else ""
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: ml, labels: {labels}}}
spec:
  schedulerName: gang-scheduler
  priority: {priority}{grouping}{extra}
  containers: [{{name: c, {ports}resources: {{requests: {{cpu: "{cpu}"}}}}}}]
"""


def simulate_docs(tmp_path: Path, *docs: str) -> Simulation:
    """``simulate`` of ``docs`` alone (no node of the helpers': each test gives its own, labelled)."""
    path = tmp_path / "snap.yaml"
    path.write_text("---".join(textwrap.dedent(d) for d in docs))
    return simulate(load([path]), "gang-scheduler", SolverConfig())


ON_N1 = "\n  nodeSelector: {kubernetes.io/hostname: n1}"
ON_N2 = "\n  nodeSelector: {kubernetes.io/hostname: n2}"


def test_a_root_that_fits_only_beside_pods_placed_in_this_run_is_not_said_to_fit_the_cluster_as_given(
        tmp_path: Path) -> None:
    """u's pods need a pod of a on their node (required pod affinity). On the cluster as given there is none, so u
    fits nowhere; in the run a and b, before it, fill n1. The solve on the cluster as given must not see a's pod
    through the pod index the run's first cycle cached on that snapshot (the run's binds move it on)."""
    affinity = """
  affinity:
    podAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {app: a}}
        topologyKey: kubernetes.io/hostname"""
    sim = simulate_docs(tmp_path, node("n1"), node("n2"),
                        podgroup("a", GANG % 1), pod("a-0", "a", "1", 100, "{app: a}", ON_N1),
                        podgroup("b", GANG % 1), pod("b-0", "b", "3", 100, extra=ON_N1),
                        podgroup("u", GANG % 2), pod("u-0", "u", "1", 0, "{app: u}", affinity),
                        pod("u-1", "u", "1", 0, "{app: u}", affinity))
    assert group(sim, "u")[0] == "Unschedulable"
    assert sim.room_taken == {}
    assert "fits the cluster as given" not in render_text(sim)


def test_a_host_port_taken_in_this_run_is_free_on_the_cluster_as_given(tmp_path: Path) -> None:
    """a, before u, takes n1's host port 8080, which u needs too; on the cluster as given it is free: u fits."""
    sim = simulate_docs(tmp_path, node("n1"), podgroup("a", GANG % 1), pod("a-0", "a", "1", 100, host_port=True),
                        podgroup("u", GANG % 1), pod("u-0", "u", "1", host_port=True))
    assert group(sim, "a")[0] == "Scheduled"
    assert group(sim, "u")[0] == "Unschedulable"
    assert sim.room_taken == {GroupKey("PodGroup", "ml", "u"): RoomTaken(
        (("n1", 1),), ((GroupKey("PodGroup", "ml", "a"), 100),))}


def test_a_root_on_those_nodes_that_did_not_take_the_room_is_not_named(tmp_path: Path) -> None:
    """u's pods repel a's (required anti-affinity, per zone): a's pod, placed on n2 before u, keeps u out of the
    zone. b's small pod on n1, where u fits on the cluster as given, leaves room for u there: b did not take it."""
    anti = """
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {app: a}}
        topologyKey: topology.kubernetes.io/zone"""
    sim = simulate_docs(tmp_path, node("n1"), node("n2"),
                        podgroup("a", GANG % 1), pod("a-0", "a", "1", 100, "{app: a}", ON_N2),
                        podgroup("b", GANG % 1), pod("b-0", "b", "100m", 100, extra=ON_N1),
                        podgroup("u", GANG % 2), pod("u-0", "u", "1", extra=anti), pod("u-1", "u", "1", extra=anti))
    assert group(sim, "u")[0] == "Unschedulable"
    assert sim.room_taken == {}


def test_a_root_on_those_nodes_is_not_named_when_a_volume_decided_before_keeps_it_away(tmp_path: Path) -> None:
    """a and u share the WaitForFirstConsumer claim data; two local PVs, on n1 and n2. a (on n2) binds it to
    pv-n2, so u must follow it to n2, where 1 cpu is left. On the cluster as given u takes pv-n1 on n1; b's small
    pod there leaves room for it: the room went to a's volume decision, not to b."""
    def pv(name: str) -> str:
        return f"""
apiVersion: v1
kind: PersistentVolume
metadata: {{name: pv-{name}}}
spec:
  capacity: {{storage: 10Gi}}
  accessModes: [ReadWriteOnce]
  storageClassName: local
  local: {{path: /mnt/disk}}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{{key: kubernetes.io/hostname, operator: In, values: [{name}]}}]
status: {{phase: Available}}
"""
    storage = ["""
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
""", pv("n1"), pv("n2"), """
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: ml}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: local
  resources: {requests: {storage: 5Gi}}
status: {phase: Pending}
"""]
    data = "\n  volumes: [{name: d, persistentVolumeClaim: {claimName: data}}]"
    sim = simulate_docs(tmp_path, node("n1"), node("n2"), *storage,
                        podgroup("a", GANG % 1), pod("a-0", "a", "3", 100, extra=ON_N2 + data),
                        podgroup("b", GANG % 1), pod("b-0", "b", "100m", 100, extra=ON_N1),
                        podgroup("u", GANG % 1), pod("u-0", "u", "2", extra=data))
    assert [(v.binding.claim, v.volume) for v in sim.volumes] == [("ml/data", "pv-n2")]
    assert group(sim, "u")[0] == "Unschedulable"
    assert sim.room_taken == {}


def test_a_root_whose_pods_a_later_preemption_evicted_is_not_named(tmp_path: Path) -> None:
    """p (a partial gang: p-0 runs on n1) is placed first, p-1 on n1; h, of higher priority, then preempts both
    pods of p and takes n1 whole. u fits n1 as given; its room went to h, not to p, which holds none of it."""
    running = pod("p-0", "p", "1", extra="\n  nodeName: n1") + "status: {phase: Running}\n"
    sim = simulate_docs(tmp_path, node("n1"), podgroup("p", GANG % 2), running, pod("p-1", "p", "1"),
                        podgroup("h", GANG % 1), pod("h-0", "h", "4", 100),
                        podgroup("u", GANG % 1), pod("u-0", "u", "2", 50))
    assert [p.root.name for p in sim.preemptions] == ["h"]
    assert group(sim, "u")[0] == "Unschedulable"
    assert sim.room_taken == {GroupKey("PodGroup", "ml", "u"): RoomTaken(
        (("n1", 1),), ((GroupKey("PodGroup", "ml", "h"), 100),))}


def test_a_lone_pod_whose_room_was_taken_is_told_so_in_the_text_too(tmp_path: Path) -> None:
    sim = simulate_docs(tmp_path, node("n1"), pod("a-lone", None, "3", 10), pod("b-lone", None, "2"))
    assert sim.room_taken == {GroupKey("Pod", "ml", "b-lone"): RoomTaken(
        (("n1", 1),), ((GroupKey("Pod", "ml", "a-lone"), 10),))}
    assert ("  ml/b-lone: 0/1 nodes are available: 1 Insufficient cpu. preemption: No preemption victims found for "
            "incoming pod.\n    fits the cluster as given (on n1): the room went to Pod ml/a-lone (priority 10), "
            "placed before it in this run\n") in render_text(sim)
