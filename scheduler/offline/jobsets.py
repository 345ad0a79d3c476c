"""What a JobSet given to ``simulate`` becomes: its child Jobs, each made into pods as a Job is, and the groups.

A JobSet (``jobset.x-k8s.io/v1alpha2``, kubernetes-sigs/jobset ``api/jobset/v1alpha2``) of ours — a template names
our scheduler, or the JobSet is labelled ``gang-scheduler.io/gang: "true"`` and its templates name no other — that
has no running or pending pod in the snapshot (by ``jobset.sigs.k8s.io/jobset-name``) is expanded as the cluster
would expand it:

* **Child Jobs**, as the JobSet controller makes them: per ``spec.replicatedJobs[]`` entry, ``replicas`` (default 1)
  Jobs named ``<jobset>-<replicatedJob>-<index>`` (the ``ReplicatedJob.replicas`` doc), from its ``template``, with
  ``completionMode: Indexed`` when the template sets none (the JobSet webhook's default; ``completions`` and
  ``parallelism`` 1 when neither is set, the Job API's default), labelled — Job and pod
  template — ``jobset.sigs.k8s.io/jobset-name``, ``…/replicatedjob-name``, ``…/replicatedjob-replicas`` and
  ``…/job-index``, owned by the JobSet. Each is then made into pods as a Job is (:func:`scheduler.offline.jobs.expand`:
  the Job controller's names, labels and count; the template's own ``schedulingGroup`` or ``spec.scheduling``
  honoured).
* **The groups** of a labelled JobSet, as the operator makes them (:func:`~scheduler.groups.workloads.desired`, with
  CompositePodGroups served): a CompositePodGroup ``<jobset>`` (``gang.minGroupCount`` = the child Jobs) over one
  PodGroup per child Job (``gang.minCount`` = its pods at once), each pod in its Job's PodGroup and pointed at the
  scheduler, as the operator's pod webhook does. A group of a name the snapshot holds already is used instead.

Not expanded: a suspended JobSet (``spec.suspend``) or one managed by another controller (``spec.managedBy``), named
in a note; a finished one (``status.terminalState``, or a ``Completed`` / ``Failed`` condition), silently, as a
cluster dump holds it. A JobSet the API server would refuse for what is read here is an invalid object. No I/O.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from scheduler.groups.workloads import (
    JOB_NAME,
    JOBSET,
    JOBSET_NAME,
    OPT_IN,
    OPT_IN_VALUE,
    as_dict,
    job_pods,
    pod_group,
)
from scheduler.model.base import INT32_MAX
from scheduler.offline import jobs
from scheduler.offline.jobs import Expansion, Expansions
from scheduler.offline.loader import Objects, snapshot_uid
from scheduler.offline.operator_trees import tree_objects

JSON = dict[str, Any]

REPLICATED_JOB_NAME = "jobset.sigs.k8s.io/replicatedjob-name"
REPLICATED_JOB_REPLICAS = "jobset.sigs.k8s.io/replicatedjob-replicas"
JOB_INDEX = "jobset.sigs.k8s.io/job-index"
"""The JobSet controller's labels on its child Jobs and their pod templates (kubernetes-sigs/jobset ``api/jobset/
v1alpha2/jobset_types.go``), with :data:`~scheduler.groups.workloads.JOBSET_NAME`."""
JOBSET_CONTROLLER = "jobset.sigs.k8s.io/jobset-controller"
"""``spec.managedBy`` of a JobSet the JobSet controller manages (the default)."""
FINISHED = frozenset({"Completed", "Failed"})


def problem(jobset: JSON) -> str | None:
    """What the API server would refuse in what is read of ``jobset`` (its ``spec.replicatedJobs``), or None; each
    child Job is then judged as a Job (:func:`scheduler.offline.jobs.problem`)."""
    spec = jobset.get("spec")
    if not isinstance(spec, dict):
        return "spec must be an object"
    replicated = spec.get("replicatedJobs")
    if not isinstance(replicated, list) or not replicated or not all(isinstance(r, dict) for r in replicated):
        return "spec.replicatedJobs must be a non-empty list of objects"
    names = [r.get("name") for r in replicated]
    if not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names):
        return "each of spec.replicatedJobs needs a name of its own"
    for r in replicated:
        replicas = r.get("replicas")
        if replicas is not None and not (jobs.is_count(replicas) and replicas <= INT32_MAX):
            return f"spec.replicatedJobs[{r['name']}].replicas must be a non-negative integer (got {replicas!r})"
        if not isinstance(as_dict(r.get("template")).get("spec"), dict):
            return f"spec.replicatedJobs[{r['name']}].template.spec is required"
    return None


def child_jobs(jobset: JSON, scheduler_name: str) -> list[JSON]:
    """The Jobs the JobSet controller makes of ``jobset`` (which passed :func:`problem`, with its name, namespace and
    uid set), per the module docstring; a labelled JobSet's templates that name no scheduler name ours."""
    meta = jobset["metadata"]
    name, ns = meta["name"], meta["namespace"]
    opted_in = as_dict(meta.get("labels")).get(OPT_IN) == OPT_IN_VALUE
    out = []
    for rjob in jobset["spec"]["replicatedJobs"]:
        replicas = 1 if rjob.get("replicas") is None else rjob["replicas"]
        for index in range(replicas):
            labels = {JOBSET_NAME: name, REPLICATED_JOB_NAME: rjob["name"], REPLICATED_JOB_REPLICAS: str(replicas),
                      JOB_INDEX: str(index)}
            template_meta = as_dict(rjob["template"].get("metadata"))
            spec = copy.deepcopy(rjob["template"]["spec"])
            spec.setdefault("completionMode", "Indexed")
            spec["suspend"] = False  # the JobSet's own (a suspended JobSet is not expanded), whatever the template says
            if spec.get("completions") is None and spec.get("parallelism") is None:  # the Job API's defaults
                spec["completions"] = spec["parallelism"] = 1
            template = spec["template"] = as_dict(spec.get("template"))
            template["metadata"] = {**as_dict(template.get("metadata"))}
            template["metadata"]["labels"] = {**as_dict(template["metadata"].get("labels")), **labels}
            pod_spec = template["spec"] = as_dict(template.get("spec"))
            if opted_in and (pod_spec.get("schedulerName") or jobs.DEFAULT_SCHEDULER) == jobs.DEFAULT_SCHEDULER:
                pod_spec["schedulerName"] = scheduler_name  # the operator's pod webhook
            job_name = f"{name}-{rjob['name']}-{index}"
            job_meta = {**jobs.made_meta(jobset, job_name),
                        "labels": {**jobs.strings(template_meta.get("labels")), **labels},
                        "uid": snapshot_uid("batch/v1", "Job", ns, f"{job_name}@{meta['uid']}")}
            if annotations := jobs.strings(template_meta.get("annotations")):
                job_meta["annotations"] = annotations
            out.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": job_meta, "spec": spec})
    return out


def _groups(jobset: JSON, exists: Callable[[str, str], bool], composite: bool) -> tuple[tuple[JSON, ...], str]:
    """The operator's CompositePodGroup and PodGroups for labelled ``jobset`` (``composite``: CompositePodGroups are
    served; else its one PodGroup of every pod), less those the snapshot holds (``exists(kind, name)``), and how the
    note tells them."""
    tree = tree_objects(JOBSET, jobset, exists, composite)
    name = jobset["metadata"]["name"]
    how = (f"in CompositePodGroup {name} over {tree.children} PodGroup(s), one per Job, as the operator makes them "
           f"for {OPT_IN}" if composite else
           f"in PodGroup {name} of all its pods, as the operator makes it for {OPT_IN} where no CompositePodGroup is "
           "served")
    return tree.objects, how + tree.suffix()


def _finished(jobset: JSON) -> bool:
    status = as_dict(jobset.get("status"))
    return status.get("terminalState") in FINISHED or any(
        c.get("type") in FINISHED and c.get("status") == "True" for c in status.get("conditions") or ()
        if isinstance(c, dict))


def expand(jobset: JSON, scheduler_name: str, active_pods: int, exists: Callable[[str, str], bool],
           taken: Callable[[str], bool], job_taken: Callable[[str], bool], composite: bool = True) -> Expansion:
    """The pods and groups the cluster would make of ``jobset`` (which passed :func:`problem`, with its name,
    namespace and uid set), per the module docstring. ``active_pods``: its running or pending pods in the snapshot;
    ``exists(kind, name)`` / ``taken(name)`` / ``job_taken(name)``: whether its namespace holds a PodGroup or
    CompositePodGroup / a pod / a Job (given, or made of a JobSet before) of that name; ``composite``:
    CompositePodGroups are served (else the operator makes a labelled JobSet one PodGroup). Raises nothing; what would
    keep the cluster from making it (a child Job the API server would refuse or whose name is taken, more than
    :data:`~scheduler.offline.jobs.MAX_PODS_PER_JOB` pods, a labelled JobSet whose Jobs compile their own
    PodGroups) makes the whole JobSet's ``skipped``."""
    meta, spec = jobset["metadata"], jobset["spec"]
    ident = f"{JOBSET.group}/{JOBSET.version} JobSet {meta['namespace']}/{meta['name']}"
    opted_in = as_dict(meta.get("labels")).get(OPT_IN) == OPT_IN_VALUE
    templates = [as_dict(as_dict(r["template"]["spec"]).get("template")) for r in spec["replicatedJobs"]]
    if active_pods or _finished(jobset):  # what a dump holds: its pods are there, or it is done
        return Expansion()
    wanted = sum((1 if r.get("replicas") is None else r["replicas"]) * job_pods(as_dict(r["template"]["spec"]))
                 for r in spec["replicatedJobs"])
    if (why := jobs.not_ours(jobset, templates, scheduler_name)) is not None:
        waits = spec.get("suspend") is True or spec.get("managedBy") not in (None, JOBSET_CONTROLLER)  # its queue's
        return Expansion(foreign=None if waits or not wanted else why)  # no pod to run: nothing to say either
    managed_by = spec.get("managedBy")
    if spec.get("suspend") is True:
        return Expansion(skipped="suspended")
    if managed_by not in (None, JOBSET_CONTROLLER):
        return Expansion(skipped=f"managed by {managed_by}")
    if (why := jobs.too_many(wanted)) is not None:
        return Expansion(skipped=why)
    children = child_jobs(jobset, scheduler_name)
    for child in children:
        if (why := jobs.problem(child)) is not None:
            return Expansion(skipped=f"Job {child['metadata']['name']}: {why}")
        if job_taken(child["metadata"]["name"]):  # the JobSet controller's create would fail: AlreadyExists
            return Expansion(skipped=f"its Job {child['metadata']['name']} exists already")
        if opted_in and child["spec"].get("scheduling") is not None:
            return Expansion(skipped=f"its Job {child['metadata']['name']} sets spec.scheduling: its pods would join "
                                     "the Job controller's PodGroup, and the operator's tree would wait for them")
    pods: list[JSON] = []
    made: list[JSON] = []
    notes: list[str] = []
    for child in children:
        expansion = jobs.expand(child, scheduler_name, 0, lambda group: exists("PodGroup", group), taken)
        if expansion.skipped is not None:
            notes.append(f"Job {child['metadata']['name']}: {expansion.skipped}")
        made += expansion.groups
        for pod in expansion.pods:
            if opted_in and not expansion.groups and not pod["spec"].get("schedulingGroup"):  # the pod webhook
                pod["spec"]["schedulingGroup"] = {"podGroupName": pod_group(pod["metadata"]["labels"], composite)}
            pods.append(pod)
    how = "from each Job's template"
    if opted_in:
        groups, how = _groups(jobset, exists, composite)
        made += groups
    note = (f"{ident}: {len(pods)} pod(s) of {len(children)} Job(s) made as the JobSet and Job controllers would, "
            f"{how}{''.join(f'; {n}' for n in notes)}")
    return Expansion(tuple(pods), tuple(made), note)


def add_expansions(objects: Objects, scheduler_name: str) -> Expansions:
    """Expand every JobSet of ``objects`` (:func:`expand`) into ``objects``, as if its pods and groups had been read
    from its file; a JobSet :func:`problem` refuses goes to ``objects.problems``. Returns the report's note of each
    JobSet expanded, and the JobSets of ours not expanded with why (``JobSet ns/name (why)``). Run after the Jobs'
    (:func:`scheduler.offline.jobs.add_expansions`), whose pods it counts as taken names."""
    job_names = {(job["metadata"]["namespace"], job["metadata"]["name"]) for _, job in objects.jobs}

    def make(jobset: JSON, held: jobs.Held) -> Expansion:
        ns, name = jobset["metadata"]["namespace"], jobset["metadata"]["name"]
        made = expand(jobset, scheduler_name, held.active[ns, name], held.exists(ns), held.taken(ns).__contains__,
                      lambda job: (ns, job) in job_names, objects.serves_composites)
        job_names.update((ns, str(p["metadata"]["labels"][JOB_NAME])) for p in made.pods)
        return made

    return jobs.add_each(objects, JOBSET.kind, objects.jobsets, JOBSET_NAME, problem, make)
