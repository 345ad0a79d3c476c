"""What a Kubeflow PyTorchJob given to ``simulate`` becomes: the pods the training operator would make, and the
operator's groups.

A PyTorchJob (``kubeflow.org/v1``, kubeflow/training-operator ``pkg/apis/kubeflow.org/v1``) of ours — a replica's
template names our scheduler, or the PyTorchJob is labelled ``gang-scheduler.io/gang: "true"`` and its templates name no
other — that has no running or pending pod in the snapshot (by ``training.kubeflow.org/job-name``) is expanded as the
cluster would expand it:

* **Pods**, as the training operator makes them (``pkg/controller.v1/common/pod.go``: ``ReconcilePods``,
  ``createNewPod``): per replica type of ``spec.pytorchReplicaSpecs`` (``Master``, ``Worker``; a key written in
  another case, ``worker``, is read as the defaulter rewrites it, ``defaulting_utils.go`` ``setTypeNameToCamelCase``),
  ``replicas`` (default 1) pods named ``<job>-<type in lower case>-<index>`` (``pkg/core/utils.go``
  ``GenGeneralName``), from the replica's ``template``, labelled ``training.kubeflow.org/operator-name:
  pytorchjob-controller`` and ``…/job-name`` (``GenLabels``), ``…/replica-type`` (lower case), ``…/replica-index`` and,
  on the master, ``…/job-role: master`` (``createNewPod``), owned by the PyTorchJob and created when it was, with the
  replica's ``restartPolicy`` (default ``OnFailure``; ``ExitCode`` is ``Never``: ``pkg/core/pod.go``
  ``SetRestartPolicy``). Of what the defaulter and ``SetClusterSpec`` add, what a scheduling rule reads is added too:
  the port ``pytorchjob-port`` (23456) on the ``pytorch`` container (``pytorch_defaults.go`` ``setPytorchDefaultPort``:
  a host port when the pod uses the host's network), and on each worker of a PyTorchJob with a master the init container
  ``init-pytorch``, which requests 50m CPU and 10Mi (``pkg/controller.v1/pytorch/initcontainer.go``, the default
  template and image; a training operator started with ``--pytorch-init-container-template-file`` may use another).
  The environment it sets (``MASTER_ADDR``, ``WORLD_SIZE``, …) is not: no scheduling rule reads it.
* **The groups** of a labelled PyTorchJob, as the operator makes them (:mod:`scheduler.offline.operator_trees`): a
  CompositePodGroup ``<job>`` over the PodGroups ``<job>-master`` (``gang.minCount`` 1) and ``<job>-worker``
  (``replicas``), each pod in its replica type's PodGroup and pointed at the scheduler, as the operator's pod webhook
  does. A group of a name the snapshot holds already is used instead. The operator does not honour
  ``spec.elasticPolicy`` (its gang is every replica, docs/operator.md), and ``spec.runPolicy.schedulingPolicy`` sets up
  the training operator's own gang scheduling (Volcano or scheduler-plugins), which is not simulated: the note says
  so when either is set.

Not expanded, named in a note: a suspended PyTorchJob (``spec.runPolicy.suspend``: the training operator makes no pod
of it, ``pkg/controller.v1/common/job.go`` ``ReconcileJobs``; Kueue holds a queued one so), one managed by another
controller (``spec.runPolicy.managedBy``: MultiKueue), one of more than
:data:`~scheduler.offline.jobs.MAX_PODS_PER_JOB` pods (a gang is all of them), one with no pod to make, and one whose
pod name a pod of the snapshot has (the training operator's create fails). Left silently, as a cluster dump holds it:
a finished one (a ``Succeeded`` or ``Failed`` condition, ``IsFinished``). A PyTorchJob the API server or the training
operator's webhook (``pkg/webhooks/pytorch/pytorchjob_webhook.go``, ``pkg/webhooks/utils/utils.go``,
``pkg/common/util/webhooks.go``) would refuse for what is read here is an invalid object: a name that is not a DNS-1035
label, no ``pytorchReplicaSpecs``, a replica type other than Master and Worker (or one given twice), a count that is
not a non-negative integer, a Master of other than 1 replica, a template without containers, a container without an
image or none named ``pytorch``, an ``elasticPolicy`` without a Worker, a ``managedBy`` other than the training
operator or MultiKueue. Upstream is unclear on two counts, and the lenient reading is taken: the latest webhook also
refuses a Master that does not set ``replicas`` and a Worker of 0 replicas, which earlier releases accepted (the first
defaulted to 1); both are read so here.
No I/O.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from scheduler.groups.workloads import (
    KUBEFLOW_JOB_NAME,
    KUBEFLOW_REPLICA_TYPE,
    OPT_IN,
    OPT_IN_VALUE,
    PYTORCHJOB,
    as_dict,
)
from scheduler.model.base import INT32_MAX
from scheduler.offline import jobs
from scheduler.offline.jobs import Expansion, Expansions, is_count, made_meta, strings
from scheduler.offline.loader import Objects
from scheduler.offline.operator_trees import tree_objects, webhook_pod

JSON = dict[str, Any]

MASTER = "Master"
WORKER = "Worker"
REPLICA_TYPES = (MASTER, WORKER)
"""The replica types of a PyTorchJob (``pytorch_types.go``), in the order the pods are made here."""
OPERATOR_NAME = "training.kubeflow.org/operator-name"
REPLICA_INDEX = "training.kubeflow.org/replica-index"
JOB_ROLE = "training.kubeflow.org/job-role"
"""The training operator's labels on its pods (``common_types.go``), with
:data:`~scheduler.groups.workloads.KUBEFLOW_JOB_NAME` and :data:`~scheduler.groups.workloads.KUBEFLOW_REPLICA_TYPE`."""
CONTROLLER_NAME = "pytorchjob-controller"
"""The value of :data:`OPERATOR_NAME` on a PyTorchJob's pods (``pytorchjob_controller.go``)."""
CONTAINER = "pytorch"
PORT_NAME = "pytorchjob-port"
PORT = 23456
"""The container the training operator configures, and the port its defaulter adds to it (``pytorch_types.go``)."""
DEFAULT_RESTART_POLICY = "OnFailure"
TRAINING_OPERATOR = "kubeflow.org/training-operator"
MULTIKUEUE = "kueue.x-k8s.io/multikueue"
"""The values of ``spec.runPolicy.managedBy`` the webhook accepts: the training operator's own (the default), and
MultiKueue's."""
FINISHED = frozenset({"Succeeded", "Failed"})
INIT_IMAGE = "alpine:3.10"
"""The training operator's default ``--pytorch-init-container-image``."""


def replica_specs(job: JSON) -> dict[str, JSON]:
    """``spec.pytorchReplicaSpecs`` of ``job`` (which passed :func:`problem`) by replica type, Master first, each key
    read as the defaulter rewrites it (``worker`` is Worker)."""
    specs = {_canonical(str(key)): spec for key, spec in job["spec"]["pytorchReplicaSpecs"].items()}
    return {rtype: specs[rtype] for rtype in REPLICA_TYPES if rtype in specs}


def _canonical(key: str) -> str:
    return next((rtype for rtype in REPLICA_TYPES if rtype.lower() == key.lower()), key)


def problem(job: JSON) -> str | None:
    """What the API server or the training operator's webhook would refuse in what is read of ``job``, or None (the
    module docstring lists it)."""
    if (why := jobs.head_problem(job)) is not None:
        return why
    spec = job["spec"]
    given = spec.get("pytorchReplicaSpecs")
    if not isinstance(given, dict):
        return "spec.pytorchReplicaSpecs is required"
    seen: dict[str, str] = {}
    for key, value in given.items():
        path = f"spec.pytorchReplicaSpecs[{key}]"
        rtype = _canonical(str(key))
        if rtype not in REPLICA_TYPES:
            return f"{path}: the replica type must be {MASTER} or {WORKER}"
        if rtype in seen:
            return f"spec.pytorchReplicaSpecs has {rtype} twice ({seen[rtype]} and {key})"
        seen[rtype] = str(key)
        if not isinstance(value, dict):
            return f"{path} must be an object"
        count = value.get("replicas")
        if count is not None and not (is_count(count) and count <= INT32_MAX):
            return f"{path}.replicas must be a non-negative integer (got {count!r})"
        if rtype == MASTER and count not in (None, 1):
            return f"{path}.replicas must be 1: a PyTorchJob has one master"
        containers = jobs.template_containers(value.get("template"))
        if containers is None:
            return f"{path}.template.spec.containers is required"
        for i, container in enumerate(containers):
            if not container.get("image"):
                return f"{path}.template.spec.containers[{i}].image is required"
        if not any(container.get("name") == CONTAINER for container in containers):
            return f"{path}.template.spec.containers must have a container named {CONTAINER}"
    if spec.get("elasticPolicy") is not None and WORKER not in seen:
        return f"spec.pytorchReplicaSpecs[{WORKER}] is required with spec.elasticPolicy"
    run = spec.get("runPolicy")
    if run is not None and not isinstance(run, dict):
        return "spec.runPolicy must be an object"
    run = as_dict(run)
    if run.get("suspend") is not None and not isinstance(run["suspend"], bool):
        return f"spec.runPolicy.suspend must be a boolean (got {run['suspend']!r})"
    if run.get("managedBy") not in (None, TRAINING_OPERATOR, MULTIKUEUE):
        return f"spec.runPolicy.managedBy must be {TRAINING_OPERATOR} or {MULTIKUEUE} (got {run['managedBy']!r})"
    return None


def _init_container(master: str) -> JSON:
    """The init container a worker waits for its master in (the training operator's default template)."""
    return {"name": "init-pytorch", "image": INIT_IMAGE, "imagePullPolicy": "IfNotPresent",
            "resources": {"limits": {"cpu": "100m", "memory": "20Mi"}, "requests": {"cpu": "50m", "memory": "10Mi"}},
            "command": ["sh", "-c", f"until nslookup {master}; do echo waiting for master; sleep 2; done;"]}


def _default_port(pod_spec: JSON) -> None:
    """Add :data:`PORT_NAME` to the :data:`CONTAINER` container (else the first) unless it has a port of that name."""
    containers = pod_spec["containers"]
    index = next((i for i, c in enumerate(containers) if c.get("name") == CONTAINER), 0)
    container = containers[index] = dict(containers[index])
    ports = list(container.get("ports") or ())
    if not any(isinstance(p, dict) and p.get("name") == PORT_NAME for p in ports):
        container["ports"] = [*ports, {"name": PORT_NAME, "containerPort": PORT}]


def pods(job: JSON) -> list[JSON]:
    """The pods the training operator makes of ``job`` (which passed :func:`problem`, with its name, namespace and uid
    set), per the module docstring, in replica type then index order."""
    name = job["metadata"]["name"].replace("/", "-")
    specs = replica_specs(job)
    out = []
    for rtype, spec in specs.items():
        rt = rtype.lower()
        for index in range(jobs.replicas(spec)):
            template = copy.deepcopy(spec["template"])
            tmeta = as_dict(template.get("metadata"))
            pod_spec = template["spec"]
            labels = {**strings(tmeta.get("labels")), OPERATOR_NAME: CONTROLLER_NAME, KUBEFLOW_JOB_NAME: name,
                      KUBEFLOW_REPLICA_TYPE: rt, REPLICA_INDEX: str(index)}
            if rtype == MASTER:
                labels[JOB_ROLE] = "master"
            policy = spec.get("restartPolicy") or DEFAULT_RESTART_POLICY
            pod_spec["restartPolicy"] = "Never" if policy == "ExitCode" else policy
            _default_port(pod_spec)
            if rtype == WORKER and MASTER in specs:
                pod_spec["initContainers"] = [*(pod_spec.get("initContainers") or []),
                                              _init_container(f"{name}-{MASTER.lower()}-0")]
            pod_meta = {**made_meta(job, f"{name}-{rt}-{index}"), "labels": labels}
            if annotations := strings(tmeta.get("annotations")):
                pod_meta["annotations"] = annotations
            out.append({"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": pod_spec})
    return out


def _finished(job: JSON) -> bool:
    return any(as_dict(c).get("type") in FINISHED and as_dict(c).get("status") == "True"
               for c in as_dict(job.get("status")).get("conditions") or () if isinstance(c, dict))


def _unhonoured(job: JSON, opted_in: bool) -> list[str]:
    """What ``job`` sets that simulate (and, for a labelled one, the operator) does not honour, for the note."""
    spec = job["spec"]
    out = []
    if opted_in and spec.get("elasticPolicy") is not None:
        out.append("spec.elasticPolicy is not honoured: the operator's gang is every replica")
    if as_dict(spec.get("runPolicy")).get("schedulingPolicy") is not None:
        out.append("spec.runPolicy.schedulingPolicy is not honoured: it sets up the training operator's own gang "
                   "scheduling (Volcano, scheduler-plugins), which is not simulated")
    return out


def expand(job: JSON, scheduler_name: str, active_pods: int, exists: Callable[[str, str], bool],
           taken: Callable[[str], bool], composite: bool = True) -> Expansion:
    """The pods and groups the cluster would make of ``job`` (which passed :func:`problem`, with its name, namespace
    and uid set), per the module docstring. ``active_pods``: its running or pending pods in the snapshot;
    ``exists(kind, name)`` / ``taken(name)``: whether its namespace holds a PodGroup or CompositePodGroup / a pod of
    that name; ``composite``: CompositePodGroups are served (else the operator makes one PodGroup of every pod)."""
    meta, spec = job["metadata"], job["spec"]
    if active_pods or _finished(job):  # what a dump holds: its pods are there, or it is done
        return Expansion()
    run = as_dict(spec.get("runPolicy"))
    if (why := jobs.not_ours(job, [r["template"] for r in replica_specs(job).values()], scheduler_name)) is not None:
        # nothing to say of one waiting for its queue or another controller
        waits = run.get("suspend") is True or run.get("managedBy") not in (None, TRAINING_OPERATOR)
        return Expansion(foreign=None if waits else why)
    if run.get("suspend") is True:
        return Expansion(skipped="suspended")
    if run.get("managedBy") not in (None, TRAINING_OPERATOR):
        return Expansion(skipped=f"managed by {run['managedBy']}")
    counts = {rtype: jobs.replicas(rspec) for rtype, rspec in replica_specs(job).items()}
    wanted = sum(counts.values())
    if (why := jobs.too_many(wanted)) is not None:
        return Expansion(skipped=why)
    if not wanted:
        return Expansion(skipped="nothing to run: no replica")
    made = pods(job)
    if (why := jobs.name_taken(made, taken)) is not None:
        return Expansion(skipped=why)
    opted_in = as_dict(meta.get("labels")).get(OPT_IN) == OPT_IN_VALUE
    groups: tuple[JSON, ...] = ()
    if opted_in:
        tree = tree_objects(PYTORCHJOB, job, exists, composite)
        groups = tree.objects
        how = (f"in CompositePodGroup {meta['name']} over {tree.children} PodGroup(s), one per replica type, as the "
               f"operator makes them for {OPT_IN}" if composite else
               f"in PodGroup {meta['name']} of all its pods, as the operator makes it for {OPT_IN} where no "
               "CompositePodGroup is served") + tree.suffix()
        how += "".join(f"; {warning}" for pod in made if (warning := webhook_pod(pod, scheduler_name, composite)))
    else:
        how = "without a group"
    how += "".join(f"; {warning}" for warning in _unhonoured(job, opted_in))
    shown = ", ".join(f"{rtype} {n}" for rtype, n in counts.items())
    note = (f"{PYTORCHJOB.api_version} PyTorchJob {meta['namespace']}/{meta['name']}: {len(made)} pod(s) ({shown}) "
            f"made as the training operator would, {how}")
    return Expansion(tuple(made), groups, note)


def add_expansions(objects: Objects, scheduler_name: str) -> Expansions:
    """Expand every PyTorchJob of ``objects`` (:func:`expand`) into ``objects``, as if its pods and groups had been read
    from its file; a PyTorchJob :func:`problem` refuses goes to ``objects.problems``. Returns the report's note of each
    PyTorchJob expanded, and the PyTorchJobs of ours not expanded with why (``PyTorchJob ns/name (why)``). Run after
    the Jobs' and JobSets', whose pods it counts as taken names."""
    def make(job: JSON, held: jobs.Held) -> Expansion:
        ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
        return expand(job, scheduler_name, held.active[ns, name], held.exists(ns), held.taken(ns).__contains__,
                      objects.serves_composites)

    return jobs.add_each(objects, PYTORCHJOB.kind, objects.pytorchjobs, KUBEFLOW_JOB_NAME, problem, make)
