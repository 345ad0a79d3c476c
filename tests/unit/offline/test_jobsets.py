"""A JobSet given to ``simulate`` is scheduled as the Jobs, pods and groups the cluster would make of it
(``scheduler.offline.jobsets``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.offline.report import notices
from tests.unit.offline.test_jobs import job_notes, run

JOBSET = """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, namespace: ml, labels: {gang-scheduler.io/gang: "true"}}
spec:
  replicatedJobs:
  - name: workers
    replicas: 2
    template:
      spec:
        parallelism: 2
        completions: 2
        template:
          spec:
            restartPolicy: Never
            containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
  - name: driver
    template:
      spec:
        template:
          spec:
            restartPolicy: Never
            containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""


def test_a_labelled_jobset_is_made_into_its_jobs_pods_and_the_operators_tree(tmp_path: Path) -> None:
    sim = run(tmp_path, JOBSET)
    groups = {g.key.name: (g.key.kind, g.status, g.policy) for g in sim.groups}
    assert groups == {"js": ("CompositePodGroup", "Scheduled", "gang minGroupCount 3"),
                      "js-workers-0": ("PodGroup", "Scheduled", "gang minCount 2"),
                      "js-workers-1": ("PodGroup", "Scheduled", "gang minCount 2"),
                      "js-driver-0": ("PodGroup", "Scheduled", "gang minCount 1")}
    pods = {p.pod.metadata.name: p for p in sim.pods}
    assert len(pods) == 5 and all(p.node in ("n1", "n2") for p in pods.values())
    for name, placed in pods.items():
        labels = placed.pod.metadata.labels
        job = labels["batch.kubernetes.io/job-name"]
        index = labels["batch.kubernetes.io/job-completion-index"]  # Indexed: the JobSet webhook's default
        assert name.startswith(f"{job}-{index}-")
        assert labels["jobset.sigs.k8s.io/jobset-name"] == "js"
        assert labels["jobset.sigs.k8s.io/replicatedjob-name"] == job.split("-")[1]
        assert placed.pod.spec.scheduler_name == "gang-scheduler"
        assert placed.pod.spec.scheduling_group is not None
        assert placed.pod.spec.scheduling_group.pod_group_name == job
    assert job_notes(sim) == [
        "jobset.x-k8s.io/v1alpha2 JobSet ml/js: 5 pod(s) of 3 Job(s) made as the JobSet and Job controllers would, "
        "in CompositePodGroup js over 3 PodGroup(s), one per Job, as the operator makes them for "
        "gang-scheduler.io/gang"]
    assert [p.pod.metadata.name for p in run(tmp_path, JOBSET).pods] == [p.pod.metadata.name for p in sim.pods]


def test_a_jobset_too_large_for_the_cluster_places_none_of_its_pods(tmp_path: Path) -> None:
    sim = run(tmp_path, JOBSET.replace('cpu: "1"', 'cpu: "2"', 1).replace("replicas: 2", "replicas: 3"))
    assert {g.key.name: g.status for g in sim.groups}["js"] != "Scheduled"
    assert all(p.node is None for p in sim.pods) and len(sim.pods) == 7


def test_a_jobset_naming_our_scheduler_without_the_label_makes_lone_pods(tmp_path: Path) -> None:
    jobset = JOBSET.replace('labels: {gang-scheduler.io/gang: "true"}', "labels: {}").replace(
        "restartPolicy: Never", "restartPolicy: Never\n            schedulerName: gang-scheduler")
    sim = run(tmp_path, jobset)
    assert sim.groups == [] and len(sim.pods) == 5 and all(p.pod.spec.scheduling_group is None for p in sim.pods)
    assert job_notes(sim)[0].endswith("made as the JobSet and Job controllers would, from each Job's template")


@pytest.mark.parametrize(("change", "note"), [
    pytest.param(("spec:\n  replicatedJobs:", "spec:\n  suspend: true\n  replicatedJobs:"),
                 "1 workload(s) of ours not made into pods: JobSet ml/js (suspended)", id="suspended"),
    pytest.param(("spec:\n  replicatedJobs:", "spec:\n  managedBy: kueue.x-k8s.io/multikueue\n  replicatedJobs:"),
                 "1 workload(s) of ours not made into pods: JobSet ml/js (managed by "
                 "kueue.x-k8s.io/multikueue)", id="managed-elsewhere"),
    pytest.param(("replicas: 2", "replicas: 2147483647"), "1 workload(s) of ours not made into pods: "
                 "JobSet ml/js (4294967295 pods at once, more than simulate makes of one workload (10000))",
                 id="too-many-pods"),
    pytest.param(('labels: {gang-scheduler.io/gang: "true"}', "labels: {}"), None, id="not-ours"),
    pytest.param(("JobSet\nmetadata", "JobSet\nstatus: {terminalState: Completed}\nmetadata"), None, id="finished"),
])
def test_jobsets_not_made_into_pods(tmp_path: Path, change: tuple[str, str], note: str | None) -> None:
    sim = run(tmp_path, JOBSET.replace(*change))
    assert sim.pods == [] and sim.groups == []
    assert job_notes(sim) == ([note] if note else [])


def test_a_jobset_whose_pods_the_snapshot_holds_is_not_made_again(tmp_path: Path) -> None:
    pod = """
    apiVersion: v1
    kind: Pod
    metadata: {name: js-workers-0-0-abcde, namespace: ml, labels: {jobset.sigs.k8s.io/jobset-name: js}}
    spec: {schedulerName: gang-scheduler, containers: [{name: c, image: x}]}
    """
    sim = run(tmp_path, JOBSET, pod)
    assert [p.pod.metadata.name for p in sim.pods] == ["js-workers-0-0-abcde"] and job_notes(sim) == []


@pytest.mark.parametrize(("change", "why"), [
    pytest.param(("  replicatedJobs:\n  - name: workers", "  replicatedJobs: []\n  x:\n  - name: workers"),
                 "spec.replicatedJobs must be a non-empty list of objects", id="no-replicated-jobs"),
    pytest.param(("  - name: driver", "  - name: workers"), "each of spec.replicatedJobs needs a name of its own",
                 id="same-name-twice"),
    pytest.param(("replicas: 2", "replicas: -1"), "spec.replicatedJobs[workers].replicas must be a non-negative "
                 "integer (got -1)", id="negative-replicas"),
])
def test_a_jobset_the_api_server_would_refuse_is_invalid(tmp_path: Path, change: tuple[str, str], why: str) -> None:
    sim = run(tmp_path, JOBSET.replace(*change))
    assert sim.pods == []
    assert [(p.kind, p.name, p.message) for p in sim.problems] == [("JobSet", "js", why)]


JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: js-driver-0, namespace: ml}
spec: {template: {spec: {schedulerName: gang-scheduler, containers: [{name: c, image: x}]}}}
"""
COMPOSITE = """
apiVersion: scheduling.k8s.io/v1alpha3
kind: CompositePodGroup
metadata: {name: js, namespace: ml}
spec:
  schedulingPolicy: {gang: {minGroupCount: 3}}
  workloadRef: {workloadName: js, templateName: gang}
"""


def test_what_the_jobset_controller_overrides_and_what_the_snapshot_holds(tmp_path: Path) -> None:
    """A template's own ``suspend`` gives way to the JobSet's; a CompositePodGroup of the JobSet's name in the
    snapshot is used, and the note says so, with the operator's warning for a min-count it does not apply."""
    jobset = JOBSET.replace("        parallelism: 2\n", "        suspend: true\n        parallelism: 2\n").replace(
        'labels: {gang-scheduler.io/gang: "true"}',
        'labels: {gang-scheduler.io/gang: "true"}, annotations: {gang-scheduler.io/min-count: "2"}')
    sim = run(tmp_path, jobset, COMPOSITE)
    assert len(sim.pods) == 5 and all(p.node is not None for p in sim.pods) and sim.problems == []
    (note,) = job_notes(sim)
    assert note.endswith("one per Job, as the operator makes them for gang-scheduler.io/gang; the snapshot's js used; "
                         "annotation gang-scheduler.io/min-count='2' is not applied: this JobSet is a tree of 4 "
                         "groups, each with the minimum of its role")


def test_a_jobset_whose_job_name_is_taken_or_whose_jobs_make_their_own_groups_is_named_not_made(
        tmp_path: Path) -> None:
    sim = run(tmp_path, JOBSET, JOB)
    assert {p.pod.metadata.labels["batch.kubernetes.io/job-name"] for p in sim.pods} == {"js-driver-0"}
    assert job_notes(sim)[-1] == ("1 workload(s) of ours not made into pods: JobSet ml/js (its Job "
                                  "js-driver-0 exists already)")
    scheduling = JOBSET.replace("        parallelism: 2\n", "        scheduling: {}\n        parallelism: 2\n")
    sim = run(tmp_path, scheduling)
    assert sim.pods == [] and job_notes(sim) == [
        "1 workload(s) of ours not made into pods: JobSet ml/js (its Job js-workers-0 sets spec.scheduling: "
        "its pods would join the Job controller's PodGroup, and the operator's tree would wait for them)"]


JOBSET_V1ALPHA1 = JOBSET.replace("jobset.x-k8s.io/v1alpha2", "jobset.x-k8s.io/v1alpha1")
PYTORCHJOB_V1BETA2 = """
apiVersion: kubeflow.org/v1beta2
kind: PyTorchJob
metadata: {name: pt, namespace: ml}
spec: {pytorchReplicaSpecs: {}}
"""
JOBSET_POD = """
apiVersion: v1
kind: Pod
metadata: {name: js-workers-0-0-abcde, namespace: ml, labels: {jobset.sigs.k8s.io/jobset-name: js}}
spec: {schedulerName: gang-scheduler, containers: [{name: c, image: x}]}
"""


def test_workloads_the_operator_knows_but_simulate_does_not_expand_are_named_not_skipped(tmp_path: Path) -> None:
    """A JobSet or PyTorchJob of another version than the one simulate expands (v1alpha2, v1) given alone makes no
    pod here: a note says so and names it, rather than skipping it like a kind the scheduler has nothing to do with. One
    given twice is named once; one whose pods the snapshot holds is not named."""
    sim = run(tmp_path, JOBSET_V1ALPHA1, PYTORCHJOB_V1BETA2)
    assert sim.pods == []
    (note,) = [n for n in notices(sim) if n.kind == "workload-not-expanded"]
    assert note.level == "note" and note.message == (
        "2 workload(s) not made into pods, as simulate makes the pods of batch/v1 Jobs, jobset.x-k8s.io/v1alpha2 "
        "JobSets, kubeflow.org/v1 PyTorchJobs and leaderworkerset.x-k8s.io/v1 LeaderWorkerSets only: "
        "jobset.x-k8s.io/v1alpha1 JobSet ml/js, kubeflow.org/v1beta2 PyTorchJob ml/pt; give the pods (and groups) "
        "their controllers would make")
    assert run(tmp_path, JOBSET_V1ALPHA1, JOBSET_V1ALPHA1.replace("image: x", "image: y")).unexpanded == [
        "jobset.x-k8s.io/v1alpha1 JobSet ml/js"]
    with_pods = run(tmp_path, JOBSET_V1ALPHA1, JOBSET_POD, PYTORCHJOB_V1BETA2)
    assert with_pods.unexpanded == ["kubeflow.org/v1beta2 PyTorchJob ml/pt"]
