"""Infrastructure failures, as exceptions. Scheduling outcomes are values, not exceptions: a
:class:`~scheduler.framework.status.Status` per node and plugin, and a
:data:`~scheduler.framework.plan.Decision` (``Plan`` / ``Unschedulable`` / ``Preemption``) per root.

    GangSchedulerError
    ├── SnapshotError        a snapshot file cannot be read or holds nothing usable (simulate exits 2)
    ├── ClusterConfigError   no usable kubeconfig or in-cluster configuration (run exits 2)
    ├── ApiError             an API request failed (raised by scheduler.client.kube and the binding cycle's writers;
    │                        ``retryable``: 429, 5xx, transport)
    │   ├── NotFound         404
    │   ├── Conflict         409: exists, stale resourceVersion, pod already bound
    │   ├── Gone             410: a watch's resourceVersion is too old; re-list
    │   ├── TargetChanged    the bind plugin's check refused a target; nothing sent (scheduler.binding.pods)
    │   └── NotLeading       the replica lost its lease while a write waited for the rate limiter; nothing sent
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


class ApiError(GangSchedulerError):
    """A request failed: ``status`` is the HTTP code (0 for a transport failure, left out of the message:
    ``ClientConnectorError: Cannot connect to host …``, not ``0 ClientConnectorError: …``). ``retry_after_s``: the
    seconds the reply's ``Retry-After`` header asks a client to wait before trying again (the API server sends it
    with a 429 from API Priority and Fairness, and with some 5xx), or None."""

    def __init__(self, status: int, reason: str, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(f"{status} {reason}: {message}" if status else f"{reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after_s = retry_after_s

    @property
    def retryable(self) -> bool:
        """429, 5xx or a transport failure: trying again later can succeed."""
        return self.status == 0 or self.status == 429 or self.status >= 500

    def retry_wait_s(self, backoff_s: float, cap_s: float) -> float:
        """Seconds to wait before trying again: ``backoff_s`` (the caller's jittered backoff), or the server's
        ``Retry-After`` when that is longer, at most ``cap_s`` (client-go waits what ``Retry-After`` says before
        retrying a 429 or 5xx: ``rest/request.go``)."""
        if self.retry_after_s is None:
            return backoff_s
        return max(backoff_s, min(self.retry_after_s, cap_s))


class NotFound(ApiError):
    """404: the object (or the API) does not exist."""


class Conflict(ApiError):
    """409: already exists, a stale resourceVersion, or a pod already bound / gated."""


class Gone(ApiError):
    """410: a watch's resourceVersion is too old; re-list."""


class TargetChanged(ApiError):
    """The bind plugin's check just before a bind refused the member's target (no request was sent;
    ``status`` 0). Permanent for this plan: the root is scheduled again on the cache as it is now."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "TargetChanged", message)

    @property
    def retryable(self) -> bool:
        return False


class NotLeading(ApiError):
    """This replica no longer holds the leader lease: a write that waited for the client's rate limiter is not sent
    (``status`` 0; :attr:`KubeClient.fence <scheduler.client.kube.KubeClient.fence>`). Permanent for this replica: the
    next leader writes what is still needed."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "NotLeading", message)

    @property
    def retryable(self) -> bool:
        return False
