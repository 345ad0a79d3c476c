"""The gang each workload kind is (``scheduler.groups.workloads``): groups, minimums, pod → group."""

from __future__ import annotations

import pytest

from scheduler.groups.workloads import (
    JOB,
    JOBSET,
    LEADERWORKERSET,
    PYTORCHJOB,
    GroupSpec,
    desired,
    pod_group,
)


def meta(name: str, **annotations: str) -> dict:
    return {"name": name, "namespace": "ml", "uid": "u1", "annotations": annotations}


def jobset(replicas: int = 2) -> dict:  # kubernetes-sigs/jobset docs/concepts example, two replicated jobs
    return {"metadata": meta("pytorch"), "spec": {"replicatedJobs": [
        {"name": "driver", "template": {"spec": {"parallelism": 1, "completions": 1, "template": {}}}},
        {"name": "workers", "replicas": replicas, "template": {"spec": {"parallelism": 4, "completions": 4,
                                                                          "template": {}}}}]}}


def pytorchjob() -> dict:  # kubeflow/training-operator v1 shape
    return {"metadata": meta("mnist"), "spec": {"pytorchReplicaSpecs": {
        "Master": {"replicas": 1, "template": {"spec": {}}}, "Worker": {"replicas": 3, "template": {"spec": {}}}}}}


def lws(replicas: int = 2, size: int = 4) -> dict:  # kubernetes-sigs/lws docs/examples/sample
    return {"metadata": meta("serve"), "spec": {"replicas": replicas, "leaderWorkerTemplate": {
        "size": size, "leaderTemplate": {"spec": {}}, "workerTemplate": {"spec": {}}}}}


@pytest.mark.parametrize(("spec", "pods"), [
    ({"parallelism": 3}, 3),
    ({}, 1),  # parallelism defaults to 1
    ({"parallelism": 8, "completions": 2}, 2),  # never more pods at once than completions
    ({"parallelism": 0}, 1),  # clamped to >= 1, as workloadbuilder clamps a gang's default minCount
    ({"parallelism": "3"}, 1),  # not a JSON integer: the default
])
def test_job_is_one_podgroup_of_its_parallel_pods(spec: dict, pods: int) -> None:
    assert desired(JOB, {"metadata": meta("train"), "spec": spec}, composite=True).groups == (
        GroupSpec("PodGroup", "train", pods),)


def test_min_count_annotation_overrides_a_single_group() -> None:
    body = {"metadata": meta("train", **{"gang-scheduler.io/min-count": "2"}), "spec": {"parallelism": 5}}
    assert desired(JOB, body, composite=True) == desired(JOB, body, composite=False)
    assert desired(JOB, body, composite=True).groups == (GroupSpec("PodGroup", "train", 2),)
    assert desired(JOB, body, composite=True).warnings == ()


@pytest.mark.parametrize(("value", "warning"), [
    ("0", "annotation gang-scheduler.io/min-count='0' is not applied: it must be at least 1"),
    ("two", "annotation gang-scheduler.io/min-count='two' is not applied: it must be a positive integer written with "
            "the digits 0-9"),
    ("²", "annotation gang-scheduler.io/min-count='²' is not applied: it must be a positive integer written with "
          "the digits 0-9"),
    ("٣", "annotation gang-scheduler.io/min-count='٣' is not applied: it must be a positive integer written with "
          "the digits 0-9"),
    (" 3", "annotation gang-scheduler.io/min-count=' 3' is not applied: it must be a positive integer written with "
           "the digits 0-9"),
    ("99999999999", "annotation gang-scheduler.io/min-count='99999999999' is not applied: it is more than "
                    "2147483647, the largest minCount the API server accepts (int32)"),
    ("2147483648", "annotation gang-scheduler.io/min-count='2147483648' is not applied: it is more than "
                   "2147483647, the largest minCount the API server accepts (int32)"),
    pytest.param("7" * 5000, "annotation gang-scheduler.io/min-count='77777777777777777777777… (5000 characters) is "
                 "not applied: it is more than 2147483647, the largest minCount the API server accepts (int32)",
                 id="5000-digits"),
    ("9", "annotation gang-scheduler.io/min-count='9' is more than the 5 pods the Job runs at once: "
          "the gang cannot be scheduled until that many pods exist"),
])
def test_a_min_count_annotation_that_cannot_be_honoured_as_asked_is_a_warning(value: str, warning: str) -> None:
    body = {"metadata": meta("train", **{"gang-scheduler.io/min-count": value}), "spec": {"parallelism": 5}}
    got = desired(JOB, body, composite=True)
    assert got.warnings == (warning,)
    assert got.groups[0].minimum == (9 if value == "9" else 5)


def test_jobset_is_a_composite_of_its_child_jobs() -> None:
    got = desired(JOBSET, jobset(), composite=True)
    assert got.groups == (
        GroupSpec("CompositePodGroup", "pytorch", 3, template="gang"),
        GroupSpec("PodGroup", "pytorch-driver-0", 1, parent="pytorch", template="driver"),
        GroupSpec("PodGroup", "pytorch-workers-0", 4, parent="pytorch", template="workers"),
        GroupSpec("PodGroup", "pytorch-workers-1", 4, parent="pytorch", template="workers"),
    )
    assert desired(JOBSET, jobset(), composite=False).groups == (GroupSpec("PodGroup", "pytorch", 9),)


def test_a_tree_ignores_the_min_count_annotation_with_a_warning() -> None:
    body = jobset()
    body["metadata"]["annotations"]["gang-scheduler.io/min-count"] = "2"
    got = desired(JOBSET, body, composite=True)
    assert got.groups == desired(JOBSET, jobset(), composite=True).groups
    assert got.warnings == ("annotation gang-scheduler.io/min-count='2' is not applied: this JobSet is a tree of "
                            "4 groups, each with the minimum of its role",)


def test_pytorchjob_is_master_and_workers() -> None:
    assert desired(PYTORCHJOB, pytorchjob(), composite=True).groups == (
        GroupSpec("CompositePodGroup", "mnist", 2, template="gang"),
        GroupSpec("PodGroup", "mnist-master", 1, parent="mnist", template="master"),
        GroupSpec("PodGroup", "mnist-worker", 3, parent="mnist", template="worker"),
    )
    assert desired(PYTORCHJOB, pytorchjob(), composite=False).groups == (GroupSpec("PodGroup", "mnist", 4),)


def test_leaderworkerset_is_one_gang_per_group() -> None:
    assert desired(LEADERWORKERSET, lws(), composite=True).groups == (
        GroupSpec("CompositePodGroup", "serve-0", 2, template="gang"),
        GroupSpec("PodGroup", "serve-0-leader", 1, parent="serve-0", template="leader"),
        GroupSpec("PodGroup", "serve-0-workers", 3, parent="serve-0", template="workers"),
        GroupSpec("CompositePodGroup", "serve-1", 2, template="gang"),
        GroupSpec("PodGroup", "serve-1-leader", 1, parent="serve-1", template="leader"),
        GroupSpec("PodGroup", "serve-1-workers", 3, parent="serve-1", template="workers"),
    )
    assert desired(LEADERWORKERSET, lws(replicas=1, size=1), composite=True).groups == (
        GroupSpec("CompositePodGroup", "serve-0", 1, template="gang"),
        GroupSpec("PodGroup", "serve-0-leader", 1, parent="serve-0", template="leader"))
    assert desired(LEADERWORKERSET, lws(), composite=False).groups == (
        GroupSpec("PodGroup", "serve-0", 4), GroupSpec("PodGroup", "serve-1", 4))


@pytest.mark.parametrize(("change", "why"), [
    ({"spec": {"startupPolicy": "LeaderReady"}},
     "startupPolicy LeaderReady: a group's workers are made once its leader is ready"),
    ({"metadata": {"annotations": {"leaderworkerset.sigs.k8s.io/exclusive-topology": "topology.kubernetes.io/zone"}}},
     "annotation leaderworkerset.sigs.k8s.io/exclusive-topology=topology.kubernetes.io/zone: a group's workers are "
     "made once its leader is scheduled, with a node selector for the leader's domain"),
])
def test_a_leaderworkerset_whose_workers_wait_for_their_leader_never_starts(change: dict, why: str) -> None:
    body = lws()
    for part, fields in change.items():
        body[part] = {**body[part], **fields}
    got = desired(LEADERWORKERSET, body, composite=True)
    assert got.groups == desired(LEADERWORKERSET, lws(), composite=True).groups  # made all the same
    assert got.never_starts == (
        f"no group of it can start: {why}, and its gang holds the leader until the workers exist; leave startupPolicy "
        "at LeaderCreated and the leaderworkerset.sigs.k8s.io/exclusive-topology annotation off, or do not label it "
        "gang-scheduler.io/gang")
    alone = lws(size=1)  # a group of one is its leader alone: nothing waits
    for part, fields in change.items():
        alone[part] = {**alone[part], **fields}
    assert desired(LEADERWORKERSET, alone, composite=True).never_starts is None
    assert desired(LEADERWORKERSET, lws(), composite=True).never_starts is None
    assert desired(LEADERWORKERSET, {**lws(), "spec": {**lws()["spec"], "startupPolicy": "LeaderCreated"}},
                   composite=False).never_starts is None


def test_a_leaderworkerset_whose_one_podgroup_its_leader_alone_meets_starts() -> None:
    """Where CompositePodGroups are not served, a LeaderWorkerSet of one group is one PodGroup and takes the
    min-count override: at 1 its leader alone meets the gang, is scheduled and made ready, and LWS then makes the
    workers, which join it: the group starts, so no GangNeverStarts. A minimum above 1 still never starts, and so
    does a tree (the override is not applied to it: its workers' PodGroup waits)."""
    body = lws(replicas=1)
    body["spec"]["startupPolicy"] = "LeaderReady"
    body["metadata"] = {**body["metadata"], "annotations": {"gang-scheduler.io/min-count": "1"}}
    assert desired(LEADERWORKERSET, body, composite=False).groups == (GroupSpec("PodGroup", "serve-0", 1),)
    assert desired(LEADERWORKERSET, body, composite=False).never_starts is None
    assert desired(LEADERWORKERSET, body, composite=True).never_starts is not None
    body["metadata"]["annotations"] = {"gang-scheduler.io/min-count": "2"}
    assert desired(LEADERWORKERSET, body, composite=False).never_starts is not None


def test_the_min_count_annotation_of_a_flat_leaderworkerset_of_several_groups_is_not_applied_and_says_why() -> None:
    body = lws()
    body["metadata"] = {**body["metadata"], "annotations": {"gang-scheduler.io/min-count": "2"}}
    assert desired(LEADERWORKERSET, body, composite=False).warnings == (
        "annotation gang-scheduler.io/min-count='2' is not applied: this LeaderWorkerSet is 2 gangs, one per group",)


def test_the_exclusive_topology_annotation_defers_the_workers_whatever_its_value() -> None:
    body = lws()
    body["metadata"] = {**body["metadata"], "annotations": {"leaderworkerset.sigs.k8s.io/exclusive-topology": ""}}
    assert desired(LEADERWORKERSET, body, composite=True).never_starts is not None


def test_templates_of_each_kind() -> None:
    assert len(list(JOB.templates({"spec": {"template": {}}}))) == 1
    assert len(list(JOBSET.templates(jobset()))) == 2
    assert len(list(PYTORCHJOB.templates(pytorchjob()))) == 2
    assert len(list(LEADERWORKERSET.templates(lws()))) == 2
    assert list(JOBSET.templates({"spec": {"replicatedJobs": "garbage"}})) == []


@pytest.mark.parametrize(("labels", "tree", "flat"), [
    ({"batch.kubernetes.io/job-name": "train"}, "train", "train"),
    ({"job-name": "old"}, "old", "old"),  # the legacy Job label
    ({"jobset.sigs.k8s.io/jobset-name": "pytorch", "batch.kubernetes.io/job-name": "pytorch-workers-1"},
     "pytorch-workers-1", "pytorch"),
    ({"training.kubeflow.org/job-name": "mnist", "training.kubeflow.org/replica-type": "Worker"},
     "mnist-worker", "mnist"),
    ({"leaderworkerset.sigs.k8s.io/name": "serve", "leaderworkerset.sigs.k8s.io/group-index": "1",
      "leaderworkerset.sigs.k8s.io/worker-index": "0"}, "serve-1-leader", "serve-1"),
    ({"leaderworkerset.sigs.k8s.io/name": "serve", "leaderworkerset.sigs.k8s.io/group-index": "1",
      "leaderworkerset.sigs.k8s.io/worker-index": "3"}, "serve-1-workers", "serve-1"),
    ({"leaderworkerset.sigs.k8s.io/name": "serve"}, None, None),
    ({"app": "web"}, None, None),
])
def test_pod_group_from_controller_labels(labels: dict, tree: str | None, flat: str | None) -> None:
    assert pod_group(labels, composite=True) == tree
    assert pod_group(labels, composite=False) == flat


def test_a_leader_not_yet_labelled_by_lws_is_read_from_its_name() -> None:
    labels = {"leaderworkerset.sigs.k8s.io/name": "serve", "leaderworkerset.sigs.k8s.io/worker-index": "0"}
    assert pod_group(labels, composite=True, name="serve-3") == "serve-3-leader"
    assert pod_group(labels, composite=False, name="serve-3") == "serve-3"
    assert pod_group(labels, composite=True, name="other-3") is None
    assert pod_group(labels, composite=True, name="serve-x") is None


def test_every_pod_group_name_is_a_group_the_workload_has() -> None:
    """The pod side and the handler side agree on names (else pods would wait for a group that never comes)."""
    for composite in (True, False):
        names = {g.name for g in desired(LEADERWORKERSET, lws(), composite).groups if g.kind == "PodGroup"}
        for g in range(2):
            for w in range(4):
                labels = {"leaderworkerset.sigs.k8s.io/name": "serve", "leaderworkerset.sigs.k8s.io/group-index":
                          str(g), "leaderworkerset.sigs.k8s.io/worker-index": str(w)}
                assert pod_group(labels, composite) in names
        names = {g.name for g in desired(JOBSET, jobset(), composite).groups if g.kind == "PodGroup"}
        assert pod_group({"jobset.sigs.k8s.io/jobset-name": "pytorch",
                          "batch.kubernetes.io/job-name": "pytorch-workers-1"}, composite) in names
        names = {g.name for g in desired(PYTORCHJOB, pytorchjob(), composite).groups if g.kind == "PodGroup"}
        for rtype in ("master", "Worker"):
            assert pod_group({"training.kubeflow.org/job-name": "mnist",
                              "training.kubeflow.org/replica-type": rtype}, composite) in names
