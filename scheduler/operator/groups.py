"""The PodGroup / CompositePodGroup objects made for a workload, for the API the cluster serves.

``scheduling.k8s.io`` (the ``PodGroup`` and ``v1alpha3`` ``CompositePodGroup`` APIs; ``v1beta1``, or ``v1alpha2``
on Kubernetes 1.36, whose PodGroup has the same ``schedulingPolicy`` and no tree fields — trees are made on
v1beta1 only, so a v1alpha2 body is ``schedulingPolicy`` alone, valid against the v1.36 strict schema): a
PodGroup is ``gang: {minCount}``; in a tree it names its ``parentCompositePodGroupName`` and carries the
``workloadRef`` the API requires of tree members (``workloadName``: the workload's name — no Workload object is
made; ``templateName``: the role).
A CompositePodGroup is ``gang: {minGroupCount}`` with its ``workloadRef``.
``scheduling.x-k8s.io/v1alpha1`` (scheduler-plugins ``PodGroupSpec``): ``minMember`` only;
``minResources`` and ``scheduleTimeoutSeconds`` are left unset (no timeout; the scheduler computes
the resources itself).

Every group is labelled :data:`~scheduler.operator.labels.WORKLOAD_UID` so the groups of one
workload can be listed; owner references are added by the caller (``kopf.adopt``).
"""

from __future__ import annotations

from typing import Any

from scheduler.client.kube import COMPOSITES, Resource
from scheduler.groups.workloads import GroupSpec
from scheduler.operator.apis import Flavour, Served
from scheduler.operator.labels import MANAGED_BY, MANAGER, WORKLOAD_UID

JSON = dict[str, Any]


def resource_of(spec: GroupSpec, served: Served) -> Resource:
    """The API resource ``spec`` is written to."""
    return COMPOSITES if spec.kind == "CompositePodGroup" else served.podgroups


def body_of(spec: GroupSpec, workload: str, workload_uid: str, served: Served) -> JSON:
    """The object for ``spec`` of the workload named ``workload`` (uid ``workload_uid``), namespace
    and owner left to ``kopf.adopt``. A CompositePodGroup spec needs ``served.composite``."""
    res = resource_of(spec, served)
    meta = {"name": spec.name, "labels": {WORKLOAD_UID: workload_uid, MANAGED_BY: MANAGER}}
    body: JSON = {"apiVersion": res.group_version, "kind": res.kind, "metadata": meta}
    if served.flavour is Flavour.COSCHEDULING:
        body["spec"] = {"minMember": spec.minimum}
        return body
    key = "minGroupCount" if spec.kind == "CompositePodGroup" else "minCount"
    body["spec"] = {"schedulingPolicy": {"gang": {key: spec.minimum}}}
    if spec.template is not None:
        body["spec"]["workloadRef"] = {"workloadName": workload, "templateName": spec.template}
    if spec.parent is not None:
        body["spec"]["parentCompositePodGroupName"] = spec.parent
    return body


def minimum_of(body: JSON) -> int | None:
    """The minimum an existing group object holds (``minCount`` / ``minGroupCount`` / ``minMember``)."""
    spec = body.get("spec") or {}
    if "minMember" in spec:
        return spec["minMember"]  # type: ignore[no-any-return]
    gang = (spec.get("schedulingPolicy") or {}).get("gang") or {}
    value = gang.get("minCount", gang.get("minGroupCount"))
    return value if isinstance(value, int) else None


def minimum_patch(spec: GroupSpec, served: Served) -> JSON:
    """The merge patch that sets the minimum of an existing group to ``spec.minimum``: PodGroup
    ``gang.minCount`` is mutable in the ``scheduling.k8s.io/v1beta1`` ``PodGroup`` API, ``minMember`` in
    scheduler-plugins. A CompositePodGroup's policy is immutable (``scheduling.k8s.io/v1alpha3``
    ``CompositePodGroupSpec.schedulingPolicy``), and so is a v1alpha2 PodGroup's
    (:attr:`~scheduler.operator.apis.Served.mutable_minimum`); callers must not patch those."""
    if served.flavour is Flavour.COSCHEDULING:
        return {"spec": {"minMember": spec.minimum}}
    return {"spec": {"schedulingPolicy": {"gang": {"minCount": spec.minimum}}}}
