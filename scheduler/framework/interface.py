"""The plugin extension points, as one-method Protocols whose docstrings are the contract.

Modelled on kube-scheduler's framework (``staging/src/k8s.io/kube-scheduler/framework/interface.go``),
reshaped for a solver that places whole gangs of identical pods at once:

* the unit a plugin judges is a :class:`Signature` — the pending pods of one group that schedule
  alike — and the dynamic extension points are **array-shaped**: a Filter answers "how many
  copies fit on each of these nodes *now*" for a vector of rows, so a 64-pod gang costs one
  vectorised pass instead of 64 pod-by-node calls;
* "now" includes the pods placed earlier in the same plan: every placement goes through the
  Reserve plugins and is journaled on the :class:`~scheduler.framework.cycle_state.CycleState`,
  so a Filter sees its siblings' placements and Unreserve undoes them when the search backtracks.

Extension points, in the order a cycle uses them:

=================  ===========================================================================
StaticFilter       per node, static properties only (labels, taints, cordon); memoised per static
                   pod key on the node table, so it runs once per template, not per cycle
PreFilter          once per signature per solve: what the Filter needs; may restrict the nodes or
                   reject the signature outright (a claim not created yet)
Filter             copies allowed per candidate node given the plan so far (≥ 0)
Score              0–100 per candidate node; weighted and added before the packing order
Reserve/Unreserve  commit a placement to the plugin's cycle state / take it back (idempotent
                   per journal entry; Unreserve runs only for entries Reserve returned); the first
                   may reserve fewer than allowed (ShortReserve: device allocation)
Shared             hold what a leaf's members hold in common (a group's claims) one way after
                   another, each way tried with the leaf's placement under it
Outcome            once a plan is found: the plan's fields a plugin fills (claim allocations, volume
                   bindings) and the notes every reason quotes
PostFilter         after a root failed: may find room (preemption), or nothing
PreBind            after a plan is assumed: API writes (and waits) that must be done before the first bind,
                   with a rollback when a later step fails; run by ``scheduler.binding`` against an
                   :class:`ApiWriter` — the API's in ``run``, the cache's in ``simulate`` — so both write alike
Bind               the members' ``pods/binding`` writes, after every PreBind plugin succeeded
=================  ===========================================================================

Codes (``Status.code``): UNSCHEDULABLE lets PostFilter try (preemption may help);
UNSCHEDULABLE_AND_UNRESOLVABLE skips it; ERROR is an internal fault. Callers branch on the
code, never on the message.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from scheduler.framework.binding_cycle import BindingCycle, Failure, Undone
from scheduler.framework.cycle_state import CycleState, Placement, StateKey
from scheduler.framework.node_table import BoolArray, IntArray, StaticFit
from scheduler.framework.plan import Decision, PlanFields, SolverConfig, Unschedulable
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.model.kinds import Kind
from scheduler.model.node import Node
from scheduler.model.pod import Pod, PodSpec

JSON = dict[str, Any]


@dataclass(eq=False)
class Signature:
    """Pending pods of one leaf that schedule alike: same static-filter inputs, same requests, same
    answer from every PreFilter plugin's :meth:`PreFilterPlugin.signature_key`.

    ``request``: one pod's requests over the table's columns (extended resources a DeviceClass serves left
    out); ``node_or_dra``: those left out, over the same columns (None: none) — counted against the allocatable
    of a node offering a non-zero amount of the resource, served through DRA on every other node (KEP-5004,
    decided node by node); ``unknown``: requested resources no node offers; ``static``: the static filters' verdict;
    ``nodes``: the nodes PreFilter plugins allow (None: all); ``rejected``: a PreFilter's rejection of
    the whole signature; ``data``: per-plugin values written at PreFilter (read with :meth:`read`).
    """

    pods: tuple[Pod, ...]
    request: IntArray
    unknown: tuple[str, ...]
    static: StaticFit
    needs_accelerator: bool
    nodes: BoolArray | None = None
    rejected: Status | None = None
    data: dict[str, Any] = field(default_factory=dict)
    node_or_dra: IntArray | None = None

    def write(self, key: StateKey[Any], value: Any) -> None:
        self.data[key.name] = value

    def read(self, key: StateKey[Any]) -> Any:
        """The value a PreFilter plugin stored; raises KeyError when it did not (a wiring bug)."""
        return self.data[key.name]


@dataclass(frozen=True, slots=True)
class Rejections:
    """Why a Filter refused nodes: reason → number of nodes, and the code those nodes count under."""

    counts: Counter[str]
    code: Code = Code.UNSCHEDULABLE


class StaticFilterPlugin(Protocol):
    """A yes/no check per node on static properties. Must read only ``spec`` and ``node`` (its result is
    memoised per static key for the node table's lifetime). Returns None (passes) or a non-success
    Status, usually UNSCHEDULABLE_AND_UNRESOLVABLE since preemption cannot change a label or taint."""

    @property
    def name(self) -> str: ...

    def filter_node(self, spec: PodSpec, node: Node) -> Status | None: ...


class PreFilterPlugin(Protocol):
    """Once-per-signature work.

    :meth:`signature_key` is what of a pod the plugin reads beyond the static key and requests (pods
    with different keys never share a signature). :meth:`pre_filter` may restrict the signature's
    nodes (return a mask) or reject it (set ``sig.rejected``); it stores what its Filter or Reserve
    reads in ``sig.data``. It must not change the cycle's journal.
    """

    @property
    def name(self) -> str: ...

    def signature_key(self, state: CycleState, pod: Pod) -> Hashable: ...

    def pre_filter(self, state: CycleState, sig: Signature) -> BoolArray | None: ...


class FilterPlugin(Protocol):
    """How many more copies of ``sig`` each node in ``rows`` can take given the cycle state (the pods
    placed so far in this plan included): an ``(len(rows),)`` int64 array ≥ 0; a large number means
    "no limit from this plugin", and None means no limit on any row (the plugin has nothing to say about
    this signature: cheaper than an array of large numbers). Must read only ``state`` and ``sig``
    (preemption passes an edited snapshot). :meth:`rejections` explains the rows where the plugin
    allows 0, for the histogram."""

    @property
    def name(self) -> str: ...

    def filter(self, state: CycleState, sig: Signature, rows: IntArray) -> IntArray | None: ...

    def rejections(self, state: CycleState, sig: Signature, rows: IntArray) -> Rejections: ...

    def interacts(self, state: CycleState, sig: Signature) -> bool:
        """Whether placing copies of ``sig`` on one node can change this plugin's answer for ``sig`` on
        *other* nodes (a spread or anti-affinity rule over a wider domain): the search then asks again
        after each placement instead of counting down the node it used."""
        ...


@dataclass(frozen=True, slots=True)
class Quota:
    """A batch of copies an interacting Filter allows at once: at most ``caps[i]`` on row ``rows[i]``, and at
    most ``budget[d]`` over the rows whose ``domain[i]`` is ``d`` (−1: no budget for that row).

    The plugin promises that placing *exactly* ``min(count, budget.sum())`` copies within these bounds, in
    any order, leaves a state its per-pod rule reaches in some order; a batch that places fewer must be
    undone and placed again copy by copy (the search does).
    """

    caps: IntArray
    domain: IntArray
    budget: IntArray


@runtime_checkable
class QuotaFilterPlugin(FilterPlugin, Protocol):
    """A Filter whose rule between members is a budget per topology domain (topology spread): instead of being
    asked again after each placement, it hands the search a :class:`Quota` for the whole batch, so a
    16-pod gang spread over three zones is placed in three picks, not sixteen."""

    def quota(self, state: CycleState, sig: Signature, rows: IntArray, capacity: IntArray,
              count: int) -> Quota | None:
        """The batch for up to ``count`` copies on ``rows``, given ``capacity`` (copies each row can take by
        the other Filters); None when the rule cannot be put as one (the search then asks after each copy)."""
        ...


@runtime_checkable
class CappedFilterPlugin(FilterPlugin, Protocol):
    """A Filter whose rule between copies of one signature bounds how many of them any set of nodes can hold,
    whatever room the nodes have (a pod's required anti-affinity against its own labels: one copy per topology
    domain), so a reason can say that no resource would lift the bound."""

    def most_copies(self, state: CycleState, sig: Signature, rows: IntArray) -> tuple[str, int] | None:
        """(the rule, in words a reason can quote — ``Its own required pod anti-affinity allows one of these pods per
        kubernetes.io/hostname`` —, the most copies of ``sig`` it lets ``rows`` hold however much room they have),
        for its tightest bound; None when the rule sets no bound there."""
        ...


class ScorePlugin(Protocol):
    """A preference over candidate nodes: ``(len(rows),)`` scores in 0–100, higher is better, multiplied by
    ``weight`` (None: no preference for this signature). The weighted sum ranks nodes before the packing
    order (``--scoring``), as kube's weighted score sum ranks them before its tie-breaks."""

    @property
    def name(self) -> str: ...

    @property
    def weight(self) -> int: ...

    def score(self, state: CycleState, sig: Signature, rows: IntArray) -> IntArray | None: ...

    def interacts(self, state: CycleState, sig: Signature) -> bool:
        """Whether placing copies of ``sig`` changes its own scores (the search then scores again)."""
        ...


class ReservePlugin(Protocol):
    """Commit ``pods`` (a prefix of one signature's pods) on node ``row`` to the plugin's cycle state.

    Returns (how many were reserved, a token). Only the first Reserve plugin of a profile may
    reserve fewer than asked (device allocation can fall short where the Filter could only bound
    it); the others must take all. :meth:`unreserve` gets the placement and the token back when
    the search undoes it; it must restore the state exactly.
    """

    @property
    def name(self) -> str: ...

    def reserve(self, state: CycleState, sig: Signature, row: int, pods: tuple[Pod, ...]) -> tuple[int, Any]: ...

    def unreserve(self, state: CycleState, placement: Placement, token: Any) -> None: ...


class ShortReservePlugin(ReservePlugin, Protocol):
    """A Reserve plugin that may reserve fewer copies than every Filter allowed (device allocation, which the
    Filter can only bound): it must be the profile's first Reserve plugin, so the others never reserve copies it
    dropped. The search offers a node that fell short no more copies of that signature."""

    def shortfall_reason(self) -> str:
        """The histogram reason for nodes every Filter allowed where this plugin still reserved nothing."""
        ...

    def shortfall_detail(self, state: CycleState, sig: Signature, rows: IntArray) -> str:
        """A short note read after the node histogram on why ``rows`` (``(k,)``: the nodes this plugin refused as
        a Filter or where it reserved nothing) could not take the next copy of ``sig`` (DRA's device counts);
        empty when it has nothing to add."""
        ...


class SharedResourcePlugin(Protocol):
    """Resources a group holds in common: allocated once for all of a leaf's members, not per pod (DRA: a
    PodGroup's ``spec.resourceClaims``, or a claim several pods name — KEP-4671's group claims).

    :meth:`held_in_common` lists what the leaf's pending pods hold together (empty: nothing; the search then
    places the leaf directly, and asks no more). Otherwise the search places the leaf once per way
    :meth:`hold` yields: each yield keeps one way of holding ``held`` applied in the plugin's cycle state
    while the generator is suspended (so its Filter restricts the members to the nodes that way allows, and
    the plan's outcome includes it), and resuming it releases that way before the next. Ways are limited to
    what some node in ``mask`` (``(N,)``, the leaf's nodes) reaches; ``need``: the fewest pending members the
    leaf must place (minCount less the bound ones; a way that cannot let that many in may be skipped). When it
    yields nothing,
    :meth:`unheld_reason` is the leaf's reason (the search adds the group's name, domain and the solve's notes).
    Generic in the held item's type; the search only passes items back.
    """

    @property
    def name(self) -> str: ...

    def held_in_common(self, state: CycleState, pending: Sequence[Pod]) -> Sequence[Any]: ...

    def hold(self, state: CycleState, group_name: str, held: Sequence[Any], mask: BoolArray,
             need: int) -> Iterator[None]: ...

    def unheld_reason(self, state: CycleState, held: Sequence[Any]) -> str: ...


class OutcomePlugin(Protocol):
    """What a plugin's decisions add to a solve's outcome beyond the placements.

    :meth:`plan_fields`: the :class:`~scheduler.framework.plan.Plan` fields it fills from its cycle state once
    the search found a plan (the writes the binder makes before the first bind — kube's PreBind reads them from
    the cycle state; ours outlives the cycle, so they travel in the plan). :meth:`notes`: messages the solve met
    that every reason of it quotes (DRA's CEL selector errors), sorted; empty when none. Both read the state
    only.
    """

    @property
    def name(self) -> str: ...

    def plan_fields(self, state: CycleState) -> PlanFields: ...

    def notes(self, state: CycleState) -> Sequence[str]: ...


class PostFilterPlugin(Protocol):
    """Runs once for a root that could not be placed with code UNSCHEDULABLE (preemption's point).

    Returns a new decision (for example a nomination of victims) or None when it cannot help. It
    gets the cycle's snapshot and may evaluate what-ifs on ``snapshot.without(pods)``; it must not
    bind, and binding and preemption never happen in the same cycle.
    """

    @property
    def name(self) -> str: ...

    def post_filter(self, tree: Any, snapshot: Snapshot, result: Unschedulable,
                    config: SolverConfig) -> Decision | None: ...


# -- the binding cycle -----------------------------------------------------------------------------------

Condition = Callable[[], "bool | Failure"]
"""A condition a PreBind step waits for, read from the cache: True (met), False (not yet), or the failure that
ends the wait at once (a controller's signal)."""


class ApiWriter(Protocol):
    """The binding cycle's one seam to the API: the PreBind and Bind plugins write through it and nothing else.

    ``run`` gives the API server's (``scheduler.live.api_writer``: retried with backoff, behind the leadership
    fence, in the client's urgent lane); ``simulate`` the cache's (``scheduler.offline.recorder``: each write
    applied to the cache as the watch would show it, the controllers' answers included). Objects are API JSON;
    ``kind`` is a row of :mod:`scheduler.model.kinds`. Writes raise :class:`~scheduler.errors.ApiError`
    (:class:`~scheduler.errors.NotFound` 404, :class:`~scheduler.errors.Conflict` 409 — a ``metadata.
    resourceVersion`` in a patch body is a precondition) once retrying cannot help.
    """

    def leading(self) -> bool:
        """False once this replica may no longer write (the lease was lost): start no new write."""
        ...

    def slot(self) -> AbstractAsyncContextManager[Any]:
        """Held around each write: bounds the writes in flight."""
        ...

    async def get(self, kind: Kind[Any], namespace: str | None, name: str) -> JSON: ...

    async def create(self, kind: Kind[Any], namespace: str | None, body: JSON) -> JSON: ...

    async def patch(self, kind: Kind[Any], namespace: str | None, name: str, body: JSON, *,
                    sub: str | None = None, reply: bool = True) -> JSON:
        """A JSON merge patch (RFC 7386) of the object, or of its ``sub``-resource (``status``); the object as
        patched (``reply=False``: the caller does not read it, and may get ``{}``)."""
        ...

    async def delete(self, kind: Kind[Any], namespace: str | None, name: str) -> None: ...

    async def bind(self, pod: Pod, node: str, annotations: Mapping[str, str] | None = None,
                   check: Callable[[], str | None] | None = None) -> None:
        """``POST pods/{name}/binding`` with the pod's uid as precondition; ``annotations``: the Binding's, which the
        API server merges into the pod's as it binds it; ``check``: why the target no longer fits (None: it does),
        asked just before each attempt is sent — after any wait for the rate limiter or a retry's backoff — and
        raising :class:`~scheduler.errors.TargetChanged` instead of sending."""
        ...

    def waits(self) -> bool:
        """Whether :meth:`wait` waits; False for a writer nothing changes behind (``simulate``): a condition not
        met at its first read is then reported as one the plan would wait for, not as a failure."""
        ...

    async def wait(self, condition: Condition, kinds: frozenset[str], timeout_s: float) -> bool | Failure:
        """Wait until ``condition`` is not False, re-reading it whenever the cache applied an object of one of
        ``kinds``; returns its last answer — False when ``timeout_s`` (seconds) passed first. A writer that
        cannot wait (``simulate``: nothing changes between two reads) reads it once."""
        ...


class PreBindPlugin(Protocol):
    """Writes (and waits) that must be done before the first member of a plan is bound; kube-scheduler's
    ``PreBindPlugin`` (``staging/src/k8s.io/kube-scheduler/framework/interface.go``), per plan.

    :meth:`pre_flight` runs right after the plan is assumed, before any await (kube's ``PreBindPreFlight``):
    it reads what it needs from the cache as the plan saw it into ``cycle`` and says whether the plugin has
    anything to do (False: skipped, as kube's Skip). :meth:`pre_bind` then makes the writes, in plugin order,
    and may wait for a condition (:meth:`ApiWriter.wait`, bounded by a timeout); it returns None on success or
    the :class:`Failure` that stops the plan — no member is bound. :meth:`rollback` (kube's Unreserve) undoes
    what ``pre_bind`` wrote for members that are not bound (``cycle.outcome``: all, after a PreBind failure;
    the rest after a failed bind); it runs for every plugin whose ``pre_bind`` started, in reverse order, must
    tolerate a ``pre_bind`` that stopped half-way, and never raises :class:`~scheduler.errors.ApiError`.
    """

    @property
    def name(self) -> str: ...

    def pre_flight(self, cycle: BindingCycle) -> bool: ...

    async def pre_bind(self, cycle: BindingCycle, writer: ApiWriter) -> Failure | None: ...

    async def rollback(self, cycle: BindingCycle, writer: ApiWriter) -> Undone: ...


class BindPlugin(Protocol):
    """Binds the plan's members (kube-scheduler's ``BindPlugin``; ``DefaultBinder`` writes ``pods/binding``).

    Runs only after every PreBind plugin succeeded. Fills ``cycle.outcome`` as binds land (bound pods, the
    first permanent failure, members not attempted) and stops starting binds after the first failure; the
    caller forgets the members not bound and rolls back the PreBind plugins for them. Never raises
    :class:`~scheduler.errors.ApiError`.
    """

    @property
    def name(self) -> str: ...

    async def bind(self, cycle: BindingCycle, writer: ApiWriter) -> None: ...
