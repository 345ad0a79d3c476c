"""Builders for PodGroup and CompositePodGroup models from API-shaped dicts (namespace ``ml``)."""

from __future__ import annotations

from typing import Any

from scheduler.model import CompositePodGroup, PodGroup

NS = "ml"


def pg_dict(name: str, min_count: int | None = 2, parent: str | None = None, topology: str | None = None,
            namespace: str = NS, priority: int | None = None, created: str = "2026-01-01T00:00:00Z",
            policy: dict[str, Any] | None = None, priority_class: str | None = None) -> dict[str, Any]:
    """A PodGroup as the API sends it (``scheduling.k8s.io/v1beta1``)."""
    spec: dict[str, Any] = {"schedulingPolicy": policy if policy is not None else (
        {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}})}
    if parent:
        spec["parentCompositePodGroupName"] = parent
        spec["workloadRef"] = {"workloadName": "w", "templateName": name}
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    if priority is not None:
        spec["priority"] = priority
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created}, "spec": spec}


def pg(name: str, min_count: int | None = 2, **kw: Any) -> PodGroup:
    """:func:`pg_dict` as a model."""
    return PodGroup.model_validate(pg_dict(name, min_count, **kw))


def cpg(name: str, min_group_count: int | None = 2, parent: str | None = None,
        created: str = "2026-01-01T00:00:00Z", topology: str | None = None, namespace: str = NS) -> CompositePodGroup:
    spec: dict[str, Any] = {
        "schedulingPolicy": {"gang": {"minGroupCount": min_group_count}} if min_group_count else {"basic": {}},
        "workloadRef": {"workloadName": "w", "templateName": name},
    }
    if parent:
        spec["parentCompositePodGroupName"] = parent
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    return CompositePodGroup.model_validate({"metadata": {"name": name, "namespace": namespace,
                                                          "creationTimestamp": created},
                                             "spec": spec})
