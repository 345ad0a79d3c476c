"""What the inter-pod plugins share (kube's ``plugins/helper``): signature labels, placed pods, domains.

InterPodAffinity, PodTopologySpread and NodePorts judge a signature against the pods already on the
nodes *and* the pods the plan placed before. Three things are common to them:

* **Which labels a signature is keyed on.** Pods of one template differ in labels nobody reads
  (``batch.kubernetes.io/job-completion-index``, ``statefulset.kubernetes.io/pod-name``); keying
  signatures on all labels would split an 8-pod gang into 8 signatures and lose the vectorised
  search. :func:`signature_labels` keeps only the labels some selector of this solve reads — the
  running pods' affinity terms, and the pending pods' terms, spread selectors and
  ``matchLabelKeys`` — so two pods with equal projections match every selector alike.
* **A placed pod as an index entry.** :func:`placed_entry` is the representative pod of a placement's
  signature on the placement's node (its :func:`signature_entry` moved there), as
  :mod:`scheduler.framework.pod_index` would hold it; all pods of one placement share the signature,
  so a plugin matches it once and counts ``len(pods)``.
* **Domains.** :func:`domains_of` gives a topology key's domain id per row (−1: the node lacks the
  label) and whether every domain is a single node (``kubernetes.io/hostname``), which is what makes
  a rule per node rather than between nodes.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from scheduler.framework.cycle_state import CycleState, StateKey
from scheduler.framework.interface import Signature
from scheduler.framework.node_table import NodeTable
from scheduler.framework.pod_index import PodEntry, pod_entry
from scheduler.framework.pod_terms import selector_keys
from scheduler.model.pod import Pod

NAME = "InterPod"
LABEL_KEYS: StateKey[frozenset[str]] = StateKey(f"{NAME}/label-keys")
ENTRIES: StateKey[dict[tuple[int, int], PodEntry]] = StateKey(f"{NAME}/entries")


def _pending_keys(pod: Pod) -> frozenset[str]:
    """Label keys the selectors of ``pod`` read: its pod (anti-)affinity terms (``matchLabelKeys`` /
    ``mismatchLabelKeys`` included) and its topology spread constraints."""
    keys: set[str] = set()
    affinity = pod.spec.affinity
    for part in (affinity.pod_affinity, affinity.pod_anti_affinity) if affinity is not None else ():
        if part is None:
            continue
        terms = (*part.required_during_scheduling_ignored_during_execution,
                 *(w.pod_affinity_term for w in part.preferred_during_scheduling_ignored_during_execution))
        for term in terms:
            keys |= selector_keys(term.label_selector) | set(term.match_label_keys) | set(term.mismatch_label_keys)
    for constraint in pod.spec.topology_spread_constraints:
        keys |= selector_keys(constraint.label_selector) | set(constraint.match_label_keys)
    return frozenset(keys)


def label_keys(state: CycleState) -> frozenset[str]:
    """The label keys any selector of this solve reads (computed once per solve)."""
    keys = state.get(LABEL_KEYS)
    if keys is None:
        found: set[str] = set(state.snapshot.pod_index.term_keys())
        for pod in state.pending:
            found |= _pending_keys(pod)
        keys = frozenset(found)
        state.write(LABEL_KEYS, keys)
    return keys


def signature_labels(state: CycleState, pod: Pod) -> Hashable:
    """``pod``'s namespace and the labels of it that some selector of this solve reads, sorted."""
    labels = pod.metadata.labels
    keys = label_keys(state)
    return pod.metadata.namespace, tuple(sorted((k, labels[k]) for k in keys & labels.keys()))


def signature_entry(state: CycleState, sig: Signature) -> PodEntry:
    """The index entry of ``sig``'s representative pod, on no node yet (memoised per signature): its
    parsed terms and ports, which every copy of the signature shares."""
    memo = state.setdefault(ENTRIES, dict)
    key = (id(sig), -1)
    hit = memo.get(key)
    if hit is None:
        hit = pod_entry(sig.pods[0], "")
        memo[key] = hit
    return hit


def placed_entry(state: CycleState, sig: Signature, row: int) -> PodEntry:
    """The index entry of a copy of ``sig`` placed on ``row`` (memoised per signature and row): the
    :func:`signature_entry` on that node, so the representative's terms are parsed once per signature."""
    memo = state.get(ENTRIES)
    key = (id(sig), row)
    hit = memo.get(key) if memo is not None else None
    if hit is None:
        hit = replace(signature_entry(state, sig), node=state.table.nodes[row].name)
        state.read(ENTRIES)[key] = hit
    return hit


@dataclass(frozen=True, slots=True)
class DomainIds:
    """One topology key over the table: ``of_node[row]`` is the row's domain id (−1: no such label),
    ``count`` the number of domains, ``singleton`` whether each domain is one node."""

    key: str
    of_node: npt.NDArray[np.int32]
    count: int
    singleton: bool


def domains_of(table: NodeTable, key: str) -> DomainIds:
    """The :class:`DomainIds` of ``key`` (memoised on the table)."""
    def compute() -> DomainIds:
        doms = table.domains(key)
        labelled = doms.of_node[doms.of_node >= 0]
        per = np.bincount(labelled, minlength=len(doms.values)) if labelled.size else np.zeros(0, np.int64)
        return DomainIds(key, doms.of_node, len(doms.values), bool(per.size == 0 or per.max() <= 1))
    return table.memo((NAME, "domains", key), compute)
