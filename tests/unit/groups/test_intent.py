"""The durable intent's value: what a Binding carries reads back from the pod, large gangs stay under the API
server's 256 KiB annotation limit, the latest plan wins where several are on record, and anything else on the
annotation reads as no intent."""

from __future__ import annotations

import base64
import random
import uuid
import zlib

import pytest

from scheduler.groups.intent import (
    COMPRESSED,
    INTENT_ANNOTATION,
    INTENT_MAX_BYTES,
    NO_INTENT,
    PLAIN_MAX_BYTES,
    held_intent,
    intended_node,
    intent_annotation,
    intent_problem,
    parse_intent,
)
from scheduler.model import Pod

NODE = "ip-10-0-{}.us-east-2.compute.internal"
AT = "2026-12-05T10:00:00.000000+00:00"
LATER = "2026-12-05T10:00:01.500000+00:00"


def member(i: int, uid: str | None = None, annotation: str | None = None) -> Pod:
    meta = {"name": f"llm-pretrain-6f7c9-workers-2rl42-{i}", "namespace": "ml",
            "uid": uid or str(uuid.UUID(int=random.Random(i).getrandbits(128)))}
    if annotation is not None:
        meta["annotations"] = {INTENT_ANNOTATION: annotation}
    return Pod.model_validate({"metadata": meta, "spec": {"containers": [{"name": "main"}]}})


def carrying(value: str) -> Pod:
    """A bound member whose Binding carried ``value``."""
    return member(999, annotation=value)


def placements(n: int) -> list[tuple[Pod, str]]:
    return [(member(i), NODE.format(i // 8)) for i in range(n)]


@pytest.mark.parametrize("n", [3, 1_000, 9_000], ids=["plain", "compressed", "compressed-9000"])
def test_what_is_written_reads_back(n: int) -> None:
    planned = placements(n)
    value = intent_annotation("PodGroup/ml/g#7", AT, planned)
    assert value is not None and len(value.encode()) <= INTENT_MAX_BYTES
    assert value.startswith(COMPRESSED) == (n > 3)
    read = parse_intent(carrying(value))
    assert read is not None and read.at == AT
    assert read.pods == {pod.key: (node, pod.metadata.uid[:8]) for pod, node in planned}
    assert all(intended_node(read.pods, pod) == node for pod, node in planned)


def test_a_small_intent_is_readable_json() -> None:
    value = intent_annotation("t", AT, placements(1))
    assert value == ('{"plan":"t","at":"2026-12-05T10:00:00.000000+00:00","pods":{"llm-pretrain-6f7c9-workers-2rl42-0":'
                     '{"node":"ip-10-0-0.us-east-2.compute.internal","uid":"e3e70682"}}}')
    assert len(value) < PLAIN_MAX_BYTES


def test_a_gang_too_large_to_record_gets_none() -> None:
    assert intent_annotation("t", AT, placements(12_000)) is None


def test_a_recreated_member_is_not_held_for() -> None:
    pod = member(1, uid="aaaaaaaa-0000-0000-0000-000000000000")
    read = held_intent([carrying(intent_annotation("t", AT, [(pod, "n1")]) or "")])
    assert intended_node(read, pod) == "n1"
    assert intended_node(read, member(1, uid="bbbbbbbb-0000-0000-0000-000000000000")) is None


def test_the_latest_plan_naming_a_pod_wins() -> None:
    """A plan bound some members, then failed; the next plan for the rest chose other nodes and bound some of them:
    each pending member is held where the latest plan naming it put it."""
    a, b, c = member(1), member(2), member(3)
    first = intent_annotation("t#1", AT, [(a, "n1"), (b, "n1"), (c, "n1")]) or ""
    second = intent_annotation("t#2", LATER, [(b, "n2"), (c, "n3")]) or ""
    for bound in ([carrying(first), carrying(second)], [carrying(second), carrying(first)]):
        read = held_intent(bound)
        assert [intended_node(read, p) for p in (a, b, c)] == ["n1", "n2", "n3"]


def test_members_of_one_plan_read_it_once_and_none_reads_as_no_intent() -> None:
    value = intent_annotation("t", AT, placements(4)) or ""
    one = parse_intent(carrying(value))
    assert one is not None and held_intent([carrying(value), carrying(value)]) is one.pods
    assert held_intent([member(1), member(2)]) is NO_INTENT


@pytest.mark.parametrize("value", [
    "not json", '["a list"]', '{"pods": {"p": {"uid": "x"}}}', '{"at": 7, "pods": {}}', "{}",
    '{"at": "a", "pods": {"p": {"node": "n1"}}}', COMPRESSED + "!!!not base64",
    COMPRESSED + base64.b64encode(b"not zlib").decode(),
    COMPRESSED + base64.b64encode(zlib.compress(b"{" + b" " * (32 * 1024 * 1024) + b"}")).decode(),
    "[" * 60_000, "x" * (INTENT_MAX_BYTES + 1),
], ids=["text", "list", "no-node", "at-not-a-string", "empty", "no-uid", "bad-base64", "bad-zlib",
        "inflates-past-16-mib", "too-deep", "too-large"])
def test_anything_else_reads_as_no_intent(value: str) -> None:
    pod = carrying(value)
    assert parse_intent(pod) is None and held_intent([pod]) is NO_INTENT
    assert intent_problem(pod) is not None


@pytest.mark.parametrize(("value", "said"), [
    ("not json", "is not JSON"),
    ('{"at": "a", "pods": {"p": {"node": "n1"}}}',
     'does not have the shape {"at": string, "pods": {pod name: {"node": string, "uid": string}}}'),
    (COMPRESSED + "!!!", "is not base64 of zlib-compressed JSON after 'zlib:'"),
])
def test_why_an_intent_is_invalid_is_said_in_words(value: str, said: str) -> None:
    assert intent_problem(carrying(value)) == f"{INTENT_ANNOTATION} {said}"
