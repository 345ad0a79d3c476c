"""The Grafana dashboard and the PrometheusRule: well-formed, and every query names real metrics.

Every PromQL expression is parsed (``promql-parser``, a PromQL parser compiled from Rust), and each
series it selects must be one that ``scheduler.live.metrics.Metrics`` exposes: the metric name, every
label it matches on or aggregates by (beyond the target labels Prometheus adds), and every
label value it matches exactly. So a metric renamed in scheduler/metrics.py breaks this test,
not a dashboard in production. When ``promtool`` is installed, the alerts' unit tests in
``tests/chart/data/rules-test.yaml`` run too.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import promql_parser as promql
import pytest
import yaml

from scheduler.live.metrics import Metrics
from tests.chart.helmchart import ROOT

DASHBOARD = ROOT / "deploy" / "grafana" / "gang-scheduler.json"
RULES = ROOT / "deploy" / "prometheus" / "gang-scheduler-rules.yaml"
RULES_TEST = Path(__file__).parent / "data" / "rules-test.yaml"

TARGET_LABELS = {"job", "instance", "namespace", "pod", "service", "endpoint", "container"}
"""Labels Prometheus (prometheus-operator's ServiceMonitor/PodMonitor) attaches to every scraped series."""
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$job": ".+", "${job}": ".+"}


class _Informer:
    synced = asyncio.Event()
    relists = 1


class _StatusQueue:
    depth = 0

    def oldest_age_s(self, now: float | None = None) -> float:
        return 0.0


def exposed() -> dict[str, list[dict[str, str]]]:
    """Sample name -> label sets, as a scrape of a fresh scheduler shows them (every family present)."""
    metrics = Metrics("gang-scheduler", process_metrics=False)
    metrics.track_informer("", "pods", _Informer())
    metrics.track_leader(lambda: True)
    metrics.track_status_queue("pods", _StatusQueue())
    samples: dict[str, list[dict[str, str]]] = {}
    for family in metrics.registry.collect():
        for sample in family.samples:
            samples.setdefault(sample.name, []).append(dict(sample.labels))
    return samples


def selectors(expr: str) -> tuple[list[promql.VectorSelector], set[str]]:
    """The vector selectors of ``expr`` and the labels it aggregates ``by``."""
    found: list[promql.VectorSelector] = []
    by: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, promql.VectorSelector):
            found.append(node)
        elif (isinstance(node, promql.AggregateExpr) and node.modifier is not None
              and node.modifier.type == promql.AggModifierType.By):
            by.update(node.modifier.labels)

    promql.walk(promql.parse(expr), visit)
    return found, by


def check_expression(expr: str, samples: dict[str, list[dict[str, str]]]) -> set[str]:
    """Assert ``expr`` parses and selects only exposed series; returns the metric names it reads."""
    for variable, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(variable, value)
    assert "$" not in expr, f"unknown dashboard variable in {expr}"
    found, by = selectors(expr)
    assert found, expr
    names: set[str] = set()
    labels_of_all: set[str] = set()
    for selector in found:
        name = selector.name
        assert name in samples, f"{name} is not exposed by scheduler/metrics.py ({expr})"
        names.add(name)
        label_sets = samples[name]
        labels = {key for s in label_sets for key in s}
        labels_of_all |= labels
        for matcher in selector.matchers.matchers:
            if matcher.name in TARGET_LABELS:
                continue
            assert matcher.name in labels, f"{name} has no label {matcher.name} ({expr})"
            values = {s[matcher.name] for s in label_sets if matcher.name in s}
            if matcher.op == promql.MatchOp.Equal:
                assert matcher.value in values, f"{name}{{{matcher.name}={matcher.value!r}}} never exists"
            elif matcher.op == promql.MatchOp.Re and re.fullmatch(r"[\w|]+", matcher.value):
                missing = set(matcher.value.split("|")) - values
                assert not missing, f"{name}{{{matcher.name}=~...}}: {missing} never exist"
    assert by <= labels_of_all | TARGET_LABELS, f"aggregation by {by - labels_of_all - TARGET_LABELS} ({expr})"
    return names


# -- Grafana -----------------------------------------------------------------------------------

def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def panels() -> list[dict[str, Any]]:
    return [p for p in dashboard()["panels"] if p["type"] != "row"]


def test_dashboard_is_an_importable_grafana_dashboard() -> None:
    dash = dashboard()
    assert (dash["title"], dash["uid"]) == ("gang-scheduler", "gang-scheduler")
    assert isinstance(dash["schemaVersion"], int) and dash["schemaVersion"] >= 36
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert variables["job"]["datasource"] == {"type": "prometheus", "uid": "${datasource}"}


def test_dashboard_panels_do_not_overlap() -> None:
    taken: set[tuple[int, int]] = set()
    for panel in dashboard()["panels"]:
        g = panel["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24, panel["title"]
        cells = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & taken, f"{panel['title']} overlaps another panel"
        taken |= cells


def test_every_dashboard_query_selects_exposed_metrics() -> None:
    samples = exposed()
    for panel in panels():
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            check_expression(target["expr"], samples)
            assert 'job=~"$job"' in target["expr"], f"{panel['title']}: not filtered by the job variable"
    job = next(v for v in dashboard()["templating"]["list"] if v["name"] == "job")
    check_expression(job["definition"].removeprefix("label_values(").removesuffix(", job)"), samples)


@pytest.mark.parametrize("metric, must_contain", [
    ("scheduler_podgroup_schedule_attempts_total", "sum by (result)"),
    ("scheduler_schedule_attempts_total", "sum by (result)"),
    ("scheduler_queued_entities", 'type="podgroup"'),
    ("scheduler_pending_pods", "sum by (queue)"),
    ("scheduler_podgroup_scheduling_attempt_duration_seconds_bucket", "histogram_quantile(0.99"),
    ("scheduler_podgroup_scheduling_algorithm_duration_seconds_bucket", "histogram_quantile(0.5"),
    ("gang_scheduler_podgroup_creation_to_bound_seconds_bucket", "histogram_quantile(0.9"),
    ("gang_scheduler_bind_failures_total", "sum by (reason)"),
    ("gang_scheduler_is_leader", "sum(gang_scheduler_is_leader"),
    ("scheduler_podgroup_preemption_attempts_total", "sum by (result)"),
    ("scheduler_podgroup_preemption_attempt_duration_seconds_bucket", "histogram_quantile(0.99"),
    ("scheduler_podgroup_preemption_victims_bucket", "histogram_quantile(0.5"),
    ("scheduler_podgroup_preemption_reprieved_total", "rate("),
    ("gang_scheduler_preemption_evictions_total", "sum by (result)"),
    ("gang_scheduler_reservations_active", "sum(gang_scheduler_reservations_active"),
    ("gang_scheduler_gangs_below_min", "gang_scheduler_is_leader"),
    ("gang_scheduler_gang_repairs_total", "sum by (result)"),
    ("gang_scheduler_status_queue_oldest_age_seconds", "max by (queue)"),
    ("gang_scheduler_status_queue_depth", "sum by (queue)"),
    ("gang_scheduler_objects_refused_total", "sum by (kind, reason)"),
    ("gang_scheduler_informer_relists_total", "sum by (resource)"),
], ids=["podgroup-attempts-by-result", "pod-attempts-by-result", "pending-groups", "pending-pods",
        "attempt-latency-quantiles", "algorithm-latency-quantiles", "creation-to-bound", "bind-failures", "leader",
        "preemption-attempts", "victim-selection-latency", "victims", "reprieved", "evictions", "reservations",
        "gangs-below-min-on-the-leader", "gang-repairs", "status-write-age", "status-writes-waiting",
        "objects-refused", "relists"])
def test_dashboard_shows(metric: str, must_contain: str) -> None:
    exprs = [t["expr"] for p in panels() for t in p["targets"] if metric in t["expr"]]
    assert any(must_contain in e for e in exprs), f"no panel shows {metric} with {must_contain}: {exprs}"


# -- PrometheusRule -----------------------------------------------------------------------------

def rules() -> list[dict[str, Any]]:
    return [rule for group in yaml.safe_load(RULES.read_text())["spec"]["groups"] for rule in group["rules"]]


def test_prometheus_rule_is_well_formed() -> None:
    doc = yaml.safe_load(RULES.read_text())
    assert (doc["apiVersion"], doc["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    assert set(doc) == {"apiVersion", "kind", "metadata", "spec"} and doc["metadata"]["name"] == "gang-scheduler"
    assert [set(g) for g in doc["spec"]["groups"]] == [{"name", "rules"}]
    names = [r["alert"] for r in rules()]
    assert names == ["GangSchedulerNoLeader", "GangSchedulerGangsPendingTooLong", "GangSchedulerBindFailures",
                     "GangSchedulerPartialGang", "GangSchedulerStatusWritesLagging", "GangSchedulerInformerNotSynced"]
    for rule in rules():
        assert set(rule) == {"alert", "expr", "for", "labels", "annotations"}, rule["alert"]
        assert re.fullmatch(r"\d+[smh]", rule["for"]), rule["alert"]
        assert rule["labels"]["severity"] in ("critical", "warning")
        assert set(rule["annotations"]) == {"summary", "description"}


def test_every_alert_expression_selects_exposed_metrics() -> None:
    samples = exposed()
    read = set()
    for rule in rules():
        read |= check_expression(rule["expr"], samples)
    assert {"gang_scheduler_is_leader", "scheduler_queued_entities", "gang_scheduler_bind_failures_total",
            "scheduler_podgroup_schedule_attempts_total", "gang_scheduler_gangs_below_min",
            "gang_scheduler_status_queue_oldest_age_seconds", "gang_scheduler_informer_synced"} <= read


def test_alert_rules_fire_as_intended_under_promtool(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian package `prometheus`): alert unit tests not run")
    groups = yaml.safe_load(RULES.read_text())["spec"]["groups"]
    for group in groups:
        for rule in group["rules"]:
            rule.pop("annotations")
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    shutil.copy(RULES_TEST, tmp_path / "test.yaml")
    check = subprocess.run([promtool, "check", "rules", str(tmp_path / "rules.yaml")], capture_output=True,
                           text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    result = subprocess.run([promtool, "test", "rules", "test.yaml"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
