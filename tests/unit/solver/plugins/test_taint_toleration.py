"""TaintToleration: kube's ``v1helper.TolerationsTolerateTaint`` / ``Toleration.ToleratesTaint`` (v1.37)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.status import Code, Status
from scheduler.model import Taint
from scheduler.solver.plugins import taint_toleration
from tests.unit.solver.builders import node, pod


def untolerated(key: str, value: str = "") -> Status:
    """The exact rejection for one untolerated taint (taint_toleration.go wording, v1.37)."""
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"node(s) had untolerated taint {{{key}: {value}}}",),
                  "TaintToleration")


def exists(key: str = "", effect: str = "") -> dict[str, Any]:
    return {"key": key, "operator": "Exists", "effect": effect}


def equal(key: str, value: str = "", effect: str = "", operator: str = "Equal") -> dict[str, Any]:
    return {"key": key, "operator": operator, "value": value, "effect": effect}


CASES = [
    # Which effects filter.
    pytest.param([], [], None, id="node-without-taints-passes"),
    pytest.param(["gpu=true:NoSchedule"], [], untolerated("gpu", "true"), id="untolerated-NoSchedule-rejects"),
    pytest.param(["gpu=true:NoExecute"], [], untolerated("gpu", "true"), id="untolerated-NoExecute-rejects"),
    pytest.param(["gpu=true:PreferNoSchedule"], [], None, id="untolerated-PreferNoSchedule-does-not-filter"),
    # Equal compares the value.
    pytest.param(["gpu=true:NoSchedule"], [equal("gpu", "true")], None, id="Equal-same-value-tolerates"),
    pytest.param(["gpu=true:NoSchedule"], [equal("gpu", "false")], untolerated("gpu", "true"),
                 id="Equal-other-value-rejects"),
    pytest.param(["gpu=true:NoSchedule"], [equal("gpu")], untolerated("gpu", "true"),
                 id="Equal-empty-value-does-not-match-a-valued-taint"),
    pytest.param(["gpu:NoSchedule"], [equal("gpu")], None, id="Equal-empty-value-matches-a-valueless-taint"),
    pytest.param(["gpu=true:NoSchedule"], [{"key": "gpu", "value": "true"}], None,
                 id="omitted-operator-defaults-to-Equal-and-tolerates"),
    pytest.param(["gpu=true:NoSchedule"], [{"key": "gpu", "value": "no"}], untolerated("gpu", "true"),
                 id="omitted-operator-defaults-to-Equal-and-compares-value"),
    pytest.param(["gpu=true:NoSchedule"], [equal("gpu", "true", operator="")], None,
                 id="empty-operator-means-Equal"),
    pytest.param(["gpu=true:NoSchedule"], [equal("gpu", "true", operator="Contains")], untolerated("gpu", "true"),
                 id="unknown-operator-tolerates-nothing"),
    pytest.param(["gpu=true:NoSchedule"], [equal("GPU", "true")], untolerated("gpu", "true"),
                 id="key-compare-is-case-sensitive"),
    # Exists ignores the value but not the key.
    pytest.param(["gpu=true:NoSchedule"], [exists("gpu")], None, id="Exists-ignores-value"),
    pytest.param(["gpu=true:NoSchedule"], [{"key": "gpu", "operator": "Exists", "value": "ignored"}], None,
                 id="Exists-ignores-a-given-value"),
    pytest.param(["gpu=true:NoSchedule"], [exists("tpu")], untolerated("gpu", "true"),
                 id="Exists-other-key-rejects"),
    # Effects.
    pytest.param(["gpu=true:NoExecute"], [exists("gpu", "NoSchedule")], untolerated("gpu", "true"),
                 id="toleration-effect-must-equal-taint-effect"),
    pytest.param(["gpu=true:NoExecute"], [exists("gpu", "NoExecute")], None,
                 id="toleration-effect-equal-to-taint-effect-tolerates"),
    pytest.param(["a=1:NoSchedule", "b=2:NoExecute"], [equal("a", "1"), equal("b", "2")], None,
                 id="empty-toleration-effect-matches-NoSchedule-and-NoExecute"),
    # Empty key.
    pytest.param(["a=1:NoSchedule", "b:NoExecute", "c=3:NoSchedule"], [exists()], None,
                 id="empty-key-Exists-tolerates-everything"),
    pytest.param(["a=1:NoSchedule", "b=2:NoExecute"], [exists(effect="NoSchedule")], untolerated("b", "2"),
                 id="empty-key-Exists-with-effect-tolerates-only-that-effect"),
    pytest.param(["a:NoSchedule"], [equal("")], untolerated("a"), id="empty-key-Equal-tolerates-nothing"),
    # Several taints and tolerations.
    pytest.param(["a=1:NoSchedule", "b=2:NoSchedule"], [equal("a", "1")], untolerated("b", "2"),
                 id="every-filtering-taint-needs-a-toleration"),
    pytest.param(["a=1:NoSchedule", "b=2:NoExecute", "c=3:NoSchedule"], [equal("a", "1")], untolerated("b", "2"),
                 id="first-untolerated-taint-is-reported"),
    pytest.param(["p=1:PreferNoSchedule", "c=3:NoSchedule", "b=2:NoSchedule"], [], untolerated("c", "3"),
                 id="first-untolerated-taint-skips-PreferNoSchedule-and-keeps-node-order"),
    pytest.param(["gpu:NoSchedule"], [], untolerated("gpu"), id="valueless-taint-reported-with-empty-value"),
    pytest.param(["nvidia.com/gpu=present:NoSchedule"], [equal("other", "x"), exists("nvidia.com/gpu")], None,
                 id="any-one-matching-toleration-suffices"),
    # Gt / Lt (KEP-5471): the taint's value against the toleration's, as 64-bit integers.
    pytest.param(["sla=950:NoSchedule"], [equal("sla", "900", operator="Gt")], None, id="Gt-greater-taint-tolerates"),
    pytest.param(["sla=900:NoSchedule"], [equal("sla", "900", operator="Gt")], untolerated("sla", "900"),
                 id="Gt-equal-taint-rejects"),
    pytest.param(["sla=850:NoSchedule"], [equal("sla", "900", operator="Lt")], None, id="Lt-smaller-taint-tolerates"),
    pytest.param(["sla=-5:NoSchedule"], [equal("sla", "7", operator="Lt")], None, id="Lt-negative-taint-tolerates"),
    pytest.param(["sla=0100:NoSchedule"], [equal("sla", "50", operator="Gt")], untolerated("sla", "0100"),
                 id="Gt-leading-zero-is-not-a-canonical-integer"),
    pytest.param(["sla=-5:NoSchedule"], [equal("sla", "+7", operator="Lt")], untolerated("sla", "-5"),
                 id="Lt-plus-sign-is-not-a-canonical-integer"),
    pytest.param(["sla=-0:NoSchedule"], [equal("sla", "5", operator="Lt")], untolerated("sla", "-0"),
                 id="Lt-minus-zero-is-not-a-canonical-integer"),
    pytest.param(["sla=high:NoSchedule"], [equal("sla", "900", operator="Gt")], untolerated("sla", "high"),
                 id="Gt-non-integer-taint-rejects"),
    pytest.param(["sla=950:NoSchedule"], [equal("sla", "9_00", operator="Gt")], untolerated("sla", "950"),
                 id="Gt-value-Go-would-not-parse-rejects"),
    pytest.param(["sla=9223372036854775808:NoSchedule"], [equal("sla", "1", operator="Gt")],
                 untolerated("sla", "9223372036854775808"), id="Gt-beyond-int64-rejects"),
    pytest.param(["sla=950:NoSchedule"], [equal("other", "1", operator="Gt")], untolerated("sla", "950"),
                 id="Gt-other-key-rejects"),
]


@pytest.mark.parametrize(("taints", "tolerations", "expected"), CASES)
def test_filter_node(taints: list[str], tolerations: list[dict[str, Any]], expected: Status | None) -> None:
    spec = pod("p", tolerations=tolerations).spec
    assert taint_toleration.filter_node(spec, node("n", taints=taints)) == expected


@pytest.mark.parametrize(("taint", "expected"), [
    pytest.param(Taint(key="gpu", value="true", effect="NoSchedule"), "node(s) had untolerated taint {gpu: true}",
                 id="key-and-value"),
    pytest.param(Taint(key="gpu", effect="NoExecute"), "node(s) had untolerated taint {gpu: }", id="no-value"),
])
def test_reason_wording(taint: Taint, expected: str) -> None:
    assert taint_toleration.reason(taint) == expected
