"""Parsed pod affinity terms and host ports (``scheduler.framework.pod_terms``), against kube's rules."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.pod_terms import (
    HostPort,
    host_ports,
    pod_terms,
    ports_conflict,
    selector_of,
)
from scheduler.model.pod import LabelSelector
from tests.unit.solver.builders import host_port, pod, pod_affinity, pod_term


def selector(raw: dict[str, Any] | None) -> Any:
    return selector_of(None if raw is None else LabelSelector.model_validate(raw))


@pytest.mark.parametrize("raw, labels, matches", [
    (None, {"app": "x"}, False),
    ({}, {}, True),
    ({}, {"app": "x"}, True),
    ({"matchLabels": {"app": "x"}}, {"app": "x", "tier": "a"}, True),
    ({"matchLabels": {"app": "x"}}, {"app": "y"}, False),
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["x", "y"]}]}, {"app": "y"}, True),
    ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["x"]}]}, {}, True),
    ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, {"app": ""}, True),
    ({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, {"app": "x"}, False),
    ({"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}, {"app": "2"}, False),
], ids=["nil-matches-nothing", "empty-matches-empty-labels", "empty-matches-everything", "match-labels",
        "match-labels-other-value", "in", "not-in-absent-key", "exists", "does-not-exist",
        "gt-is-not-a-label-selector-operator"])
def test_label_selector_semantics(raw: dict[str, Any] | None, labels: dict[str, str], matches: bool) -> None:
    sel = selector(raw)
    assert (sel is not None and sel.matches(labels)) is matches


def term_of(labels: dict[str, str], namespace: str = "ml", **term_fields: Any) -> Any:
    p = pod("p", namespace=namespace, labels=labels,
            affinity=pod_affinity(required=[pod_term({"app": "db"}, **term_fields)]))
    (term,) = pod_terms(p).required_affinity
    return term


def test_namespaces_default_to_the_pods_own() -> None:
    term = term_of({}, namespace="team-a")
    assert term.namespaces == frozenset({"team-a"}) and term.namespace_selector is None
    assert term.matches("team-a", {"app": "db"}, {}) and not term.matches("team-b", {"app": "db"}, {})


@pytest.mark.parametrize("fields, known, scope", [
    ({"namespaces": ["a", "b"]}, {"a": {}, "c": {}}, frozenset({"a", "b"})),
    ({"namespaceSelector": {}}, {"a": {}}, None),
    ({"namespaceSelector": {"matchLabels": {"team": "x"}}}, {"a": {"team": "x"}, "b": {"team": "y"}},
     frozenset({"a"})),
    ({"namespaces": ["b"], "namespaceSelector": {"matchLabels": {"team": "x"}}}, {"a": {"team": "x"}},
     frozenset({"a", "b"})),
    ({"namespaceSelector": {"matchLabels": {"team": "x"}}}, {}, frozenset()),
], ids=["listed-only", "empty-selector-is-every-namespace", "selector-resolved-against-known-namespaces",
        "listed-and-selected-are-unioned", "unknown-namespaces-have-no-labels"])
def test_namespace_scope_of_a_term(fields: dict[str, Any], known: dict[str, dict[str, str]],
                                   scope: frozenset[str] | None) -> None:
    """kube's PreFilter merges ``namespaceSelector`` into ``namespaces`` (interpodaffinity/plugin.go
    ``mergeAffinityTermNamespacesIfNotEmpty``); ``{}`` stays "all"."""
    assert term_of({}, **fields).scope(known) == scope


@pytest.mark.parametrize("fields, candidate, matches", [
    ({"matchLabelKeys": ["job"]}, {"app": "db", "job": "j1"}, True),
    ({"matchLabelKeys": ["job"]}, {"app": "db", "job": "j2"}, False),
    ({"mismatchLabelKeys": ["job"]}, {"app": "db", "job": "j1"}, False),
    ({"mismatchLabelKeys": ["job"]}, {"app": "db", "job": "j2"}, True),
    ({"matchLabelKeys": ["absent"]}, {"app": "db"}, True),
], ids=["match-key-same-value", "match-key-other-value", "mismatch-key-same-value", "mismatch-key-other-value",
        "key-the-pod-lacks-is-ignored"])
def test_match_label_keys_are_merged_from_the_pods_labels(fields: dict[str, Any], candidate: dict[str, str],
                                                          matches: bool) -> None:
    """kube-apiserver's ``mutatePodAffinity`` (registry/core/pod/strategy.go): ``key In [value]`` /
    ``key NotIn [value]`` for each key the pod has."""
    term = term_of({"job": "j1"}, **fields)
    assert term.matches("ml", candidate, {}) is matches


def test_match_label_keys_leave_a_nil_selector_nil() -> None:
    p = pod("p", labels={"job": "j1"},
            affinity=pod_affinity(required=[pod_term(selector=False, matchLabelKeys=["job"])]))
    (term,) = pod_terms(p).required_affinity
    assert term.selector is None and not term.matches("default", {"job": "j1"}, {})


def test_pod_without_pod_affinity_has_no_terms() -> None:
    assert not pod_terms(pod("p"))


@pytest.mark.parametrize("build, expected", [
    (lambda: pod("p", ports=[host_port(29500)]), (HostPort("0.0.0.0", "TCP", 29500),)),
    (lambda: pod("p", ports=[host_port(53, "UDP", "10.0.0.1")]), (HostPort("10.0.0.1", "UDP", 53),)),
    (lambda: pod("p", ports=[{"containerPort": 8080}]), ()),
    (lambda: pod("p", ports=[{"containerPort": 8080}], spec={"hostNetwork": True}),
     (HostPort("0.0.0.0", "TCP", 8080),)),
    (lambda: pod("p", spec={"initContainers": [
        {"name": "side", "restartPolicy": "Always", "ports": [host_port(9000)]},
        {"name": "setup", "ports": [host_port(9001)]}]}), (HostPort("0.0.0.0", "TCP", 9000),)),
], ids=["defaults-wildcard-ip-and-tcp", "ip-and-protocol-kept", "no-host-port", "host-network-defaults-host-port",
        "sidecar-init-container-counts-regular-one-does-not"])
def test_host_ports(build: Any, expected: tuple[HostPort, ...]) -> None:
    """``GetHostPorts`` (pkg/scheduler/util/utils.go) and ``HostPortInfo.sanitize``."""
    assert host_ports(build()) == expected


@pytest.mark.parametrize("wanted, used, conflict", [
    (HostPort("0.0.0.0", "TCP", 80), HostPort("0.0.0.0", "TCP", 80), True),
    (HostPort("0.0.0.0", "TCP", 80), HostPort("0.0.0.0", "UDP", 80), False),
    (HostPort("0.0.0.0", "TCP", 80), HostPort("127.0.0.1", "TCP", 80), True),
    (HostPort("127.0.0.1", "TCP", 80), HostPort("0.0.0.0", "TCP", 80), True),
    (HostPort("127.0.0.1", "TCP", 80), HostPort("127.0.0.2", "TCP", 80), False),
    (HostPort("127.0.0.1", "TCP", 80), HostPort("127.0.0.1", "TCP", 8080), False),
], ids=["same", "other-protocol", "wildcard-wanted", "wildcard-used", "two-specific-ips", "other-port"])
def test_host_port_conflicts(wanted: HostPort, used: HostPort, conflict: bool) -> None:
    """``HostPortInfo.CheckConflict`` (kube-scheduler framework/types.go) examples."""
    assert ports_conflict([wanted], [used]) is conflict
