"""A leaf's pending pods grouped by scheduling signature: the unit every Filter, Score and Reserve plugin judges.

Pods with the same static-filter inputs, the same requests and the same answer from every PreFilter plugin's
``signature_key`` schedule alike, so the search places them as copies of one
:class:`~scheduler.framework.interface.Signature`. Each signature goes through every PreFilter plugin once
per solve (kube-scheduler's PreFilter, ``pkg/scheduler/framework/interface.go``), and the static filters run
once per distinct static input over all nodes, memoised on the node table.

Pure: reads the cycle state's snapshot, changes only its own memo and the PreFilter plugins' per-signature data.
"""

from __future__ import annotations

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Signature
from scheduler.framework.node_table import static_key
from scheduler.groups.tree import Leaf
from scheduler.model.pod import Pod
from scheduler.model.quantity import is_extended
from scheduler.model.scheduling import GroupKey
from scheduler.solver.plugins import Profile


class Signatures:
    """The signatures of each leaf of one solve, computed on first use (:meth:`of`)."""

    def __init__(self, state: CycleState, profile: Profile) -> None:
        self.state = state
        self.profile = profile
        self._by_leaf: dict[GroupKey, list[Signature]] = {}

    def of(self, leaf: Leaf) -> list[Signature]:
        """The leaf's pending pods grouped by signature, largest requests first (bin-packing order: the share of
        the largest allocatable per resource, summed); each signature went through every PreFilter plugin."""
        hit = self._by_leaf.get(leaf.key)
        if hit is not None:
            return hit
        state, table = self.state, self.state.table
        groups: dict[tuple[object, ...], list[Pod]] = {}
        pre_filters = self.profile.pre_filters
        for pod in leaf.pending:
            key: tuple[object, ...] = (static_key(pod.spec), tuple(sorted(pod.requests.items())))
            if pre_filters:
                key += tuple(p.signature_key(state, pod) for p in pre_filters)
            groups.setdefault(key, []).append(pod)
        sigs: list[Signature] = []
        for pods in groups.values():
            first = pods[0]
            vec, unknown = table.request_vector(first.requests)
            accel = any(is_extended(r) and v > 0 for r, v in first.requests.items())
            sig = Signature(tuple(pods), vec, unknown, table.static_fit(first.spec, self.profile.static_check), accel)
            for plugin in pre_filters:
                nodes = plugin.pre_filter(state, sig)
                if nodes is not None:
                    sig.nodes = nodes if sig.nodes is None else sig.nodes & nodes
            sigs.append(sig)
        if len(sigs) > 1:
            share = table.max_allocatable
            sigs.sort(key=lambda s: -float((s.request / share).sum()))
        self._by_leaf[leaf.key] = sigs
        return sigs
