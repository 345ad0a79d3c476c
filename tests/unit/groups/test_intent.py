"""The durable intent's value: what is written reads back, large gangs stay under the API server's
256 KiB annotation limit, and anything else on the annotation reads as no intent."""

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
    PLAIN_MAX_BYTES,
    intended_node,
    intent_annotation,
    intent_entries,
    parse_intent,
)
from scheduler.model import Pod, PodGroup
from tests.unit.groups.builders import pg_dict

NODE = "ip-10-0-{}.us-east-2.compute.internal"


def member(i: int, uid: str | None = None) -> Pod:
    return Pod.model_validate({"metadata": {"name": f"llm-pretrain-6f7c9-workers-2rl42-{i}", "namespace": "ml",
                                            "uid": uid or str(uuid.UUID(int=random.Random(i).getrandbits(128)))},
                               "spec": {"containers": [{"name": "main"}]}})


def group_with(value: str) -> PodGroup:
    body = pg_dict("g", 2)
    body["metadata"]["annotations"] = {INTENT_ANNOTATION: value}
    return PodGroup.model_validate(body)


def placements(n: int) -> list[tuple[Pod, str]]:
    return [(member(i), NODE.format(i // 8)) for i in range(n)]


@pytest.mark.parametrize("n", [3, 1_000, 9_000], ids=["plain", "compressed", "compressed-9000"])
def test_what_is_written_reads_back(n: int) -> None:
    planned = placements(n)
    value = intent_annotation("PodGroup/ml/g#7", planned)
    assert value is not None and len(value.encode()) <= INTENT_MAX_BYTES
    assert value.startswith(COMPRESSED) == (n > 3)
    read = parse_intent(group_with(value))
    assert read == intent_entries(planned)
    assert all(intended_node(read, pod) == node for pod, node in planned)


def test_a_small_intent_is_readable_json() -> None:
    value = intent_annotation("t", placements(1))
    assert value == ('{"plan":"t","pods":{"llm-pretrain-6f7c9-workers-2rl42-0":{"node":"ip-10-0-0.us-east-2.compute.'
                     'internal","uid":"e3e70682"}}}')
    assert len(value) < PLAIN_MAX_BYTES


def test_a_gang_too_large_to_record_gets_none() -> None:
    assert intent_annotation("t", placements(12_000)) is None


def test_a_recreated_member_is_not_held_for() -> None:
    pod = member(1, uid="aaaaaaaa-0000-0000-0000-000000000000")
    read = parse_intent(group_with(intent_annotation("t", [(pod, "n1")]) or ""))
    assert intended_node(read, pod) == "n1"
    assert intended_node(read, member(1, uid="bbbbbbbb-0000-0000-0000-000000000000")) is None


@pytest.mark.parametrize("value", [
    "not json", '["a list"]', '{"pods": {"p": {"uid": "x"}}}', COMPRESSED + "!!!not base64",
    COMPRESSED + base64.b64encode(b"not zlib").decode(),
    COMPRESSED + base64.b64encode(zlib.compress(b"{" + b" " * (32 * 1024 * 1024) + b"}")).decode(),
], ids=["text", "list", "no-node", "bad-base64", "bad-zlib", "inflates-past-16-mib"])
def test_anything_else_reads_as_no_intent(value: str) -> None:
    assert parse_intent(group_with(value)) == {}
