"""The lone pod: one pending pod with nothing but its requests and static filters to judge, placed in one pass.

Most roots of a plain workload are a pod without a group (or a basic group of one): the search's machinery —
signatures, the generator per group, the failure record, the packing order's pick sequence — is there for gangs,
topology and inter-pod rules, and for one such pod it all reduces to kube-scheduler's own cycle: Filter every node
(the static filters, memoised per pod shape on the node table, and NodeResourcesFit over the free matrix, one
vectorised pass), then take the first node in the packing order (:mod:`~scheduler.solver.plugins.scoring`:
``pack``, no Score plugin with a preference). :func:`place_lone` makes that decision and reserves it through
the profile's Reserve plugins on a :class:`~scheduler.framework.cycle_state.CycleState` as the search would, so
the :class:`~scheduler.framework.plan.Plan` is the one the search returns (``tests/property/test_lone_pod.py``
compares the two on random clusters).

It declines (None: the caller runs the search) whenever anything else could matter: a root that is not a single
leaf of one pending pod satisfied by placing it, a topology key, ``spread`` scoring, a profile that keeps any
plugin besides NodeResourcesFit and DynamicResources for this pod after its gates (kube's PreFilter ``Skip``:
volumes, host ports, spread constraints, inter-pod rules anywhere in the cluster, preferred node affinity,
PreferNoSchedule taints), a pod DynamicResources resolves claims for, a resource no node offers, or no node
that fits — the search then builds the reasons from its per-node verdicts.

Pure: reads the snapshot, changes nothing but its own cycle state.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scheduler.dra.device_snapshot import DraView
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Signature
from scheduler.framework.plan import Plan, SolverConfig
from scheduler.framework.snapshot import Snapshot
from scheduler.groups.tree import GroupTree, Leaf
from scheduler.model.quantity import is_extended
from scheduler.solver.plugins import Profile, dynamic_resources, resources_fit
from scheduler.solver.plugins.scoring import NodeOrder

_JUDGES = frozenset({resources_fit.NAME, dynamic_resources.NAME})
"""The plugins a lone pod may leave in its profile: NodeResourcesFit, and DynamicResources with no claim to
resolve for the pod (it then allows every node, scores none, reserves nothing and fills no allocation)."""


def place_lone(tree: GroupTree, snapshot: Snapshot, config: SolverConfig, profile: Profile) -> Plan | None:
    """The plan the search would return for ``tree`` when it is a lone pod that fits (see the module docstring),
    or None when the fast path does not apply or the pod fits nowhere. Pure; never raises for unschedulable
    input."""
    root = tree.root
    if (config.scoring != "pack" or not isinstance(root, Leaf) or len(root.pending) != 1
            or root.topology_key is not None
            or (root.min_count is not None and 1 + len(root.bound) < root.min_count)):
        return None
    pod = root.pending[0]
    view = snapshot.dra
    if view is not None and (not isinstance(view, DraView) or pod.key in view.pods):
        return None
    lean = profile.for_pods(snapshot, root.pending)
    plugins: tuple[Any, ...] = (*lean.pre_filters, *lean.filters, *lean.scorers, *lean.reservers, *lean.shared,
                                *lean.outcomes)
    if resources_fit.PLUGIN not in lean.filters or any(p.name not in _JUDGES for p in plugins):
        return None
    table = snapshot.table
    requests = pod.requests
    request, unknown = table.request_vector(requests)
    if unknown:
        return None
    static = table.static_fit(pod.spec, lean.static_check)
    own = frozenset((pod.key,)) if snapshot.nominated else frozenset()
    state = CycleState(snapshot, config, tree.priority, lean.reservers, own, root.pending)
    fits = static.ok.copy()
    free = state.free
    for col in np.flatnonzero(request > 0).tolist():  # NodeResourcesFit: one copy fits where free ≥ request
        fits &= free[:, col] >= request[col]
    rows = np.flatnonzero(fits)
    if not rows.size:
        return None
    sig = Signature((pod,), request, unknown, static, any(is_extended(r) and v > 0 for r, v in requests.items()))
    (index, _), = NodeOrder(state, sig, rows).run(np.arange(rows.size), np.ones(rows.size, dtype=np.int64), 1)
    row = int(rows[index])
    if state.reserve(row, sig, (pod,)) != 1:
        return None
    return Plan(tree.key, ((pod, table.nodes[row].name),), frozenset((root.key,)), {}, {}, 1,
                selector_errors=lean.notes(state), **lean.plan_fields(state))
