"""deploy/: the plain manifests match the chart, and the example gang is valid and schedulable."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import yaml

from scheduler.framework import SolverConfig
from scheduler.offline.loader import load
from scheduler.offline.simulate import example_path, simulate
from tests.chart.helmchart import MANIFESTS, NAMESPACE, ROOT, manifests_text, objects, plain_render, render

EXAMPLE = ROOT / "deploy" / "examples" / "gang.yaml"


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_deploy_manifests_are_the_default_render() -> None:
    assert MANIFESTS.read_text() == manifests_text(), "deploy/gang-scheduler.yaml is stale: run `make manifests`"


def test_deploy_manifests_hold_the_namespace_then_the_chart_objects() -> None:
    namespace, *rest = docs(MANIFESTS)
    assert namespace == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    assert sorted(map(repr, rest)) == sorted(map(repr, objects(plain_render())))
    kinds = [d["kind"] for d in rest]
    assert kinds.index("ServiceAccount") < kinds.index("ClusterRoleBinding") < kinds.index("Deployment")
    for doc in [namespace, *rest]:
        assert kubernetes_validate.validate(doc, "1.37.0", strict=True) == "1.37"


def labels_of(obj: dict[str, Any]) -> list[dict[str, str]]:
    """The label maps of an object: its own and its pod template's."""
    template = obj.get("spec", {}).get("template", {}) if isinstance(obj.get("spec"), dict) else {}
    return [m.get("labels", {}) for m in (obj["metadata"], template.get("metadata", {}))]


def test_plain_manifests_are_not_labelled_as_managed_by_helm() -> None:
    """kubectl applies them; a Helm install labels its objects (``.Release.Service``) and the chart keeps that."""
    managed = [(d["kind"], d["metadata"]["name"]) for d in docs(MANIFESTS)
               if any("app.kubernetes.io/managed-by" in labels for labels in labels_of(d))]
    assert managed == []
    by_helm = [o for o in objects(render()) if o["kind"] == "Deployment"]
    assert all(labels["app.kubernetes.io/managed-by"] == "Helm" for labels in labels_of(by_helm[0]))
    assert "managed-by" not in MANIFESTS.read_text()


def test_the_lease_namespace_of_the_plain_manifests_is_the_one_a_bare_run_uses() -> None:
    """One rule: the Lease lives in the namespace the scheduler runs in. The plain manifests deploy the scheduler in
    their namespace, say so to it, and grant the Lease there."""
    objs = docs(MANIFESTS)
    [deployment] = [o for o in objs if o["kind"] == "Deployment"]
    [role] = [o for o in objs if o["kind"] == "Role"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    lease_ns = {e["name"]: e.get("value") for e in container["env"]}["GANG_SCHEDULER_LEASE_NAMESPACE"]
    assert deployment["metadata"]["namespace"] == role["metadata"]["namespace"] == lease_ns == NAMESPACE


def test_example_gang_validates_against_kubernetes_1_37() -> None:
    objs = docs(EXAMPLE)
    assert [o["kind"] for o in objs] == ["Namespace", "PodGroup", "Pod", "Pod", "Pod", "Pod"]
    for obj in objs:
        assert kubernetes_validate.validate(obj, "1.37.0", strict=True) == "1.37", obj["kind"]


def test_example_gang_opts_in_with_scheduler_name_and_pod_group() -> None:
    group, *pods = docs(EXAMPLE)[1:]
    min_count = group["spec"]["schedulingPolicy"]["gang"]["minCount"]
    assert len(pods) == min_count == 4
    for pod in pods:
        assert pod["spec"]["schedulerName"] == "gang-scheduler"
        assert pod["spec"]["schedulingGroup"] == {"podGroupName": group["metadata"]["name"]}
        assert pod["metadata"]["namespace"] == group["metadata"]["namespace"]


def test_example_gang_is_scheduled_whole_by_simulate_on_the_builtin_cluster() -> None:
    sim = simulate(load([example_path(), EXAMPLE]), "gang-scheduler", SolverConfig())
    [train] = [g for g in sim.groups if g.key.namespace == "gang-demo"]
    assert (train.key.name, train.status, train.reason) == ("train", "Scheduled", None)
    assert sorted(train.placements) == [f"train-{i}" for i in range(4)]


def test_readme_quickstart_and_the_operations_page_name_files_that_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quickstart on a cluster", 1)[1].split("\n## ", 1)[0]
    assert "helm install gang-scheduler charts/gang-scheduler -n gang-scheduler --create-namespace" in section
    operations = (ROOT / "docs" / "operations.md").read_text().split("## Dashboard and alerts", 1)[1]
    named = r"(?:deploy|charts)/[\w./-]+\.(?:yaml|json|md)|charts/gang-scheduler/"
    paths = set(re.findall(named, section))
    assert {"deploy/examples/gang.yaml", "deploy/gang-scheduler.yaml", "charts/gang-scheduler/"} <= paths
    dashboards = set(re.findall(named, operations))
    assert {"deploy/grafana/gang-scheduler.json", "deploy/prometheus/gang-scheduler-rules.yaml"} <= dashboards
    for path in paths | dashboards:
        assert (ROOT / path).exists(), path
