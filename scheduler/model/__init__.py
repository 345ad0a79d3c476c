"""Pydantic models of the API objects the scheduler reads, and quantity arithmetic.

This package imports no Kubernetes client: ``run``, ``simulate``, tests and benchmarks
share it.
"""

from scheduler.model.dra import (
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
    device_id,
    qualified_name,
)
from scheduler.model.namespace import Namespace
from scheduler.model.node import Node, Taint
from scheduler.model.pod import Pod, Toleration, effective_requests
from scheduler.model.scheduling import CompositePodGroup, PodGroup, PriorityClass, Workload

__all__ = [
    "CompositePodGroup",
    "DeviceClass",
    "Namespace",
    "Node",
    "Pod",
    "PodGroup",
    "PriorityClass",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ResourceSlice",
    "Taint",
    "Toleration",
    "Workload",
    "device_id",
    "effective_requests",
    "qualified_name",
]
