"""NodeRows: the NodeInfos of a snapshot, one per node row, sharing their unchanged rows with the snapshot before.

A snapshot's NodeInfos (:class:`~scheduler.framework.node_info.NodeInfo`, one per row of the node table) change
a few rows at a time: a cycle binds a plan on a few nodes, a preemption's what-if removes the victims of a few.
A tuple of N NodeInfos copied per snapshot costs O(N) each time (at 15,000 nodes, touching every NodeInfo's
reference count is about half a millisecond). :class:`NodeRows` is an immutable sequence kept in chunks of
:data:`CHUNK` rows: :meth:`NodeRows.replaced` makes a new one that shares every chunk it does not touch, in
O(N / CHUNK + CHUNK · chunks touched) — a persistent vector of two levels. Reading a row is two indexings.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import SupportsIndex, overload

from scheduler.framework.node_info import NodeInfo

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
