"""A Job given to ``simulate`` is scheduled as the pods and PodGroup the cluster would make of it
(``scheduler.offline.jobs``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from scheduler.framework.plan import SolverConfig
from scheduler.offline import jobs
from scheduler.offline.jobs import generated_name
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
                 "1 workload(s) of ours not made into pods: Job gang-demo/train-job (suspended)",
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
    assert job_notes(sim) == []  # what a dump holds: nothing to say


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


def test_generated_names_never_repeat_and_avoid_the_names_taken() -> None:
    first = next(iter(generated_name("train-", "uid-1", lambda _: False)))
    names = list(generated_name("train-", "uid-1", lambda name: name == first, 20_000))
    assert len(set(names)) == 20_000 and first not in names
    assert names == list(generated_name("train-", "uid-1", lambda name: name == first, 20_000))  # every run


def test_a_job_larger_than_the_cap_is_simulated_with_the_cap_without_a_group_and_not_made_in_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobs, "MAX_PODS_PER_JOB", 3)
    huge = README_JOB.replace("parallelism: 4\n  completions: 4", "parallelism: 1000000000")
    sim = run(tmp_path, huge.replace(
        'labels: {gang-scheduler.io/gang: "true"}', "labels: {}").replace(
        "    spec:\n      restartPolicy", "    spec:\n      schedulerName: gang-scheduler\n      restartPolicy"))
    assert len(sim.pods) == 3
    assert job_notes(sim) == [
        "batch/v1 Job gang-demo/train-job: 3 of its 1000000000 pods (at most 3) made from its template, as the Job "
        "controller would, without a group"]
    gang = run(tmp_path, huge)  # its gang is judged on all its pods: none is made rather than some left waiting
    assert gang.pods == [] and gang.groups == []
    assert job_notes(gang) == ["1 workload(s) of ours not made into pods: Job gang-demo/train-job (1000000000 pods at "
                               "once, more than simulate makes of one workload (3))"]


@pytest.mark.parametrize(("old", "new", "problem"), [
    ("name: train-job,", "name: [a],", "Job gang-demo/?: metadata.name (or generateName) and namespace must be "
                                       "strings"),
    ("parallelism: 4", 'parallelism: "4"', "Job gang-demo/train-job: spec.parallelism must be a non-negative "
                                           "integer of at most 2147483647 (got '4')"),
    ("completions: 4", "completions: -3", "Job gang-demo/train-job: spec.completions must be a non-negative "
                                          "integer of at most 2147483647 (got -3)"),
    ("  template:\n    spec:\n      restartPolicy: Never\n      containers:", "  other:\n    spec:\n      containers:",
     "Job gang-demo/train-job: spec.template.spec.containers is required"),
])
def test_a_job_the_api_server_would_refuse_is_an_invalid_object(tmp_path: Path, old: str, new: str,
                                                                problem: str) -> None:
    assert old in README_JOB
    sim = run(tmp_path, README_JOB.replace(old, new))
    assert sim.pods == [] and [str(p).split(": ", 1)[1] for p in sim.problems] == [problem]


def test_finished_and_externally_managed_jobs_make_no_pods(tmp_path: Path) -> None:
    finished = README_JOB + "status: {succeeded: 4, conditions: [{type: Complete, status: \"True\"}]}\n"
    managed = README_JOB.replace("name: train-job", "name: remote").replace(
        "spec:\n  parallelism", "spec:\n  managedBy: kueue.x-k8s.io/multikueue\n  parallelism")
    sim = run(tmp_path, finished, managed)
    assert sim.pods == []
    assert job_notes(sim) == ["1 workload(s) of ours not made into pods: Job gang-demo/remote (managed by "
                              "kueue.x-k8s.io/multikueue)"]


def test_succeeded_pods_count_as_completions_and_do_not_stop_the_rest(tmp_path: Path) -> None:
    """A Job with 1 of 4 completions done and its pod gone: 3 pods are made; a finished pod of the same name label
    from another Job uid does not count as this Job's."""
    job = README_JOB.replace("gang-scheduler.io/gang: \"true\"}", "gang-scheduler.io/gang: \"true\"}, uid: u1") + \
        "status: {succeeded: 1}\n"
    old = """
apiVersion: v1
kind: Pod
metadata: {name: train-job-old, namespace: gang-demo, labels: {batch.kubernetes.io/job-name: train-job,
           batch.kubernetes.io/controller-uid: u0}}
spec:
  schedulerName: gang-scheduler
  containers: [{name: main}]
status: {phase: Running}
"""
    sim = run(tmp_path, job, old)
    made = [p for p in sim.pods if p.pod.metadata.name != "train-job-old"]
    assert len(made) == 3
    assert job_notes(sim)[0].startswith("batch/v1 Job gang-demo/train-job: 3 pod(s) made")


def test_a_job_defined_twice_differently_is_reported_and_the_first_kept(tmp_path: Path) -> None:
    sim = run(tmp_path, README_JOB, README_JOB.replace("parallelism: 4", "parallelism: 2"))
    assert len(sim.pods) == 4
    assert [str(p).split(": ", 1)[1] for p in sim.problems] == [
        "Job gang-demo/train-job: defined again with different content; the first is kept"]
    assert run(tmp_path, README_JOB, README_JOB).problems == []


def test_a_job_with_generate_name_is_named_as_the_api_server_would(tmp_path: Path) -> None:
    sim = run(tmp_path, README_JOB.replace("name: train-job,", "generateName: train-,"))
    (group,) = sim.groups
    assert group.key.name.startswith("train-") and len(group.key.name) == len("train-") + 5
    assert len(group.placements) == 4


def test_the_templates_own_group_wins_over_spec_scheduling(tmp_path: Path) -> None:
    job = README_JOB.replace("labels: {gang-scheduler.io/gang: \"true\"}", "labels: {}").replace(
        "spec:\n  parallelism", "spec:\n  scheduling: {schedulingPolicy: {gang: {}}}\n  parallelism").replace(
        "    spec:\n      restartPolicy",
        "    spec:\n      schedulerName: gang-scheduler\n      schedulingGroup: {podGroupName: mine}\n"
        "      restartPolicy")
    group = """
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: mine, namespace: gang-demo}
spec: {schedulingPolicy: {gang: {minCount: 4}}}
"""
    sim = run(tmp_path, job, group)
    assert [(g.key.name, g.status, len(g.placements)) for g in sim.groups] == [("mine", "Scheduled", 4)]


def test_a_generated_pod_name_never_takes_the_name_of_a_pod_in_the_snapshot(tmp_path: Path) -> None:
    first = run(tmp_path, README_JOB).pods[0].pod.metadata.name
    squatter = f"""
apiVersion: v1
kind: Pod
metadata: {{name: {first}, namespace: gang-demo}}
spec:
  nodeName: n2
  containers: [{{name: c}}]
status: {{phase: Running}}
"""
    sim = run(tmp_path, squatter, README_JOB)
    assert sim.problems == [] and len(sim.pods) == 4 and first not in {p.pod.metadata.name for p in sim.pods}


def test_a_job_written_without_its_uid_owns_the_running_pods_of_its_name(tmp_path: Path) -> None:
    """A manifest has no uid; its running pod (from a dump) carries the real one: the Job is not made again."""
    running = """
apiVersion: v1
kind: Pod
metadata: {name: train-job-abcde, namespace: gang-demo, labels: {batch.kubernetes.io/job-name: train-job,
           batch.kubernetes.io/controller-uid: 1234-real}}
spec:
  nodeName: n1
  containers: [{name: main, resources: {requests: {cpu: 100m}}}]
status: {phase: Running}
"""
    sim = run(tmp_path, README_JOB, running)
    assert sim.pods == [] and job_notes(sim) == []


@pytest.mark.parametrize(("old", "new", "status"), [
    pytest.param("parallelism: 4\n  completions: 4", "parallelism: 0", "", id="parallelism-0"),
    pytest.param("completions: 4", "completions: 2", "status: {succeeded: 5}\n", id="every-completion-done"),
])
def test_a_job_with_nothing_left_to_run_makes_no_pods_nor_group(tmp_path: Path, old: str, new: str,
                                                                status: str) -> None:
    sim = run(tmp_path, README_JOB.replace(old, new) + status)
    assert sim.pods == [] and sim.groups == []
    assert job_notes(sim) == ["1 workload(s) of ours not made into pods: Job gang-demo/train-job (nothing to run: "
                              "parallelism 0, or every completion done)"]


@pytest.mark.parametrize(("old", "new", "problem"), [
    ("parallelism: 4\n  completions: 4", "parallelism: 3000000000",
     "spec.parallelism must be a non-negative integer of at most 2147483647 (got 3000000000)"),
    ("parallelism: 4\n  completions: 4", "parallelism: 4\n  completionMode: Indexed",
     "spec.completions is required when completionMode is Indexed"),
    ("parallelism: 4", "parallelism: 4\n  scheduling: x", "spec.scheduling must be an object"),
])
def test_job_fields_the_api_server_refuses_make_the_job_invalid(tmp_path: Path, old: str, new: str,
                                                               problem: str) -> None:
    sim = run(tmp_path, README_JOB.replace(old, new))
    assert sim.pods == [] and [p.message for p in sim.problems] == [problem]


def test_generate_name_jobs_sharing_a_uid_still_get_names_of_their_own(tmp_path: Path) -> None:
    job = README_JOB.replace("name: train-job,", "generateName: train-, uid: same,")
    sim = run(tmp_path, job, job.replace("completions: 4", "completions: 2").replace("parallelism: 4",
                                                                                      "parallelism: 2"))
    assert sorted(len(g.placements) for g in sim.groups) == [2, 4]
    assert len({g.key.name for g in sim.groups}) == 2


