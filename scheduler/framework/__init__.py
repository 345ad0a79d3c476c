"""The scheduling framework: NodeInfo, snapshots, the cycle state, results and plugin extension points.

kube-scheduler's ``pkg/scheduler/framework`` in Python, vectorised where it pays. It imports only
``scheduler.model``: the DRA view, the solver and its plugins, the cache and both drivers build on it.
"""

from scheduler.framework.cycle_state import CycleState, MissingState, Placement, StateKey
from scheduler.framework.node_info import NodeInfo
from scheduler.framework.node_table import NodeTable, StaticFit
from scheduler.framework.plan import ClaimAllocation, Decision, Plan, Preemption, Scoring, SolverConfig, Unschedulable
from scheduler.framework.snapshot import Nominated, Snapshot
from scheduler.framework.status import Code, Status

__all__ = [
    "ClaimAllocation",
    "Code",
    "CycleState",
    "Decision",
    "MissingState",
    "NodeInfo",
    "NodeTable",
    "Nominated",
    "Placement",
    "Plan",
    "Preemption",
    "Scoring",
    "Snapshot",
    "SolverConfig",
    "StateKey",
    "StaticFit",
    "Status",
    "Unschedulable",
]
