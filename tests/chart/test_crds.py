"""``crds.install``: the chart installs scheduler-plugins' PodGroup CRD only when asked, as vendored plus Helm's
``keep`` resource policy unless ``crds.keep`` is false, and grants the scheduler its RBAC either way (the CRD is read
wherever it is served, whoever installed it)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from scheduler.model import coscheduling
from scheduler.model.coscheduling import CoschedulingPodGroupSpec, CoschedulingPodGroupStatus
from tests.chart.helmchart import CHART_DIR, objects, render

VENDORED = CHART_DIR / "files" / "scheduling.x-k8s.io_podgroups.yaml"


def crds(values: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [o for o in objects(render(values)) if o["kind"] == "CustomResourceDefinition"]


def test_no_crd_by_default() -> None:
    assert crds(None) == []
    assert crds({"crds": {"install": False}}) == []


def test_crds_install_renders_the_vendored_crd_unchanged_but_kept_on_uninstall() -> None:
    (crd,) = crds({"crds": {"install": True}})
    vendored = yaml.safe_load(VENDORED.read_text())
    assert "helm.sh/resource-policy" not in vendored["metadata"]["annotations"]
    assert crd["metadata"]["annotations"] == {**vendored["metadata"]["annotations"], "helm.sh/resource-policy": "keep"}
    crd["metadata"]["annotations"].pop("helm.sh/resource-policy")
    assert crd == vendored
    assert crds({"crds": {"install": True, "keep": False}}) == [vendored]
    assert crd["metadata"]["name"] == f"{coscheduling.PLURAL}.{coscheduling.API_GROUP}"
    assert (crd["spec"]["group"], crd["spec"]["names"]["kind"], crd["spec"]["names"]["plural"]) == (
        coscheduling.API_GROUP, coscheduling.KIND, coscheduling.PLURAL)
    (version,) = crd["spec"]["versions"]
    assert (version["name"], version["served"], version["subresources"]) == (coscheduling.VERSION, True, {"status": {}})


@pytest.mark.parametrize(("model", "part"), [(CoschedulingPodGroupSpec, "spec"),
                                             (CoschedulingPodGroupStatus, "status")])
def test_the_model_reads_only_fields_the_crd_has(model: type, part: str) -> None:
    schema = yaml.safe_load(VENDORED.read_text())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    properties = schema["properties"][part]["properties"]
    assert {f.alias for f in model.model_fields.values()} == set(properties)


@pytest.mark.parametrize("install", [False, True], ids=["crd-not-installed", "crd-installed"])
def test_rbac_covers_scheduler_plugins_podgroups_either_way(install: bool) -> None:
    (role,) = [o for o in objects(render({"crds": {"install": install}})) if o["kind"] == "ClusterRole"]
    granted = {(r, v) for rule in role["rules"] if coscheduling.API_GROUP in rule["apiGroups"]
               for r in rule["resources"] for v in rule["verbs"]}
    assert granted == {("podgroups", "get"), ("podgroups", "list"), ("podgroups", "watch"),
                       ("podgroups/status", "patch")}
