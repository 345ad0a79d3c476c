"""NodeResourcesFit, vectorised: how many copies of a request fit on each node.

Mirrors ``plugins/noderesources/fit.go`` ``fitsRequest`` (v1.37): a pod fits when, for every
resource it requests (including one ``pods`` slot), request ≤ allocatable − used. Reasons
use upstream's wording: ``Insufficient <resource>`` and ``Too many pods``.
"""

from __future__ import annotations

import numpy as np

from scheduler.model.quantity import PODS
from scheduler.solver.snapshot import IntArray

NAME = "NodeResourcesFit"
TOO_MANY_PODS = "Too many pods"  # fit.go


def insufficient(resource: str) -> str:
    """``Insufficient <resource>`` (fit.go)."""
    return TOO_MANY_PODS if resource == PODS else f"Insufficient {resource}"


def copies(free: IntArray, request: IntArray) -> IntArray:
    """Copies of ``request`` that fit on each row of ``free``.

    ``free``: ``(N, R)`` free capacity; ``request``: ``(R,)`` one pod's requests, same units.
    Returns ``(N,)`` counts ≥ 0. A request of nothing but zeros fits without bound; it is
    capped by the ``pods`` column in practice, since every pod requests one.
    """
    cols = np.flatnonzero(request > 0)
    if cols.size == 0:
        return np.full(free.shape[0], np.iinfo(np.int64).max // 2, dtype=np.int64)
    per = free[:, cols] // request[cols]
    return np.asarray(np.maximum(per.min(axis=1), 0), dtype=np.int64)


def reasons(free_row: IntArray, request: IntArray, resources: tuple[str, ...]) -> list[str]:
    """Every resource of one node that is short for ``request`` (each becomes one counted reason)."""
    short = np.flatnonzero((request > 0) & (free_row < request))
    return [insufficient(resources[j]) for j in short]
