"""DefaultPreemption: the PostFilter plugin that makes room for a root by evicting lower-priority units.

Runs once for a root that the search rejected with code UNSCHEDULABLE, for the whole tree at once
(kube-scheduler's ``PodGroupPostFilter``, ``podgrouppreemption.go``; KEP-5710). In order:

1. **Eligibility.** A root whose ``preemptionPolicy`` is ``Never`` — the root group's, else (as
   without the ``PodGroupPreemptionPolicy`` gate) any pending pod's — does not preempt.
2. **Ongoing preemption.** While victims chosen earlier for this root are still in the cluster
   (:meth:`GroupView.awaiting`), or a lower-priority pod terminating by preemption still runs on a
   node one of its pods is nominated to (kube's ``PodTerminatingByPreemption`` check, after PR
   #140641), nothing new is evicted: the decision is a waiting :class:`Preemption` that keeps the
   current nominations.
3. **Victims.** Candidate units (:mod:`~scheduler.preemption.units`). None → nothing is evicted and the
   root's reason ends with kube-scheduler's words for it: ``preemption: No preemption victims found for incoming
   pod.`` (kube puts them in a node histogram, each node refused for good — by any filter — counted as ``Preemption
   is not helpful for scheduling``; the search keeps no per-node verdicts to count by, so there is no histogram).
   Otherwise :func:`~scheduler.preemption.selection.select`; if the tree does not fit even with every
   candidate gone, nothing is evicted and the message says so — and, when DRA's claims refused nodes, that
   devices are the limit (preemption frees node resources, not the victims' devices). Candidates are read from
   a window of nodes, lowest-priority nodes first, first as many as the tree has pending pods (more when the
   room it needs calls for more), that grows until its victims make the tree fit
   (:func:`~scheduler.preemption.units.windows`): one decision costs O(window nodes × victims on them),
   not O(cluster); "not helpful" is only concluded with every usable node holding a pod below the root read
   (by exact floors, :meth:`~scheduler.preemption.units.NodeFloors.exact`) — or before any window, when the usable
   nodes are short of a resource that no pod below the root requests there (``no pod of lower priority holds
   nvidia.com/gpu on the nodes it may use: 4 free there, 16 needed``; :meth:`DefaultPreemption._held_above`).

**Members above the minimum.** The cycle also calls the plugin when the root's plan satisfies it but leaves
pending members out (``result.minimum`` is that plan): the same steps, one decision for the root, but a
what-if counts as a fit only when it places *every* pending member — so the victims are the fewest that
let all of them in (upstream preempts for every pending member of a group,
``test/integration/scheduler/preemption/podgrouppreemption_test.go``), or nothing is evicted and the plan
stands. Likewise a root whose minimum needs victims gets, when victims can make room for every member, the
victims for all of them in the same decision (not one preemption for the minimum and another after it).

Outcomes are values: a :class:`~scheduler.framework.plan.Preemption`, or the root's
:class:`~scheduler.framework.plan.Unschedulable` with the PostFilter's message appended (kube puts
the PostFilter message at the end of the failure). Pure: the live driver times it and records the
metrics; no I/O, no clock.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from scheduler.framework.node_table import BoolArray, IntArray
from scheduler.framework.plan import Decision, Plan, Preemption, SolverConfig, Unschedulable
from scheduler.framework.snapshot import Snapshot
from scheduler.groups.tree import GroupTree, satisfiable_without, walk
from scheduler.model.base import named_within
from scheduler.model.pod import NEVER, Pod
from scheduler.model.quantity import format_units
from scheduler.preemption.group_view import GroupView
from scheduler.preemption.selection import PodVectors, RoomBound, Selection, Steering, select
from scheduler.preemption.units import (
    RANK_ALL,
    RANK_MEMBER,
    RANK_POD,
    NodeEntries,
    NodeFloors,
    Unit,
    candidates,
    staying,
    usable_rows,
    usable_rows_and_unplaceable,
    windows,
)
from scheduler.solver.plugins import (
    DEFAULT_PROFILE,
    Profile,
    dynamic_resources,
    inter_pod,
    inter_pod_affinity,
    pod_topology_spread,
    resources_fit,
)
from scheduler.solver.search import minimum_need

NAME = "DefaultPreemption"

# Messages, with kube-scheduler's wording where the meaning is the same (v1.37):
GROUP_PREFIX = "pod group preemption: "
"""``schedule_one_podgroup.go``: prefix of the PodGroupPostFilter message on the group status (PR #140311)."""
POD_PREFIX = "preemption: "
"""``default_preemption.go``: prefix of the pod PostFilter message."""
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
"""``PodEligibleToPreemptOthers`` / ``PodGroupPostFilter``: the preemptor's policy is ``Never``."""
NOT_HELPFUL = "Preemption is not helpful for scheduling"
"""``preemption.go``: even with every candidate gone the root does not fit; ours adds the counts."""
NO_VICTIMS = "No preemption victims found for incoming pod."
"""``default_preemption.go``: no running pod of lower priority on any node the pods may use, so nothing is evicted and
the pods wait for room (kube says it per node, in a histogram: see the module docstring)."""
ONGOING = "ongoing preemption on nominated nodes"
"""``podgrouppreemption.go`` after PR #140641: victims of an earlier preemption are still terminating."""
TOO_LARGE = "no node the pods may use has the allocatable to hold one of them"
"""Ours, after NOT_HELPFUL: every node that passes the static filters is too small for each pending pod even
emptied (NodeResourcesFit's ``Unresolvable: podRequest > allocatable``, ``noderesources/fit.go``)."""
RELATIONAL = frozenset({dynamic_resources.NAME, inter_pod.NAME, inter_pod_affinity.NAME, pod_topology_spread.NAME})
"""Filters whose refusals are about other pods' placement or devices rather than a node's room: when one of them
refused nodes, the pods that stay are not named as what holds the room (:func:`_no_fit`)."""
DEVICES_LIMIT = "devices are the limit, and preemption frees node resources, not the victims' devices"
"""Ours, after NOT_HELPFUL's counts when only DRA's claims refused nodes: the room is in devices, not in pods."""
DEVICES_TOO = "devices are a limit too, and preemption frees node resources, not the victims' devices"
"""Ours, the same when node resources were short as well."""
FOUND = "found a placement for podgroup, preempting {victims} victims"
"""PR #140311's message once victims are chosen; ours adds what they are (whole groups, members of single-mode groups,
pods without a group) and the budgets exceeded."""
NAMED_VICTIMS = 3
"""How many of the lower-priority pods a not-helpful message names (the rest are counted)."""


class Outcome(enum.Enum):
    """What one PostFilter call came to (the ``result`` label of the preemption metrics)."""

    PREEMPTING = "preempting"
    """Victims chosen: the root is nominated and waits for them."""
    WAITING = "waiting"
    """Victims of an earlier preemption are still terminating: nothing new."""
    NOT_HELPFUL = "not_helpful"
    """Lower-priority pods exist, but the root does not fit even with all of them gone."""
    NO_VICTIMS = "no_victims"
    """No running pod of lower priority on a node the root could use."""
    NOT_ELIGIBLE = "not_eligible"
    """``preemptionPolicy: Never``."""
    FITS = "fits"
    """The what-ifs found a plan that needs no victim at all (the search had missed it: it is heuristic): the
    plan itself is the decision, bound now — a Preemption of no victims would only be decided again."""


class DefaultPreemption:
    """The PostFilter plugin (see the module docstring). ``view``: the groups, budgets and preemptions in
    flight (read at each call); ``profile``: the plugins the what-ifs solve with."""

    name = NAME

    def __init__(self, view: GroupView, profile: Profile = DEFAULT_PROFILE, *, name_everywhere: bool = False) -> None:
        self.view = view
        self.profile = profile
        self.name_everywhere = name_everywhere
        """Reasons name victims and candidates of every namespace (``simulate``, read by whoever dumped the cluster);
        else only those of the root's own namespace, the others counted (``run``: a reason is read by whoever may
        read the root's pods and groups)."""
        self.nodes = NodeEntries()
        """Running pods per node and group, memoised across calls while each node's NodeInfo is the same."""
        self.floors = NodeFloors(self.nodes)
        """The lowest priority running on each node, memoised the same way (which nodes to read first)."""
        self.vectors = PodVectors()
        """Candidate pods' request vectors, memoised across calls per pod object."""
        self.steering = Steering()
        """The what-ifs' profile steered by preemption cost, made once."""

    def post_filter(self, tree: GroupTree, snapshot: Snapshot, result: Unschedulable,
                    config: SolverConfig) -> Decision | None:
        """Preempt for ``tree`` if that can help; see the module docstring for what comes back."""
        return self.evaluate(tree, snapshot, result, config)[1]

    def evaluate(self, tree: GroupTree, snapshot: Snapshot, result: Unschedulable,
                 config: SolverConfig) -> tuple[Outcome, Decision | None]:
        """:meth:`post_filter` with the :class:`Outcome` it came to (for the caller's metrics)."""
        prefix = POD_PREFIX if tree.key.kind == "Pod" else GROUP_PREFIX
        namespace = None if self.name_everywhere else tree.key.namespace
        if self.policy(tree) == NEVER:
            return Outcome.NOT_ELIGIBLE, result.with_postfilter(prefix + NOT_ELIGIBLE_NEVER)
        nominated = tuple((p, node) for p in _pending(tree) if (node := p.status.nominated_node_name))
        awaited = {*self.view.awaiting(tree.key), *self._victims_terminating(tree, snapshot, nominated)}
        if awaited:
            return Outcome.WAITING, Preemption(tree.key, (), nominated, None, result, prefix + ONGOING,
                                               awaited=tuple(sorted(awaited)))
        every = sum(1 for _ in _pending(tree))
        rows, unplaceable = usable_rows_and_unplaceable(snapshot, tree, self.profile.static_check)
        if not rows.any() and usable_rows(snapshot, tree, self.profile.static_check, allocatable=False).any():
            return Outcome.NOT_HELPFUL, result.with_postfilter(f"{prefix}{NOT_HELPFUL} ({TOO_LARGE})")
        if missing := _too_large(tree, unplaceable, namespace):
            return Outcome.NOT_HELPFUL, result.with_postfilter(f"{prefix}{NOT_HELPFUL} ({missing})")
        need = minimum_need(tree, snapshot, config, self.profile)
        if unfreed := self._held_above(tree, snapshot, rows, need):
            return Outcome.NOT_HELPFUL, result.with_postfilter(f"{prefix}{NOT_HELPFUL} ({unfreed})")
        units, chosen = self._choose(tree, snapshot, config, rows, inclusive=False, need=need,
                                     want=every if result.minimum is not None else 0)
        if chosen is not None and len(chosen.plan.placements) < every:  # room for all members, if victims allow
            _, fuller = self._choose(tree, snapshot, config, rows, inclusive=False, want=every, need=need)
            chosen = fuller or chosen
        if not units:
            return Outcome.NO_VICTIMS, result.with_postfilter(prefix + NO_VICTIMS)
        if chosen is None:
            pods = [p for u in units for p in u.pods]
            held = _room_is_short(result) and _room_emptied(tree, snapshot, rows, need)
            kept = staying(snapshot, tree, self.view, rows, self.nodes) if held else 0
            return Outcome.NOT_HELPFUL, result.with_postfilter(
                f"{prefix}{NOT_HELPFUL} ({_no_fit(pods, result, namespace, kept)})")
        if not chosen.pods:
            return Outcome.FITS, chosen.plan
        return Outcome.PREEMPTING, _decision(tree, result, chosen, prefix, namespace)

    def _held_above(self, tree: GroupTree, snapshot: Snapshot, rows: BoolArray, need: IntArray) -> str:
        """Why no eviction can make room, told from the node floors without reading a pod: ``no pod of lower
        priority holds nvidia.com/gpu on the nodes it may use: 4 free there, 16 needed``, naming each resource some
        node offers of which the nodes of ``rows`` have less free than ``need`` (``(R,)``, the tree's minimum;
        :class:`~scheduler.preemption.selection.RoomBound`'s sum, room held for nominated pods of its priority or higher
        taken off) while no pod below its priority there requests any (:meth:`NodeFloors.requested_below`) — every
        what-if would fail that bound. Empty when there is no such resource, or no pod below its priority on those
        nodes at all (then there are no victims, the next step's answer)."""
        if not (self.floors.exact(snapshot, self.view, rows)[rows] < tree.priority).any():
            return ""
        bound = RoomBound(tree, snapshot, need, rows)
        resources, offered = snapshot.table.resources, snapshot.table.offered
        short = [(int(col), int(free), int(needed))
                 for col, free, needed in zip(bound.cols, bound.total, bound.need, strict=True)
                 if free < needed and resources[col] in offered]
        if not short:
            return ""
        freeable = self.floors.requested_below(snapshot, self.view, rows, tree.priority, [col for col, _, _ in short])
        held = [(resources[col], format_units(resources[col], free), format_units(resources[col], needed))
                for (col, free, needed), freed in zip(short, freeable, strict=True) if not freed]
        if not held:
            return ""
        counts = (f"{held[0][1]} free there, {held[0][2]} needed" if len(held) == 1
                  else "; ".join(f"{name} {free} free, {needed} needed" for name, free, needed in held))
        return f"no pod of lower priority holds {' or '.join(h[0] for h in held)} on the nodes it may use: {counts}"

    def reservation(self, tree: GroupTree, snapshot: Snapshot, config: SolverConfig) -> Plan | None:
        """The best plan of a starving root (the starvation guard's reservation): where it would go once the
        fewest running pods of priority *at most* its own — equal ones included, they are what keeps taking
        the room — have finished, chosen like victims but evicting nothing. None when no such plan exists."""
        _, chosen = self._choose(tree, snapshot, config, usable_rows(snapshot, tree, self.profile.static_check),
                                 inclusive=True)
        return None if chosen is None else chosen.plan

    def _choose(self, tree: GroupTree, snapshot: Snapshot, config: SolverConfig, rows: BoolArray, *,
                inclusive: bool, want: int = 0, need: IntArray | None = None) -> tuple[list[Unit], Selection | None]:
        """Victims for ``tree`` on the nodes of ``rows`` (``(N,)``, its
        :func:`~scheduler.preemption.units.usable_rows`), looked for on growing windows of them
        (:func:`~scheduler.preemption.units.windows`, lowest-priority nodes first) until a window's candidates make the
        tree fit. Returns the candidate units of the last window read (empty: no victim anywhere) and the selection
        (None: no fit even with all of them gone — the last window is then every usable node holding a pod below the
        root's priority, by floors re-read where a membership may have changed since, :meth:`NodeFloors.exact`)."""
        if not rows.any():  # no node could hold a pending pod even emptied: nothing to read
            return [], None
        limit = tree.priority + 1 if inclusive else tree.priority
        floors = self.floors.floors(snapshot, self.view)
        pending = sum(len(leaf.pending) for leaf in tree.root.leaves())
        need = minimum_need(tree, snapshot, config, self.profile) if need is None else need
        units: list[Unit] = []
        budgets = self.view.budgets()
        for window in windows(floors, rows, limit, pending, snapshot.table.allocatable, need):
            if window is rows:  # the last round: every usable node that holds a pod below the limit
                window = rows & (self.floors.exact(snapshot, self.view, rows) < limit)
            units = candidates(snapshot, tree, self.view, window, inclusive=inclusive, nodes=self.nodes)
            if not units:
                continue
            chosen = select(tree, snapshot, units, budgets, config, self.profile, rows, want, self.vectors, need,
                            self.steering)
            if chosen is not None:
                return units, chosen
        return units, None

    def policy(self, tree: GroupTree) -> str | None:
        """The root's ``preemptionPolicy``: the root group's (or its class's); for a lone pod, or a group that
        sets none, ``Never`` if any pending pod says so (KEP-5710 without the PodGroupPreemptionPolicy gate)."""
        if tree.key.kind != "Pod":
            own = self.view.preemption_policy(tree.key)
            if own is not None:
                return own
        for pod in _pending(tree):
            if self.view.pod_preemption_policy(pod) == NEVER:
                return NEVER
        return None

    def _victims_terminating(self, tree: GroupTree, snapshot: Snapshot,
                             nominated: Iterable[tuple[Pod, str]]) -> list[str]:
        """The pods of lower priority than the root, terminating by preemption, that still run on a nominated node
        (keys)."""
        found: list[str] = []
        for node in sorted({n for _, n in nominated}):
            info = snapshot.info(node)
            if info is None:
                continue
            found.extend(pod.key for pod in info.pods.values()
                         if pod.terminating_by_preemption and self.view.membership(pod).priority < tree.priority)
        return found


def _pending(tree: GroupTree) -> Iterable[Pod]:
    for leaf in tree.root.leaves():
        yield from leaf.pending


def _too_large(tree: GroupTree, unplaceable: Sequence[Pod], namespace: str | None) -> str:
    """Why no eviction can make room when some pending pods fit no node even emptied (``unplaceable``:
    :func:`~scheduler.preemption.units.usable_rows_and_unplaceable`) and the tree cannot be satisfied without them (a
    gang left with fewer placeable pending members than it needs, a composite with fewer such children): ``ml/w-0 fits
    no node it may use even emptied, and the group cannot be satisfied without it``; empty otherwise. Those pods are
    named only in ``namespace`` (None: any)."""
    if not unplaceable or satisfiable_without(tree.root, {p.key for p in unplaceable}):
        return ""
    if len(unplaceable) == 1:
        return (f"{_named(unplaceable, namespace)} fits no node it may use even emptied, and the group cannot be "
                "satisfied without it")
    return (f"{len(unplaceable)} pods fit no node they may use even emptied ({_named(unplaceable, namespace)}), and "
            "the group cannot be satisfied without them")


def _room_is_short(result: Unschedulable) -> bool:
    """Whether node resources refused nodes in ``result`` and no rule about other pods or devices did
    (:data:`RELATIONAL`): then what holds the room is worth naming in a verdict of not helpful."""
    return resources_fit.NAME in result.rejectors and not result.rejectors & RELATIONAL


def _room_emptied(tree: GroupTree, snapshot: Snapshot, rows: BoolArray, need: IntArray) -> bool:
    """Whether the nodes of ``rows`` would hold ``need`` (``(R,)``, the tree's minimum) once emptied: summed over them
    all, or within one domain of the root's required topology; False under a topology constraint below the root,
    whose domains are not weighed here."""
    keys = {group.topology_key for group in walk(tree.root) if group.topology_key}
    allocatable = snapshot.table.allocatable
    if not keys:
        return bool((allocatable[rows].sum(axis=0) >= need).all())
    key = tree.root.topology_key
    if key is None or keys != {key}:
        return False
    of_node = snapshot.table.domains(key).of_node
    return any(bool((allocatable[rows & (of_node == domain)].sum(axis=0) >= need).all())
               for domain in np.unique(of_node[rows & (of_node >= 0)]).tolist())


def _no_fit(pods: Sequence[Pod], result: Unschedulable, namespace: str | None, kept: int = 0) -> str:
    """Why no choice of victims helps: ``no fit even with all 3 lower-priority pods evicted: ml/a-0, …`` (``the one
    lower-priority pod`` for one); led by :data:`DEVICES_LIMIT` when DRA's claims refused nodes in ``result``
    (:data:`DEVICES_TOO` when node resources did too), since an eviction frees no device here. When node resources
    are short, no rule about other pods or devices refused nodes (:data:`RELATIONAL`) and the nodes it may use would
    hold its minimum emptied, what else holds that room follows: ``; 2 pod(s) of its priority or higher hold room on
    the nodes it may use and are not preempted`` — running, or placed by plans made before (``simulate`` counts the
    pods it placed) — (``kept``: :func:`~scheduler.preemption.units.staying`, counted only then:
    :func:`_room_is_short`, :func:`_room_emptied`)."""
    which = {1: "the one lower-priority pod", 2: "both lower-priority pods"}.get(len(pods),
                                                                              f"all {len(pods)} lower-priority pods")
    no_fit = f"no fit even with {which} evicted: {_named(pods, namespace)}"
    if dynamic_resources.NAME not in result.rejectors:
        if kept:
            no_fit += (f"; {kept} pod(s) of its priority or higher hold room on the nodes it may use and are not "
                       "preempted")
        return no_fit
    return f"{DEVICES_TOO if resources_fit.NAME in result.rejectors else DEVICES_LIMIT}: {no_fit}"


def _named(pods: Sequence[Pod], namespace: str | None) -> str:
    """The first :data:`NAMED_VICTIMS` of ``pods`` in ``namespace`` (the preemptor's; None: any) as ``ns/name``, and
    how many more; those of other namespaces counted, not named (who reads the preemptor's reasons may not read
    them)."""
    return named_within([(p.key, p.key) for p in pods], namespace, NAMED_VICTIMS)


def _evicted(units: Sequence[Unit], namespace: str | None) -> str:
    """What ``units`` are, in the user's terms: ``1 group(s) evicted whole (disruptionMode all), 2 pod(s) of PodGroup
    ml/low (disruptionMode single), 1 pod(s) without a group`` (members of several single-mode groups: ``5 pod(s) of
    3 groups (disruptionMode single)``). A group is named only in the preemptor's ``namespace`` (None: any): the
    message is the preemptor's, read by who may not read other namespaces."""
    whole = sum(1 for u in units if u.rank == RANK_ALL)
    members = Counter(u.group for u in units if u.rank == RANK_MEMBER)
    lone = sum(1 for u in units if u.rank == RANK_POD)
    parts = [f"{whole} group(s) evicted whole (disruptionMode all)"] if whole else []
    if len(members) > 1:
        of = f"{len(members)} groups"
    elif members:
        group = next(iter(members))
        mine = namespace is None or next(u for u in units if u.group == group).pods[0].metadata.namespace == namespace
        of = group if mine else "a group in another namespace"
    if members:
        parts.append(f"{sum(members.values())} pod(s) of {of} (disruptionMode single)")
    return ", ".join(parts + ([f"{lone} pod(s) without a group"] if lone else []))


def _decision(tree: GroupTree, result: Unschedulable, chosen: Selection, prefix: str,
              namespace: str | None) -> Preemption:
    victims = chosen.pods
    text = FOUND.format(victims=len(victims)) + f": {_evicted(chosen.victims, namespace)}"
    text += f", {chosen.pdb_violations} over a PodDisruptionBudget" if chosen.pdb_violations else ""
    return Preemption(tree.key, victims, chosen.plan.placements, chosen.plan, result, prefix + text,
                      units=len(chosen.victims), reprieved=chosen.reprieved, pdb_violations=chosen.pdb_violations)
