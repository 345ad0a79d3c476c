"""NodeResourcesFit, vectorised: how many copies of a request fit on each node, and their reservation.

Mirrors ``plugins/noderesources/fit.go`` ``fitsRequest`` (v1.37): a pod fits when, for every
resource it requests (including one ``pods`` slot), request ≤ allocatable − used. Reasons use
upstream's wording: ``Insufficient <resource>`` and ``Too many pods``; they count as
UNSCHEDULABLE (evicting pods can free room). A signature asking for a resource no node offers
gets 0 everywhere and one ``Insufficient <resource>`` per candidate node. An extended resource a DeviceClass
also serves (:attr:`~scheduler.framework.interface.Signature.node_or_dra`) counts only on the nodes offering a
non-zero amount of it: kube-scheduler's DynamicResources plugin serves it through DRA on the others
(``extendeddynamicresources.go``), and NodeResourcesFit skips it there.

State: the cycle's ``free`` matrix (:class:`~scheduler.framework.cycle_state.CycleState`);
Reserve subtracts the placed pods' requests from their node's row, Unreserve adds them back.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from scheduler.framework.cycle_state import CycleState, Placement
from scheduler.framework.events import Action, ClusterEvent
from scheduler.framework.interface import Rejections, Signature
from scheduler.framework.node_table import IntArray
from scheduler.model.pod import Pod
from scheduler.model.quantity import PODS, is_extended

NAME = "NodeResourcesFit"
TOO_MANY_PODS = "Too many pods"  # fit.go

UNLIMITED = np.iinfo(np.int64).max // 2
"""Copies allowed where a plugin sets no limit (half of int64 max, so sums cannot overflow)."""


def insufficient(resource: str) -> str:
    """``Insufficient <resource>`` (fit.go)."""
    return TOO_MANY_PODS if resource == PODS else f"Insufficient {resource}"


GATHER_ROWS = 512
"""Up to this many rows, :func:`copies` gathers them first (one small copy, then one vectorised pass)."""


def copies(free: IntArray, request: IntArray, rows: IntArray | None = None) -> IntArray:
    """Copies of ``request`` that fit on each row of ``free`` (each of ``rows`` if given, in that order).

    ``free``: ``(N, R)`` free capacity; ``request``: ``(R,)`` one pod's requests, same units.
    Returns counts ≥ 0, one per row. A request of nothing but zeros fits without bound; it is
    capped by the ``pods`` column in practice, since every pod requests one.

    Many ``rows`` are read one requested column at a time, with no ``(rows, R)`` copy: a copy that
    large is one the heap may hand back to the system and fault in again on every solve.
    """
    cols = np.flatnonzero(request > 0)
    if cols.size == 0:
        return np.full(free.shape[0] if rows is None else len(rows), UNLIMITED, dtype=np.int64)
    if rows is not None and len(rows) <= GATHER_ROWS:
        free, rows = free.take(rows, axis=0), None
    if rows is None:
        per = free[:, cols] // request[cols]
        return np.asarray(np.maximum(per.min(axis=1), 0), dtype=np.int64)
    least: IntArray = free[:, cols[0]].take(rows) // request[cols[0]]
    for col in cols[1:]:
        np.minimum(least, free[:, col].take(rows) // request[col], out=least)
    return np.maximum(least, 0, out=least)


def reasons(free_row: IntArray, request: IntArray, resources: tuple[str, ...]) -> list[str]:
    """Every resource of one node that is short for ``request`` (each becomes one counted reason)."""
    short = np.flatnonzero((request > 0) & (free_row < request))
    return [insufficient(resources[j]) for j in short]


class NodeResourcesFit:
    """Filter and Reserve over the cycle's free-capacity matrix; see the module docstring."""

    name = NAME

    def filter(self, state: CycleState, sig: Signature, rows: IntArray) -> IntArray:
        if sig.unknown:
            return np.zeros(len(rows), dtype=np.int64)
        fit = copies(state.free, sig.request, rows)
        either = sig.node_or_dra
        if either is not None:
            allocatable = state.table.allocatable
            for col in np.flatnonzero(either > 0).tolist():
                here = np.maximum(state.free[:, col].take(rows) // either[col], 0)
                np.minimum(fit, np.where(allocatable[:, col].take(rows) > 0, here, UNLIMITED), out=fit)
        return fit

    def rejections(self, state: CycleState, sig: Signature, rows: IntArray) -> Rejections:
        """One ``Insufficient <r>`` per short resource per node (several per node are each counted, as
        upstream's histogram does), vectorised over ``rows``."""
        counts: Counter[str] = Counter()
        for j in np.flatnonzero(sig.request > 0).tolist():  # a column at a time: no (rows, R) fancy-indexed copy
            if n := int(np.count_nonzero(state.free[:, j].take(rows) < sig.request[j])):
                counts[insufficient(state.table.resources[j])] += n
        either = sig.node_or_dra
        if either is not None:
            for j in np.flatnonzero(either > 0).tolist():  # only where the node offers it
                short = (state.free[:, j].take(rows) < either[j]) & (state.table.allocatable[:, j].take(rows) > 0)
                if n := int(np.count_nonzero(short)):
                    counts[insufficient(state.table.resources[j])] += n
        for resource in sig.unknown:
            counts[insufficient(resource)] += len(rows)
        return Rejections(counts)

    def interacts(self, state: CycleState, sig: Signature) -> bool:
        return False  # a placement changes only its own node's answer

    def reserve(self, state: CycleState, sig: Signature, row: int, pods: tuple[Pod, ...]) -> tuple[int, IntArray]:
        used = sig.request * len(pods)
        if sig.node_or_dra is not None:  # what the node offers comes from its allocatable, the rest through DRA
            used = used + np.where(state.table.allocatable[row] > 0, sig.node_or_dra, 0) * len(pods)
        state.free[row] -= used
        return len(pods), used

    def unreserve(self, state: CycleState, placement: Placement, token: IntArray) -> None:
        state.free[placement.row] += token


PLUGIN = NodeResourcesFit()


def frees_room(event: ClusterEvent) -> bool:
    """Whether ``event`` can leave more room on some node: a node added or given more allocatable; a pod
    that used a node deleted, finished, moved or shrunk (in-place resize); a nomination withdrawn
    (kube's ``isSchedulableAfterNodeChange`` / ``isSchedulableAfterPodEvent`` in ``fit.go``)."""
    if event.kind == "Node":
        if event.action is Action.ADD:
            return True
        if event.action is Action.UPDATE:
            before, after = event.old.allocatable, event.new.allocatable
            return any(v > before.get(r, 0) for r, v in after.items())
        return False
    if event.kind != "Pod":
        return False
    old, new = event.old, event.new
    if old is None:
        return False
    if old.is_bound and not old.is_terminal:
        if new is None or new.is_terminal or new.spec.node_name != old.spec.node_name:
            return True
        return any(new.requests.get(r, 0) < v for r, v in old.requests.items())
    return bool(old.status.nominated_node_name) and (new is None or new.status.nominated_node_name
                                                     != old.status.nominated_node_name)


def queueing_hint(event: ClusterEvent) -> bool:
    """:func:`frees_room`, or an extended resource newly served through DRA (KEP-5004): a DeviceClass added or
    changed (it may name the resource, kube-scheduler's ``isSchedulableAfterDeviceClassEvent`` in ``fit.go``), or
    a node that stops offering an extended resource (DRA serves it there instead, ``shouldDelegateResourceToDRA``)."""
    if event.kind == "DeviceClass":
        return event.action is not Action.DELETE
    if event.kind == "Node" and event.action is Action.UPDATE:
        after = event.new.allocatable
        if any(v > 0 and after.get(r, 0) == 0 and is_extended(r) for r, v in event.old.allocatable.items()):
            return True
    return frees_room(event)
