"""What a pod asks for that no plugin honours: one line per field, so nothing is dropped silently.

``simulate`` prints a warning per pod (and lists them in its JSON), ``run`` writes a Warning Event on
the pod once. The rules are one table, :data:`RULES`, checked field by field against what the Pod
model reads (``scheduler.model.pod``); each rule names the field path, says what the scheduler does
instead, and why. Every field the model carries is honoured by a plugin —
nodeSelector and node affinity (required and preferred), tolerations (NoSchedule / NoExecute filter,
PreferNoSchedule score), pod affinity and anti-affinity (required and preferred, namespaces,
namespaceSelector, matchLabelKeys, mismatchLabelKeys), topology spread constraints (every field),
host ports (hostIP, protocol, sidecars, hostNetwork), requests and overhead, resource claims,
scheduling gates, priority — so what is left are values we do not understand (the API server
refuses them, but a hand-written manifest given to ``simulate`` has not met it) and what a
snapshot cannot tell (a ``namespaceSelector`` with no Namespace objects loaded, a ``priorityClassName``
with no PriorityClass).

Volumes (``spec.volumes``) are honoured by VolumeBinding, VolumeZone, VolumeRestrictions and
NodeVolumeLimits; what their claims ask for beyond that (:func:`~scheduler.solver.plugins.volume_claims.not_honoured`)
is one more rule, read against the storage view when there is one.

A PodGroup's or CompositePodGroup's ``priorityClassName`` is judged the same way, by its own rule
(:func:`group_priority_class`), outside :data:`RULES` (which take a pod).

Pure: a pod (or a group) in, the findings out.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from scheduler.framework.pod_terms import LABEL_OPERATORS
from scheduler.framework.storage_view import StorageView
from scheduler.model.pod import LabelSelector, Pod, PodAffinity
from scheduler.model.scheduling import CompositePodGroup, PodGroup
from scheduler.model.strict import CUTOFF
from scheduler.solver.plugins import volume_claims

WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
INCLUSION_POLICIES = ("Honor", "Ignore")


@dataclass(frozen=True, slots=True)
class Unhonoured:
    """One field of a pod that is not honoured: its ``field`` path and what happens instead."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


@dataclass(frozen=True, slots=True)
class Context:
    """What the rules need beyond the pod: whether the scheduler knows the cluster's Namespaces (``run``
    watches them; a ``simulate`` snapshot may hold none), the storage view the pod's claims are read
    from (None: no storage object known), and the names of the PriorityClasses known (None: not checked —
    in a live cluster the priority admission plugin has set every pod's ``spec.priority`` already)."""

    namespaces_known: bool = True
    storage: StorageView | None = None
    priority_classes: frozenset[str] | None = None


Rule = Callable[[Pod, Context], Iterator[Unhonoured]]


def _selector_operators(path: str, selector: LabelSelector | None) -> Iterator[Unhonoured]:
    for j, e in enumerate(selector.match_expressions if selector is not None else ()):
        if e.operator not in LABEL_OPERATORS:
            yield Unhonoured(f"{path}.matchExpressions[{j}].operator",
                             f"{e.operator!r} is not In, NotIn, Exists or DoesNotExist: the selector matches no pod")


def _affinity_terms(pod: Pod) -> Iterator[tuple[str, PodAffinity]]:
    affinity = pod.spec.affinity
    if affinity is None:
        return
    for name, part in (("podAffinity", affinity.pod_affinity), ("podAntiAffinity", affinity.pod_anti_affinity)):
        if part is not None:
            yield f"spec.affinity.{name}", part


def pod_affinity_selectors(pod: Pod, context: Context) -> Iterator[Unhonoured]:
    """Unknown label selector operators in pod (anti-)affinity terms; a ``namespaceSelector`` that cannot
    be resolved because no Namespace is known."""
    for path, part in _affinity_terms(pod):
        terms = [(f"{path}.requiredDuringSchedulingIgnoredDuringExecution[{i}]", t)
                 for i, t in enumerate(part.required_during_scheduling_ignored_during_execution)]
        terms += [(f"{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}].podAffinityTerm",
                   w.pod_affinity_term)
                  for i, w in enumerate(part.preferred_during_scheduling_ignored_during_execution)]
        for where, term in terms:
            yield from _selector_operators(f"{where}.labelSelector", term.label_selector)
            yield from _selector_operators(f"{where}.namespaceSelector", term.namespace_selector)
            ns = term.namespace_selector
            if not context.namespaces_known and ns is not None and (ns.match_labels or ns.match_expressions):
                yield Unhonoured(f"{where}.namespaceSelector",
                                 "no Namespace objects are known, so it matches no namespace (add namespaces "
                                 "to the snapshot: kubectl get namespaces -o yaml)")


def spread_values(pod: Pod, context: Context) -> Iterator[Unhonoured]:
    """Topology spread constraints with a ``whenUnsatisfiable`` or inclusion policy we do not know, or an
    unknown selector operator."""
    for i, c in enumerate(pod.spec.topology_spread_constraints):
        path = f"spec.topologySpreadConstraints[{i}]"
        if c.when_unsatisfiable not in WHEN_UNSATISFIABLE:
            yield Unhonoured(f"{path}.whenUnsatisfiable",
                             f"{c.when_unsatisfiable!r} is neither DoNotSchedule nor ScheduleAnyway: "
                             "the constraint is ignored")
        for name, value in (("nodeAffinityPolicy", c.node_affinity_policy), ("nodeTaintsPolicy", c.node_taints_policy)):
            if value is not None and value not in INCLUSION_POLICIES:
                yield Unhonoured(f"{path}.{name}", f"{value!r} is neither Honor nor Ignore: treated as Ignore")
        yield from _selector_operators(f"{path}.labelSelector", c.label_selector)


def volume_claim_fields(pod: Pod, context: Context) -> Iterator[Unhonoured]:
    """What the pod's PersistentVolumeClaims ask for that the volume plugins do not honour."""
    if context.storage is not None and pod.spec.volumes:
        for path, message in volume_claims.not_honoured(context.storage, pod):
            yield Unhonoured(path, message)


def priority_class(pod: Pod, context: Context) -> Iterator[Unhonoured]:
    """A ``priorityClassName`` that names no known PriorityClass on a pod without ``spec.priority``: the
    priority admission plugin refuses such a pod (``plugin/pkg/admission/priority``), so only a hand-written
    manifest has one; it is given the default priority."""
    yield from _unknown_class(pod.spec.priority_class_name, pod.spec.priority, context,
                              "the pod has the default priority (the globalDefault class's value, else 0)")


def group_priority_class(group: PodGroup | CompositePodGroup, context: Context) -> Iterator[Unhonoured]:
    """The same for a PodGroup or CompositePodGroup: admission fills a group's ``spec.priority`` from its
    ``priorityClassName`` and refuses an unknown class, so only a hand-written manifest has one; such a group has no
    priority of its own, and its tree counts at its pods' (:mod:`scheduler.groups.priority`)."""
    yield from _unknown_class(group.spec.priority_class_name, group.spec.priority, context,
                              "the group has no priority of its own and its tree counts at its pods' priority")


def _unknown_class(name: str | None, priority: int | None, context: Context, instead: str) -> Iterator[Unhonoured]:
    """``spec.priorityClassName`` ``name`` naming no PriorityClass of ``context`` while ``priority`` is unset, with
    the closest known name and what holds ``instead``."""
    known = context.priority_classes
    if known is not None and priority is None and name and name not in known:
        yield Unhonoured("spec.priorityClassName",
                         f"no PriorityClass {name!r} is known{_close_class(name, known)}, so {instead}; add the class "
                         "to the snapshot (kubectl get priorityclasses -o yaml)")


def _close_class(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'high'?)`` when a known class name is close to ``name``, else empty."""
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=CUTOFF)
    return f" (did you mean {close[0]!r}?)" if close else ""


RULES: tuple[Rule, ...] = (pod_affinity_selectors, spread_values, volume_claim_fields, priority_class)
"""Every rule, in the order their findings are listed."""


def unhonoured(pod: Pod, context: Context | None = None) -> tuple[Unhonoured, ...]:
    """The fields ``pod`` sets that no plugin honours, in :data:`RULES` order (empty for almost every pod)."""
    ctx = context or Context()
    return tuple(finding for rule in RULES for finding in rule(pod, ctx))
