"""A large gang's durable intent against the API server's 256 KiB annotation limit.

At ~60 bytes per member, a plain intent of a 5,000-pod gang would pass the limit the API server sets for all of a
pod's annotations. A large plan's intent is compressed and carried by its first Binding alone, the other binds
starting once it has landed, the next two carrying it too; one too large even compressed is not recorded, and the
gang is bound without it. These tests bind through the binder to the emulator, and read the intent back from the
stored pod as the cache does.
"""

from __future__ import annotations

import logging
import random
import uuid

import pytest

from scheduler.client.kube import PODS, KubeClient
from scheduler.groups.intent import COMPRESSED, INTENT_ANNOTATION, parse_intent
from scheduler.live.binder import Binder
from scheduler.model import Pod
from tests.integration.apiserver import ApiServer

NS = "ml"
CREATED = 4
"""Members created in the emulator; the others of a plan exist only in it (their binds answer 404 and stop the
plan, which is all these tests need of them)."""


def members(n: int) -> list[tuple[Pod, str]]:
    rng = random.Random(n)
    return [(Pod.model_validate({"metadata": {"name": f"llm-pretrain-6f7c9-workers-2rl42-{i}", "namespace": NS,
                                              "uid": str(uuid.UUID(int=rng.getrandbits(128)))},
                                 "spec": {"schedulingGroup": {"podGroupName": "big"}, "containers": [{"name": "m"}]}}),
             "n1") for i in range(n)]


async def create(kube: KubeClient, planned: list[tuple[Pod, str]]) -> list[Pod]:
    made = []
    for member, _ in planned[:CREATED]:
        body = member.model_dump(mode="json", by_alias=True, exclude_defaults=True)
        made.append(Pod.model_validate(await kube.create(PODS, NS, body)))
    return made


async def stored(kube: KubeClient, name: str) -> Pod:
    return Pod.model_validate(await kube.get(PODS, NS, name))


async def test_a_1000_pod_gang_carries_its_intent_compressed_on_its_first_three_bindings(
        k8s: ApiServer, kube: KubeClient) -> None:
    planned = members(1000)
    made = await create(kube, planned)
    planned[:CREATED] = [(pod, node) for pod, (_, node) in zip(made, planned, strict=False)]

    outcome = await Binder(kube).bind_plan(planned, token="PodGroup/ml/big#1")

    assert outcome.failed is not None  # the first member not created
    first = await stored(kube, made[0].metadata.name)
    assert first.spec.node_name == "n1" and first.metadata.annotations[INTENT_ANNOTATION].startswith(COMPRESSED)
    intent = parse_intent(first)
    assert intent is not None and intent.pods == {p.key: (n, p.metadata.uid[:8]) for p, n in planned}
    later = [await stored(kube, pod.metadata.name) for pod in made[1:]]  # bound after the first landed
    assert [p.spec.node_name for p in later] == ["n1"] * (CREATED - 1)
    assert [p.metadata.annotations.get(INTENT_ANNOTATION) for p in later] == [
        first.metadata.annotations[INTENT_ANNOTATION]] * 2 + [None]  # the next two carry it, no more


async def test_a_gang_too_large_to_record_is_bound_without_intent(
        k8s: ApiServer, kube: KubeClient, caplog: pytest.LogCaptureFixture) -> None:
    planned = members(12_000)
    made = await create(kube, planned)
    planned[:CREATED] = [(pod, node) for pod, (_, node) in zip(made, planned, strict=False)]

    with caplog.at_level(logging.WARNING):
        await Binder(kube).bind_plan(planned, token="PodGroup/ml/big#2")

    assert (await stored(kube, made[0].metadata.name)).spec.node_name == "n1"
    for pod in made:
        assert INTENT_ANNOTATION not in (await stored(kube, pod.metadata.name)).metadata.annotations
    assert any("too large to record as its intent" in m for m in caplog.messages)
    assert not [e for e in k8s.errors if getattr(e, "status", None) == 422]
