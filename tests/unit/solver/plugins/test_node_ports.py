"""NodePorts: host port conflicts with running pods and with pods placed earlier in the plan
(nodeports/node_ports_test.go cases, then gangs)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from scheduler.framework import Code, Unschedulable
from scheduler.framework.events import Action, ClusterEvent
from scheduler.model import Pod
from scheduler.solver.plugins.node_ports import queueing_hint
from tests.unit.groups.builders import pg
from tests.unit.solver.builders import host_port, node, pod
from tests.unit.solver.plugins.solving import NS, message, placed, solve_root, zoned_nodes

RENDEZVOUS = 29500


def holder(on: str, *ports: dict[str, Any]) -> Pod:
    return pod("holder", namespace=NS, node_name=on, phase="Running", scheduler="default-scheduler", cpu=None,
               ports=ports)


@pytest.mark.parametrize("used, wanted, free", [
    ([host_port(8080)], [host_port(8080)], False),
    ([host_port(8080, "UDP")], [host_port(8080)], True),
    ([host_port(8080, ip="127.0.0.1")], [host_port(8080)], False),
    ([host_port(8080)], [host_port(8080, ip="127.0.0.1")], False),
    ([host_port(8080, ip="127.0.0.1")], [host_port(8080, ip="127.0.0.2")], True),
    ([host_port(8080)], [host_port(8081)], True),
    ([{"containerPort": 8080}], [host_port(8080)], True),
], ids=["same-port", "other-protocol", "wildcard-wanted-specific-used", "specific-wanted-wildcard-used",
        "two-specific-ips", "other-port", "container-port-only-takes-no-host-port"])
def test_one_pod_against_a_running_pods_ports(used: list[dict[str, Any]], wanted: list[dict[str, Any]],
                                              free: bool) -> None:
    result = solve_root([node("n0")], [pod("p", namespace=NS, ports=wanted)], [holder("n0", *used)])
    if free:
        assert placed(result) == {"p": "n0"}
    else:
        assert isinstance(result, Unschedulable) and result.code is Code.UNSCHEDULABLE
        assert result.message == ("0/1 nodes are available: "
                                  "1 node(s) didn't have free ports for the requested pod ports.")


def rendezvous_gang(n: int) -> list[Pod]:
    return [pod(f"w-{i}", namespace=NS, group="w", ports=[host_port(RENDEZVOUS)]) for i in range(n)]


def test_three_pods_with_the_rendezvous_host_port_land_on_three_nodes() -> None:
    result = solve_root(zoned_nodes({"za": 3}), rendezvous_gang(3), groups=[pg("w", 3)])
    assert Counter(placed(result).values()) == Counter({"za-0": 1, "za-1": 1, "za-2": 1})


def test_gang_with_a_host_port_avoids_the_node_where_it_is_taken() -> None:
    result = solve_root(zoned_nodes({"za": 3}), rendezvous_gang(2), [holder("za-0", host_port(RENDEZVOUS))],
                        groups=[pg("w", 2)])
    assert set(placed(result).values()) == {"za-1", "za-2"}


def test_gang_wanting_more_nodes_than_have_the_port_free_places_nothing() -> None:
    result = solve_root(zoned_nodes({"za": 2}), rendezvous_gang(3), groups=[pg("w", 3)])
    assert message(result) == ("gang w: 2/3 placeable (minCount 3); 0/2 nodes are available: "
                               "2 node(s) didn't have free ports for the requested pod ports.")


@pytest.mark.parametrize("event, queue", [
    (ClusterEvent("Pod", Action.DELETE, holder("n0", host_port(80)), None), True),
    (ClusterEvent("Pod", Action.DELETE, holder("n0"), None), False),
    (ClusterEvent("Node", Action.ADD, None, node("n1")), True),
    (ClusterEvent("Node", Action.UPDATE, node("n1"), node("n1", labels={"a": "b"})), False),
], ids=["holder-of-a-host-port-deleted", "pod-without-host-ports-deleted", "node-added", "node-relabelled"])
def test_queueing_hint(event: ClusterEvent, queue: bool) -> None:
    assert queueing_hint(event) is queue
