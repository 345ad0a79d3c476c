"""Node: allocatable in integer units, ``condition()``, taints and ``spec.unschedulable``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from scheduler.model import Node, Taint
from scheduler.model.quantity import QuantityError
from tests.unit.model.example_data import load_one

KI, MI, GI, TI = 2**10, 2**20, 2**30, 2**40
HUGEPAGES_ZERO = {"hugepages-1Gi": 0, "hugepages-2Mi": 0}

ALLOCATABLE = [
    pytest.param(
        "nodes/cpu-only-eks-m5.yaml", "cpu-m5-1",
        # 15790m, 95491281146, 57591Mi, 234
        {"cpu": 15790, "ephemeral-storage": 95_491_281_146, "memory": 57591 * MI, "pods": 234, **HUGEPAGES_ZERO},
        id="eks-m5-cpu-only",
    ),
    pytest.param(
        "nodes/h100-8gpu-eks-p5.yaml", "gpu-node-1",
        # 191450m, 384269682460, 2095606484Ki, gpu 8, pods 100, efa 32
        {
            "cpu": 191450, "ephemeral-storage": 384_269_682_460, "memory": 2095606484 * KI, "nvidia.com/gpu": 8,
            "pods": 100, "vpc.amazonaws.com/efa": 32, **HUGEPAGES_ZERO,
        },
        id="eks-p5-h100-device-plugin-and-efa",
    ),
    pytest.param(
        "nodes/a100-40gb-mig-single-openshift.yaml", "gpu-mig-r7525-1",
        # 255500m, 430465837161, 526751488Ki, gpu 14 (MIG single), mig-1g.5gb "0", pods 250
        {
            "cpu": 255500, "ephemeral-storage": 430_465_837_161, "memory": 526751488 * KI, "nvidia.com/gpu": 14,
            "nvidia.com/mig-1g.5gb": 0, "pods": 250, **HUGEPAGES_ZERO,
        },
        id="mig-single-keeps-a-zero-extended-resource",
    ),
    pytest.param(
        "nodes/a100-8gpu-dgx-kwok.yaml", "virtual-gpu-node",
        # 256, 15Ti, 1Ti, eight SR-IOV VFs of 1, gpu 8, pods 110
        {
            "cpu": 256_000, "ephemeral-storage": 15 * TI, "memory": TI, "nvidia.com/gpu": 8, "pods": 110,
            **{f"intel.com/mlnx_sriov_rdma{i}": 1 for i in range(1, 9)}, **HUGEPAGES_ZERO,
        },
        id="dgx-kwok-binary-suffixes-and-sriov",
    ),
    pytest.param(
        "nodes/a100-8gpu-eks-p4d-dra.yaml", "gpu-a100-p4d-1",
        # 95690m, 95491281146, 1178224664Ki, pods 737; GPUs via DRA only, so no nvidia.com/gpu
        {"cpu": 95690, "ephemeral-storage": 95_491_281_146, "memory": 1178224664 * KI, "pods": 737, **HUGEPAGES_ZERO},
        id="p4d-dra-only-has-no-gpu-resource",
    ),
]


@pytest.mark.parametrize(("relative", "name", "expected"), ALLOCATABLE)
def test_example_allocatable_in_integer_units(relative: str, name: str, expected: dict[str, int]) -> None:
    node = load_one(relative, Node, name)
    assert node.name == name
    assert node.allocatable == expected


def test_capacity_stays_as_api_strings() -> None:
    node = load_one("nodes/cpu-only-eks-m5.yaml", Node, "cpu-m5-1")
    assert node.status.capacity["memory"] == "60520Mi"
    assert node.status.capacity["cpu"] == "16"


def node(status: dict[str, Any] | None = None, spec: dict[str, Any] | None = None) -> Node:
    return Node.model_validate({"metadata": {"name": "n1"}, "spec": spec or {}, "status": status or {}})


INLINE_ALLOCATABLE = [
    pytest.param({}, {}, id="no-allocatable-is-empty"),
    pytest.param(
        {"allocatable": {"cpu": 4, "memory": "16Gi", "pods": 110}},
        {"cpu": 4000, "memory": 16 * GI, "pods": 110},
        id="yaml-int-cpu-is-cores",
    ),
    pytest.param({"allocatable": {"cpu": 0.5}}, {"cpu": 500}, id="yaml-float-cpu"),
    pytest.param({"allocatable": {"example.com/fpga": "2"}}, {"example.com/fpga": 2}, id="extended-resource-count"),
]


@pytest.mark.parametrize(("status", "expected"), INLINE_ALLOCATABLE)
def test_inline_allocatable(status: dict[str, Any], expected: dict[str, int]) -> None:
    assert node(status).allocatable == expected


def test_malformed_allocatable_raises_on_access_not_on_parse() -> None:
    n = node({"allocatable": {"cpu": "4", "memory": "lots"}})
    assert n.status.allocatable == {"cpu": "4", "memory": "lots"}
    with pytest.raises(QuantityError, match=r"^invalid quantity 'lots'"):
        _ = n.allocatable


def test_allocatable_is_computed_once() -> None:
    n = node({"allocatable": {"cpu": "2"}})
    assert n.allocatable is n.allocatable


# --- conditions ---------------------------------------------------------------------------------


def test_condition_ready_from_example() -> None:
    n = load_one("nodes/cpu-only-eks-m5.yaml", Node, "cpu-m5-1")
    ready = n.condition("Ready")
    assert ready is not None
    assert (ready.type, ready.status, ready.reason, ready.is_true) == ("Ready", "True", "KubeletReady", True)
    assert ready.last_transition_time == datetime(2026, 11, 2, 9, 15, 12, tzinfo=UTC)


def test_condition_false_is_not_true() -> None:
    n = load_one("nodes/cpu-only-eks-m5.yaml", Node, "cpu-m5-1")
    pressure = n.condition("MemoryPressure")
    assert pressure is not None
    assert (pressure.status, pressure.reason, pressure.is_true) == ("False", "KubeletHasSufficientMemory", False)


def test_condition_custom_npd_type_without_timestamp() -> None:
    n = load_one("nodes/a100-8gpu-dgx-kwok.yaml", Node, "virtual-gpu-node")
    slow = n.condition("GpuHWSlowDown")
    assert slow is not None
    assert (slow.status, slow.reason, slow.last_transition_time) == ("False", "GpuHWSlowDownNotActive", None)
    assert len(n.status.conditions) == 18


def test_condition_missing_type_is_none() -> None:
    n = load_one("nodes/cpu-only-eks-m5.yaml", Node, "cpu-m5-1")
    assert n.condition("DrainInProgress") is None
    assert n.condition("ready") is None  # types are case-sensitive


CONDITION_STATUS = [
    pytest.param({"type": "Ready", "status": "True"}, ("True", True), id="true"),
    pytest.param({"type": "Ready", "status": "False"}, ("False", False), id="false"),
    pytest.param({"type": "Ready", "status": "Unknown"}, ("Unknown", False), id="unknown-is-not-true"),
    pytest.param({"type": "Ready"}, ("Unknown", False), id="missing-status-defaults-to-unknown"),
]


@pytest.mark.parametrize(("raw", "expected"), CONDITION_STATUS)
def test_condition_status(raw: dict[str, str], expected: tuple[str, bool]) -> None:
    cond = node({"conditions": [raw]}).condition("Ready")
    assert cond is not None
    assert (cond.status, cond.is_true) == expected


def test_node_without_conditions() -> None:
    assert node().condition("Ready") is None


# --- taints and unschedulable -------------------------------------------------------------------

TAINTS = [
    pytest.param("nodes/cpu-only-eks-m5.yaml", "cpu-m5-1", (), id="no-taints"),
    pytest.param(
        "nodes/h100-8gpu-eks-p5.yaml", "gpu-node-1",
        (Taint(key="nvidia.com/gpu", value="true", effect="NoSchedule"),),
        id="gpu-node-taint",
    ),
    pytest.param(
        "nodes/a100-8gpu-dgx-kwok.yaml", "virtual-gpu-node",
        (Taint(key="kwok.x-k8s.io/node", value="fake", effect="NoSchedule"),),
        id="kwok-fake-node-taint",
    ),
]


@pytest.mark.parametrize(("relative", "name", "expected"), TAINTS)
def test_example_taints(relative: str, name: str, expected: tuple[Taint, ...]) -> None:
    assert load_one(relative, Node, name).spec.taints == expected


def test_taint_without_value_defaults_to_empty_and_ignores_time_added() -> None:
    raw = {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute", "timeAdded": "2026-11-29T10:00:00Z"}
    n = node(spec={"taints": [raw]})
    assert n.spec.taints == (Taint(key="node.kubernetes.io/not-ready", value="", effect="NoExecute"),)


@pytest.mark.parametrize(
    ("raw", "missing"),
    [
        pytest.param({"key": "k"}, "effect", id="effect-is-required"),
        pytest.param({"effect": "NoSchedule"}, "key", id="key-is-required"),
    ],
)
def test_taint_required_fields(raw: dict[str, str], missing: str) -> None:
    with pytest.raises(ValidationError) as err:
        node(spec={"taints": [raw]})
    assert [(e["type"], e["loc"][-1]) for e in err.value.errors()] == [("missing", missing)]


def test_cordoned_node_is_unschedulable_with_its_taint() -> None:
    n = load_one("clusters/small-gpu-cluster.yaml", Node, "gpu-b2-2")
    assert n.spec.unschedulable is True
    assert n.spec.taints == (
        Taint(key="nvidia.com/gpu", value="true", effect="NoSchedule"),
        Taint(key="node.kubernetes.io/unschedulable", value="", effect="NoSchedule"),
    )


def test_defaults_of_an_empty_node() -> None:
    n = Node.model_validate({})
    assert (n.name, n.spec.unschedulable, n.spec.taints, n.allocatable, n.status.conditions) == ("", False, (), {}, ())
    assert (n.api_version, n.kind) == ("v1", "Node")


def test_node_is_frozen() -> None:
    n = node()
    with pytest.raises(ValidationError, match="frozen"):
        n.spec = n.spec  # type: ignore[misc]
