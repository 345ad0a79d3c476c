"""The placement solver: filters, fit, scoring, topology and the all-or-nothing search.

Pure functions over a :class:`Snapshot`; imports no Kubernetes client, cache or binder, so
``run``, ``simulate``, tests and benchmarks share one code path.
"""

from scheduler.solver.plan import Plan, Scoring, SolverConfig, Unschedulable
from scheduler.solver.search import solve
from scheduler.solver.snapshot import NodeTable, Snapshot
from scheduler.solver.status import Code, Status

__all__ = ["Code", "NodeTable", "Plan", "Scoring", "Snapshot", "SolverConfig", "Status", "Unschedulable", "solve"]
