"""Python's cyclic garbage collector around the building of long-lived objects: :func:`paused_then_frozen`."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_then_frozen() -> Iterator[None]:
    """The cyclic collector off while the block builds objects the process keeps, then everything built so far
    moved out of its sight (``gc.freeze``) and the collector back on (if it was on before).

    Reading a cluster (a snapshot's documents and models, or the informers' first lists) makes millions of
    containers that outlive the collector's young generations, so allocation bursts keep starting collections
    that walk them all, for nothing: those objects hold no reference cycles, and what is dropped goes by
    reference counting (5,000 nodes and 20,000 real-sized pods listed: 12.8 s of CPU with the collector on,
    4.2 s with it off). They then live until the process ends, so later collections need not walk them
    either: ``gc.freeze`` (O(1), no collection first) moves them to the permanent generation, as the ``gc``
    module's documentation does for a parent's objects before ``fork``, and the cost of a collection no
    longer grows with the cluster. Cyclic garbage made meanwhile (none is expected) stays until the process
    ends.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if collecting:
            gc.enable()


STEADY_THRESHOLDS = (20_000, 10, 10)
"""The collector's thresholds (``gc.set_threshold``) once ``run``'s caches are synced: a young collection after 20,000
net allocations of containers instead of CPython's 700. The young generation counts allocations less deallocations
since its last collection. In the steady state nearly everything allocated is short-lived (a request's objects, a
cycle's, a watch event's) or replaces what it frees (a pod's new model and the old one), but at 700 the bursts of that
work cross the threshold about once every twelve pods; each collection then walks whatever is alive at that
instant and promotes it, which starts middle collections and, now and then, a full one over every object built since
start-up (about 80 ms at 4,000 pods). Over a drain of 4,000 plain pods (``bench_e2e --case plain``) that was 336 young,
31 middle and 2 full collections, about 0.7 s of CPU (170 µs per pod), and none at all with these thresholds.
Cyclic garbage, which is never deallocated, still counts towards a collection: at most 20,000 containers of it wait."""


def collect_less_often() -> None:
    """Set :data:`STEADY_THRESHOLDS`: for a process whose long-lived objects are built (and frozen) and whose later
    allocations are mostly short-lived."""
    gc.set_threshold(*STEADY_THRESHOLDS)
