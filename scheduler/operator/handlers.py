"""The kopf handlers of the operator, registered on a registry of their own (:func:`build_registry`).

* **Workload handlers** (``on.create`` / ``on.update`` / ``on.resume`` of every opted-in kind of
  :data:`~scheduler.operator.workloads.WORKLOADS`): one level-triggered reconcile — create the
  groups the workload needs (parents first), owned by it through ``kopf.adopt``; keep each
  PodGroup's minimum equal to the workload's (a scaled Job gets its ``minCount`` patched: the
  kuberay#5205 bug is a PodGroup never updated on scale); delete the groups it no longer needs (a
  LeaderWorkerSet scaled down). Deleting the workload needs nothing of ours: the owner references
  let the garbage collector delete its groups, so there is no finalizer. What cannot be honoured
  (an immutable CompositePodGroup policy, an override that does not apply, a group of the same
  name that is not ours) is posted as a Warning Event on the workload (``kopf.warn``).
* **Mutating webhooks** (``on.mutate``, on CREATE, persistent, failurePolicy Fail): a workload
  gets :data:`~scheduler.operator.labels.OPT_IN` copied into its pod templates; a pod with that
  label gets ``schedulerName`` and its group link (``spec.schedulingGroup.podGroupName``, or the
  label ``scheduling.x-k8s.io/pod-group`` on scheduler-plugins clusters). Both webhooks select
  objects by that label (kopf puts the filter into the webhook's ``objectSelector``), so nothing
  else in the cluster waits on the operator.
* **Validating webhooks** (``on.validate``, failurePolicy Ignore: they are a convenience; the
  scheduler reports the same problems): PodGroups and CompositePodGroups, with the other groups and
  the node label keys from kopf indices. On CREATE only: what they add to the API server's own
  validation is cross-object (cycles, depth), and the parent link is immutable (reference §3–§4);
  an UPDATE can change only ``minCount``, which the API server checks itself — and the scheduler
  patches its groups on every bind (the intent annotation, architecture §6), which must not wait on
  the operator.
"""

from __future__ import annotations

import contextlib
import copy
import functools
from collections.abc import Callable, Collection, Mapping
from typing import Any, Literal

import kopf

from scheduler.live.kube import COMPOSITES, ApiError, Conflict, KubeClient, NotFound, Resource
from scheduler.model.coscheduling import POD_GROUP_LABEL
from scheduler.operator import validation
from scheduler.operator.apis import Flavour, Served
from scheduler.operator.groups import body_of, minimum_of, minimum_patch, resource_of
from scheduler.operator.labels import (
    JOBSET_NAME,
    OPT_IN,
    OPT_IN_VALUE,
    WORKLOAD_UID,
)
from scheduler.operator.workloads import JOB, WORKLOADS, GroupSpec, WorkloadKind, desired, pod_group

JSON = dict[str, Any]

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

    async def owned(self, namespace: str, uid: str) -> dict[tuple[str, str], tuple[Resource, JSON]]:
        """The groups labelled for workload ``uid`` in ``namespace``, by (kind, name), with their resource."""
        found: dict[tuple[str, str], tuple[Resource, JSON]] = {}
        for res in [self.served.podgroups] + ([COMPOSITES] if self.served.composite else []):
            items, _ = await self.kube.list(res, namespace)
            for item in items:
                meta = item.get("metadata") or {}
                if (meta.get("labels") or {}).get(WORKLOAD_UID) == uid:
                    found[(res.kind, meta.get("name", ""))] = (res, item)
        return found

    async def reconcile(self, kind: WorkloadKind, body: kopf.Body) -> None:
        """One pass for ``body``; raises :class:`kopf.TemporaryError` on an API failure (kopf retries)."""
        raw = copy.deepcopy(dict(body))
        meta = raw.get("metadata") or {}
        if kind is JOB and JOBSET_NAME in (meta.get("labels") or {}):
            return  # a JobSet's child Job: the JobSet's groups hold its pods
        want = desired(kind, raw, self.served.composite)
        for warning in want.warnings:
            kopf.warn(body, reason="GangMinCount", message=warning)
        try:
            have = await self.owned(meta["namespace"], meta["uid"])
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
        await self.kube.patch(res, namespace, spec.name, minimum_patch(spec, self.served))


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


def _validate(kind: str, body: kopf.Body, warnings: list[str], podgroups: Mapping[str, Any],
              composites: Mapping[str, Any], node_labels: Collection[str]) -> None:
    raw = copy.deepcopy(dict(body))
    namespace = (raw.get("metadata") or {}).get("namespace", "")
    found = validation.problems(kind, raw, podgroups.get(namespace, []), composites.get(namespace, []))
    if found:
        raise kopf.AdmissionError("; ".join(found), code=422)
    warnings.extend(validation.warnings(kind, raw, node_labels))


def _essence(namespace: str | None, body: kopf.Body) -> dict[str | None, JSON]:
    """An index entry: the group's name, namespace and spec under its namespace."""
    return {namespace: {"metadata": {"name": body.metadata.name, "namespace": namespace},
                        "spec": copy.deepcopy(dict(body.spec))}}


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

    for kind in WORKLOADS:
        _register_workload(registry, reconciler, kind)

    def pod(body: kopf.Body, patch: kopf.Patch, warnings: list[str], **_: Any) -> None:
        mutate_pod(served, scheduler_name, body, patch, warnings)

    kopf.on.mutate("", "v1", "pods", labels=SELECTED, id="pods-gang", operations=CREATE, persistent=True,
                   registry=registry)(pod)

    if served.flavour is Flavour.WORKLOAD:
        _register_validation(registry, served)

    @kopf.on.probe(id="groupApi", registry=registry)
    def group_api(**_: Any) -> str:
        return f"{served.flavour.value}{' with CompositePodGroups' if served.composite else ''}"

    return registry


def _register_workload(registry: kopf.OperatorRegistry, reconciler: Reconciler, kind: WorkloadKind) -> None:
    async def reconcile(body: kopf.Body, **_: Any) -> None:
        await reconciler.reconcile(kind, body)

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

    @kopf.index(pg.group, pg.version, pg.plural, id="podgroup_index", registry=registry)
    def podgroup_index(namespace: str | None, body: kopf.Body, **_: Any) -> dict[str | None, JSON]:
        return _essence(namespace, body)

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
        _validate("PodGroup", body, warnings, kw["podgroup_index"], composites, kw["node_label_index"])

    if served.composite:
        @kopf.on.validate(cpg.group, cpg.version, cpg.plural, id="compositepodgroups", operations=CREATE,
                          ignore_failures=True, registry=registry)
        def validate_composite(body: kopf.Body, warnings: list[str], **kw: Any) -> None:
            _validate("CompositePodGroup", body, warnings, kw["podgroup_index"], kw["composite_index"],
                      kw["node_label_index"])
