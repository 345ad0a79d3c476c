"""No single object stops scheduling: a bound pod whose durable intent annotation is a 60 KB nesting bomb is
read as having no intent, counted and reported on itself, and its gang and an innocent gang are still bound."""

from __future__ import annotations

import pytest

from scheduler.client.kube import EVENTS, PODGROUPS, PODS, KubeClient
from scheduler.groups.intent import INTENT_ANNOTATION
from tests.integration.livekit import NS, bound_at_least, create_gang, create_node, pod, podgroup, running, until

BOMBS = ["[" * 60000, '{"pods":' * 20000]
"""Two 60 KB intents, well under the API server's 256 KiB for all annotations, nested far past any decoder."""


def refused(sched, kind: str, reason: str) -> float:  # type: ignore[no-untyped-def]
    value = sched.metrics.registry.get_sample_value("gang_scheduler_objects_refused_total",
                                                    {"kind": kind, "reason": reason})
    return float(value or 0.0)


async def warnings_on(kube: KubeClient, name: str) -> list[str]:
    items, _ = await kube.list(EVENTS, NS)
    return [e["note"] for e in items if e["regarding"]["name"] == name and e["reason"] == "ObjectRefused"]


@pytest.mark.looptime
async def test_a_nesting_bomb_in_one_intent_does_not_stop_an_innocent_gang(k8s, kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="8")
    await kube.create(PODGROUPS, NS, podgroup("bad", 2))
    carrier = pod("bad-0", "bad")
    carrier["spec"]["nodeName"] = "n0"  # a member bound below its minimum, its intent a bomb
    carrier["metadata"]["annotations"] = {INTENT_ANNOTATION: BOMBS[0]}
    await kube.create(PODS, NS, carrier)
    await kube.create(PODS, NS, pod("bad-1", "bad"))
    async with running(kube) as sched:
        # the same pod changed under a running watch: the old and the new object are both read
        await kube.patch(PODS, NS, "bad-0", {"metadata": {"annotations": {INTENT_ANNOTATION: BOMBS[1]}}})
        await create_gang(kube, "fine", 3)
        await until(lambda: bound_at_least(kube, "fine-", 3), what="the innocent gang is bound")
        await until(lambda: bound_at_least(kube, "bad-", 2), what="the bomb's own gang, read without intent")
        assert refused(sched, "Pod", "invalid_intent") >= 2
        notes = await until(lambda: warnings_on(kube, "bad-0"), what="a Warning Event on the pod")
        assert notes[0] == f"read as having no durable intent: {INTENT_ANNOTATION} is nested too deeply"
        assert all(i.synced.is_set() for i in sched.watches.informers)
        informers = sched.watches.informers
        assert sum(i.relists for i in informers) == len(informers)  # no informer failed and re-listed
