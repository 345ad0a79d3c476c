"""A watch that stays open and goes silent — no event, no error — is taken as dropped after one bookmark
interval plus a margin, and resumed from its resourceVersion: a gang created meanwhile is bound within that,
not after the minutes a read timeout would take."""

from __future__ import annotations

from scheduler.client.kube import KubeClient
from tests.integration.apiserver import ApiServer
from tests.integration.livekit import bound_at_least, create_gang, create_node, running, until

SILENCE_S = 2.0
"""The silence the test's client tolerates (a cluster's is a bookmark interval plus a margin: 90 s)."""


async def test_a_silent_watch_is_resumed_and_a_new_gang_is_bound(k8s: ApiServer, kube: KubeClient) -> None:
    kube.watch_silence_s = SILENCE_S
    await create_node(kube, "n0", cpu="8")
    async with running(kube) as sched:
        pods = next(i for i in sched.watches.informers if i.resource.plural == "pods")
        relists = pods.relists
        assert k8s.stall_watches("v1/pods") == 1
        await create_gang(kube, "late", 2)
        await until(lambda: bound_at_least(kube, "late-", 2), timeout_s=SILENCE_S + 20,
                    what="the gang created while the pods watch was silent")
        assert pods.relists == relists  # resumed from its resourceVersion, not listed again
    watches = [r.params for r in k8s if r.method == "GET" and r.params.get("watch") == "true"]
    assert all(w["allowWatchBookmarks"] == "true" for w in watches)
    timeouts = {int(w["timeoutSeconds"]) for w in watches}
    assert min(timeouts) >= 300 and max(timeouts) <= 600 and len(timeouts) > 1  # spread as client-go's reflector
