"""The lone-pod fast path (``scheduler.solver.lone``) gives the search's plan, and is taken whenever it applies.

Random small clusters — nodes of several sizes, some with GPUs (accelerator nodes), tainted or cordoned, in two
zones; running pods of another scheduler; pending pods of ours with random requests, tolerations, node selectors,
required or preferred node affinity, priorities, nominations (``status.nominatedNodeName``), some in a basic
PodGroup of one or a gang that one more member satisfies, some asking for a resource no node offers. Each ready
root is decided by :func:`~scheduler.solver.lone.place_lone` and by the search on the same snapshot, in queue
order, each plan assumed before the next root (so later roots see partly used nodes): the fast path's plan must
equal the search's, and it must decline exactly where the module says it does.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from scheduler.framework import NodeTable, Plan, Snapshot, SolverConfig
from scheduler.groups import GroupTree, Leaf, TreeState, build_trees
from scheduler.model import Node, Pod, PodGroup
from scheduler.solver import solve
from scheduler.solver.lone import place_lone
from scheduler.solver.plugins import DEFAULT_PROFILE, NOMINATED_FIRST
from scheduler.solver.search import search

NS = "lone"
ZONE = "topology.kubernetes.io/zone"


def node(i: int, cpu: int, gpu: int, tainted: bool, cordoned: bool, pods: int) -> dict[str, Any]:
    alloc = {"cpu": str(cpu), "memory": f"{cpu * 2}Gi", "pods": str(pods)}
    if gpu:
        alloc["nvidia.com/gpu"] = str(gpu)
    spec: dict[str, Any] = {"unschedulable": cordoned}
    if tainted:
        spec["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    return {"metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}", ZONE: f"z{i % 2}"}},
            "spec": spec, "status": {"allocatable": alloc}}


@st.composite
def pod_spec(draw: st.DrawFn, name: str, seconds: int) -> dict[str, Any]:
    """A pending pod of ours (its group, if any, set by the caller)."""
    req: dict[str, str] = {"cpu": f"{draw(st.sampled_from([100, 500, 1000, 2000, 3000]))}m",
                           "memory": f"{draw(st.integers(1, 4))}Gi"}
    extra = draw(st.sampled_from([None, None, None, "nvidia.com/gpu", "example.com/none"]))
    if extra:
        req[extra] = "1"
    spec: dict[str, Any] = {"schedulerName": "gang-scheduler", "priority": draw(st.integers(0, 2)),
                            "containers": [{"name": "c", "resources": {"requests": req}}]}
    if draw(st.booleans()):
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    rule = draw(st.sampled_from(["none", "none", "selector", "required", "preferred"]))
    if rule == "selector":
        spec["nodeSelector"] = {ZONE: "z0"}
    elif rule in ("required", "preferred"):
        term = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["z1"]}]}
        spec["affinity"] = {"nodeAffinity": (
            {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}} if rule == "required"
            else {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "preference": term}]})}
    return {"metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}",
                         "creationTimestamp": f"2026-01-01T00:{seconds // 60:02d}:{seconds % 60:02d}Z"},
            "spec": spec, "status": {"phase": "Pending"}}


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[Node], list[Pod], list[PodGroup]]:
    n_nodes = draw(st.integers(1, 6))
    nodes = []
    for i in range(n_nodes):
        gpu = draw(st.sampled_from([0, 0, 2]))
        nodes.append(node(i, draw(st.sampled_from([2, 4, 8])), gpu, bool(gpu) and draw(st.booleans()),
                          draw(st.integers(0, 7)) == 0, draw(st.sampled_from([3, 110]))))
    pods: list[dict[str, Any]] = []
    for j in range(draw(st.integers(0, 6))):  # running pods of another scheduler, within or past capacity
        running: dict[str, Any] = {
            "metadata": {"name": f"run-{j}", "namespace": NS, "uid": f"uid-run-{j}"},
            "spec": {"nodeName": f"n{draw(st.integers(0, n_nodes - 1))}", "schedulerName": "default-scheduler",
                     "containers": [{"name": "c", "resources": {"requests": {
                         "cpu": str(draw(st.integers(1, 3))), "memory": "1Gi"}}}]},
            "status": {"phase": "Running"}}
        if draw(st.integers(0, 9)) == 0:  # inter-pod rules anywhere keep every pod on the search
            running["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": ZONE}]}}
        pods.append(running)
    groups: list[dict[str, Any]] = []
    for k in range(draw(st.integers(1, 6))):
        pod = draw(pod_spec(f"p{k}", k))
        shape = draw(st.sampled_from(["none", "none", "basic", "gang1", "gang2-bound", "gang2"]))
        if shape != "none":
            group = f"g{k}"
            policy = {"basic": {}} if shape == "basic" else {"gang": {"minCount": 1 if shape == "gang1" else 2}}
            groups.append({"metadata": {"name": group, "namespace": NS, "creationTimestamp": "2026-01-01T00:00:00Z"},
                           "spec": {"schedulingPolicy": policy}})
            pod["spec"]["schedulingGroup"] = {"podGroupName": group}
            if shape != "gang1" and shape != "basic":
                mate = draw(pod_spec(f"p{k}-mate", k))
                mate["spec"]["schedulingGroup"] = {"podGroupName": group}
                if shape == "gang2-bound":
                    mate["spec"]["nodeName"] = nodes[0]["metadata"]["name"]
                    mate["status"]["phase"] = "Running"
                pods.append(mate)
        if draw(st.integers(0, 5)) == 0:
            pod["status"]["nominatedNodeName"] = f"n{draw(st.integers(0, n_nodes - 1))}"
        pods.append(pod)
    return ([Node.model_validate(n) for n in nodes], [Pod.model_validate(p) for p in pods],
            [PodGroup.model_validate(g) for g in groups])


def applies(tree: GroupTree, snapshot: Snapshot, found: Plan | object) -> bool:
    """Where the fast path must answer: a lone pending pod that the placement satisfies, with nothing but its
    requests and static filters to judge, fitting somewhere (``found``: the search's answer)."""
    root = tree.root
    if not isinstance(root, Leaf) or len(root.pending) != 1 or not isinstance(found, Plan):
        return False
    pod = root.pending[0]
    affinity = pod.spec.affinity
    preferred = affinity is not None and affinity.node_affinity is not None and bool(
        affinity.node_affinity.preferred_during_scheduling_ignored_during_execution)
    return not preferred and not snapshot.pod_index.has_terms()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.sampled_from(["pack", "pack", "spread"]))
def test_lone_pod_fast_path_is_the_search(cluster: tuple[list[Node], list[Pod], list[PodGroup]],
                                          scoring: str) -> None:
    nodes, pods, groups = cluster
    config = SolverConfig(scoring=scoring)  # type: ignore[arg-type]
    snapshot = Snapshot.build(NodeTable.build(nodes), pods)
    forest = build_trees(pods, groups, (), scheduler_name="gang-scheduler")
    for tree in sorted(forest.trees, key=lambda t: (-t.priority, t.created, str(t.key))):
        if tree.state is not TreeState.READY:
            continue
        found = search(tree, snapshot, config)
        fast = place_lone(tree, snapshot, config, DEFAULT_PROFILE)
        event("fast path" if fast is not None else "search")
        if fast is not None:
            assert fast == found
        assert (fast is not None) == (scoring == "pack" and applies(tree, snapshot, found)), (tree.key, found)
        assert place_lone(tree, snapshot, config, NOMINATED_FIRST) is None  # a pinning PreFilter: the search
        assert solve(tree, snapshot, config) == found
        if isinstance(found, Plan):
            snapshot = snapshot.assume(found.placements)
