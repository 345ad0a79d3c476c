"""The groups the operator makes of a multi-role workload, and what its webhooks set on their pods, as the API objects
``simulate`` loads: :func:`tree_objects`, :func:`webhook_pod`.

For a workload labelled ``gang-scheduler.io/gang: "true"`` the operator (``gang-scheduler operator``, docs/operator.md)
makes the groups :func:`~scheduler.groups.workloads.desired` names. ``simulate`` reads the v1.37 API, where
CompositePodGroups are served, so a multi-role workload (a JobSet, a PyTorchJob, each group of a LeaderWorkerSet) is a
tree: a CompositePodGroup (``gang.minGroupCount``: every child) over one PodGroup per role replica
(``gang.minCount``: its pods), each object as the operator writes it for ``scheduling.k8s.io`` (``v1beta1``
PodGroups, ``v1alpha3`` CompositePodGroups): the policy, the ``workloadRef`` a tree member carries (``workloadName``:
the workload's name; ``templateName``: the role) and ``parentCompositePodGroupName``, owned by the workload and created
when it was. A group of a name the snapshot holds already is used instead: the operator's create meets
AlreadyExists and leaves the one there as it is. Where no CompositePodGroup is served (``Objects.serves_composites``:
``--from-cluster`` on Kubernetes 1.36 or with the alpha API off, and files of 1.36's v1alpha2 PodGroups or
Workloads), the operator makes one PodGroup of all the workload's pods (a LeaderWorkerSet: one per group), its pods
pointed at it.

The operator's pod webhook points each opted-in pod at our scheduler and at its group, named from the labels the
workload's controller put on the pod (:func:`~scheduler.groups.workloads.pod_group`); a pod whose template names
another scheduler, or already names another group, is left so, with the admission warning the webhook gives. The
operator's workload webhook has copied the opt-in label into every pod template before that, so the pods carry it.

No I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scheduler.groups.workloads import OPT_IN, OPT_IN_VALUE, Desired, WorkloadKind, as_dict, desired, pod_group
from scheduler.offline.jobs import DEFAULT_SCHEDULER, made_meta

JSON = dict[str, Any]

PODGROUP_API_VERSION = "scheduling.k8s.io/v1beta1"
COMPOSITE_API_VERSION = "scheduling.k8s.io/v1alpha3"


@dataclass(frozen=True)
class Tree:
    """The operator's groups of one workload: ``objects`` to load (raw API objects, those the snapshot does not hold),
    ``held``: the names of those it holds (used instead), and ``wanted``: every group and what the operator would post
    as Warning Events, as :func:`~scheduler.groups.workloads.desired` says them."""

    objects: tuple[JSON, ...]
    held: tuple[str, ...]
    wanted: Desired

    @property
    def children(self) -> int:
        """The PodGroups of the tree (every group but the CompositePodGroups)."""
        return sum(1 for spec in self.wanted.groups if spec.kind == "PodGroup")

    def suffix(self) -> str:
        """What a note adds after saying how the groups were made: the groups of the snapshot used, the warnings."""
        held = f"; the snapshot's {', '.join(self.held)} used" if self.held else ""
        return held + "".join(f"; {warning}" for warning in self.wanted.warnings)


def tree_objects(kind: WorkloadKind, workload: JSON, exists: Callable[[str, str], bool],
                 composite: bool = True) -> Tree:
    """The groups the operator makes of ``workload`` (a raw ``kind`` object with its ``apiVersion``, ``kind``, name,
    namespace and uid set), per the module docstring, less those its namespace holds (``exists(kind, name)``: a
    PodGroup or CompositePodGroup of that name). ``composite``: CompositePodGroups are served; else each tree is one
    PodGroup of all its pods, as the operator makes it there."""
    meta = workload["metadata"]
    wanted = desired(kind, workload, composite)
    objects: list[JSON] = []
    held: list[str] = []
    for spec in wanted.groups:
        if exists(spec.kind, spec.name):
            held.append(spec.name)
            continue
        parent = spec.kind == "CompositePodGroup"
        body_spec: JSON = {"schedulingPolicy": {"gang": {"minGroupCount" if parent else "minCount": spec.minimum}}}
        if spec.template is not None:
            body_spec["workloadRef"] = {"workloadName": meta["name"], "templateName": spec.template}
        if spec.parent is not None:
            body_spec["parentCompositePodGroupName"] = spec.parent
        objects.append({"apiVersion": COMPOSITE_API_VERSION if parent else PODGROUP_API_VERSION,
                        "kind": spec.kind, "metadata": made_meta(workload, spec.name), "spec": body_spec})
    return Tree(tuple(objects), tuple(held), wanted)


def webhook_pod(pod: JSON, scheduler_name: str, composite: bool = True) -> str | None:
    """Mutate raw ``pod`` (made from an opted-in workload's template, with its controller's labels) as the operator's
    webhooks would: the opt-in label, then ``spec.schedulerName`` and ``spec.schedulingGroup.podGroupName`` of the
    group its labels name (``composite``: as where CompositePodGroups are served). Returns the admission warning the
    webhook gives when it leaves the pod (or its group link) as it is, else None."""
    meta, spec = pod["metadata"], pod["spec"]
    labels = meta.setdefault("labels", {})
    labels[OPT_IN] = OPT_IN_VALUE
    group = pod_group(labels, composite, name=meta["name"])
    if group is None:
        return f"pod {meta['name']}: no labels name its group; it is left to spec.schedulerName"
    current = spec.get("schedulerName")
    if current not in (None, "", DEFAULT_SCHEDULER, scheduler_name):
        return f"pod {meta['name']}: spec.schedulerName {current!r} was set explicitly: not made part of gang {group}"
    spec["schedulerName"] = scheduler_name
    linked = as_dict(spec.get("schedulingGroup")).get("podGroupName")
    if linked not in (None, group):
        return (f"pod {meta['name']}: spec.schedulingGroup.podGroupName {linked!r} is kept (the operator's group is "
                f"{group})")
    spec["schedulingGroup"] = {"podGroupName": group}
    return None
