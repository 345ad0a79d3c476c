"""The DRA drain's objects (``tests/bench/dra_workload.py``) are accepted by the strict emulator as sent, and the
scheduler binds a gang made of them with each claim allocated on its pod's node."""

from __future__ import annotations

import pytest

from scheduler.client.kube import (
    DEVICE_CLASSES,
    NODES,
    PODGROUPS,
    PODS,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    KubeClient,
)
from tests.bench import dra_workload
from tests.integration.apiserver import ApiServer
from tests.integration.livekit import NS, bound_at_least, node, podgroup, running, until


@pytest.mark.looptime
@pytest.mark.parametrize("real", [False, True], ids=["named", "job-generated"])
async def test_the_dra_drains_objects_are_valid_and_its_gang_is_bound_with_claims_on_its_nodes(
        k8s: ApiServer, kube: KubeClient, real: bool) -> None:
    nodes = [await kube.create(NODES, None, node(f"n{i}", cpu="4")) for i in range(2)]
    await kube.create(DEVICE_CLASSES, None, dra_workload.device_class())
    slices = [await kube.create(RESOURCE_SLICES, None, dra_workload.node_slice(n["metadata"]["name"],
                                                                               n["metadata"]["uid"]))
              for n in nodes]
    template = await kube.create(RESOURCE_CLAIM_TEMPLATES, NS, dra_workload.claim_template("g"))
    await kube.create(PODGROUPS, NS, podgroup("g", 4))
    claims: dict[str, str] = {}
    for m in range(4):
        made, claim = await dra_workload.create_member(kube, "g", m, template, real)
        pod = await kube.get(PODS, NS, made["metadata"]["name"])
        named = claim["metadata"]["name"]
        assert pod["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": named}]
        claims[made["metadata"]["name"]] = claim["metadata"]["name"]
        assert claim["metadata"]["name"].startswith(f"{made['metadata']['name']}-gpu-")
        assert claim["metadata"]["ownerReferences"][0]["uid"] == made["metadata"]["uid"]
        assert claim["spec"] == template["spec"]["spec"]
    assert [len(s["spec"]["devices"]) for s in slices] == [8, 8] == [dra_workload.devices_per_slice()] * 2
    uuids = {d["attributes"]["uuid"]["string"] for s in slices for d in s["spec"]["devices"]}
    assert len(uuids) == 16  # per-node GPU UUIDs, as two real nodes' GPUs have
    async with running(kube):
        placed = await until(lambda: bound_at_least(kube, "g-", 4), what="DRA gang bound")
    assert placed is not None and set(placed) == set(claims)
    taken = set()
    for pod_name, claim_name in claims.items():
        status = (await kube.get(RESOURCE_CLAIMS, NS, claim_name))["status"]
        results = status["allocation"]["devices"]["results"]
        assert [(r["driver"], r["pool"]) for r in results] == [(dra_workload.DRIVER, placed[pod_name])]
        taken |= {(r["pool"], r["device"]) for r in results}
    assert len(taken) == 4
