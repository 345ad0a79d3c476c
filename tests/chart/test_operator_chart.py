"""The chart's operator (``operator.enabled``): off by default; when on, its Deployment runs
``gang-scheduler operator`` with flags the CLI accepts, its Service reaches the webhook port, the
webhook configurations are left for kopf to fill, and its ClusterRole grants exactly what the
operator's code and kopf's handlers use."""

from __future__ import annotations

import contextlib
from typing import Any

import kubernetes_validate
from click.testing import CliRunner

from scheduler.cli import main
from scheduler.operator.apis import Flavour, Served
from scheduler.operator.handlers import build_registry
from tests.chart.helmchart import objects, render
from tests.chart.test_rbac import OPERATOR, granted, needed

ON = {"operator": {"enabled": True}}


def operator_objects(values: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    return {o["kind"]: o for o in objects(render(values))
            if o["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "operator"}


def test_off_by_default() -> None:
    assert operator_objects() == {}


def test_objects_are_valid_kubernetes() -> None:
    objs = operator_objects(ON)
    assert set(objs) == {"ServiceAccount", "Service", "Deployment", "ClusterRole", "ClusterRoleBinding",
                         "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
    for obj in objs.values():
        assert kubernetes_validate.validate(obj, "1.37.0", strict=True) == "1.37"
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        assert "webhooks" not in objs[kind]  # kopf's to write; Helm never renders (so never resets) them


def test_deployment_runs_the_operator_command_with_flags_it_accepts() -> None:
    objs = operator_objects(ON)
    deployment = objs["Deployment"]
    assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"] == {"type": "Recreate"}
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == ["gang-scheduler", "operator"]
    assert "--webhook-service=gang-scheduler/gang-scheduler-operator:443" in container["args"]
    assert "--webhook-configuration=gang-scheduler-operator.gang-scheduler.io" in container["args"]
    # every flag parses (the command stops at the first one it does not know, with exit code 2)
    result = CliRunner().invoke(main, ["operator", *container["args"], "--help"])
    assert result.exit_code == 0, result.output
    env = {e["name"]: e["value"] for e in container["env"]}  # the settings the operator reads, the scheduler's values
    assert env == {"GANG_SCHEDULER_SCHEDULER_NAME": "gang-scheduler", "GANG_SCHEDULER_CLIENT_QPS": "50",
                   "GANG_SCHEDULER_CLIENT_BURST": "100", "GANG_SCHEDULER_API_DISCOVERY_INTERVAL_S": "30"}
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http-health"}
    assert "--liveness=http://0.0.0.0:8080/healthz" in container["args"] and ports["http-health"] == 8080
    service = objs["Service"]["spec"]
    assert service["ports"] == [{"name": "https-webhook", "port": 443, "targetPort": "https-webhook",
                                 "protocol": "TCP"}]
    assert ports["https-webhook"] == 9443
    assert service["selector"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    assert pod["serviceAccountName"] == objs["ServiceAccount"]["metadata"]["name"]
    assert not service["selector"].items() <= next(o for o in objects(render(ON)) if o["kind"] == "Deployment"
                                                   and o["metadata"]["name"] == "gang-scheduler")[
        "spec"]["template"]["metadata"]["labels"].items()  # the scheduler's pods are not behind it


def test_a_certificate_secret_is_mounted_and_served() -> None:
    deployment = operator_objects({"operator": {"enabled": True, "webhook": {"certificateSecret": "op-tls"}}})[
        "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    assert {"name": "certs", "secret": {"secretName": "op-tls"}} in pod["volumes"]
    assert {"--cert-file=/certs/tls.crt", "--key-file=/certs/tls.key", "--ca-file=/certs/ca.crt"} <= set(
        pod["containers"][0]["args"])


def kopf_needs() -> set[tuple[str, str, str]]:
    """What kopf itself requests for the operator's registry: list/watch of every resource a
    watching handler or index is on, patch of the ones whose handlers keep progress annotations
    (create/update/resume), Events, and its managed webhook configurations and CRD scanning."""
    never_opened = contextlib.nullcontext  # the startup handler that would open it does not run here
    registries = [build_registry(never_opened, served, "gang-scheduler")
                  for served in (Served(Flavour.WORKLOAD, composite=True), Served(Flavour.COSCHEDULING))]
    triples: set[tuple[str, str, str]] = set()
    for handler in (h for registry in registries for h in registry._indexing.get_all_handlers()):
        sel = handler.selector
        triples |= {(sel.group or "", sel.plural or sel.any_name, v) for v in ("list", "watch")}
    for handler in (h for registry in registries for h in registry._changing.get_all_handlers()):
        sel = handler.selector
        triples |= {(sel.group or "", sel.plural or sel.any_name, v) for v in ("list", "watch", "patch")}
    triples.add(("", "events", "create"))
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        triples |= {("admissionregistration.k8s.io", kind, "create"), ("admissionregistration.k8s.io", kind, "patch")}
    triples |= {("apiextensions.k8s.io", "customresourcedefinitions", v) for v in ("list", "watch")}
    return triples


def test_operator_cluster_role_grants_exactly_what_it_uses() -> None:
    calls, discovery = needed(OPERATOR)
    assert {c.file for c in discovery} == {"operator/apis.py"}  # discovery: allowed to everyone
    role = operator_objects(ON)["ClusterRole"]
    assert granted(role["rules"]) == calls | kopf_needs()
    named = [r for r in role["rules"] if "resourceNames" in r]
    assert named == [{"apiGroups": ["admissionregistration.k8s.io"],
                      "resources": ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
                      "resourceNames": ["gang-scheduler-operator.gang-scheduler.io"], "verbs": ["patch"]}]
    binding = operator_objects(ON)["ClusterRoleBinding"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "gang-scheduler-operator",
                                    "namespace": "gang-scheduler"}]
