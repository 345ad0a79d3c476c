"""Offline scheduling of a snapshot: the live scheduler's cache, queue order and cycle, a recording binder.

``simulate(objects, …)`` loads the snapshot into a :class:`~scheduler.cache.cluster.ClusterCache`,
pops the ready roots in queue order, runs each through the one :class:`~scheduler.cycle.CycleRunner`
(solve, assume) and binds each plan with the :class:`~scheduler.offline.recorder.RecordingBinder`
before the next root (docs/architecture.md, "simulate"), then returns a :class:`Simulation` with
the outcome per group, per pod and per node. Unlike ``run``, it also reports groups that have no
pod at all (as Waiting) and explains pods whose PodGroup failed to load, because it has the
loader's problem list. Rendering is in :mod:`scheduler.offline.report`.

Volumes: PersistentVolumeClaims, PersistentVolumes, StorageClasses and CSINodes of the snapshot feed
the volume plugins; each plan's WaitForFirstConsumer claims are then shown bound (a matched PV, or one
provisioned for the chosen node), so later plans see them bound, as they would live. A generic
ephemeral volume's missing claim is made from the pod's template, as its controller would.

Preemption (``--preemption``, the default): a root that does not fit may preempt through the same
PostFilter plugin as ``run`` (:class:`~scheduler.preemption.DefaultPreemption`). ``simulate`` then
applies the decision the way the live scheduler's watch would show it once the evictions completed:
the victims are removed from the cache and the root is decided again at once, so it shows as
Scheduled with its placements; the victims are listed per preemptor (:class:`PreemptionOutcome`), and a
PodGroup that lost running pods to it shows as Preempted.

DRA: when the snapshot has ``resource.k8s.io/v1`` objects or pods with ``spec.resourceClaims``,
snapshots carry a :class:`~scheduler.dra.device_snapshot.DraView`. A template-generated claim missing from the
snapshot is synthesised from its template, as the resourceclaim controller would create it. Each
plan's claim writes are applied to the cache as the API would show them, so a claim allocated by
one plan (a PodGroup claim, a claim shared by name) pins the pods of later plans instead of being
allocated again — by the same bookkeeping as the live scheduler's.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from scheduler.cache.cluster import ClusterCache
from scheduler.cache.group_view import CacheGroupView
from scheduler.cycle import Attempt, CycleRunner, handle
from scheduler.dra.device_snapshot import DraView
from scheduler.framework.binding_cycle import BindingCycle
from scheduler.framework.plan import (
    ClaimAllocation,
    Plan,
    Preemption,
    SolverConfig,
    Unschedulable,
    VolumeClaimBinding,
)
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code
from scheduler.groups.tree import Group, GroupTree, Leaf, TreeState, walk
from scheduler.model.base import first_named
from scheduler.model.coscheduling import CoscheduledPodGroup, unhonoured_fields
from scheduler.model.kinds import POD
from scheduler.model.pod import Pod
from scheduler.model.scheduling import CompositePodGroup, GangPolicy, GroupKey, PodGroup
from scheduler.offline import jobsets, leaderworkersets, pytorchjobs
from scheduler.offline.jobs import add_expansions
from scheduler.offline.loader import UNEXPANDED_WORKLOADS, LoadProblem, Objects
from scheduler.offline.recorder import RecordingBinder
from scheduler.offline.room import RoomTaken, room_taken
from scheduler.preemption import DefaultPreemption
from scheduler.queue import GroupQueue
from scheduler.solver.unsupported import Context, Unhonoured, group_priority_class, unhonoured

EXAMPLE = "default-cluster.yaml"

MAX_PREEMPTION_ROUNDS = 3
"""Preemptions applied for one root in one run before its decision is taken as it stands. One round is
the normal case: the victims' room lets the root fit, on the nodes its pods were nominated for (tried
first). A second can only happen when that room was taken meanwhile; the bound keeps a run finite."""
NAMED_ROOTS = 3
"""Roots named after a DRA request's problem (``; asked by PodGroup ml/a, PodGroup ml/b and 4 more``)."""


def example_path() -> Path:
    """The built-in example snapshot shipped in the package (``scheduler/examples``)."""
    return Path(str(resources.files("scheduler.examples").joinpath(EXAMPLE)))


# A group's ``status`` in the report (the README's "Statuses" table has them all):
SCHEDULED = "Scheduled"
"""Satisfied by this run's plan, or by members already bound."""
PREEMPTED = "Preempted"
"""Running pods of it were evicted by a preemption of this run (whatever else was decided for it)."""
UNSCHEDULABLE = "Unschedulable"
"""Tried, and no placement satisfies it: nothing of its tree is placed."""
WAITING = "Waiting"
"""Not tried: too few members exist or are ready, or a parent CompositePodGroup does not exist."""
INVALID = "Invalid"
"""Not tried: its tree is broken (a cycle, a malformed policy, …)."""


@dataclass(frozen=True, slots=True)
class GroupOutcome:
    """The result for one group: ``status`` is one of :data:`SCHEDULED`, :data:`PREEMPTED`, :data:`UNSCHEDULABLE`,
    :data:`WAITING`, :data:`INVALID`."""

    key: GroupKey
    root: GroupKey
    status: str
    policy: str
    placements: dict[str, str]
    reason: str | None
    priority: int


@dataclass(frozen=True, slots=True)
class PodOutcome:
    """The result for one pending pod of ours: the node chosen, or why none."""

    pod: Pod
    node: str | None
    reason: str | None


@dataclass(frozen=True, slots=True)
class AllocationOutcome:
    """One claim allocated by a plan (DRA): the ``allocation`` as the solver made it, the ``root``
    whose plan made it, the plan's ``pods`` (name, node) that use it, and whether the claim was
    ``synthesized`` (absent from the snapshot: made from its template, or an extended-resource claim)."""

    root: GroupKey
    allocation: ClaimAllocation
    pods: tuple[tuple[str, str], ...]
    synthesized: bool


@dataclass(frozen=True, slots=True)
class VolumeOutcome:
    """One PersistentVolumeClaim a plan bound: the ``binding`` as the solver made it, the ``root`` whose plan made
    it, and the PV it ended up bound to (``volume``: the matched one, or the one provisioned for it)."""

    root: GroupKey
    binding: VolumeClaimBinding
    volume: str

    @property
    def provisioned(self) -> bool:
        return self.binding.volume is None


@dataclass(frozen=True, slots=True)
class PreemptionOutcome:
    """One preemption ``simulate`` applied: the ``root`` that preempted, its ``victims`` as (pod, node they
    ran on), and the PostFilter's ``message``."""

    root: GroupKey
    victims: tuple[tuple[Pod, str], ...]
    message: str


@dataclass(slots=True)
class Simulation:
    """Everything ``simulate`` decided, in queue order, plus the final snapshot for utilisation.

    ``scheduler_name``: the ``spec.schedulerName`` simulated. ``pods_by_scheduler``: the pending pods (no node)
    of the snapshot counted by their ``spec.schedulerName`` (to hint at a wrong name).
    ``skipped``: objects the loader skipped, by ``"apiVersion kind"``. ``allocations``: every
    claim allocation of every plan, in queue order, with the root whose plan made it.
    ``synthesized``: keys (``ns/name``) of claims not in the snapshot that were made from their
    template. ``dra_problems``: unusable pools and slices, malformed claims and templates (once each:
    :attr:`~scheduler.dra.claims.PodClaims.invalid`), and selector errors met while solving.
    ``volumes``: every WaitForFirstConsumer claim a plan bound, in queue order.
    ``synthesized_volume_claims``: keys of generic ephemeral volumes' claims not in the snapshot, made from
    the pods' templates. ``unhonoured``: per pending pod of ours, the fields it sets that no plugin honours
    (:mod:`scheduler.solver.unsupported`, its volume claims' included). ``unhonoured_groups``: the same for
    groups — scheduler-plugins PodGroups (``spec.minResources``, ``spec.scheduleTimeoutSeconds``:
    :func:`~scheduler.model.coscheduling.unhonoured_fields`), and a PodGroup or CompositePodGroup whose
    ``priorityClassName`` names no PriorityClass of the snapshot
    (:func:`~scheduler.solver.unsupported.group_priority_class`).
    ``preemptions``: every preemption applied, in queue order (empty with preemption off).
    ``off_snapshot``: bound pods on a node the snapshot does not hold (``(pod key, node)``, sorted).
    ``jobs``: what was made of each workload of ours that had no pods (a Job, JobSet, PyTorchJob or LeaderWorkerSet:
    :mod:`scheduler.offline.jobs`, ``jobsets``, ``pytorchjobs``, ``leaderworkersets``), one line each;
    ``jobs_not_made``: the workloads of ours that made none, and why (``Job ns/name (why)``);
    ``workloads_not_ours``: those given without their pods, neither finished nor running, whose pods would not be
    ours, and why (``Job ns/name (why)``), so none was made; ``unexpanded``: the
    workloads the operator knows given without their pods that are not made into pods (:func:`unexpanded`).
    ``load_warnings``: objects used with a field not honoured (the loader's ``warnings``); ``unknown``: fields
    and kinds the v1.37 API does not know (the loader's ``unknown``); ``unread``:
    (kind, namespace, name) → apiVersion of the objects skipped as a version we do not read.
    """

    groups: list[GroupOutcome] = field(default_factory=list)
    pods: list[PodOutcome] = field(default_factory=list)
    problems: list[LoadProblem] = field(default_factory=list)
    load_warnings: list[LoadProblem] = field(default_factory=list)
    unknown: list[tuple[LoadProblem, str | None]] = field(default_factory=list)
    unread: dict[tuple[str, str, str], str] = field(default_factory=dict)
    snapshot: Snapshot | None = None
    initial: Snapshot | None = None
    results: list[tuple[GroupTree, Plan | Unschedulable]] = field(default_factory=list)
    scheduler_name: str = ""
    pods_by_scheduler: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    allocations: list[AllocationOutcome] = field(default_factory=list)
    synthesized: frozenset[str] = frozenset()
    dra_problems: list[str] = field(default_factory=list)
    volumes: list[VolumeOutcome] = field(default_factory=list)
    synthesized_volume_claims: frozenset[str] = frozenset()
    unhonoured: list[tuple[Pod, Unhonoured]] = field(default_factory=list)
    unhonoured_groups: list[tuple[CoscheduledPodGroup | PodGroup | CompositePodGroup, Unhonoured]] = field(
        default_factory=list)
    preemptions: list[PreemptionOutcome] = field(default_factory=list)
    off_snapshot: list[tuple[str, str]] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)
    jobs_not_made: list[str] = field(default_factory=list)
    workloads_not_ours: list[str] = field(default_factory=list)
    unexpanded: list[str] = field(default_factory=list)
    waiting: dict[GroupKey, tuple[str, ...]] = field(default_factory=dict)
    """Root → the binding conditions its plan would wait for live (``ns/claim: driver/pool/device condition``):
    ``run`` binds it only once a driver sets them True (KEP-5007); ``simulate`` binds it and says so."""
    room_taken: dict[GroupKey, RoomTaken] = field(default_factory=dict)
    """Root left unschedulable → where it fits the cluster as given and the roots placed before it there
    (:mod:`scheduler.offline.room`)."""



def unexpanded(objects: Objects) -> list[str]:
    """``<apiVersion> <kind> <namespace>/<name>`` of each workload the operator knows that ``simulate`` does not make
    into pods (``Objects.unexpanded``: a JobSet, PyTorchJob or LeaderWorkerSet of another API version than the one
    expanded) and that no pod of the snapshot carries its controller's name label for: a workload given to ask whether
    it fits, of which no pod is made."""
    labels = set(UNEXPANDED_WORKLOADS.values())
    labelled = {(p.metadata.namespace, label, p.metadata.labels[label]) for p in objects.pods
                for label in labels if label in p.metadata.labels}
    return [f"{api_version} {kind} {ns}/{name}" for api_version, kind, ns, name in objects.unexpanded
            if (ns, UNEXPANDED_WORKLOADS[api_version.partition("/")[0], kind], name) not in labelled]

def _policy(obj: PodGroup | CompositePodGroup | None) -> str:
    """The policy as written in the object (the tree coerces malformed ones), e.g. ``gang minCount 0``."""
    if obj is None:
        return "basic"  # a lone pod of ours
    policy = obj.spec.scheduling_policy
    if (policy.basic is None) == (policy.gang is None):
        return "invalid policy"
    gang = policy.gang
    if gang is None:
        return "basic"
    name, count = (("minCount", gang.min_count) if isinstance(gang, GangPolicy)
                   else ("minGroupCount", gang.min_group_count))
    return f"gang {name} {'unset' if count is None else count}"


def _subtree_placements(group: Group, placed: dict[str, str]) -> dict[str, str]:
    names: dict[str, str] = {}
    leaves = [group] if isinstance(group, Leaf) else list(group.leaves())
    for leaf in leaves:
        for pod in leaf.pending:
            if pod.key in placed:
                names[pod.metadata.name] = placed[pod.key]
    return names


def simulate(objects: Objects, scheduler_name: str, config: SolverConfig, preemption: bool = True) -> Simulation:
    """Schedule every ready tree of ours in queue order, binding each plan before the next root.

    ``objects``: what the loader read (its problems are carried into the result and explain
    pods whose PodGroup failed to load). ``scheduler_name``: our ``spec.schedulerName``.
    The objects go into the same :class:`~scheduler.cache.cluster.ClusterCache` the live scheduler
    uses, and each root goes through the same :class:`~scheduler.cycle.CycleRunner`; the
    :class:`RecordingBinder` then applies each plan's writes to the cache as the watch would show
    them. Returns the :class:`Simulation`: one :class:`GroupOutcome` per group of every tree of
    ours and of every group with no pod at all (reported Waiting, see ``Forest.empty``), one
    :class:`PodOutcome` per pending pod of ours. ``preemption``: let roots that do not fit preempt
    lower-priority pods (applied as if the evictions completed, see the module docstring).
    """
    made = add_expansions(objects, scheduler_name)
    # after the Jobs': a JobSet's Job of a name taken by a Job is not made; each counts the pods made before as taken
    for workloads in (jobsets, pytorchjobs, leaderworkersets):
        more = workloads.add_expansions(objects, scheduler_name)
        made.notes += more.notes
        made.skipped += more.skipped
        made.foreign += more.foreign
    sim = Simulation(problems=list(objects.problems), load_warnings=list(objects.warnings),
                     unknown=list(objects.unknown),
                     unread=dict(objects.unread), scheduler_name=scheduler_name,
                     pods_by_scheduler=Counter(p.spec.scheduler_name for p in objects.pods if not p.spec.node_name),
                     skipped=Counter(objects.skipped), jobs=made.notes, jobs_not_made=made.skipped,
                     workloads_not_ours=made.foreign,
                     unexpanded=unexpanded(objects))
    cache = ClusterCache(scheduler_name, dra=objects.has_dra, synthesize_claims=True)
    refused: dict[tuple[str, str, str], str] = {}
    for problem in objects.problems:  # the first problem of an object says why it is not there
        refused.setdefault((problem.kind, problem.namespace, problem.name), problem.message)
    cache.devices.refused.update({(kind, f"{ns}/{name}"): why for (kind, ns, name), why in refused.items()
                                  if kind in ("ResourceClaim", "ResourceClaimTemplate")})
    cache.groups.absent.update(_absent_groups(refused, objects.unread))
    for problem in objects.problems:
        if problem.group:
            cache.groups.refused_members.setdefault((problem.namespace, problem.group), {}).setdefault(
                problem.name, problem.message)
    for kind, items in objects.by_kind().items():
        cache.load(kind, items)
    sim.initial = cache.snapshot()
    known = {node.name for node in objects.nodes}
    sim.off_snapshot = sorted((pod.key, pod.spec.node_name) for pod in objects.pods
                              if pod.spec.node_name and pod.spec.node_name not in known
                              and pod.status.phase not in ("Succeeded", "Failed"))
    forest = cache.forest()
    queue = GroupQueue(t for t in forest.trees if t.state is TreeState.READY)
    postfilters = (DefaultPreemption(CacheGroupView(cache), name_everywhere=True),) if preemption else ()
    cycle = CycleRunner(cache, config, postfilters)
    decisions = OfflineDecisions(sim, cache, cycle, queue)
    try:
        while len(queue):
            attempt = cycle.attempt(queue.pop())
            if attempt is not None:
                handle(attempt, decisions)
    finally:
        decisions.binder.close()
    decided, order, preempted = decisions.decided, decisions.order, decisions.preempted
    sim.room_taken = room_taken(sim.results, sim.initial, config,
                                ((p.root, [pod for pod, _ in p.victims]) for p in sim.preemptions))
    selector_errors = decisions.selector_errors
    sim.snapshot = cache.snapshot()
    sim.synthesized_volume_claims = frozenset(cache.storage.synthesized)
    if objects.has_dra:
        sim.synthesized = frozenset(cache.devices.synthesized)
        view = sim.snapshot.dra
        invalid = sorted({c.invalid for c in view.pods.values() if c.invalid} if isinstance(view, DraView) else ())
        sim.dra_problems = [*cache.devices.inventory.problems, *invalid,
                            *(f"{error}; asked by {first_named(sorted(roots), NAMED_ROOTS)}"
                              for error, roots in sorted(selector_errors.items()))]
    rest = [t for t in forest.trees if t.state is not TreeState.READY] + forest.empty
    order += sorted(rest, key=lambda t: tuple(t.key))

    group_objects: list[PodGroup | CompositePodGroup] = [*objects.coscheduling, *objects.podgroups,
                                                         *objects.composites]  # a scheduling.k8s.io one wins a name

    objs = {GroupKey(o.kind, o.metadata.namespace, o.metadata.name): o for o in group_objects}
    for tree in order:
        outcome = decided.get(tree.key)
        placed = {pod.key: node for pod, node in outcome.placements} if isinstance(outcome, Plan) else {}
        for group in walk(tree.root):
            if group.key.kind == "Pod":
                continue
            status, reason = _group_status(tree, group, outcome)
            if group.key in preempted:
                status = PREEMPTED
                reason = f"{reason}; {preempted[group.key]}" if reason else preempted[group.key]
            sim.groups.append(GroupOutcome(group.key, tree.key, status, _policy(objs.get(group.key)),
                                           _subtree_placements(group, placed), reason, tree.priority))
        for leaf in tree.root.leaves():
            for pod in leaf.pending:
                if pod.key in placed:
                    sim.pods.append(PodOutcome(pod, placed[pod.key], None))
                else:
                    sim.pods.append(PodOutcome(pod, None, _pod_reason(tree, leaf, pod, outcome)))
    for orphan in forest.orphans:
        sim.pods.append(PodOutcome(orphan.pod, None, orphan.message))
    for gated in objects.pods:  # a LeanPod is on a node
        if (isinstance(gated, Pod) and gated.is_gated and not gated.is_bound
                and gated.spec.scheduler_name == scheduler_name):
            names = ", ".join(g.name for g in gated.spec.scheduling_gates)
            sim.pods.append(PodOutcome(gated, None, f"scheduling gated ({names})"))
    context = Context(namespaces_known=bool(objects.namespaces), storage=sim.initial.volumes,
                      priority_classes=frozenset(pc.metadata.name for pc in objects.priority_classes))
    sim.unhonoured = [(o.pod, finding) for o in sim.pods for finding in unhonoured(o.pod, context)]
    sim.unhonoured_groups = [(g, Unhonoured(path, why)) for g in objects.coscheduling
                             for path, why in unhonoured_fields(g)]
    ours: list[PodGroup | CompositePodGroup] = [*objects.podgroups, *objects.composites]
    sim.unhonoured_groups += [(g, finding) for g in ours for finding in group_priority_class(g, context)]
    return sim


class OfflineDecisions:
    """``simulate``'s :class:`~scheduler.cycle.DecisionHandler`: a plan is bound at once through the
    :class:`RecordingBinder`; a preemption is applied as the watch would show it once its evictions completed
    (:func:`_evict`) and the root goes back to the queue — ahead of every other root, as it was popped first and
    its order has not changed — so its next attempt finds the room, as the live scheduler's next cycle does;
    a waiting preemption, or one past :data:`MAX_PREEMPTION_ROUNDS` for the root, is reported as the root's
    failure. Collects what the report needs: ``decided`` per root, the trees in decision ``order``,
    ``preempted`` (victim PodGroup → what took its pods) and the CEL ``selector_errors`` met."""

    def __init__(self, sim: Simulation, cache: ClusterCache, cycle: CycleRunner, queue: GroupQueue) -> None:
        self.sim = sim
        self.cache = cache
        self.cycle = cycle
        self.queue = queue
        self.binder = RecordingBinder(cache)
        self.decided: dict[GroupKey, Plan | Unschedulable] = {}
        self.order: list[GroupTree] = []
        self.selector_errors: dict[str, set[str]] = {}
        """A DRA request's problem (a selector that failed, a DeviceClass not found) → the roots that met it."""
        self.preempted: dict[GroupKey, str] = {}
        self.rounds: Counter[GroupKey] = Counter()

    def on_plan(self, attempt: Attempt, plan: Plan) -> None:
        users = _claim_users(attempt)
        binding = BindingCycle(plan, attempt.token, attempt.snapshot,
                               precheck=functools.partial(self.cycle.target_problem, plan))
        result, made = self.binder.commit(binding)
        if binding.waiting:
            self.sim.waiting[attempt.tree.key] = tuple(binding.waiting)
        self.cycle.settle(attempt, result)
        if result.failure is not None:  # the binding cycle refused what the search chose: say so
            failure = Unschedulable(attempt.tree.key, Code.ERROR, f"binding failed: {result.failure.message}")
            self._record(dataclasses.replace(attempt, decision=failure), failure)
            return
        self.sim.allocations.extend(AllocationOutcome(attempt.tree.key, a, tuple(users.get(a.claim, ())),
                                                      a.synthetic or a.claim in made) for a in plan.allocations)
        claims = self.cache.volume_claims
        self.sim.volumes.extend(VolumeOutcome(attempt.tree.key, b, claims[b.claim].spec.volume_name)
                                for b in plan.volumes if b.claim in claims)
        self._record(attempt, plan)

    def on_preemption(self, attempt: Attempt, preemption: Preemption) -> None:
        key = attempt.tree.key
        if preemption.waiting or self.rounds[key] >= MAX_PREEMPTION_ROUNDS:  # report why it stays pending
            failure = _as_failure(preemption)
            self._record(dataclasses.replace(attempt, decision=failure), failure)
            return
        _evict(self.cache, preemption, self.sim, self.preempted)
        self.rounds[key] += 1
        tree = self.cache.tree(key)
        if tree is not None and tree.state is TreeState.READY:
            self.queue.push(tree)

    def on_unschedulable(self, attempt: Attempt, failure: Unschedulable) -> None:
        self._record(attempt, failure)

    def _record(self, attempt: Attempt, decision: Plan | Unschedulable) -> None:
        for error in decision.selector_errors:
            self.selector_errors.setdefault(error, set()).add(str(attempt.tree.key))
        self.decided[attempt.tree.key] = decision
        self.order.append(attempt.tree)
        self.sim.results.append((attempt.tree, decision))


def _evict(cache: ClusterCache, decision: Preemption, sim: Simulation, preempted: dict[GroupKey, str]) -> None:
    """Apply a preemption as the watch would show it once the evictions completed: the preemptor's pods
    nominated (as the live preemptor writes them; the next attempt tries those nodes first) and every
    victim deleted from ``cache``. Records the outcome in ``sim`` and, per victim PodGroup, what took its
    pods."""
    cache.nominate((pod.key, node) for pod, node in decision.nominations)
    victims = tuple((pod, pod.spec.node_name) for pod in decision.victims)
    sim.preemptions.append(PreemptionOutcome(decision.root, victims, decision.message))
    lost: Counter[GroupKey] = Counter()
    for pod, _ in victims:
        cache.delete_one(POD.name, pod.key)
        if pod.group_name:
            lost[GroupKey("PodGroup", pod.metadata.namespace, pod.group_name)] += 1
    for key, count in lost.items():
        before = preempted.get(key)
        text = f"{count} running pod(s) preempted by {decision.root}"
        preempted[key] = f"{before}; {text}" if before else text


def _as_failure(decision: Preemption) -> Unschedulable:
    """A preemption ``simulate`` could not carry through, reported as the root's failure plus why."""
    return decision.failure.with_postfilter(decision.message)


def _claim_users(attempt: Attempt) -> dict[str, list[tuple[str, str]]]:
    """Claim key → the plan's (pod name, node) pairs that use the claim."""
    plan = attempt.plan
    assert plan is not None
    view = attempt.snapshot.dra
    users: dict[str, list[tuple[str, str]]] = {}
    for pod, node in plan.placements:
        claims = view.pods.get(pod.key) if isinstance(view, DraView) else None
        for needed in (*claims.allocate, *claims.shared) if claims is not None else ():
            users.setdefault(needed.key, []).append((pod.metadata.name, node))
    return users


def _absent_groups(refused: dict[tuple[str, str, str], str], unread: dict[tuple[str, str, str], str]
                   ) -> dict[tuple[str, str, str], str]:
    """Why each PodGroup and CompositePodGroup the files give is not there (the index's
    :attr:`~scheduler.groups.index.GroupIndex.absent`): refused as invalid, else of an API version not read."""
    out = {key: f"{key[0]} {key[1]}/{key[2]} is {version}, an API version not read"
           for key, version in unread.items() if key[0] in ("PodGroup", "CompositePodGroup")}
    out.update({key: f"{key[0]} {key[1]}/{key[2]} is invalid: {what}"
                for key, what in refused.items() if key[0] in ("PodGroup", "CompositePodGroup")})
    return out


def _group_status(tree: GroupTree, group: Group, result: Plan | Unschedulable | None) -> tuple[str, str | None]:
    if tree.state is TreeState.INVALID:
        return INVALID, tree.message
    if tree.state is TreeState.WAITING:
        return WAITING, tree.message
    if tree.state is TreeState.SCHEDULED:
        return SCHEDULED, None
    if isinstance(result, Plan):
        if group.key in result.satisfied:
            return SCHEDULED, None
        return UNSCHEDULABLE, result.group_reasons.get(group.key, "not satisfied")
    if isinstance(result, Unschedulable):
        if result.not_ready:  # not tried: pods not ready for scheduling, as a root waiting for its members
            return WAITING, result.message
        if result.minimum is not None and group.key in result.minimum.satisfied:
            return SCHEDULED, None  # satisfied by its bound members; only members above the minimum are pending
        if group.key == tree.key:  # the root: its whole reason, a PostFilter's verdict included, as run's condition
            return UNSCHEDULABLE, result.message
        return UNSCHEDULABLE, result.group_reasons.get(group.key, result.message)
    return WAITING, None  # pragma: no cover - every READY tree is decided above


def _pod_reason(tree: GroupTree, leaf: Leaf, pod: Pod, result: Plan | Unschedulable | None) -> str:
    if tree.state is not TreeState.READY:  # the reason as its group has it (the status is the group's)
        return tree.message or tree.state.value
    if isinstance(result, Plan):
        return result.unplaced.get(pod.key, "not placed")
    if isinstance(result, Unschedulable):
        return result.message
    return "not decided"  # pragma: no cover
