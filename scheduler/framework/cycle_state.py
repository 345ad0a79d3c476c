"""CycleState: the scratch state of one solve, with one undo journal that every plugin's state rides on.

Mirrors kube-scheduler's ``framework.CycleState`` (``pkg/scheduler/framework/cycle_state.go``):
per-cycle data is written once under a plugin's key and read many times, and a missing key is an
error, not a silent default (:class:`MissingState`). Unlike kube's pod-at-a-time cycle, one solve
here places a whole group tree and backtracks, so the state also carries the **journal**: every
placement (node row, signature, pods) with the token each Reserve plugin returned for it. Undoing
to a mark pops placements and hands each plugin its token back (kube's Unreserve, and the
AddPod/RemovePod of its PreFilter extensions), in reverse order, so free capacity, devices and
any plugin's counts return exactly to what they were.

``free`` — the ``(N, R)`` free-capacity matrix (allocatable − used − room nominated to
more important pods) — is kept here rather than behind NodeResourcesFit's key because the search
itself reads it to prune topology domains.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from scheduler.framework.node_table import BoolArray, IntArray, NodeTable
from scheduler.framework.plan import SolverConfig
from scheduler.framework.snapshot import Snapshot
from scheduler.model.pod import Pod

if TYPE_CHECKING:
    from scheduler.framework.interface import ReservePlugin, Signature

T = TypeVar("T")


class MissingState(LookupError):
    """A plugin read a key no plugin wrote in this cycle: a wiring bug (kube returns an Error status)."""


@dataclass(frozen=True, slots=True)
class StateKey(Generic[T]):
    """A typed key into :class:`CycleState` (or a signature's data); ``name`` starts with the plugin's name."""

    name: str


@dataclass(frozen=True, slots=True)
class Placement:
    """One journal entry: ``pods`` (same signature) placed on node ``row``; ``tokens[i]`` is what the
    i-th Reserve plugin returned for it (its undo information, or the devices it chose)."""

    row: int
    signature: Signature
    pods: tuple[Pod, ...]
    tokens: tuple[Any, ...]


class CycleState:
    """See the module docstring.

    ``snapshot``: the cycle's frozen view (never modified). ``config``: the solver settings.
    ``priority``: the root's priority (room nominated to pods of at least this priority is not
    ours). ``own``: keys of the root's pending pods (room nominated to them is theirs to use).
    ``reservers``: the profile's Reserve plugins, in the order they run. ``pending``: the root's pending
    pods (what inter-pod plugins read of the pods the plan may place).

    ``scope``: the nodes the group being placed may use — its topology domain inside its parents', set
    by the search while it places a leaf (None: no restriction); PodTopologySpread applies its
    constraints among the domains inside it.
    """

    def __init__(self, snapshot: Snapshot, config: SolverConfig, priority: int,
                 reservers: Sequence[ReservePlugin], own: frozenset[str] = frozenset(),
                 pending: Sequence[Pod] = ()) -> None:
        self.snapshot = snapshot
        self.pending = tuple(pending)
        self.scope: BoolArray | None = None
        self.table: NodeTable = snapshot.table
        self.config = config
        self.priority = priority
        self.reservers = tuple(reservers)
        self.free: IntArray = snapshot.free()
        for nominated in snapshot.nominated:
            # room held for a pod at least as important is not ours to take (unless it is ours)
            if nominated.priority >= priority and nominated.pod not in own:
                self.free[nominated.row] -= nominated.request
        self.journal: list[Placement] = []
        self._data: dict[str, object] = {}

    # -- plugin data -------------------------------------------------------------------------------
    def write(self, key: StateKey[T], value: T) -> None:
        """Store a plugin's per-cycle value under ``key``."""
        self._data[key.name] = value

    def read(self, key: StateKey[T]) -> T:
        """The value written under ``key``. Raises :class:`MissingState` if none was."""
        try:
            return cast(T, self._data[key.name])
        except KeyError:
            raise MissingState(f"cycle state has no {key.name!r}") from None

    def get(self, key: StateKey[T]) -> T | None:
        """The value written under ``key``, or None (for plugins whose state is created on first use)."""
        return cast("T | None", self._data.get(key.name))

    def setdefault(self, key: StateKey[T], make: Callable[[], T]) -> T:
        """The value written under ``key``; when there is none yet, ``make()`` is written and returned (a
        plugin's per-solve state created on first use)."""
        value = self._data.get(key.name)
        if value is None:
            value = self._data[key.name] = make()
        return cast(T, value)

    # -- the journal -------------------------------------------------------------------------------
    def mark(self) -> int:
        """A point to :meth:`undo` back to."""
        return len(self.journal)

    def reserve(self, row: int, sig: Signature, pods: tuple[Pod, ...]) -> int:
        """Place up to ``len(pods)`` pods of ``sig`` on ``row`` through every Reserve plugin, in order.

        A plugin may reserve fewer than asked (devices ran short on the node): the later plugins are
        asked for that many, and the placement is journaled with that prefix of ``pods``. Returns how
        many were placed (0: nothing was journaled and every plugin's state is as before).
        """
        if len(self.reservers) == 1:  # the common case (no DRA view): no prefix bookkeeping
            got, token = self.reservers[0].reserve(self, sig, row, pods)
            if got:
                self.journal.append(Placement(row, sig, pods[:got], (token,)))
            return got
        tokens: list[Any] = []
        count = len(pods)
        for i, plugin in enumerate(self.reservers):
            got, token = plugin.reserve(self, sig, row, pods[:count])
            if got < count and i > 0:
                raise AssertionError(f"{plugin.name} reserved {got}/{count} after earlier plugins committed: "
                                     "only the first Reserve plugin may reserve fewer")
            count = got
            tokens.append(token)
            if count == 0:
                return 0
        self.journal.append(Placement(row, sig, pods[:count], tuple(tokens)))
        return count

    def undo(self, mark: int) -> None:
        """Pop placements back to ``mark``, each plugin's Unreserve in reverse order."""
        while len(self.journal) > mark:
            placement = self.journal.pop()
            for plugin, token in zip(reversed(self.reservers), reversed(placement.tokens), strict=True):
                plugin.unreserve(self, placement, token)
