"""Builders for the API objects solver tests need: ``Node`` and ``Pod`` from API (camelCase) dicts.

Every builder returns a validated pydantic model, built with ``model_validate`` from the
shape the API server sends, so tests exercise the same aliases and defaults as ``run`` and
``simulate``. Defaults describe an ordinary CPU node (8 cores, 32Gi, 110 pods) and a small
pending pod of ours (1 core, 1Gi); pass ``None`` for ``cpu`` / ``memory`` to leave a
resource out entirely.

Taints may be given as kubectl strings (``"key=value:NoSchedule"``, ``"key:NoExecute"``),
API dicts or :class:`Taint` models; conditions as ``(type, status)`` pairs, API dicts or
:class:`NodeCondition` models; tolerations as API dicts or :class:`Toleration` models.
:func:`expr`, :func:`term` and :func:`required_affinity` build ``spec.affinity`` dicts;
:func:`pod_term`, :func:`pod_affinity`, :func:`spread` and :func:`host_port` the inter-pod fields
(pass them to :func:`pod` as ``affinity=`` / ``spec=`` with ``labels=``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from scheduler.model import Node, Pod, Taint, Toleration
from scheduler.model.node import NodeCondition
from scheduler.model.pod import Affinity

GPU = "nvidia.com/gpu"
OURS = "gang-scheduler"

TaintLike = str | Mapping[str, Any] | Taint
ConditionLike = tuple[str, str] | Mapping[str, Any] | NodeCondition
TolerationLike = Mapping[str, Any] | Toleration


def taint(spec: TaintLike) -> dict[str, Any]:
    """One taint as an API dict; ``spec`` is ``"key=value:Effect"``, ``"key:Effect"``, a dict or a model."""
    if isinstance(spec, Taint):
        return spec.model_dump(by_alias=True)
    if isinstance(spec, Mapping):
        return dict(spec)
    key_value, _, effect = spec.rpartition(":")
    if not key_value or not effect:
        raise ValueError(f"taint {spec!r} is not 'key[=value]:Effect'")
    key, _, value = key_value.partition("=")
    return {"key": key, "value": value, "effect": effect}


def _condition(spec: ConditionLike) -> dict[str, Any]:
    if isinstance(spec, NodeCondition):
        return spec.model_dump(by_alias=True, exclude_none=True)
    if isinstance(spec, Mapping):
        return dict(spec)
    type_, status = spec
    return {"type": type_, "status": status}


def _toleration(spec: TolerationLike) -> dict[str, Any]:
    if isinstance(spec, Toleration):
        return spec.model_dump(by_alias=True, exclude_none=True)
    return dict(spec)


def node(
    name: str,
    cpu: str | None = "8",
    memory: str | None = "32Gi",
    gpu: int = 0,
    labels: Mapping[str, str] | None = None,
    taints: Iterable[TaintLike] = (),
    unschedulable: bool = False,
    conditions: Iterable[ConditionLike] = (),
) -> Node:
    """A node with ``cpu``/``memory`` allocatable (and capacity), 110 pods, and ``gpu`` × nvidia.com/gpu if > 0."""
    allocatable: dict[str, str] = {"pods": "110"}
    if cpu is not None:
        allocatable["cpu"] = cpu
    if memory is not None:
        allocatable["memory"] = memory
    if gpu:
        allocatable[GPU] = str(gpu)
    spec: dict[str, Any] = {"taints": [taint(t) for t in taints]}
    if unschedulable:
        spec["unschedulable"] = True
    return Node.model_validate({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
        "status": {
            "allocatable": allocatable,
            "capacity": dict(allocatable),
            "conditions": [_condition(c) for c in conditions],
        },
    })


def pod(
    name: str,
    cpu: str | None = "1",
    memory: str | None = "1Gi",
    gpu: int = 0,
    namespace: str = "default",
    node_name: str | None = None,
    scheduler: str = OURS,
    group: str | None = None,
    tolerations: Iterable[TolerationLike] = (),
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | Affinity | None = None,
    phase: str = "Pending",
    priority: int | None = None,
    created: str = "2026-01-01T00:00:00Z",
    labels: Mapping[str, str] | None = None,
    spec: Mapping[str, Any] | None = None,
    ports: Iterable[Mapping[str, Any]] = (),
    uid: str | None = None,
) -> Pod:
    """A one-container pod requesting ``cpu``/``memory`` (and ``gpu`` × nvidia.com/gpu if > 0), with
    ``labels``, the container's ``ports`` and further ``spec`` fields (API dicts) merged in."""
    requests: dict[str, str] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    if gpu:
        requests[GPU] = str(gpu)
    extra = dict(spec or {})
    spec = {
        "schedulerName": scheduler,
        "containers": [{"name": "main", "resources": {"requests": requests}, "ports": [dict(p) for p in ports]}],
        "tolerations": [_toleration(t) for t in tolerations],
        "nodeSelector": dict(node_selector or {}),
        **extra,
    }
    if node_name is not None:
        spec["nodeName"] = node_name
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    if affinity is not None:
        spec["affinity"] = affinity.model_dump(by_alias=True, exclude_none=True) if isinstance(
            affinity, Affinity) else dict(affinity)
    if priority is not None:
        spec["priority"] = priority
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "creationTimestamp": created,
                                "labels": dict(labels or {})}
    if uid is not None:
        metadata["uid"] = uid
    return Pod.model_validate({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": spec,
        "status": {"phase": phase},
    })


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    """A ``NodeSelectorRequirement`` dict: ``expr("zone", "In", "a", "b")``."""
    return {"key": key, "operator": operator, "values": list(values)}


def term(*expressions: Mapping[str, Any], fields: Iterable[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """A ``NodeSelectorTerm`` dict: label ``expressions`` and ``fields`` requirements, ANDed."""
    return {"matchExpressions": list(expressions), "matchFields": list(fields)}


def required_affinity(*terms: Mapping[str, Any]) -> dict[str, Any]:
    """A ``spec.affinity`` dict whose required node affinity ORs ``terms``."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def pod_term(match_labels: Mapping[str, str] | None = None, key: str = HOSTNAME, *,
             expressions: Iterable[Mapping[str, Any]] = (), selector: bool = True, **fields: Any) -> dict[str, Any]:
    """A ``PodAffinityTerm`` dict: ``labelSelector`` from ``match_labels`` and ``expressions`` (``selector=False``
    leaves it nil), ``topologyKey`` ``key``, plus API fields (``namespaces=[…]``, ``namespaceSelector={…}``,
    ``matchLabelKeys=[…]``…)."""
    term: dict[str, Any] = {"topologyKey": key, **fields}
    if selector:
        term["labelSelector"] = {"matchLabels": dict(match_labels or {}), "matchExpressions": list(expressions)}
    return term


def pod_affinity(required: Iterable[Mapping[str, Any]] = (), anti: Iterable[Mapping[str, Any]] = (),
                 preferred: Iterable[tuple[int, Mapping[str, Any]]] = (),
                 preferred_anti: Iterable[tuple[int, Mapping[str, Any]]] = ()) -> dict[str, Any]:
    """A ``spec.affinity`` dict with pod affinity (``required`` / ``preferred``) and anti-affinity (``anti`` /
    ``preferred_anti``) terms; preferred ones as (weight, term)."""
    out: dict[str, Any] = {}
    if required or preferred:
        out["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": list(required),
                              "preferredDuringSchedulingIgnoredDuringExecution": [
                                  {"weight": w, "podAffinityTerm": t} for w, t in preferred]}
    if anti or preferred_anti:
        out["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": list(anti),
                                  "preferredDuringSchedulingIgnoredDuringExecution": [
                                      {"weight": w, "podAffinityTerm": t} for w, t in preferred_anti]}
    return out


def spread(max_skew: int, key: str = ZONE, match_labels: Mapping[str, str] | None = None,
           when: str = "DoNotSchedule", **fields: Any) -> dict[str, Any]:
    """A ``TopologySpreadConstraint`` dict (``fields``: ``minDomains``, ``nodeAffinityPolicy``, ``matchLabelKeys``…;
    ``labelSelector=None`` in ``fields`` leaves the selector nil)."""
    out: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when,
                           "labelSelector": {"matchLabels": dict(match_labels or {})}}
    out.update(fields)
    if out.get("labelSelector") is None:
        del out["labelSelector"]
    return out


def host_port(port: int, protocol: str | None = None, ip: str | None = None,
              container_port: int | None = None) -> dict[str, Any]:
    """A ``ContainerPort`` dict taking ``port`` on the host."""
    out: dict[str, Any] = {"containerPort": container_port or port, "hostPort": port}
    if protocol is not None:
        out["protocol"] = protocol
    if ip is not None:
        out["hostIP"] = ip
    return out
