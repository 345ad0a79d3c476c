"""Gang repair under a failing API server: a teardown one of whose evictions failed is not taken as done —
the gang is torn down again a little later, not left below its minimum for good."""

from __future__ import annotations

from typing import Any

import kmock
import pytest

from scheduler.client.kube import KubeClient
from tests.integration.apiserver import ApiServer
from tests.integration.livekit import bound_at_least, create_node, running, until
from tests.integration.test_gang_repair import _all_gone, create_mode_gang
from tests.integration.test_partial_gangs import Refuse


@pytest.mark.looptime
async def test_a_teardown_whose_eviction_failed_is_tried_again(k8s: ApiServer, kube: KubeClient) -> None:
    failed: list[str] = []

    async def react(request: kmock.Request) -> Any:
        if request.name == "a-0" and not failed:
            failed.append(request.name)
            return kmock.KubernetesError(status=500, reason="InternalError", message="etcd timeout")
        return await k8s._serve_delete(request)

    k8s['delete', kmock.resource('v1/pods')] << react
    await create_node(kube, "n0", cpu="8")
    await create_mode_gang(kube, "a", 8, "all")
    Refuse("a-7").on_binds(k8s)  # its eighth member never binds: 7/8 for good
    async with running(kube, gang_repair_timeout_s=20.0):
        await until(lambda: bound_at_least(kube, "a-", 7), what="7 of 8 bound")
        await until(lambda: failed, timeout_s=60, what="the teardown's failed eviction")
        await until(lambda: _all_gone(kube), timeout_s=60, what="all 7 bound members evicted, a-0 on a retry")
