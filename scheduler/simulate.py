"""Offline scheduling of a snapshot: the same tree assembly, queue order and solver as ``run``, no binder.

``simulate(objects, …)`` builds the group trees, pops ready roots in queue order, solves each
against the snapshot and *assumes* every plan before the next root (design §9), then returns a
:class:`Simulation` with the outcome per group, per pod and per node. Unlike ``run``, it also
reports groups that have no pod at all (as Waiting) and explains pods whose PodGroup failed to
load, because it has the loader's problem list. Rendering is in :mod:`scheduler.report`.

DRA: when the snapshot has ``resource.k8s.io/v1`` objects or pods with ``spec.resourceClaims``,
the snapshot carries a :class:`~scheduler.dra.view.DraView` (inventory from the ResourceSlices,
claims resolved per pending pod). A template-generated claim missing from the snapshot is
synthesised from its template, as the resourceclaim controller would create it. Each plan's
devices are assumed with its pods; a plan that allocates a claim other pods may still reference
(a PodGroup claim, a claim shared by name) also records the allocation on the claim, as the
binder's ``status.allocation`` write would, so later pods are pinned to it instead of
allocating it again.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from scheduler.dra.claims import ClaimIndex
from scheduler.dra.inventory import Inventory
from scheduler.dra.view import DraView
from scheduler.groups.tree import Composite, Group, GroupKey, GroupTree, Leaf, TreeState, build_trees
from scheduler.loader import LoadProblem, Objects
from scheduler.model.dra import ResourceClaim
from scheduler.model.pod import Pod
from scheduler.model.scheduling import CompositePodGroup, GangPolicy, PodGroup
from scheduler.queue import GroupQueue
from scheduler.solver.plan import ClaimAllocation, Plan, SolverConfig, Unschedulable
from scheduler.solver.search import solve
from scheduler.solver.snapshot import NodeTable, Snapshot

EXAMPLE = "default-cluster.yaml"


def example_path() -> Path:
    """The built-in example snapshot shipped in the package (``scheduler/examples``)."""
    return Path(str(resources.files("scheduler.examples").joinpath(EXAMPLE)))


@dataclass(frozen=True, slots=True)
class GroupOutcome:
    """The result for one group: ``status`` is Scheduled | Unschedulable | Waiting | Invalid."""

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


@dataclass(slots=True)
class Simulation:
    """Everything ``simulate`` decided, in queue order, plus the final snapshot for utilisation.

    ``scheduler_name``: the ``spec.schedulerName`` simulated. ``pods_by_scheduler``: every pod
    of the snapshot counted by its ``spec.schedulerName`` (to hint at a wrong name).
    ``skipped``: objects the loader skipped, by ``"apiVersion kind"``. ``allocations``: every
    claim allocation of every plan, in queue order, with the root whose plan made it.
    ``synthesized``: keys (``ns/name``) of claims not in the snapshot that were made from their
    template. ``dra_problems``: unusable pools and slices, and selector errors met while solving.
    """

    groups: list[GroupOutcome] = field(default_factory=list)
    pods: list[PodOutcome] = field(default_factory=list)
    problems: list[LoadProblem] = field(default_factory=list)
    snapshot: Snapshot | None = None
    initial: Snapshot | None = None
    results: list[tuple[GroupTree, Plan | Unschedulable]] = field(default_factory=list)
    scheduler_name: str = ""
    pods_by_scheduler: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    allocations: list[AllocationOutcome] = field(default_factory=list)
    synthesized: frozenset[str] = frozenset()
    dra_problems: list[str] = field(default_factory=list)


def dra_inputs(objects: Objects, table: NodeTable) -> tuple[DraView, ClaimIndex] | None:
    """The device view for ``table``'s nodes and the claim index behind it, or None when the
    snapshot has nothing of DRA. Template-generated claims absent from the snapshot are
    synthesised (``synthesize=True``)."""
    if not objects.has_dra:
        return None
    inventory = Inventory.build(table, objects.resource_slices, objects.device_classes, objects.resource_claims)
    index = ClaimIndex.build(objects.resource_claims, objects.claim_templates, objects.device_classes,
                             objects.podgroups, table.resources, synthesize=True)
    return DraView.build(inventory, index, objects.pods), index


def allocated_claim(claim: ResourceClaim, allocation: ClaimAllocation) -> ResourceClaim:
    """``claim`` as the binder leaves it: ``status.allocation`` (devices, nodeSelector) and
    ``status.reservedFor`` from the plan's ``allocation``."""
    refs = [{"resource": "pods", "name": name, "uid": uid} if kind == "Pod" else
            {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": name, "uid": uid}
            for kind, name, uid in allocation.reserved_for]
    results = [{"request": r, "driver": d, "pool": p, "device": n} for r, d, p, n in allocation.results]
    alloc: dict[str, object] = {"devices": {"results": results}}
    if allocation.node_selector is not None:
        alloc["nodeSelector"] = dict(allocation.node_selector)
    body = claim.model_dump(by_alias=True, exclude_none=True)
    return ResourceClaim.model_validate({**body, "status": {"allocation": alloc, "reservedFor": refs}})


def _allocation_outcomes(root: GroupKey, plan: Plan, view: DraView | None,
                         index: ClaimIndex | None) -> list[AllocationOutcome]:
    """The plan's claim allocations, each with the plan's pods that use the claim."""
    users: dict[str, list[tuple[str, str]]] = {}
    for pod, node in plan.placements:
        claims = view.pods.get(pod.key) if view is not None else None
        for needed in (*claims.allocate, *claims.shared) if claims is not None else ():
            users.setdefault(needed.key, []).append((pod.metadata.name, node))
    made = index.synthesized if index is not None else {}
    return [AllocationOutcome(root, a, tuple(users.get(a.claim, ())), a.synthetic or a.claim in made)
            for a in plan.allocations]


def _record_shared(snapshot: Snapshot, plan: Plan, index: ClaimIndex, pending: list[Pod]) -> Snapshot:
    """After ``plan`` was assumed: if it allocated claims that other pods may reference (PodGroup
    claims, claims shared by name — per-pod claims carry their node), write the allocation into
    those claims and resolve the ``pending`` pods again, so they are pinned to it rather than
    allocating the claim a second time."""
    view = snapshot.dra
    shared = [a for a in plan.allocations if a.node is None and not a.synthetic]
    if view is None or not shared:
        return snapshot
    for allocation in shared:
        claim = index.claims.get(allocation.claim)
        if claim is not None:
            index.claims[allocation.claim] = allocated_claim(claim, allocation)
    return Snapshot(snapshot.table, snapshot.used, DraView.build(view.inventory, index, pending, view.assumed))


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


def _walk(group: Group) -> list[Group]:
    out: list[Group] = [group]
    if isinstance(group, Composite):
        for child in group.children:
            out.extend(_walk(child))
    return out


def _subtree_placements(group: Group, placed: dict[str, str]) -> dict[str, str]:
    names: dict[str, str] = {}
    leaves = [group] if isinstance(group, Leaf) else list(group.leaves())
    for leaf in leaves:
        for pod in leaf.pending:
            if pod.key in placed:
                names[pod.metadata.name] = placed[pod.key]
    return names


def simulate(objects: Objects, scheduler_name: str, config: SolverConfig) -> Simulation:
    """Schedule every ready tree of ours in queue order, assuming each plan before the next.

    ``objects``: what the loader read (its problems are carried into the result and explain
    pods whose PodGroup failed to load). ``scheduler_name``: our ``spec.schedulerName``.
    Returns the :class:`Simulation`: one :class:`GroupOutcome` per group of every tree of
    ours and of every group with no pod at all (reported Waiting, see ``Forest.empty``), one
    :class:`PodOutcome` per pending pod of ours.
    """
    sim = Simulation(problems=list(objects.problems), scheduler_name=scheduler_name,
                     pods_by_scheduler=Counter(p.spec.scheduler_name for p in objects.pods),
                     skipped=Counter(objects.skipped))
    forest = build_trees(
        objects.pods, objects.podgroups, objects.composites, objects.priority_classes, scheduler_name=scheduler_name
    )
    table = NodeTable.build(objects.nodes)
    dra = dra_inputs(objects, table)
    snapshot = Snapshot.build(table, objects.pods, dra[0] if dra else None)
    sim.initial = snapshot
    queue = GroupQueue(t for t in forest.trees if t.state is TreeState.READY)
    decided: dict[GroupKey, Plan | Unschedulable] = {}
    order: list[GroupTree] = []
    placed_keys: set[str] = set()
    selector_errors: dict[str, str] = {}
    while len(queue):
        tree = queue.pop()
        if dra is not None:  # each solve's messages name only the selector errors it met
            errors = dra[0].inventory.selector_errors
            selector_errors.update(errors)
            errors.clear()
        result = solve(tree, snapshot, config)
        if isinstance(result, Plan):
            snapshot = snapshot.assume(result.placements, result.device_ids)
            sim.allocations.extend(_allocation_outcomes(tree.key, result, snapshot.dra, dra[1] if dra else None))
            placed_keys.update(pod.key for pod, _ in result.placements)
            if dra is not None:
                pending = [p for p in objects.pods if p.key not in placed_keys]
                snapshot = _record_shared(snapshot, result, dra[1], pending)
        decided[tree.key] = result
        order.append(tree)
        sim.results.append((tree, result))
    sim.snapshot = snapshot
    if dra is not None:
        inventory = dra[0].inventory
        selector_errors.update(inventory.selector_errors)
        sim.synthesized = frozenset(dra[1].synthesized)
        sim.dra_problems = [*inventory.problems, *sorted(set(selector_errors.values()))]
    rest = [t for t in forest.trees if t.state is not TreeState.READY] + forest.empty
    order += sorted(rest, key=lambda t: tuple(t.key))

    group_objects: list[PodGroup | CompositePodGroup] = [*objects.podgroups, *objects.composites]
    objs = {GroupKey(o.kind, o.metadata.namespace, o.metadata.name): o for o in group_objects}
    for tree in order:
        outcome = decided.get(tree.key)
        placed = {pod.key: node for pod, node in outcome.placements} if isinstance(outcome, Plan) else {}
        for group in _walk(tree.root):
            if group.key.kind == "Pod":
                continue
            status, reason = _group_status(tree, group, outcome)
            sim.groups.append(GroupOutcome(group.key, tree.key, status, _policy(objs.get(group.key)),
                                           _subtree_placements(group, placed), reason, tree.priority))
        for leaf in tree.root.leaves():
            for pod in leaf.pending:
                if pod.key in placed:
                    sim.pods.append(PodOutcome(pod, placed[pod.key], None))
                else:
                    sim.pods.append(PodOutcome(pod, None, _pod_reason(tree, leaf, pod, outcome)))
    invalid_groups: dict[tuple[str, str], str] = {}
    for problem in objects.problems:
        if problem.kind == "PodGroup":
            invalid_groups.setdefault((problem.namespace, problem.name), problem.message)
    for orphan in forest.orphans:
        ns, name = orphan.pod.metadata.namespace, orphan.pod.group_name
        what = invalid_groups.get((ns, name or ""))
        reason = orphan.message if what is None else f"PodGroup {ns}/{name} is invalid: {what}"
        sim.pods.append(PodOutcome(orphan.pod, None, reason))
    for pod in objects.pods:
        if pod.is_gated and not pod.is_bound and pod.spec.scheduler_name == scheduler_name:
            names = ", ".join(g.name for g in pod.spec.scheduling_gates)
            sim.pods.append(PodOutcome(pod, None, f"scheduling gated ({names})"))
    return sim


def _group_status(tree: GroupTree, group: Group, result: Plan | Unschedulable | None) -> tuple[str, str | None]:
    if tree.state is TreeState.INVALID:
        return "Invalid", tree.message
    if tree.state is TreeState.WAITING:
        return "Waiting", tree.message
    if tree.state is TreeState.SCHEDULED:
        return "Scheduled", None
    if isinstance(result, Plan):
        if group.key in result.satisfied:
            return "Scheduled", None
        return "Unschedulable", result.group_reasons.get(group.key, "not satisfied")
    if isinstance(result, Unschedulable):
        return "Unschedulable", result.group_reasons.get(group.key, result.message)
    return "Waiting", None  # pragma: no cover - every READY tree is decided above


def _pod_reason(tree: GroupTree, leaf: Leaf, pod: Pod, result: Plan | Unschedulable | None) -> str:
    if tree.state is not TreeState.READY:
        return f"{tree.state.value}: {tree.message}" if tree.message else tree.state.value
    if isinstance(result, Plan):
        return result.unplaced.get(pod.key, "not placed")
    if isinstance(result, Unschedulable):
        return result.message
    return "not decided"  # pragma: no cover
