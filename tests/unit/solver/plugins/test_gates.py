"""Profile gates: a plugin is left out of a solve only when no pod of the root (nor, for pod affinity, any
running pod) asks for what it judges."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework import NodeTable, Snapshot
from scheduler.solver.plugins import DEFAULT_PROFILE
from tests.unit.solver.builders import host_port, node, pod, pod_affinity, pod_term, spread

ALL = {"NodePorts", "PodTopologySpread", "InterPodAffinity", "NodeAffinity", "TaintToleration"}


def names(profile: Any) -> set[str]:
    return {p.name for p in (*profile.pre_filters, *profile.filters, *profile.scorers, *profile.reservers)} & ALL


@pytest.mark.parametrize("pending, running, taints, kept", [
    ([pod("p")], [], [], set()),
    ([pod("p", ports=[host_port(80)])], [], [], {"NodePorts"}),
    ([pod("p", spec={"topologySpreadConstraints": [spread(1)]})], [], [], {"PodTopologySpread"}),
    ([pod("p", affinity=pod_affinity(anti=[pod_term({"a": "b"})]))], [], [], {"InterPodAffinity"}),
    ([pod("p")], [pod("r", node_name="n0", affinity=pod_affinity(anti=[pod_term({"a": "b"})]))], [],
     {"InterPodAffinity"}),
    ([pod("p", affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}]}})], [], [],
     {"NodeAffinity"}),
    ([pod("p")], [], ["spot=yes:PreferNoSchedule"], {"TaintToleration"}),
], ids=["plain-pod-needs-none", "host-port", "spread", "pod-anti-affinity",
        "a-running-pods-anti-affinity-concerns-every-pod", "preferred-node-affinity", "prefer-no-schedule-taint"])
def test_gates(pending: list[Any], running: list[Any], taints: list[str], kept: set[str]) -> None:
    snapshot = Snapshot.build(NodeTable.build([node("n0", taints=taints)]), running)
    assert names(DEFAULT_PROFILE.for_pods(snapshot, pending)) == kept
    assert names(DEFAULT_PROFILE) == ALL  # the profile itself keeps them all
