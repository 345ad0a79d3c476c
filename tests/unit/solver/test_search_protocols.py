"""The search's seams: it reaches the plugins that hold what a group shares and fill the plan only through the
framework's Protocols (``SharedResourcePlugin``, ``OutcomePlugin``), so a plugin it has never heard of works.

Each test plugs a small plugin of its own into a copy of the default profile and checks the search's side of the
contract: a leaf placed under each way held (and only there), the plugin's reason and name when there is none,
the plan's fields and notes as the plugin gives them.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from scheduler.framework import Code, NodeTable, Plan, Snapshot, Unschedulable
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Rejections, Signature
from scheduler.framework.node_table import BoolArray, IntArray
from scheduler.framework.plan import PlanFields, VolumeClaimBinding
from scheduler.groups import TreeState, build_trees
from scheduler.model import Pod
from scheduler.solver import solve
from scheduler.solver.plugins import DEFAULT_PROFILE, Profile
from scheduler.solver.plugins.resources_fit import UNLIMITED
from tests.unit.groups.builders import NS, pg
from tests.unit.solver.builders import node, pod


class Channel:
    """A Shared and Filter plugin: the pods of a leaf share one channel; each way to hold it is one node name (the
    members may go only there while it is held). ``ways``: the nodes offered, in order."""

    name = "Channel"

    def __init__(self, ways: Sequence[str]) -> None:
        self.ways = list(ways)
        self.held: str | None = None
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def held_in_common(self, state: CycleState, pending: Sequence[Pod]) -> list[str]:
        return ["channel"] if any(p.metadata.labels.get("channel") for p in pending) else []

    def hold(self, state: CycleState, group_name: str, held: Sequence[Any], mask: BoolArray,
             need: int) -> Iterator[None]:
        self.calls.append((group_name, tuple(held)))
        for way in self.ways:
            self.held = way
            yield
            self.held = None

    def unheld_reason(self, state: CycleState, held: Sequence[Any]) -> str:
        return f"no free channel for {', '.join(held)}"

    def filter(self, state: CycleState, sig: Signature, rows: IntArray) -> IntArray | None:
        if self.held is None:
            return None
        names = np.array([state.table.nodes[int(r)].name for r in rows])
        return np.where(names == self.held, UNLIMITED, 0).astype(np.int64)

    def rejections(self, state: CycleState, sig: Signature, rows: IntArray) -> Rejections:
        return Rejections(Counter({"node(s) did not reach the channel": len(rows)}))

    def interacts(self, state: CycleState, sig: Signature) -> bool:
        return False


class Ledger:
    """An Outcome plugin filling ``Plan.volumes`` with one binding per placed pod and noting one line."""

    name = "Ledger"

    def plan_fields(self, state: CycleState) -> PlanFields:
        return {"volumes": tuple(VolumeClaimBinding(f"{NS}/data-{p.metadata.name}", state.table.nodes[e.row].name,
                                                    None, (p.key,)) for e in state.journal for p in e.pods)}

    def notes(self, state: CycleState) -> Sequence[str]:
        return ("ledger: one binding per pod",)


def profile_with(channel: Channel | None = None, ledger: Ledger | None = None) -> Profile:
    shared = (channel,) if channel is not None else ()
    filters = (*DEFAULT_PROFILE.filters, channel) if channel is not None else DEFAULT_PROFILE.filters
    return dataclasses.replace(DEFAULT_PROFILE, shared=shared, filters=filters,
                               outcomes=(ledger,) if ledger is not None else (), _skipping={})


def solve_gang(profile: Profile, n: int = 2, channel: bool = True) -> Plan | Unschedulable:
    pods = [pod(f"g-{i}", namespace=NS, group="g", labels={"channel": "yes"} if channel else None) for i in range(n)]
    (tree,) = build_trees(pods, [pg("g", n)], [], scheduler_name="gang-scheduler").trees
    assert tree.state is TreeState.READY, tree.message
    nodes = [node(f"n{i}", cpu="8") for i in range(3)]
    return solve(tree, Snapshot.build(NodeTable.build(nodes), pods), profile=profile)


def test_a_leaf_is_placed_under_each_way_held_until_one_fits() -> None:
    channel = Channel(["n-gone", "n2"])  # the first way reaches no node: the search must try the second
    plan = solve_gang(profile_with(channel))
    assert isinstance(plan, Plan), plan
    assert {n for _, n in plan.placements} == {"n2"}
    assert channel.calls == [("g", ("channel",))]


def test_a_leaf_without_anything_in_common_is_placed_without_asking_to_hold() -> None:
    channel = Channel(["n1"])
    plan = solve_gang(profile_with(channel), channel=False)
    assert isinstance(plan, Plan), plan
    assert channel.calls == []
    assert len(plan.placements) == 2


def test_no_way_to_hold_gives_the_plugins_reason_and_name() -> None:
    result = solve_gang(profile_with(Channel([])))
    assert isinstance(result, Unschedulable), result
    assert result.code is Code.UNSCHEDULABLE
    assert "gang g: no free channel for channel" in result.message
    assert "Channel" in result.rejectors


def test_the_plan_carries_what_the_outcome_plugins_fill_and_note() -> None:
    plan = solve_gang(profile_with(ledger=Ledger()))
    assert isinstance(plan, Plan), plan
    assert sorted(b.claim for b in plan.volumes) == [f"{NS}/data-g-0", f"{NS}/data-g-1"]
    assert {b.node for b in plan.volumes} == {n for _, n in plan.placements}
    assert plan.selector_errors == ("ledger: one binding per pod",)
    assert plan.allocations == ()  # no plugin filled it
