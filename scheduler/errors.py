"""Infrastructure failures, as exceptions (scheduling outcomes are values, see ``solver.plan``).

    GangSchedulerError
    ├── SnapshotError        a snapshot file cannot be read or holds nothing usable (simulate exits 2)
    └── ClusterConfigError   no usable kubeconfig or in-cluster configuration (run exits 2)

Later layers (the binder, the cache) add their own branches here, each saying whether a
retry can help.
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
