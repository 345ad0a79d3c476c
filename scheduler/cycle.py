"""The one scheduling cycle, shared by ``run``, ``simulate``, the property tests and the benchmarks.

:func:`schedule_one` decides for one root: the all-or-nothing search on a snapshot, then — for a
root that did not fit with code UNSCHEDULABLE — the PostFilter plugins (preemption's point). It is
pure: a tree, a snapshot and settings in, a :data:`~scheduler.framework.plan.Decision` out.

:class:`CycleRunner` is what both drivers run around it against the same
:class:`~scheduler.cache.cluster.ClusterCache`: take the root's *current* tree from the cache (a
root popped from the queue is looked up, never trusted from when it was queued), decide, *assume*
a plan (its pods count as bound and its devices as taken until the binder's outcome or the
watch says otherwise), and after the binder has run, *settle* the outcome: forget what was not
bound and release what was not written. The live driver binds in the background through the API;
``simulate`` binds through a recording binder that applies the writes to the cache as the watch
would. So assume, forget and claim bookkeeping are one code path.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from scheduler.cache.cluster import AssumeError, ClusterCache
from scheduler.dra.device_snapshot import DraView
from scheduler.framework.binding_cycle import BindResult as BindResult
from scheduler.framework.binding_cycle import Failure as Failure
from scheduler.framework.events import ClusterEvent
from scheduler.framework.interface import PostFilterPlugin
from scheduler.framework.plan import Decision, Plan, Preemption, SolverConfig, Unschedulable, join_postfilter
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code
from scheduler.groups.tree import GroupTree, TreeState, satisfiable_without
from scheduler.model.kinds import POD_GROUP
from scheduler.model.pod import Pod
from scheduler.model.scheduling import GroupKey
from scheduler.solver.plugins import (
    NOMINATED_FIRST,
    dynamic_resources,
    node_affinity,
    node_unschedulable,
    taint_toleration,
)
from scheduler.solver.plugins.nominated_node import nominated
from scheduler.solver.search import solve

ABOVE_MINIMUM = "{count} pending member(s) above the minimum fit nowhere"
"""The failure PostFilters get for members a plan leaves out (ours)."""
NAMED_NOT_READY = 3
"""How many pods not ready for scheduling a root's reason names (the rest are counted)."""


def schedule_one(tree: GroupTree, snapshot: Snapshot, config: SolverConfig,
                 post_filters: Sequence[PostFilterPlugin] = ()) -> Decision:
    """Decide for one READY root: a :class:`Plan` for the whole tree, or :class:`Unschedulable`.

    A root whose pending pods carry nominations (preemption's, the starvation guard's) is first solved with
    each pinned to its nominated node, as kube-scheduler evaluates a pod's nominated node first
    (:mod:`~scheduler.solver.plugins.nominated_node`). That plan is taken when it places every pending pod;
    otherwise the ordinary search decides, and the pinned plan is taken only if it places more pods (a
    stale nomination must not leave out a pod that fits elsewhere: kube falls back per pod).
    ``post_filters`` run, in order, when the search failed with code UNSCHEDULABLE (capacity was
    short: removing pods could help); the first that returns a decision wins. They also run when the plan
    satisfies the root but leaves pending members out (a basic group's overflow, members above
    ``minCount``): then with an Unschedulable whose ``minimum`` is that plan, and a preemption that places
    every member replaces the plan (:func:`_above_minimum`). Binding and preemption
    never happen in the same cycle (kube-scheduler's PodGroup cycle, ``schedule_one_podgroup.go``).
    """
    pending = [p for leaf in tree.root.leaves() for p in leaf.pending]
    if (held := not_ready(tree, snapshot, pending)) is not None:
        return held
    pinned: Plan | None = None
    if nominated(pending):
        found = solve(tree, snapshot, config, NOMINATED_FIRST)
        if isinstance(found, Plan):
            if len(found.placements) == len(pending):
                return found
            pinned = found
    result = solve(tree, snapshot, config)
    if pinned is not None and (not isinstance(result, Plan) or len(pinned.placements) > len(result.placements)):
        return pinned
    if isinstance(result, Unschedulable) and result.code is Code.UNSCHEDULABLE:
        for plugin in post_filters:
            decision = plugin.post_filter(tree, snapshot, result, config)
            if decision is not None:
                return decision
    if isinstance(result, Plan) and result.unplaced and post_filters:
        return _above_minimum(tree, snapshot, result, config, post_filters)
    return result


def not_ready(tree: GroupTree, snapshot: Snapshot, pending: Sequence[Pod]) -> Unschedulable | None:
    """The root not tried, when ``pending`` pods it cannot do without
    (:func:`~scheduler.groups.tree.satisfiable_without`) are not ready for scheduling: a ResourceClaim of theirs not
    created yet or being deleted, which kube-scheduler's DynamicResources holds a pod for at PreEnqueue
    (:attr:`~scheduler.dra.claims.PodClaims.not_ready`). The :class:`Unschedulable` says which pods (the first
    :data:`NAMED_NOT_READY`, the rest counted) and why, with ``not_ready`` set and DynamicResources as its rejector
    (a claim's creation wakes it) — also when they are all its pending pods, whatever its bound members satisfy;
    None otherwise, or when the tree can do without them and has other pods to try (the search leaves them out)."""
    view = snapshot.dra
    if not isinstance(view, DraView):
        return None
    held = {pod.key: claims.waiting for pod in pending
            if (claims := view.pods.get(pod.key)) is not None and claims.not_ready and claims.waiting}
    if not held or (len(held) < len(pending) and satisfiable_without(tree.root, held)):
        return None  # none held, or the tree does without them and has other pods to try
    if tree.key.kind == "Pod":  # a lone pod: its own wait says it
        message = next(iter(held.values()))
    else:
        named = "; ".join(f"pod {key}: {why}" for key, why in sorted(held.items())[:NAMED_NOT_READY])
        more = f"; {len(held) - NAMED_NOT_READY} more" if len(held) > NAMED_NOT_READY else ""
        message = f"{len(held)} pod(s) not ready for scheduling: {named}{more}"
    return Unschedulable(tree.key, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message,
                         rejectors=frozenset({dynamic_resources.NAME}), not_ready=True)


def _above_minimum(tree: GroupTree, snapshot: Snapshot, plan: Plan, config: SolverConfig,
                   post_filters: Sequence[PostFilterPlugin]) -> Decision:
    """The PostFilters for the pending members ``plan`` leaves out although the minimum fits: one decision for
    the root (upstream preempts for every pending member of a group, ``podgrouppreemption_test.go``). A
    Preemption (or a plan that places them all) wins; otherwise ``plan`` stands, each left-out member's reason
    ending with why preemption did not help (no victim where they could go, or none that makes room), as for a root
    that does not fit — unchanged when no PostFilter had anything to say."""
    failure = Unschedulable(tree.key, Code.UNSCHEDULABLE, ABOVE_MINIMUM.format(count=len(plan.unplaced)),
                            minimum=plan)
    why: str | None = None
    for plugin in post_filters:
        decision = plugin.post_filter(tree, snapshot, failure, config)
        if isinstance(decision, Preemption) or (isinstance(decision, Plan)
                                                and len(decision.placements) > len(plan.placements)):
            return decision
        if isinstance(decision, Unschedulable):
            why = decision.message.removeprefix(failure.message).lstrip("; ")
    if why is None:
        return plan
    return dataclasses.replace(plan, unplaced={key: join_postfilter(reason, why)
                                               for key, reason in plan.unplaced.items()})


@dataclass(frozen=True, slots=True)
class Attempt:
    """One root decided: its ``tree`` and the ``snapshot`` it was solved on, the ``decision``, and for a
    plan the ``token`` under which the cache holds its devices."""

    tree: GroupTree
    snapshot: Snapshot
    decision: Decision
    token: str | None = None
    events: Sequence[ClusterEvent] = ()
    """What assuming the plan changed (:meth:`~scheduler.cache.cluster.ClusterCache.assume`), for the queueing
    hints of the roots waiting."""

    @property
    def plan(self) -> Plan | None:
        return self.decision if isinstance(self.decision, Plan) else None


class DecisionHandler(Protocol):
    """What a driver does with one root's decision: the three outcomes of :func:`schedule_one`, each with the
    :class:`Attempt` that came to it. ``run`` binds through the API, preempts through its preemptor and
    reports through the status writer (``scheduler.live.driver``); ``simulate`` binds through a recording
    binder and applies preemptions as their evictions would complete (``scheduler.offline.simulate``). The
    decision itself is made once, by :class:`CycleRunner`, for both (kube-scheduler's
    ``schedule_one.go``: the scheduling cycle decides, then binding or PostFilter's nomination acts).
    Handlers must not raise for a decision they cannot act on: they report it."""

    def on_plan(self, attempt: Attempt, plan: Plan) -> None:
        """``plan`` (assumed in the cache already) is to be bound."""
        ...

    def on_preemption(self, attempt: Attempt, preemption: Preemption) -> None:
        """The root waits for ``preemption``'s victims (or, when it is ``waiting``, for an earlier one's)."""
        ...

    def on_unschedulable(self, attempt: Attempt, failure: Unschedulable) -> None:
        """The root does not fit and preemption cannot help: report ``failure`` and retry later."""
        ...


def handle(attempt: Attempt, handler: DecisionHandler) -> None:
    """Hand ``attempt``'s decision to the matching method of ``handler``."""
    decision = attempt.decision
    if isinstance(decision, Plan):
        handler.on_plan(attempt, decision)
    elif isinstance(decision, Preemption):
        handler.on_preemption(attempt, decision)
    else:
        handler.on_unschedulable(attempt, decision)


class CycleRunner:
    """Decide roots against ``cache`` with ``config`` (see the module docstring)."""

    def __init__(self, cache: ClusterCache, config: SolverConfig,
                 post_filters: Sequence[PostFilterPlugin] = ()) -> None:
        self.cache = cache
        self.config = config
        self.post_filters = tuple(post_filters)
        self._tokens = itertools.count(1)

    def attempt(self, key: GroupKey) -> Attempt | None:
        """Decide root ``key`` on the cache as it is now; None when it has no READY tree any more.

        A plan is assumed before this returns (so the next attempt does not reuse its room). A plan
        that names a pod bound or assumed meanwhile cannot be (:class:`AssumeError`): it is reported as
        an Unschedulable ERROR decision, and nothing is held.
        """
        tree = self.cache.tree(key)
        if tree is None or tree.state is not TreeState.READY:
            return None
        snapshot = self.cache.snapshot()
        decision = schedule_one(tree, snapshot, self.config, self.post_filters)
        if not isinstance(decision, Plan):
            return Attempt(tree, snapshot, decision)
        token = f"{tree.key}#{next(self._tokens)}"
        try:
            events = self.cache.assume(decision, token)
        except AssumeError as exc:
            return Attempt(tree, snapshot, Unschedulable(tree.key, Code.ERROR, f"plan not assumed: {exc}"))
        return Attempt(tree, snapshot, decision, token, events)

    def group_uids(self, plan: Plan) -> dict[tuple[str, str], str]:
        """(namespace, PodGroup name) → its uid in the cache now, for each PodGroup ``plan`` places members of (what
        :meth:`target_problem` compares with later)."""
        uids: dict[tuple[str, str], str] = {}
        for pod, _ in plan.placements:
            if pod.group_name is not None and (pod.metadata.namespace, pod.group_name) not in uids:
                group = self.cache.group(POD_GROUP.name, pod.metadata.namespace, pod.group_name)
                if group is not None:
                    uids[pod.metadata.namespace, pod.group_name] = group.metadata.uid
        return uids

    def target_problem(self, plan: Plan, pod: Pod, node: str,
                       groups: Mapping[tuple[str, str], str] | None = None) -> str | None:
        """Why binding ``pod`` to ``node`` no longer fits the cache as it is now, or None (the
        check the Bind plugin makes just before each bind).

        Refused first, given ``groups`` (:meth:`group_uids` when the plan was made): the pod's PodGroup is gone, or
        was deleted and created again (another uid) — its spec may ask for another gang than the plan placed.

        Refused: the node is gone; cordoned (``spec.unschedulable``, unless the pod tolerates
        kube's ``node.kubernetes.io/unschedulable`` taint); tainted NoSchedule/NoExecute against the pod
        (TaintToleration's rule); its labels no longer match the pod's nodeSelector or required node
        affinity (NodeAffinity's rule); its allocatable no longer holds what is bound and assumed on it, in a
        resource the pod requests (the plan's own pods are assumed there, so a node whose allocatable shrank
        mid-plan is refused before any further bind, NodeResourcesFit's rule); a claim the plan allocates for
        the pod is gone, being deleted, or allocated to other devices than the plan's.
        """
        if groups is not None and pod.group_name is not None:
            planned = groups.get((pod.metadata.namespace, pod.group_name))
            group = self.cache.group(POD_GROUP.name, pod.metadata.namespace, pod.group_name)
            if planned is not None and (group is None or group.metadata.uid != planned):
                return (f"PodGroup {pod.metadata.namespace}/{pod.group_name} was "
                        f"{'deleted' if group is None else 'deleted and created again'} since the plan was made")
        obj = self.cache.nodes.get(node)
        if obj is None:
            return f"node {node} no longer exists"
        if node_unschedulable.filter_node(pod.spec, obj) is not None:
            return f"node {node} was cordoned"
        rejected = taint_toleration.filter_node(pod.spec, obj) or node_affinity.filter_node(pod.spec, obj)
        if rejected is not None:
            return f"node {node}: {'; '.join(rejected.reasons)}"
        through_dra = {r for a in plan.allocations if a.synthetic and a.pod == pod.key for r in a.extended}
        over = self.cache.usage.overcommitted(node, [r for r in pod.requests if r not in through_dra])
        if over:
            return f"node {node} no longer fits the plan: " + ", ".join(
                f"{name} {used} requested > {allocatable} allocatable" for name, used, allocatable in over)
        for allocation in plan.allocations:
            if allocation.synthetic or not any(uid == pod.metadata.uid or (kind == "PodGroup"
                                                                           and name == pod.group_name)
                                               for kind, name, uid in allocation.reserved_for):
                continue
            claim = self.cache.resource_claims.get(allocation.claim)
            if claim is None:
                return f"ResourceClaim {allocation.claim} no longer exists"
            if claim.metadata.deletion_timestamp is not None:
                return f"ResourceClaim {allocation.claim} is being deleted"
            if claim.is_allocated and sorted(claim.allocated_device_ids) != sorted(allocation.device_ids):
                return f"ResourceClaim {allocation.claim} was allocated other devices"
        return None

    def settle(self, attempt: Attempt, result: BindResult) -> None:
        """Give back what a plan's binder did not use: its unbound pods' assumptions and its claims' devices.

        Its PVC decisions are dropped whatever the outcome, and the view shows the API's objects again
        (kube-scheduler's Unreserve restores its assume cache the same way): after a success the binder has
        seen every claim bound in the cache; after a failure the ones it did not write are void, and an
        annotation it did write shows through the watch and keeps pinning the claim, as kube-scheduler's
        does."""
        if result.forget:
            self.cache.forget(result.forget)
        if result.exclude:
            self.cache.exclude_devices(result.exclude)
        if attempt.token is not None and (result.release is None or result.release):
            self.cache.forget_devices(attempt.token, result.release)
        plan = attempt.plan
        if attempt.token is not None and plan is not None and plan.volumes:
            self.cache.forget_volumes(attempt.token)

