"""The recording binder's writer: writes applied to the cache as the API server and its controllers would
show them, so ``simulate`` runs the binding plugins ``run`` runs."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.cache.cluster import ClusterCache
from scheduler.errors import Conflict, NotFound
from scheduler.framework.binding_cycle import BindingCycle
from scheduler.framework.plan import Plan
from scheduler.groups.intent import INTENT_ANNOTATION
from scheduler.model.kinds import NODE, PERSISTENT_VOLUME_CLAIM, POD, POD_GROUP, STORAGE_CLASS
from scheduler.model.scheduling import GroupKey, PodGroup
from scheduler.model.storage import SELECTED_NODE, StorageClass
from scheduler.offline.recorder import CacheWriter, RecordingBinder, merge_patch
from tests.unit.solver.builders import node, pod
from tests.unit.solver.storage_builders import pvc

NS = "ml"


@pytest.mark.parametrize(("target", "patch", "merged"), [
    pytest.param({"a": 1, "b": {"c": 2, "d": 3}}, {"b": {"c": None, "e": 4}}, {"a": 1, "b": {"d": 3, "e": 4}},
                 id="objects-merge-and-null-removes"),
    pytest.param({"a": [1, 2]}, {"a": [3]}, {"a": [3]}, id="lists-are-replaced"),
    pytest.param({"a": 1}, {"b": {"c": 1}}, {"a": 1, "b": {"c": 1}}, id="missing-objects-are-made"),
])
def test_merge_patch_is_rfc_7386(target: dict[str, Any], patch: dict[str, Any], merged: dict[str, Any]) -> None:
    assert merge_patch(target, patch) == merged


def group(name: str, rv: str = "") -> PodGroup:
    return PodGroup.model_validate({"metadata": {"name": name, "namespace": NS, "resourceVersion": rv},
                                    "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}}})


async def test_a_patch_with_a_stale_resource_version_is_refused_and_a_fresh_one_lands() -> None:
    cache = ClusterCache("gang-scheduler")
    cache.load_one(POD_GROUP.name, group("g", rv="5"))
    writer = CacheWriter(cache)
    with pytest.raises(Conflict):
        await writer.patch(POD_GROUP, NS, "g", {"metadata": {"resourceVersion": "4", "annotations": {"x": "1"}}})
    await writer.patch(POD_GROUP, NS, "g", {"metadata": {"resourceVersion": "5", "annotations": {"x": "1"}}})
    stored = cache.group("PodGroup", NS, "g")
    assert stored is not None and stored.metadata.annotations == {"x": "1"}
    with pytest.raises(NotFound):
        await writer.get(POD_GROUP, NS, "missing")


async def test_a_claim_annotated_for_a_node_shows_bound_to_a_provisioned_volume_at_once() -> None:
    cache = ClusterCache("gang-scheduler")
    cache.load_one(NODE.name, node("n1"))
    cache.load_one(STORAGE_CLASS.name, StorageClass.model_validate({
        "metadata": {"name": "standard"}, "provisioner": "csi.example.com",
        "volumeBindingMode": "WaitForFirstConsumer"}))
    cache.load_one(PERSISTENT_VOLUME_CLAIM.name, pvc("data", namespace=NS, storage_class="standard"))
    await CacheWriter(cache).patch(PERSISTENT_VOLUME_CLAIM, NS, "data",
                                   {"metadata": {"annotations": {SELECTED_NODE: "n1"}}})
    claim = cache.volume_claims[f"{NS}/data"]
    assert claim.is_bound and claim.selected_node == "n1"
    assert cache.volumes[claim.spec.volume_name].spec.csi is not None
    assert cache.volumes[claim.spec.volume_name].spec.csi.driver == "csi.example.com"  # the class's provisioner


def test_simulate_runs_the_live_plugin_list_intent_included() -> None:
    cache = ClusterCache("gang-scheduler")
    cache.load_one(NODE.name, node("n1"))
    cache.load_one(POD_GROUP.name, group("g"))
    member = pod("g-0", namespace=NS, group="g")
    cache.load_one(POD.name, member)
    binder = RecordingBinder(cache)
    names = [p.name for p in binder.runner.plugins.pre_bind] + [binder.runner.plugins.bind.name]
    assert names == ["DynamicResources", "VolumeBinding", "DefaultBinder"]
    plan = Plan(GroupKey("PodGroup", NS, "g"), ((member, "n1"),), frozenset())
    try:
        result, made = binder.commit(BindingCycle(plan, token="PodGroup/ml/g#1"))
    finally:
        binder.close()
    assert result.ok and made == set()
    stored = cache.pods[f"{NS}/g-0"]
    assert stored.spec.node_name == "n1" and INTENT_ANNOTATION in stored.metadata.annotations
