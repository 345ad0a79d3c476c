"""Pydantic models of the API objects the scheduler reads, and quantity arithmetic.

This package imports no Kubernetes client: ``run``, ``simulate``, tests and benchmarks
share it.
"""

from scheduler.model.node import Node, Taint
from scheduler.model.pod import Pod, Toleration, effective_requests
from scheduler.model.scheduling import CompositePodGroup, PodGroup, PriorityClass, Workload

__all__ = [
    "CompositePodGroup",
    "Node",
    "Pod",
    "PodGroup",
    "PriorityClass",
    "Taint",
    "Toleration",
    "Workload",
    "effective_requests",
]
