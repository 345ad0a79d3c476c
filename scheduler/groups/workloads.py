"""The workload kinds the operator knows, and the gang each one is: the labels a user and the kinds' controllers
set, the groups it needs, the pod templates that get the opt-in label, and the group a pod of it belongs to.
Read by the operator, and by ``simulate`` for the workloads it makes into pods (:mod:`scheduler.offline.jobs`,
``jobsets``, ``pytorchjobs``, ``leaderworkersets``).

Shapes (the fields read here, nothing else):

* **Job** (``batch/v1``): ``spec.parallelism`` (default 1), ``spec.completions``,
  ``spec.template``. The Job controller runs ``min(parallelism, completions − succeeded)`` pods at
  once, so the gang is ``min(parallelism, completions)`` pods (clamped to ≥ 1, as the v1.37
  component-helpers ``workloadbuilder`` clamps a gang's default minCount, KEP-5547).
* **JobSet** (``jobset.x-k8s.io/v1alpha2``, kubernetes-sigs/jobset ``api/jobset/v1alpha2``):
  ``spec.replicatedJobs[] {name, replicas (default 1), template: JobTemplateSpec}``; child Jobs are
  ``<jobset>-<replicatedJob>-<index>`` (the ``ReplicatedJob.replicas`` doc).
* **PyTorchJob** (``kubeflow.org/v1``, kubeflow/training-operator ``pkg/apis/kubeflow.org/v1``):
  ``spec.pytorchReplicaSpecs {Master, Worker: {replicas (default 1), template}}``.
* **LeaderWorkerSet** (``leaderworkerset.x-k8s.io/v1``, kubernetes-sigs/lws ``api/leaderworkerset/v1``):
  ``spec.replicas`` (default 1) groups of ``spec.leaderWorkerTemplate.size`` (default 1) pods: one
  leader (``leaderTemplate``, else ``workerTemplate``) and ``size − 1`` workers. Each group is a
  gang of its own (a replica of a served model).

Where CompositePodGroups are served, a multi-role workload is a tree: a CompositePodGroup whose
children are one PodGroup per role replica (JobSet child Job, PyTorchJob replica type, LWS
leader / workers), all required together (``gang.minGroupCount`` = the number of children).
Elsewhere it is one PodGroup holding every pod, which is all-or-nothing just the same.
No I/O; never raises on a malformed workload (a missing or mistyped count reads as its default).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from scheduler.model.base import INT32_MAX

JSON = dict[str, Any]

# -- what a user sets on a workload --------------------------------------------------------------------------
OPT_IN = "gang-scheduler.io/gang"
"""Label, value ``"true"``: on a workload, make it a gang; on a pod (from its template), mutate it."""
OPT_IN_VALUE = "true"
MIN_COUNT = "gang-scheduler.io/min-count"
"""Annotation on a single-group workload: the gang's minCount (a positive integer), instead of the pod count."""

# -- what the controllers put on their pods ------------------------------------------------------------------
JOB_NAME = "batch.kubernetes.io/job-name"
"""Job controller (kubernetes ``pkg/controller/job``, since v1.27; the legacy ``job-name`` label is also set)."""
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
"""JobSet controller (kubernetes-sigs/jobset): on child Jobs and their pods; child Jobs are
``<jobset>-<replicatedJob>-<index>`` (``ReplicatedJob.replicas`` doc), so a pod's Job names its role replica."""
KUBEFLOW_JOB_NAME = "training.kubeflow.org/job-name"
KUBEFLOW_REPLICA_TYPE = "training.kubeflow.org/replica-type"
"""Kubeflow training operator v1 (kubeflow/training-operator): the replica type of a pod, ``master`` /
``worker`` (lower case since v1.7; older releases wrote ``Master``), so it is compared case-insensitively."""
LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
LWS_WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
LWS_EXCLUSIVE_TOPOLOGY = "leaderworkerset.sigs.k8s.io/exclusive-topology"
LWS_LEADER_READY = "LeaderReady"
"""LeaderWorkerSet (kubernetes-sigs/lws, docs/reference/labels-annotations-and-environment-variables.md):
worker index ``0`` is the group's leader."""

ROOT_TEMPLATE = "gang"
"""``workloadRef.templateName`` of the CompositePodGroup at the root of a tree (the API requires one)."""


@dataclass(frozen=True)
class GroupSpec:
    """One group a workload needs. ``minimum``: ``gang.minCount`` of a PodGroup (pods) or
    ``gang.minGroupCount`` of a CompositePodGroup (children); ``parent``: the CompositePodGroup
    it hangs from; ``template``: ``workloadRef.templateName`` (the role), set in trees only."""

    kind: Literal["PodGroup", "CompositePodGroup"]
    name: str
    minimum: int
    parent: str | None = None
    template: str | None = None


@dataclass(frozen=True)
class Desired:
    """The groups of one workload, and what the user set that could not be honoured as asked: ``warnings`` about the
    :data:`MIN_COUNT` override; ``never_starts``: why the groups can never be satisfied as the workload's controller
    makes its pods (:func:`lws_workers_deferred`), else None."""

    groups: tuple[GroupSpec, ...]
    warnings: tuple[str, ...] = ()
    never_starts: str | None = None


def _count(value: Any, default: int) -> int:
    """A JSON integer count, else ``default`` (a bool, string or float is not a count)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def as_dict(value: Any) -> JSON:
    """``value`` if it is a JSON object, else an empty one (a malformed field reads as absent)."""
    return value if isinstance(value, dict) else {}


def job_pods(job_spec: JSON) -> int:
    """How many pods of a Job (``JobSpec``) run at once, ≥ 1: ``min(parallelism, completions)``."""
    parallelism = _count(job_spec.get("parallelism"), 1)
    completions = job_spec.get("completions")
    if isinstance(completions, int) and not isinstance(completions, bool):
        parallelism = min(parallelism, completions)
    return max(parallelism, 1)


def _tree(root: str, children: list[tuple[str, int, str]], composite: bool) -> tuple[GroupSpec, ...]:
    """``children`` (name, pods, role) under one CompositePodGroup ``root``, or one PodGroup ``root``
    of all their pods where composites are not served."""
    if not composite:
        return (GroupSpec("PodGroup", root, max(sum(n for _, n, _ in children), 1)),)
    return (GroupSpec("CompositePodGroup", root, max(len(children), 1), template=ROOT_TEMPLATE),
            *(GroupSpec("PodGroup", name, n, parent=root, template=role) for name, n, role in children))


def _job_groups(body: JSON, composite: bool) -> tuple[GroupSpec, ...]:
    name = as_dict(body.get("metadata")).get("name", "")
    return (GroupSpec("PodGroup", name, job_pods(as_dict(body.get("spec")))),)


def _jobset_groups(body: JSON, composite: bool) -> tuple[GroupSpec, ...]:
    name = as_dict(body.get("metadata")).get("name", "")
    children = []
    for rjob in as_dict(body.get("spec")).get("replicatedJobs") or []:
        rjob = as_dict(rjob)
        pods = job_pods(as_dict(as_dict(rjob.get("template")).get("spec")))
        for i in range(max(_count(rjob.get("replicas"), 1), 0)):
            children.append((f"{name}-{rjob.get('name', '')}-{i}", pods, str(rjob.get("name", ""))))
    return _tree(name, children, composite)


def _pytorch_groups(body: JSON, composite: bool) -> tuple[GroupSpec, ...]:
    name = as_dict(body.get("metadata")).get("name", "")
    specs = as_dict(as_dict(body.get("spec")).get("pytorchReplicaSpecs"))
    children = [(f"{name}-{rtype.lower()}", n, rtype.lower()) for rtype, spec in sorted(specs.items())
                if (n := _count(as_dict(spec).get("replicas"), 1)) > 0]
    return _tree(name, children, composite)


def _lws_size(body: JSON) -> int:
    """The pods of one LeaderWorkerSet group: ``spec.leaderWorkerTemplate.size``, default (and at least) 1."""
    return max(_count(as_dict(as_dict(body.get("spec")).get("leaderWorkerTemplate")).get("size"), 1), 1)


def lws_workers_deferred(body: JSON) -> str | None:
    """Why a LeaderWorkerSet's controller makes each group's workers only after its leader is ready or scheduled
    (None: with the leader, or a group of one). kubernetes-sigs/lws ``pkg/controllers/pod_controller.go``: with
    ``startupPolicy: LeaderReady`` the worker StatefulSet is made once the leader pod is ready; with the
    :data:`LWS_EXCLUSIVE_TOPOLOGY` annotation, once the leader is scheduled (with a node selector for its domain)."""
    if _lws_size(body) == 1:
        return None
    if as_dict(body.get("spec")).get("startupPolicy") == LWS_LEADER_READY:
        return f"startupPolicy {LWS_LEADER_READY}: a group's workers are made once its leader is ready"
    annotations = as_dict(as_dict(body.get("metadata")).get("annotations"))
    if LWS_EXCLUSIVE_TOPOLOGY in annotations:  # its presence, whatever its value (an empty key labels no node)
        return (f"annotation {LWS_EXCLUSIVE_TOPOLOGY}={annotations[LWS_EXCLUSIVE_TOPOLOGY]}: a group's workers are "
                "made once its leader is scheduled, with a node selector for the leader's domain")
    return None


def _lws_groups(body: JSON, composite: bool) -> tuple[GroupSpec, ...]:
    name = as_dict(body.get("metadata")).get("name", "")
    spec = as_dict(body.get("spec"))
    size = _lws_size(body)
    groups: list[GroupSpec] = []
    for g in range(max(_count(spec.get("replicas"), 1), 0)):
        children = [(f"{name}-{g}-leader", 1, "leader")]
        if size > 1:
            children.append((f"{name}-{g}-workers", size - 1, "workers"))
        groups += _tree(f"{name}-{g}", children, composite)
    return tuple(groups)


def _templates_at(*path: str) -> Callable[[JSON], Iterator[JSON]]:
    """The pod template (a ``PodTemplateSpec`` dict, mutable) at ``path`` in a body, if present;
    ``[]`` in a path walks a list, ``*`` a map's values."""
    def walk(node: Any, rest: tuple[str, ...]) -> Iterator[JSON]:
        if not rest:
            if isinstance(node, dict):
                yield node
            return
        head, tail = rest[0], rest[1:]
        if head == "[]":
            for item in node if isinstance(node, list) else []:
                yield from walk(item, tail)
        elif head == "*":
            for item in node.values() if isinstance(node, dict) else []:
                yield from walk(item, tail)
        elif isinstance(node, dict) and head in node:
            yield from walk(node[head], tail)

    return lambda body: walk(body, path)


@dataclass(frozen=True)
class WorkloadKind:
    """A workload API: where it is served, the groups one object needs (``groups(body, composite)``,
    ``composite``: CompositePodGroups are served) and its pod templates (``templates(body)``)."""

    group: str
    version: str
    plural: str
    kind: str
    groups: Callable[[JSON, bool], tuple[GroupSpec, ...]] = field(repr=False)
    templates: Callable[[JSON], Iterator[JSON]] = field(repr=False)
    pod_label: str
    """The label its controller gives each of its pods, whose value is the workload's name."""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


JOB = WorkloadKind("batch", "v1", "jobs", "Job", _job_groups, _templates_at("spec", "template"), JOB_NAME)
JOBSET = WorkloadKind("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet", _jobset_groups,
                      _templates_at("spec", "replicatedJobs", "[]", "template", "spec", "template"), JOBSET_NAME)
PYTORCHJOB = WorkloadKind("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob", _pytorch_groups,
                          _templates_at("spec", "pytorchReplicaSpecs", "*", "template"), KUBEFLOW_JOB_NAME)
LEADERWORKERSET = WorkloadKind("leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "LeaderWorkerSet", _lws_groups,
                               lambda body: (t for key in ("leaderTemplate", "workerTemplate")
                                             for t in _templates_at("spec", "leaderWorkerTemplate", key)(body)),
                               LWS_NAME)
WORKLOADS = (JOB, JOBSET, PYTORCHJOB, LEADERWORKERSET)


def desired(kind: WorkloadKind, body: JSON, composite: bool) -> Desired:
    """The groups ``body`` (a ``kind`` object) needs, with the :data:`MIN_COUNT` override applied.

    The override sets ``gang.minCount`` of a workload that is one PodGroup (a Job; any kind where
    CompositePodGroups are not served). It is not applied to a tree, whose minimum is per role,
    and a value that is not a minCount (:func:`min_count`: ASCII digits, 1 to 2147483647) is not
    applied; both come back as warnings (a Warning Event saying why), as does a value above the pod
    count (honoured: the gang then waits for pods that never come). A LeaderWorkerSet whose controller makes each
    group's workers only after the leader is ready or scheduled (:func:`lws_workers_deferred`) can never satisfy
    its groups — unless a group's gang is met by its leader alone (one PodGroup where CompositePodGroups are not
    served, its minimum set to 1 by the override) —: ``never_starts`` says why (a Warning Event too); its groups are
    made all the same.
    """
    want = _with_min_count(kind, body, kind.groups(body, composite))
    if kind is LEADERWORKERSET and (deferred := lws_workers_deferred(body)) is not None and not all(
            group.minimum <= (1 if group.template in (None, "leader") else 0)  # the pods it has before the workers
            for group in want.groups if group.kind == "PodGroup"):
        return replace(want, never_starts=(
            f"no group of it can start: {deferred}, and its gang holds the leader until the workers exist; leave "
            f"startupPolicy at LeaderCreated and the {LWS_EXCLUSIVE_TOPOLOGY} annotation off, or do not label it "
            f"{OPT_IN}"))
    return want


def _with_min_count(kind: WorkloadKind, body: JSON, groups: tuple[GroupSpec, ...]) -> Desired:
    """``groups`` with the :data:`MIN_COUNT` override of ``body`` applied, and the warnings of :func:`desired`."""
    value = as_dict(as_dict(body.get("metadata")).get("annotations")).get(MIN_COUNT)
    if value is None:
        return Desired(groups)
    if len(groups) != 1:
        shape = (f"a tree of {len(groups)} groups, each with the minimum of its role"
                 if any(g.kind == "CompositePodGroup" for g in groups) else f"{len(groups)} gangs, one per group")
        return Desired(groups, (f"annotation {MIN_COUNT}={_shown(value)} is not applied: this {kind.kind} is "
                                f"{shape}",))
    minimum, problem = min_count(value)
    if minimum is None:
        return Desired(groups, (f"annotation {MIN_COUNT}={_shown(value)} is not applied: {problem}",))
    (group,) = groups
    warnings = () if minimum <= group.minimum else (
        f"annotation {MIN_COUNT}={_shown(value)} is more than the {group.minimum} pods the {kind.kind} runs at once: "
        f"the gang cannot be scheduled until that many pods exist",)
    return Desired((GroupSpec(group.kind, group.name, minimum),), warnings)


MIN_COUNT_MAX = INT32_MAX
"""The largest ``minCount`` the API server stores: the field is an ``int32`` (``format: int32`` in the v1.37
OpenAPI); a larger value makes every create or patch of the PodGroup a 422."""

_SHOWN_MAX = 24


def ascii_digits(text: str) -> bool:
    """Whether ``text`` is one or more ASCII digits ``0``–``9``. ``str.isdigit`` also takes ``"²"`` and ``"٣"``, which
    ``int`` refuses or reads as 3."""
    return text.isascii() and text.isdigit()


def min_count(value: object) -> tuple[int | None, str]:
    """The minCount an annotation value asks for, or None and why it is not one: ASCII digits only (no sign, no
    spaces), at least 1, at most :data:`MIN_COUNT_MAX`. Never raises, whatever the value's length (``int`` of more
    than 4,300 digits raises ``ValueError``, so the length is judged first)."""
    if not isinstance(value, str) or not ascii_digits(value):
        return None, "it must be a positive integer written with the digits 0-9"
    digits = value.lstrip("0")
    if not digits:
        return None, "it must be at least 1"
    if len(digits) > len(str(MIN_COUNT_MAX)) or int(digits) > MIN_COUNT_MAX:
        return None, f"it is more than {MIN_COUNT_MAX}, the largest minCount the API server accepts (int32)"
    return int(digits), ""


def _shown(value: object) -> str:
    """``value`` quoted for a message, a long one cut (with its length)."""
    text = repr(value)
    return text if len(text) <= _SHOWN_MAX else f"{text[:_SHOWN_MAX]}… ({len(str(value))} characters)"


def pod_group(labels: dict[str, str], composite: bool, name: str = "") -> str | None:
    """The PodGroup a pod (``labels``, ``name``) belongs to, from the labels its controller gave it
    (see :func:`desired` for the names), or None when they do not say. Tried in this order, as a
    pod of a JobSet is also a Job's and a PyTorchJob's pods carry none of the others:
    LeaderWorkerSet, PyTorchJob, JobSet, Job.

    A LeaderWorkerSet leader may reach us before LWS's own pod webhook has labelled its group
    index (webhooks run in configuration-name order); it is then read from the name, as that
    webhook does: the leader is pod ``<lws>-<group>`` of the leader StatefulSet
    (kubernetes-sigs/lws ``pkg/webhooks/pod_webhook.go``, ``GetParentNameAndOrdinal``).
    """
    if lws := labels.get(LWS_NAME):
        group, worker = labels.get(LWS_GROUP_INDEX), labels.get(LWS_WORKER_INDEX)
        if group is None and worker == "0" and name.startswith(f"{lws}-") and ascii_digits(name[len(lws) + 1:]):
            group = name[len(lws) + 1:]
        if group is None or worker is None:
            return None
        if not composite:
            return f"{lws}-{group}"
        return f"{lws}-{group}-leader" if worker == "0" else f"{lws}-{group}-workers"
    if job := labels.get(KUBEFLOW_JOB_NAME):
        rtype = labels.get(KUBEFLOW_REPLICA_TYPE)
        if not composite:
            return job
        return f"{job}-{rtype.lower()}" if rtype else None
    if jobset := labels.get(JOBSET_NAME):
        return labels.get(JOB_NAME) if composite else jobset
    return labels.get(JOB_NAME) or labels.get("job-name")
