"""A Job, JobSet, PyTorchJob or LeaderWorkerSet given without its pods whose pods would not be ours is named in a note
(nothing is made of it, and the user learns why), unless a cluster dump would hold it so anyway: finished, suspended
(waiting for its queue), or with its pods in the snapshot."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.offline.report import notices
from tests.unit.offline.test_jobs import README_JOB, run
from tests.unit.offline.test_jobsets import JOBSET
from tests.unit.offline.test_leaderworkersets import LWS
from tests.unit.offline.test_pytorchjobs import PYTORCHJOB

OPT_IN = 'labels: {gang-scheduler.io/gang: "true"}'
WORKLOADS = [
    pytest.param(README_JOB, "Job gang-demo/train-job", "spec:\n  parallelism", "spec:\n  suspend: true\n  parallelism",
                 id="Job"),
    pytest.param(JOBSET, "JobSet ml/js", "spec:\n  replicatedJobs", "spec:\n  suspend: true\n  replicatedJobs",
                 id="JobSet"),
    pytest.param(PYTORCHJOB, "PyTorchJob ml/pt", "spec:\n  pytorchReplicaSpecs",
                 "spec:\n  runPolicy: {suspend: true}\n  pytorchReplicaSpecs", id="PyTorchJob"),
    pytest.param(LWS, "LeaderWorkerSet ml/llm", None, None, id="LeaderWorkerSet"),
]


def not_ours_notes(tmp_path: Path, *docs: str) -> list[str]:
    return [n.message for n in notices(run(tmp_path, *docs)) if n.kind == "workload-not-ours"]


@pytest.mark.parametrize(("workload", "ident", "spec", "suspended"), WORKLOADS)
def test_a_workload_not_ours_is_named_and_why_is_said(tmp_path: Path, workload: str, ident: str,
                                                      spec: str | None, suspended: str | None) -> None:
    assert OPT_IN in workload
    sim = run(tmp_path, workload.replace(OPT_IN, "labels: {}"))
    assert sim.pods == [] and sim.groups == []
    why = f"{ident} (not labelled gang-scheduler.io/gang and its pod templates name no scheduler)"
    assert sim.workloads_not_ours == [why]
    assert not_ours_notes(tmp_path, workload.replace(OPT_IN, "labels: {}")) == [
        f"1 workload(s) given without their pods are not ours, so none of their pods was made: {why}; to make one "
        'ours, set its pod templates\' schedulerName to "gang-scheduler", or label it gang-scheduler.io/gang: "true" '
        "with templates that name no scheduler"]


def test_a_labelled_job_whose_template_names_another_scheduler_is_told_so(tmp_path: Path) -> None:
    job = README_JOB.replace("    spec:\n      restartPolicy",
                             "    spec:\n      schedulerName: volcano\n      restartPolicy")
    assert job != README_JOB
    assert run(tmp_path, job).workloads_not_ours == [
        "Job gang-demo/train-job (labelled gang-scheduler.io/gang, but its pod templates name volcano)"]
    unlabelled = job.replace(OPT_IN, "labels: {}")
    assert run(tmp_path, unlabelled).workloads_not_ours == ["Job gang-demo/train-job (its pod templates name volcano)"]


@pytest.mark.parametrize(("workload", "ident", "spec", "suspended"), WORKLOADS)
def test_one_of_ours_or_a_suspended_one_is_not_named(tmp_path: Path, workload: str, ident: str,
                                                     spec: str | None, suspended: str | None) -> None:
    assert run(tmp_path, workload).workloads_not_ours == []
    if spec is not None and suspended is not None:
        assert spec in workload
        foreign_suspended = workload.replace(OPT_IN, "labels: {}").replace(spec, suspended)
        assert run(tmp_path, foreign_suspended).workloads_not_ours == []


def test_a_job_not_ours_whose_pods_are_in_the_snapshot_or_that_finished_is_not_named(tmp_path: Path) -> None:
    job = README_JOB.replace(OPT_IN, "labels: {}")
    pod = """
apiVersion: v1
kind: Pod
metadata: {name: train-job-abcde, namespace: gang-demo, labels: {batch.kubernetes.io/job-name: train-job}}
spec:
  containers: [{name: main, resources: {requests: {cpu: 100m}}}]
"""
    assert run(tmp_path, job, pod).workloads_not_ours == []
    done = job.replace("kind: Job\n", 'kind: Job\nstatus: {conditions: [{type: Complete, status: "True"}]}\n')
    assert done != job
    assert run(tmp_path, done).workloads_not_ours == []


@pytest.mark.parametrize(("workload", "change"), [
    pytest.param(README_JOB, ("spec:\n  parallelism", "spec:\n  managedBy: kueue.x-k8s.io/multikueue\n  parallelism"),
                 id="Job-managed-elsewhere"),
    pytest.param(JOBSET, ("spec:\n  replicatedJobs", "spec:\n  managedBy: kueue.x-k8s.io/multikueue\n  replicatedJobs"),
                 id="JobSet-managed-elsewhere"),
    pytest.param(PYTORCHJOB, ("spec:\n  pytorchReplicaSpecs",
                              "spec:\n  runPolicy: {managedBy: kueue.x-k8s.io/multikueue}\n  pytorchReplicaSpecs"),
                 id="PyTorchJob-managed-elsewhere"),
    pytest.param(LWS, ("replicas: 2", "replicas: 0"), id="LeaderWorkerSet-of-no-group"),
])
def test_one_not_ours_that_would_make_no_pod_anyway_is_not_named(tmp_path: Path, workload: str,
                                                                  change: tuple[str, str]) -> None:
    assert change[0] in workload
    assert run(tmp_path, workload.replace(OPT_IN, "labels: {}").replace(*change)).workloads_not_ours == []


@pytest.mark.parametrize(("workload", "change"), [
    pytest.param(README_JOB, ("parallelism: 4", "parallelism: 0"), id="Job-of-parallelism-0"),
    pytest.param(JOBSET, ("replicas: 2", "replicas: 0"), id="JobSet-of-no-replica"),
])
def test_one_not_ours_with_nothing_to_run_is_not_named(tmp_path: Path, workload: str, change: tuple[str, str]) -> None:
    """The docs' "unless … it has nothing to run" holds for every kind, not only a LeaderWorkerSet of no group."""
    if workload is JOBSET:  # its second Job runs a pod by default: none of it then
        workload = workload.replace("  - name: driver\n    template:",
                                    "  - name: driver\n    replicas: 0\n    template:")
    assert change[0] in workload
    assert run(tmp_path, workload.replace(OPT_IN, "labels: {}").replace(*change)).workloads_not_ours == []


def test_a_workload_some_of_whose_templates_name_no_scheduler_says_it_is_not_labelled(tmp_path: Path) -> None:
    """Labelling it would make the pods of its unnamed templates ours: the reason must not read as if every template
    named another scheduler."""
    mixed = PYTORCHJOB.replace(OPT_IN, "labels: {}").replace(
        "      restartPolicy: OnFailure\n      template:\n        spec:\n",
        "      restartPolicy: OnFailure\n      template:\n        spec:\n          schedulerName: volcano\n")
    assert "volcano" in mixed
    assert run(tmp_path, mixed).workloads_not_ours == [
        "PyTorchJob ml/pt (not labelled gang-scheduler.io/gang and its pod templates name volcano or no scheduler)"]


def test_a_template_naming_default_scheduler_is_told_as_written(tmp_path: Path) -> None:
    job = README_JOB.replace(OPT_IN, "labels: {}").replace(
        "    spec:\n      restartPolicy", "    spec:\n      schedulerName: default-scheduler\n      restartPolicy")
    assert "default-scheduler" in job
    assert run(tmp_path, job).workloads_not_ours == [
        "Job gang-demo/train-job (not labelled gang-scheduler.io/gang and its pod templates name default-scheduler)"]
    assert run(tmp_path, job.replace("labels: {}", OPT_IN)).workloads_not_ours == []  # the webhook takes it as unset
