"""The placement solver: the all-or-nothing search over a group tree and its plugins.

Pure functions over a :class:`~scheduler.framework.snapshot.Snapshot`; imports no Kubernetes client,
cache or binder, so ``run``, ``simulate``, tests and benchmarks share one code path.
"""

from scheduler.solver.search import minimum_need, node_local, placements_hold, solve

__all__ = ["minimum_need", "node_local", "placements_hold", "solve"]
