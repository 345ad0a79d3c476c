"""A Kubeflow PyTorchJob given to ``simulate`` is scheduled as the pods the training operator and the groups the
operator would make of it (``scheduler.offline.pytorchjobs``)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.offline import jobs, pytorchjobs
from tests.unit.offline.test_jobs import job_notes, run

PYTORCHJOB = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, namespace: ml, labels: {gang-scheduler.io/gang: "true"}}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers: [{name: pytorch, image: x, resources: {requests: {cpu: "1"}}}]
    Worker:
      replicas: 3
      restartPolicy: ExitCode
      template:
        metadata: {labels: {team: nlp}, annotations: {note: kept}}
        spec:
          containers: [{name: pytorch, image: x, resources: {requests: {cpu: "1"}}}]
"""
TREE_NOTE = ("kubeflow.org/v1 PyTorchJob ml/pt: 4 pod(s) (Master 1, Worker 3) made as the training operator would, in "
             "CompositePodGroup pt over 2 PodGroup(s), one per replica type, as the operator makes them for "
             "gang-scheduler.io/gang")


def test_a_labelled_pytorchjob_is_made_into_its_pods_and_the_operators_tree(tmp_path: Path) -> None:
    sim = run(tmp_path, PYTORCHJOB)
    groups = {g.key.name: (g.key.kind, g.status, g.policy, len(g.placements)) for g in sim.groups}
    assert groups == {"pt": ("CompositePodGroup", "Scheduled", "gang minGroupCount 2", 4),
                      "pt-master": ("PodGroup", "Scheduled", "gang minCount 1", 1),
                      "pt-worker": ("PodGroup", "Scheduled", "gang minCount 3", 3)}
    pods = {p.pod.metadata.name: p for p in sim.pods}
    assert sorted(pods) == ["pt-master-0", "pt-worker-0", "pt-worker-1", "pt-worker-2"]
    assert all(p.node in ("n1", "n2") for p in pods.values())
    for name, placed in pods.items():
        pod = placed.pod
        rtype, index = name.split("-")[1:]
        assert pod.metadata.labels == {
            **({"team": "nlp"} if rtype == "worker" else {}),
            "training.kubeflow.org/operator-name": "pytorchjob-controller", "training.kubeflow.org/job-name": "pt",
            "training.kubeflow.org/replica-type": rtype, "training.kubeflow.org/replica-index": index,
            **({"training.kubeflow.org/job-role": "master"} if rtype == "master" else {}),
            "gang-scheduler.io/gang": "true"}
        assert pod.spec.scheduler_name == "gang-scheduler"
        assert pod.spec.scheduling_group is not None and pod.spec.scheduling_group.pod_group_name == f"pt-{rtype}"
    assert pods["pt-worker-0"].pod.metadata.annotations == {"note": "kept"}
    assert job_notes(sim) == [TREE_NOTE]
    assert [p.pod.metadata.name for p in run(tmp_path, PYTORCHJOB).pods] == [p.pod.metadata.name for p in sim.pods]


def test_what_the_training_operator_adds_to_each_pod() -> None:
    """Owned by the PyTorchJob; the defaulter's port on the ``pytorch`` container, the workers' init container waiting
    for the master, the replica's restart policy (``ExitCode`` is ``Never``); replica types written in lower case are
    read as the defaulter rewrites them; the PyTorchJob itself is left as it was."""
    job = yaml.safe_load(PYTORCHJOB.replace("    Master:", "    master:").replace("    Worker:", "    worker:"))
    job["metadata"]["uid"] = "u1"
    assert pytorchjobs.problem(job) is None
    made = pytorchjobs.pods(job)
    assert [p["metadata"]["ownerReferences"] for p in made] == [[{
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "pt", "uid": "u1", "controller": True,
        "blockOwnerDeletion": True}]] * 4
    pods = {p["metadata"]["name"]: p["spec"] for p in made}
    assert list(pods) == ["pt-master-0", "pt-worker-0", "pt-worker-1", "pt-worker-2"]
    master, worker = pods["pt-master-0"], pods["pt-worker-0"]
    assert master["restartPolicy"] == "OnFailure" and worker["restartPolicy"] == "Never"
    assert master["containers"][0]["ports"] == [{"name": "pytorchjob-port", "containerPort": 23456}]
    assert "initContainers" not in master
    (init,) = worker["initContainers"]
    assert init["name"] == "init-pytorch" and init["resources"]["requests"] == {"cpu": "50m", "memory": "10Mi"}
    assert "pt-master-0" in init["command"][-1]
    assert job["spec"]["pytorchReplicaSpecs"]["worker"]["template"]["spec"]["containers"][0].get("ports") is None


def test_a_pytorchjob_too_large_for_the_cluster_places_none_of_its_pods(tmp_path: Path) -> None:
    sim = run(tmp_path, PYTORCHJOB.replace("replicas: 3", "replicas: 8"))
    assert {g.key.name: g.status for g in sim.groups}["pt"] == "Unschedulable"
    assert len(sim.pods) == 9 and all(p.node is None for p in sim.pods)


def test_a_pytorchjob_naming_our_scheduler_without_the_label_makes_lone_pods(tmp_path: Path) -> None:
    job = PYTORCHJOB.replace('labels: {gang-scheduler.io/gang: "true"}', "labels: {}").replace(
        "          containers:", "          schedulerName: gang-scheduler\n          containers:")
    sim = run(tmp_path, job)
    assert sim.groups == [] and len(sim.pods) == 4
    assert all(p.pod.spec.scheduling_group is None and p.node is not None for p in sim.pods)
    assert job_notes(sim) == ["kubeflow.org/v1 PyTorchJob ml/pt: 4 pod(s) (Master 1, Worker 3) made as the training "
                              "operator would, without a group"]


def test_a_worker_only_pytorchjob_is_a_tree_of_one_podgroup(tmp_path: Path) -> None:
    job = yaml.safe_load(PYTORCHJOB)
    del job["spec"]["pytorchReplicaSpecs"]["Master"]
    sim = run(tmp_path, dump(job))
    assert {g.key.name: (g.policy, g.status) for g in sim.groups} == {
        "pt": ("gang minGroupCount 1", "Scheduled"), "pt-worker": ("gang minCount 3", "Scheduled")}
    assert all(not p.pod.spec.init_containers for p in sim.pods)  # no master to wait for


NOT_MADE = "1 workload(s) of ours not made into pods: PyTorchJob ml/pt "


@pytest.mark.parametrize(("change", "note"), [
    pytest.param(("spec:\n  pytorchReplicaSpecs:", "spec:\n  runPolicy: {suspend: true}\n  pytorchReplicaSpecs:"),
                 NOT_MADE + "(suspended)", id="suspended"),
    pytest.param(("spec:\n  pytorchReplicaSpecs:",
                  "spec:\n  runPolicy: {managedBy: kueue.x-k8s.io/multikueue}\n  pytorchReplicaSpecs:"),
                 NOT_MADE + "(managed by kueue.x-k8s.io/multikueue)", id="managed-elsewhere"),
    pytest.param(("replicas: 3", "replicas: 0"), None, id="master-only-is-made"),
    pytest.param(('labels: {gang-scheduler.io/gang: "true"}', "labels: {}"), None, id="not-ours"),
    pytest.param(("          containers:", "          schedulerName: volcano\n          containers:"), None,
                 id="every-template-names-another-scheduler"),
    pytest.param(("PyTorchJob\nmetadata", "PyTorchJob\nstatus: {conditions: [{type: Succeeded, status: \"True\"}]}\n"
                                          "metadata"), None, id="finished"),
])
def test_pytorchjobs_not_made_into_pods(tmp_path: Path, change: tuple[str, str], note: str | None) -> None:
    assert change[0] in PYTORCHJOB
    sim = run(tmp_path, PYTORCHJOB.replace(*change))
    if change[1] == "replicas: 0":  # the master alone: one pod, the workers' PodGroup not made (no replica)
        assert [p.pod.metadata.name for p in sim.pods] == ["pt-master-0"]
        assert {g.key.name for g in sim.groups} == {"pt", "pt-master"}
        return
    assert sim.pods == [] and sim.groups == []
    assert job_notes(sim) == ([note] if note else [])


def test_a_pytorchjob_with_no_replica_or_a_pod_name_taken_is_named_not_made(tmp_path: Path) -> None:
    job = yaml.safe_load(PYTORCHJOB)
    del job["spec"]["pytorchReplicaSpecs"]["Master"]
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 0
    sim = run(tmp_path, dump(job))
    assert sim.pods == [] and job_notes(sim) == [NOT_MADE + "(nothing to run: no replica)"]
    squatter = """
apiVersion: v1
kind: Pod
metadata: {name: pt-worker-1, namespace: ml}
spec: {nodeName: n2, containers: [{name: c}]}
status: {phase: Running}
"""
    sim = run(tmp_path, PYTORCHJOB, squatter)
    assert sim.pods == [] and job_notes(sim) == [NOT_MADE + "(its pod pt-worker-1 exists already)"]


def test_a_pytorchjob_written_with_generate_name_is_invalid_and_says_so(tmp_path: Path) -> None:
    """The API server completes a generateName, but simulate does not for a PyTorchJob: the problem says that, not
    that the name is not a string."""
    job = yaml.safe_load(PYTORCHJOB)
    job["metadata"]["generateName"] = job["metadata"].pop("name") + "-"
    sim = run(tmp_path, dump(job))
    assert sim.pods == [] and [p.message for p in sim.problems] == [
        "metadata.generateName 'pt-' is not completed for a PyTorchJob: give it a metadata.name"]


def test_a_pytorchjob_larger_than_the_cap_is_named_not_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A gang is all its pods: one over the cap is not made smaller, it is not made."""
    monkeypatch.setattr(jobs, "MAX_PODS_PER_JOB", 3)
    sim = run(tmp_path, PYTORCHJOB)
    assert sim.pods == [] and sim.groups == []
    assert job_notes(sim) == [NOT_MADE + "(4 pods at once, more than simulate makes of one workload (3))"]


def test_a_pytorchjob_whose_pods_the_snapshot_holds_is_not_made_again(tmp_path: Path) -> None:
    pod = """
apiVersion: v1
kind: Pod
metadata: {name: pt-master-0, namespace: ml, labels: {training.kubeflow.org/job-name: pt}}
spec: {schedulerName: gang-scheduler, containers: [{name: pytorch, image: x}]}
"""
    sim = run(tmp_path, PYTORCHJOB, pod)
    assert [p.pod.metadata.name for p in sim.pods] == ["pt-master-0"] and job_notes(sim) == []


def dump(body: dict[str, Any]) -> str:
    """``body`` as a document for :func:`~tests.unit.offline.test_jobs.run`."""
    return "\n" + yaml.safe_dump(body)


def refused(job: str, edit: Any) -> str:
    body = yaml.safe_load(job)
    edit(body)
    return dump(body)


def _set(path: str, value: Any) -> Any:
    """An edit setting ``path`` (dot-separated keys) of a PyTorchJob body to ``value`` (None: delete it)."""
    def edit(body: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = body
        for key in parents:
            node = node[key]
        if value is None:
            del node[last]
        else:
            node[last] = copy.deepcopy(value)
    return edit


SPECS = "spec.pytorchReplicaSpecs"


@pytest.mark.parametrize(("edit", "why"), [
    pytest.param(_set("metadata.name", "PT"), "metadata.name must be a DNS-1035 label (lower-case letters, digits and "
                 "'-', starting with a letter)", id="name"),
    pytest.param(_set(SPECS, None), "spec.pytorchReplicaSpecs is required", id="no-replica-specs"),
    pytest.param(_set(f"{SPECS}.Chief", {"template": {"spec": {"containers": [{"name": "pytorch", "image": "x"}]}}}),
                 "spec.pytorchReplicaSpecs[Chief]: the replica type must be Master or Worker", id="replica-type"),
    pytest.param(_set(f"{SPECS}.worker", {}), "spec.pytorchReplicaSpecs has Worker twice (Worker and worker)",
                 id="type-twice"),
    pytest.param(_set(f"{SPECS}.Master.replicas", 2), "spec.pytorchReplicaSpecs[Master].replicas must be 1: a "
                 "PyTorchJob has one master", id="two-masters"),
    pytest.param(_set(f"{SPECS}.Worker.replicas", -1), "spec.pytorchReplicaSpecs[Worker].replicas must be a "
                 "non-negative integer (got -1)", id="negative-replicas"),
    pytest.param(_set(f"{SPECS}.Worker.replicas", "3"), "spec.pytorchReplicaSpecs[Worker].replicas must be a "
                 "non-negative integer (got '3')", id="replicas-a-string"),
    pytest.param(_set(f"{SPECS}.Worker.template.spec.containers", []), "spec.pytorchReplicaSpecs[Worker].template."
                 "spec.containers is required", id="no-containers"),
    pytest.param(_set(f"{SPECS}.Worker.template.spec.containers", [{"name": "pytorch"}]),
                 "spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].image is required", id="no-image"),
    pytest.param(_set(f"{SPECS}.Worker.template.spec.containers", [{"name": "main", "image": "x"}]),
                 "spec.pytorchReplicaSpecs[Worker].template.spec.containers must have a container named pytorch",
                 id="no-pytorch-container"),
    pytest.param(lambda body: (_set(f"{SPECS}.Worker", None)(body), _set("spec.elasticPolicy", {})(body)),
                 "spec.pytorchReplicaSpecs[Worker] is required with spec.elasticPolicy", id="elastic-without-worker"),
    pytest.param(_set("spec.runPolicy", {"managedBy": "example.com/mine"}), "spec.runPolicy.managedBy must be "
                 "kubeflow.org/training-operator or kueue.x-k8s.io/multikueue (got 'example.com/mine')",
                 id="managed-by"),
    pytest.param(_set("spec.runPolicy", {"suspend": "yes"}), "spec.runPolicy.suspend must be a boolean (got 'yes')",
                 id="suspend"),
])
def test_a_pytorchjob_the_api_server_would_refuse_is_invalid(tmp_path: Path, edit: Any, why: str) -> None:
    sim = run(tmp_path, refused(PYTORCHJOB, edit))
    assert sim.pods == [] and sim.groups == []
    assert [(p.kind, p.message) for p in sim.problems] == [("PyTorchJob", why)]


def test_the_snapshots_groups_are_used_and_what_is_not_honoured_is_said(tmp_path: Path) -> None:
    """A PodGroup of the operator's name in the snapshot is used (its minCount, not the operator's); the min-count
    annotation (not applied to a tree), ``elasticPolicy`` and ``runPolicy.schedulingPolicy`` are named in the note."""
    group = """
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: pt-worker, namespace: ml}
spec:
  schedulingPolicy: {gang: {minCount: 2}}
  parentCompositePodGroupName: pt
  workloadRef: {workloadName: pt, templateName: worker}
"""
    job = PYTORCHJOB.replace('labels: {gang-scheduler.io/gang: "true"}', 'labels: {gang-scheduler.io/gang: "true"}, '
                             'annotations: {gang-scheduler.io/min-count: "2"}')
    job = job.replace("spec:\n  pytorchReplicaSpecs:", "spec:\n  elasticPolicy: {minReplicas: 1, maxReplicas: 3}\n"
                      "  runPolicy: {schedulingPolicy: {minAvailable: 2}}\n  pytorchReplicaSpecs:")
    sim = run(tmp_path, job, group)
    assert {g.key.name: (g.policy, g.status) for g in sim.groups} == {
        "pt": ("gang minGroupCount 2", "Scheduled"), "pt-master": ("gang minCount 1", "Scheduled"),
        "pt-worker": ("gang minCount 2", "Scheduled")}
    assert job_notes(sim) == [
        TREE_NOTE + "; the snapshot's pt-worker used; annotation gang-scheduler.io/min-count='2' is not applied: this "
        "PyTorchJob is a tree of 3 groups, each with the minimum of its role; spec.elasticPolicy is not honoured: the "
        "operator's gang is every replica; spec.runPolicy.schedulingPolicy is not honoured: it sets up the training "
        "operator's own gang scheduling (Volcano, scheduler-plugins), which is not simulated"]


def test_a_template_naming_another_scheduler_is_left_to_it_and_the_tree_waits(tmp_path: Path) -> None:
    """As the operator's pod webhook leaves such a pod (with an admission warning): its PodGroup has no pod of ours,
    so the whole tree waits, as it would live."""
    job = PYTORCHJOB.replace("      restartPolicy: OnFailure\n      template:\n        spec:\n",
                             "      restartPolicy: OnFailure\n      template:\n        spec:\n"
                             "          schedulerName: volcano\n")
    sim = run(tmp_path, job)
    assert {g.key.name: g.status for g in sim.groups} == {"pt": "Waiting", "pt-master": "Waiting",
                                                           "pt-worker": "Waiting"}
    assert job_notes(sim) == [TREE_NOTE + "; pod pt-master-0: spec.schedulerName 'volcano' was set explicitly: not "
                                          "made part of gang pt-master"]
