"""A victim's DELETE answered 409 although the victim is still the same pod: the preemptor must not wait for
it forever. The victim is read again, and deleted again while it is the same uid; a root that waited on its
victims past their grace period plus a margin plans again."""

from __future__ import annotations

import kmock
import pytest

from scheduler.client.kube import KubeClient
from tests.integration.apiserver import ApiServer
from tests.integration.livekit import refusing_first, running, until
from tests.integration.test_preemption import _bound, full_node_and_preemptor, let_go, terminating


def conflicting_deletes(k8s: ApiServer, times: int) -> dict[str, int]:
    """Answer the first ``times`` DELETEs of each pod with 409 although nothing changed (a server-side conflict
    the client cannot tell from a replacement); later ones go through. Returns the count refused per pod."""
    return refusing_first(k8s, times, 409, k8s._serve_delete, "delete", kmock.resource("v1/pods"))


@pytest.mark.looptime
async def test_a_victim_delete_refused_with_409_is_tried_again_while_it_is_the_same_pod(
        k8s: ApiServer, kube: KubeClient) -> None:
    refused = conflicting_deletes(k8s, 1)
    await full_node_and_preemptor(kube)
    async with running(kube):
        for name in ("low-0", "low-1"):
            await until(lambda n=name: terminating(kube, n), timeout_s=60, what=f"{name} deleted after its 409")  # type: ignore[misc]
        assert refused == {"low-0": 1, "low-1": 1}
        await let_go(kube, "low-0")
        await let_go(kube, "low-1")
        placed = await until(lambda: _bound(kube, "high-", 2), what="preemptor bound")
        assert placed == {"high-0": "n0", "high-1": "n0"}


@pytest.mark.looptime
async def test_a_root_waiting_on_victims_past_their_grace_period_plans_again(k8s: ApiServer, kube: KubeClient) -> None:
    refused = conflicting_deletes(k8s, 10**6)  # every DELETE refused: the victims never go
    await full_node_and_preemptor(kube)
    async with running(kube):
        await until(lambda: len(refused) == 2, what="both victims' deletes refused")
        # grace period 30 s + margin: the root plans afresh, chooses the same victims and tries them again
        await until(lambda: min(refused.values()) >= 2 * 3, timeout_s=200, what="a second preemption")
