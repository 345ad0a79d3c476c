"""``simulate`` and the loader behind the CLI, on small YAML snapshots: what each group and pod is
reported as (policy as written, empty groups, invalid PodGroups) and how objects are read.

Kept beside the CLI tests: these are the command's back end (``scheduler/loader.py``,
``scheduler/simulate.py``), exercised through the same YAML a user would pass.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from scheduler.framework import SolverConfig, Unschedulable
from scheduler.offline.loader import load
from scheduler.offline.report import render_text
from scheduler.offline.simulate import Simulation, simulate
from scheduler.preemption.plugin import NOT_HELPFUL, TOO_LARGE

NODE = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
"""


def podgroup(name: str, policy: str, parent: str | None = None, namespace: str = "ml") -> str:
    parent_line = f"\n  parentCompositePodGroupName: {parent}" if parent else ""
    return f"""
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  schedulingPolicy: {policy}{parent_line}
"""


def composite(name: str, policy: str) -> str:
    return f"""
apiVersion: scheduling.k8s.io/v1alpha3
kind: CompositePodGroup
metadata: {{name: {name}, namespace: ml}}
spec:
  schedulingPolicy: {policy}
"""


def member(name: str, group: str, cpu: str = "1", namespace: str | None = "ml") -> str:
    ns = f", namespace: {namespace}" if namespace else ""
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}{ns}}}
spec:
  schedulerName: gang-scheduler
  schedulingGroup: {{podGroupName: {group}}}
  containers: [{{name: c, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
"""


def run(tmp_path: Path, *docs: str) -> Simulation:
    path = tmp_path / "snap.yaml"
    path.write_text("---".join(textwrap.dedent(d) for d in (NODE, *docs)))
    return simulate(load([path]), "gang-scheduler", SolverConfig())


def group(sim: Simulation, name: str) -> tuple[str, str, str | None]:
    (g,) = [g for g in sim.groups if g.key.name == name]
    return g.status, g.policy, g.reason


def pod_reasons(sim: Simulation) -> dict[str, str | None]:
    return {p.pod.key: p.reason for p in sim.pods}


@pytest.mark.parametrize(
    ("policy", "shown"),
    [
        pytest.param("{basic: {}}", "basic", id="basic"),
        pytest.param("{gang: {minCount: 2}}", "gang minCount 2", id="gang"),
        pytest.param("{gang: {minCount: 0}}", "gang minCount 0", id="min-count-zero-shown-as-written"),
        pytest.param("{gang: {}}", "gang minCount unset", id="min-count-missing"),
        pytest.param("{}", "invalid policy", id="neither-basic-nor-gang"),
        pytest.param("{basic: {}, gang: {minCount: 1}}", "invalid policy", id="both-basic-and-gang"),
    ],
)
def test_group_policy_is_reported_as_written(tmp_path: Path, policy: str, shown: str) -> None:
    sim = run(tmp_path, podgroup("g", policy), member("g-0", "g"), member("g-1", "g"))
    assert group(sim, "g")[1] == shown


@pytest.mark.parametrize(
    ("policy", "shown"),
    [
        pytest.param("{gang: {minGroupCount: 1}}", "gang minGroupCount 1", id="gang"),
        pytest.param("{gang: {minGroupCount: 0}}", "gang minGroupCount 0", id="min-group-count-zero"),
        pytest.param("{}", "invalid policy", id="neither-basic-nor-gang"),
    ],
)
def test_composite_policy_is_reported_as_written(tmp_path: Path, policy: str, shown: str) -> None:
    sim = run(tmp_path, composite("root", policy), podgroup("a", "{gang: {minCount: 1}}", parent="root"),
              member("a-0", "a"))
    assert group(sim, "root")[1] == shown


@pytest.mark.parametrize(
    ("docs", "expected"),
    [
        pytest.param([podgroup("g", "{gang: {minCount: 3}}")],
                     {"g": ("Waiting", "gang g: 0/3 pods exist (minCount 3)")}, id="empty-gang"),
        pytest.param([podgroup("g", "{basic: {}}")], {"g": ("Waiting", "group g: no pending pods")},
                     id="empty-basic-group"),
        pytest.param([composite("root", "{gang: {minGroupCount: 1}}"),
                      podgroup("a", "{gang: {minCount: 2}}", parent="root")],
                     {"root": ("Waiting", "composite root: 0/1 child groups ready (minGroupCount 1; 1 exists); "
                                          "gang a: 0/2 pods exist (minCount 2)"),
                      "a": ("Waiting", "composite root: 0/1 child groups ready (minGroupCount 1; 1 exists); "
                                       "gang a: 0/2 pods exist (minCount 2)")}, id="empty-composite-tree"),
        pytest.param([composite("lonely", "{gang: {minGroupCount: 1}}")],
                     {"lonely": ("Waiting", "composite lonely: 0/1 child groups ready (minGroupCount 1; 0 exist)")},
                     id="composite-without-children-yet"),
    ],
)
def test_groups_with_no_pod_at_all_are_reported(tmp_path: Path, docs: list[str],
                                                 expected: dict[str, tuple[str, str]]) -> None:
    sim = run(tmp_path, *docs)
    assert {g.key.name: (g.status, g.reason) for g in sim.groups} == expected
    assert sim.pods == []


def test_group_with_only_another_schedulers_pods_is_not_reported(tmp_path: Path) -> None:
    theirs = member("x", "g").replace("gang-scheduler", "default-scheduler")
    sim = run(tmp_path, podgroup("g", "{gang: {minCount: 1}}"), theirs)
    assert sim.groups == [] and sim.pods == []


@pytest.mark.parametrize(
    ("docs", "expected"),
    [
        pytest.param([podgroup("x", '{gang: {minCount: "three"}}'), member("x-0", "x")],
                     "PodGroup ml/x is invalid: spec.schedulingPolicy.gang.minCount: must be a valid "
                     'integer (got "three")', id="invalid-podgroup"),
        pytest.param([podgroup("x", '{gang: {minCount: "three"}}', namespace="other"), member("x-0", "x")],
                     "waiting for PodGroup ml/x to appear", id="invalid-podgroup-in-another-namespace"),
        pytest.param([member("x-0", "x")], "waiting for PodGroup ml/x to appear", id="missing-podgroup"),
    ],
)
def test_pods_of_a_podgroup_that_failed_to_load_say_so(tmp_path: Path, docs: list[str], expected: str) -> None:
    assert pod_reasons(run(tmp_path, *docs)) == {"ml/x-0": expected}


def test_basic_group_leftover_reason_counts_what_the_plan_placed(tmp_path: Path) -> None:
    sim = run(tmp_path, podgroup("bg", "{basic: {}}"), *(member(f"m{i}", "bg", cpu="2") for i in range(3)))
    assert group(sim, "bg") == ("Scheduled", "basic", None)
    assert pod_reasons(sim) == {"ml/m0": None, "ml/m1": None,
                                "ml/m2": "group bg: 2/3 placed; 0/1 nodes are available: 1 Insufficient cpu. "
                                         "pod group preemption: No preemption victims found for incoming pod."}


@pytest.mark.parametrize(
    ("docs", "namespaces"),
    [
        pytest.param([podgroup("g", "{gang: {minCount: 1}}").replace(", namespace: ml", ""),
                      member("g-0", "g", namespace=None)],
                     {"PodGroup": "default", "Pod": "default", "Node": ""}, id="namespaced-kinds-default"),
        pytest.param([podgroup("g", "{gang: {minCount: 1}}"), member("g-0", "g")],
                     {"PodGroup": "ml", "Pod": "ml", "Node": ""}, id="given-namespace-kept"),
    ],
)
def test_missing_namespace_defaults_to_default(tmp_path: Path, docs: list[str], namespaces: dict[str, str]) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text("---".join(textwrap.dedent(d) for d in (NODE, *docs)))
    objects = load([path])
    found = {"PodGroup": objects.podgroups[0].metadata.namespace, "Pod": objects.pods[0].metadata.namespace,
             "Node": objects.nodes[0].metadata.namespace}
    assert found == namespaces
    sim = simulate(objects, "gang-scheduler", SolverConfig())
    assert [(p.pod.key, p.node) for p in sim.pods] == [(f"{namespaces['Pod']}/g-0", "n1")]


# --- DRA ------------------------------------------------------------------------------------------

GPU_NODE = """
apiVersion: v1
kind: Node
metadata: {{name: {name}}}
status: {{allocatable: {{cpu: "8", memory: 32Gi, pods: "110"}}}}
"""


def gpu_slice(node: str, count: int = 2, slices: int = 1, extra: str = "") -> str:
    devices = ", ".join(f"{{name: gpu-{i}{extra}}}" for i in range(count))
    return f"""
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: {node}-gpus}}
spec:
  driver: gpu.example.com
  nodeName: {node}
  pool: {{name: {node}, generation: 1, resourceSliceCount: {slices}}}
  devices: [{devices}]
"""


GPU_CLASS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec: {selectors: [{cel: {expression: "device.driver == 'gpu.example.com'"}}]}
"""


def shared_claim(name: str = "shared") -> str:
    return f"""
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: {name}, namespace: ml}}
spec: {{devices: {{requests: [{{name: gpu, exactly: {{deviceClassName: gpu.example.com}}}}]}}}}
"""


def claim_user(name: str, claim: str = "shared", group: str | None = None, priority: int = 0) -> str:
    sg = f"\n  schedulingGroup: {{podGroupName: {group}}}" if group else ""
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: ml, uid: uid-{name}}}
spec:
  schedulerName: gang-scheduler{sg}
  priority: {priority}
  resourceClaims: [{{name: gpu, resourceClaimName: {claim}}}]
  containers: [{{name: c, resources: {{requests: {{cpu: "1"}}, claims: [{{name: gpu}}]}}}}]
"""


def dra_run(tmp_path: Path, *docs: str) -> Simulation:
    path = tmp_path / "snap.yaml"
    path.write_text("---".join(textwrap.dedent(d) for d in docs))
    return simulate(load([path]), "gang-scheduler", SolverConfig())


def test_dra_objects_are_loaded_identical_redefinitions_ignored(tmp_path: Path) -> None:
    path = tmp_path / "snap.yaml"
    docs = [NODE, gpu_slice("n1"), GPU_CLASS, shared_claim(), GPU_CLASS, """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: t}
spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}}
"""]
    path.write_text("---".join(textwrap.dedent(d) for d in docs))
    objects = load([path])
    assert objects.problems == []
    assert [s.metadata.name for s in objects.resource_slices] == ["n1-gpus"]
    assert [c.metadata.name for c in objects.device_classes] == ["gpu.example.com"]
    assert [c.key for c in objects.resource_claims] == ["ml/shared"]
    assert [t.key for t in objects.claim_templates] == ["default/t"]  # namespaced: default filled in
    assert objects.resource_slices[0].metadata.namespace == ""  # cluster-scoped
    assert objects.has_dra


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        pytest.param(gpu_slice("n1", extra=", capacity: {memory: {value: lots}}"),
                     "ResourceSlice n1-gpus: invalid quantity 'lots'", id="bad-capacity-quantity"),
        pytest.param(gpu_slice("n1", extra=", consumesCounters: [{counterSet: s, counters: {mem: {value: x1}}}]"),
                     "ResourceSlice n1-gpus: invalid quantity 'x1'", id="bad-consumed-counter"),
        pytest.param(gpu_slice("n1").replace("  devices:", "  sharedCounters: [{name: s, counters: {mem: "
                                                           "{value: '-'}}}]\n  devices:"),
                     "ResourceSlice n1-gpus: invalid quantity '-'", id="bad-shared-counter"),
        pytest.param(gpu_slice("n1").replace("  driver: gpu.example.com\n", ""),
                     "ResourceSlice n1-gpus: spec.driver: Required value", id="slice-without-driver"),
        pytest.param(shared_claim().replace("requests: [", "requests: [7, "),
                     "ResourceClaim ml/shared: spec.devices.requests[0]", id="claim-request-not-an-object"),
        pytest.param(shared_claim().replace("gpu.example.com", "gpu.example.com, tolerations: [{key: k, operator: X}]"),
                     "ResourceClaim ml/shared: spec.devices.requests[0].exactly.tolerations[0].operator: must "
                     "be 'Equal', 'Exists' or '' (got \"X\")", id="toleration-operator-the-api-refuses"),
        pytest.param(GPU_CLASS + "---" + GPU_CLASS.replace("'gpu.example.com'", "'other'"),
                     "DeviceClass gpu.example.com: defined again with different content; the first is kept",
                     id="different-redefinition"),
    ],
)
def test_malformed_dra_objects_are_load_problems(tmp_path: Path, doc: str, message: str) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text("---".join(textwrap.dedent(d) for d in (NODE, doc)))
    objects = load([path])
    (problem,) = objects.problems
    assert str(problem).split(": ", 1)[1].startswith(message)


def test_claim_shared_by_name_is_allocated_once_and_pins_a_later_root(tmp_path: Path) -> None:
    """Two lone pods (two roots) share ResourceClaim ``shared``: the first plan allocates it (one device,
    reserved for that pod); the second pod is then pinned to the allocation, not given a second device."""
    sim = dra_run(tmp_path, GPU_NODE.format(name="n1"), GPU_NODE.format(name="n2"), gpu_slice("n2", count=2),
                  GPU_CLASS, shared_claim(), claim_user("a", priority=10), claim_user("b"))
    assert [(p.pod.metadata.name, p.node) for p in sim.pods] == [("a", "n2"), ("b", "n2")]
    (only,) = sim.allocations
    assert only.allocation.claim == "ml/shared" and only.allocation.reserved_for == (("Pod", "a", "uid-a"),)
    assert only.allocation.results == (("gpu", "gpu.example.com", "n2", "gpu-0"),)


def test_pod_whose_claim_failed_to_load_waits_and_says_why(tmp_path: Path) -> None:
    sim = dra_run(tmp_path, NODE, shared_claim().replace("requests: [", "requests: [7, "), claim_user("a"))
    assert [(p.pod.key, p.node, p.reason) for p in sim.pods] == [
        ("ml/a", None, "ResourceClaim ml/shared of claim 'gpu' is invalid: spec.devices.requests[0]: must be "
                       "an object (got 7)")]


def test_pod_whose_claim_template_failed_to_load_waits_and_says_why(tmp_path: Path) -> None:
    template = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: tpl, namespace: ml}
spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com, count: two}}]}}}
"""
    user = claim_user("a").replace("resourceClaimName: shared", "resourceClaimTemplateName: tpl")
    sim = dra_run(tmp_path, NODE, template, user)
    assert [(p.pod.key, p.node, p.reason) for p in sim.pods] == [
        ("ml/a", None, "waiting for ResourceClaim of claim 'gpu' (template tpl) to be created: ResourceClaimTemplate "
                       "ml/tpl is invalid: spec.spec.devices.requests[0].exactly.count: must be a valid "
                       "integer (got \"two\")")]


def test_devices_already_allocated_in_the_snapshot_are_never_given_again(tmp_path: Path) -> None:
    allocated = shared_claim("old") + """status:
  allocation:
    devices: {results: [{request: gpu, driver: gpu.example.com, pool: n1, device: gpu-0}]}
    nodeSelector: {nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [n1]}]}]}
"""
    sim = dra_run(tmp_path, GPU_NODE.format(name="n1"), gpu_slice("n1", count=2), GPU_CLASS, allocated,
                  shared_claim("new"), claim_user("a", claim="new"), claim_user("b", claim="new"))
    assert [a.allocation.results for a in sim.allocations] == [(("gpu", "gpu.example.com", "n1", "gpu-1"),)]
    assert [(p.pod.metadata.name, p.node) for p in sim.pods] == [("a", "n1"), ("b", "n1")]


# --- values the API server refuses ----------------------------------------------

TWO_GPU_NODE = """
apiVersion: v1
kind: Node
metadata: {name: gpu-a}
status: {allocatable: {cpu: "64", memory: 256Gi, pods: "110", nvidia.com/gpu: "2"}}
"""


def gpu_pod(name: str, gpus: str, node: str = "", scheduler: str = "gang-scheduler", group: str = "") -> str:
    bound = f"\n  nodeName: {node}" if node else ""
    sg = f"\n  schedulingGroup: {{podGroupName: {group}}}" if group else ""
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: ml}}
spec:
  schedulerName: {scheduler}{bound}{sg}
  containers: [{{name: c, resources: {{requests: {{cpu: "1", nvidia.com/gpu: "{gpus}"}}}}}}]
"""


EIGHT_GPU_GANG = [podgroup("train", "{gang: {minCount: 8}}"), *(gpu_pod(f"w{i}", "1", group="train") for i in range(8))]


@pytest.mark.parametrize(
    ("docs", "groups", "pods", "problems"),
    [
        pytest.param([TWO_GPU_NODE, gpu_pod("hog", "-6", node="gpu-a", scheduler="default-scheduler"),
                      *EIGHT_GPU_GANG],
                     {"train": "Unschedulable"}, {f"ml/w{i}": None for i in range(8)},
                     ['Pod ml/hog: spec.containers[0].resources.requests.nvidia.com/gpu: must be greater than or '
                      'equal to 0 (got "-6")'], id="bound-pod-with-negative-gpus-frees-nothing"),
        pytest.param([TWO_GPU_NODE, gpu_pod("neg", "-1"), gpu_pod("ok", "1")], {}, {"ml/ok": "gpu-a"},
                     ['Pod ml/neg: spec.containers[0].resources.requests.nvidia.com/gpu: must be greater than or '
                      'equal to 0 (got "-1")'], id="pending-pod-with-a-negative-request-is-not-placed"),
        pytest.param([TWO_GPU_NODE, TWO_GPU_NODE.replace("gpu-a", "gpu-b").replace('cpu: "64"', 'cpu: "-4"'),
                      gpu_pod("a", "2"), gpu_pod("b", "2")], {}, {"ml/a": "gpu-a", "ml/b": None},
                     ['Node gpu-b: status.allocatable.cpu: must be greater than or equal to 0 (got "-4")'],
                     id="node-with-negative-allocatable-is-not-used"),
        pytest.param([podgroup("s", '{gang: {minCount: "2"}}'), member("s-0", "s"), member("s-1", "s"),
                      podgroup("t", "{gang: {minCount: true}}"), member("t-0", "t")], {},
                     {"ml/s-0": None, "ml/s-1": None, "ml/t-0": None},
                     ['PodGroup ml/s: spec.schedulingPolicy.gang.minCount: must be a valid integer (got "2")',
                      "PodGroup ml/t: spec.schedulingPolicy.gang.minCount: must be a valid integer (got true)"],
                     id="min-count-that-is-not-a-json-integer"),
    ],
)
def test_objects_the_api_server_would_refuse_are_invalid_and_the_rest_is_scheduled(
        tmp_path: Path, docs: list[str], groups: dict[str, str], pods: dict[str, str | None],
        problems: list[str]) -> None:
    """``groups``: status by group; ``pods``: node (or None) of every pending pod of ours reported;
    ``problems``: the invalid objects, as listed under ``invalid``."""
    path = tmp_path / "snap.yaml"
    path.write_text("---".join(textwrap.dedent(d) for d in docs))
    sim = simulate(load([path]), "gang-scheduler", SolverConfig())
    assert {g.key.name: g.status for g in sim.groups} == groups
    assert {p.pod.key: p.node for p in sim.pods} == pods
    assert [str(p).split(": ", 1)[1] for p in sim.problems] == problems


def test_loader_reads_dash_from_the_stdin_it_is_given(tmp_path: Path) -> None:
    import io

    stdin = io.BytesIO(textwrap.dedent(NODE + "---" + podgroup("g", "{gang: {minCount: 1}}")).encode())
    objects = load(["-"], stdin=stdin)
    assert ([n.name for n in objects.nodes], [g.metadata.name for g in objects.podgroups]) == (["n1"], ["g"])
    assert stdin.read() == b""  # read to its end


def test_scheduler_plugins_podgroups_and_their_labelled_pods_are_read() -> None:
    """A scheduler-plugins cluster (``tests/data/clusters/scheduler-plugins-cluster.yaml``): labelled gangs are
    placed all-or-nothing, a labelled pod whose PodGroup does not exist waits, the older label joins, and the
    fields not acted on are warned about."""
    from scheduler.offline.report import notices

    sim = simulate(load([Path(__file__).parents[2] / "data/clusters/scheduler-plugins-cluster.yaml"]),
                   "gang-scheduler", SolverConfig())
    assert group(sim, "allreduce")[:2] == ("Scheduled", "gang minCount 3")
    assert group(sim, "too-big")[:2] == ("Unschedulable", "gang minCount 4")
    assert group(sim, "timed")[:2] == ("Scheduled", "gang minCount 1")
    placed = {p.pod.metadata.name: p.node for p in sim.pods}
    assert all(placed[f"allreduce-{i}"] for i in range(3))
    assert not any(placed[f"too-big-{i}"] for i in range(4))
    assert placed["legacy-0"] is not None
    assert pod_reasons(sim)["training/lost-0"] == "waiting for scheduling.x-k8s.io PodGroup training/missing to appear"
    warned = [(n.kind, n.field) for n in notices(sim) if n.level == "warning"]
    assert warned == [("unhonoured-field", "spec.minResources"), ("unhonoured-field", "spec.scheduleTimeoutSeconds")]
    assert sim.skipped == {} and sim.jobs == []  # its Job names no scheduler and is not labelled: not ours
    from scheduler.offline.report import to_json

    json_warned = [w for w in to_json(sim)["warnings"] if w["kind"] == "unhonoured-field"]
    assert [(w["group"], w["field"]) for w in json_warned] == [("training/timed", "spec.minResources"),
                                                               ("training/timed", "spec.scheduleTimeoutSeconds")]


@pytest.mark.parametrize(
    ("policy", "reason"),
    [
        pytest.param("{basic: {}}", "group g: 1/2 placed; 0/1 nodes are available: 1 Insufficient cpu.", id="basic"),
        pytest.param("{gang: {minCount: 1}}",
                     "gang g: 1/2 placed (minCount 1); 0/1 nodes are available: 1 Insufficient cpu.", id="gang"),
    ],
)
def test_group_whose_bound_members_meet_min_count_is_scheduled_its_extra_member_pending(
        tmp_path: Path, policy: str, reason: str) -> None:
    """A bound member meets minCount; one more member fits nowhere. The group is Scheduled (no reason: nothing of
    it failed), the extra member is left pending with a reason that counts what is placed; the text report says
    the bound members satisfy the group and that a member is left pending, not ``[FAIL]``."""
    bound = member("m-run", "g").replace("spec:\n", "spec:\n  nodeName: n1\n")
    sim = run(tmp_path, podgroup("g", policy), bound, member("m-big", "g", cpu="10"))
    assert group(sim, "g")[0::2] == ("Scheduled", None)
    assert pod_reasons(sim) == {"ml/m-big": f"{reason} pod group preemption: {NOT_HELPFUL} ({TOO_LARGE})"}
    text = render_text(sim)
    assert "[FAIL]" not in text and "Unschedulable" not in text
    assert "its bound members satisfy it; 1 member(s) left pending (see Pods left pending)" in text


TAINTED = """
apiVersion: v1
kind: Node
metadata: {name: n2}
spec: {taints: [{key: dedicated, value: infra, effect: NoSchedule}]}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
"""


def test_without_a_lower_priority_pod_the_reason_ends_as_kube_schedulers(tmp_path: Path) -> None:
    """No pod of lower priority runs where the pods could go (the one running is of equal priority; the other node a
    taint keeps them off): nothing is evicted, and the reason ends with kube-scheduler's words for it, under the pod
    prefix for a pod without a group."""
    lone = member("solo", "x", cpu="4").replace("  schedulingGroup: {podGroupName: x}\n", "")
    running = member("web", "x").replace("  schedulingGroup: {podGroupName: x}\n", "").replace(
        "schedulerName: gang-scheduler", "schedulerName: default-scheduler\n  nodeName: n1")  # priority 0, as ours
    sim = run(tmp_path, TAINTED, running, podgroup("g", "{gang: {minCount: 2}}"), member("g-0", "g", cpu="3"),
              member("g-1", "g", cpu="3"), lone)
    no_victims = "No preemption victims found for incoming pod."
    assert group(sim, "g")[2] == ("gang g: 1/2 placeable (minCount 2); 0/2 nodes are available: 1 Insufficient cpu, "
                                  "1 node(s) had untolerated taint {dedicated: infra}. pod group preemption: "
                                  + no_victims)
    assert pod_reasons(sim)["ml/solo"] == ("0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated "
                                           "taint {dedicated: infra}. preemption: " + no_victims)


BAD_SELECTOR = "device.attributes['x'].model =="
"""A CEL selector that does not compile (the expression ends after ``==``)."""


def bad_template(name: str = "gpu-tpl") -> str:
    return f"""
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: {name}, namespace: ml}}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {{deviceClassName: gpu.example.com, selectors: [{{cel: {{expression: "{BAD_SELECTOR}"}}}}]}}
"""


def template_user(name: str, template: str = "gpu-tpl") -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: ml}}
spec:
  schedulerName: gang-scheduler
  resourceClaims: [{{name: gpu, resourceClaimTemplateName: {template}}}]
  containers: [{{name: c, resources: {{requests: {{cpu: "1"}}, claims: [{{name: gpu}}]}}}}]
"""


@pytest.mark.parametrize(
    ("docs", "subject", "pod_reason"),
    [
        pytest.param([bad_template(), template_user("p"), template_user("q")], "ResourceClaimTemplate ml/gpu-tpl",
                     "ResourceClaimTemplate ml/gpu-tpl is invalid (claim ml/{pod}-gpu made from it): ",
                     id="template"),
        pytest.param([shared_claim().replace("deviceClassName: gpu.example.com",
                                             f'deviceClassName: gpu.example.com, selectors: [{{cel: {{expression: '
                                             f'"{BAD_SELECTOR}"}}}}]'),
                      claim_user("p"), claim_user("q")], "ResourceClaim ml/shared",
                     "ResourceClaim ml/shared is invalid: ", id="claim"),
    ],
)
def test_selector_compile_error_of_a_claim_or_template_is_a_dra_problem_once(
        tmp_path: Path, docs: list[str], subject: str, pod_reason: str) -> None:
    """A claim's (or its template's) CEL selector that does not compile is listed once under DRA problems, naming
    the object the user wrote — the template, not the claim made from it — and counted in the warning; each pod's
    reason names it too (and, for a template, the claim made from it for that pod)."""
    sim = dra_run(tmp_path, NODE, gpu_slice("n1"), GPU_CLASS, *docs)
    (problem,) = sim.dra_problems
    assert problem.startswith(f"{subject}: request 'gpu': CEL selector \"{BAD_SELECTOR}\": CEL compile error")
    reasons = pod_reasons(sim)
    assert set(reasons) == {"ml/p", "ml/q"}
    for key, reason in reasons.items():
        assert reason is not None
        assert reason == pod_reason.format(pod=key.partition("/")[2]) + problem.removeprefix(f"{subject}: ")
    assert "warning: 1 DRA problem(s), listed under \"DRA problems\" (JSON: dra_problems)" in render_text(sim)


def test_preemption_not_helpful_for_devices_says_devices_are_the_limit(tmp_path: Path) -> None:
    """The gang wants 2 GPUs each and n1 publishes 2; a lower-priority pod without claims runs there. Evicting it
    frees cpu, not devices: "not helpful" names the devices as the limit, not only the pods evicted."""
    low = member("low", "lowg").replace("spec:\n", "spec:\n  nodeName: n1\n  priority: 0\n")
    user = """
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: ml}}
spec:
  schedulerName: gang-scheduler
  priority: 100
  schedulingGroup: {{podGroupName: g}}
  resourceClaims: [{{name: gpu, resourceClaimTemplateName: two}}]
  containers: [{{name: c, resources: {{requests: {{cpu: "1"}}, claims: [{{name: gpu}}]}}}}]
"""
    two = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: two, namespace: ml}
spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com, count: 2}}]}}}
"""
    sim = dra_run(tmp_path, NODE, gpu_slice("n1"), GPU_CLASS, two, podgroup("lowg", "{basic: {}}"), low,
                  podgroup("g", "{gang: {minCount: 2}}"), user.format(name="a"), user.format(name="b"))
    assert group(sim, "g")[0] == "Unschedulable" and sim.preemptions == []
    reason = pod_reasons(sim)["ml/a"]
    assert reason is not None and reason.endswith(
        "pod group preemption: Preemption is not helpful for scheduling (devices are the limit, and preemption frees "
        "node resources, not the victims' devices: no fit even with the one lower-priority pod evicted: ml/low)")


def test_a_pod_naming_a_priority_class_the_snapshot_lacks_is_warned_about(tmp_path: Path) -> None:
    """A hand-written pod without ``spec.priority`` whose ``priorityClassName`` is not in the snapshot gets the
    default priority, and the warning says so; a class that is there gives its value, without a warning."""
    known = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: batch}
value: 1000
"""
    missing = member("lost", "g").replace("schedulerName:", "priorityClassName: batch-hi\n  schedulerName:")
    found = member("found", "h").replace("schedulerName:", "priorityClassName: batch\n  schedulerName:")
    sim = run(tmp_path, known, podgroup("g", "{basic: {}}"), podgroup("h", "{basic: {}}"), missing, found)
    assert [(pod.metadata.name, str(finding)) for pod, finding in sim.unhonoured] == [
        ("lost", "spec.priorityClassName: no PriorityClass 'batch-hi' is known (did you mean 'batch'?), so the pod "
                 "has the default priority (the globalDefault class's value, else 0); add the class to the snapshot "
                 "(kubectl get priorityclasses -o yaml)")]
    assert {g.key.name: g.priority for g in sim.groups} == {"g": 0, "h": 1000}


def test_a_group_naming_a_priority_class_the_snapshot_lacks_is_warned_about(tmp_path: Path) -> None:
    """A PodGroup whose ``priorityClassName`` is misspelled has no priority of its own: its tree counts at its pods'
    (here the class they name), and the report says so — it would otherwise decide, silently, whether the gang may
    preempt."""
    from scheduler.offline.report import notices

    classes = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: training}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: training-high}
value: 5000
"""
    typo = podgroup("g", "{basic: {}}").replace("spec:\n", "spec:\n  priorityClassName: training-hihg\n")
    pod = member("a", "g").replace("schedulerName:", "priorityClassName: training\n  schedulerName:")
    sim = run(tmp_path, classes, typo, pod)
    assert {g.key.name: g.priority for g in sim.groups} == {"g": 1000}
    assert [str(finding) for _, finding in sim.unhonoured_groups] == [
        "spec.priorityClassName: no PriorityClass 'training-hihg' is known (did you mean 'training-high'?), so the "
        "group has no priority of its own and its tree counts at its pods' priority; add the class to the snapshot "
        "(kubectl get priorityclasses -o yaml)"]
    (warning,) = [n for n in notices(sim) if n.group == "ml/g"]
    assert warning.level == "warning" and warning.message.startswith(
        "scheduling.k8s.io/v1beta1 PodGroup ml/g: spec.priorityClassName: no PriorityClass 'training-hihg'")


def test_pods_bound_to_a_node_the_snapshot_lacks_are_warned_about(tmp_path: Path) -> None:
    """A gang member bound to a node missing from the snapshot still counts toward minCount (it is bound), but
    takes no room anywhere: the report says so, naming the first pods and counting the rest."""
    from scheduler.offline.report import notices

    bound = [member(f"a{i}", "g").replace("spec:\n", "spec:\n  nodeName: ghost\n") for i in range(7)]
    sim = run(tmp_path, podgroup("g", "{gang: {minCount: 8}}"), *bound, member("b", "g"))
    assert group(sim, "g")[0] == "Scheduled"
    assert sim.off_snapshot == [(f"ml/a{i}", "ghost") for i in range(7)]
    (warning,) = [n for n in notices(sim) if n.kind == "bound-to-unknown-node"]
    assert warning.message == (
        "7 pod(s) bound to a node the snapshot does not hold (ml/a0 on ghost, ml/a1 on ghost, ml/a2 on ghost, "
        "ml/a3 on ghost, ml/a4 on ghost and 2 more): they take no node's room, and a group's bound pods still "
        "count toward its minCount; give the snapshot those nodes (kubectl get nodes -o json)")
    assert not [n for n in notices(run(tmp_path, podgroup("g", "{basic: {}}"), member("b", "g")))
                if n.kind == "bound-to-unknown-node"]


@pytest.mark.parametrize(("parent", "reason"), [
    pytest.param(composite("job", "{gang: {minGroupCount: \"2\"}}"),
                 "CompositePodGroup ml/job is invalid: spec.schedulingPolicy.gang.minGroupCount: must be a "
                 "valid integer (got \"2\")", id="refused"),
    pytest.param(composite("job", "{gang: {minGroupCount: 1}}").replace("v1alpha3", "v1alpha2"),
                 "CompositePodGroup ml/job is scheduling.k8s.io/v1alpha2, an API version not read", id="not-read"),
    pytest.param("", "waiting for CompositePodGroup ml/job to appear", id="absent"),
])
def test_a_podgroup_whose_parent_is_not_there_says_why(tmp_path: Path, parent: str, reason: str) -> None:
    docs = [podgroup("a", "{gang: {minCount: 1}}", parent="job"), member("a-0", "a")]
    sim = run(tmp_path, *docs, *([parent] if parent else []))
    assert group(sim, "a") == ("Waiting", "gang minCount 1", reason)
    assert pod_reasons(sim)["ml/a-0"] == reason  # the same on the group and its pods


def test_a_gang_whose_member_claim_does_not_exist_is_waiting_not_unschedulable(tmp_path: Path) -> None:
    """A member naming a ResourceClaim the snapshot lacks is not ready for scheduling (kube-scheduler holds it at
    PreEnqueue): its gang, which needs it, is Waiting, not tried; with minCount 1 the gang does without it."""
    missing = member("a", "g").replace("  containers:", "  resourceClaims: [{name: gpu, resourceClaimName: nope}]\n"
                                                        "  containers:")
    sim = dra_run(tmp_path, NODE, GPU_CLASS, podgroup("g", "{gang: {minCount: 2}}"), missing, member("b", "g"))
    status, _, reason = group(sim, "g")
    assert (status, reason) == ("Waiting", "1 pod(s) not ready for scheduling: pod ml/a: waiting for ResourceClaim "
                                           "ml/nope of claim 'gpu' to be created")
    assert sim.preemptions == []
    sim = dra_run(tmp_path, NODE, GPU_CLASS, podgroup("g", "{gang: {minCount: 1}}"), missing, member("b", "g"))
    assert group(sim, "g")[0] == "Scheduled"
    assert pod_reasons(sim)["ml/a"] is not None and "to be created" in str(pod_reasons(sim)["ml/a"])


def test_a_gang_short_of_an_invalid_member_names_it_and_the_field(tmp_path: Path) -> None:
    """A member whose request is no quantity is listed among the invalid objects by its field, and its gang, short
    of it, says so rather than only that one pod fewer exists."""
    bad = member("a", "g").replace('cpu: "1"', 'cpu: "1e3m"')
    sim = run(tmp_path, podgroup("g", "{gang: {minCount: 2}}"), bad, member("b", "g"))
    why = "spec.containers[0].resources.requests.cpu: invalid quantity '1e3m': does not match <signedNumber><suffix>"
    assert [str(p) for p in sim.problems] == [f"{tmp_path / 'snap.yaml'}: Pod ml/a: {why}"]
    assert group(sim, "g") == ("Waiting", "gang minCount 2",
                               f"gang g: 1/2 pods exist (minCount 2); pod ml/a is invalid: {why}")


def test_a_satisfied_gang_whose_only_pending_member_waits_for_its_claim_is_not_tried(tmp_path: Path) -> None:
    """The gang's bound member satisfies it; its one pending member's claim does not exist: that member is not ready
    for scheduling (nothing is tried for it, no preemption), not unschedulable."""
    bound = member("b", "g").replace("spec:\n", "spec:\n  nodeName: n1\n")
    missing = member("a", "g").replace("  containers:", "  resourceClaims: [{name: gpu, resourceClaimName: nope}]\n"
                                                        "  containers:")
    sim = dra_run(tmp_path, NODE, GPU_CLASS, podgroup("g", "{gang: {minCount: 1}}"), bound, missing)
    assert pod_reasons(sim)["ml/a"] == ("1 pod(s) not ready for scheduling: pod ml/a: waiting for ResourceClaim "
                                        "ml/nope of claim 'gpu' to be created")
    assert sim.preemptions == []
    (result,) = [r for t, r in sim.results if t.key.name == "g"]
    assert isinstance(result, Unschedulable) and result.not_ready


def test_one_field_not_honoured_on_a_whole_gang_is_one_line_of_the_text_report(tmp_path: Path) -> None:
    """Every member of a gang written from one template sets the same field the scheduler does not honour: the text
    says it once, naming the first pods and counting the rest; the JSON keeps a warning per pod."""
    from scheduler.offline.report import notices

    pods = [member(f"w-{i}", "g").replace("schedulerName:", "priorityClassName: batch-hi\n  schedulerName:")
            for i in range(7)]
    sim = run(tmp_path, podgroup("g", "{basic: {}}"), *pods)
    lines = [line for line in render_text(sim).splitlines() if "priorityClassName" in line]
    assert lines == ["warning: pods ml/w-0, ml/w-1, ml/w-2, ml/w-3, ml/w-4 and 2 more: spec.priorityClassName: no "
                     "PriorityClass 'batch-hi' is known, so the pod has the default priority (the globalDefault "
                     "class's value, else 0); add the class to the snapshot (kubectl get priorityclasses -o yaml) "
                     "(not honoured)"]
    assert len([n for n in notices(sim) if n.field == "spec.priorityClassName"]) == 7
