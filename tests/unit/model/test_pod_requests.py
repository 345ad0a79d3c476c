"""``effective_requests``: the resources a pod holds on its node, per kube-scheduler.

The rule (component-helpers ``resource/helpers.go`` ``AggregateContainerRequests``; KEP-753
"Resources calculation for scheduling and pod admission"):

    InitContainerUse(i) = sum(sidecars declared before i) + init container i
    pod = max( max_i InitContainerUse(i), sum(app containers) + sum(sidecars) ) + overhead

taken per resource; a sidecar is an init container with ``restartPolicy: Always`` (its own
InitContainerUse is the running sidecar total). A limit with no request counts as the request
(core/v1 defaulting), every pod uses one ``pods`` slot, and zero entries are dropped.
Units in the expected values: cpu in milli-cores, memory in bytes.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.model import Pod, effective_requests
from scheduler.model.pod import PodSpec
from scheduler.model.quantity import QuantityError
from tests.unit.model.example_data import load_one

MI, GI = 2**20, 2**30


def ctr(
    name: str,
    requests: dict[str, Any] | None = None,
    limits: dict[str, Any] | None = None,
    restart_policy: str | None = None,
) -> dict[str, Any]:
    """A container as the API writes it (camelCase)."""
    out: dict[str, Any] = {"name": name, "image": "busybox", "resources": {}}
    if requests is not None:
        out["resources"]["requests"] = requests
    if limits is not None:
        out["resources"]["limits"] = limits
    if restart_policy is not None:
        out["restartPolicy"] = restart_policy
    return out


def sidecar(name: str, requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None) -> dict[str, Any]:
    """A restartable init container (``restartPolicy: Always``)."""
    return ctr(name, requests, limits, restart_policy="Always")


def spec(
    containers: list[dict[str, Any]] | None = None,
    init: list[dict[str, Any]] | None = None,
    overhead: dict[str, Any] | None = None,
) -> PodSpec:
    raw: dict[str, Any] = {"containers": containers or []}
    if init:
        raw["initContainers"] = init
    if overhead:
        raw["overhead"] = overhead
    return PodSpec.model_validate(raw)


CASES = [
    # --- app containers
    pytest.param(spec(), {"pods": 1}, id="no-containers-only-the-pods-slot"),
    pytest.param(
        spec([ctr("app", {"cpu": "500m", "memory": "1Gi"})]),
        {"cpu": 500, "memory": GI, "pods": 1},
        id="one-container-its-requests",
    ),
    pytest.param(
        spec(
            [
                ctr("a", {"cpu": "1", "memory": "1Gi"}),
                ctr("b", {"cpu": "500m", "memory": "512Mi", "nvidia.com/gpu": 2}),
            ]
        ),
        {"cpu": 1500, "memory": GI + 512 * MI, "nvidia.com/gpu": 2, "pods": 1},
        id="app-containers-add-up-per-resource",
    ),
    pytest.param(
        spec([ctr("a", {"nvidia.com/gpu": "2"}), ctr("b", {"nvidia.com/gpu": "2"}), ctr("c", {"cpu": "1"})]),
        {"cpu": 1000, "nvidia.com/gpu": 4, "pods": 1},
        id="three-containers-still-one-pods-slot-and-gpus-add",
    ),
    # --- regular init containers: run one at a time, so max, never sum
    pytest.param(
        spec([ctr("a", {"cpu": "1"}), ctr("b", {"cpu": "1"})], init=[ctr("init", {"cpu": "3"})]),
        {"cpu": 3000, "pods": 1},
        id="init-larger-than-app-sum-wins:max(3,1+1)=3",
    ),
    pytest.param(
        spec([ctr("a", {"cpu": "1"}), ctr("b", {"cpu": "1"})], init=[ctr("init", {"cpu": "500m"})]),
        {"cpu": 2000, "pods": 1},
        id="init-smaller-than-app-sum-is-hidden:max(0.5,1+1)=2",
    ),
    pytest.param(
        spec([ctr("app", {"cpu": "1"})], init=[ctr("i1", {"cpu": "2"}), ctr("i2", {"cpu": "3"})]),
        {"cpu": 3000, "pods": 1},
        id="init-containers-take-the-max-not-the-sum:max(2,3,1)=3",
    ),
    pytest.param(
        spec([ctr("app", {"cpu": "1", "memory": "8Gi"})], init=[ctr("init", {"cpu": "4", "memory": "1Gi"})]),
        {"cpu": 4000, "memory": 8 * GI, "pods": 1},
        id="max-is-per-resource:cpu-from-init-4,memory-from-app-8Gi",
    ),
    pytest.param(
        spec([ctr("app", {"cpu": "1"})], init=[ctr("init", {"example.com/fpga": "1"})]),
        {"cpu": 1000, "example.com/fpga": 1, "pods": 1},
        id="resource-only-an-init-container-uses-is-kept",
    ),
    # --- sidecars (restartable init containers)
    pytest.param(
        spec([ctr("a", {"cpu": "1"}), ctr("b", {"cpu": "1"})], init=[sidecar("proxy", {"cpu": "1"})]),
        {"cpu": 3000, "pods": 1},
        id="sidecar-adds-to-app-containers:1+(1+1)=3",
    ),
    pytest.param(
        spec([ctr("app", {"cpu": "1"})], init=[sidecar("proxy", {"cpu": "1"}), ctr("init", {"cpu": "3"})]),
        {"cpu": 4000, "pods": 1},
        id="sidecar-adds-to-a-later-init:max(1,1+3,1+1)=4",
    ),
    pytest.param(
        spec([ctr("app", {"cpu": "1"})], init=[ctr("init", {"cpu": "3"}), sidecar("proxy", {"cpu": "1"})]),
        {"cpu": 3000, "pods": 1},
        id="sidecar-does-not-add-to-an-earlier-init:max(3,1,1+1)=3",
    ),
    pytest.param(
        spec(
            [ctr("app", {"cpu": "500m"})],
            init=[sidecar("s1", {"cpu": "1"}), sidecar("s2", {"cpu": "2"}), ctr("init", {"cpu": "1"})],
        ),
        {"cpu": 4000, "pods": 1},
        id="sidecars-accumulate-for-later-inits:max(1,1+2,1+2+1,0.5+1+2)=4",
    ),
    pytest.param(
        spec([ctr("app", {"memory": "1Gi"})], init=[sidecar("log", {"memory": "256Mi"}), ctr("init", {"cpu": "2"})]),
        {"cpu": 2000, "memory": GI + 256 * MI, "pods": 1},
        id="sidecar-and-init-on-different-resources",
    ),
    # KEP-753 / brief example: init 2 cpu, sidecar 1 cpu, app 1+1 cpu.
    pytest.param(
        spec(
            [ctr("a", {"cpu": "1"}), ctr("b", {"cpu": "1"})],
            init=[ctr("init", {"cpu": "2"}), sidecar("proxy", {"cpu": "1"})],
        ),
        {"cpu": 3000, "pods": 1},
        id="kep753-init2-then-sidecar1-app1+1:max(2,1,1+1+1)=3",
    ),
    pytest.param(
        spec(
            [ctr("a", {"cpu": "1"}), ctr("b", {"cpu": "1"})],
            init=[sidecar("proxy", {"cpu": "1"}), ctr("init", {"cpu": "2"})],
        ),
        {"cpu": 3000, "pods": 1},
        id="kep753-sidecar1-then-init2-app1+1:max(1,1+2,1+1+1)=3",
    ),
    # kubernetes.io "Sidecar containers" → "Resource sharing within containers": effective request =
    # overhead + max(sum of app and sidecar containers, effective init request). The docs' "effective
    # init request" is the highest init container; that is exact here because the init container is
    # declared before the sidecar (see the case above for the order that changes it).
    pytest.param(
        spec(
            [ctr("app", {"cpu": "1", "memory": "2Gi"})],
            init=[ctr("migrate", {"cpu": "4", "memory": "1Gi"}), sidecar("log", {"cpu": "500m", "memory": "256Mi"})],
            overhead={"cpu": "250m", "memory": "120Mi"},
        ),
        {"cpu": 4250, "memory": 2 * GI + 256 * MI + 120 * MI, "pods": 1},
        id="docs-sidecar-rule:cpu=max(4,1+0.5)+0.25,memory=max(1Gi,2Gi+256Mi)+120Mi",
    ),
    # --- overhead
    pytest.param(
        spec(
            [ctr("a", {"cpu": "1"}), ctr("b", {"cpu": "1"})],
            init=[ctr("init", {"cpu": "3"})],
            overhead={"cpu": "250m"},
        ),
        {"cpu": 3250, "pods": 1},
        id="overhead-is-added-after-the-max:max(3,2)+0.25",
    ),
    pytest.param(
        spec([ctr("app")], overhead={"cpu": "250m", "memory": "120Mi"}),
        {"cpu": 250, "memory": 120 * MI, "pods": 1},
        id="overhead-alone",
    ),
    # kubernetes.io "Pod Overhead" usage example: RuntimeClass kata-fc (podFixed 250m / 120Mi) and test-pod
    # whose two containers set only limits (500m/100Mi, 1500m/100Mi): "the scheduler adds the requests
    # and the overhead, then looks for a node that has 2.25 CPU and 320 MiB of memory available".
    pytest.param(
        spec(
            [
                ctr("busybox-ctr", limits={"cpu": "500m", "memory": "100Mi"}),
                ctr("nginx-ctr", limits={"cpu": "1500m", "memory": "100Mi"}),
            ],
            overhead={"cpu": "250m", "memory": "120Mi"},
        ),
        {"cpu": 2250, "memory": 320 * MI, "pods": 1},
        id="docs-pod-overhead-kata-fc:2.25-cpu-320Mi",
    ),
    # --- limits without requests (API defaulting copies the limit into the request, per resource)
    pytest.param(
        spec([ctr("app", limits={"cpu": "2", "memory": "4Gi"})]),
        {"cpu": 2000, "memory": 4 * GI, "pods": 1},
        id="limits-only-container-counts-its-limits",
    ),
    pytest.param(
        spec([ctr("app", requests={"cpu": "1"}, limits={"cpu": "2", "memory": "1Gi"})]),
        {"cpu": 1000, "memory": GI, "pods": 1},
        id="request-wins-over-limit-and-defaulting-is-per-resource",
    ),
    pytest.param(
        spec([ctr("app", {"cpu": "1"})], init=[ctr("init", limits={"cpu": "4"})]),
        {"cpu": 4000, "pods": 1},
        id="limits-only-init-container-counts-its-limits:max(4,1)",
    ),
    pytest.param(
        spec([ctr("app", {"cpu": "1"})], init=[sidecar("proxy", limits={"cpu": "1", "memory": "64Mi"})]),
        {"cpu": 2000, "memory": 64 * MI, "pods": 1},
        id="limits-only-sidecar-counts-its-limits:1+1",
    ),
    # --- zero entries
    pytest.param(
        spec([ctr("app", {"cpu": "0", "memory": 0, "nvidia.com/gpu": "0"})]),
        {"pods": 1},
        id="all-zero-requests-are-dropped",
    ),
    pytest.param(
        spec([ctr("app", {"cpu": "100m", "example.com/foo": "0"})], overhead={"memory": "0"}),
        {"cpu": 100, "pods": 1},
        id="zero-entries-dropped-non-zero-kept",
    ),
]


@pytest.mark.parametrize(("pod_spec", "expected"), CASES)
def test_effective_requests(pod_spec: PodSpec, expected: dict[str, int]) -> None:
    assert effective_requests(pod_spec) == expected


def test_pod_requests_property_is_effective_requests_of_its_spec() -> None:
    pod = Pod.model_validate(
        {
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {
                "initContainers": [sidecar("proxy", {"cpu": "1"})],
                "containers": [ctr("app", {"cpu": "1", "memory": "1Gi"})],
            },
        }
    )
    assert pod.requests == {"cpu": 2000, "memory": GI, "pods": 1}
    assert pod.requests == effective_requests(pod.spec)


def test_restart_policy_is_read_from_the_camelcase_field() -> None:
    init = PodSpec.model_validate({"initContainers": [sidecar("proxy", {"cpu": "1"})]}).init_containers[0]
    assert init.restart_policy == "Always"
    assert init.requests() == {"cpu": 1000}


def test_malformed_quantity_in_a_container_raises_quantity_error() -> None:
    bad = spec([ctr("app", {"cpu": "1", "memory": "12x"})])
    with pytest.raises(QuantityError, match=r"^invalid quantity '12x'"):
        effective_requests(bad)


def test_malformed_overhead_raises_quantity_error() -> None:
    bad = spec([ctr("app", {"cpu": "1"})], overhead={"cpu": "lots"})
    with pytest.raises(QuantityError, match=r"^invalid quantity 'lots'"):
        effective_requests(bad)


DATA_PODS = [
    # requests {cpu: "24", memory: 256Gi, nvidia.com/gpu: "2"}, limits {memory, gpu} equal.
    pytest.param(
        "workloads/a-job-gang-8-workers.yaml", "llm-pretrain-0-vrpjf",
        {"cpu": 24000, "memory": 256 * GI, "nvidia.com/gpu": 2, "pods": 1},
        id="job-gang-worker-gpu-via-extended-resource",
    ),
    # GPUs come from a DRA claim (resources.claims), which is not a resource request.
    pytest.param(
        "workloads/b-workload-composite-train-llm.yaml", "train-llm-workers-0-0-ggp8c",
        {"cpu": 24000, "memory": 256 * GI, "pods": 1},
        id="composite-worker-dra-claim-is-not-a-request",
    ),
    pytest.param(
        "workloads/b-workload-composite-train-llm.yaml", "train-llm-driver-0-0-jtjjm",
        {"cpu": 8000, "memory": 32 * GI, "pods": 1},
        id="composite-driver-cpu-only",
    ),
    pytest.param(
        "workloads/c-podgroup-shared-claims.yaml", "allreduce-bench-0",
        {"cpu": 16000, "memory": 64 * GI, "pods": 1},
        id="podgroup-shared-claims-member",
    ),
]


@pytest.mark.parametrize(("relative", "name", "expected"), DATA_PODS)
def test_example_pod_requests(relative: str, name: str, expected: dict[str, int]) -> None:
    pod = load_one(relative, Pod, name)
    assert pod.requests == expected
