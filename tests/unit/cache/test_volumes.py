"""ClusterCache with storage objects: claim users, shared claims, plans' claim decisions held until the watch
shows them, ephemeral claims made in ``simulate``, quiet status-only changes."""

from __future__ import annotations

from scheduler.cache.cluster import ClusterCache
from scheduler.framework.plan import Plan, VolumeClaimBinding
from scheduler.model.scheduling import GroupKey
from scheduler.model.storage import SELECTED_NODE, StorageClass
from tests.unit.solver.builders import node, pod
from tests.unit.solver.storage_builders import pv, pvc, storage_class, with_volumes

ROOT = GroupKey("PodGroup", "default", "g")


def cache_with(*claims: str, synthesize: bool = False) -> ClusterCache:
    cache = ClusterCache("gang-scheduler", synthesize_claims=synthesize)
    cache.load("Node", [node("n1"), node("n2")])
    cache.load("StorageClass", [storage_class()])
    cache.load("PersistentVolumeClaim", [pvc(c) for c in claims])
    return cache


def test_bound_pods_are_claim_users_and_two_pods_naming_a_claim_share_it() -> None:
    cache = cache_with("data", "logs")
    cache.load("Pod", [with_volumes(pod("a", node_name="n1", scheduler="other"), "data"),
                       with_volumes(pod("b", group="g"), "data", "logs")])
    view = cache.snapshot().volumes
    assert view is not None
    assert view.users == {"default/data": frozenset({("default/a", "n1")})}
    assert view.shared == frozenset({"default/data"})


def test_an_assumed_plan_shows_its_decisions_until_the_watch_does_then_settling_drops_them() -> None:
    cache = cache_with("data", "logs")
    cache.load("PersistentVolume", [pv("pv-1")])
    a = with_volumes(pod("a", group="g"), "data", "logs")
    cache.load("Pod", [a])
    plan = Plan(ROOT, ((a, "n2"),), frozenset({ROOT}), volumes=(
        VolumeClaimBinding("default/data", "n2", None, ("default/a",)),
        VolumeClaimBinding("default/logs", "n2", "pv-1", ("default/a",))))
    cache.assume(plan, "t1")
    view = cache.snapshot().volumes
    assert view is not None
    assert view.claims["default/data"].selected_node == "n2"
    assert view.volumes["pv-1"].bound_to(view.claims["default/logs"])
    assert view.claimed == {"default/logs": ("pv-1",)}
    assert ("default/a", "n2") in view.users["default/data"]
    # the watch shows the annotation: that decision is no longer held, the other still is
    annotated = pvc("data", annotations={SELECTED_NODE: "n2"})
    cache.load_one("PersistentVolumeClaim", annotated)
    assert set(cache.storage.held["t1"]) == {"default/logs"}
    cache.forget_volumes("t1")
    view = cache.snapshot().volumes
    assert view is not None
    assert view.claims["default/data"].selected_node == "n2"  # the API's annotation
    assert view.volumes["pv-1"].spec.claim_ref is None  # never written: void
    assert cache.storage.held == {}


def test_a_status_only_claim_change_is_quiet() -> None:
    cache = cache_with("data")
    before = pvc("data")
    changed = before.model_copy(update={"metadata": before.metadata.model_copy(update={"resource_version": "9"})})
    assert cache.load_one("PersistentVolumeClaim", changed) == []


def test_simulate_makes_a_missing_ephemeral_claim_from_the_pods_template_owned_by_the_pod() -> None:
    cache = cache_with(synthesize=True)
    worker = with_volumes(pod("w-0", group="g"), uid="u-0", ephemeral={"scratch": {
        "accessModes": ["ReadWriteOnce"], "storageClassName": "fast", "resources": {"requests": {"storage": "1Gi"}}}})
    cache.load("Pod", [worker])
    view = cache.snapshot().volumes
    assert view is not None
    made = view.claims["default/w-0-scratch"]
    assert made.storage_class == "fast" and made.request_bytes == 2**30
    assert [(o.kind, o.name, o.uid, o.controller) for o in made.metadata.owner_references] == [
        ("Pod", "w-0", "u-0", True)]
    assert "default/w-0-scratch" in cache.storage.synthesized


def test_an_ephemeral_claim_whose_template_names_no_class_gets_the_newest_default_class() -> None:
    """As the API server's DefaultStorageClass admission gives it (``GetDefaultClass``: the newest default, then by
    name); a template naming a class, or ``""`` (no class), keeps it; with no default class it stays unset."""
    def default(name: str, created: str) -> StorageClass:
        raw = storage_class(name).model_dump(mode="json", by_alias=True)
        raw["metadata"] |= {"annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
                            "creationTimestamp": created}
        return StorageClass.model_validate(raw)

    cache = ClusterCache("gang-scheduler", synthesize_claims=True)
    cache.load("Node", [node("n1")])
    cache.load("StorageClass", [storage_class("fast"), default("gp2", "2026-01-01T00:00:00Z"),
                                default("gp3", "2026-06-01T00:00:00Z")])
    cache.load("Pod", [with_volumes(pod("w-0", group="g"), ephemeral={
        "unset": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        "named": {"storageClassName": "fast"}, "none": {"storageClassName": ""}})])
    view = cache.snapshot().volumes
    assert view is not None
    assert {k: c.spec.storage_class_name for k, c in view.claims.items()} == {
        "default/w-0-unset": "gp3", "default/w-0-named": "fast", "default/w-0-none": ""}
    alone = cache_with(synthesize=True)  # its one class is no default
    alone.load("Pod", [with_volumes(pod("w-1", group="g"), ephemeral={"unset": {}})])
    claims = alone.snapshot().volumes
    assert claims is not None and claims.claims["default/w-1-unset"].spec.storage_class_name is None


def test_an_ephemeral_claim_template_with_the_beta_class_annotation_keeps_it_and_equal_defaults_go_by_name() -> None:
    """The DefaultStorageClass admission leaves a claim with the beta ``volume.beta.kubernetes.io/storage-class``
    annotation as it is (``PersistentVolumeClaimHasClass``); of two defaults created at once, the first by name."""
    def default(name: str) -> StorageClass:
        raw = storage_class(name).model_dump(mode="json", by_alias=True)
        raw["metadata"] |= {"annotations": {"storageclass.beta.kubernetes.io/is-default-class": "true"},
                            "creationTimestamp": "2026-01-01T00:00:00Z"}
        return StorageClass.model_validate(raw)

    cache = ClusterCache("gang-scheduler", synthesize_claims=True)
    cache.load("Node", [node("n1")])
    cache.load("StorageClass", [default("zz"), default("aa")])
    worker = with_volumes(pod("w-0", group="g"), ephemeral={"unset": {}, "beta": {}})
    raw = worker.model_dump(mode="json", by_alias=True, exclude_none=True)
    for volume in raw["spec"]["volumes"]:
        if volume["name"] == "beta":
            volume["ephemeral"]["volumeClaimTemplate"]["metadata"] = {
                "annotations": {"volume.beta.kubernetes.io/storage-class": "fast"}}
    cache.load("Pod", [type(worker).model_validate(raw)])
    view = cache.snapshot().volumes
    assert view is not None
    assert {k: c.spec.storage_class_name for k, c in view.claims.items()} == {
        "default/w-0-unset": "aa", "default/w-0-beta": None}


def test_live_does_not_make_ephemeral_claims() -> None:
    cache = cache_with()
    cache.load("Pod", [with_volumes(pod("w-0", group="g"), ephemeral={"scratch": {"storageClassName": "fast"}})])
    view = cache.snapshot().volumes
    assert view is not None and "default/w-0-scratch" not in view.claims
