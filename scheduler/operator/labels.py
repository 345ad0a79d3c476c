"""The labels the operator writes, and the name of its webhook configurations (docs/operator.md).

:data:`WORKLOAD_UID` marks the groups made for a workload. The labels a user sets on a workload
(:data:`~scheduler.groups.workloads.OPT_IN`, :data:`~scheduler.groups.workloads.MIN_COUNT`) and those the
workloads' controllers put on their pods are read by ``simulate`` too, in :mod:`scheduler.groups.workloads`;
the scheduler-plugins ones (``scheduling.x-k8s.io``) in :mod:`scheduler.model.coscheduling`.
"""

from __future__ import annotations

WORKLOAD_UID = "gang-scheduler.io/workload-uid"
"""Label on every group the operator made: the uid of the workload that owns it."""
MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGER = "gang-scheduler-operator"
WEBHOOK_CONFIGURATION = "gang-scheduler-operator.gang-scheduler.io"
"""The default name of the webhook configurations kopf manages. kopf names each webhook ``<handler id>.<this name>``
and the API server requires a webhook name of at least three dot-separated segments
(``pkg/apis/admissionregistration/validation``: ``IsFullyQualifiedName``), so the name carries a domain: a
one-segment name (``gang-scheduler-operator``) makes every configuration write a 422 and the operator exit."""
