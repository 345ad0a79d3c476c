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
"""The collector's thresholds (``gc.set_threshold``) once ``run``'s caches are synced: a young collection every 20,000
net allocations of containers instead of CPython's 700. In the steady state nearly every container that survives a
young collection is a cache object the process keeps (the model of a pod just bound, about 100 containers), so a
young collection walks them at about a microsecond each, promotes them, and every tenth young collection walks them
again in the middle generation; the requests and events that allocate the rest die by reference counting before any
collection sees them. With collections 28 times rarer, the survivors are walked once in the young generation and
seldom in the middle one. Over a drain of 4,000 plain pods (``bench_e2e --case plain``) the collector's CPU fell from
1.1 s to 0.4 s: four full collections of about 80 ms each and 56 middle ones before, none and one after. Cyclic garbage
(a few thousand objects per drain) waits at most that many allocations longer."""


def collect_less_often() -> None:
    """Set :data:`STEADY_THRESHOLDS`: for a process whose long-lived objects are built (and frozen) and whose later
    allocations are mostly short-lived."""
    gc.set_threshold(*STEADY_THRESHOLDS)
