"""``simulate`` says when a root left unschedulable fits the cluster as given, and whose placement took its room
(``scheduler/offline/room.py``); nothing is said of a root that does not fit the cluster as given either."""

from __future__ import annotations

import json
from pathlib import Path

from scheduler.model.scheduling import GroupKey
from scheduler.offline.report import render_json, render_text
from scheduler.offline.room import RoomTaken
from tests.unit.offline.test_simulate import group, member, podgroup, run

GANG = "{gang: {minCount: %d}}"


def gang(name: str, pods: int, cpu: str = "1") -> list[str]:
    return [podgroup(name, GANG % pods), *(member(f"{name}-{i}", name, cpu) for i in range(pods))]


def test_a_gang_whose_room_an_earlier_gang_took_is_told_so_with_the_nodes_and_the_gang(tmp_path: Path) -> None:
    sim = run(tmp_path, *gang("a-big", 3), *gang("b-small", 2))  # n1 has 4 cpu; a-big comes first (by name)
    assert group(sim, "a-big")[0] == "Scheduled"
    assert group(sim, "b-small")[0] == "Unschedulable"
    big, small = GroupKey("PodGroup", "ml", "a-big"), GroupKey("PodGroup", "ml", "b-small")
    assert sim.room_taken == {small: RoomTaken((("n1", 2),), ((big, 0),))}
    assert ("fits the cluster as given (on n1 x2): the room went to PodGroup ml/a-big (priority 0), placed before "
            "it in this run") in render_text(sim)
    doc = json.loads(render_json(sim))
    assert doc["roomTaken"] == [{"root": {"namespace": "ml", "name": "b-small", "kind": "PodGroup"},
                                 "nodes": {"n1": 2},
                                 "takenBy": [{"namespace": "ml", "name": "a-big", "kind": "PodGroup",
                                              "priority": 0}]}]


def test_nothing_is_said_of_a_gang_too_big_for_the_cluster_as_given(tmp_path: Path) -> None:
    sim = run(tmp_path, *gang("a-small", 1), *gang("b-huge", 5))
    assert group(sim, "b-huge")[0] == "Unschedulable"
    assert sim.room_taken == {}
    assert "fits the cluster as given" not in render_text(sim)
    assert json.loads(render_json(sim))["roomTaken"] == []


def test_nothing_is_said_when_no_gang_was_placed_before_it(tmp_path: Path) -> None:
    sim = run(tmp_path, *gang("a-huge", 5), *gang("b-small", 1))
    assert group(sim, "a-huge")[0] == "Unschedulable"
    assert group(sim, "b-small")[0] == "Scheduled"
    assert sim.room_taken == {}


def test_only_the_gangs_placed_on_the_nodes_it_would_use_are_named(tmp_path: Path) -> None:
    second = """
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {kubernetes.io/hostname: n2}}
status: {allocatable: {cpu: "1", memory: 8Gi, pods: "110"}}
"""
    pinned = """
apiVersion: v1
kind: Pod
metadata: {name: a-one-0, namespace: ml}
spec:
  schedulerName: gang-scheduler
  schedulingGroup: {podGroupName: a-one}
  nodeSelector: {kubernetes.io/hostname: n2}
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
"""
    # a-one takes n2's one cpu, b-big 3 of n1's 4: c-pair (2 pods) fits no more; on the cluster as given both its
    # pods go to n1 (the packing order), where only b-big placed pods
    sim = run(tmp_path, second, podgroup("a-one", GANG % 1), pinned, *gang("b-big", 3), *gang("c-pair", 2))
    assert {g.key.name: set(g.placements.values()) for g in sim.groups if g.placements} == {
        "a-one": {"n2"}, "b-big": {"n1"}}
    assert sim.room_taken == {GroupKey("PodGroup", "ml", "c-pair"): RoomTaken(
        (("n1", 2),), ((GroupKey("PodGroup", "ml", "b-big"), 0),))}


def test_nothing_is_said_of_a_gang_whose_minimum_was_placed(tmp_path: Path) -> None:
    members = [member(f"b-three-{i}", "b-three") for i in range(3)]
    sim = run(tmp_path, *gang("a-two", 2), podgroup("b-three", GANG % 2), *members)  # 2 of n1's 4 cpu left
    assert group(sim, "b-three")[0] == "Scheduled"
    assert sum(p.node is None for p in sim.pods) == 1
    assert sim.room_taken == {}
