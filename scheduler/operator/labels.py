"""The labels and annotations the operator reads and writes (docs/operator.md).

Ours (``gang-scheduler.io/``): :data:`OPT_IN` on a workload opts it in and, copied into its pod
templates by the workload webhook, marks its pods for the pod webhook; :data:`MIN_COUNT`
overrides the gang's minimum; :data:`WORKLOAD_UID` marks the groups made for a workload.

The controllers' (read only): the labels Job, JobSet, the Kubeflow training operator and
LeaderWorkerSet put on the pods they create, from which a pod's group is named.

The scheduler-plugins ones (``scheduling.x-k8s.io``: the Coscheduling plugin's PodGroup and pod
label) are the scheduler's own, in :mod:`scheduler.model.coscheduling`.
"""

from __future__ import annotations

OPT_IN = "gang-scheduler.io/gang"
"""Label, value ``"true"``: on a workload, make it a gang; on a pod (from its template), mutate it."""
OPT_IN_VALUE = "true"
MIN_COUNT = "gang-scheduler.io/min-count"
"""Annotation on a single-group workload: the gang's minCount (a positive integer), instead of the pod count."""
WORKLOAD_UID = "gang-scheduler.io/workload-uid"
"""Label on every group the operator made: the uid of the workload that owns it."""
MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGER = "gang-scheduler-operator"
WEBHOOK_CONFIGURATION = "gang-scheduler-operator.gang-scheduler.io"
"""The default name of the webhook configurations kopf manages. kopf names each webhook ``<handler id>.<this name>``
and the API server requires a webhook name of at least three dot-separated segments
(``pkg/apis/admissionregistration/validation``: ``IsFullyQualifiedName``), so the name carries a domain: a
one-segment name (``gang-scheduler-operator``) makes every configuration write a 422 and the operator exit."""

# -- what the controllers put on their pods ------------------------------------------------------------------
JOB_NAME = "batch.kubernetes.io/job-name"
"""Job controller (kubernetes ``pkg/controller/job``, since v1.27; the legacy ``job-name`` label is also set)."""
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
"""JobSet controller (kubernetes-sigs/jobset): on child Jobs and their pods; child Jobs are
``<jobset>-<replicatedJob>-<index>`` (``ReplicatedJob.replicas`` doc), so a pod's Job names its role replica."""
KUBEFLOW_JOB_NAME = "training.kubeflow.org/job-name"
KUBEFLOW_REPLICA_TYPE = "training.kubeflow.org/replica-type"
"""Kubeflow training operator v1 (kubeflow/training-operator): the replica type of a pod, ``master`` /
``worker`` (lower case since v1.7; older releases wrote ``Master``), so it is compared case-insensitively."""
LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
LWS_WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
"""LeaderWorkerSet (kubernetes-sigs/lws, docs/reference/labels-annotations-and-environment-variables.md):
worker index ``0`` is the group's leader."""
