"""``simulate`` on a Kubernetes 1.36 snapshot (``clusters/k8s-1.36-cluster.yaml``): v1alpha2 PodGroups read like
v1beta1 ones, and a PodGroup of a version we do not read named, never dropped silently."""

from __future__ import annotations

import json
from pathlib import Path

import kubernetes_validate  # type: ignore[import-untyped]
import yaml

from scheduler.framework import SolverConfig
from scheduler.model.scheduling import DisruptionMode, Empty, WorkloadReference
from scheduler.offline.loader import load
from scheduler.offline.report import notices, render_text, to_json
from scheduler.offline.simulate import Simulation, simulate
from tests.scenario.conftest import DATA
from tests.unit.model.example_data import documents
from tests.unit.offline.test_pytorchjobs import PYTORCHJOB

CLUSTER = DATA / "clusters" / "k8s-1.36-cluster.yaml"


def run(*paths: Path) -> Simulation:
    return simulate(load(paths), "gang-scheduler", SolverConfig())


def test_the_snapshot_is_a_valid_v136_one() -> None:
    objects = list(documents(CLUSTER.read_text()))
    assert {o["apiVersion"] for o in objects if o["kind"] in ("PodGroup", "Workload")} == {"scheduling.k8s.io/v1alpha2"}
    for obj in objects:
        kubernetes_validate.validate(obj, "1.36.0", strict=True)


def test_v1alpha2_podgroups_are_read_and_scheduled_like_v1beta1_ones() -> None:
    objects = load([CLUSTER])
    assert (len(objects.podgroups), len(objects.workloads), objects.skipped, objects.problems) == (2, 1, {}, [])
    workers = next(g for g in objects.podgroups if g.metadata.name == "train-workers")
    assert workers.spec.disruption_mode == DisruptionMode(all=Empty())
    assert workers.spec.workload_ref == WorkloadReference(workload_name="train", template_name="workers")
    sim = simulate(objects, "gang-scheduler", SolverConfig())
    outcome = {g.key.name: g for g in sim.groups}
    assert {name: g.status for name, g in outcome.items()} == {"train-workers": "Scheduled", "eval": "Unschedulable"}
    assert set(outcome["train-workers"].placements.values()) == {"gpu-a1", "gpu-a2"}  # the one zone with 16 free
    assert outcome["eval"].reason == (
        "gang eval: 2/3 placeable (minCount 3) in topology.kubernetes.io/zone us-east-1b (best of 2 domains): "
        "10 nvidia.com/gpu free on the 2 node(s) passing every other filter (at most 8 on one), 12 needed; 0/2 nodes "
        "are available: 2 Insufficient nvidia.com/gpu. pod group preemption: No preemption victims found for incoming "
        "pod.")
    assert notices(sim) == []


def test_a_podgroup_of_a_version_not_read_is_named_with_its_pods(tmp_path: Path) -> None:
    extra = tmp_path / "future.yaml"
    future = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PodGroup",  # a PodGroup version we do not read
              "metadata": {"name": "future", "namespace": "ml"},
              "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}}}
    member = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "future-0", "namespace": "ml"},
              "spec": {"schedulerName": "gang-scheduler", "schedulingGroup": {"podGroupName": "future"},
                       "containers": [{"name": "main", "image": "example.com/x:1"}]}}
    extra.write_text(yaml.safe_dump_all([future, member]))
    sim = run(CLUSTER, extra)
    (skipped,) = [n for n in notices(sim) if n.kind == "skipped-api-version"]
    assert skipped.message == ("1 scheduling.k8s.io/v1 PodGroup object(s) skipped (a PodGroup is read only as "
                               "scheduling.k8s.io/v1alpha2, scheduling.k8s.io/v1alpha3, scheduling.k8s.io/v1beta1, "
                               "scheduling.x-k8s.io/v1alpha1; it is not ours): ml/future")
    (pod,) = [p for p in sim.pods if p.pod.metadata.name == "future-0"]
    assert pod.reason == "PodGroup ml/future is scheduling.k8s.io/v1, an API version not read"


def test_an_unknown_disruption_mode_is_warned_about_and_the_gang_still_scheduled(tmp_path: Path) -> None:
    doc = yaml.safe_load(CLUSTER.read_text())
    (workers,) = [o for o in doc["items"] if (o["kind"], o["metadata"]["name"]) == ("PodGroup", "train-workers")]
    workers["spec"]["disruptionMode"] = "Gang"
    changed = tmp_path / "cluster.yaml"
    changed.write_text(yaml.safe_dump(doc))
    sim = run(changed)
    assert {g.key.name: g.status for g in sim.groups}["train-workers"] == "Scheduled"
    message = (f"{changed}: PodGroup ml/train-workers: spec.disruptionMode: 'Gang' is neither \"Pod\" nor "
               "\"PodGroup\": treated as \"Pod\" (the default: its pods are preemption victims one by one, a partial "
               "gang is not torn down) (not honoured)")
    assert [w for w in to_json(sim)["warnings"] if w["kind"] == "unhonoured-object-field"] == [
        {"level": "warning", "kind": "unhonoured-object-field", "message": message}]
    assert f"warning: {message}" in render_text(sim)


def test_a_labelled_workload_beside_v1alpha2_podgroups_gets_the_one_podgroup_the_operator_makes_on_136(
        tmp_path: Path) -> None:
    """1.36 serves no CompositePodGroup, so the operator makes a labelled PyTorchJob one PodGroup of all its pods; a
    snapshot holding a CompositePodGroup is read as v1.37's, where it makes the tree."""
    job = tmp_path / "pt.yaml"
    job.write_text(PYTORCHJOB)
    objects = load([CLUSTER, job])
    assert objects.v1alpha2_objects and not objects.serves_composites
    groups = {(g.key.kind, g.key.name) for g in simulate(objects, "gang-scheduler", SolverConfig()).groups}
    assert ("PodGroup", "pt") in groups and not any(kind == "CompositePodGroup" for kind, _ in groups)
    composite = tmp_path / "cpg.yaml"
    composite.write_text("""
apiVersion: scheduling.k8s.io/v1alpha3
kind: CompositePodGroup
metadata: {name: other, namespace: ml}
spec: {schedulingPolicy: {gang: {minGroupCount: 1}}}
""")
    tree = load([CLUSTER, job, composite])
    assert tree.serves_composites
    assert ("CompositePodGroup", "pt") in {(g.key.kind, g.key.name)
                                           for g in simulate(tree, "gang-scheduler", SolverConfig()).groups}


def test_from_cluster_discovery_decides_trees_whatever_an_added_file_holds(tmp_path: Path) -> None:
    """``--from-cluster --add``: the cluster's discovery (``Objects.composite``) says whether the operator makes
    trees; a v1alpha2 PodGroup in an added file (or read from a v1.37 cluster serving v1alpha2) does not undo it."""
    from scheduler.offline.loader import Objects

    listed = Objects(composite=True)  # a v1.37 cluster serving CompositePodGroups, none made yet
    assert load([CLUSTER], objects=listed).serves_composites
    assert not load([CLUSTER], objects=Objects(composite=False)).serves_composites
    assert not load([CLUSTER]).serves_composites  # files alone: 1.36's


def test_a_136_dump_of_v1alpha2_workloads_alone_gets_the_one_podgroup_the_operator_makes_on_136(
        tmp_path: Path) -> None:
    """A 1.36 snapshot with Workloads and no PodGroup yet is 1.36's all the same: no CompositePodGroup is served."""
    dump = tmp_path / "dump.yaml"
    kept = [o for o in documents(CLUSTER.read_text()) if o["kind"] != "PodGroup"]
    dump.write_text("\n---\n".join(yaml.safe_dump(o) for o in kept))
    job = tmp_path / "pt.yaml"
    job.write_text(PYTORCHJOB)
    objects = load([dump, job])
    assert objects.workloads and not objects.podgroups
    assert not objects.serves_composites
    groups = {(g.key.kind, g.key.name) for g in simulate(objects, "gang-scheduler", SolverConfig()).groups}
    assert ("PodGroup", "pt") in groups and not any(kind == "CompositePodGroup" for kind, _ in groups)


def test_a_136_dump_of_v1alpha2_workloads_as_kubectls_json_list_is_read_as_136_too(tmp_path: Path) -> None:
    """``kubectl get -o json`` writes each Workload with its uid, which the loader decodes straight from its bytes
    (``Objects.add_json``): that path must tell a v1alpha2 Workload as ``add`` does, or the same dump reads as
    1.37's in JSON and as 1.36's in YAML."""
    kept = [{**o, "metadata": {**o["metadata"], "uid": f"uid-{o['metadata']['name']}"}}
            for o in documents(CLUSTER.read_text()) if o["kind"] != "PodGroup"]
    items = [{"apiVersion": o["apiVersion"], "kind": o["kind"], **o} for o in kept]
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, default=str))
    job = tmp_path / "pt.yaml"
    job.write_text(PYTORCHJOB)
    objects = load([dump, job])
    assert objects.workloads and not objects.podgroups
    assert objects.v1alpha2_objects and not objects.serves_composites
    groups = {(g.key.kind, g.key.name) for g in simulate(objects, "gang-scheduler", SolverConfig()).groups}
    assert ("PodGroup", "pt") in groups and not any(kind == "CompositePodGroup" for kind, _ in groups)
