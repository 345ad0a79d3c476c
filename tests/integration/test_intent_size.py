"""A large gang's durable intent against the API server's 256 KiB annotation limit.

At ~135 bytes per member, a plain intent of a 2,000-pod gang is refused by a real server with 422
(``metadata.annotations: Too long``), and the plan would be retried, and refused, forever. The
emulator now applies that limit (``apivalidation.validate_annotations``). These tests write intents
through the binder to it, and read them back from the stored object as the cache does.
"""

from __future__ import annotations

import random
import uuid

from scheduler.client.kube import PODGROUPS, KubeClient
from scheduler.framework import Plan
from scheduler.groups.intent import COMPRESSED, INTENT_ANNOTATION, intent_entries, parse_intent
from scheduler.live.binder import Binder
from scheduler.model import Pod, PodGroup
from scheduler.model.scheduling import GroupKey
from tests.integration.apiserver import ApiServer

NS = "ml"


def members(n: int) -> list[tuple[Pod, str]]:
    rng = random.Random(n)
    return [(Pod.model_validate({"metadata": {"name": f"llm-pretrain-6f7c9-workers-2rl42-{i}", "namespace": NS,
                                              "uid": str(uuid.UUID(int=rng.getrandbits(128)))},
                                 "spec": {"schedulingGroup": {"podGroupName": "big"}, "containers": [{"name": "m"}]}}),
             f"ip-10-0-{i // 8}.us-east-2.compute.internal") for i in range(n)]


async def stored(kube: KubeClient) -> PodGroup:
    return PodGroup.model_validate(await kube.get(PODGROUPS, NS, "big"))


async def create_group(kube: KubeClient, annotations: dict[str, str] | None = None) -> None:
    await kube.create(PODGROUPS, NS, {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                                      "metadata": {"name": "big", "annotations": annotations or {}},
                                      "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}}})


async def test_a_3000_pod_gang_records_its_intent_compressed(k8s: ApiServer, kube: KubeClient) -> None:
    await create_group(kube)
    planned = members(3000)
    plan = Plan(GroupKey("PodGroup", NS, "big"), tuple(planned), frozenset())

    failed = await Binder(kube).write_intent(plan, "PodGroup/ml/big#1")

    assert failed is None
    group = await stored(kube)
    assert group.metadata.annotations[INTENT_ANNOTATION].startswith(COMPRESSED)
    assert parse_intent(group) == intent_entries(planned)


async def test_a_gang_too_large_to_record_is_bound_without_intent_and_an_older_one_goes(
        k8s: ApiServer, kube: KubeClient) -> None:
    await create_group(kube, {INTENT_ANNOTATION: '{"plan":"old","pods":{"x":{"node":"n1","uid":""}}}'})
    plan = Plan(GroupKey("PodGroup", NS, "big"), tuple(members(12_000)), frozenset())

    failed = await Binder(kube).write_intent(plan, "PodGroup/ml/big#2")

    assert failed is None
    assert INTENT_ANNOTATION not in (await stored(kube)).metadata.annotations
    assert not [e for e in k8s.errors if getattr(e, "status", None) == 422]
