"""The cache benchmark's objects are what a v1.37 API server would serve (valid against its strict schemas), the
scheduler's decoding takes every one of them as the full model does, and a small run of the benchmark completes
with every pod in the cache."""

from __future__ import annotations

import json
import random

import pytest

from scheduler.cache.cluster import ClusterCache
from scheduler.model.pod import Pod
from tests.bench import bench_cache
from tests.integration.apivalidation import schema_errors

KUBE_VERSION = "1.37.0"


def test_its_pods_are_valid_v137_pods_each_with_its_own_token_volume() -> None:
    rng = random.Random(3)
    bound = bench_cache.pod_dict("g00001-0", "g00001", "gpu-00001", gpu=True, rng=rng)
    pending = bench_cache.pod_dict("g00002-0", "g00002", None, gpu=False, rng=rng)
    other = bench_cache.pod_dict("web-0", None, "cpu-00002", gpu=False, rng=rng)
    for pod in (bound, pending, other):
        assert schema_errors(pod, "v1", "Pod", KUBE_VERSION) == []
        assert pod["metadata"]["managedFields"]
    assert bound["status"]["phase"] == "Running" and bound["status"]["containerStatuses"]
    assert pending["status"]["phase"] == "Pending" and "nodeName" not in pending["spec"]
    tokens = {p["metadata"]["name"]: [v["name"] for v in p["spec"]["volumes"] if v["name"].startswith("kube-api")]
              for p in (bound, pending, other)}
    assert all(len(names) == 1 for names in tokens.values())
    assert len({names[0] for names in tokens.values()}) == 3


def test_its_nodes_pods_and_podgroups_decode_as_run_decodes_them_and_as_the_full_model_does() -> None:
    nodes = bench_cache.node_dicts(4, 5)
    pods = list(bench_cache.pods_of([n["metadata"]["name"] for n in nodes], gangs=3, seed=5))
    cache = ClusterCache(bench_cache.SCHEDULER)
    assert bench_cache.relist(cache, "PodGroup", iter([bench_cache.podgroup_dict(f"g{g:05d}", 10)
                                                      for g in range(3)])) >= 0
    bench_cache.relist(cache, "Pod", iter(pods))
    assert len(cache.pods) == len(pods) == 30
    for raw in pods:
        key = f"{bench_cache.NS}/{raw['metadata']['name']}"
        full = Pod.model_validate(raw)
        assert cache.pods[key].requests == full.requests
        assert cache.pods[key].spec.node_name == full.spec.node_name
    line = bench_cache.event_line("MODIFIED", {**pods[0], "metadata": {**pods[0]["metadata"], "resourceVersion": "9"}})
    type_, obj = bench_cache.decoded("Pod", line)
    assert type_ == "MODIFIED" and obj.metadata.resource_version == "9"
    assert json.loads(line)["object"]["metadata"]["name"] == pods[0]["metadata"]["name"]


def test_a_small_run_completes_with_every_pod_in_the_cache(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_cache.main(["--nodes", "50", "--pods", "1000", "--events", "10"]) == 0
    out = capsys.readouterr().out
    assert "100 roots" in out
    assert "verdict:" in out
