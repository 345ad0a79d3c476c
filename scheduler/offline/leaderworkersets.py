"""What a LeaderWorkerSet given to ``simulate`` becomes: the pods its StatefulSets would make, and the operator's
groups.

A LeaderWorkerSet (``leaderworkerset.x-k8s.io/v1``, kubernetes-sigs/lws ``api/leaderworkerset/v1``) of ours — a
template it makes pods of names our scheduler, or it is labelled ``gang-scheduler.io/gang: "true"`` and those templates
name no other — that has no running or pending pod in the snapshot (by ``leaderworkerset.sigs.k8s.io/name``) is
expanded as the cluster would expand it:

* **Leaders**: ``replicas`` (default 1) groups, each led by pod ``<lws>-<group>`` of the leader StatefulSet ``<lws>``
  (``pkg/controllers/leaderworkerset_controller.go`` ``constructLeaderStatefulSetApplyConfiguration``), from
  ``leaderTemplate``, else ``workerTemplate``, labelled ``leaderworkerset.sigs.k8s.io/name`` and ``…/worker-index:
  "0"``, annotated ``…/size`` (and ``…/exclusive-topology`` when the LeaderWorkerSet is); LWS's pod webhook
  (``pkg/webhooks/pod_webhook.go``) adds ``…/group-index`` (the pod's ordinal) and ``…/group-key`` (the SHA-1 of
  ``<namespace>/<leader>``, ``genGroupUniqueKey``) and, with ``exclusive-topology``, the required pod affinity to the
  group's key and anti-affinity to every other key in that topology (``SetExclusiveAffinities``).
* **Workers**: pods ``<lws>-<group>-1`` … ``<lws>-<group>-<size − 1>`` (``size`` defaults to 1) of one StatefulSet per
  group, ``<lws>-<group>``, ordinals from 1 (``pkg/controllers/pod_controller.go``
  ``constructWorkerStatefulSetApplyConfiguration``), from ``workerTemplate``, labelled ``…/name``, ``…/group-index``,
  ``…/group-key`` (the leader's) and, by the pod webhook, ``…/worker-index``; annotated ``…/size`` and
  ``…/leader-name``. The pod controller makes a group's worker StatefulSet when the leader pod exists — unless
  ``startupPolicy: LeaderReady`` (only once the leader is ready) or the LeaderWorkerSet is annotated
  ``exclusive-topology`` (only once the leader is scheduled, with a node selector for its domain): then only the leaders
  are made here, as that is all the cluster holds before any pod is scheduled, and the note says why.
* Each pod is named, labelled and given a host name as its StatefulSet gives it (kubernetes
  ``pkg/controller/statefulset/stateful_set_utils.go``: ``<set>-<ordinal>``, ``statefulset.kubernetes.io/pod-name``,
  ``apps.kubernetes.io/pod-index``, ``hostname``, ``subdomain`` the set's service: the LeaderWorkerSet's name, or the
  leader's with ``networkConfig.subdomainPolicy: UniquePerReplica``), owned by it and created when the
  LeaderWorkerSet was. Not set: the ``…/template-revision-hash`` and ``controller-revision-hash`` labels, whose values
  are hashes of controller revisions that cannot be made here (no scheduling rule reads them), and the environment LWS
  adds (``LWS_LEADER_ADDRESS``, …).
* **Claims**: both StatefulSets carry ``leaderWorkerTemplate.volumeClaimTemplates``, so each pod gets a
  PersistentVolumeClaim per template, ``<template>-<pod>``, labelled with the template's labels and its set's selector
  (``getPersistentVolumeClaims``), and a volume of the template's name using it in place of any volume of that name
  (``updateStorage``). A claim of that name the snapshot holds is used instead, as the StatefulSet controller uses it.
  A claim without a class gets the snapshot's default StorageClass, as the API server's ``DefaultStorageClass``
  admission gives it (kubernetes ``pkg/volume/util/storageclass.go`` ``GetDefaultClass``: the newest class annotated
  ``storageclass.kubernetes.io/is-default-class: "true"``, then by name).
* **The groups** of a labelled LeaderWorkerSet, as the operator makes them (:mod:`scheduler.offline.operator_trees`):
  per group a CompositePodGroup ``<lws>-<group>`` over the PodGroups ``<lws>-<group>-leader`` (``gang.minCount`` 1)
  and, when ``size`` > 1, ``<lws>-<group>-workers`` (``size − 1``), each pod in its PodGroup and pointed at the
  scheduler, as the operator's pod webhook does; a group of a name the snapshot holds already is used instead. The
  operator makes every group whole: where the workers are made only later, the groups wait for them, as they would
  live. It does not honour ``spec.leaderWorkerTemplate.subGroupPolicy`` (docs/operator.md): each group is one gang, and
  the subgroup labels and affinities LWS's pod webhook adds are not made here; the note says so when it is set.

Not expanded, named in a note: one with ``replicas: 0``, one of more than
:data:`~scheduler.offline.jobs.MAX_PODS_PER_JOB` pods (a group is all its pods), one whose pod name a pod of the
snapshot has, one that sets ``spec.scheduling`` (LWS's own Workload and PodGroups, not simulated) or
``spec.groupIdentity: Hash`` (hash-named groups whose leaders a Deployment makes, not simulated); the operator supports
neither (docs/operator.md). A LeaderWorkerSet has neither a suspended nor a finished state
(``LeaderWorkerSetSpec`` has no ``suspend``; a served model runs until deleted). One the API server or LWS's webhook
(``pkg/webhooks/leaderworkerset_webhook.go``) would refuse for what is read here is an invalid object: a name that is
not a DNS-1035 label, a count that is not an integer in range (``replicas`` ≥ 0, ``size`` ≥ 1, their product at most
2147483647), a template without containers, a ``startupPolicy`` or ``subdomainPolicy`` outside its enum, a
``subGroupSize`` that does not divide ``size`` or ``size − 1``.
No I/O.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from typing import Any

from scheduler.groups.workloads import (
    LEADERWORKERSET,
    LWS_EXCLUSIVE_TOPOLOGY,
    LWS_GROUP_INDEX,
    LWS_LEADER_READY,
    LWS_NAME,
    LWS_WORKER_INDEX,
    OPT_IN,
    OPT_IN_VALUE,
    as_dict,
    lws_workers_deferred,
)
from scheduler.model.base import INT32_MAX
from scheduler.model.storage import default_class, names_no_class
from scheduler.offline import jobs
from scheduler.offline.jobs import Expansion, Expansions, is_count, made_meta, strings
from scheduler.offline.loader import Objects, snapshot_uid
from scheduler.offline.operator_trees import tree_objects, webhook_pod

JSON = dict[str, Any]

SIZE = "leaderworkerset.sigs.k8s.io/size"
GROUP_KEY = "leaderworkerset.sigs.k8s.io/group-key"
LEADER_NAME = "leaderworkerset.sigs.k8s.io/leader-name"
SUBDOMAIN_POLICY = "leaderworkerset.sigs.k8s.io/subdomainPolicy"
"""LWS's labels and annotations on its pods (``api/leaderworkerset/v1/leaderworkerset_types.go``), with
:data:`~scheduler.groups.workloads.LWS_NAME`, ``LWS_GROUP_INDEX`` and ``LWS_WORKER_INDEX``."""
STS_POD_NAME = "statefulset.kubernetes.io/pod-name"
STS_POD_INDEX = "apps.kubernetes.io/pod-index"
"""The StatefulSet controller's labels on its pods (kubernetes ``pkg/controller/statefulset``: ``updateIdentity``)."""
STARTUP_POLICIES = frozenset({"LeaderCreated", LWS_LEADER_READY})
UNIQUE_PER_REPLICA = "UniquePerReplica"
SUBDOMAIN_POLICIES = frozenset({"Shared", UNIQUE_PER_REPLICA})
ORDINAL_IDENTITY = "Ordinal"
"""``spec.groupIdentity`` of groups named by the leader StatefulSet's ordinals (the default; ``Hash`` is the other)."""
TEMPLATE = "spec.leaderWorkerTemplate"


def size(lws: JSON) -> int:
    """The pods of one group: ``spec.leaderWorkerTemplate.size``, default 1 (``lws`` passed :func:`problem`)."""
    value = lws["spec"]["leaderWorkerTemplate"].get("size")
    return 1 if value is None else int(value)


def problem(lws: JSON) -> str | None:
    """What the API server or LWS's webhook would refuse in what is read of ``lws``, or None (the module docstring
    lists it)."""
    if (why := jobs.head_problem(lws)) is not None:
        return why
    spec = lws["spec"]
    count = spec.get("replicas")
    if count is not None and not (is_count(count) and count <= INT32_MAX):
        return f"spec.replicas must be a non-negative integer (got {count!r})"
    template = spec.get("leaderWorkerTemplate")
    if not isinstance(template, dict):
        return f"{TEMPLATE} is required"
    pods = template.get("size")
    if pods is not None and not (is_count(pods) and 1 <= pods <= INT32_MAX):
        return f"{TEMPLATE}.size must be an integer of at least 1 (got {pods!r})"
    if (1 if count is None else count) * (1 if pods is None else pods) > INT32_MAX:
        return f"the product of spec.replicas and {TEMPLATE}.size must not exceed {INT32_MAX}"
    if jobs.template_containers(template.get("workerTemplate")) is None:
        return f"{TEMPLATE}.workerTemplate.spec.containers is required"
    if template.get("leaderTemplate") is not None and jobs.template_containers(template["leaderTemplate"]) is None:
        return f"{TEMPLATE}.leaderTemplate.spec.containers is required"
    claims = template.get("volumeClaimTemplates")
    if claims is not None and not (isinstance(claims, list) and all(
            isinstance(c, dict) and isinstance(as_dict(c.get("metadata")).get("name"), str)
            and as_dict(c.get("metadata"))["name"] for c in claims)):
        return f"{TEMPLATE}.volumeClaimTemplates must be a list of claims, each with a metadata.name"
    if spec.get("startupPolicy") not in (None, *STARTUP_POLICIES):
        return f"spec.startupPolicy must be LeaderCreated or LeaderReady (got {spec['startupPolicy']!r})"
    subdomain = as_dict(spec.get("networkConfig")).get("subdomainPolicy")
    if subdomain not in (None, *SUBDOMAIN_POLICIES):
        return f"spec.networkConfig.subdomainPolicy must be Shared or UniquePerReplica (got {subdomain!r})"
    subgroups = template.get("subGroupPolicy")
    if subgroups is not None:
        every = as_dict(subgroups).get("subGroupSize")
        if not isinstance(every, int) or isinstance(every, bool) or every < 1:
            return f"{TEMPLATE}.subGroupPolicy.subGroupSize must be an integer of at least 1 (got {every!r})"
        group = 1 if pods is None else int(pods)
        if every > group or (group % every and (group - 1) % every):
            return f"{TEMPLATE}.subGroupPolicy.subGroupSize must be at most size and divide size or size - 1"
    return None


def _templates(lws: JSON) -> list[JSON]:
    """The pod templates ``lws`` makes pods of: its leaders' (``leaderTemplate``, else ``workerTemplate``), and
    ``workerTemplate`` when a group has workers."""
    template = lws["spec"]["leaderWorkerTemplate"]
    leader = template.get("leaderTemplate") or template["workerTemplate"]
    return [leader, template["workerTemplate"]] if size(lws) > 1 else [leader]


def group_key(namespace: str, leader: str) -> str:
    """The ``…/group-key`` of the group led by pod ``leader``: the hex SHA-1 of ``<namespace>/<leader>``."""
    return hashlib.sha1(f"{namespace}/{leader}".encode(), usedforsecurity=False).hexdigest()


def _exclusive(pod_spec: JSON, key: str, topology: str) -> None:
    """LWS's exclusive placement of a group's pods in ``topology`` (``SetExclusiveAffinities``): required affinity to
    the pods of group ``key``, anti-affinity to those of every other group; nothing when both are there already."""
    affinity = pod_spec["affinity"] = as_dict(pod_spec.get("affinity"))
    affine = affinity["podAffinity"] = as_dict(affinity.get("podAffinity"))
    anti = affinity["podAntiAffinity"] = as_dict(affinity.get("podAntiAffinity"))
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    affine_terms = affine[required] = list(affine.get(required) or [])
    anti_terms = anti[required] = list(anti.get(required) or [])
    if any(as_dict(t).get("topologyKey") == topology for t in affine_terms) and any(
            as_dict(t).get("topologyKey") == topology for t in anti_terms):
        return
    affine_terms.append({"labelSelector": {"matchExpressions": [
        {"key": GROUP_KEY, "operator": "In", "values": [key]}]}, "topologyKey": topology})
    anti_terms.append({"labelSelector": {"matchExpressions": [
        {"key": GROUP_KEY, "operator": "Exists"}, {"key": GROUP_KEY, "operator": "NotIn", "values": [key]}]},
        "topologyKey": topology})


def _claim_templates(lws: JSON) -> list[JSON]:
    """``spec.leaderWorkerTemplate.volumeClaimTemplates`` of ``lws`` (which passed :func:`problem`)."""
    return list(lws["spec"]["leaderWorkerTemplate"].get("volumeClaimTemplates") or [])


def _pod(lws: JSON, template: JSON, statefulset: str, ordinal: int, labels: dict[str, str],
         annotations: dict[str, str], subdomain: str) -> JSON:
    """Pod ``<statefulset>-<ordinal>`` of ``template``, as the StatefulSet ``statefulset`` of ``lws`` makes it, with
    LWS's ``labels`` and ``annotations`` over the template's and a volume per claim template."""
    meta = lws["metadata"]
    ns = meta["namespace"]
    owner = {"apiVersion": "apps/v1", "kind": "StatefulSet",
             "metadata": {"name": statefulset, "namespace": ns, "creationTimestamp": meta.get("creationTimestamp"),
                          "uid": snapshot_uid("apps/v1", "StatefulSet", ns, f"{statefulset}@{meta['uid']}")}}
    template = copy.deepcopy(template)
    tmeta = as_dict(template.get("metadata"))
    name = f"{statefulset}-{ordinal}"
    spec = template["spec"]
    spec["hostname"], spec["subdomain"] = name, subdomain
    if claims := [c["metadata"]["name"] for c in _claim_templates(lws)]:
        spec["volumes"] = [*({"name": claim, "persistentVolumeClaim": {"claimName": f"{claim}-{name}"}}
                             for claim in claims),
                           *(v for v in spec.get("volumes") or () if as_dict(v).get("name") not in claims)]
    pod_meta = {**made_meta(owner, name), "labels": {**strings(tmeta.get("labels")), **labels, STS_POD_NAME: name,
                                                     STS_POD_INDEX: str(ordinal)}}
    if annotations := {**strings(tmeta.get("annotations")), **annotations}:
        pod_meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}


def pods(lws: JSON) -> list[JSON]:
    """The pods the StatefulSets of ``lws`` (which passed :func:`problem`, with its name, namespace and uid set) make
    before any of them is scheduled, per the module docstring: every leader, then the workers of each group unless
    :func:`~scheduler.groups.workloads.lws_workers_deferred`."""
    meta, spec = lws["metadata"], lws["spec"]
    name, ns = meta["name"], meta["namespace"]
    template = spec["leaderWorkerTemplate"]
    n = size(lws)
    unique = as_dict(spec.get("networkConfig")).get("subdomainPolicy") == UNIQUE_PER_REPLICA
    topology = as_dict(meta.get("annotations")).get(LWS_EXCLUSIVE_TOPOLOGY)
    leaders, workers = [], []
    for group in range(jobs.replicas(lws["spec"])):
        leader = f"{name}-{group}"
        key = group_key(ns, leader)
        annotations = {SIZE: str(n), **({LWS_EXCLUSIVE_TOPOLOGY: str(topology)} if topology else {}),
                       **({SUBDOMAIN_POLICY: UNIQUE_PER_REPLICA} if unique else {})}
        labels = {LWS_WORKER_INDEX: "0", LWS_NAME: name, LWS_GROUP_INDEX: str(group), GROUP_KEY: key}
        pod = _pod(lws, template.get("leaderTemplate") or template["workerTemplate"], name, group, labels, annotations,
                   leader if unique else name)
        if topology:
            _exclusive(pod["spec"], key, str(topology))
        leaders.append(pod)
        if lws_workers_deferred(lws) is not None:
            continue
        for index in range(1, n):
            labels = {LWS_NAME: name, LWS_GROUP_INDEX: str(group), GROUP_KEY: key, LWS_WORKER_INDEX: str(index)}
            workers.append(_pod(lws, template["workerTemplate"], leader, index, labels,
                                {SIZE: str(n), LEADER_NAME: leader}, leader if unique else name))
    return leaders + workers


def claims(lws: JSON, made: list[JSON], default: str | None = None) -> list[JSON]:
    """The PersistentVolumeClaims the StatefulSets of ``lws`` make with its pods ``made`` (:func:`pods`), per the module
    docstring, pod by pod; ``default``: the class a claim without one gets
    (:func:`~scheduler.model.storage.default_class`)."""
    ns = lws["metadata"]["namespace"]
    out = []
    for pod in made:
        labels = pod["metadata"]["labels"]
        leader = labels[LWS_WORKER_INDEX] == "0"  # the leaders' StatefulSet's selector, or the group's workers'
        selector = {key: labels[key] for key in ((LWS_NAME, LWS_WORKER_INDEX) if leader else
                                                 (LWS_NAME, LWS_GROUP_INDEX, GROUP_KEY))}
        for template in _claim_templates(lws):
            tmeta = template["metadata"]
            meta: JSON = {"name": f"{tmeta['name']}-{pod['metadata']['name']}", "namespace": ns,
                          "labels": {**strings(tmeta.get("labels")), **selector}}
            if annotations := strings(tmeta.get("annotations")):
                meta["annotations"] = annotations
            spec = copy.deepcopy(as_dict(template.get("spec")))
            if default is not None and names_no_class(spec.get("storageClassName"), meta.get("annotations", {})):
                spec["storageClassName"] = default
            out.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec})
    return out


def _unsupported(lws: JSON) -> str | None:
    """Why ``lws`` is not simulated (a feature the operator does not support either), or None."""
    spec = lws["spec"]
    if spec.get("scheduling") is not None:
        return "it sets spec.scheduling: LeaderWorkerSet's own Workload and PodGroups are not simulated"
    if spec.get("groupIdentity") not in (None, ORDINAL_IDENTITY):
        return (f"spec.groupIdentity {spec['groupIdentity']}: its hash-named groups, whose leaders a Deployment makes, "
                "are not simulated")
    return None


def expand(lws: JSON, scheduler_name: str, active_pods: int, exists: Callable[[str, str], bool],
           taken: Callable[[str], bool], claimed: Callable[[str], bool], default: str | None = None,
           composite: bool = True) -> Expansion:
    """The pods, claims and groups the cluster would make of ``lws`` (which passed :func:`problem`, with its name,
    namespace and uid set) before any of them is scheduled, per the module docstring. ``active_pods``: its running or
    pending pods in the snapshot; ``exists(kind, name)`` / ``taken(name)`` / ``claimed(name)``: whether its namespace
    holds a PodGroup or CompositePodGroup / a pod / a PersistentVolumeClaim of that name; ``default``: the StorageClass
    a claim without one gets (:func:`~scheduler.model.storage.default_class`); ``composite``: CompositePodGroups are
    served (else the operator makes each group one PodGroup of its pods)."""
    if active_pods:  # what a dump holds: its pods are there
        return Expansion()
    if (why := jobs.not_ours(lws, _templates(lws), scheduler_name)) is not None:
        return Expansion(foreign=why if jobs.replicas(lws["spec"]) > 0 else None)  # no group: no pod to make anyway
    meta = lws["metadata"]
    if (why := _unsupported(lws)) is not None:
        return Expansion(skipped=why)
    groups, n = jobs.replicas(lws["spec"]), size(lws)
    if not groups:
        return Expansion(skipped="nothing to run: replicas 0")
    deferred = lws_workers_deferred(lws)
    wanted = groups * (1 if deferred else n)
    if (why := jobs.too_many(wanted)) is not None:
        return Expansion(skipped=why)
    made = pods(lws)
    if (why := jobs.name_taken(made, taken)) is not None:
        return Expansion(skipped=why)
    opted_in = as_dict(meta.get("labels")).get(OPT_IN) == OPT_IN_VALUE
    objects: tuple[JSON, ...] = ()
    tree = None
    if opted_in:
        tree = tree_objects(LEADERWORKERSET, lws, exists, composite)
        objects = tree.objects
        roles = "its leader's PodGroup and its workers'" if n > 1 else "its leader's PodGroup"
        how = (f"in a CompositePodGroup per group, {meta['name']}-<group>, over {roles}, as the operator makes them "
               f"for {OPT_IN}" if composite else
               f"in a PodGroup per group, {meta['name']}-<group>, of its leader and workers, as the operator makes "
               f"them for {OPT_IN} where no CompositePodGroup is served") + tree.suffix()
        how += "".join(f"; {warning}" for pod in made if (warning := webhook_pod(pod, scheduler_name, composite)))
    else:
        how = "without a group"
    if deferred:
        how += f"; only the leaders are made ({deferred})"
        if tree is not None and tree.wanted.never_starts is not None:
            how += "; the operator's gang of each group waits for its workers, so no group would start"
    wanted_claims = claims(lws, made, default)
    new_claims = tuple(c for c in wanted_claims if not claimed(c["metadata"]["name"]))
    if held := len(wanted_claims) - len(new_claims):
        how += (f"; {len(wanted_claims)} PersistentVolumeClaim(s) of its volumeClaimTemplates, as the StatefulSets "
                f"make them ({held} of them the snapshot's, used)")
    elif wanted_claims:
        how += (f"; {len(wanted_claims)} PersistentVolumeClaim(s) of its volumeClaimTemplates, as the StatefulSets "
                "make them")
    if lws["spec"]["leaderWorkerTemplate"].get("subGroupPolicy") is not None:
        how += (f"; {TEMPLATE}.subGroupPolicy is not honoured: each group is one gang, and the subgroups' labels and "
                "affinities are not made")
    note = (f"{LEADERWORKERSET.api_version} {LEADERWORKERSET.kind} {meta['namespace']}/{meta['name']}: {len(made)} "
            f"pod(s) of {groups} group(s) of {n} made as the LeaderWorkerSet and StatefulSet controllers would, {how}")
    return Expansion(tuple(made), objects, note, claims=new_claims)


def add_expansions(objects: Objects, scheduler_name: str) -> Expansions:
    """Expand every LeaderWorkerSet of ``objects`` (:func:`expand`) into ``objects``, as if its pods and groups had
    been read from its file; one :func:`problem` refuses goes to ``objects.problems``. Returns the report's note of
    each LeaderWorkerSet expanded, and those of ours not expanded with why (``LeaderWorkerSet ns/name (why)``). Run
    after the other workloads', whose pods it counts as taken names."""
    default = default_class(objects.storage_classes)

    def make(lws: JSON, held: jobs.Held) -> Expansion:
        ns, name = lws["metadata"]["namespace"], lws["metadata"]["name"]
        return expand(lws, scheduler_name, held.active[ns, name], held.exists(ns), held.taken(ns).__contains__,
                      held.claimed(ns), default, objects.serves_composites)

    return jobs.add_each(objects, LEADERWORKERSET.kind, objects.leaderworkersets, LWS_NAME, problem, make)
