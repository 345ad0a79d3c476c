"""A snapshot's per-node rows, shared with the snapshot before: its NodeInfos and its usage matrix.

A snapshot's rows change a few at a time: a cycle binds a plan on a few nodes, a preemption's what-if removes the
victims of a few. Copying N rows per snapshot costs O(N) each time (at 15,000 nodes, about half a millisecond to
touch every NodeInfo's reference count, a tenth of one to copy the matrix), so both are kept as values derived
from the previous one, sharing what did not change:

* :class:`NodeRows`, the NodeInfos (:class:`~scheduler.framework.node_info.NodeInfo`, one per row of the node
  table): an immutable sequence kept in chunks of :data:`CHUNK` rows; :meth:`NodeRows.replaced` makes a new one
  that shares every chunk it does not touch, in O(N / CHUNK + CHUNK · chunks touched) — a persistent vector of
  two levels. Reading a row is two indexings.
* :class:`UsageRows`, the ``(N, R)`` matrix of requests in use: a base matrix, never written once shared, and
  the rows that differ from it (an overlay); :meth:`UsageRows.replaced` adds to the overlay in O(rows in it) and
  folds it into a new base (one O(N·R) copy) once it holds :data:`FOLD_SHARE` of the rows. What the solver reads
  — free room, some rows, some columns — is computed from the base with the overlay's rows patched in, in one
  vectorised pass, as from a plain matrix.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import SupportsIndex, overload

import numpy as np

from scheduler.framework.node_info import NodeInfo
from scheduler.framework.node_table import IntArray

SHIFT = 6
CHUNK = 1 << SHIFT
"""Rows per chunk: a derived sequence copies N / CHUNK chunk references plus CHUNK rows per chunk it changes."""
_MASK = CHUNK - 1


class NodeRows(Sequence[NodeInfo]):
    """An immutable sequence of NodeInfos (``rows[i]``: the NodeInfo of node row ``i``); see the module docstring.
    Equal to another sequence only by identity (as a tuple of NodeInfos compared by identity would be: NodeInfos
    have no value equality)."""

    __slots__ = ("_chunks", "_len")

    def __init__(self, infos: Iterable[NodeInfo] = ()) -> None:
        flat = tuple(infos)
        self._len = len(flat)
        self._chunks: tuple[tuple[NodeInfo, ...], ...] = tuple(flat[i:i + CHUNK] for i in range(0, len(flat), CHUNK))

    @classmethod
    def _of(cls, chunks: tuple[tuple[NodeInfo, ...], ...], length: int) -> NodeRows:
        rows = cls.__new__(cls)
        rows._chunks, rows._len = chunks, length
        return rows

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, i: SupportsIndex) -> NodeInfo: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[NodeInfo, ...]: ...

    def __getitem__(self, i: SupportsIndex | slice) -> NodeInfo | tuple[NodeInfo, ...]:
        """Row ``i`` (an int or numpy integer; negative counts from the end; IndexError outside); a slice gives a
        tuple."""
        if isinstance(i, slice):
            return tuple(self)[i]
        i = operator.index(i)
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError(f"node row {i} out of range ({self._len} rows)")
        return self._chunks[i >> SHIFT][i & _MASK]

    def __iter__(self) -> Iterator[NodeInfo]:
        return itertools.chain.from_iterable(self._chunks)

    def replaced(self, changes: Mapping[int, NodeInfo]) -> NodeRows:
        """These rows with ``changes`` (row → its NodeInfo now) applied; every untouched chunk is shared.
        Raises IndexError for a row outside the sequence."""
        if not changes:
            return self
        chunks = list(self._chunks)
        by_chunk: dict[int, list[tuple[int, NodeInfo]]] = {}
        for row, info in changes.items():
            if not 0 <= row < self._len:
                raise IndexError(f"node row {row} out of range ({self._len} rows)")
            by_chunk.setdefault(row >> SHIFT, []).append((row & _MASK, info))
        for c, edits in by_chunk.items():
            chunk = list(chunks[c])
            for at, info in edits:
                chunk[at] = info
            chunks[c] = tuple(chunk)
        return NodeRows._of(tuple(chunks), self._len)

    def __repr__(self) -> str:
        return f"NodeRows({self._len} rows)"


FOLD_SHARE = 1 / 64
"""The share of the rows an overlay holds before :meth:`UsageRows.replaced` folds it into a new base."""
MIN_FOLD = 64
"""Rows an overlay may always hold (small tables fold no sooner than this)."""


class UsageRows:
    """An immutable ``(N, R)`` int64 matrix of requests in use (see the module docstring): ``base`` (read-only, shared
    with the UsageRows derived from it) with the rows of ``overlay`` (row → ``(R,)`` vector) in place of its own.
    ``base`` and ``overlay`` are taken over: the caller must not change them afterwards (``base`` is made
    read-only)."""

    __slots__ = ("_base", "_full", "_overlay", "_patch")

    def __init__(self, base: IntArray, overlay: dict[int, IntArray] | None = None) -> None:
        base.flags.writeable = False
        self._base = base
        self._overlay: dict[int, IntArray] = overlay if overlay is not None else {}
        self._patch: tuple[IntArray, IntArray] | None = None
        self._full: IntArray | None = None if self._overlay else base

    @property
    def shape(self) -> tuple[int, int]:
        rows, cols = self._base.shape
        return rows, cols

    def _patched(self) -> tuple[IntArray, IntArray]:
        """The overlay as ``(rows, values)``: ``(k,)`` row numbers, ascending, and ``(k, R)`` their vectors (made
        once)."""
        if self._patch is None:
            rows = np.array(sorted(self._overlay), dtype=np.intp)
            values = np.array([self._overlay[r] for r in rows.tolist()], dtype=np.int64)
            self._patch = rows, values.reshape(len(rows), self._base.shape[1])
        return self._patch

    def matrix(self) -> IntArray:
        """The whole ``(N, R)`` matrix (read-only; made once per UsageRows when it has an overlay: O(N·R))."""
        if self._full is None:
            full = self._base.copy()
            rows, values = self._patched()
            full[rows] = values
            full.flags.writeable = False
            self._full = full
        return self._full

    def row(self, i: int) -> IntArray:
        """Row ``i``'s ``(R,)`` vector (read-only)."""
        found = self._overlay.get(i)
        return self._base[i] if found is None else found

    def take(self, rows: IntArray) -> IntArray:
        """``(len(rows), R)``: a fresh copy of ``rows`` (any order, repeats allowed)."""
        out: IntArray = self._base.take(rows, axis=0)
        if self._overlay and len(rows):
            over, values = self._patched()
            at = np.minimum(np.searchsorted(over, rows), len(over) - 1)
            hit = over[at] == rows
            out[hit] = values[at[hit]]
        return out

    def columns(self, cols: IntArray) -> IntArray:
        """``(N, len(cols))``: a fresh copy of ``cols``."""
        out: IntArray = self._base[:, cols]
        if self._overlay:
            rows, values = self._patched()
            out[rows] = values[:, cols]
        return out

    def subtracted_from(self, other: IntArray) -> IntArray:
        """A fresh ``(N, R)`` matrix ``other − self`` (e.g. allocatable − used: the free room)."""
        out: IntArray = other - self._base
        if self._overlay:
            rows, values = self._patched()
            out[rows] = other[rows] - values
        return out

    def with_rows(self, rows: IntArray, values: IntArray) -> UsageRows:
        """This matrix with ``rows`` (``(k,)``, no repeats) set to ``values`` (``(k, R)``, copied), as
        :meth:`replaced` would make it; many rows at once are written into one new base directly."""
        if len(self._overlay) + len(rows) <= self._fold_at():
            return self.replaced(dict(zip(rows.tolist(), values.copy(), strict=True)))
        full = self.matrix().copy()
        full[rows] = values
        return UsageRows(full)

    def _fold_at(self) -> float:
        """How many rows the overlay may hold before it is folded into a new base."""
        return max(float(MIN_FOLD), FOLD_SHARE * int(self._base.shape[0]))

    def replaced(self, changes: Mapping[int, IntArray]) -> UsageRows:
        """This matrix with ``changes`` (row → its ``(R,)`` vector now, which the result takes over) in place; the
        base is shared until the overlay holds :data:`FOLD_SHARE` of the rows (then one new base is made)."""
        if not changes:
            return self
        for vector in changes.values():
            vector.flags.writeable = False
        overlay = {**self._overlay, **changes}
        if len(overlay) <= self._fold_at():
            return UsageRows(self._base, overlay)
        base = self._base.copy()
        rows = np.fromiter(overlay, dtype=np.intp, count=len(overlay))
        base[rows] = np.array(list(overlay.values()), dtype=np.int64).reshape(len(overlay), base.shape[1])
        return UsageRows(base)

    def __repr__(self) -> str:
        return f"UsageRows({self._base.shape}, {len(self._overlay)} rows over the base)"
