"""Helm's own ``kubeVersion`` check (``Chart.yaml``): ``helm install`` against the emulator, which answers
``/version`` as the cluster it plays (``apiserver125.py``'s ``git_version``), refuses a cluster below the
floor and accepts the floor and later versions, managed clusters' pre-release builds included.

``helm install --dry-run=server`` runs the same Install action as an install up to the point of writing: it
reads the server's version and API groups, checks ``kubeVersion`` (``chartutil.IsCompatibleRange``), renders,
looks up each object (an existing one not owned by the release is a conflict) and writes nothing. Rendering
alone (``helm template``) never checks it; ``test_chart.py`` renders with ``--kube-version`` and validates
the objects against each version's schemas.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import helm_python as helm
import kmock
import pytest
import yaml
from helm_python import _native

from tests.chaos.process import write_kubeconfig
from tests.chart.helmchart import CHART_DIR, NAMESPACE, RELEASE
from tests.chart.test_chart import FLOOR
from tests.integration.apiserver125 import ApiServer125
from tests.integration.conftest import VERBS

pytestmark = pytest.mark.kubernetes("1.25")

CHART_KINDS = {  # "group/version/plural": (kind, namespaced): the other kinds the chart renders (all GA by v1.21)
    "v1/serviceaccounts": ("ServiceAccount", True), "v1/services": ("Service", True),
    "apps/v1/deployments": ("Deployment", True),
    "rbac.authorization.k8s.io/v1/clusterroles": ("ClusterRole", False),
    "rbac.authorization.k8s.io/v1/clusterrolebindings": ("ClusterRoleBinding", False),
    "rbac.authorization.k8s.io/v1/roles": ("Role", True),
    "rbac.authorization.k8s.io/v1/rolebindings": ("RoleBinding", True),
    "apiextensions.k8s.io/v1/customresourcedefinitions": ("CustomResourceDefinition", False),
    "admissionregistration.k8s.io/v1/mutatingwebhookconfigurations": ("MutatingWebhookConfiguration", False),
    "admissionregistration.k8s.io/v1/validatingwebhookconfigurations": ("ValidatingWebhookConfiguration", False),
}
VALUES = {"defaults": {}, "crds.install": {"crds": {"install": True}},
          "operator.enabled": {"operator": {"enabled": True}}}


async def dry_run_install(k8s: ApiServer125, tmp_path: Path, values: dict[str, Any] | None = None) -> str:
    """``helm install --dry-run=server --disable-openapi-validation`` of the chart against ``k8s`` (which serves
    no OpenAPI document); the rendered manifest. helm-python-sdk 0.2.2's ``Config.install`` does not forward the
    C ABI's ``disable_openapi_validation``, so the options go to ``helm_install`` directly."""
    for path, (kind, namespaced) in CHART_KINDS.items():
        k8s.resources[path] = kmock.ResourceInfo(kind=kind, singular=kind.lower(), namespaced=namespaced, verbs=VERBS)
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", str(k8s.url))

    def install() -> str:
        with helm.Config(kubeconfig_path=kubeconfig, namespace=NAMESPACE, storage_driver="memory") as config:
            options = {"namespace": NAMESPACE, "dry_run": "server", "disable_openapi_validation": True}
            payload = _native.call_string("helm_install", config._raw(), _native.HANDLE(0), _native.HANDLE(0),
                                          str(CHART_DIR), RELEASE, json.dumps(values) if values else None,
                                          json.dumps(options))
        return str(json.loads(payload)["manifest"])

    return await asyncio.to_thread(install)  # Helm's Go code calls the emulator, served by this loop


@pytest.mark.parametrize("git_version", ["v1.24.17", "v1.22.0"])
async def test_helm_refuses_a_cluster_below_the_floor(k8s: ApiServer125, tmp_path: Path, git_version: str) -> None:
    k8s.git_version = git_version
    with pytest.raises(helm.HelmReleaseError, match=f"chart requires kubeVersion: >={FLOOR}-0 which is incompatible "
                                                    f"with Kubernetes {git_version}"):
        await dry_run_install(k8s, tmp_path)


@pytest.mark.parametrize("values", VALUES.values(), ids=VALUES.keys())
@pytest.mark.parametrize("git_version", [f"v{FLOOR}", "v1.25.16", "v1.30.4-eks-a737599", "v1.36.0", "v1.37.1"])
async def test_helm_installs_on_the_floor_and_later(k8s: ApiServer125, tmp_path: Path, git_version: str,
                                                    values: dict[str, Any]) -> None:
    k8s.git_version = git_version
    manifest = await dry_run_install(k8s, tmp_path, values)
    kinds = {doc["kind"] for doc in yaml.safe_load_all(manifest) if doc}
    assert {"Deployment", "ClusterRole", "PodDisruptionBudget"} <= kinds
    assert ("CustomResourceDefinition" in kinds) == ("crds" in values)
    assert ("MutatingWebhookConfiguration" in kinds) == ("operator" in values)
    assert {r.method for r in k8s} == {"GET"}  # /version, discovery, a lookup of each object: nothing written
    assert "/version" in {r.url.path for r in k8s}
