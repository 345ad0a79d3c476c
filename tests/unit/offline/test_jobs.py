"""A Job given to ``simulate`` is scheduled as the pods and PodGroup the cluster would make of it
(``scheduler.offline.jobs``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from scheduler.framework.plan import SolverConfig
from scheduler.offline.loader import load
from scheduler.offline.report import notices
from scheduler.offline.simulate import Simulation, simulate

NODES = """
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {topology.kubernetes.io/zone: a}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {topology.kubernetes.io/zone: b}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
"""

README_JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: train-job, namespace: gang-demo, labels: {gang-scheduler.io/gang: "true"}}
spec:
  parallelism: 4
  completions: 4
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: registry.k8s.io/pause:3.10, resources: {requests: {cpu: 100m}}}]
"""


def run(tmp_path: Path, *docs: str) -> Simulation:
    path = tmp_path / "snap.yaml"
    path.write_text("---".join(textwrap.dedent(d) for d in (NODES, *docs)))
    return simulate(load([path]), "gang-scheduler", SolverConfig())


def job_notes(sim: Simulation) -> list[str]:
    return [n.message for n in notices(sim) if n.kind == "job-expanded"]


def test_the_readme_job_is_made_into_its_operator_gang_and_placed_whole(tmp_path: Path) -> None:
    sim = run(tmp_path, README_JOB)
    (group,) = sim.groups
    assert (group.key.kind, group.key.name, group.status, group.policy) == (
        "PodGroup", "train-job", "Scheduled", "gang minCount 4")
    assert len(group.placements) == 4 and all(name.startswith("train-job-") for name in group.placements)
    assert all(p.node in ("n1", "n2") for p in sim.pods)
    assert {p.pod.metadata.labels["batch.kubernetes.io/job-name"] for p in sim.pods} == {"train-job"}
    assert job_notes(sim) == [
        "batch/v1 Job gang-demo/train-job: 4 pod(s) made from its template, as the Job controller would, in PodGroup "
        "train-job (gang minCount 4, as the operator makes it for gang-scheduler.io/gang)"]
    assert [p.pod.metadata.name for p in run(tmp_path, README_JOB).pods] == [p.pod.metadata.name for p in sim.pods]


def test_a_gang_job_that_cannot_fit_places_none_of_its_pods(tmp_path: Path) -> None:
    sim = run(tmp_path, README_JOB.replace("cpu: 100m", 'cpu: "3"'))
    (group,) = sim.groups
    assert group.status == "Unschedulable" and not group.placements
    assert [p.node for p in sim.pods] == [None] * 4


def test_an_indexed_job_with_spec_scheduling_gets_the_job_controllers_podgroup(tmp_path: Path) -> None:
    """KEP-5547: the policy, the topology constraint and the disruption mode come from ``spec.scheduling``; a
    gang without ``minCount`` takes ``parallelism``; Indexed pods carry their completion index."""
    job = """
apiVersion: batch/v1
kind: Job
metadata: {name: pretrain, namespace: ml}
spec:
  parallelism: 3
  completionMode: Indexed
  completions: 3
  scheduling:
    schedulingPolicy: {gang: {}}
    schedulingConstraints: {topology: [{key: topology.kubernetes.io/zone}]}
    disruptionMode: {all: {}}
  template:
    spec:
      schedulerName: gang-scheduler
      restartPolicy: Never
      containers: [{name: c, resources: {requests: {cpu: "1"}}}]
"""
    sim = run(tmp_path, job)
    (group,) = sim.groups
    assert (group.key.name, group.status, group.policy) == ("pretrain", "Scheduled", "gang minCount 3")
    assert len(set(group.placements.values())) == 1  # one zone, and each zone has one node
    indices = sorted(p.pod.metadata.labels["batch.kubernetes.io/job-completion-index"] for p in sim.pods)
    assert indices == ["0", "1", "2"]
    index = "batch.kubernetes.io/job-completion-index"
    assert all(p.pod.metadata.name.startswith(f"pretrain-{p.pod.metadata.labels[index]}-") for p in sim.pods)
    assert job_notes(sim) == ["batch/v1 Job ml/pretrain: 3 pod(s) made from its template, as the Job controller "
                              "would, in PodGroup pretrain (from spec.scheduling, as the Job controller makes it)"]


@pytest.mark.parametrize(("change", "note"), [
    pytest.param({"spec:\n  parallelism: 4": "spec:\n  suspend: true\n  parallelism: 4"},
                 "batch/v1 Job gang-demo/train-job is suspended (spec.suspend): no pod is made until it is resumed",
                 id="suspended"),
    pytest.param({"labels: {gang-scheduler.io/gang: \"true\"}": "labels: {}"}, None, id="not-ours"),
    pytest.param({"    spec:\n      restartPolicy": "    spec:\n      schedulerName: volcano\n      restartPolicy"},
                 None, id="another-scheduler-named-in-the-template"),
])
def test_jobs_whose_pods_would_not_be_scheduled_make_none(tmp_path: Path, change: dict[str, str],
                                                         note: str | None) -> None:
    job = README_JOB
    for old, new in change.items():
        assert old in job
        job = job.replace(old, new)
    sim = run(tmp_path, job)
    assert sim.pods == [] and sim.groups == []
    assert job_notes(sim) == ([note] if note else [])


def test_a_job_whose_pods_are_in_the_snapshot_is_not_made_again(tmp_path: Path) -> None:
    """The snapshot's pods of the Job (by their ``batch.kubernetes.io/job-name``) are the Job's: nothing is added."""
    pod = """
apiVersion: v1
kind: Pod
metadata: {name: train-job-abcde, namespace: gang-demo, labels: {batch.kubernetes.io/job-name: train-job}}
spec:
  schedulerName: gang-scheduler
  containers: [{name: main, resources: {requests: {cpu: 100m}}}]
"""
    sim = run(tmp_path, README_JOB, pod)
    assert [p.pod.metadata.name for p in sim.pods] == ["train-job-abcde"]
    assert job_notes(sim) == []


def test_the_templates_own_group_and_an_existing_podgroup_are_used(tmp_path: Path) -> None:
    group = """
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: train-job, namespace: gang-demo}
spec: {schedulingPolicy: {gang: {minCount: 2}}}
"""
    sim = run(tmp_path, README_JOB, group)
    (only,) = sim.groups
    assert (only.key.name, only.policy, len(only.placements)) == ("train-job", "gang minCount 2", 4)
    assert job_notes(sim)[0].endswith("; the snapshot's PodGroup of that name is used")
    own = README_JOB.replace("labels: {gang-scheduler.io/gang: \"true\"}", "labels: {}").replace(
        "    spec:\n      restartPolicy",
        "    spec:\n      schedulerName: gang-scheduler\n      schedulingGroup: {podGroupName: mine}\n"
        "      restartPolicy")
    sim = run(tmp_path, own, group.replace("name: train-job", "name: mine"))
    assert [(g.key.name, len(g.placements)) for g in sim.groups] == [("mine", 4)]
    assert job_notes(sim) == ["batch/v1 Job gang-demo/train-job: 4 pod(s) made from its template, as the Job "
                              "controller would, in PodGroup mine (the template's schedulingGroup)"]


def test_a_min_count_annotation_the_operator_refuses_is_said_in_the_note(tmp_path: Path) -> None:
    job = README_JOB.replace("labels: {gang", 'annotations: {gang-scheduler.io/min-count: "0"}, labels: {gang')
    sim = run(tmp_path, job)
    assert sim.groups[0].policy == "gang minCount 4"
    assert job_notes(sim)[0].endswith("gang-scheduler.io/gang); annotation gang-scheduler.io/min-count='0' is not "
                                      "applied: it must be at least 1")
