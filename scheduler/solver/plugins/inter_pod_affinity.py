"""InterPodAffinity: required and preferred pod affinity / anti-affinity, against running and planned pods.

Mirrors ``pkg/scheduler/framework/plugins/interpodaffinity`` (``filtering.go``, ``scoring.go``,
``plugin.go``; v1.37 with the alpha ``InterPodAffinityHostnameFastPath`` gate off, its default), per
signature instead of per pod:

* **PreFilter** counts, per topology domain (a value of the term's ``topologyKey``), the pods that
  matter to the signature's representative pod — on the nodes (the snapshot's pod index: bound and
  assumed pods of any scheduler, terminating ones included, as kube counts them) and placed earlier
  in this plan (the journal):

  - pods matching *all* its required affinity terms (``affinityCounts``),
  - pods matching each of its required anti-affinity terms (``antiAffinityCounts``),
  - pods whose own required anti-affinity terms match it — the symmetric rule
    (``existingAntiAffinityCounts``): a running pod of any scheduler that repels ``app=train`` keeps
    our ``app=train`` pods off its domain,
  - for Score: its preferred terms (+/− weight), and the others' required affinity
    (+``hardPodAffinityWeight`` = 1), preferred affinity (+weight) and preferred anti-affinity
    (−weight) terms that match it.

  A term's ``namespaceSelector`` is resolved against the snapshot's namespaces (``{}``: all); a
  namespace the scheduler does not know has no labels.
* **Filter**, in kube's order, the first failure being the node's reason: (1) every affinity term's
  key must be on the node and each domain must hold a matching pod — unless no matching pod exists
  anywhere and the pod matches all its own terms (the first pod of a self-affine group may go
  anywhere that has the keys; :data:`AFFINITY_MISMATCH`, UNSCHEDULABLE_AND_UNRESOLVABLE); (2) no
  domain of the node may hold a pod matching one of its anti-affinity terms (a node without the key
  passes; :data:`ANTI_AFFINITY_MISMATCH`); (3) no pod whose anti-affinity matches it may be in the
  node's domains (:data:`EXISTING_ANTI_AFFINITY_MISMATCH`). Copies: a pod that its own anti-affinity
  repels takes one copy per node that has the key (one per node is hostname anti-affinity on the
  gang's own label: "at most one copy per node", no pod-by-pod search); otherwise no limit.
  *Interacts* (the search asks again after each placement) when that own rule is over domains wider
  than a node, or while the first-pod rule is in force for a self-affine signature, since its first
  copy decides the domain of the rest.
* **Reserve / Unreserve** add / remove a placement's pods to every signature's counts (matched once
  per pair of signatures), so members of one gang repel or attract each other, and backtracking
  undoes it exactly.
* **Score**: Σ over the node's topology keys of its domain's score, normalised min–max over the
  candidate nodes to 0–100 (kube's NormalizeScore), weight 2.

Known differences: normalisation is over the candidate nodes (kube: the feasible ones); existing
pods' preferred terms are always counted (``ignorePreferredTermsOfExistingPods`` false, kube's default).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from scheduler.framework.cycle_state import CycleState, Placement, StateKey
from scheduler.framework.events import Action, ClusterEvent
from scheduler.framework.interface import Rejections, Signature
from scheduler.framework.node_table import BoolArray, IntArray, NodeTable
from scheduler.framework.pod_index import PodEntry
from scheduler.framework.pod_terms import AffinityTerm, PodTerms
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code
from scheduler.model.pod import ASKS_POD_AFFINITY, LabelSelector, Pod, PodAffinity, PodAffinityTerm
from scheduler.solver.plugins.inter_pod import domains_of, placed_entry, signature_entry, signature_labels
from scheduler.solver.plugins.resources_fit import UNLIMITED

NAME = "InterPodAffinity"
# Reasons and codes: interpodaffinity/filtering.go (v1.37).
AFFINITY_MISMATCH = "node(s) didn't match pod affinity rules"  # ErrReasonAffinityRulesNotMatch (UAU)
ANTI_AFFINITY_MISMATCH = "node(s) didn't match pod anti-affinity rules"  # ErrReasonAntiAffinityRulesNotMatch
EXISTING_ANTI_AFFINITY_MISMATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
"""ErrReasonExistingAntiAffinityRulesNotMatch (Unschedulable)."""

HARD_POD_AFFINITY_WEIGHT = 1
"""InterPodAffinityArgs ``hardPodAffinityWeight`` default (apis/config/v1/defaults.go): what a running
pod's *required* affinity term matching the incoming pod adds to the score of its domain."""
WEIGHT = 2
"""Score weight in the default profile (apis/config/v1/default_plugins.go)."""

SIGS: StateKey[list[_SigState]] = StateKey(f"{NAME}/signatures")
DATA: StateKey[_SigState] = StateKey(f"{NAME}/signature")


def gate(snapshot: Snapshot, pending: Sequence[Pod], asked: frozenset[str]) -> bool:
    """Whether any pod — running, or pending in the root — has a pod (anti-)affinity term; if none has, the
    plugin has nothing to judge (the profile leaves it out of the solve)."""
    if ASKS_POD_AFFINITY in asked:
        return True
    view = snapshot.index_view  # the view handed over, when valid, without building the snapshot's own
    return view.has_terms() if view is not None and view.valid else snapshot.pod_index.has_terms()

Scope = frozenset[str] | None


def _in_scope(scope: Scope, namespace: str) -> bool:
    return scope is None or namespace in scope


@dataclass(frozen=True, slots=True)
class _Matches:
    """What one pod (running, or a placed copy) contributes to one signature's counts."""

    all_affinity: bool = False
    anti_keys: tuple[str, ...] = ()
    sym_keys: tuple[str, ...] = ()
    score: tuple[tuple[str, int], ...] = ()

    def __bool__(self) -> bool:
        return self.all_affinity or bool(self.anti_keys or self.sym_keys or self.score)


@dataclass(eq=False)
class _SigState:
    """One signature's view: its representative's terms (with namespace scopes resolved) and the
    counts per topology key per domain (arrays over the key's domain ids)."""

    namespace: str
    labels: dict[str, str]
    namespace_labels: dict[str, str]
    terms: PodTerms
    affinity_scopes: tuple[Scope, ...]
    anti_scopes: tuple[Scope, ...]
    preferred: tuple[tuple[int, AffinityTerm, Scope], ...]
    affinity_keys: tuple[str, ...]
    affinity: dict[str, IntArray] = field(default_factory=dict)
    affinity_total: int = 0
    anti: dict[str, IntArray] = field(default_factory=dict)
    anti_total: int = 0
    sym: dict[str, IntArray] = field(default_factory=dict)
    sym_total: int = 0
    score: dict[str, IntArray] = field(default_factory=dict)
    self_affine: bool = False
    self_anti_keys: tuple[str, ...] = ()
    self_scores: bool = False
    memo: dict[int, _Matches] = field(default_factory=dict)
    of_node: dict[str, npt.NDArray[np.int32]] = field(default_factory=dict)
    """Topology key → domain id per row (:func:`domains_of`), looked up once for the Reserve hot path."""

    def domain(self, table: NodeTable, key: str, row: int) -> int:
        """The domain id of ``row`` for ``key`` (−1: the node lacks the label)."""
        ids = self.of_node.get(key)
        if ids is None:
            ids = domains_of(table, key).of_node
            self.of_node[key] = ids
        return int(ids[row])

    def matches(self, e: PodEntry) -> _Matches:
        """Everything ``e`` contributes to this signature."""
        terms = self.terms
        all_affinity = bool(terms.required_affinity) and all(
            _in_scope(scope, e.namespace) and t.selector is not None and t.selector.matches(e.labels)
            for t, scope in zip(terms.required_affinity, self.affinity_scopes, strict=True))
        anti_keys = tuple(t.topology_key for t, scope in zip(terms.required_anti, self.anti_scopes, strict=True)
                          if _in_scope(scope, e.namespace) and t.selector is not None
                          and t.selector.matches(e.labels))
        return _Matches(all_affinity, anti_keys, self._symmetric(e), self._own_preferred(e) + self._their_score(e))

    def _symmetric(self, e: PodEntry) -> tuple[str, ...]:
        return tuple(t.topology_key for t in e.terms.required_anti
                     if t.matches(self.namespace, self.labels, self.namespace_labels))

    def _own_preferred(self, e: PodEntry) -> tuple[tuple[str, int], ...]:
        return tuple((t.topology_key, w) for w, t, scope in self.preferred
                     if _in_scope(scope, e.namespace) and t.selector is not None and t.selector.matches(e.labels))

    def _their_score(self, e: PodEntry) -> tuple[tuple[str, int], ...]:
        if not e.terms:
            return ()
        me = (self.namespace, self.labels, self.namespace_labels)
        out = [(t.topology_key, HARD_POD_AFFINITY_WEIGHT) for t in e.terms.required_affinity if t.matches(*me)]
        out += [(w.term.topology_key, w.weight) for w in e.terms.preferred_affinity if w.term.matches(*me)]
        out += [(w.term.topology_key, -w.weight) for w in e.terms.preferred_anti if w.term.matches(*me)]
        return tuple(out)


def _add(state: CycleState, s: _SigState, m: _Matches, row: int, n: int) -> None:
    """Count ``n`` pods contributing ``m`` on node ``row`` into ``s`` (``n`` < 0 takes them back)."""
    table = state.table
    if m.all_affinity:
        for key in s.affinity_keys:
            d = s.domain(table, key, row)
            if d >= 0:
                s.affinity[key][d] += n
                s.affinity_total += n
    for key in m.anti_keys:
        d = s.domain(table, key, row)
        if d >= 0:
            s.anti[key][d] += n
            s.anti_total += n
    for key in m.sym_keys:
        d = s.domain(table, key, row)
        if d >= 0:
            counts = s.sym.get(key)
            if counts is None:  # created on first use (not via setdefault, which would allocate every call)
                counts = s.sym[key] = np.zeros(domains_of(table, key).count, dtype=np.int64)
            counts[d] += n
            s.sym_total += n
    for key, weight in m.score:
        d = s.domain(table, key, row)
        if d >= 0:
            counts = s.score.get(key)
            if counts is None:
                counts = s.score[key] = np.zeros(domains_of(table, key).count, dtype=np.int64)
            counts[d] += weight * n


def _terms_key(raw: PodAffinity | None) -> Hashable:
    """A hashable form of one side's terms as written (parsing waits for the signature's first pod)."""
    if raw is None:
        return None

    def term(t: PodAffinityTerm) -> Hashable:
        return (_selector_key(t.label_selector), t.namespaces, t.topology_key, _selector_key(t.namespace_selector),
                t.match_label_keys, t.mismatch_label_keys)

    preferred = raw.preferred_during_scheduling_ignored_during_execution
    return (tuple(term(t) for t in raw.required_during_scheduling_ignored_during_execution),
            tuple((w.weight, term(w.pod_affinity_term)) for w in preferred))


def _selector_key(raw: LabelSelector | None) -> Hashable:
    if raw is None:
        return None
    return tuple(sorted(raw.match_labels.items())), raw.match_expressions


class InterPodAffinity:
    """PreFilter, Filter, Score and Reserve for pod (anti-)affinity; see the module docstring."""

    name = NAME
    weight = WEIGHT

    # -- PreFilter ---------------------------------------------------------------------------------
    def signature_key(self, state: CycleState, pod: Pod) -> Hashable:
        affinity = pod.spec.affinity
        terms = (None, None) if affinity is None else (
            _terms_key(affinity.pod_affinity), _terms_key(affinity.pod_anti_affinity))
        return signature_labels(state, pod), terms

    def pre_filter(self, state: CycleState, sig: Signature) -> BoolArray | None:
        rep = sig.pods[0]
        snapshot = state.snapshot
        entry = signature_entry(state, sig)  # the representative's parsed terms, shared with placed_entry
        terms = entry.terms
        namespaces = snapshot.namespaces
        s = _SigState(
            namespace=rep.metadata.namespace, labels=dict(rep.metadata.labels),
            namespace_labels=dict(namespaces.get(rep.metadata.namespace, {})), terms=terms,
            affinity_scopes=tuple(t.scope(namespaces) for t in terms.required_affinity),
            anti_scopes=tuple(t.scope(namespaces) for t in terms.required_anti),
            preferred=tuple((w.weight, w.term, w.term.scope(namespaces)) for w in terms.preferred_affinity)
            + tuple((-w.weight, w.term, w.term.scope(namespaces)) for w in terms.preferred_anti),
            affinity_keys=tuple(dict.fromkeys(t.topology_key for t in terms.required_affinity)))
        table = state.table
        for key in s.affinity_keys:
            s.affinity[key] = np.zeros(domains_of(table, key).count, dtype=np.int64)
        for t in terms.required_anti:
            s.anti.setdefault(t.topology_key, np.zeros(domains_of(table, t.topology_key).count, dtype=np.int64))
        mine = s.matches(entry)  # what a copy placed earlier contributes to the next copy
        s.memo[id(sig)] = mine  # = _contribution(s, sig, row) for any row: matching reads no node
        s.self_affine, s.self_scores = mine.all_affinity, bool(mine.score)
        s.self_anti_keys = tuple(dict.fromkeys(mine.anti_keys + mine.sym_keys))
        self._count_running(state, s)
        for placement in state.journal:
            _add(state, s, self._contribution(state, s, placement.signature, placement.row), placement.row,
                 len(placement.pods))
        sig.write(DATA, s)
        state.setdefault(SIGS, list).append(s)
        return None

    def _count_running(self, state: CycleState, s: _SigState) -> None:
        """Add the pods on the nodes (the snapshot's pod index) to ``s``'s counts."""
        view = state.snapshot.pod_index
        rows = state.table.index
        terms = s.terms

        def add(entries: Iterable[PodEntry], contribution: Any) -> None:
            for e in entries:
                row = rows.get(e.node)
                if row is not None:
                    m = contribution(e)
                    if m:
                        _add(state, s, m, row, 1)

        if terms.required_affinity:
            first, scope = terms.required_affinity[0], s.affinity_scopes[0]
            add(view.matching(scope, first.selector), lambda e: _Matches(all_affinity=s.matches(e).all_affinity))
        for t, scope in zip(terms.required_anti, s.anti_scopes, strict=True):
            add(view.matching(scope, t.selector), lambda e, t=t: _Matches(anti_keys=(t.topology_key,)))
        for weight, t, scope in s.preferred:
            add(view.matching(scope, t.selector), lambda e, t=t, w=weight: _Matches(score=((t.topology_key, w),)))
        add(view.term_holders(s.labels), lambda e: _Matches(sym_keys=s._symmetric(e), score=s._their_score(e)))

    def _contribution(self, state: CycleState, s: _SigState, placed: Signature, row: int) -> _Matches:
        m = s.memo.get(id(placed))
        if m is None:
            m = s.matches(placed_entry(state, placed, row))
            s.memo[id(placed)] = m
        return m

    # -- Filter ------------------------------------------------------------------------------------
    def _failures(self, state: CycleState, s: _SigState, rows: IntArray) -> tuple[BoolArray, BoolArray, BoolArray]:
        """Per row: fails the affinity check, the anti-affinity check, the existing anti-affinity check."""
        table = state.table
        n = len(rows)
        affinity = np.zeros(n, dtype=bool)
        if s.affinity_keys:
            for key in s.affinity_keys:
                d = domains_of(table, key).of_node[rows]
                if s.affinity_total > 0:
                    counts = s.affinity[key]
                    affinity |= (d < 0) | (counts[np.maximum(d, 0)] <= 0) if counts.size else True
                else:
                    affinity |= d < 0
            if s.affinity_total <= 0 and not s.self_affine:
                affinity[:] = True
        return affinity, self._blocked(table, s.anti, s.anti_total, rows), self._blocked(table, s.sym,
                                                                                        s.sym_total, rows)

    @staticmethod
    def _blocked(table: Any, counts: dict[str, IntArray], total: int, rows: IntArray) -> BoolArray:
        out = np.zeros(len(rows), dtype=bool)
        if total <= 0:
            return out
        for key, arr in counts.items():
            if arr.any():
                d = domains_of(table, key).of_node[rows]
                out |= (d >= 0) & (arr[np.maximum(d, 0)] > 0)
        return out

    def filter(self, state: CycleState, sig: Signature, rows: IntArray) -> IntArray | None:
        s: _SigState | None = sig.data.get(DATA.name)
        if s is None or (not s.affinity_keys and s.anti_total <= 0 and s.sym_total <= 0 and not s.self_anti_keys):
            return None
        caps = np.full(len(rows), UNLIMITED, dtype=np.int64)
        if s.self_anti_keys:  # its own anti-affinity repels a second copy from the node's domains
            keyed = domains_of(state.table, s.self_anti_keys[0]).of_node.take(rows) >= 0
            for key in s.self_anti_keys[1:]:
                keyed |= domains_of(state.table, key).of_node.take(rows) >= 0
            caps[keyed] = 1
        if s.affinity_keys or s.anti_total > 0 or s.sym_total > 0:  # else no check can fail (a new gang)
            affinity, anti, sym = self._failures(state, s, rows)
            caps[affinity | anti | sym] = 0
        return caps

    def most_copies(self, state: CycleState, sig: Signature, rows: IntArray) -> tuple[str, int] | None:
        """(the rule in words, domains of ``key`` among ``rows``) for the tightest key of the signature's own required
        anti-affinity (its copies repel each other: one per domain of each key, ``filtering.go``'s anti-affinity check
        against the pods placed before), or None — no such rule, or each key missing from some row (a node without the
        key is not bound by it). Counted over the domains alone, so pods already there that the rule matches make the
        true bound lower, never higher."""
        s: _SigState | None = sig.data.get(DATA.name)
        if s is None or not s.self_anti_keys or not rows.size:
            return None
        bounds = []
        for key in s.self_anti_keys:
            ids = domains_of(state.table, key).of_node.take(rows)
            if (ids >= 0).all():
                bounds.append((int(np.unique(ids).size), key))
        if not bounds:
            return None
        count, key = min(bounds)
        return f"Its own required pod anti-affinity allows one of these pods per {key}", count

    def rejections(self, state: CycleState, sig: Signature, rows: IntArray) -> Rejections:
        """Each refused node under its first failing check (affinity, anti-affinity, existing anti-affinity);
        UNSCHEDULABLE_AND_UNRESOLVABLE when only affinity refused (evicting pods cannot add a match)."""
        s: _SigState = sig.read(DATA)
        affinity, anti, sym = self._failures(state, s, rows)
        counts: Counter[str] = Counter()
        counts[AFFINITY_MISMATCH] = int(affinity.sum())
        counts[ANTI_AFFINITY_MISMATCH] = int((anti & ~affinity).sum())
        counts[EXISTING_ANTI_AFFINITY_MISMATCH] = int((sym & ~affinity & ~anti).sum())
        counts = +counts
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if set(counts) <= {AFFINITY_MISMATCH} else Code.UNSCHEDULABLE
        return Rejections(counts, code)

    def interacts(self, state: CycleState, sig: Signature) -> bool:
        s: _SigState | None = sig.data.get(DATA.name)
        if s is None:
            return False
        if any(not domains_of(state.table, key).singleton for key in s.self_anti_keys):
            return True
        return bool(s.affinity_keys) and s.affinity_total <= 0 and s.self_affine

    # -- Score -------------------------------------------------------------------------------------
    def score(self, state: CycleState, sig: Signature, rows: IntArray) -> IntArray | None:
        s: _SigState | None = sig.data.get(DATA.name)
        if s is None or not s.score:
            return None
        raw = np.zeros(len(rows), dtype=np.int64)
        for key, arr in s.score.items():
            d = domains_of(state.table, key).of_node[rows]
            raw += np.where(d >= 0, arr[np.maximum(d, 0)], 0)
        low, high = int(raw.min()), int(raw.max())
        if high == low:
            return None
        return np.asarray((raw - low) * 100 // (high - low), dtype=np.int64)

    def score_interacts(self, s: _SigState | None) -> bool:
        return s is not None and s.self_scores

    # -- Reserve -----------------------------------------------------------------------------------
    def reserve(self, state: CycleState, sig: Signature, row: int, pods: tuple[Pod, ...]) -> tuple[int, Any]:
        for s in state.get(SIGS) or ():
            m = self._contribution(state, s, sig, row)
            if m:
                _add(state, s, m, row, len(pods))
        return len(pods), None

    def unreserve(self, state: CycleState, placement: Placement, token: Any) -> None:
        for s in state.get(SIGS) or ():
            m = self._contribution(state, s, placement.signature, placement.row)
            if m:
                _add(state, s, m, placement.row, -len(placement.pods))


class InterPodAffinityScore:
    """The Score half of :class:`InterPodAffinity`, registered among the Score plugins (its ``interacts``
    answers for scores: whether placing copies changes the signature's own scores)."""

    name = NAME
    weight = WEIGHT

    def __init__(self, plugin: InterPodAffinity) -> None:
        self.plugin = plugin

    def score(self, state: CycleState, sig: Signature, rows: IntArray) -> IntArray | None:
        return self.plugin.score(state, sig, rows)

    def interacts(self, state: CycleState, sig: Signature) -> bool:
        return self.plugin.score_interacts(sig.data.get(DATA.name))


PLUGIN = InterPodAffinity()
SCORE = InterPodAffinityScore(PLUGIN)


def queueing_hint(event: ClusterEvent) -> bool:
    """Events that may make a root this plugin rejected schedulable (kube's ``isSchedulableAfterPodChange``
    and ``isSchedulableAfterNodeChange``, without the target pod to compare with): a pod that uses a
    node added (it may match an affinity term), deleted or gone terminal (it may have been the
    anti-affinity match, or the holder of the repelling term), moved or relabelled; a node added or
    relabelled (a new domain); a namespace added or relabelled (``namespaceSelector``)."""
    if event.kind == "Pod":
        old, new = event.old, event.new
        was = old is not None and old.is_bound and not old.is_terminal
        now = new is not None and new.is_bound and not new.is_terminal
        if was != now:
            return True
        return was and (old.metadata.labels != new.metadata.labels or old.spec.node_name != new.spec.node_name)
    if event.kind == "Node":
        return event.action is Action.ADD or (event.action is Action.UPDATE
                                              and event.old.metadata.labels != event.new.metadata.labels)
    if event.kind == "Namespace":
        return event.action is Action.ADD or (event.action is Action.UPDATE
                                              and event.old.metadata.labels != event.new.metadata.labels)
    return False
