"""PodTopologySpread: ``topologySpreadConstraints`` against running and planned pods, as per-domain caps.

Mirrors ``pkg/scheduler/framework/plugins/podtopologyspread`` (``common.go``, ``filtering.go``,
``scoring.go``, ``plugin.go``; v1.37, ``MatchLabelKeysInPodTopologySpread`` and
``NodeInclusionPolicyInPodTopologySpread`` on), per signature:

* **Constraints** (``filterTopologySpreadConstraints``): ``whenUnsatisfiable: DoNotSchedule`` ones
  filter, ``ScheduleAnyway`` ones score. The selector is ``labelSelector`` (nil matches no pod)
  ANDed with ``key In [value]`` for each ``matchLabelKeys`` key the pod has; ``minDomains`` defaults
  to 1, ``nodeAffinityPolicy`` to Honor, ``nodeTaintsPolicy`` to Ignore.
* **Eligible nodes and domains** (``matchNodeInclusionPolicies``): a node counts for a constraint when
  it has *every* key of the pod's constraints of that kind, matches the pod's nodeSelector and required
  node affinity (policy Honor) and has no NoSchedule/NoExecute taint the pod does not tolerate
  (policy Honor). A domain is eligible when one of its nodes is, even with no matching pod.
* **Counts**: pods in the pod's namespace matching the selector, not terminating, on eligible nodes —
  running (the snapshot's pod index) and placed earlier in this plan (Reserve / Unreserve). As kube's
  ``countPodsMatchSelector`` does, an empty selector ``{}`` counts no pod.
* **Filter** (``filtering.go``): a node without a constraint's key is UNSCHEDULABLE_AND_UNRESOLVABLE
  (:data:`NODE_LABEL_NOT_MATCH`); otherwise it passes while
  ``count(domain) + self − min(count over eligible domains) ≤ maxSkew``, ``min`` being 0 while fewer
  than ``minDomains`` domains are eligible and ``self`` 1 when the pod matches the selector
  (:data:`CONSTRAINTS_NOT_MATCH`, UNSCHEDULABLE). As copies: a node takes
  ``maxSkew + min − count(domain)`` copies of a self-matching pod — a per-domain cap — and the
  search asks again after each placement when the domains are wider than a node, or when the
  minimum may rise (few domains at the minimum), so a 6-pod gang with maxSkew 1 over three zones
  gets 2/2/2. A node that is not eligible itself (its copies are not counted) takes any number.
* **Inside a group's topology domain** (a PodGroup's ``schedulingConstraints.topology``): the domains
  are those inside the domain the search is trying (``CycleState.scope``): a gang held in one zone by
  its group spreads its pods over that zone's nodes or racks, instead of being refused because the
  other zones hold none of them (kube-scheduler has no group domains; this is our rule).
* **Score** (``scoring.go``): per candidate node Σ over ScheduleAnyway constraints of
  ``count(domain) · ln(domains + 2) + maxSkew − 1`` (rounded), fewer matching pods scoring higher:
  ``100 · (max + min − s) / max``; nodes without a key score 0. Weight 2.

Not done: the system default constraints kube applies to a pod with none (ScheduleAnyway spreading by
the selectors of its Services, ReplicaSet or StatefulSet) — no Service or ReplicaSet is watched.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scheduler.framework.cycle_state import CycleState, Placement, StateKey
from scheduler.framework.events import Action, ClusterEvent
from scheduler.framework.interface import Quota, Rejections, Signature
from scheduler.framework.node_table import BoolArray, IntArray, NodeTable, static_key
from scheduler.framework.pod_index import PodEntry
from scheduler.framework.pod_terms import Selector, selector_of
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code
from scheduler.model.pod import ASKS_SPREAD, LabelSelectorRequirement, Pod, PodSpec, TopologySpreadConstraint
from scheduler.solver.plugins import node_affinity, taint_toleration
from scheduler.solver.plugins.inter_pod import DomainIds, domains_of, signature_labels
from scheduler.solver.plugins.resources_fit import UNLIMITED

NAME = "PodTopologySpread"
# Reasons: podtopologyspread/plugin.go (v1.37).
CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"  # Unschedulable
NODE_LABEL_NOT_MATCH = "node(s) didn't match pod topology spread constraints (missing required label)"  # UAU

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
WEIGHT = 2
"""Score weight in the default profile (apis/config/v1/default_plugins.go)."""

SIGS: StateKey[list[_SigState]] = StateKey(f"{NAME}/signatures")
DATA: StateKey[_SigState] = StateKey(f"{NAME}/signature")


@dataclass(eq=False)
class _Constraint:
    """One constraint of a signature, over the table: ``eligible_nodes`` (N,), ``eligible`` domains (D,),
    matching pods per domain ``counts`` (D,)."""

    max_skew: int
    selector: Selector | None
    min_domains: int
    self_match: bool
    domains: DomainIds
    eligible_nodes: BoolArray
    eligible: BoolArray
    counts: IntArray
    _scope: tuple[Any, BoolArray] | None = None

    def counts_pod(self, e: PodEntry) -> bool:
        """Whether ``e`` (in the signature's namespace) counts (``countPodsMatchSelector``)."""
        return self.counts_labels(e.labels, e.terminating)

    def counts_labels(self, labels: Mapping[str, str], terminating: bool) -> bool:
        """Whether a pod with ``labels`` (in the signature's namespace) counts, terminating or not."""
        sel = self.selector
        return sel is not None and not sel.empty and not terminating and sel.matches(labels)

    def in_scope(self, scope: BoolArray | None) -> BoolArray:
        """Eligible domains with a node inside ``scope`` (all eligible ones for no scope); memoised per scope."""
        if scope is None:
            return self.eligible
        if self._scope is not None and self._scope[0] is scope:
            return self._scope[1]
        if scope.all():  # every node (a leaf without a topology domain): each eligible domain has a node inside
            mark = self.eligible
        else:
            mark = np.zeros(self.domains.count, dtype=bool)
            ids = self.domains.of_node[scope]
            mark[ids[ids >= 0]] = True
            mark &= self.eligible
        self._scope = (scope, mark)
        return mark

    def minimum(self, scope: BoolArray | None) -> int:
        """``min`` of the skew rule: the least count over eligible domains (in scope), 0 below minDomains."""
        doms = self.in_scope(scope)
        n = int(doms.sum())
        if n < self.min_domains or n == 0:
            return 0
        return int(self.counts[doms].min())


@dataclass(eq=False)
class _SigState:
    namespace: str
    filters: tuple[_Constraint, ...]
    scores: tuple[_Constraint, ...]
    memo: dict[int, tuple[bool, ...]] = field(default_factory=dict)

    @property
    def constraints(self) -> tuple[_Constraint, ...]:
        return self.filters + self.scores


def merged_selector(c: TopologySpreadConstraint, labels: dict[str, str]) -> Selector | None:
    """``labelSelector`` with ``key In [value]`` for each ``matchLabelKeys`` key ``labels`` has
    (``filterTopologySpreadConstraints``; a nil selector stays nil: ``mergeLabelSetWithSelector``)."""
    selector = selector_of(c.label_selector)
    if selector is None:
        return None
    extra = [LabelSelectorRequirement(key=k, operator="In", values=(labels[k],))
             for k in c.match_label_keys if k in labels]
    return selector.extended(extra) if extra else selector


def _node_masks(table: NodeTable, spec: PodSpec) -> tuple[BoolArray, BoolArray]:
    """Per node: matches the pod's nodeSelector + required node affinity; tolerates its NoSchedule/NoExecute
    taints (memoised per static key: the two inclusion policies' inputs)."""
    def compute() -> tuple[BoolArray, BoolArray]:
        affinity = np.fromiter((node_affinity.filter_node(spec, n) is None for n in table.nodes), bool, len(table))
        taints = np.fromiter((taint_toleration.filter_node(spec, n) is None for n in table.nodes), bool, len(table))
        return affinity, taints
    return table.memo((NAME, "inclusion", static_key(spec)), compute)


def _eligibility(table: NodeTable, spec: PodSpec, keys: tuple[str, ...], c: TopologySpreadConstraint,
                 d: DomainIds) -> tuple[BoolArray, BoolArray]:
    """The eligible nodes (N,) and domains (D,) of constraint ``c`` of a pod with ``spec`` whose constraints of
    ``c``'s kind are over ``keys`` (``matchNodeInclusionPolicies``). They depend on nothing but the table and
    these inputs, so they are memoised on the table (read-only arrays), not rebuilt for every signature."""
    affinity_policy = c.node_affinity_policy or HONOR
    taints_policy = c.node_taints_policy or IGNORE

    def compute() -> tuple[BoolArray, BoolArray]:
        nodes = np.ones(len(table), dtype=bool)
        for key in keys:
            nodes &= domains_of(table, key).of_node >= 0
        affinity, taints = _node_masks(table, spec)
        if affinity_policy == HONOR:
            nodes &= affinity
        if taints_policy == HONOR:
            nodes &= taints
        eligible = np.zeros(d.count, dtype=bool)
        eligible[d.of_node[nodes]] = True
        nodes.setflags(write=False)
        eligible.setflags(write=False)
        return nodes, eligible
    return table.memo((NAME, "eligible", static_key(spec), keys, c.topology_key, affinity_policy, taints_policy),
                      compute)


def _constraints(state: CycleState, rep: Pod, action: str) -> tuple[_Constraint, ...]:
    table = state.table
    labels = rep.metadata.labels
    chosen = [c for c in rep.spec.topology_spread_constraints if c.when_unsatisfiable == action]
    if not chosen:
        return ()
    keys = tuple(c.topology_key for c in chosen)
    out = []
    for c in chosen:
        d = domains_of(table, c.topology_key)
        nodes, eligible = _eligibility(table, rep.spec, keys, c, d)
        selector = merged_selector(c, labels)
        out.append(_Constraint(c.max_skew, selector, c.min_domains if c.min_domains is not None else 1,
                               selector is not None and selector.matches(labels), d, nodes, eligible,
                               np.zeros(d.count, dtype=np.int64)))
    return tuple(out)


SMALL_DOMAINS = 32
"""Up to this many domains the water fill runs on Python ints (zones, racks); beyond, on numpy arrays."""


def _water_fill(counts: IntArray, room: IntArray, domains: BoolArray, max_skew: int, count: int) -> IntArray:
    """Copies per domain when up to ``count`` copies go one by one to the least-loaded domain (``counts``)
    among ``domains`` that has ``room`` left, while kube's rule ``count + 1 − min ≤ maxSkew`` admits it.
    Least-loaded first is the order that admits the most, and the result is reached by it."""
    out = np.zeros(len(counts), dtype=np.int64)
    ids = np.flatnonzero(domains)
    if not ids.size:
        return out
    if ids.size <= SMALL_DOMAINS:
        level: list[int] = counts[ids].tolist()
        left: list[int] = room[ids].tolist()
        added = [0] * len(ids)
        low = min(level)  # kept up to date: it only moves when the least-loaded domain takes a copy
        for _ in range(count):
            best, best_level = -1, 0
            for i, here in enumerate(level):
                if added[i] < left[i] and (best < 0 or here < best_level):
                    best, best_level = i, here
            if best < 0 or best_level + 1 - low > max_skew:
                break
            level[best] += 1
            added[best] += 1
            if best_level == low:
                low = min(level)
        out[ids] = added
        return out
    level_arr = counts[ids].astype(np.int64)
    left_arr = room[ids].astype(np.int64)
    added_arr = np.zeros(ids.size, dtype=np.int64)
    for _ in range(count):
        open_ = added_arr < left_arr
        if not open_.any():
            break
        best = int(np.argmin(np.where(open_, level_arr, np.iinfo(np.int64).max)))
        if level_arr[best] + 1 - int(level_arr.min()) > max_skew:
            break
        level_arr[best] += 1
        added_arr[best] += 1
    out[ids] = added_arr
    return out


def _add(s: _SigState, hits: tuple[bool, ...], row: int, n: int) -> None:
    for c, hit in zip(s.constraints, hits, strict=True):
        if hit and c.eligible_nodes[row]:
            c.counts[c.domains.of_node[row]] += n


class PodTopologySpread:
    """PreFilter, Filter, Score and Reserve for topology spread constraints; see the module docstring."""

    name = NAME
    weight = WEIGHT

    # -- PreFilter ---------------------------------------------------------------------------------
    def signature_key(self, state: CycleState, pod: Pod) -> Hashable:
        constraints = pod.spec.topology_spread_constraints
        if not constraints:
            return ()
        return signature_labels(state, pod), tuple(
            (c.max_skew, c.topology_key, c.when_unsatisfiable, c.min_domains, c.node_affinity_policy,
             c.node_taints_policy, c.match_label_keys,
             None if c.label_selector is None else (tuple(sorted(c.label_selector.match_labels.items())),
                                                    c.label_selector.match_expressions))
            for c in constraints)

    def pre_filter(self, state: CycleState, sig: Signature) -> BoolArray | None:
        rep = sig.pods[0]
        if not rep.spec.topology_spread_constraints:
            return None
        s = _SigState(rep.metadata.namespace, _constraints(state, rep, DO_NOT_SCHEDULE),
                      _constraints(state, rep, SCHEDULE_ANYWAY))
        if not s.constraints:
            return None
        rows = state.table.index
        view = state.snapshot.pod_index
        for c in s.constraints:
            if c.selector is None or c.selector.empty:
                continue
            for e in view.matching(frozenset((s.namespace,)), c.selector):
                row = rows.get(e.node)
                if row is not None and c.counts_pod(e) and c.eligible_nodes[row]:
                    c.counts[c.domains.of_node[row]] += 1
        for placement in state.journal:
            _add(s, self._hits(state, s, placement.signature, placement.row), placement.row, len(placement.pods))
        sig.write(DATA, s)
        state.setdefault(SIGS, list).append(s)
        return None

    def _hits(self, state: CycleState, s: _SigState, placed: Signature, row: int) -> tuple[bool, ...]:
        """Which of ``s``'s constraints count a copy of ``placed`` (memoised per pair)."""
        hits = s.memo.get(id(placed))
        if hits is None:  # the representative's labels are all it takes (no index entry: terms are not read)
            rep = placed.pods[0]
            same = rep.metadata.namespace == s.namespace
            hits = tuple(same and c.counts_labels(rep.metadata.labels, rep.is_terminating) for c in s.constraints)
            s.memo[id(placed)] = hits
        return hits

    # -- Filter ------------------------------------------------------------------------------------
    def filter(self, state: CycleState, sig: Signature, rows: IntArray) -> IntArray | None:
        s: _SigState | None = sig.data.get(DATA.name)
        if s is None or not s.filters:
            return None
        caps = np.full(len(rows), UNLIMITED, dtype=np.int64)
        for c in s.filters:
            missing, over, room = self._judge(state, c, rows)
            caps[missing | over] = 0
            if c.self_match:
                caps = np.minimum(caps, np.where(missing | over, 0, room))
        return caps

    def _judge(self, state: CycleState, c: _Constraint, rows: IntArray) -> tuple[BoolArray, BoolArray, IntArray]:
        """Per row: lacks the key; breaks the skew rule for the next copy; copies it may still take."""
        d = c.domains.of_node[rows]
        missing = d < 0
        if c.domains.count == 0:
            return missing, np.zeros(len(rows), dtype=bool), np.zeros(len(rows), dtype=np.int64)
        doms = c.in_scope(state.scope)
        low = c.minimum(state.scope)
        dd = np.maximum(d, 0)
        match = np.where(~missing & doms[dd], c.counts[dd], 0)
        over = ~missing & (match + int(c.self_match) - low > c.max_skew)
        room = np.where(c.eligible_nodes[rows], c.max_skew + low - match, UNLIMITED).astype(np.int64)
        return missing, over, room

    def quota(self, state: CycleState, sig: Signature, rows: IntArray, capacity: IntArray,
              count: int) -> Quota | None:
        """The batch of a signature with one self-matching DoNotSchedule constraint: per domain, the copies
        kube's rule admits one at a time when each goes to the least-loaded domain that still has room
        (the order that admits the most; "room" is ``capacity`` summed over the domain's rows) — so the
        batch ends in a state some order reaches. With fewer eligible domains than ``minDomains`` the
        minimum stays 0 and each domain simply takes ``maxSkew − count``. None (copy by copy) with
        several self-matching constraints, or when a candidate row's copies would not be counted (its
        node is not eligible)."""
        s: _SigState | None = sig.data.get(DATA.name)
        own = [c for c in s.filters if c.self_match] if s is not None else []
        if s is None or len(own) != 1:
            return None
        c = own[0]
        caps = np.full(len(rows), UNLIMITED, dtype=np.int64)
        for other in s.filters:
            if other is not c:
                missing, over, _ = self._judge(state, other, rows)
                caps[missing | over] = 0
        d = c.domains.of_node.take(rows)
        keyed = d >= 0
        every = bool(keyed.all())  # the common case (every candidate has the key): no masking below
        eligible = c.eligible_nodes.take(rows)
        if not (eligible.all() if every else (eligible | ~keyed).all()):
            return None
        if not every:
            caps[~keyed] = 0
        doms = c.in_scope(state.scope)
        room = np.maximum(np.minimum(capacity, caps), 0)
        if every:
            per_domain = np.bincount(d, weights=room, minlength=c.domains.count).astype(np.int64)
        else:
            per_domain = np.bincount(d[keyed], weights=room[keyed], minlength=c.domains.count).astype(np.int64)
        per_domain[~doms] = 0
        if int(doms.sum()) < c.min_domains:
            budget = np.minimum(np.maximum(c.max_skew - c.counts, 0), per_domain)
        else:
            budget = _water_fill(c.counts, per_domain, doms, c.max_skew, count)
        budget[~doms] = 0
        return Quota(caps, d.astype(np.int64) if every else np.where(keyed, d, -1).astype(np.int64), budget)

    def rejections(self, state: CycleState, sig: Signature, rows: IntArray) -> Rejections:
        s: _SigState = sig.read(DATA)
        missing_any = np.zeros(len(rows), dtype=bool)
        over_any = np.zeros(len(rows), dtype=bool)
        for c in s.filters:
            missing, over, _ = self._judge(state, c, rows)
            missing_any |= missing
            over_any |= over
        counts: Counter[str] = Counter()
        counts[NODE_LABEL_NOT_MATCH] = int(missing_any.sum())
        counts[CONSTRAINTS_NOT_MATCH] = int((over_any & ~missing_any).sum())
        counts = +counts
        code = Code.UNSCHEDULABLE if CONSTRAINTS_NOT_MATCH in counts else Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        return Rejections(counts, code)

    def interacts(self, state: CycleState, sig: Signature) -> bool:
        """True when a copy placed on one node may change another node's answer: a self-matching constraint
        over domains wider than a node, or over nodes when so few domains are at the minimum that this
        signature's copies may raise it."""
        s: _SigState | None = sig.data.get(DATA.name)
        if s is None:
            return False
        for c in s.filters:
            if not c.self_match:
                continue
            if not c.domains.singleton:
                return True
            doms = c.in_scope(state.scope)
            if int(doms.sum()) >= c.min_domains:
                low = c.minimum(state.scope)
                if int((c.counts[doms] == low).sum()) <= len(sig.pods):
                    return True
        return False

    # -- Score -------------------------------------------------------------------------------------
    def score(self, state: CycleState, sig: Signature, rows: IntArray) -> IntArray | None:
        s: _SigState | None = sig.data.get(DATA.name)
        if s is None or not s.scores:
            return None
        ignored = np.zeros(len(rows), dtype=bool)
        ids = [c.domains.of_node[rows] for c in s.scores]
        for d in ids:
            ignored |= d < 0
        kept = ~ignored
        if not kept.any():
            return np.zeros(len(rows), dtype=np.int64)
        raw = np.zeros(len(rows), dtype=np.float64)
        for c, d in zip(s.scores, ids, strict=True):
            weight = math.log(np.unique(d[kept]).size + 2)
            raw += c.counts[np.maximum(d, 0)] * weight + (c.max_skew - 1)
        total = np.rint(raw).astype(np.int64)
        low, high = int(total[kept].min()), max(int(total[kept].max()), 0)
        normal = np.full(len(rows), 100, dtype=np.int64) if high == 0 else 100 * (high + low - total) // high
        normal[ignored] = 0
        return np.asarray(normal - normal.min(), dtype=np.int64)

    # -- Reserve -----------------------------------------------------------------------------------
    def reserve(self, state: CycleState, sig: Signature, row: int, pods: tuple[Pod, ...]) -> tuple[int, Any]:
        for s in state.get(SIGS) or ():  # none registered unless a pod of this solve spreads
            _add(s, self._hits(state, s, sig, row), row, len(pods))
        return len(pods), None

    def unreserve(self, state: CycleState, placement: Placement, token: Any) -> None:
        for s in state.get(SIGS) or ():
            _add(s, self._hits(state, s, placement.signature, placement.row), placement.row, -len(placement.pods))


class PodTopologySpreadScore:
    """The Score half of :class:`PodTopologySpread` (its ``interacts``: placing copies changes the scores
    when a ScheduleAnyway constraint matches the pod itself)."""

    name = NAME
    weight = WEIGHT

    def __init__(self, plugin: PodTopologySpread) -> None:
        self.plugin = plugin

    def score(self, state: CycleState, sig: Signature, rows: IntArray) -> IntArray | None:
        return self.plugin.score(state, sig, rows)

    def interacts(self, state: CycleState, sig: Signature) -> bool:
        s: _SigState | None = sig.data.get(DATA.name)
        return s is not None and any(c.self_match for c in s.scores)


PLUGIN = PodTopologySpread()
SCORE = PodTopologySpreadScore(PLUGIN)


def gate(snapshot: Snapshot, pending: Sequence[Pod], asked: frozenset[str]) -> bool:
    """Whether a pending pod of the root has topology spread constraints (only they are judged: running
    pods' constraints bind nobody else)."""
    return ASKS_SPREAD in asked


def queueing_hint(event: ClusterEvent) -> bool:
    """kube's ``isSchedulableAfterPodChange`` / ``isSchedulableAfterNodeChange`` without the target pod: a
    pod that uses a node added, deleted, gone terminal or terminating (it stops counting), moved or
    relabelled; a node added, deleted, relabelled or retainted."""
    if event.kind == "Pod":
        old, new = event.old, event.new
        was = old is not None and old.is_bound and not old.is_terminal and not old.is_terminating
        now = new is not None and new.is_bound and not new.is_terminal and not new.is_terminating
        if was != now:
            return True
        return was and (old.metadata.labels != new.metadata.labels or old.spec.node_name != new.spec.node_name)
    if event.kind == "Node":
        if event.action is not Action.UPDATE:
            return True
        return bool(event.old.metadata.labels != event.new.metadata.labels
                    or event.old.spec.taints != event.new.spec.taints)
    return False
