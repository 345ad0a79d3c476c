"""The pod index the cache carries forward from snapshot to snapshot equals one built afresh from the pods it ends with,
through every kind of pod update — also those it does not re-index: a status the kubelet writes (the phase as it starts
the pod, container statuses) and the watch confirming an assumed bind keep the pod's entry, as its uid, spec, labels
and deletion, all the entry reads, are unchanged."""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.cache.cluster import ClusterCache
from scheduler.framework.plan import Plan
from scheduler.framework.pod_index import IndexView, PodEntry, pod_entry
from scheduler.model.pod import Pod
from scheduler.model.scheduling import GroupKey
from tests.unit.cache.test_quiet_rebuilds import assume, bound_member, gang, intent

ROOT = GroupKey("Pod", "ns", "p")
NODES = [{"metadata": {"name": f"n{i}", "labels": {"zone": f"z{i % 2}"}},
          "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"}}} for i in range(3)]


GONE = "gone"
"""A node no longer in the table (deleted while its pods wait for the pod garbage collector): its pods use no row and
are in no pod index."""


def raw_pod(name: str, rv: int, *, node: str | None = None, app: str = "a", phase: str = "Pending",
            anti: bool = False, port: int | None = None, deleting: bool = False) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
    if port is not None:
        container["ports"] = [{"containerPort": port, "hostPort": port}]
    spec: dict[str, Any] = {"schedulerName": "gang-scheduler", "containers": [container]}
    if node is not None:
        spec["nodeName"] = node
    if anti:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "zone"}]}}
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": str(rv),
                            "labels": {"app": app}}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-04T00:00:00Z"
    status: dict[str, Any] = {"phase": phase}
    if phase == "Running":
        status["containerStatuses"] = [{"name": "c", "image": "busybox", "imageID": "", "ready": True,
                                        "restartCount": 0, "state": {"running": {}},
                                        "resources": {"requests": {"cpu": "1"}}}]
    return {"metadata": meta, "spec": spec, "status": status}


def entry(e: PodEntry) -> tuple[object, ...]:
    return e.key, e.node, e.namespace, sorted(e.labels.items()), e.terminating, e.terms, e.ports


def entries(view: IndexView) -> list[tuple[object, ...]]:
    return sorted((entry(e) for e in view.entries()), key=lambda row: str(row[0]))


@pytest.mark.parametrize("seed", range(25))
def test_the_carried_pod_index_equals_one_built_from_the_final_pods(seed: int) -> None:
    rng = random.Random(seed)
    cache = ClusterCache("gang-scheduler")
    cache.replace("Node", NODES)
    cache.replace("Pod", [])
    pods: dict[str, dict[str, Any]] = {}  # name → its raw pod now
    for rv in range(2, 300):
        name = f"p{rng.randrange(10)}"
        old = pods.get(name)
        roll = rng.random()
        if old is None:
            new = raw_pod(name, rv, app=rng.choice("ab"), anti=rng.random() < 0.3,
                          port=rng.choice([None, 8080]))
        elif roll < 0.1:
            cache.apply("Pod", "DELETED", old)
            del pods[name]
            continue
        elif roll < 0.25 and not old["spec"].get("nodeName"):  # assumed by a plan, then the watch confirms it
            pod = cache.pod(f"ns/{name}")
            assert isinstance(pod, Pod)
            node = rng.choice(NODES)["metadata"]["name"]
            cache.assume(Plan(ROOT, ((pod, node),), frozenset()), token=f"t{rv}")
            if rng.random() < 0.2:
                node = rng.choice(NODES)["metadata"]["name"]  # bound elsewhere after all
            new = {**old, "metadata": {**old["metadata"], "resourceVersion": str(rv)},
                   "spec": {**old["spec"], "nodeName": node}}
        elif roll < 0.5 and old["spec"].get("nodeName"):  # the kubelet's status writes: the phase, then containers
            new = {**old, "metadata": {**old["metadata"], "resourceVersion": str(rv)},
                   "status": raw_pod(name, rv, phase=rng.choice(["Pending", "Running"]))["status"]}
        elif roll < 0.6:  # relabelled
            new = {**old, "metadata": {**old["metadata"], "resourceVersion": str(rv),
                                       "labels": {"app": rng.choice("abc")}}}
        elif roll < 0.7:  # being deleted
            new = {**old, "metadata": {**old["metadata"], "resourceVersion": str(rv),
                                       "deletionTimestamp": "2026-12-04T00:00:00Z"}}
        else:
            new = raw_pod(name, rv, node=rng.choice([None, GONE, *(n["metadata"]["name"] for n in NODES)]),
                          app=rng.choice("ab"), phase=rng.choice(["Pending", "Running"]), anti=rng.random() < 0.3)
        cache.apply("Pod", "ADDED" if old is None else "MODIFIED", new)
        pods[name] = new
        if rv % 7 == 0:
            cache.snapshot().pod_index  # noqa: B018 — a snapshot read: later changes carry its index forward
    kept = cache.snapshot()
    built = IndexView.build(pod_entry(p, info.name) for info in kept.infos for p in info.pods.values())
    assert kept.index_view is not None and kept.index_view.valid  # the carried index, not one built by the snapshot
    assert entries(kept.pod_index) == entries(built)


def test_a_bind_confirmed_and_the_kubelets_writes_leave_the_index_as_it_is() -> None:
    """The watch confirming an assumed bind and the kubelet's status writes change nothing the index reads: the
    snapshot after them hands over the very index view of the snapshot before."""
    cache = ClusterCache("gang-scheduler")
    cache.replace("Node", NODES)
    cache.replace("Pod", [raw_pod("p", 1)])
    pod = cache.pod("ns/p")
    assert isinstance(pod, Pod)
    cache.assume(Plan(ROOT, ((pod, "n0"),), frozenset()), token="t")
    first = cache.snapshot().pod_index

    cache.apply("Pod", "MODIFIED", raw_pod("p", 2, node="n0"))
    assert cache.snapshot().pod_index is first
    cache.apply("Pod", "MODIFIED", raw_pod("p", 3, node="n0", phase="Running"))
    assert cache.snapshot().pod_index is first

    cache.apply("Pod", "MODIFIED", raw_pod("p", 4, node="n0", phase="Running", app="b"))  # relabelled: re-indexed
    assert cache.snapshot().pod_index is not first


def test_a_pod_on_a_node_the_table_gains_later_is_indexed_then() -> None:
    """A pod bound to a node not in the table is in no index; once the node registers, the next snapshot's index
    holds it, as one built from the rows does."""
    cache = ClusterCache("gang-scheduler")
    cache.replace("Node", NODES)
    cache.replace("Pod", [raw_pod("p", 1, node=GONE, anti=True)])
    assert entries(cache.snapshot().pod_index) == []
    cache.apply("Node", "ADDED", {"metadata": {"name": GONE, "labels": {"zone": "z0"}},
                                  "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"}}})
    kept = cache.snapshot()
    built = IndexView.build(pod_entry(p, info.name) for info in kept.infos for p in info.pods.values())
    assert [row[:2] for row in entries(kept.pod_index)] == [("ns/p", GONE)]
    assert entries(kept.pod_index) == entries(built)


def test_the_index_of_a_snapshot_with_held_room_is_carried_forward() -> None:
    """A partial gang's held room is added to the snapshot the cache hands out (a copy of the usage's): the pod index
    that copy builds is the one the next snapshot carries forward (O(changes)), not one every snapshot builds anew
    (O(pods)) for as long as some gang holds room."""
    cache = gang(["g-0", "g-1", "g-2"])
    assume(cache, "g-0", "g-1", "g-2")
    cache.apply("Pod", "MODIFIED", bound_member("g-0", intent("g-0", "g-1", "g-2")))
    cache.forget(["ml/g-1", "ml/g-2"])
    first = cache.snapshot()
    assert cache.holds and len(first.nominated) == 2
    _ = first.pod_index  # read: later snapshots carry it forward
    cache.apply("Pod", "ADDED", raw_pod("other", 1, node="n0"))
    second = cache.snapshot()
    assert len(second.nominated) == 2
    assert second.index_view is not None and second.index_view.valid  # carried, not left for a rebuild
    built = IndexView.build(pod_entry(p, info.name) for info in second.infos for p in info.pods.values())
    assert entries(second.pod_index) == entries(built)
    assert cache.snapshot() is second and cache.snapshot().pod_index is second.pod_index
