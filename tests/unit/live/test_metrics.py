"""Metrics (``scheduler.live.metrics``): names, bounded labels, and what each recording moves."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from prometheus_client import REGISTRY, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from scheduler.cache.cluster import KINDS, REFUSAL_REASONS
from scheduler.client.kube import ApiError, Conflict, NotFound
from scheduler.framework.plan import Plan, Unschedulable
from scheduler.framework.status import Code
from scheduler.groups import GroupTree, TreeState, build_trees
from scheduler.live.binder import BindOutcome
from scheduler.live.health import HealthServer
from scheduler.live.metrics import (
    BIND_FAILURE_REASONS,
    ENTITY_QUEUES,
    ENTITY_TYPES,
    EVICTION_RESULTS,
    PREEMPTION_RESULTS,
    QUEUES,
    REPAIR_RESULTS,
    RESERVATION_EVENTS,
    RESULTS,
    Metrics,
    bind_failure_reason,
    queue_counts,
)
from scheduler.model import Pod, PodGroup
from scheduler.queue import GroupQueue
from tests.unit.groups.builders import NS, pg

PROFILE = "gang-scheduler"
CREATED = datetime(2026, 1, 1, tzinfo=UTC)

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]

EXPECTED: dict[str, str] = {
    # kube-scheduler's names (pkg/scheduler/metrics/metrics.go, v1.37)
    "scheduler_schedule_attempts": "counter",
    "scheduler_scheduling_attempt_duration_seconds": "histogram",
    "scheduler_scheduling_algorithm_duration_seconds": "histogram",
    "scheduler_podgroup_schedule_attempts": "counter",
    "scheduler_podgroup_scheduling_attempt_duration_seconds": "histogram",
    "scheduler_podgroup_scheduling_algorithm_duration_seconds": "histogram",
    "scheduler_pending_pods": "gauge",
    "scheduler_queued_entities": "gauge",
    # ours
    "gang_scheduler_podgroup_creation_to_bound_seconds": "histogram",
    "gang_scheduler_gang_size_pods": "histogram",
    "gang_scheduler_bind_failures": "counter",
    "gang_scheduler_solver_attempts": "histogram",
    "gang_scheduler_informer_synced": "gauge",
    "gang_scheduler_informer_relists": "counter",
    "gang_scheduler_is_leader": "gauge",
}
ALLOWED_LABELS: dict[str, set[str] | None] = {
    "result": set(RESULTS) | set(PREEMPTION_RESULTS) | set(EVICTION_RESULTS)  # preemption's
    | set(REPAIR_RESULTS),  # gang repair's
    "event": set(RESERVATION_EVENTS),
    "profile": {PROFILE},
    "queue": set(QUEUES),
    "type": set(ENTITY_TYPES),
    "reason": set(BIND_FAILURE_REASONS) | set(REFUSAL_REASONS),
    "kind": set(KINDS),  # objects refused: the cache's kinds
    "resource": {"pods", "nodes", "podgroups", "compositepodgroups", "priorityclasses"},
    "le": None,  # histogram bucket bounds: fixed per histogram
}


def samples(m: Metrics) -> Samples:
    text = generate_latest(m.registry).decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(m: Metrics, name: str, **labels: str) -> float:
    return samples(m)[(name, frozenset(labels.items()))]


def pod(name: str, group: str | None, node: str | None = None, gated: bool = False) -> Pod:
    spec: dict[str, Any] = {"schedulerName": PROFILE, "containers": [{"name": "c"}]}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if node:
        spec["nodeName"] = node
    if gated:
        spec["schedulingGates"] = [{"name": "example.com/wait"}]
    return Pod.model_validate({"metadata": {"name": name, "namespace": NS, "creationTimestamp": "2026-01-01T00:00:00Z"},
                               "spec": spec, "status": {"phase": "Running" if node else "Pending"}})


def tree_of(pods: list[Pod], groups: list[PodGroup]) -> GroupTree:
    forest = build_trees(pods, groups, [], [], scheduler_name=PROFILE)
    (tree,) = forest.trees
    return tree


def gang(name: str, n: int, min_count: int | None = None, gated: int = 0) -> GroupTree:
    pods = [pod(f"{name}-{i}", name) for i in range(n)] + [pod(f"{name}-g{i}", name, gated=True) for i in range(gated)]
    return tree_of(pods, [pg(name, min_count if min_count is not None else n)])


def lone(name: str) -> GroupTree:
    return tree_of([pod(name, None)], [])


def plan_for(tree: GroupTree, unplaced: int = 0, attempts: int = 1) -> Plan:
    pending = [p for leaf in tree.root.leaves() for p in leaf.pending]
    placed, left = pending[:len(pending) - unplaced], pending[len(pending) - unplaced:]
    return Plan(root=tree.key, placements=tuple((p, "n1") for p in placed), satisfied=frozenset({tree.key}),
                unplaced={p.key: "did not fit" for p in left}, attempts=attempts)


def outcome(plan: Plan, bound: int | None = None, error: ApiError | None = None) -> BindOutcome:
    n = len(plan.placements) if bound is None else bound
    result = BindOutcome(bound=list(plan.placements[:n]))
    if error is not None:
        result.failed = (plan.placements[n][0].key, error)
        result.skipped = [p.key for p, _ in plan.placements[n + 1:]]
    return result


def root_group(name: str, scheduled: bool = False) -> PodGroup:
    group = pg(name, created="2026-01-01T00:00:00Z")
    if scheduled:
        group = PodGroup.model_validate({**group.model_dump(by_alias=True, exclude_none=True), "status": {
            "conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled"}]}})
    return group


# -- names and labels ------------------------------------------------------------------------
def test_every_metric_is_exposed_with_its_type_and_a_help_text() -> None:
    families = {f.name: f for f in text_string_to_metric_families(generate_latest(Metrics(PROFILE).registry).decode())}
    for name, type_ in EXPECTED.items():
        assert name in families, name
        assert families[name].type == type_, name
        assert len(families[name].documentation) > 30, name


def test_help_texts_state_the_unit_of_every_seconds_metric() -> None:
    families = text_string_to_metric_families(generate_latest(Metrics(PROFILE).registry).decode())
    for family in families:
        if family.name.endswith("_seconds"):
            assert "second" in family.documentation.lower(), family.name


def test_no_created_series_are_exported_as_kube_scheduler_exports_none() -> None:
    samples = [s.name for f in text_string_to_metric_families(generate_latest(Metrics(PROFILE).registry).decode())
               for s in f.samples]
    assert any(n.startswith("scheduler_schedule_attempts") for n in samples)
    assert [n for n in samples if n.endswith("_created")] == []


def test_help_texts_speak_of_what_is_counted_not_of_the_code() -> None:
    for family in Metrics(PROFILE).registry.collect():
        assert not re.search(r"\b[A-Z][a-z]+[A-Z]?[a-z]*\.[a-z_]+\b", family.documentation), family.name


def test_counters_start_at_zero_for_every_label_value() -> None:
    m = Metrics(PROFILE)
    for result in RESULTS:
        assert value(m, "scheduler_schedule_attempts_total", result=result, profile=PROFILE) == 0
        assert value(m, "scheduler_podgroup_schedule_attempts_total", result=result, profile=PROFILE) == 0
    for reason in BIND_FAILURE_REASONS:
        assert value(m, "gang_scheduler_bind_failures_total", reason=reason) == 0
    for queue in QUEUES:
        assert value(m, "scheduler_pending_pods", queue=queue) == 0
    for queue in ENTITY_QUEUES:
        for type_ in ENTITY_TYPES:
            assert value(m, "scheduler_queued_entities", queue=queue, type=type_) == 0


def test_each_instance_has_its_own_registry_and_the_global_one_is_untouched() -> None:
    a, b = Metrics(PROFILE), Metrics(PROFILE)
    a.pod_attempts("scheduled", 3, 0.01)
    assert value(a, "scheduler_schedule_attempts_total", result="scheduled", profile=PROFILE) == 3
    assert value(b, "scheduler_schedule_attempts_total", result="scheduled", profile=PROFILE) == 0
    assert REGISTRY.get_sample_value("scheduler_schedule_attempts_total",
                                     {"result": "scheduled", "profile": PROFILE}) is None


def test_labels_are_closed_sets_and_never_name_pods_or_groups() -> None:
    m = Metrics(PROFILE)
    secret = gang("secret-training-run", 3)
    m.solved(secret, plan_for(secret), 0.002)
    p = plan_for(secret)
    m.bound(secret, p, outcome(p, bound=1, error=Conflict(409, "Conflict", "taken")), 0.01, root=root_group("x"))
    m.solved(secret, Unschedulable(secret.key, Code.UNSCHEDULABLE, "no", attempts=4), 0.001)
    m.solved(lone("secret-lone-pod"), plan_for(lone("secret-lone-pod")), 0.001)
    m.set_queues([secret], [gang("other", 2)], [gang("waiting", 1, min_count=4)], 2)
    text = generate_latest(m.registry).decode()
    assert "secret" not in text
    ours = [(name, labels) for name, labels in samples(m) if name.startswith(("scheduler_", "gang_scheduler_"))]
    assert len(ours) > 100
    for name, labels in ours:
        for key, val in labels:
            assert key in ALLOWED_LABELS, (name, key)
            allowed = ALLOWED_LABELS[key]
            assert allowed is None or val in allowed, (name, key, val)


# -- recording: one solve, one bind ----------------------------------------------------------
@pytest.mark.parametrize(("pods", "result", "expected"), [
    pytest.param(3, "plan", {("scheduled", "podgroup"): 1, ("scheduled", "pods"): 3, ("error", "pods"): 0,
                             ("unschedulable", "pods"): 0}, id="gang-that-fits-counts-its-pods-once-bound"),
    pytest.param(6, "unschedulable", {("unschedulable", "podgroup"): 1, ("unschedulable", "pods"): 6,
                                      ("scheduled", "pods"): 0}, id="gang-that-does-not-fit-counts-every-pending-pod"),
])
def test_group_attempt_results(pods: int, result: str, expected: dict[tuple[str, str], int]) -> None:
    m = Metrics(PROFILE)
    tree = gang("g", pods)
    if result == "plan":
        plan = plan_for(tree)
        m.solved(tree, plan, 0.002)
        assert value(m, "scheduler_schedule_attempts_total", result="scheduled", profile=PROFILE) == 0  # not yet bound
        m.bound(tree, plan, outcome(plan), 0.05, root=root_group("g"))
    else:
        m.solved(tree, Unschedulable(tree.key, Code.UNSCHEDULABLE, "no", attempts=2), 0.002)
    for (res, what), n in expected.items():
        name = f"scheduler_{'podgroup_' if what == 'podgroup' else ''}schedule_attempts_total"
        assert value(m, name, result=res, profile=PROFILE) == n, (res, what)
    assert value(m, "scheduler_podgroup_scheduling_algorithm_duration_seconds_count") == 1
    assert value(m, "scheduler_scheduling_algorithm_duration_seconds_count") == 0  # lone pods only


def test_bound_plan_records_latencies_gang_size_and_creation_to_bound() -> None:
    m = Metrics(PROFILE)
    tree = gang("g", 3)
    plan = plan_for(tree, attempts=5)
    m.solved(tree, plan, 0.002)
    m.bound(tree, plan, outcome(plan), 0.05, root=root_group("g"), now=CREATED + timedelta(seconds=42))
    assert value(m, "gang_scheduler_gang_size_pods_count") == 1
    assert value(m, "gang_scheduler_gang_size_pods_sum") == 3
    assert value(m, "gang_scheduler_solver_attempts_sum", result="scheduled") == 5
    assert value(m, "scheduler_podgroup_scheduling_attempt_duration_seconds_sum",
                 result="scheduled", profile=PROFILE) == pytest.approx(0.05)
    assert value(m, "scheduler_scheduling_attempt_duration_seconds_count", result="scheduled", profile=PROFILE) == 3
    assert value(m, "gang_scheduler_podgroup_creation_to_bound_seconds_count") == 1
    assert value(m, "gang_scheduler_podgroup_creation_to_bound_seconds_sum") == 42
    assert value(m, "gang_scheduler_podgroup_creation_to_bound_seconds_bucket", le="51.2") == 1
    assert value(m, "gang_scheduler_podgroup_creation_to_bound_seconds_bucket", le="25.6") == 0


def test_creation_to_bound_is_observed_once_per_root_not_for_later_plans() -> None:
    m = Metrics(PROFILE)
    tree = gang("g", 2)
    plan = plan_for(tree)
    m.bound(tree, plan, outcome(plan), 0.01, root=root_group("g", scheduled=True), now=CREATED)
    assert value(m, "gang_scheduler_podgroup_creation_to_bound_seconds_count") == 0
    assert value(m, "scheduler_podgroup_schedule_attempts_total", result="scheduled", profile=PROFILE) == 1


@pytest.mark.parametrize(("error", "reason"), [
    pytest.param(Conflict(409, "Conflict", "bound elsewhere"), "conflict", id="409-conflict"),
    pytest.param(NotFound(404, "NotFound", "pod deleted"), "not_found", id="404-pod-deleted"),
    pytest.param(ApiError(503, "ServiceUnavailable", "down"), "server_error", id="5xx-after-retries"),
])
def test_bind_failure_counts_error_pods_the_root_and_the_reason(error: ApiError, reason: str) -> None:
    m = Metrics(PROFILE)
    tree = gang("g", 4)
    plan = plan_for(tree)
    m.bound(tree, plan, outcome(plan, bound=1, error=error), 0.02, root=root_group("g"), now=CREATED)
    assert value(m, "scheduler_schedule_attempts_total", result="scheduled", profile=PROFILE) == 1
    assert value(m, "scheduler_schedule_attempts_total", result="error", profile=PROFILE) == 3
    assert value(m, "scheduler_podgroup_schedule_attempts_total", result="error", profile=PROFILE) == 1
    assert value(m, "scheduler_podgroup_schedule_attempts_total", result="scheduled", profile=PROFILE) == 0
    assert value(m, "gang_scheduler_bind_failures_total", reason=reason) == 1
    assert value(m, "gang_scheduler_podgroup_creation_to_bound_seconds_count") == 0


def test_members_a_plan_leaves_pending_count_unschedulable() -> None:
    m = Metrics(PROFILE)
    tree = tree_of([pod(f"b-{i}", "b") for i in range(3)], [pg("b", None)])  # basic group: overflow stays pending
    m.solved(tree, plan_for(tree, unplaced=1), 0.001)
    assert value(m, "scheduler_schedule_attempts_total", result="unschedulable", profile=PROFILE) == 1


def test_lone_pod_counts_in_pod_metrics_only() -> None:
    m = Metrics(PROFILE)
    tree = lone("solo")
    plan = plan_for(tree)
    m.solved(tree, plan, 0.001)
    m.bound(tree, plan, outcome(plan), 0.01)
    assert value(m, "scheduler_schedule_attempts_total", result="scheduled", profile=PROFILE) == 1
    assert value(m, "scheduler_scheduling_algorithm_duration_seconds_count") == 1
    assert value(m, "scheduler_podgroup_scheduling_algorithm_duration_seconds_count") == 0
    assert value(m, "gang_scheduler_gang_size_pods_count") == 0
    for result in RESULTS:
        assert value(m, "scheduler_podgroup_schedule_attempts_total", result=result, profile=PROFILE) == 0


@pytest.mark.parametrize(("status", "reason"), [
    pytest.param(409, "conflict", id="409"),
    pytest.param(404, "not_found", id="404"),
    pytest.param(500, "server_error", id="500"),
    pytest.param(503, "server_error", id="503"),
    pytest.param(429, "other", id="429-throttled-after-retries"),
    pytest.param(0, "other", id="transport-failure"),
    pytest.param(403, "other", id="403-forbidden"),
])
def test_bind_failure_reason_from_http_status(status: int, reason: str) -> None:
    assert bind_failure_reason(status) == reason


# -- queues ----------------------------------------------------------------------------------
def test_queue_counts_place_pods_and_entities_by_tree_state() -> None:
    ready = gang("ready", 3, gated=1)                 # 3 pending + 1 gated member, tree still ready
    backing = gang("backing", 2)
    solo = lone("solo")
    waiting = gang("waiting", 2, min_count=4)          # too few members: gated
    invalid = tree_of([pod("bad-0", "bad")], [pg("bad", 0)])  # minCount below 1
    assert (waiting.state, invalid.state) == (TreeState.WAITING, TreeState.INVALID)
    counts = queue_counts([ready, solo], [backing], [waiting, invalid], incomplete_pods=5)
    assert counts.pods == {"active": 4, "backoff": 2, "unschedulable": 1, "gated": 3, "incomplete": 5}
    assert {k: v for k, v in counts.entities.items() if v} == {
        ("active", "podgroup"): 1, ("active", "pod"): 1, ("backoff", "podgroup"): 1,
        ("gated", "podgroup"): 1, ("unschedulable", "podgroup"): 1}


def test_set_queues_then_clear_queues() -> None:
    m = Metrics(PROFILE)
    m.set_queues([], [gang("g", 6)], [], 0)
    assert value(m, "scheduler_pending_pods", queue="backoff") == 6
    assert value(m, "scheduler_queued_entities", queue="backoff", type="podgroup") == 1
    m.clear_queues()
    assert value(m, "scheduler_pending_pods", queue="backoff") == 0


def test_partial_gangs_are_read_at_scrape_time() -> None:
    """What the count says when scraped, not when last set: a replica that stops leading reads 0 from then on,
    whatever a bind still in flight finds."""
    m = Metrics(PROFILE)
    partial, leading = {"a", "b"}, [True]
    m.track_partial_gangs(lambda: len(partial) if leading[0] else 0)
    assert value(m, "gang_scheduler_gangs_below_min") == 2
    leading[0] = False
    partial.add("c")
    assert value(m, "gang_scheduler_gangs_below_min") == 0


def test_group_queue_keys_lists_each_queued_root_once() -> None:
    q = GroupQueue()
    a, b = gang("a", 1), gang("b", 1)
    q.push(a)
    q.push(a)  # re-push replaces
    q.push(b)
    q.discard(b.key)
    assert [k.name for k in q.queued()] == ["a"]
    q.pop()
    assert q.queued() == []


# -- state read at scrape time ---------------------------------------------------------------
class FakeInformer:
    def __init__(self) -> None:
        self.synced = asyncio.Event()
        self.relists = 0


def test_informer_sync_and_relists_are_read_at_scrape_time() -> None:
    m = Metrics(PROFILE)
    informer = FakeInformer()
    m.track_informer("", "pods", informer)
    pods = {"group": "", "resource": "pods"}
    assert value(m, "gang_scheduler_informer_synced", **pods) == 0
    assert value(m, "gang_scheduler_informer_relists_total", **pods) == 0
    informer.synced.set()
    informer.relists = 1  # the initial list is not a re-list
    assert value(m, "gang_scheduler_informer_synced", **pods) == 1
    assert value(m, "gang_scheduler_informer_relists_total", **pods) == 0
    informer.relists = 3
    assert value(m, "gang_scheduler_informer_relists_total", **pods) == 2


def test_two_apis_of_one_plural_are_reported_apart() -> None:
    """scheduling.k8s.io's PodGroups and scheduler-plugins' (scheduling.x-k8s.io) are both ``podgroups``: each has
    its own series, and dropping one leaves the other's."""
    m = Metrics(PROFILE)
    ours, coscheduling = FakeInformer(), FakeInformer()
    m.track_informer("scheduling.k8s.io", "podgroups", ours)
    m.track_informer("scheduling.x-k8s.io", "podgroups", coscheduling)
    coscheduling.synced.set()
    coscheduling.relists = 2
    assert value(m, "gang_scheduler_informer_synced", group="scheduling.k8s.io", resource="podgroups") == 0
    assert value(m, "gang_scheduler_informer_synced", group="scheduling.x-k8s.io", resource="podgroups") == 1
    assert value(m, "gang_scheduler_informer_relists_total", group="scheduling.k8s.io", resource="podgroups") == 0
    assert value(m, "gang_scheduler_informer_relists_total", group="scheduling.x-k8s.io", resource="podgroups") == 1
    m.untrack_informer("scheduling.k8s.io", "podgroups", ours)
    assert [labels for name, labels in samples(m) if name == "gang_scheduler_informer_synced"] == [
        frozenset({("group", "scheduling.x-k8s.io"), ("resource", "podgroups")})]
    assert [labels for name, labels in samples(m) if name == "gang_scheduler_informer_relists_total"] == [
        frozenset({("group", "scheduling.x-k8s.io"), ("resource", "podgroups")})]


def test_leader_gauge_follows_the_callable() -> None:
    m = Metrics(PROFILE)
    leading = [False]
    m.track_leader(lambda: leading[0])
    assert value(m, "gang_scheduler_is_leader") == 0
    leading[0] = True
    assert value(m, "gang_scheduler_is_leader") == 1


# -- serving ---------------------------------------------------------------------------------
@pytest_asyncio.fixture
async def served() -> AsyncIterator[tuple[Metrics, str]]:
    m = Metrics(PROFILE)
    server = HealthServer("127.0.0.1", 0, lambda: (True, "ok"))
    server.add_route("GET", "/metrics", m.handler())
    await server.start()
    try:
        yield m, f"http://127.0.0.1:{server.port}/metrics"
    finally:
        await server.stop()


@pytest.mark.parametrize(("accept", "content_type"), [
    pytest.param(None, "text/plain", id="prometheus-text-by-default"),
    pytest.param("application/openmetrics-text; version=1.0.0", "application/openmetrics-text", id="openmetrics"),
])
async def test_metrics_endpoint_serves_the_registry(served: tuple[Metrics, str], accept: str | None,
                                                    content_type: str) -> None:
    m, url = served
    m.pod_attempts("scheduled", 2, 0.01)
    headers = {"Accept": accept} if accept else {}
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith(content_type)
        body = await resp.text()
    assert 'scheduler_schedule_attempts_total{profile="gang-scheduler",result="scheduled"} 2.0' in body


# -- preemption ---------------------------------------------------------------------
def test_preemption_series_exist_at_zero_and_count_a_preemption() -> None:
    from scheduler.framework import Preemption

    m = Metrics(PROFILE, process_metrics=False)
    for result in PREEMPTION_RESULTS:
        assert value(m, "scheduler_podgroup_preemption_attempts_total", result=result) == 0
    for result in EVICTION_RESULTS:
        assert value(m, "gang_scheduler_preemption_evictions_total", result=result) == 0
    for event in RESERVATION_EVENTS:
        assert value(m, "gang_scheduler_reservations_total", event=event) == 0
    tree = gang("g", 2)
    failure = Unschedulable(tree.key, Code.UNSCHEDULABLE, "no")
    victims = tuple(p for leaf in gang("v", 3).root.leaves() for p in leaf.pending)
    decision = Preemption(tree.key, victims, (), plan_for(tree), failure, "m", units=1, reprieved=4)
    m.preemption_attempt("preempting", 0.004, decision)
    m.preemption_attempt("waiting", 0.001, None)
    assert value(m, "scheduler_podgroup_preemption_attempts_total", result="preempting") == 1
    assert value(m, "scheduler_podgroup_preemption_attempt_duration_seconds_count", result="waiting") == 1
    assert value(m, "scheduler_podgroup_preemption_victims_sum") == 3
    assert value(m, "scheduler_podgroup_preemption_reprieved_total") == 4
    m.solved(tree, decision, 0.004)  # the root's attempt ends unschedulable: it waits for its victims
    assert value(m, "scheduler_podgroup_schedule_attempts_total", result="unschedulable", profile=PROFILE) == 1
    m.reservation("granted", 1)
    assert value(m, "gang_scheduler_reservations_active") == 1
