"""What a pod asks for that no plugin honours (``scheduler.solver.unsupported``): exact findings."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.solver.unsupported import Context, Unhonoured, unhonoured
from tests.unit.solver.builders import pod, pod_affinity, pod_term, spread


@pytest.mark.parametrize("spec, affinity, context, expected", [
    ({}, None, Context(), ()),
    ({"topologySpreadConstraints": [spread(1)]}, pod_affinity(anti=[pod_term({"app": "x"})]), Context(), ()),
    ({"topologySpreadConstraints": [spread(1, when="DoNotSchedul")]}, None, Context(),
     (Unhonoured("spec.topologySpreadConstraints[0].whenUnsatisfiable",
                 "'DoNotSchedul' is neither DoNotSchedule nor ScheduleAnyway: the constraint is ignored"),)),
    ({"topologySpreadConstraints": [spread(1, nodeTaintsPolicy="honor")]}, None, Context(),
     (Unhonoured("spec.topologySpreadConstraints[0].nodeTaintsPolicy",
                 "'honor' is neither Honor nor Ignore: treated as Ignore"),)),
    ({}, pod_affinity(required=[pod_term(expressions=[{"key": "a", "operator": "Gt", "values": ["1"]}])]), Context(),
     (Unhonoured("spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector"
                 ".matchExpressions[0].operator",
                 "'Gt' is not In, NotIn, Exists or DoesNotExist: the selector matches no pod"),)),
    ({}, pod_affinity(preferred_anti=[(5, pod_term({"app": "x"}, namespaceSelector={"matchLabels": {"t": "a"}}))]),
     Context(namespaces_known=False),
     (Unhonoured("spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
                 ".podAffinityTerm.namespaceSelector",
                 "no Namespace objects are known, so it matches no namespace (add namespaces to the snapshot: "
                 "kubectl get namespaces -o yaml)"),)),
    ({}, pod_affinity(required=[pod_term({"app": "x"}, namespaceSelector={})]), Context(namespaces_known=False), ()),
    ({"priorityClassName": "batch-hi"}, None, Context(priority_classes=frozenset({"batch"})),
     (Unhonoured("spec.priorityClassName",
                 "no PriorityClass 'batch-hi' is known (did you mean 'batch'?), so the pod has the default priority "
                 "(the globalDefault "
                 "class's value, else 0); add the class to the snapshot (kubectl get priorityclasses -o yaml)"),)),
    ({"priorityClassName": "batch"}, None, Context(priority_classes=frozenset({"batch"})), ()),
    ({"priorityClassName": "batch-hi", "priority": 7}, None, Context(priority_classes=frozenset()), ()),
    ({"priorityClassName": "batch-hi"}, None, Context(), ()),
], ids=["plain-pod", "every-honoured-field", "typo-in-when-unsatisfiable", "lower-case-policy",
        "unknown-label-selector-operator", "namespace-selector-without-namespaces",
        "empty-namespace-selector-needs-no-namespaces", "unknown-priority-class", "known-priority-class",
        "priority-already-resolved", "priority-classes-not-checked-live"])
def test_findings(spec: dict[str, Any], affinity: dict[str, Any] | None, context: Context,
                  expected: tuple[Unhonoured, ...]) -> None:
    assert unhonoured(pod("p", spec=spec, affinity=affinity), context) == expected
