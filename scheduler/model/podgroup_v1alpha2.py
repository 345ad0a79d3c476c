"""The Kubernetes 1.36 PodGroup (``scheduling.k8s.io/v1alpha2``) ↔ the one internal PodGroup model.

Everything above the API boundary — cache, group trees, solver, status writer — sees one PodGroup
model, :class:`~scheduler.model.scheduling.PodGroup`, in the v1.37 (``v1beta1``) shape. A v1.36
PodGroup is converted into that shape once, where it is read (the live informer, ``simulate``'s
loader: :func:`decode`), and the conditions written back are converted to the v1.36 names at the
one place they are written (:func:`encode_conditions`). The converted object keeps
``apiVersion: scheduling.k8s.io/v1alpha2``, so writes and Events name the version the server serves.

The differences (the ``scheduling.k8s.io`` v1alpha2 → v1beta1 API change of KEP-5832, and the
v1.36 OpenAPI shipped in ``kubernetes-validate``: ``v1.36.0-local-strict/podgroupspec-scheduling-
v1alpha2.json``, ``podgroupstatus-…``, ``workloadpodgrouptemplatereference-…``):

=====================================================  ==================================================
v1alpha2 (1.36)                                        internal / v1beta1 (1.37)
=====================================================  ==================================================
``spec.podGroupTemplateRef.workload.{workloadName,     ``spec.workloadRef.{workloadName, templateName}``
podGroupTemplateName}``
``spec.disruptionMode``: ``"Pod"`` (default) /          ``{single: {}}`` / ``{all: {}}``
``"PodGroup"`` (a string)
condition ``PodGroupScheduled``                         ``PodGroupInitiallyScheduled``
``gang.minCount`` immutable                             mutable
no ``parentCompositePodGroupName`` (no composites),     both exist
no ``preemptionPolicy``
=====================================================  ==================================================

The other v1alpha2 spec fields (``schedulingPolicy``, ``schedulingConstraints.topology[].key``,
``resourceClaims``, ``priorityClassName``, ``priority``) and ``status.resourceClaimStatuses`` have
the v1beta1 names and shapes and are copied as they are. A field v1alpha2 does not define, or a
``disruptionMode`` string other than ``Pod`` / ``PodGroup``, is left out of the internal object and
returned as a problem (the callers warn: ``simulate`` a ``warning:`` line, ``run`` a Warning Event
on the PodGroup), never dropped silently; an unknown mode is treated as the API's default ``Pod``
(``single``: nothing is evicted as a whole group on its account).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.model.scheduling import API_GROUP, INITIALLY_SCHEDULED

VERSION = "v1alpha2"
API_VERSION = f"{API_GROUP}/{VERSION}"

SCHEDULED = "PodGroupScheduled"
"""The v1.36 name of ``PodGroupInitiallyScheduled`` (``PodGroupStatus.conditions``, v1.36 OpenAPI)."""

DISRUPTION_MODES = {"Pod": "single", "PodGroup": "all"}
"""``spec.disruptionMode`` strings of v1.36 (``One of Pod, PodGroup. Defaults to Pod``) → the v1.37 one-of member."""

COPIED_SPEC_FIELDS = frozenset({"schedulingPolicy", "schedulingConstraints", "resourceClaims", "priorityClassName",
                                "priority"})
"""``PodGroupSpec`` fields of v1alpha2 whose name and shape v1beta1 shares (copied as they are)."""

_TO_V1ALPHA2 = {INITIALLY_SCHEDULED: SCHEDULED}
_FROM_V1ALPHA2 = {SCHEDULED: INITIALLY_SCHEDULED}


@dataclass(frozen=True, slots=True)
class Decoded:
    """A v1alpha2 PodGroup in the internal shape (``raw``, JSON for :class:`PodGroup`) and what of it is not
    honoured (``problems``: one sentence each, naming the field)."""

    raw: dict[str, Any]
    problems: tuple[str, ...] = ()


def decode(raw: Mapping[str, Any]) -> Decoded:
    """Convert one ``scheduling.k8s.io/v1alpha2`` PodGroup (API JSON) into the internal (v1beta1) shape.

    ``metadata`` is kept as it is; ``apiVersion`` is set to v1alpha2 (list items of a real server carry
    none); ``spec`` is rebuilt from the v1alpha2 fields (see the module docstring); a
    ``PodGroupScheduled`` condition is renamed ``PodGroupInitiallyScheduled`` (a condition already named
    so is not a v1.36 one and is left out, so that the list keeps one condition per type). Never raises:
    fields of the wrong type are passed on for the model to refuse, naming the field, as for v1beta1.
    """
    problems: list[str] = []
    out: dict[str, Any] = {**raw, "apiVersion": API_VERSION, "kind": "PodGroup"}
    spec = raw.get("spec")
    if isinstance(spec, Mapping):
        out["spec"] = _spec(spec, problems)
    status = raw.get("status")
    if isinstance(status, Mapping) and isinstance(status.get("conditions"), list):
        conditions = [c for c in status["conditions"] if not (isinstance(c, Mapping)
                                                               and c.get("type") == INITIALLY_SCHEDULED)]
        out["status"] = {**status, "conditions": [_renamed(c, _FROM_V1ALPHA2) for c in conditions]}
    return Decoded(out, tuple(problems))


def _spec(spec: Mapping[str, Any], problems: list[str]) -> dict[str, Any]:
    out = {k: v for k, v in spec.items() if k in COPIED_SPEC_FIELDS}
    ref = spec.get("podGroupTemplateRef")
    workload = ref.get("workload") if isinstance(ref, Mapping) else None
    if isinstance(workload, Mapping):
        out["workloadRef"] = {"workloadName": workload.get("workloadName", ""),
                              "templateName": workload.get("podGroupTemplateName", "")}
    mode = spec.get("disruptionMode")
    if mode is not None:
        member = DISRUPTION_MODES.get(mode) if isinstance(mode, str) else None
        if member is not None:
            out["disruptionMode"] = {member: {}}
        else:
            problems.append(f"spec.disruptionMode: {mode!r} is neither \"Pod\" nor \"PodGroup\": treated as \"Pod\" "
                            "(the default: its pods are preemption victims one by one, a partial gang is not torn "
                            "down)")
    for name in sorted(set(spec) - COPIED_SPEC_FIELDS - {"podGroupTemplateRef", "disruptionMode"}):
        problems.append(f"spec.{name}: not a field of a {API_VERSION} PodGroup: ignored")
    return out


def encode_conditions(conditions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Conditions (API JSON, internal names) as a v1alpha2 PodGroup's ``status.conditions``:
    ``PodGroupInitiallyScheduled`` is written ``PodGroupScheduled``; every other type (``DisruptionTarget``,
    which v1.36 also knows, and ours: ``GangBelowMin``, ``NodesReserved``) as it is."""
    return [_renamed(c, _TO_V1ALPHA2) for c in conditions]


def _renamed(condition: Any, names: Mapping[str, str]) -> Any:
    if isinstance(condition, Mapping) and isinstance(kind := condition.get("type"), str) and kind in names:
        return {**condition, "type": names[kind]}  # a type that is no string is left for validation to refuse
    return condition
