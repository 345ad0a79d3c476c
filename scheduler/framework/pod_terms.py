"""What inter-pod rules read of a pod, parsed once: label selectors, affinity terms and host ports.

kube-scheduler parses these in its framework, not in the plugins (``pkg/scheduler/framework/types.go``
``newAffinityTerm``, ``getNamespacesFromPodAffinityTerm``, ``PodInfo.RequiredAffinityTerms`` …;
``staging/src/k8s.io/kube-scheduler/framework/types.go`` ``AffinityTerm.Matches``, ``HostPortInfo``),
because the same parsed terms serve InterPodAffinity's Filter and Score, the NodeInfo's
"pods with affinity" lists and the preemption simulation. So do we: the values here are frozen and
hashable, so a signature can be keyed on them and a snapshot's pod index can hold them.

Rules (v1.37, each cited at its function):

* a **nil** label selector matches no pod, an **empty** ``{}`` one every pod;
* an affinity term's namespaces are ``namespaces`` ∪ those matching ``namespaceSelector``; with both
  unset, the pod's own namespace; ``namespaceSelector: {}`` means every namespace;
* ``matchLabelKeys`` / ``mismatchLabelKeys`` of an affinity term are merged into its selector as
  ``key In [value]`` / ``key NotIn [value]`` for each key the pod has — kube-apiserver does this when
  the pod is created (``pkg/registry/core/pod/strategy.go`` ``mutatePodAffinity``), so a pod read from
  the API already has them merged and merging again only repeats a requirement; a pod read from a
  hand-written manifest (``simulate``) gets them merged here;
* host ports: every container's, and those of restartable ("sidecar") init containers, with
  ``hostPort > 0`` (``pkg/scheduler/util/utils.go`` ``GetHostPorts``); ``hostIP`` "" means ``0.0.0.0``,
  protocol "" means ``TCP`` (``HostPortInfo.sanitize``). A ``hostNetwork`` pod's ports default
  ``hostPort`` to ``containerPort`` (API defaulting, ``pkg/apis/core/v1/defaults.go``, for Pods since
  v1.28), which a manifest that never went through the API server may not show.

Pure: no plugin state, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from scheduler.framework.selectors import requirement_matches
from scheduler.model.pod import ASKS_PORTS, LabelSelector, LabelSelectorRequirement, Pod, PodAffinityTerm

LABEL_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})
"""``metav1.LabelSelectorOperator`` values; any other operator makes a selector match nothing (the API
server refuses it)."""

WILDCARD_IP = "0.0.0.0"
"""``HostPortInfo``'s default and wildcard host IP (``DefaultBindAllHostIP``)."""
DEFAULT_PROTOCOL = "TCP"


@dataclass(frozen=True, slots=True)
class Selector:
    """A parsed, non-nil ``metav1.LabelSelector``: ``match_labels`` pairs and ``expressions``, ANDed.

    An empty selector matches every label set. ``valid`` is False when an expression has an unknown
    operator: the selector then matches nothing.
    """

    match_labels: tuple[tuple[str, str], ...] = ()
    expressions: tuple[LabelSelectorRequirement, ...] = ()
    valid: bool = True

    @property
    def empty(self) -> bool:
        """No requirement at all (``{}``): ``labels.Everything()``."""
        return self.valid and not self.match_labels and not self.expressions

    @property
    def keys(self) -> frozenset[str]:
        """The label keys the selector reads: two label sets equal on these match it alike."""
        return frozenset(k for k, _ in self.match_labels) | frozenset(e.key for e in self.expressions)

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy every requirement (``labels.Selector.Matches``)."""
        if not self.valid:
            return False
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        return all(requirement_matches(e, labels) for e in self.expressions)

    def anchors(self) -> tuple[tuple[str, str | None], ...] | None:
        """Label pairs one of which a matching label set must have, for index lookups: ``((k, v),)`` for a
        ``matchLabels`` pair, ``((k, v1), (k, v2)…)`` for an ``In`` expression, ``((k, None),)`` for an
        ``Exists`` one (the key with any value); None when no requirement narrows the candidates."""
        if self.match_labels:
            return (self.match_labels[0],)
        for e in self.expressions:
            if e.operator == "In":
                return tuple((e.key, v) for v in e.values)
        for e in self.expressions:
            if e.operator == "Exists":
                return ((e.key, None),)
        return None

    def extended(self, extra: Iterable[LabelSelectorRequirement]) -> Selector:
        """This selector with ``extra`` requirements ANDed."""
        return Selector(self.match_labels, (*self.expressions, *extra), self.valid)


EVERYTHING = Selector()


def selector_of(raw: LabelSelector | None) -> Selector | None:
    """Parse a ``labelSelector``; None (nil) stays None, which callers treat as "matches nothing"
    (``metav1.LabelSelectorAsSelector``: nil → ``labels.Nothing()``, ``{}`` → ``labels.Everything()``)."""
    if raw is None:
        return None
    valid = all(e.operator in LABEL_OPERATORS for e in raw.match_expressions)
    return Selector(tuple(sorted(raw.match_labels.items())), tuple(raw.match_expressions), valid)


def selector_keys(raw: LabelSelector | None) -> frozenset[str]:
    """The label keys a raw selector reads (for signature keys, before parsing)."""
    if raw is None:
        return frozenset()
    return frozenset(raw.match_labels) | frozenset(e.key for e in raw.match_expressions)


ALL_NAMESPACES: frozenset[str] | None = None
"""A namespace scope that is every namespace (``namespaceSelector: {}``)."""


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A parsed ``PodAffinityTerm`` in its owner's context (``framework.AffinityTerm``).

    ``selector``: the merged label selector (None: matches no pod). ``namespaces``: names listed or
    defaulted. ``namespace_selector``: None when unset (matches no namespace), else the parsed selector.
    ``topology_key``: the node label whose values are the term's domains.
    """

    selector: Selector | None
    namespaces: frozenset[str]
    namespace_selector: Selector | None
    topology_key: str

    def matches(self, namespace: str, labels: Mapping[str, str], namespace_labels: Mapping[str, str]) -> bool:
        """Whether a pod in ``namespace`` with ``labels`` matches (``AffinityTerm.Matches``):
        ``(namespace listed or its labels match namespaceSelector) and labelSelector matches``."""
        if self.selector is None:
            return False
        in_scope = namespace in self.namespaces or (
            self.namespace_selector is not None and self.namespace_selector.matches(namespace_labels))
        return in_scope and self.selector.matches(labels)

    def scope(self, namespaces: Mapping[str, Mapping[str, str]]) -> frozenset[str] | None:
        """The namespaces this term reaches given the known ``namespaces`` (name → labels): the listed
        ones plus those whose labels match ``namespaceSelector``; None (every namespace) for
        ``namespaceSelector: {}``. kube's PreFilter merges the same way
        (``interpodaffinity/plugin.go`` ``mergeAffinityTermNamespacesIfNotEmpty``): a namespace the
        scheduler does not know cannot match a non-empty selector."""
        sel = self.namespace_selector
        if sel is None:
            return self.namespaces
        if sel.empty:
            return ALL_NAMESPACES
        return self.namespaces | frozenset(n for n, labels in namespaces.items() if sel.matches(labels))


@dataclass(frozen=True, slots=True)
class WeightedTerm:
    """A preferred term and its weight (``WeightedAffinityTerm``)."""

    weight: int
    term: AffinityTerm


@dataclass(frozen=True, slots=True)
class PodTerms:
    """A pod's parsed pod affinity and anti-affinity terms."""

    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedTerm, ...] = ()
    preferred_anti: tuple[WeightedTerm, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.required_affinity or self.required_anti or self.preferred_affinity or self.preferred_anti)

    def all_terms(self) -> tuple[AffinityTerm, ...]:
        """Every term, required and preferred."""
        return (*self.required_affinity, *self.required_anti, *(w.term for w in self.preferred_affinity),
                *(w.term for w in self.preferred_anti))

    @property
    def keys(self) -> frozenset[str]:
        """The label keys the terms' selectors read."""
        out: frozenset[str] = frozenset()
        for term in self.all_terms():
            if term.selector is not None:
                out |= term.selector.keys
        return out


NO_TERMS = PodTerms()


def parse_term(pod: Pod, raw: PodAffinityTerm) -> AffinityTerm:
    """One term of ``pod`` parsed in its context: ``matchLabelKeys`` / ``mismatchLabelKeys`` merged from the
    pod's labels (only when ``labelSelector`` is set, as kube-apiserver does), namespaces defaulted to the
    pod's own when neither ``namespaces`` nor ``namespaceSelector`` is set (``getNamespacesFromPodAffinityTerm``)."""
    selector = selector_of(raw.label_selector)
    labels = pod.metadata.labels
    if selector is not None and (raw.match_label_keys or raw.mismatch_label_keys):
        extra = [LabelSelectorRequirement(key=k, operator="In", values=(labels[k],))
                 for k in raw.match_label_keys if k in labels]
        extra += [LabelSelectorRequirement(key=k, operator="NotIn", values=(labels[k],))
                  for k in raw.mismatch_label_keys if k in labels]
        selector = selector.extended(extra)
    namespaces = frozenset(raw.namespaces)
    if not raw.namespaces and raw.namespace_selector is None:
        namespaces = frozenset((pod.metadata.namespace,))
    return AffinityTerm(selector, namespaces, selector_of(raw.namespace_selector), raw.topology_key)


def pod_terms(pod: Pod) -> PodTerms:
    """Every pod affinity / anti-affinity term of ``pod``, parsed (:data:`NO_TERMS` when it has none)."""
    affinity = pod.spec.affinity
    if affinity is None or (affinity.pod_affinity is None and affinity.pod_anti_affinity is None):
        return NO_TERMS
    pa, anti = affinity.pod_affinity, affinity.pod_anti_affinity
    return PodTerms(
        required_affinity=tuple(parse_term(pod, t) for t in (
            pa.required_during_scheduling_ignored_during_execution if pa else ())),
        required_anti=tuple(parse_term(pod, t) for t in (
            anti.required_during_scheduling_ignored_during_execution if anti else ())),
        preferred_affinity=tuple(WeightedTerm(w.weight, parse_term(pod, w.pod_affinity_term)) for w in (
            pa.preferred_during_scheduling_ignored_during_execution if pa else ())),
        preferred_anti=tuple(WeightedTerm(w.weight, parse_term(pod, w.pod_affinity_term)) for w in (
            anti.preferred_during_scheduling_ignored_during_execution if anti else ())),
    )


@dataclass(frozen=True, slots=True)
class HostPort:
    """One host port a pod takes on its node, sanitized: ``ip`` ("" → ``0.0.0.0``), ``protocol``
    ("" → ``TCP``), ``port`` > 0."""

    ip: str
    protocol: str
    port: int

    def conflicts(self, other: HostPort) -> bool:
        """Whether two host ports cannot share a node (``HostPortInfo.CheckConflict``): same protocol and
        port, and the same IP or either one the ``0.0.0.0`` wildcard. IPs compare as strings."""
        return (self.port == other.port and self.protocol == other.protocol
                and (self.ip == other.ip or WILDCARD_IP in (self.ip, other.ip)))


def host_ports(pod: Pod) -> tuple[HostPort, ...]:
    """The host ports ``pod`` takes (``GetHostPorts``): app containers' and sidecar init containers'
    ports with ``hostPort > 0``; for a ``hostNetwork`` pod an unset ``hostPort`` is its ``containerPort``."""
    if ASKS_PORTS not in pod.asks:  # no container declares a port
        return ()
    spec = pod.spec
    out: list[HostPort] = []
    containers = (*spec.containers, *(c for c in spec.init_containers if c.restart_policy == "Always"))
    for container in containers:
        for port in container.ports:
            number = port.host_port or 0
            if not number and spec.host_network:
                number = port.container_port
            if number > 0:
                out.append(HostPort(port.host_ip or WILDCARD_IP, port.protocol or DEFAULT_PROTOCOL, number))
    return tuple(dict.fromkeys(out))


def ports_conflict(wanted: Iterable[HostPort], used: Iterable[HostPort]) -> bool:
    """Whether any of ``wanted`` conflicts with any of ``used``."""
    used = tuple(used)
    return any(w.conflicts(u) for w in wanted for u in used)
