"""Infrastructure failures, as exceptions. Scheduling outcomes are values, not exceptions: a
:class:`~scheduler.framework.status.Status` per node and plugin, and a
:data:`~scheduler.framework.plan.Decision` (``Plan`` / ``Unschedulable`` / ``Preemption``) per root.

    GangSchedulerError
    ├── SnapshotError        a snapshot file cannot be read or holds nothing usable (simulate exits 2)
    ├── ClusterConfigError   no usable kubeconfig or in-cluster configuration (run exits 2)
    ├── ApiError             an API request failed (scheduler.client.kube; ``retryable``: 429, 5xx, transport)
    │   ├── NotFound         404
    │   ├── Conflict         409: exists, stale resourceVersion, pod already bound
    │   ├── Gone             410: a watch's resourceVersion is too old; re-list
    │   └── TargetChanged    the binder's pre-bind check refused a target; nothing sent (scheduler.live.binder)
    └── NoGroupApi           the operator finds no PodGroup API served (scheduler.operator.apis)

Each class says whether a retry can help. The branches live beside the code that raises them,
above this module; a new one is added to this tree.
"""

from __future__ import annotations


class GangSchedulerError(Exception):
    """Base of every error this package raises on purpose."""


class SnapshotError(GangSchedulerError):
    """A snapshot file cannot be read, is not YAML, or holds no object the scheduler reads.

    Permanent: fix the file. The message names the file and what is wrong.
    """


class ClusterConfigError(GangSchedulerError):
    """No cluster configuration can be used: the kubeconfig given is missing or invalid, or none
    was found and the process is not in a cluster. Raised before any request is made.

    Permanent: fix the kubeconfig or the environment. The message is one line naming every
    path and variable looked at.
    """
