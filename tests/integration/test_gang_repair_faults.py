"""Gang repair under a failing API server: a teardown one of whose evictions failed is not taken as done —
the gang is torn down again a little later, not left below its minimum for good."""

from __future__ import annotations

import kmock
import pytest

from scheduler.client.kube import KubeClient
from tests.integration.apiserver import ApiServer
from tests.integration.livekit import bound_at_least, create_node, refusing_first, running, until
from tests.integration.test_gang_repair import _all_gone, create_mode_gang
from tests.integration.test_partial_gangs import Refuse


@pytest.mark.looptime
async def test_a_teardown_whose_eviction_failed_is_tried_again(k8s: ApiServer, kube: KubeClient) -> None:
    failed = refusing_first(k8s, 1, 500, k8s._serve_delete, "delete", kmock.resource("v1/pods"))  # once per pod
    await create_node(kube, "n0", cpu="8")
    await create_mode_gang(kube, "a", 8, "all")
    Refuse("a-7").on_binds(k8s)  # its eighth member never binds: 7/8 for good
    async with running(kube, gang_repair_timeout_s=20.0):
        await until(lambda: bound_at_least(kube, "a-", 7), what="7 of 8 bound")
        await until(lambda: len(failed) == 7, timeout_s=60, what="the teardown's evictions, each failed once")
        await until(lambda: _all_gone(kube), timeout_s=60, what="all 7 bound members evicted on a retry")
