"""The pods that use nodes, indexed by what inter-pod rules ask of them: labels, terms, host ports.

InterPodAffinity, PodTopologySpread and NodePorts ask questions about *every* pod on *every* node:
"which pods in these namespaces match this selector", "which running pods have anti-affinity terms
that could repel this one", "who holds TCP 29500 where". kube-scheduler answers them by walking all
NodeInfos per pod (``interpodaffinity/filtering.go`` ``PreFilter``); at 5,000 nodes that walk is the
whole time budget of a gang. :class:`PodIndex` keeps inverted indexes instead — pods by
``(namespace, label key, value)``, by ``(namespace, key)``, by namespace; pods with affinity terms by a
label pair their selectors require; pods with host ports by ``(protocol, port)`` — so a question
costs the number of pods that can match, not the number of nodes.

Keeping it cheap across cycles:

* the live cache owns one index and updates it per pod event (:meth:`IndexView.advanced` moves the
  shared index forward in place, O(labels) per pod);
* a snapshot holds an :class:`IndexView`: the index at a version, plus an *overlay* of pods added or
  removed on top (``Snapshot.without`` for preemption's what-ifs: the shared index is not touched, so
  the snapshot it came from stays valid). A view whose index moved on since is *stale*; the snapshot
  then rebuilds its own index from its NodeInfos (correct, O(pods)), so a stale view is never read.

Keys are node *names*, not rows: a new node table does not invalidate the index. Entries hold what
the rules read: namespace, labels, whether terminating (PodTopologySpread does not count those),
parsed affinity terms and host ports. Pure data: no plugin logic.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from scheduler.framework.pod_terms import HostPort, PodTerms, Selector, host_ports, pod_terms
from scheduler.model.pod import Pod

OVERLAY_MAX = 256
"""Entries *added or changed* in an overlay before the view is folded into a fresh index of its own
(O(pods) once): queries walk the overlay's entries, so it stays small. Removals cost a query only a
lookup, so a view may carry more of them — up to half the index (:meth:`IndexView.branched`): a
preemption what-if removes every candidate of its window (hundreds of pods) and must not rebuild the
index of the whole cluster each time."""


@dataclass(frozen=True, slots=True, eq=False)
class PodEntry:
    """One pod using node ``node``, as the inter-pod rules read it."""

    key: str
    node: str
    namespace: str
    labels: Mapping[str, str]
    terminating: bool
    terms: PodTerms
    ports: tuple[HostPort, ...]


def pod_entry(pod: Pod, node: str | None = None) -> PodEntry:
    """The entry of ``pod`` on ``node`` (default: its ``spec.nodeName``)."""
    return PodEntry(pod.key, node or pod.spec.node_name, pod.metadata.namespace, pod.metadata.labels,
                    pod.is_terminating, pod_terms(pod), host_ports(pod))


Bucket = dict[str, PodEntry]
K = TypeVar("K", bound=Hashable)


def _term_anchors(terms: PodTerms) -> set[tuple[str, str | None]] | None:
    """Label pairs (``(k, None)``: key only) one of which a pod must have to match any of ``terms``;
    None when some term's selector is not narrowed by any (it may match pods without a common label)."""
    out: set[tuple[str, str | None]] = set()
    for term in terms.all_terms():
        if term.selector is None:
            continue  # matches nothing
        anchors = term.selector.anchors()
        if anchors is None:
            return None
        out.update(anchors)
    return out


class PodIndex:
    """The mutable index (see the module docstring); ``version`` counts its changes."""

    def __init__(self, entries: Iterable[PodEntry] = ()) -> None:
        self.version = 0
        self.pods: Bucket = {}
        self.by_label: dict[tuple[str, str, str], Bucket] = {}
        self.by_key: dict[tuple[str, str], Bucket] = {}
        self.by_namespace: dict[str, Bucket] = {}
        self.with_terms: Bucket = {}
        """Pods with any pod affinity / anti-affinity term."""
        self.terms_by_anchor: dict[tuple[str, str | None], Bucket] = {}
        self.terms_unanchored: Bucket = {}
        self.term_keys: Counter[str] = Counter()
        """Label keys read by the terms of the pods here, counted per pod."""
        self.port_users: dict[tuple[str, int], Bucket] = {}
        for entry in entries:
            self._add(entry)

    def _add(self, e: PodEntry) -> None:
        self.pods[e.key] = e
        self.by_namespace.setdefault(e.namespace, {})[e.key] = e
        for k, v in e.labels.items():
            self.by_label.setdefault((e.namespace, k, v), {})[e.key] = e
            self.by_key.setdefault((e.namespace, k), {})[e.key] = e
        if e.terms:
            self.with_terms[e.key] = e
            anchors = _term_anchors(e.terms)
            if anchors is None:
                self.terms_unanchored[e.key] = e
            else:
                for anchor in anchors:
                    self.terms_by_anchor.setdefault(anchor, {})[e.key] = e
            self.term_keys.update(e.terms.keys)
        for port in e.ports:
            self.port_users.setdefault((port.protocol, port.port), {})[e.key] = e

    def _remove(self, key: str) -> None:
        e = self.pods.pop(key, None)
        if e is None:
            return
        _drop(self.by_namespace, e.namespace, key)
        for k, v in e.labels.items():
            _drop(self.by_label, (e.namespace, k, v), key)
            _drop(self.by_key, (e.namespace, k), key)
        if e.terms:
            self.with_terms.pop(key, None)
            self.terms_unanchored.pop(key, None)
            for anchor in _term_anchors(e.terms) or ():
                _drop(self.terms_by_anchor, anchor, key)
            self.term_keys.subtract(e.terms.keys)
            self.term_keys += Counter()  # drop keys no pod reads any more
        for port in e.ports:
            _drop(self.port_users, (port.protocol, port.port), key)

    def apply(self, changes: Mapping[str, PodEntry | None]) -> None:
        """Apply ``changes`` (pod key → its entry now, None: gone) in place and bump the version."""
        for key, entry in changes.items():
            self._remove(key)
            if entry is not None:
                self._add(entry)
        self.version += 1


def _drop(table: dict[K, Bucket], key: K, pod: str) -> None:
    bucket = table.get(key)
    if bucket is not None:
        bucket.pop(pod, None)
        if not bucket:
            del table[key]


@dataclass(frozen=True, eq=False)
class IndexView:
    """A snapshot's index: ``index`` as of ``version``, with ``overlay`` (pod key → entry, None: removed)
    on top. Queries return effective entries; they must not be asked of a stale view (:attr:`valid`)."""

    index: PodIndex
    version: int
    overlay: Mapping[str, PodEntry | None] = field(default_factory=dict)

    @classmethod
    def build(cls, entries: Iterable[PodEntry]) -> IndexView:
        """A view of a fresh index holding ``entries``."""
        index = PodIndex(entries)
        return cls(index, index.version)

    @property
    def valid(self) -> bool:
        """The shared index has not moved on since this view was made."""
        return self.index.version == self.version

    def entries(self) -> Iterator[PodEntry]:
        """Every effective entry."""
        overlay = self.overlay
        for key, e in self.index.pods.items():
            if key not in overlay:
                yield e
        yield from self._overlay_entries()

    def advanced(self, changes: Mapping[str, PodEntry | None]) -> IndexView:
        """The view after ``changes``: the shared index moved forward in place when this view is its
        current version without overlay (the owner's chain: the cache, a benchmark's assumes), which
        makes this view stale; otherwise :meth:`branched`."""
        if not changes:
            return self
        if self.valid and not self.overlay:
            self.index.apply(changes)
            return IndexView(self.index, self.index.version)
        return self.branched(changes)

    def branched(self, changes: Mapping[str, PodEntry | None]) -> IndexView:
        """The view after ``changes`` as an overlay; the shared index is untouched (this view stays valid).
        Folded into a fresh index once the overlay adds more than :data:`OVERLAY_MAX` entries, or removes more
        than half the index."""
        if not changes:
            return self
        overlay = {**self.overlay, **changes}
        added = sum(1 for e in overlay.values() if e is not None)
        if added > OVERLAY_MAX or len(overlay) - added > max(OVERLAY_MAX, len(self.index.pods) // 2):
            base = {k: e for k, e in self.index.pods.items() if k not in overlay}
            base.update({k: e for k, e in overlay.items() if e is not None})
            return IndexView.build(base.values())
        return IndexView(self.index, self.version, overlay)

    # -- queries -----------------------------------------------------------------------------------
    def _effective(self, buckets: Iterable[Bucket], extra: Iterable[PodEntry]) -> list[PodEntry]:
        overlay = self.overlay
        seen: dict[str, PodEntry] = {}
        for bucket in buckets:
            for key, e in bucket.items():
                if key not in overlay:
                    seen[key] = e
        for e in extra:
            seen[e.key] = e
        return list(seen.values())

    def _overlay_entries(self) -> Iterator[PodEntry]:
        return (e for e in self.overlay.values() if e is not None)

    def matching(self, namespaces: frozenset[str] | None, selector: Selector | None) -> list[PodEntry]:
        """Entries in ``namespaces`` (None: any namespace) whose labels match ``selector`` (None matches none),
        terminating pods included."""
        if selector is None or not selector.valid:
            return []
        index = self.index
        spaces: Iterable[str] = index.by_namespace.keys() if namespaces is None else namespaces
        anchors = selector.anchors()
        buckets: list[Bucket] = []
        for ns in spaces:
            if anchors is None:
                bucket = index.by_namespace.get(ns)
                if bucket:
                    buckets.append(bucket)
                continue
            for k, v in anchors:
                bucket = index.by_key.get((ns, k)) if v is None else index.by_label.get((ns, k, v))
                if bucket:
                    buckets.append(bucket)
        extra = (e for e in self._overlay_entries() if namespaces is None or e.namespace in namespaces)
        return [e for e in self._effective(buckets, extra)
                if (namespaces is None or e.namespace in namespaces) and selector.matches(e.labels)]

    def term_holders(self, labels: Mapping[str, str]) -> list[PodEntry]:
        """Entries with affinity terms that may match a pod with ``labels`` (a superset: callers check the
        terms), found through the label pairs the terms' selectors require."""
        index = self.index
        if not index.with_terms and not any(e.terms for e in self._overlay_entries()):
            return []
        buckets: list[Bucket] = [index.terms_unanchored]
        for k, v in labels.items():
            for anchor in ((k, v), (k, None)):
                bucket = index.terms_by_anchor.get(anchor)
                if bucket:
                    buckets.append(bucket)
        return self._effective(buckets, (e for e in self._overlay_entries() if e.terms))

    def has_terms(self) -> bool:
        """Whether any pod here has an affinity or anti-affinity term."""
        if self.index.with_terms:
            return True
        return bool(self.overlay) and any(e.terms for e in self._overlay_entries())

    def term_keys(self) -> frozenset[str]:
        """Label keys some pod's terms here read (a superset when the overlay removed pods)."""
        keys = frozenset(self.index.term_keys)
        for e in self._overlay_entries():
            keys |= e.terms.keys
        return keys

    def port_users(self, protocol: str, port: int) -> list[PodEntry]:
        """Entries holding host port ``port``/``protocol`` on some IP."""
        bucket = self.index.port_users.get((protocol, port))
        extra = (e for e in self._overlay_entries() if any(p.port == port and p.protocol == protocol for p in e.ports))
        return self._effective([bucket] if bucket else [], extra)


def entries_of(pods: Iterable[tuple[str, Pod]]) -> list[PodEntry]:
    """Entries of (node name, pod) pairs."""
    return [pod_entry(pod, node) for node, pod in pods]

