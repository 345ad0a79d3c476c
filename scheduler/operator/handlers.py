"""The kopf handlers of the operator, registered on a registry of their own (:func:`build_registry`).

* **Workload handlers** (``on.create`` / ``on.update`` / ``on.resume`` of every opted-in kind of
  :data:`~scheduler.groups.workloads.WORKLOADS`): one level-triggered reconcile — create the
  groups the workload needs (parents first), owned by it through ``kopf.adopt``; keep each
  PodGroup's minimum equal to the workload's (a scaled Job gets its ``minCount`` patched: the
  kuberay#5205 bug is a PodGroup never updated on scale; on Kubernetes 1.36, where ``minCount`` is
  immutable, the PodGroup is deleted and made again while none of it is placed, else it keeps its
  minimum with a Warning Event — :meth:`Reconciler._recreate`); delete the groups it no longer needs (a
  LeaderWorkerSet scaled down). Deleting the workload needs nothing of ours: the owner references
  let the garbage collector delete its groups, so there is no finalizer. What cannot be honoured
  (an immutable CompositePodGroup policy, an override that does not apply, a group of the same
  name that is not ours) is posted as a Warning Event on the workload (``kopf.warn``).
* **Mutating webhooks** (``on.mutate``, on CREATE, persistent, failurePolicy Fail): a workload
  gets :data:`~scheduler.groups.workloads.OPT_IN` copied into its pod templates; a pod with that
  label gets ``schedulerName`` and its group link (``spec.schedulingGroup.podGroupName``, or the
  label ``scheduling.x-k8s.io/pod-group`` on scheduler-plugins clusters). Both webhooks select
  objects by that label (kopf puts the filter into the webhook's ``objectSelector``), so nothing
  else in the cluster waits on the operator.
* **Validating webhooks** (``on.validate``, failurePolicy Ignore: they are a convenience; the
  scheduler reports the same problems): PodGroups and CompositePodGroups, with the other groups and
  the node label keys from kopf indices. On CREATE only: what they add to the API server's own
  validation is cross-object (cycles, depth), and the parent link is immutable (PodGroup and
  CompositePodGroup ``spec.parentCompositePodGroupName``); an UPDATE can change only ``minCount``, which
  the API server checks itself — and the scheduler writes its groups' status conditions as it binds, which must
  not wait on the operator.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import logging
from collections.abc import Callable, Collection, Mapping
from typing import Any, Literal

import kopf

from scheduler.client.kube import COMPOSITES, PODS, ApiError, Conflict, KubeClient, NotFound, Resource
from scheduler.groups.workloads import (
    JOB,
    JOBSET_NAME,
    OPT_IN,
    OPT_IN_VALUE,
    WORKLOADS,
    GroupSpec,
    WorkloadKind,
    desired,
    pod_group,
)
from scheduler.model.coscheduling import POD_GROUP_LABEL
from scheduler.operator import validation
from scheduler.operator.apis import Flavour, Served
from scheduler.operator.groups import body_of, minimum_of, minimum_patch, resource_of
from scheduler.operator.labels import WORKLOAD_UID

JSON = dict[str, Any]
log = logging.getLogger(__name__)

DEFAULT_SCHEDULER = "default-scheduler"
"""What the API server defaults an unset ``spec.schedulerName`` to before admission runs."""

SELECTED = {OPT_IN: OPT_IN_VALUE}
CREATE: list[Literal["CREATE"]] = ["CREATE"]


def stamp_templates(kind: WorkloadKind, raw: JSON) -> None:
    """Put :data:`OPT_IN` into every pod template of ``raw`` (a ``kind`` object), in place."""
    for template in kind.templates(raw):
        template.setdefault("metadata", {}).setdefault("labels", {})[OPT_IN] = OPT_IN_VALUE


class Reconciler:
    """Brings the groups of one workload in line with it (see the module docstring)."""

    def __init__(self, served: Served) -> None:
        self.served = served
        self._kube: KubeClient | None = None

    @property
    def kube(self) -> KubeClient:
        """The client, opened by the registry's startup handler; raises ``RuntimeError`` before that."""
        if self._kube is None:
            raise RuntimeError("the operator's client is not open yet (kopf startup has not run)")
        return self._kube

    def resources(self) -> list[Resource]:
        """The group resources the operator writes: the served PodGroup API, and CompositePodGroups where served."""
        return [self.served.podgroups] + ([COMPOSITES] if self.served.composite else [])

    @staticmethod
    def owned(uid: str, indices: Mapping[str, Any]) -> dict[tuple[str, str], tuple[Resource, JSON]]:
        """The groups labelled for workload ``uid``, by (kind, name), with their resource: read from the kopf indices
        of :func:`_register_owned` (``indices``: index id → index), not listed from the API on every pass."""
        found: dict[tuple[str, str], tuple[Resource, JSON]] = {}
        for index in indices.values():
            for res, item in index.get(uid, ()):
                found[(res.kind, (item.get("metadata") or {}).get("name", ""))] = (res, item)
        return found

    async def reconcile(self, kind: WorkloadKind, body: kopf.Body, indices: Mapping[str, Any]) -> None:
        """One pass for ``body``; raises :class:`kopf.TemporaryError` on an API failure (kopf retries). The groups
        the workload has are the indexed ones (``indices``, see :meth:`owned`)."""
        raw = copy.deepcopy(dict(body))
        meta = raw.get("metadata") or {}
        if kind is JOB and JOBSET_NAME in (meta.get("labels") or {}):
            return  # a JobSet's child Job: the JobSet's groups hold its pods
        want = desired(kind, raw, self.served.composite)
        for warning in want.warnings:
            kopf.warn(body, reason="GangMinCount", message=warning)
        if want.never_starts is not None:
            kopf.warn(body, reason="GangNeverStarts", message=want.never_starts)
        try:
            have = self.owned(meta["uid"], indices)
            for spec in sorted(want.groups, key=lambda s: s.kind != "CompositePodGroup"):  # parents first
                _, obj = have.pop((spec.kind, spec.name), (None, None))
                await self._ensure(spec, raw, body, obj)
            for (_, name), (res, obj) in have.items():  # no longer needed (scaled down)
                with contextlib.suppress(NotFound):
                    await self.kube.delete(res, meta["namespace"], name, uid=obj["metadata"].get("uid"))
        except ApiError as exc:
            raise kopf.TemporaryError(f"{exc}", delay=5) from exc

    async def _ensure(self, spec: GroupSpec, raw: JSON, body: kopf.Body, have: JSON | None) -> None:
        res = resource_of(spec, self.served)
        namespace = raw["metadata"]["namespace"]
        if have is None:
            obj = body_of(spec, raw["metadata"]["name"], raw["metadata"]["uid"], self.served)
            kopf.adopt(obj, owner=body)
            try:
                await self.kube.create(res, namespace, obj)
            except Conflict:
                existing = await self.kube.get(res, namespace, spec.name)  # ours, made since the index last saw
                if ((existing.get("metadata") or {}).get("labels") or {}).get(WORKLOAD_UID) == raw["metadata"]["uid"]:
                    await self._ensure(spec, raw, body, existing)
                    return
                kopf.warn(body, reason="GangGroupExists",
                          message=f"{res.kind} {namespace}/{spec.name} exists and is not this workload's: left as is")
            return
        if minimum_of(have) == spec.minimum:
            return
        if spec.kind == "CompositePodGroup" and self.served.flavour is Flavour.WORKLOAD:
            kopf.warn(body, reason="GangImmutable",
                      message=f"CompositePodGroup {namespace}/{spec.name} needs minGroupCount {spec.minimum} "
                              f"but its policy is immutable: delete it to have it made again")
            return
        if not self.served.mutable_minimum:
            await self._recreate(spec, raw, body, have)
            return
        await self.kube.patch(res, namespace, spec.name, minimum_patch(spec, self.served))

    async def _recreate(self, spec: GroupSpec, raw: JSON, body: kopf.Body, have: JSON) -> None:
        """Kubernetes 1.36: ``minCount`` is immutable (the whole v1alpha2 ``PodGroupSpec`` is), so a PodGroup whose
        minimum moved is deleted and made again with the new one — but only while no member is bound (``spec.nodeName``;
        the scheduler's plan is on record from its first bind on, architecture §14). The delete is preconditioned on the
        uid and resourceVersion read, so a change since answers 409 and kopf retries the whole pass; a plan being bound
        as the object is made again stops at its next bind (the scheduler's check before each bind refuses a PodGroup
        with another uid than the plan was made for), and members bound before count toward the new object, a gang below
        its minimum. The pods keep their link (by name; core/v1 ``spec.schedulingGroup``: "a group object with the same
        name may be recreated with different policies") and wait for the new
        object, as kube-scheduler's pods wait for a PodGroup to appear. Otherwise the group keeps its minimum,
        with a Warning Event saying so."""
        res, namespace, name = self.served.podgroups, raw["metadata"]["namespace"], spec.name
        meta = have.get("metadata") or {}
        if bound := await self._bound_members(namespace, name):
            kopf.warn(body, reason="GangImmutable",
                      message=f"PodGroup {namespace}/{name} keeps minCount {minimum_of(have)}, not the {spec.minimum} "
                              f"the workload now asks for: minCount is immutable in {res.group_version} (Kubernetes "
                              f"1.36) and {bound} of its pods are bound, so it is not made again; delete it to have "
                              "it made again")
            return
        preconditions = {"uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")}
        await self.kube.delete(res, namespace, name, body={"apiVersion": "v1", "kind": "DeleteOptions",
                                                           "preconditions": preconditions})
        obj = body_of(spec, raw["metadata"]["name"], raw["metadata"]["uid"], self.served)
        kopf.adopt(obj, owner=body)
        await self.kube.create(res, namespace, obj)  # 409 (not gone yet): kopf retries the pass
        log.info("PodGroup %s/%s made again with minCount %d (was %s; minCount is immutable in %s)",
                 namespace, name, spec.minimum, minimum_of(have), res.group_version)

    async def _bound_members(self, namespace: str, group: str) -> int:
        """How many pods of ``namespace`` link PodGroup ``group`` (``spec.schedulingGroup.podGroupName``) and are
        bound (``spec.nodeName``)."""
        pods, _ = await self.kube.list(PODS, namespace)
        return sum(1 for p in pods if (p.get("spec") or {}).get("nodeName")
                   and ((p.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName") == group)


def mutate_pod(served: Served, scheduler_name: str, body: kopf.Body, patch: kopf.Patch, warnings: list[str]) -> None:
    """Point an opted-in pod at ``scheduler_name`` and its group. A pod that already names another
    scheduler, or another group, is left alone with an admission warning saying so."""
    spec, labels = body.get("spec") or {}, dict(body.metadata.labels)
    group = pod_group(labels, served.composite, body.metadata.name or "")
    if group is None:
        warnings.append(f"{OPT_IN}: no Job, JobSet, PyTorchJob or LeaderWorkerSet labels on this pod, so its group "
                        f"is not known; it is left to spec.schedulerName {spec.get('schedulerName')!r}")
        return
    current = spec.get("schedulerName")
    if current not in (None, "", DEFAULT_SCHEDULER, scheduler_name):
        warnings.append(f"spec.schedulerName {current!r} was set explicitly: the pod is not made part of gang {group}")
        return
    patch.spec["schedulerName"] = scheduler_name
    if served.flavour is Flavour.WORKLOAD:
        linked = (spec.get("schedulingGroup") or {}).get("podGroupName")
        if linked not in (None, group):
            warnings.append(f"spec.schedulingGroup.podGroupName {linked!r} is kept (the operator's group is {group})")
        else:
            patch.spec["schedulingGroup"] = {"podGroupName": group}
        return
    linked = labels.get(POD_GROUP_LABEL)
    if linked not in (None, group):
        warnings.append(f"label {POD_GROUP_LABEL}={linked!r} is kept (the operator's group is {group})")
    else:
        patch.metadata.labels[POD_GROUP_LABEL] = group


def _validate(kind: str, raw: JSON, warnings: list[str], podgroups: Mapping[str, Any],
              composites: Mapping[str, Any], node_labels: Collection[str]) -> None:
    namespace = (raw.get("metadata") or {}).get("namespace", "")
    found = validation.problems(kind, raw, podgroups.get(namespace, []), composites.get(namespace, []))
    if found:
        raise kopf.AdmissionError("; ".join(found), code=422)
    warnings.extend(validation.warnings(kind, raw, node_labels))


Decode = Callable[[JSON], JSON]
"""A group body (API JSON of the served version) in the internal (v1beta1) shape the scheduler's checks read."""


def _essence(namespace: str | None, body: kopf.Body, decode: Decode = dict) -> dict[str | None, JSON]:
    """An index entry: the group's name, namespace and spec (in the internal shape: ``decode``) under its namespace."""
    return {namespace: decode({"metadata": {"name": body.metadata.name, "namespace": namespace},
                               "spec": copy.deepcopy(dict(body.spec))})}

Connect = Callable[[], contextlib.AbstractAsyncContextManager[KubeClient]]
"""Opens the client the handlers write with, in kopf's event loop, for as long as the operator runs."""


def build_registry(connect: Connect, served: Served, scheduler_name: str) -> kopf.OperatorRegistry:
    """A fresh registry with every handler of the module docstring, for ``served`` (from
    :func:`~scheduler.operator.apis.discover`); its startup handler enters ``connect()`` and its
    cleanup handler leaves it. Login handlers are the caller's to add."""
    registry = kopf.OperatorRegistry()
    reconciler = Reconciler(served)
    clients = contextlib.AsyncExitStack()

    @kopf.on.startup(id="client", registry=registry)
    async def open_client(**_: Any) -> None:
        reconciler._kube = await clients.enter_async_context(connect())

    @kopf.on.cleanup(id="client", registry=registry)
    async def close_client(**_: Any) -> None:
        await clients.aclose()

    owned_ids = _register_owned(registry, reconciler.resources())
    for kind in WORKLOADS:
        _register_workload(registry, reconciler, kind, owned_ids)

    def pod(body: kopf.Body, patch: kopf.Patch, warnings: list[str], **_: Any) -> None:
        mutate_pod(served, scheduler_name, body, patch, warnings)

    kopf.on.mutate("", "v1", "pods", labels=SELECTED, id="pods-gang", operations=CREATE, persistent=True,
                   registry=registry)(pod)

    if served.flavour is Flavour.WORKLOAD:
        _register_validation(registry, served)

    @kopf.on.probe(id="groupApi", registry=registry)
    def group_api(**_: Any) -> str:
        return served.describe()

    return registry


OWNED_METADATA = ("name", "namespace", "uid", "resourceVersion", "labels")
"""What the owned-groups index keeps of a group's metadata: what a reconcile reads (names, the delete's uid and
resourceVersion preconditions)."""


def _register_owned(registry: kopf.OperatorRegistry, resources: list[Resource]) -> tuple[str, ...]:
    """One kopf index per group resource of the groups the operator made (label :data:`WORKLOAD_UID`): workload
    uid → (resource, {metadata: name, uid, resourceVersion, labels; spec}). kopf keeps it from a
    watch, so a reconcile reads it instead of listing every group of the namespace. Returns the index ids."""
    ids = []
    for res in resources:
        index_id = f"owned_{res.plural}"

        def entry(labels: kopf.Labels, body: kopf.Body, res: Resource = res,
                  **_: Any) -> dict[str, tuple[Resource, JSON]]:
            meta = body.get("metadata") or {}
            item = {"metadata": {k: copy.deepcopy(meta[k]) for k in OWNED_METADATA if k in meta},
                    "spec": copy.deepcopy(dict(body.spec))}
            return {labels[WORKLOAD_UID]: (res, item)}

        kopf.index(res.group, res.version, res.plural, id=index_id, labels={WORKLOAD_UID: kopf.PRESENT},
                   registry=registry)(entry)
        ids.append(index_id)
    return tuple(ids)


def _register_workload(registry: kopf.OperatorRegistry, reconciler: Reconciler, kind: WorkloadKind,
                       owned_ids: tuple[str, ...]) -> None:
    async def reconcile(body: kopf.Body, **kw: Any) -> None:
        await reconciler.reconcile(kind, body, {i: kw[i] for i in owned_ids})

    def mutate_workload(patch: kopf.Patch, **_: Any) -> None:
        patch.fns.append(functools.partial(stamp_templates, kind))

    group, version, plural = kind.group, kind.version, kind.plural
    kopf.on.resume(group, version, plural, labels=SELECTED, id="groups", registry=registry)(reconcile)
    kopf.on.create(group, version, plural, labels=SELECTED, id="groups", registry=registry)(reconcile)
    kopf.on.update(group, version, plural, labels=SELECTED, id="groups", registry=registry)(reconcile)
    kopf.on.mutate(group, version, plural, labels=SELECTED, id=f"{plural}-templates", operations=CREATE,
                   persistent=True, registry=registry)(mutate_workload)


def _register_validation(registry: kopf.OperatorRegistry, served: Served) -> None:
    pg, cpg = served.podgroups, COMPOSITES

    def decode(raw: JSON) -> JSON:  # a v1.36 (v1alpha2) PodGroup is checked as the scheduler reads it
        return served.workload.decode(raw).raw

    @kopf.index(pg.group, pg.version, pg.plural, id="podgroup_index", registry=registry)
    def podgroup_index(namespace: str | None, body: kopf.Body, **_: Any) -> dict[str | None, JSON]:
        return _essence(namespace, body, decode)

    @kopf.index("", "v1", "nodes", id="node_label_index", registry=registry)
    def node_label_index(labels: kopf.Labels, **_: Any) -> dict[str, None]:
        return {key: None for key in labels}

    if served.composite:
        @kopf.index(cpg.group, cpg.version, cpg.plural, id="composite_index", registry=registry)
        def composite_index(namespace: str | None, body: kopf.Body, **_: Any) -> dict[str | None, JSON]:
            return _essence(namespace, body)

    @kopf.on.validate(pg.group, pg.version, pg.plural, id="podgroups", operations=CREATE,
                      ignore_failures=True, registry=registry)
    def validate_podgroup(body: kopf.Body, warnings: list[str], **kw: Any) -> None:
        composites = kw.get("composite_index", {})  # absent where CompositePodGroups are not served
        _validate("PodGroup", decode(copy.deepcopy(dict(body))), warnings, kw["podgroup_index"], composites,
                  kw["node_label_index"])

    if served.composite:
        @kopf.on.validate(cpg.group, cpg.version, cpg.plural, id="compositepodgroups", operations=CREATE,
                          ignore_failures=True, registry=registry)
        def validate_composite(body: kopf.Body, warnings: list[str], **kw: Any) -> None:
            _validate("CompositePodGroup", copy.deepcopy(dict(body)), warnings, kw["podgroup_index"],
                      kw["composite_index"], kw["node_label_index"])
