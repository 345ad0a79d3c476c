"""What one cycle decides: a :class:`Plan` for the whole tree, :class:`Unschedulable`, or :class:`Preemption`.

All are values (outcomes are not exceptions); a :data:`Decision` is one of them. The solver returns
a Plan or an Unschedulable; the PostFilter plugins (preemption) may turn an Unschedulable into a
Preemption. The caller of the one scheduling cycle (``scheduler.cycle.schedule_one``) — ``simulate``
or the live driver — assumes a Plan into its cache and hands it to its binder; records the
Unschedulable reasons on the pods and groups and backs the root off; or, for a Preemption, nominates
the preemptor's pods and evicts the victims, and binds the tree in a later cycle once the room is
there (binding and preemption never happen in the same cycle).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from scheduler.framework.status import Code
from scheduler.model.dra import DeviceUse
from scheduler.model.pod import Pod
from scheduler.model.scheduling import GroupKey
from scheduler.scoring import Scoring as Scoring  # re-exported: the framework's name for the choice


@dataclass(frozen=True, slots=True)
class SolverConfig:
    """Solver settings, passed as a value (kube's ``Features`` pattern); no global flags."""

    scoring: Scoring = "pack"
    """``pack`` (default): fewest nodes, fill partly used nodes first, keep accelerator nodes whole
    for pods that need no accelerator. ``spread``: one pod at a time onto the emptiest node."""
    search_budget: int = 256
    """Most subtree placements tried for one root before giving up (bounds a failing search's
    time; each attempt is one vectorised pass over the candidate nodes), per pass of the search (a
    failed one may have a second pass for its reasons). 256 covers every domain of a 3-zone × 40-rack
    cluster once per level with room for backtracking."""


@dataclass(frozen=True, slots=True)
class ClaimAllocation:
    """A ResourceClaim the plan allocates (DRA): what to write to its ``status`` before any bind.

    ``claim``: ``namespace/name``. ``reserved_for``: (kind ``Pod`` | ``PodGroup``, name, uid) consumers
    (a PodGroup's uid is filled in by the writer). ``node``: the node of a per-pod claim, or of a
    shared one that a ``bindsToNode`` device pins to one node; None for another shared one. ``results``:
    (request, driver, pool, device). ``node_selector``: where the allocation is usable, as an API
    ``NodeSelector`` dict (None: everywhere). ``synthetic``: a scheduler-made extended-resource claim that
    must be created first, owned by ``pod``; ``extended``: the extended resources it serves (those its node
    does not offer in its allocatable). ``uses``: how each result uses its device, in the order of
    ``results`` (empty: each takes its device whole; see :attr:`device_uses`).
    """

    claim: str
    reserved_for: tuple[tuple[str, str, str], ...]
    node: str | None
    results: tuple[tuple[str, str, str, str], ...]
    node_selector: Mapping[str, Any] | None = None
    synthetic: bool = False
    pod: str | None = None
    uses: tuple[DeviceUse, ...] = ()
    extended: tuple[str, ...] = ()

    @property
    def device_ids(self) -> tuple[str, ...]:
        return tuple(f"{driver}/{pool}/{device}" for _, driver, pool, device in self.results)

    @property
    def device_uses(self) -> tuple[DeviceUse, ...]:
        """One :class:`DeviceUse` per result: ``uses`` when given, else each device taken whole."""
        return self.uses or tuple(DeviceUse(d) for d in self.device_ids)


@dataclass(frozen=True, slots=True)
class VolumeClaimBinding:
    """A WaitForFirstConsumer PersistentVolumeClaim the plan binds (VolumeBinding): what to write before any bind.

    ``claim``: ``namespace/name``. ``node``: the node chosen for it (the plan's node of its pods).
    ``volume``: the name of an available PersistentVolume the plan binds it to (kube's *static binding*:
    the PV's ``spec.claimRef`` is written), or None to have it provisioned for ``node`` (the PVC's
    ``volume.kubernetes.io/selected-node`` annotation is written). ``pods``: keys of the plan's pods that
    use the claim (one, or several sharing it — all on ``node``).
    """

    claim: str
    node: str
    volume: str | None = None
    pods: tuple[str, ...] = ()


class PlanFields(TypedDict, total=False):
    """The :class:`Plan` fields an :class:`~scheduler.framework.interface.OutcomePlugin` fills: what the binder
    writes before the first bind, by the plugin that decided it."""

    allocations: tuple[ClaimAllocation, ...]
    volumes: tuple[VolumeClaimBinding, ...]


@dataclass(frozen=True, slots=True)
class Plan:
    """A placement that satisfies the root: every gang leaf ≥ minCount, every gang composite ≥ minGroupCount.

    ``placements``: (pod, node name) for each pod to bind. ``satisfied``: groups satisfied by
    the plan. ``unplaced``: pod key → reason, for pending members the plan leaves pending (a
    basic group's overflow, or children of a composite beyond minGroupCount that did not fit).
    ``group_reasons``: why each unsatisfied group inside the tree was left out. ``attempts``:
    subtree placements tried (solver search effort).
    """

    root: GroupKey
    placements: tuple[tuple[Pod, str], ...]
    satisfied: frozenset[GroupKey]
    unplaced: Mapping[str, str] = field(default_factory=dict)
    group_reasons: Mapping[GroupKey, str] = field(default_factory=dict)
    attempts: int = 0
    allocations: tuple[ClaimAllocation, ...] = ()
    """Claims to allocate (DRA), written before the first bind."""
    selector_errors: tuple[str, ...] = ()
    """CEL selector errors this solve met (DRA), for the reports; each solve has its own."""
    volumes: tuple[VolumeClaimBinding, ...] = ()
    """WaitForFirstConsumer claims to bind (VolumeBinding), written and waited for before the first bind."""

    @property
    def device_ids(self) -> tuple[str, ...]:
        """Every device the plan's allocations name."""
        return tuple(d for a in self.allocations for d in a.device_ids)

    @property
    def device_uses(self) -> tuple[DeviceUse, ...]:
        """How the plan's allocations use their devices."""
        return tuple(u for a in self.allocations for u in a.device_uses)


def join_postfilter(summary: str, note: str) -> str:
    """``note`` (what a PostFilter found) after ``summary`` (a reason), as kube-scheduler's ``FitError.Error()``
    appends its ``PostFilterMsg``: after a space when the summary ends a sentence, else after ``; ``; ``note`` alone
    for no summary."""
    if not summary:
        return note
    return f"{summary}{' ' if summary.endswith('.') else '; '}{note}"


@dataclass(frozen=True, slots=True)
class Unschedulable:
    """No placement satisfies the root; nothing of the tree may be bound.

    ``code``: UNSCHEDULABLE when capacity was the obstacle (preemption may help),
    UNSCHEDULABLE_AND_UNRESOLVABLE when only static filters (taints, selectors, cordons)
    rejected nodes. ``message``: the root's summary in kube-scheduler's style.
    ``group_reasons``: the reason per group of the tree.
    """

    root: GroupKey
    code: Code
    message: str
    group_reasons: Mapping[GroupKey, str] = field(default_factory=dict)
    attempts: int = 0
    rejectors: frozenset[str] = frozenset()
    """Names of the plugins that rejected nodes or members (kube's "unschedulable plugins"): the queue
    wakes the root only on cluster events that one of them says may help (queueing hints)."""
    selector_errors: tuple[str, ...] = ()
    """CEL selector errors this solve met (DRA), for the reports; each solve has its own."""
    not_ready: bool = False
    """The root was not tried: pods it cannot do without are not ready for scheduling (a claim not created yet), as
    kube-scheduler holds a pod at PreEnqueue — reported as a root waiting for its members is, not as a failure."""
    minimum: Plan | None = None
    """Set when the root's minimum *does* fit — this plan — but pending members above it fit nowhere: the
    failure is theirs, and preemption, if it helps, must place every pending member (upstream preempts for
    every pending member of a group, ``podgrouppreemption_test.go``)."""

    def with_postfilter(self, note: str) -> Unschedulable:
        """This failure with a PostFilter's ``note`` (what preemption found) after the root's summary
        (:func:`join_postfilter`: ``… 3 Insufficient cpu. preemption: …``), and after each group's own reason: the
        note is about the whole tree, and a child group's condition shows its own reason."""
        return dataclasses.replace(self, message=join_postfilter(self.message, note),
                                   group_reasons={k: join_postfilter(v, note) for k, v in self.group_reasons.items()})


@dataclass(frozen=True, slots=True)
class Preemption:
    """The root does not fit as the cluster is, but does once ``victims`` are gone: evict them first.

    ``victims``: the running pods to evict, whole victim units at a time (a group with
    ``disruptionMode: all`` entirely), each of strictly lower priority than the root; empty while
    the victims of an earlier preemption of this root are still terminating (``waiting``).
    ``nominations``: (preemptor pod, node) — ``status.nominatedNodeName`` to set so the room freed is
    held for the root. ``plan``: the placement the tree gets once the victims are gone (None when
    ``waiting``); it is *not* to be bound in this cycle. ``failure``: why the tree did not fit
    without preemption (its reasons and rejecting plugins still describe the root until it fits).
    ``message``: the PostFilter's summary (``pod group preemption: …``). ``units``: how many victim
    units the victims form; ``reprieved``: candidate units the reprieve pass kept;
    ``pdb_violations``: victim pods whose eviction exceeds a PodDisruptionBudget. ``awaited`` (``waiting`` only): the
    pods it waits for, by key — the victims chosen for it earlier still in the cluster, and the pods of lower priority
    terminating by preemption on its nominated nodes.
    """

    root: GroupKey
    victims: tuple[Pod, ...]
    nominations: tuple[tuple[Pod, str], ...]
    plan: Plan | None
    failure: Unschedulable
    message: str
    units: int = 0
    reprieved: int = 0
    pdb_violations: int = 0
    awaited: tuple[str, ...] = ()

    @property
    def waiting(self) -> bool:
        """The victims of an earlier preemption are still terminating: nothing new is evicted."""
        return self.plan is None

    @property
    def rejectors(self) -> frozenset[str]:
        """The plugins that rejected the root without preemption (the queue's hints key on them)."""
        return self.failure.rejectors

    @property
    def selector_errors(self) -> tuple[str, ...]:
        return self.failure.selector_errors

    @property
    def attempts(self) -> int:
        return self.failure.attempts


Decision = Plan | Unschedulable | Preemption
"""What one scheduling cycle decides for a root."""
