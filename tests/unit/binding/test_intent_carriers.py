"""Which Bindings carry a plan's durable intent (``scheduler.binding.pods``): every one of a small plan; of a large
plan the first, alone, then the next two beside the other binds — and a member found bound already does not count
as the plan on record."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from scheduler.binding.pods import CARRIERS, bind_plan
from scheduler.errors import Conflict, NotFound
from scheduler.groups.intent import INTENT_ANNOTATION, SHARED_MAX_BYTES, parse_intent
from scheduler.model import Pod

LARGE = 40
"""Members of a plan whose intent is over :data:`SHARED_MAX_BYTES`."""


def member(i: int, annotations: dict[str, str] | None = None) -> Pod:
    return Pod.model_validate({"metadata": {"name": f"w-{i}", "namespace": "ml", "uid": f"{i:08d}-uid",
                                            "annotations": annotations or {}},
                               "spec": {"schedulingGroup": {"podGroupName": "g"}, "containers": [{"name": "c"}]}})


FULL = {"example.com/config": "x" * (256 * 1024 - 200)}
"""Annotations that leave no room for an intent within the API server's 256 KiB for all of a pod's."""


class Writer:
    """The part of an ApiWriter ``bind_plan`` uses, as the API server answers: a Binding's annotations are merged
    into the pod; ``already``: pods bound to their node before, with these annotations (a bind of them is a 409);
    ``refuse``: pods whose bind is a 404. ``log``: each bind's start and end, in order."""

    def __init__(self, already: dict[str, dict[str, str]] | None = None, refuse: frozenset[str] = frozenset()):
        self.log: list[tuple[str, str]] = []
        self.stored: dict[str, dict[str, Any]] = {}
        self.already, self.refuse = already or {}, refuse

    def leading(self) -> bool:
        return True

    def slot(self) -> contextlib.AbstractAsyncContextManager[Any]:
        return contextlib.nullcontext()

    async def bind(self, pod: Pod, node: str, annotations: dict[str, str] | None = None, check: Any = None) -> None:
        name = pod.metadata.name
        self.log.append(("start", name))
        await asyncio.sleep(0.01)
        self.log.append(("end", name))
        if name in self.refuse:
            raise NotFound(404, "NotFound", "injected")
        if name in self.already:
            self.stored[name] = {"metadata": {"uid": pod.metadata.uid, "annotations": self.already[name]},
                                 "spec": {"nodeName": node}}
            raise Conflict(409, "Conflict", f"pod {name} is already assigned to node {node}")
        self.stored[name] = {"metadata": {"uid": pod.metadata.uid, "annotations": dict(annotations or {})},
                             "spec": {"nodeName": node}}

    async def get(self, kind: Any, namespace: str, name: str) -> dict[str, Any]:
        return self.stored[name]

    def carriers(self) -> list[str]:
        return [name for name, obj in self.stored.items() if INTENT_ANNOTATION in obj["metadata"]["annotations"]]

    def intent_of(self, name: str) -> Any:
        annotations = self.stored[name]["metadata"]["annotations"]
        return parse_intent(Pod.model_validate({"metadata": {"name": name, "namespace": "ml",
                                                             "annotations": annotations},
                                                "spec": {"containers": [{"name": "c"}]}}))


def plan(n: int) -> list[tuple[Pod, str]]:
    return [(member(i), "n1") for i in range(n)]


async def test_every_binding_of_a_small_plan_carries_it_side_by_side() -> None:
    writer = Writer()
    outcome = await bind_plan(plan(4), writer, token="t#1")
    assert outcome.ok and sorted(writer.carriers()) == ["w-0", "w-1", "w-2", "w-3"]
    assert [kind for kind, _ in writer.log[:4]] == ["start"] * 4  # all four in flight at once
    assert len(writer.stored["w-0"]["metadata"]["annotations"][INTENT_ANNOTATION]) <= SHARED_MAX_BYTES


async def test_a_large_plan_lands_its_first_carrier_alone_then_two_more_beside_the_rest() -> None:
    writer = Writer()
    outcome = await bind_plan(plan(LARGE), writer, token="t#1")
    assert outcome.ok and len(outcome.bound) == LARGE
    assert writer.log[:2] == [("start", "w-0"), ("end", "w-0")]
    assert sorted(writer.carriers()) == [f"w-{i}" for i in range(CARRIERS)]
    intent = writer.intent_of("w-1")
    assert intent is not None and len(intent.pods) == LARGE


async def test_a_first_binding_refused_binds_nothing_else() -> None:
    writer = Writer(refuse=frozenset({"w-0"}))
    outcome = await bind_plan(plan(LARGE), writer, token="t#1")
    assert outcome.failed is not None and outcome.failed[0] == "ml/w-0"
    assert outcome.bound == [] and len(outcome.skipped) == LARGE - 1
    assert [entry for entry in writer.log if entry[1] != "w-0"] == []


async def test_a_member_found_bound_already_is_not_the_plan_on_record() -> None:
    """The first member was bound by an earlier attempt (another leader's, with its older plan): the next member's
    Binding carries this plan, alone, before the rest start — some bound member carries it."""
    older = json.dumps({"plan": "old", "at": "2000-01-01T00:00:00.000000+00:00", "pods": {}})
    writer = Writer(already={"w-0": {INTENT_ANNOTATION: older}}, refuse=frozenset({f"w-{LARGE - 1}"}))
    outcome = await bind_plan(plan(LARGE), writer, token="t#2")
    assert writer.log[:4] == [("start", "w-0"), ("end", "w-0"), ("start", "w-1"), ("end", "w-1")]
    assert len(outcome.bound) >= 2
    intent = writer.intent_of("w-1")
    assert intent is not None and f"ml/w-{LARGE - 1}" in intent.pods


async def test_a_member_without_room_for_the_intent_is_bound_without_it() -> None:
    """A pod whose annotations leave no room for the plan (past 256 KiB the API server refuses its every later
    update, the kubelet's included) is bound without it; of a large plan another member carries it first."""
    small = [(member(0, FULL), "n1"), *plan(4)[1:]]
    writer = Writer()
    assert (await bind_plan(small, writer, token="t#1")).ok
    assert sorted(writer.carriers()) == ["w-1", "w-2", "w-3"]
    large = [(member(0, FULL), "n1"), *plan(LARGE)[1:]]
    writer = Writer()
    assert (await bind_plan(large, writer, token="t#2")).ok
    assert writer.log[:2] == [("start", "w-1"), ("end", "w-1")]
    assert sorted(writer.carriers()) == ["w-1", "w-2", "w-3"] and "w-0" in writer.stored
