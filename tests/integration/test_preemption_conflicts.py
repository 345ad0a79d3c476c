"""A victim's DELETE answered 409 although the victim is still the same pod: the preemptor must not wait for
it forever. The victim is read again, and deleted again while it is the same uid; a root that waited on its
victims past their grace period plus a margin plans again, unless they are terminating on its nominated nodes
(``test_preemption_reports``)."""

from __future__ import annotations

import logging
from typing import Any

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


@pytest.mark.looptime
async def test_a_root_whose_victims_deletion_did_not_take_effect_plans_again_past_their_grace_period(
        k8s: ApiServer, kube: KubeClient, caplog: pytest.LogCaptureFixture) -> None:
    """Every DELETE answered 200 but the victims stay running (not terminating): nothing holds the root past their
    grace period plus the margin, and it preempts again."""
    deletes: list[str] = []

    async def ignored(request: kmock.Request) -> Any:
        deletes.append(request.name)
        return {"kind": "Status", "apiVersion": "v1", "status": "Success"}

    k8s["delete", kmock.resource("v1/pods")] << ignored
    await full_node_and_preemptor(kube)
    with caplog.at_level(logging.WARNING, logger="scheduler.live.preemptor"):
        async with running(kube):
            await until(lambda: sorted(deletes) == ["low-0", "low-1"], what="both victims deleted")
            assert not await terminating(kube, "low-0")
            await until(lambda: len(deletes) == 4, timeout_s=200, what="a second preemption")
    assert [r.getMessage() for r in caplog.records if "grace period" in r.getMessage()] == [
        "PodGroup ml/high: victims ml/low-0, ml/low-1 still there past their grace period, not terminating on a "
        "nominated node; planning again"]
