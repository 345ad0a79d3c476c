"""What a batch/v1 Job given to ``simulate`` becomes: the pods its controller would make, and their PodGroup.

A snapshot holds the pods a Job's controller has made; a workload file given to ask "would it fit"
(``--add job.yaml``) holds the Job alone. A Job of ours that has no pod in the snapshot is expanded here
before the snapshot is scheduled, as the cluster would expand it:

* **Pods**, as the Job controller makes them (kubernetes ``pkg/controller/job``): ``min(parallelism,
  completions)`` of them (``parallelism`` defaults to 1; 0 makes none), from ``spec.template``, named
  ``<job>-<suffix>`` (``completionMode: Indexed``: ``<job>-<index>-<suffix>``, with the
  ``batch.kubernetes.io/job-completion-index`` label and annotation), labelled ``batch.kubernetes.io/job-name``
  and ``batch.kubernetes.io/controller-uid`` (and the legacy ``job-name`` / ``controller-uid``), owned by the
  Job, created when the Job was. The suffix stands for the API server's random one (``generateName``) and is
  the same on every run.
* **The group**, whichever of these applies first:

  1. ``spec.scheduling`` (KEP-5547, gate ``WorkloadWithJob``): the Job controller's PodGroup, with the
     policy (``basic`` when unset; a ``gang`` without ``minCount`` takes ``parallelism``, at least 1),
     ``schedulingConstraints``, ``disruptionMode`` and ``resourceClaims`` of ``spec.scheduling``
     (component-helpers ``workloadbuilder``). It is named ``<job>`` here; the controller names it
     ``<workload>-<template>-<hash>`` and makes a Workload too, which the scheduler does not read.
  2. The template sets ``spec.schedulingGroup``: the user's own PodGroup; nothing is made (the controller
     makes nothing either).
  3. The Job is labelled ``gang-scheduler.io/gang: "true"``: the operator's PodGroup ``<job>``
     (:func:`~scheduler.groups.workloads.desired`: ``gang.minCount`` = ``min(parallelism, completions)``,
     or the ``gang-scheduler.io/min-count`` annotation), and its pod webhook's ``schedulerName`` and group
     link (a template naming another scheduler is left alone, as the webhook leaves it).
  4. Otherwise the pods have no group (each is a root of its own).

A Job is not expanded when a pod of the snapshot already carries its ``batch.kubernetes.io/job-name``, when it
is suspended (``spec.suspend``: Kueue holds a queued Job so until it admits it), when its pods would not be ours
(another ``schedulerName``), or when a PodGroup of the name it would make exists already (that group is used).
Each Job expanded, or left out for one of the last reasons, gets a line in the report. No I/O.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from scheduler.groups.workloads import JOB, JOB_NAME, OPT_IN, OPT_IN_VALUE, desired
from scheduler.offline.loader import Objects

JSON = dict[str, Any]

CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
LEGACY_JOB_NAME = "job-name"
LEGACY_CONTROLLER_UID = "controller-uid"
DEFAULT_SCHEDULER = "default-scheduler"
SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""The characters of the API server's ``generateName`` suffix (apimachinery ``utilrand.String``)."""


@dataclass(frozen=True)
class Expansion:
    """What one Job became: ``pods`` and ``groups`` (raw API objects, to be loaded as if read from the Job's
    file) and the report's ``note`` (None: nothing to say, the Job is not ours)."""

    pods: tuple[JSON, ...]
    groups: tuple[JSON, ...]
    note: str | None


def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def pod_count(spec: JSON) -> int:
    """The pods a new Job runs at once: ``min(parallelism, completions)``, ``parallelism`` defaulting to 1."""
    parallelism = max(_int(spec.get("parallelism"), 1), 0)
    completions = spec.get("completions")
    return min(parallelism, completions) if isinstance(completions, int) and not isinstance(completions, bool) \
        else parallelism


def _suffix(uid: str, index: int) -> str:
    digest = hashlib.sha256(f"{uid}/{index}".encode()).digest()
    return "".join(SUFFIX_ALPHABET[b % len(SUFFIX_ALPHABET)] for b in digest[:5])


def _scheduling_group(job: JSON, name: str) -> JSON:
    """The PodGroup the Job controller compiles from ``spec.scheduling`` (route 1 of the module docstring)."""
    spec = _dict(job.get("spec"))
    scheduling = _dict(spec.get("scheduling"))
    policy = _dict(scheduling.get("schedulingPolicy"))
    if "gang" in policy:
        gang = _dict(policy.get("gang"))
        minimum = gang.get("minCount")
        policy = {"gang": {**gang, "minCount": minimum if minimum is not None
                           else max(_int(spec.get("parallelism"), 1), 1)}}
    elif not policy:
        policy = {"basic": {}}
    group_spec: JSON = {"schedulingPolicy": policy}
    for key in ("schedulingConstraints", "disruptionMode", "resourceClaims"):
        if scheduling.get(key) is not None:
            group_spec[key] = scheduling[key]
    return _podgroup(job, name, group_spec)


def _podgroup(job: JSON, name: str, spec: JSON) -> JSON:
    meta = _dict(job.get("metadata"))
    out_meta: JSON = {"name": name, "namespace": meta.get("namespace"),
                      "ownerReferences": [_owner(job)]}
    if meta.get("creationTimestamp") is not None:
        out_meta["creationTimestamp"] = meta["creationTimestamp"]
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": out_meta, "spec": spec}


def _owner(job: JSON) -> JSON:
    meta = _dict(job.get("metadata"))
    return {"apiVersion": "batch/v1", "kind": "Job", "name": meta.get("name"), "uid": meta.get("uid"),
            "controller": True, "blockOwnerDeletion": True}


def _pod(job: JSON, index: int, indexed: bool) -> JSON:
    meta = _dict(job.get("metadata"))
    template = _dict(_dict(job.get("spec")).get("template"))
    tmeta = _dict(template.get("metadata"))
    name, uid = str(meta.get("name")), str(meta.get("uid"))
    labels = {**{str(k): str(v) for k, v in _dict(tmeta.get("labels")).items()},
              JOB_NAME: name, LEGACY_JOB_NAME: name, CONTROLLER_UID: uid, LEGACY_CONTROLLER_UID: uid}
    annotations = {str(k): str(v) for k, v in _dict(tmeta.get("annotations")).items()}
    if indexed:
        labels[COMPLETION_INDEX] = annotations[COMPLETION_INDEX] = str(index)
    pod_name = f"{name}-{index}-{_suffix(uid, index)}" if indexed else f"{name}-{_suffix(uid, index)}"
    pod_meta: JSON = {"name": pod_name, "namespace": meta.get("namespace"), "labels": labels,
                      "ownerReferences": [_owner(job)]}
    if annotations:
        pod_meta["annotations"] = annotations
    if meta.get("creationTimestamp") is not None:
        pod_meta["creationTimestamp"] = meta["creationTimestamp"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": dict(_dict(template.get("spec")))}


def expand(job: JSON, scheduler_name: str, has_pods: bool, podgroup_exists: Any) -> Expansion:
    """The pods and PodGroup the cluster would make of ``job`` (a ``batch/v1`` Job as read, with its namespace and
    uid set), per the module docstring. ``has_pods``: a pod of the snapshot already belongs to it;
    ``podgroup_exists(name)``: whether the snapshot has a PodGroup of that name in the Job's namespace. Never
    raises on a malformed Job: a missing or mistyped count reads as its default."""
    meta, spec = _dict(job.get("metadata")), _dict(job.get("spec"))
    ident = f"batch/v1 Job {meta.get('namespace')}/{meta.get('name')}"
    name = str(meta.get("name"))
    template_spec = _dict(_dict(spec.get("template")).get("spec"))
    opted_in = _dict(meta.get("labels")).get(OPT_IN) == OPT_IN_VALUE
    named = template_spec.get("schedulerName") or DEFAULT_SCHEDULER
    ours = named == scheduler_name or (opted_in and named in (DEFAULT_SCHEDULER, scheduler_name))
    if has_pods or not ours:
        return Expansion((), (), None)
    if spec.get("suspend") is True:
        return Expansion((), (), f"{ident} is suspended (spec.suspend): no pod is made until it is resumed")
    count = pod_count(spec)
    indexed = spec.get("completionMode") == "Indexed"
    pods = [_pod(job, i, indexed) for i in range(count)]
    group: JSON | None = None
    how = "without a group"
    if spec.get("scheduling") is not None:
        group = _scheduling_group(job, name)
        how = f"in PodGroup {name} (from spec.scheduling, as the Job controller makes it)"
    elif _dict(template_spec.get("schedulingGroup")).get("podGroupName"):
        how = f"in PodGroup {template_spec['schedulingGroup']['podGroupName']} (the template's schedulingGroup)"
    elif opted_in:
        wanted = desired(JOB, job, composite=False)
        minimum = wanted.groups[0].minimum
        group = _podgroup(job, name, {"schedulingPolicy": {"gang": {"minCount": minimum}}})
        how = f"in PodGroup {name} (gang minCount {minimum}, as the operator makes it for {OPT_IN})"
        how += "".join(f"; {warning}" for warning in wanted.warnings)
    for pod in pods:
        if opted_in:  # the operator's pod webhook
            pod["spec"]["schedulerName"] = scheduler_name
        if group is not None:
            pod["spec"]["schedulingGroup"] = {"podGroupName": name}
    if group is not None and podgroup_exists(name):
        how += "; the snapshot's PodGroup of that name is used"
        group = None
    note = f"{ident}: {count} pod(s) made from its template, as the Job controller would, {how}"
    return Expansion(tuple(pods), (group,) if group is not None else (), note)


def add_expansions(objects: Objects, scheduler_name: str) -> list[str]:
    """Expand every Job of ``objects`` (:func:`expand`) into ``objects``, as if its pods and PodGroup had been read
    from the Job's file (so they are checked as any object read is); the report's notes, one per Job with one."""
    job_pods = {(pod.metadata.namespace, pod.metadata.labels.get(JOB_NAME)) for pod in objects.pods}
    podgroups = {(g.metadata.namespace, g.metadata.name) for g in objects.podgroups}
    notes = []
    for source, job in objects.jobs:
        meta = job["metadata"]
        ns = meta["namespace"]
        made = expand(job, scheduler_name, (ns, meta.get("name")) in job_pods,
                      lambda name, ns=ns: (ns, name) in podgroups)
        for obj in (*made.groups, *made.pods):
            objects.add(source, obj)
        if made.note is not None:
            notes.append(made.note)
    return notes
