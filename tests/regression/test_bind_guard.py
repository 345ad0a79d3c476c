"""An unexpected error inside a plan's bind transaction must not forget members the server has bound.

The guard around binding used to forget *every* placement of the plan. When the error came after some
binds had landed (and before the watch showed them), their room looked free: the root was planned again
(``409 … already assigned to node``) and another plan took the room — the overcommit seen on a real
kube-apiserver. Now the guard forgets only the members not bound.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.client.kube import KubeClient
from scheduler.framework.binding_cycle import BindingCycle
from scheduler.model.scheduling import GroupKey
from tests.integration.lagging import lagging_server
from tests.integration.livekit import NS, bound_at_least, create_gang, create_node, running, until


@pytest.mark.looptime
async def test_members_bound_before_an_internal_error_stay_counted_and_the_root_is_not_planned_again() -> None:
    async with lagging_server(lag_s=(2.0, 2.0)) as k8s:  # the watch shows a bind 2 s after it landed
        kube = KubeClient.for_host(str(k8s.url))
        try:
            await _scenario(kube)
        finally:
            await kube.close()


async def _scenario(kube: KubeClient) -> None:
    await create_node(kube, "n0", cpu="4")
    async with running(kube, backoff_initial_s=0.1, backoff_max_s=0.2) as sched:
        real = sched.binder.commit
        calls = 0

        async def commit_then_fail(cycle: BindingCycle) -> Any:
            nonlocal calls
            calls += 1
            await real(cycle)  # every bind lands...
            raise RuntimeError("a bug after binding")  # ...then the transaction blows up

        sched.binder.commit = commit_then_fail  # type: ignore[method-assign]
        await create_gang(kube, "g", 4, cpu="1")
        await until(lambda: bound_at_least(kube, "g-", 4), what="gang bound")
        await until(lambda: not sched.cache.assumed, what="the watch showing every bind")
        tree = sched.cache.tree(GroupKey("PodGroup", NS, "g"))
        assert tree is not None and tree.state.value == "Scheduled"
        snapshot = sched.cache.snapshot()
        assert int(snapshot.used[0, snapshot.table.column["cpu"]]) == 4000  # counted once, not forgotten
        assert calls == 1  # never planned again
