"""``run_filters``: every registered filter in registry order; the first rejection is the node's reason."""

from __future__ import annotations

import pytest

from scheduler.framework.status import Code, Status
from scheduler.model import Node
from scheduler.solver.plugins import REGISTRY, run_filters
from tests.unit.solver.builders import node, pod

U = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
CORDONED = Status(U, ("node(s) were unschedulable",), "NodeUnschedulable")
DRAINING = Status(U, ("node(s) had condition DrainInProgress=True",), "NodeLifecycle")
MISMATCH = Status(U, ("node(s) didn't match Pod's node affinity/selector",), "NodeAffinity")
TAINTED = Status(U, ("node(s) had untolerated taint {gpu: true}",), "TaintToleration")

SELECTOR = {"pool": "gpu"}


def bad_node(cordoned: bool = False, draining: bool = False, mismatched: bool = False, tainted: bool = False) -> Node:
    """A node failing exactly the named filters for a pod with ``nodeSelector`` ``SELECTOR`` and no tolerations."""
    return node(
        "n",
        labels={"pool": "cpu" if mismatched else "gpu"},
        taints=["gpu=true:NoSchedule"] if tainted else (),
        unschedulable=cordoned,
        conditions=[("DrainInProgress", "True")] if draining else (),
    )


def test_registry_holds_every_static_filter_keyed_by_its_name() -> None:
    assert set(REGISTRY) == {"NodeUnschedulable", "NodeLifecycle", "NodeAffinity", "TaintToleration"}


@pytest.mark.parametrize(("failing", "expected"), [
    pytest.param({}, None, id="node-passing-every-filter"),
    pytest.param({"cordoned": True}, CORDONED, id="only-cordoned"),
    pytest.param({"draining": True}, DRAINING, id="only-draining"),
    pytest.param({"mismatched": True}, MISMATCH, id="only-selector-mismatch"),
    pytest.param({"tainted": True}, TAINTED, id="only-untolerated-taint"),
    pytest.param({"cordoned": True, "draining": True, "mismatched": True, "tainted": True}, CORDONED,
                 id="NodeUnschedulable-runs-first"),
    pytest.param({"draining": True, "mismatched": True, "tainted": True}, DRAINING,
                 id="NodeLifecycle-runs-before-affinity-and-taints"),
])
def test_first_rejection_wins(failing: dict[str, bool], expected: Status | None) -> None:
    assert run_filters(pod("p", node_selector=SELECTOR).spec, bad_node(**failing)) == expected


def test_a_tolerating_pod_passes_the_filters_its_tolerations_cover() -> None:
    tolerate_all = [{"operator": "Exists"}]
    spec = pod("p", node_selector=SELECTOR, tolerations=tolerate_all).spec
    assert run_filters(spec, bad_node(cordoned=True, tainted=True)) is None
    assert run_filters(spec, bad_node(cordoned=True, tainted=True, draining=True)) == DRAINING


def test_taint_toleration_runs_before_node_affinity_as_in_kube() -> None:
    assert run_filters(pod("p", node_selector=SELECTOR).spec, bad_node(mismatched=True, tainted=True)) == TAINTED
