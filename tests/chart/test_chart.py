"""The Helm chart, rendered and linted by Helm's own code (helm-python-sdk), for its defaults and variations.

Every rendered object is validated against the strict OpenAPI schemas (``kubernetes-validate``: unknown
fields fail) of each Kubernetes version the chart installs on — the floor in ``Chart.yaml``'s
``kubeVersion`` (:data:`FLOOR`), v1.36 and v1.37 — rendered with that ``--kube-version``, the
scheduler-plugins CRD and the operator's objects included. prometheus-operator kinds
(ServiceMonitor, PodMonitor) are CRDs those schemas lack: they are checked structurally, and
against the Service and pods they must select. The Deployment's environment is fed to the
scheduler's own ``Settings`` to prove that every value reaches ``gang-scheduler run`` as meant.
"""

from __future__ import annotations

import os
import re
import tomllib
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml
from pydantic import ValidationError

import scheduler
from scheduler.config import Settings
from tests.chart.helmchart import CHART_DIR, NOTES, ROOT, objects, render

FLOOR = "1.25.0"
"""The oldest Kubernetes the chart installs on (``Chart.yaml`` ``kubeVersion``): every API it renders and the
scheduler and operator call is GA by v1.21 (the newest, policy/v1 PodDisruptionBudget), and v1.25 is the oldest
version ``kubernetes-validate`` has strict schemas of, so the oldest one these tests can prove the objects for."""
KUBE_VERSIONS = (FLOOR, "1.36.0", "1.37.0")
CRD_KINDS = {"ServiceMonitor", "PodMonitor"}
NOT_VALUES = {"kubeconfig"}  # Settings the chart does not expose: in a cluster the pod's service account is used

VARIATIONS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "service-monitor": {"serviceMonitor": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}}},
    "pod-monitor": {"podMonitor": {"enabled": True, "interval": "15s"}},
    "leader-election-off": {"config": {"leaderElect": False}, "replicaCount": 1},
    "custom-scheduler-name": {"config": {"schedulerName": "team-a-gangs", "namespaces": ["ml", "research"],
                                         "scoring": "spread", "searchBudget": 1024, "clientQps": 0,
                                         "backoffInitialS": 0.5, "leaseNamespace": "kube-system",
                                         "leaseName": "team-a-gangs", "bindAddress": "[::]:9443"}},
    "placement-and-image": {"image": {"repository": "registry.example.com/gang-scheduler", "tag": "0.1.0-rc1",
                                      "pullPolicy": "Always"},
                            "imagePullSecrets": [{"name": "pull"}], "priorityClassName": "",
                            "nodeSelector": {"node-role.kubernetes.io/control-plane": ""},
                            "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
                                             "effect": "NoSchedule"}],
                            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [{"matchExpressions": [
                                    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}]}}},
                            "extraEnv": [{"name": "TZ", "value": "UTC"}], "replicaCount": 3,
                            "podLabels": {"team": "infra"}, "podAnnotations": {"a": "b"},
                            "serviceAccount": {"annotations": {"example.com/role": "scheduler"}}},
    "scheduler-plugins-crd": {"crds": {"install": True}},
    "existing-service-account": {"serviceAccount": {"create": False, "name": "scheduler"}, "rbac": {"create": False}},
}
RENDERS = {**VARIATIONS, "operator": {"operator": {"enabled": True, "webhook": {"certificateSecret": "operator-tls"}}}}
"""What lint and schema validation cover: :data:`VARIATIONS` and the operator (a second Deployment, so not in
the one-object-per-kind tests; ``test_operator_chart.py`` checks its objects)."""


def by_kind(objs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    kinds = [o["kind"] for o in objs]
    assert len(kinds) == len(set(kinds)), f"one object per kind expected: {kinds}"
    return {o["kind"]: o for o in objs}


def container(objs: list[dict[str, Any]]) -> dict[str, Any]:
    [c] = by_kind(objs)["Deployment"]["spec"]["template"]["spec"]["containers"]
    return c


def env(objs: list[dict[str, Any]]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container(objs)["env"]}


def chart_values(overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    with helm.Chart.load(CHART_DIR) as chart:
        return chart.merge_values(overrides)


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


# -- Helm: lint and render -------------------------------------------------------------------

@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
@pytest.mark.parametrize("values", RENDERS.values(), ids=RENDERS.keys())
def test_helm_lint_is_clean(values: dict[str, Any], kube_version: str) -> None:
    report = helm.lint(CHART_DIR, values, strict=True, kube_version=f"v{kube_version}")
    assert report["errors"] == []
    # Helm's only remark is informational (severity 1): a chart icon, which we do not have.
    assert [(m["severity"], m["error"]) for m in report["messages"]] == [(1, "icon is recommended")]


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
@pytest.mark.parametrize("values", RENDERS.values(), ids=RENDERS.keys())
def test_every_rendered_object_validates_against_that_kubernetes(values: dict[str, Any], kube_version: str) -> None:
    objs = objects(render(values, kube_version=kube_version))
    assert objs
    for obj in objs:
        if obj["kind"] in CRD_KINDS:
            continue  # checked by test_monitors_select_the_scheduler
        assert kubernetes_validate.validate(obj, kube_version, strict=True) == kube_version.rpartition(".")[0], \
            obj["kind"]


def test_the_variations_render_every_kind_the_chart_has() -> None:
    """What the validation above covers: the scheduler-plugins CRD and the operator's webhook configurations too."""
    kinds = {o["kind"] for values in RENDERS.values() for o in objects(render(values))}
    assert {"CustomResourceDefinition", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
            "ServiceMonitor", "PodMonitor", "PodDisruptionBudget", "Deployment"} <= kinds


def test_default_render_has_the_expected_objects() -> None:
    objs = objects(render())
    assert sorted(o["kind"] for o in objs) == sorted([
        "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service", "Deployment",
        "PodDisruptionBudget"])
    for obj in objs:
        if obj["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
            assert obj["metadata"]["namespace"] == "gang-scheduler", obj["kind"]
        assert obj["metadata"]["labels"]["app.kubernetes.io/name"] == "gang-scheduler"


def test_release_name_prefixes_object_names() -> None:
    names = {o["kind"]: o["metadata"]["name"] for o in objects(render(name="batch", namespace="sched"))}
    assert names["Deployment"] == "batch-gang-scheduler"
    assert names["Service"] == "batch-gang-scheduler-metrics"
    assert names["Role"] == "batch-gang-scheduler-leader-election"


# -- values reach `gang-scheduler run` ----------------------------------------------------------

def test_config_values_are_the_run_settings_one_to_one() -> None:
    settings = set(Settings.model_fields) - NOT_VALUES
    assert set(chart_values()["config"]) == {camel(name) for name in settings}


@pytest.mark.parametrize("values", VARIATIONS.values(), ids=VARIATIONS.keys())
def test_deployment_env_parses_into_the_configured_settings(values: dict[str, Any],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    variables = {k: v for k, v in env(objects(render(values))).items() if k.startswith("GANG_SCHEDULER_")}
    for name in [n for n in os.environ if n.startswith("GANG_SCHEDULER_")]:
        monkeypatch.delenv(name)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    parsed = Settings()
    config = chart_values(values)["config"]
    for name in set(Settings.model_fields) - NOT_VALUES:
        expected = config[camel(name)]
        if name == "lease_namespace" and not expected:
            expected = "gang-scheduler"  # the release namespace
        assert getattr(parsed, name) == expected, name
    assert set(variables) == {f"GANG_SCHEDULER_{n.upper()}" for n in set(Settings.model_fields) - NOT_VALUES}


def test_large_numbers_are_not_written_in_exponent_notation() -> None:
    variables = env(objects(render({"config": {"searchBudget": 10_000_000, "clientBurst": 2_000_000}})))
    assert variables["GANG_SCHEDULER_SEARCH_BUDGET"] == "10000000"
    assert variables["GANG_SCHEDULER_CLIENT_BURST"] == "2000000"


def test_log_level_and_extra_env() -> None:
    c = container(objects(render({"logLevel": "DEBUG", "extraEnv": [{"name": "TZ", "value": "UTC"}]})))
    assert c["args"] == ["--log-level=DEBUG"]
    assert c["env"][-1] == {"name": "TZ", "value": "UTC"}


# -- the Deployment ------------------------------------------------------------------------------

def test_defaults_two_replicas_with_leader_election_and_a_disruption_budget() -> None:
    objs = by_kind(objects(render()))
    deployment = objs["Deployment"]["spec"]
    assert deployment["replicas"] == 2
    assert "strategy" not in deployment  # RollingUpdate: a standby takes over through the Lease
    assert env(list(objs.values()))["GANG_SCHEDULER_LEADER_ELECT"] == "true"
    assert objs["PodDisruptionBudget"]["spec"] == {"minAvailable": 1, "selector": deployment["selector"]}
    pod = deployment["template"]["spec"]
    assert pod["priorityClassName"] == "system-cluster-critical"
    term = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
    assert term["labelSelector"] == deployment["selector"] and term["topologyKey"] == "kubernetes.io/hostname"


def test_leader_election_off_runs_one_replica_recreated_without_disruption_budget() -> None:
    objs = by_kind(objects(render(VARIATIONS["leader-election-off"])))
    spec = objs["Deployment"]["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "Recreate"}  # never two schedulers at once during a rollout
    assert "PodDisruptionBudget" not in objs
    assert "affinity" not in spec["template"]["spec"]
    assert env(list(objs.values()))["GANG_SCHEDULER_LEADER_ELECT"] == "false"


@pytest.mark.parametrize("values, message", [
    ({"config": {"leaderElect": False}}, "config.leaderElect=false with replicaCount > 1"),
    ({"config": {"leaseDurationS": 10, "renewDeadlineS": 10}}, "leaseDurationS > renewDeadlineS > retryPeriodS"),
    ({"config": {"renewDeadlineS": 2, "retryPeriodS": 2}}, "leaseDurationS > renewDeadlineS > retryPeriodS"),
    ({"config": {"backoffInitialS": 5, "backoffMaxS": 2}}, "backoffMaxS >= backoffInitialS"),
    ({"serviceMonitor": {"enabled": True}, "podMonitor": {"enabled": True}}, "enable serviceMonitor or podMonitor"),
    ({"serviceAccount": {"create": False}}, "serviceAccount.name is required"),
], ids=["no-election-two-replicas", "lease-not-above-deadline", "deadline-not-above-retry", "backoff-cap-below-first",
        "both-monitors",
        "existing-account-without-name"])
def test_render_refuses_unsafe_combinations(values: dict[str, Any], message: str) -> None:
    with pytest.raises(helm.HelmRenderError, match=re.escape(message)):
        render(values)


def test_security_context_is_restricted() -> None:
    objs = objects(render())
    pod = by_kind(objs)["Deployment"]["spec"]["template"]["spec"]
    assert pod["securityContext"] == {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532,
                                      "seccompProfile": {"type": "RuntimeDefault"}}
    assert container(objs)["securityContext"] == {
        "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}
    assert pod["automountServiceAccountToken"] is True  # the in-cluster client needs the token
    assert container(objs)["volumeMounts"] == [{"name": "tmp", "mountPath": "/tmp"}]


@pytest.mark.parametrize("bind_address, port", [("0.0.0.0:10251", 10251), ("[::]:9443", 9443)])
def test_probes_and_ports_follow_the_bind_address(bind_address: str, port: int) -> None:
    objs = objects(render({"config": {"bindAddress": bind_address}}))
    c = container(objs)
    assert c["ports"] == [{"name": "http-metrics", "containerPort": port, "protocol": "TCP"}]
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http-metrics"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http-metrics"}
    service = by_kind(objs)["Service"]["spec"]
    assert service["ports"] == [{"name": "http-metrics", "port": 10251, "targetPort": "http-metrics",
                                 "protocol": "TCP"}]
    assert service["selector"] == by_kind(objs)["Deployment"]["spec"]["selector"]["matchLabels"]


@pytest.mark.parametrize(("bind_address", "run_takes_it"), [
    ("0.0.0.0", False), ("0.0.0.0:99999", False), ("::1:10251", False), ("0.0.0.0:http", False), ("0.0.0.0:0", True),
], ids=["no-port", "port-above-65535", "ipv6-without-brackets", "port-not-a-number", "port-0"])
def test_a_bind_address_the_scheduler_or_the_probes_cannot_use_is_refused(bind_address: str,
                                                                           run_takes_it: bool) -> None:
    """The schema mirrors ``run``'s ``HOST:PORT`` rule (``scheduler.config.host_port``); port 0 (a free port, which
    ``run`` takes for tests) is refused too, since the port is the container port the probes use."""
    with pytest.raises(helm.HelmValuesError, match="bindAddress"):
        render({"config": {"bindAddress": bind_address}})
    try:
        Settings.model_validate({"bind_address": bind_address})
    except ValidationError:
        taken = False
    else:
        taken = True
    assert taken is run_takes_it


def test_lease_timings_are_not_checked_without_leader_election() -> None:
    """As ``run``: the timings only matter to the elector."""
    values = {"replicaCount": 1, "config": {"leaderElect": False, "leaseDurationS": 10, "renewDeadlineS": 10}}
    assert env(objects(render(values)))["GANG_SCHEDULER_RENEW_DEADLINE_S"] == "10"


def test_image_defaults_to_the_app_version() -> None:
    c = container(objects(render()))
    assert c["image"] == f"gang-scheduler:{scheduler.__version__}"
    assert container(objects(render(VARIATIONS["placement-and-image"])))["image"] == \
        "registry.example.com/gang-scheduler:0.1.0-rc1"


def test_placement_values_reach_the_pod() -> None:
    values = VARIATIONS["placement-and-image"]
    objs = objects(render(values))
    pod = by_kind(objs)["Deployment"]["spec"]["template"]
    spec = pod["spec"]
    assert "priorityClassName" not in spec
    assert spec["nodeSelector"] == values["nodeSelector"]
    assert spec["tolerations"] == values["tolerations"]
    assert spec["affinity"] == values["affinity"]
    assert spec["imagePullSecrets"] == [{"name": "pull"}]
    assert pod["metadata"]["labels"]["team"] == "infra" and pod["metadata"]["annotations"] == {"a": "b"}


# -- monitors (CRDs: checked by structure) ------------------------------------------------------

@pytest.mark.parametrize("kind, key", [("ServiceMonitor", "serviceMonitor"), ("PodMonitor", "podMonitor")])
def test_monitors_are_off_by_default(kind: str, key: str) -> None:
    assert kind not in by_kind(objects(render()))
    assert chart_values()[key]["enabled"] is False


def test_service_monitor_selects_the_metrics_service() -> None:
    objs = by_kind(objects(render(VARIATIONS["service-monitor"])))
    monitor, service = objs["ServiceMonitor"], objs["Service"]
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert set(monitor) == {"apiVersion", "kind", "metadata", "spec"}
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    spec = monitor["spec"]
    assert set(spec) == {"selector", "namespaceSelector", "endpoints"}
    assert spec["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert spec["namespaceSelector"] == {"matchNames": [service["metadata"]["namespace"]]}
    assert spec["endpoints"] == [{"port": "http-metrics", "path": "/metrics", "interval": "30s",
                                  "scrapeTimeout": "10s"}]
    assert [p["name"] for p in service["spec"]["ports"]] == ["http-metrics"]


def test_pod_monitor_selects_the_scheduler_pods() -> None:
    objs = by_kind(objects(render(VARIATIONS["pod-monitor"])))
    monitor, deployment = objs["PodMonitor"], objs["Deployment"]
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    spec = monitor["spec"]
    assert set(spec) == {"selector", "namespaceSelector", "podMetricsEndpoints"}
    assert spec["selector"]["matchLabels"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    assert spec["podMetricsEndpoints"] == [{"port": "http-metrics", "path": "/metrics", "interval": "15s",
                                            "scrapeTimeout": "10s"}]
    assert [p["name"] for p in container(list(objs.values()))["ports"]] == ["http-metrics"]


# -- NOTES.txt -----------------------------------------------------------------------------------

@pytest.mark.parametrize("values, name", [({}, "gang-scheduler"),
                                          (VARIATIONS["custom-scheduler-name"], "team-a-gangs")])
def test_notes_say_how_to_opt_in_and_what_the_cluster_needs(values: dict[str, Any], name: str) -> None:
    notes = render(values)[NOTES]
    assert f"schedulerName: {name}" in notes
    assert "podGroupName:" in notes
    for needed in ("v1.37", "GenericWorkload=true", "scheduling.k8s.io/v1beta1=true", "CompositePodGroup=true",
                   "scheduling.k8s.io/v1alpha3=true", "TopologyAwareWorkloadScheduling", "NodeLifecycleConditions"):
        assert needed in notes, needed
    assert "{{" not in notes and "<no value>" not in notes


@pytest.mark.parametrize("install, says", [(False, "--set crds.install=true installs it"),
                                           (True, "installed by this release")],
                         ids=["crd-not-installed", "crd-installed"])
def test_notes_say_what_older_clusters_need(install: bool, says: str) -> None:
    notes = render({"crds": {"install": install}})[NOTES]
    assert f"installs on Kubernetes v{FLOOR.removesuffix('.0')} or later" in notes
    assert "scheduling.x-k8s.io/v1alpha1" in notes and "scheduling.x-k8s.io/pod-group" in notes
    assert says in notes


def test_notes_name_the_lease_where_it_is() -> None:
    notes = render(VARIATIONS["custom-scheduler-name"])[NOTES]
    assert "kubectl -n kube-system get lease team-a-gangs" in notes
    assert "Only pods in these namespaces are scheduled: ml, research." in notes


# -- values.schema.json, values.yaml and the chart README agree --------------------------------

@pytest.mark.parametrize("values, where", [
    ({"replicas": 2}, "additional properties 'replicas'"),
    ({"config": {"scoring": "binpack"}}, "/config/scoring"),
    ({"config": {"searchBudget": 0}}, "/config/searchBudget"),
    ({"config": {"namespaces": "ml"}}, "/config/namespaces"),
    ({"config": {"schedulerName": "Gang_Scheduler"}}, "/config/schedulerName"),
    ({"config": {"kubeconfig": "/etc/kube"}}, "additional properties 'kubeconfig'"),
    ({"replicaCount": 0}, "/replicaCount"),
    ({"image": {"pullPolicy": "Sometimes"}}, "/image/pullPolicy"),
    ({"serviceMonitor": {"interval": "often"}}, "/serviceMonitor/interval"),
], ids=["unknown-top-level", "bad-scoring", "zero-budget", "namespaces-not-a-list", "bad-scheduler-name",
        "kubeconfig-not-a-value", "zero-replicas", "bad-pull-policy", "bad-interval"])
def test_schema_rejects_bad_values(values: dict[str, Any], where: str) -> None:
    with pytest.raises(helm.HelmValuesError, match=re.escape(where)):
        render(values)


def _paths(values: Any, schema: dict[str, Any], prefix: str = "") -> list[str]:
    """Dotted paths of values.yaml, descending where the schema declares properties; checks both agree."""
    paths = []
    props = schema.get("properties")
    if props is None or not isinstance(values, dict):
        return [prefix]
    assert set(values) == set(props), f"{prefix or '(top)'}: values.yaml vs schema: {set(values) ^ set(props)}"
    assert schema.get("additionalProperties") is False, f"{prefix or '(top)'}: unknown keys must be rejected"
    for key, value in values.items():
        assert props[key].get("description"), f"{prefix}{key}: no description in the schema"
        paths += _paths(value, props[key], f"{prefix}{key}.")
    return paths


def test_schema_covers_every_value_and_nothing_else() -> None:
    with helm.Chart.load(CHART_DIR) as chart:
        schema = chart.schema
        defaults = chart.values
    assert schema is not None
    assert len(_paths(defaults, schema)) > 40


def test_chart_readme_documents_every_value() -> None:
    with helm.Chart.load(CHART_DIR) as chart:
        paths = [p.rstrip(".") for p in _paths(chart.values, chart.schema or {})]
    readme = (CHART_DIR / "README.md").read_text()
    missing = [p for p in paths if f"`{p}`" not in readme]
    assert not missing, f"charts/gang-scheduler/README.md does not document {missing}"


def test_chart_versions_follow_the_package() -> None:
    chart = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert chart["appVersion"] == project["version"] == scheduler.__version__
    assert chart["kubeVersion"] == f">={FLOOR}-0"  # "-0": pre-release builds (v1.30.4-eks-…) are admitted too

