"""NodeInfo: one node and the pods on it, as kube-scheduler's ``framework.NodeInfo`` holds them.

A :class:`NodeInfo` is immutable: the cache replaces a node's NodeInfo when a pod lands on it or
leaves it (O(pods on that node)), and a snapshot holds them by row
(:class:`~scheduler.framework.node_rows.NodeRows`, sharing the unchanged ones with the snapshot before), so
taking one is cheap and a cycle can never see a half-applied change. The requested resources of a node live next to it,
as a row of the snapshot's ``used`` matrix (vectorised over nodes); NodeInfo holds what a
per-node rule needs beyond sums: which pods, with their labels, host ports and volumes.

``pods`` holds every pod that uses the node: bound pods of any scheduler that are not terminal,
and pods of ours that are *assumed* there, keyed ``namespace/name`` (the cache shows an assumed pod
bound, ``spec.nodeName`` set; a plan assumed into a snapshot keeps the pod object as planned — the
node is the NodeInfo's).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from scheduler.model.pod import Pod

_EMPTY: Mapping[str, Pod] = MappingProxyType({})


@dataclass(frozen=True, eq=False)
class NodeInfo:
    """The pods on node ``name``; see the module docstring."""

    name: str
    pods: Mapping[str, Pod] = field(default_factory=lambda: _EMPTY)

    def with_pod(self, pod: Pod) -> NodeInfo:
        """This node with ``pod`` added (or replaced, by key)."""
        return self.with_pods((pod,))

    def with_pods(self, added: Iterable[Pod]) -> NodeInfo:
        """This node with ``added`` pods added (or replaced, by key): one copy for any number of pods."""
        pods = dict(self.pods)
        for pod in added:
            pods[pod.key] = pod
        return NodeInfo(self.name, MappingProxyType(pods))

    def without_pods(self, keys: Iterable[str]) -> NodeInfo:
        """This node with the pods of ``keys`` removed (absent keys are ignored)."""
        gone = set(keys)
        if not gone & self.pods.keys():
            return self
        return NodeInfo(self.name, MappingProxyType({k: p for k, p in self.pods.items() if k not in gone}))

    def __len__(self) -> int:
        return len(self.pods)
