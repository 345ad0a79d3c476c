"""NodePorts: a pod's host ports must be free on its node, counting running and planned pods.

Mirrors ``pkg/scheduler/framework/plugins/nodeports/node_ports.go`` (v1.37) with kube's
``HostPortInfo`` (:class:`~scheduler.framework.pod_terms.HostPort`): the host ports of app and sidecar
containers (``hostPort > 0``; a ``hostNetwork`` pod's ``containerPort`` by API defaulting) conflict
with a port of the same protocol and number on the same IP or where either side is the ``0.0.0.0``
wildcard. A node holding a conflicting port — on a running pod of any scheduler (the snapshot's pod
index) or a pod placed earlier in this plan — is refused with :data:`REASON` (UNSCHEDULABLE:
evicting the holder frees it). Any other node takes one copy of the signature, since a second copy
would conflict with the first: three pods with ``hostPort: 29500`` land on three nodes, and a gang of
identical pods is placed one per node in one pass, not pod by pod.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scheduler.framework.cycle_state import CycleState, Placement, StateKey
from scheduler.framework.events import Action, ClusterEvent
from scheduler.framework.interface import Rejections, Signature
from scheduler.framework.node_table import BoolArray, IntArray
from scheduler.framework.pod_terms import HostPort, host_ports, ports_conflict
from scheduler.framework.snapshot import Snapshot
from scheduler.model.pod import ASKS_PORTS, Pod
from scheduler.solver.plugins.inter_pod import placed_entry

NAME = "NodePorts"
REASON = "node(s) didn't have free ports for the requested pod ports"  # node_ports.go ErrReason (Unschedulable)

SIGS: StateKey[list[_SigState]] = StateKey(f"{NAME}/signatures")
DATA: StateKey[_SigState] = StateKey(f"{NAME}/signature")
PORTS: StateKey[tuple[HostPort, ...]] = StateKey(f"{NAME}/ports")
"""Per signature: the host ports its pods take (empty for most)."""


@dataclass(eq=False)
class _SigState:
    """The ports a signature wants and, per node row, how many pods there hold a conflicting one."""

    wanted: tuple[HostPort, ...]
    blocked: IntArray
    memo: dict[int, bool] = field(default_factory=dict)


class NodePorts:
    """PreFilter, Filter and Reserve for host ports; see the module docstring."""

    name = NAME

    def signature_key(self, state: CycleState, pod: Pod) -> Hashable:
        return host_ports(pod)

    def pre_filter(self, state: CycleState, sig: Signature) -> BoolArray | None:
        wanted = host_ports(sig.pods[0])
        sig.write(PORTS, wanted)
        if not wanted:
            return None
        table = state.table
        s = _SigState(wanted, np.zeros(len(table), dtype=np.int64))
        view = state.snapshot.pod_index
        holders = {e.key: e for w in wanted for e in view.port_users(w.protocol, w.port)}
        for e in holders.values():
            row = table.index.get(e.node)
            if row is not None and ports_conflict(wanted, e.ports):
                s.blocked[row] += 1
        for placement in state.journal:
            if self._conflicts(state, s, placement.signature, placement.row):
                s.blocked[placement.row] += len(placement.pods)
        sig.write(DATA, s)
        state.setdefault(SIGS, list).append(s)
        return None

    def _conflicts(self, state: CycleState, s: _SigState, placed: Signature, row: int) -> bool:
        hit = s.memo.get(id(placed))
        if hit is None:
            hit = ports_conflict(s.wanted, placed_entry(state, placed, row).ports)
            s.memo[id(placed)] = hit
        return hit

    def filter(self, state: CycleState, sig: Signature, rows: IntArray) -> IntArray | None:
        s: _SigState | None = sig.data.get(DATA.name)
        if s is None:
            return None
        return np.where(s.blocked[rows] > 0, 0, 1).astype(np.int64)

    def rejections(self, state: CycleState, sig: Signature, rows: IntArray) -> Rejections:
        return Rejections(Counter({REASON: len(rows)}) if len(rows) else Counter())

    def interacts(self, state: CycleState, sig: Signature) -> bool:
        return False  # a placement takes ports on its own node only

    def reserve(self, state: CycleState, sig: Signature, row: int, pods: tuple[Pod, ...]) -> tuple[int, Any]:
        if sig.data.get(PORTS.name):
            for s in state.get(SIGS) or ():
                if self._conflicts(state, s, sig, row):
                    s.blocked[row] += len(pods)
        return len(pods), None

    def unreserve(self, state: CycleState, placement: Placement, token: Any) -> None:
        if placement.signature.data.get(PORTS.name):
            for s in state.get(SIGS) or ():
                if self._conflicts(state, s, placement.signature, placement.row):
                    s.blocked[placement.row] -= len(placement.pods)


PLUGIN = NodePorts()


def gate(snapshot: Snapshot, pending: Sequence[Pod], asked: frozenset[str]) -> bool:
    """Whether a pending pod of the root wants a host port (running pods' ports conflict only with those)."""
    return ASKS_PORTS in asked and any(ASKS_PORTS in p.asks and host_ports(p) for p in pending)


def queueing_hint(event: ClusterEvent) -> bool:
    """A pod holding host ports deleted, gone terminal or moved (kube's ``isSchedulableAfterPodDeleted``,
    without the target pod to compare ports with), or a node added."""
    if event.kind == "Node":
        return event.action is Action.ADD
    if event.kind != "Pod" or event.old is None:
        return False
    old, new = event.old, event.new
    if not old.is_bound or old.is_terminal or not host_ports(old):
        return False
    return new is None or new.is_terminal or new.spec.node_name != old.spec.node_name
