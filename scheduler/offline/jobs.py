"""What a batch/v1 Job given to ``simulate`` becomes: the pods its controller would make, and their PodGroup.

A snapshot holds the pods a Job's controller has made; a workload file given to ask "would it fit"
(``--add job.yaml``) holds the Job alone. A Job of ours — its template names our scheduler, or it is labelled
``gang-scheduler.io/gang: "true"`` and its template names no other — that has no running or pending pod in the
snapshot is expanded here before the snapshot is scheduled, as the cluster would expand it:

* **Pods**, as the Job controller makes them (kubernetes ``pkg/controller/job``): ``min(parallelism,
  completions − succeeded)`` of them (``parallelism`` defaults to 1; without ``completions``, ``parallelism``),
  at most :data:`MAX_PODS_PER_JOB` of a Job without a group (one in a group that would run more is not made: its
  group is judged on all of them), from ``spec.template``, named ``<job>-<suffix>`` (``completionMode:
  Indexed``: ``<job>-<index>-<suffix>``, with the ``batch.kubernetes.io/job-completion-index`` label and
  annotation), labelled ``batch.kubernetes.io/job-name`` and ``batch.kubernetes.io/controller-uid`` (and the
  legacy ``job-name`` / ``controller-uid``), owned by the Job, created when the Job was. The suffix stands for
  the API server's random one (``generateName``): the same on every run, never the same for two pods, never the
  name of a pod of the snapshot. A Job written with ``generateName`` and no name is named so too.
* **The group**, the first of these that applies:

  1. The template sets ``spec.schedulingGroup``: the user's own PodGroup; nothing is made (the Job controller
     makes nothing either, KEP-5547).
  2. ``spec.scheduling`` (KEP-5547, gate ``WorkloadWithJob``): the Job controller's PodGroup, with the
     policy (``basic`` when unset; a ``gang`` without ``minCount`` takes ``parallelism``, at least 1, as the
     controller defaults it), ``schedulingConstraints``, ``disruptionMode`` and ``resourceClaims`` of
     ``spec.scheduling`` (component-helpers ``workloadbuilder``). It is named ``<job>`` here; the controller
     names it ``<workload>-<template>-<hash>`` and makes a Workload too, which the scheduler does not read.
  3. The Job is labelled ``gang-scheduler.io/gang: "true"``: the operator's PodGroup ``<job>``
     (:func:`~scheduler.groups.workloads.desired`: ``gang.minCount`` = ``min(parallelism, completions)``,
     or the ``gang-scheduler.io/min-count`` annotation).
  4. Otherwise the pods have no group (each is a root of its own).

  A labelled Job's pods get our ``schedulerName`` as the operator's pod webhook sets it.

A Job of ours is not expanded when it has running or pending pods in the snapshot (by its
``batch.kubernetes.io/controller-uid``, else its ``batch.kubernetes.io/job-name``) or has finished (a ``Complete``
or ``Failed`` condition) — what a dump of a cluster holds — nor when it is suspended (``spec.suspend``: Kueue holds
a queued Job so until it admits it) or managed by another controller (``spec.managedBy``, MultiKueue), which one
note names. A PodGroup of the
name it would make that the snapshot holds already is used instead. A Job the API server would refuse for what is
read here (a count that is not a non-negative integer, no template with containers) is an invalid object.
No I/O.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from scheduler.groups.workloads import JOB, JOB_NAME, OPT_IN, OPT_IN_VALUE, as_dict, desired
from scheduler.model.base import INT32_MAX
from scheduler.offline.loader import JOB_API_VERSION, LoadProblem, Objects, snapshot_uid

JSON = dict[str, Any]

CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
LEGACY_JOB_NAME = "job-name"
LEGACY_CONTROLLER_UID = "controller-uid"
DEFAULT_SCHEDULER = "default-scheduler"
JOB_CONTROLLER = "kubernetes.io/job-controller"
"""``spec.managedBy`` of a Job the built-in Job controller manages (the default)."""
FINISHED = frozenset({"Complete", "Failed"})
SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""The characters of the API server's ``generateName`` suffix (apimachinery ``utilrand.String``), 5 of them."""
_SUFFIXES = len(SUFFIX_ALPHABET) ** 5
_STEP = 4_782_971
"""Not a multiple of 3, so coprime to ``27**5``: pod ``i``'s suffix number ``(start + i * _STEP) % 27**5`` differs
for every ``i`` below ``27**5``."""
MAX_INDEXED_PARALLELISM = 100_000
"""The most ``parallelism`` an Indexed Job may have (batch validation)."""
MAX_PODS_PER_JOB = 10_000
"""Pods made of one Job at most: a larger Job is simulated with this many (and the note says so)."""


@dataclass(frozen=True)
class Expansion:
    """What one workload became: ``pods``, ``groups`` and ``claims`` (PersistentVolumeClaims its controller makes with
    the pods) — raw API objects, to be loaded as if read from the workload's file —, the report's ``note`` (None when
    nothing was made), ``skipped``: why it was not expanded (None when it was, or when it is not ours), and
    ``foreign``: why it is not ours (:func:`not_ours`), when it would otherwise have been made into pods (neither
    finished, suspended, managed by another controller, with no pod to run nor with pods in the snapshot), so the
    report can say why nothing was made of it."""

    pods: tuple[JSON, ...] = ()
    groups: tuple[JSON, ...] = ()
    note: str | None = None
    skipped: str | None = None
    claims: tuple[JSON, ...] = ()
    foreign: str | None = None


@dataclass
class Expansions:
    """What the workloads of one kind became (each module's ``add_expansions``): ``notes``, the report's line per
    workload made into pods; ``skipped``, the workloads of ours not made into pods, with why (``Kind ns/name
    (why)``); ``foreign``, the workloads given without their pods that are not ours, with why (the same)."""

    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)



def too_many(wanted: int) -> str | None:
    """Why a workload of ``wanted`` pods at once, all of one gang, is not made: more than :data:`MAX_PODS_PER_JOB`
    (none is left out to make it smaller); None when it is not too many."""
    if wanted <= MAX_PODS_PER_JOB:
        return None
    return f"{wanted} pods at once, more than simulate makes of one workload ({MAX_PODS_PER_JOB})"


def name_taken(made: Iterable[JSON], taken: Callable[[str], bool]) -> str | None:
    """Why the pods ``made`` are not made: the first whose name ``taken`` says its namespace holds; else None."""
    clash = next((p["metadata"]["name"] for p in made if taken(p["metadata"]["name"])), None)
    return None if clash is None else f"its pod {clash} exists already"


_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
"""apimachinery ``dns1035LabelFmt``, with at most 63 characters (``IsDNS1035Label``)."""


def replicas(spec: JSON) -> int:
    """``replicas`` of ``spec`` (a LeaderWorkerSet's spec, a PyTorchJob's replica spec), default 1 (``spec`` passed its
    kind's ``problem``)."""
    value = spec.get("replicas")
    return 1 if value is None else int(value)


def head_problem(workload: JSON) -> str | None:
    """What the API server or the workload's webhook refuses before anything of its kind is read: a ``spec`` that is
    not an object, a name that is not a DNS-1035 label (:func:`name_problem`); else None."""
    if not isinstance(workload.get("spec"), dict):
        return "spec must be an object"
    return name_problem(workload["metadata"]["name"])


def name_problem(name: str) -> str | None:
    """Why ``metadata.name`` ``name`` is refused where a workload's name must be a DNS-1035 label (a PyTorchJob's, a
    LeaderWorkerSet's: their webhooks refuse any other), or None."""
    if len(name) > 63 or not _DNS1035_LABEL.fullmatch(name):
        return "metadata.name must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter)"
    return None


def template_containers(template: Any) -> list[JSON] | None:
    """The containers of pod ``template``, or None when it has none the API server would take (not a non-empty list
    of objects)."""
    containers = as_dict(as_dict(template).get("spec")).get("containers")
    if not isinstance(containers, list) or not containers or not all(isinstance(c, dict) for c in containers):
        return None
    return containers


def is_count(value: Any) -> bool:
    """A JSON integer ≥ 0 (a bool is not one)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def problem(job: JSON) -> str | None:
    """What the API server would refuse in what is read of ``job`` (``batch/v1`` ``JobSpec`` validation), or None."""
    spec = job.get("spec")
    if not isinstance(spec, dict):
        return "spec must be an object"
    for key in ("parallelism", "completions"):
        if spec.get(key) is not None and not (is_count(spec[key]) and spec[key] <= INT32_MAX):
            return f"spec.{key} must be a non-negative integer of at most {INT32_MAX} (got {spec[key]!r})"
    if spec.get("completionMode") == "Indexed":
        if spec.get("completions") is None:
            return "spec.completions is required when completionMode is Indexed"
        if (spec.get("parallelism") or 0) > MAX_INDEXED_PARALLELISM:
            return f"spec.parallelism must be at most {MAX_INDEXED_PARALLELISM} when completionMode is Indexed"
    if spec.get("scheduling") is not None and not isinstance(spec["scheduling"], dict):
        return "spec.scheduling must be an object"
    template_spec = as_dict(spec.get("template")).get("spec")
    if not isinstance(template_spec, dict) or not isinstance(template_spec.get("containers"), list) or not \
            template_spec["containers"]:
        return "spec.template.spec.containers is required"
    return None


def pod_count(job: JSON) -> int:
    """The pods the Job controller runs at once: ``min(parallelism, completions − succeeded)``, ``parallelism``
    defaulting to 1 (``job`` must have passed :func:`problem`)."""
    spec = job["spec"]
    parallelism = spec.get("parallelism", 1)
    parallelism = 1 if parallelism is None else parallelism
    completions = spec.get("completions")
    if completions is None:
        return int(parallelism)
    succeeded = as_dict(job.get("status")).get("succeeded")
    remaining = completions - (succeeded if is_count(succeeded) else 0)
    return int(max(min(parallelism, remaining), 0))


def _suffix(number: int) -> str:
    out = []
    for _ in range(5):
        number, digit = divmod(number, len(SUFFIX_ALPHABET))
        out.append(SUFFIX_ALPHABET[digit])
    return "".join(out)


def generated_name(prefix: str, seed: str, taken: Callable[[str], bool], count: int = 1) -> Iterable[str]:
    """``count`` names ``<prefix><suffix>``, the same for the same ``seed`` on every run, none the same and none
    ``taken``; as the API server completes a ``generateName`` (its suffix random)."""
    start = int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big") % _SUFFIXES
    made: set[str] = set()
    for i in range(count):
        k = i
        while True:
            name = f"{prefix}{_suffix((start + k * _STEP) % _SUFFIXES)}"
            if name not in made and not taken(name):
                break
            k += count  # numbers of the other pods are i' + m·count: never this one's
        made.add(name)
        yield name


def _finished(job: JSON) -> bool:
    return any(as_dict(c).get("type") in FINISHED and as_dict(c).get("status") == "True"
               for c in as_dict(job.get("status")).get("conditions") or () if isinstance(c, dict))


def made_meta(owner: JSON, name: str) -> JSON:
    """The metadata of an object ``owner``'s controller makes (``owner``: a raw workload with its ``apiVersion``,
    ``kind``, name, namespace and uid set): ``name`` in ``owner``'s namespace, ``owner`` its controller, created when
    ``owner`` was."""
    meta = owner["metadata"]
    ref = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"], "uid": meta["uid"],
           "controller": True, "blockOwnerDeletion": True}
    out: JSON = {"name": name, "namespace": meta["namespace"], "ownerReferences": [ref]}
    if meta.get("creationTimestamp") is not None:
        out["creationTimestamp"] = meta["creationTimestamp"]
    return out


def strings(value: Any) -> dict[str, str]:
    """A map of labels or annotations as read (not an object: none), keys and values as strings."""
    return {str(k): str(v) for k, v in as_dict(value).items()}


def _podgroup(job: JSON, spec: JSON) -> JSON:
    meta = made_meta(job, job["metadata"]["name"])
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": meta, "spec": spec}


def _scheduling_group(job: JSON) -> JSON:
    """The PodGroup the Job controller compiles from ``spec.scheduling`` (route 2 of the module docstring)."""
    spec = job["spec"]
    scheduling = as_dict(spec.get("scheduling"))
    policy = as_dict(scheduling.get("schedulingPolicy"))
    if "gang" in policy:
        gang = as_dict(policy.get("gang"))
        minimum = gang.get("minCount")
        parallelism = spec.get("parallelism", 1)
        policy = {"gang": {**gang, "minCount": minimum if minimum is not None else max(parallelism or 0, 1)}}
    elif not policy:
        policy = {"basic": {}}
    group_spec: JSON = {"schedulingPolicy": policy}
    for key in ("schedulingConstraints", "disruptionMode", "resourceClaims"):
        if scheduling.get(key) is not None:
            group_spec[key] = scheduling[key]
    return _podgroup(job, group_spec)


def _pod(job: JSON, index: int, indexed: bool, name: str) -> JSON:
    meta = job["metadata"]
    template = job["spec"]["template"]
    tmeta = as_dict(template.get("metadata"))
    job_name, uid = meta["name"], meta["uid"]
    labels = {**strings(tmeta.get("labels")),
              JOB_NAME: job_name, LEGACY_JOB_NAME: job_name, CONTROLLER_UID: uid, LEGACY_CONTROLLER_UID: uid}
    annotations = strings(tmeta.get("annotations"))
    if indexed:
        labels[COMPLETION_INDEX] = annotations[COMPLETION_INDEX] = str(index)
    pod_meta = {**made_meta(job, name), "labels": labels}
    if annotations:
        pod_meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": dict(template["spec"])}


def not_ours(workload: JSON, templates: Iterable[JSON], scheduler_name: str) -> str | None:
    """Why the pods ``workload``'s pod ``templates`` make would not be ``scheduler_name``'s, or None when they would:
    a template names it, or the workload is labelled :data:`~scheduler.groups.workloads.OPT_IN` for the operator and
    a template names no scheduler (the operator's pod webhook then names ours)."""
    written = [as_dict(t.get("spec")).get("schedulerName") or None for t in templates]
    named = [n or DEFAULT_SCHEDULER for n in written]
    opted_in = as_dict(workload["metadata"].get("labels")).get(OPT_IN) == OPT_IN_VALUE
    if any(n == scheduler_name or (opted_in and n == DEFAULT_SCHEDULER) for n in named):
        return None
    # what the templates name as written: an explicit default-scheduler is told as such, an unset one as none
    what = ", ".join(sorted({str(n) for n in written if n is not None}))
    if None in written:
        what = f"{what} or no scheduler" if what else "no scheduler"
    if opted_in:
        return f"labelled {OPT_IN}, but its pod templates name {what}"
    if DEFAULT_SCHEDULER not in named:  # labelling it would not make it ours
        return f"its pod templates name {what}"
    return f"not labelled {OPT_IN} and its pod templates name {what}"


def expand(job: JSON, scheduler_name: str, active_pods: int, podgroup_exists: Callable[[str], bool],
           taken: Callable[[str], bool]) -> Expansion:
    """The pods and PodGroup the cluster would make of ``job`` (a ``batch/v1`` Job that passed :func:`problem`,
    with its name, namespace and uid set), per the module docstring. ``active_pods``: its running or pending pods in
    the snapshot; ``podgroup_exists(name)`` / ``taken(name)``: whether the snapshot has a PodGroup / a pod of that
    name in the Job's namespace."""
    meta, spec = job["metadata"], job["spec"]
    name = meta["name"]
    ident = f"batch/v1 Job {meta['namespace']}/{name}"
    if active_pods or _finished(job):  # what a dump holds: its pods are there, or it is done
        return Expansion()
    if (why := not_ours(job, [spec["template"]], scheduler_name)) is not None:
        # nothing to say of one waiting for its queue (Kueue) or another controller, or with no pod to run
        waits = spec.get("suspend") is True or spec.get("managedBy") not in (None, JOB_CONTROLLER)
        return Expansion(foreign=None if waits or not pod_count(job) else why)
    managed_by = spec.get("managedBy")
    skipped = ("suspended" if spec.get("suspend") is True
               else f"managed by {managed_by}" if managed_by not in (None, JOB_CONTROLLER) else None)
    if skipped is not None:
        return Expansion(skipped=skipped)
    template_spec = spec["template"]["spec"]
    opted_in = as_dict(meta.get("labels")).get(OPT_IN) == OPT_IN_VALUE
    wanted = pod_count(job)
    if not wanted:
        return Expansion(skipped="nothing to run: parallelism 0, or every completion done")
    grouped = (opted_in or spec.get("scheduling") is not None
               or bool(as_dict(template_spec.get("schedulingGroup")).get("podGroupName")))
    if grouped and (why := too_many(wanted)) is not None:  # a group is judged on all its pods: none is left out
        return Expansion(skipped=why)
    count = min(wanted, MAX_PODS_PER_JOB)
    indexed = spec.get("completionMode") == "Indexed"
    if indexed:
        names: Iterable[str] = (next(iter(generated_name(f"{name}-{i}-", f"{meta['uid']}/{i}", taken)))
                                for i in range(count))
    else:
        names = generated_name(f"{name}-", meta["uid"], taken, count)
    pods = [_pod(job, i, indexed, pod_name) for i, pod_name in enumerate(names)]
    group: JSON | None = None
    own_group = as_dict(template_spec.get("schedulingGroup")).get("podGroupName")
    if own_group:
        how = f"in PodGroup {own_group} (the template's schedulingGroup)"
    elif spec.get("scheduling") is not None:
        group = _scheduling_group(job)
        how = f"in PodGroup {name} (from spec.scheduling, as the Job controller makes it)"
    elif opted_in:
        desire = desired(JOB, job, composite=False)
        minimum = desire.groups[0].minimum
        group = _podgroup(job, {"schedulingPolicy": {"gang": {"minCount": minimum}}})
        how = f"in PodGroup {name} (gang minCount {minimum}, as the operator makes it for {OPT_IN})"
        how += "".join(f"; {warning}" for warning in desire.warnings)
    else:
        how = "without a group"
    for pod in pods:
        if opted_in:  # the operator's pod webhook
            pod["spec"]["schedulerName"] = scheduler_name
        if group is not None:
            pod["spec"]["schedulingGroup"] = {"podGroupName": name}
    if group is not None and podgroup_exists(name):
        how += "; the snapshot's PodGroup of that name is used"
        group = None
    made = f"{count} pod(s)" if count == wanted else f"{count} of its {wanted} pods (at most {MAX_PODS_PER_JOB})"
    note = f"{ident}: {made} made from its template, as the Job controller would, {how}"
    return Expansion(tuple(pods), (group,) if group is not None else (), note)


def add_expansions(objects: Objects, scheduler_name: str) -> Expansions:
    """Expand every Job of ``objects`` (:func:`expand`) into ``objects``, as if its pods and PodGroup had been read
    from the Job's file (so they are checked as any object read is); a Job :func:`problem` refuses goes to
    ``objects.problems``. Returns what the Jobs became (:class:`Expansions`, each named ``Job ns/name``)."""
    pods_by_ns: dict[str, set[str]] = {}
    active: dict[tuple[str, str], list[str | None]] = {}
    """(namespace, job name) → the controller uid of each running or pending pod carrying that job name."""
    for pod in objects.pods:
        md = pod.metadata
        pods_by_ns.setdefault(md.namespace, set()).add(md.name)
        if pod.status.phase not in ("Succeeded", "Failed") and (job_name := md.labels.get(JOB_NAME)):
            owner = md.labels.get(CONTROLLER_UID) or md.labels.get(LEGACY_CONTROLLER_UID)
            active.setdefault((md.namespace, job_name), []).append(owner)
    podgroups = {(g.metadata.namespace, g.metadata.name) for g in objects.podgroups}
    job_names = {(job["metadata"]["namespace"], job["metadata"].get("name")) for _, job in objects.jobs}
    out = Expansions()
    for position, (source, job) in enumerate(objects.jobs):
        meta = job["metadata"]
        ns = meta["namespace"]
        taken_here = pods_by_ns.setdefault(ns, set())
        uid_read = bool(meta.get("uid"))
        if not uid_read:  # as the loader derives an object's uid (a generateName Job: from its place among the Jobs)
            named = meta.get("name") or f"{meta['generateName']}#{position}"
            meta["uid"] = snapshot_uid(JOB_API_VERSION, "Job", ns, named)
        if not meta.get("name"):  # generateName: completed as the API server would, never an existing Job's name
            names_here = {name for job_ns, name in job_names if job_ns == ns}
            meta["name"] = next(iter(generated_name(meta["generateName"], meta["uid"], names_here.__contains__)))
            job_names.add((ns, meta["name"]))
        if (why := problem(job)) is not None:
            objects.problems.append(LoadProblem(source, "Job", ns, meta["name"], why))
            continue
        # its pods: by controller uid when the Job's uid was read from its file, else by job name
        running = sum(1 for owner in active.get((ns, meta["name"]), ())
                      if not uid_read or owner in (None, meta["uid"]))

        def has_podgroup(name: str, ns: str = ns) -> bool:
            return (ns, name) in podgroups

        made = expand(job, scheduler_name, running, has_podgroup, taken_here.__contains__)
        take(objects, source, made, taken_here, out, f"Job {ns}/{meta['name']}")
    return out


def take(objects: Objects, source: str, made: Expansion, taken: set[str], out: Expansions, ident: str) -> None:
    """Load what workload ``ident`` (``Kind ns/name``) ``made`` into ``objects`` as if read from ``source`` (so it
    is checked as any object read is), add its pods' names to ``taken``, and file its note, why it was skipped or
    that it is not ours in ``out``."""
    for obj in (*made.groups, *made.claims, *made.pods):
        objects.add(source, obj)
    taken.update(p["metadata"]["name"] for p in made.pods)
    if made.note is not None:
        out.notes.append(made.note)
    if made.skipped is not None:
        out.skipped.append(f"{ident} ({made.skipped})")
    if made.foreign is not None:
        out.foreign.append(f"{ident} ({made.foreign})")


@dataclass(frozen=True)
class Held:
    """What the snapshot holds that expanding a workload must know: the names of the pods of each namespace
    (``pods``), the running or pending pods carrying each value of one controller label (``active``:
    (namespace, value) → pods), the PodGroups and CompositePodGroups (``groups``: (kind, namespace, name)) and the
    PersistentVolumeClaims (``claims``: (namespace, name))."""

    pods: dict[str, set[str]]
    active: Counter[tuple[str, str]]
    groups: frozenset[tuple[str, str, str]]
    claims: frozenset[tuple[str, str]]

    def taken(self, namespace: str) -> set[str]:
        """The pod names of ``namespace``: the set itself, for :func:`take` to add the pods it makes to."""
        return self.pods.setdefault(namespace, set())

    def exists(self, namespace: str) -> Callable[[str, str], bool]:
        """Whether ``namespace`` holds a group of a kind and name: ``exists(kind, name)``."""
        return lambda kind, name: (kind, namespace, name) in self.groups

    def claimed(self, namespace: str) -> Callable[[str], bool]:
        """Whether ``namespace`` holds a PersistentVolumeClaim of a name: ``claimed(name)``."""
        return lambda name: (namespace, name) in self.claims


def held(objects: Objects, label: str) -> Held:
    """What ``objects`` hold (:class:`Held`), counting the running or pending pods by their ``label`` (a workload
    controller's name label, :attr:`~scheduler.groups.workloads.WorkloadKind.pod_label`)."""
    pods: dict[str, set[str]] = {}
    active: Counter[tuple[str, str]] = Counter()
    for pod in objects.pods:
        md = pod.metadata
        pods.setdefault(md.namespace, set()).add(md.name)
        if pod.status.phase not in ("Succeeded", "Failed") and (value := md.labels.get(label)):
            active[md.namespace, value] += 1
    groups = frozenset({("PodGroup", g.metadata.namespace, g.metadata.name) for g in objects.podgroups} | {
        ("CompositePodGroup", g.metadata.namespace, g.metadata.name) for g in objects.composites})
    claims = frozenset((c.metadata.namespace, c.metadata.name) for c in objects.volume_claims)
    return Held(pods, active, groups, claims)


def add_each(objects: Objects, kind: str, workloads: Iterable[tuple[str, JSON]], label: str,
             problem: Callable[[JSON], str | None], make: Callable[[JSON, Held], Expansion]) -> Expansions:
    """Expand ``workloads`` ((source file, raw object) of one ``kind``, named and namespaced by the loader) into
    ``objects`` as if what each makes had been read from its file: one ``problem`` refuses goes to
    ``objects.problems``; ``make(workload, held)`` says what the rest become, ``held`` being what ``objects`` hold
    (:func:`held`, pods counted by their controller's ``label``) with the pods made before it. Returns what they
    became, each named ``kind ns/name``."""
    snapshot = held(objects, label)
    out = Expansions()
    for source, workload in workloads:
        meta = workload["metadata"]
        ns, name = meta["namespace"], meta["name"]
        if (why := problem(workload)) is not None:
            objects.problems.append(LoadProblem(source, kind, ns, name, why))
            continue
        take(objects, source, make(workload, snapshot), snapshot.taken(ns), out, f"{kind} {ns}/{name}")
    return out
