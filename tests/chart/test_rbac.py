"""The chart's RBAC grants exactly what the scheduler's code uses: every verb it needs, no other.

Every API request of the scheduler goes through ``scheduler.client.kube.KubeClient`` (the one HTTP
seam, docs/architecture.md). This test finds every call of a ``KubeClient`` method in
``scheduler/`` by parsing the source (``<x>.kube.<method>(...)`` or ``kube.<method>(...)``), turns
each into the (API group, resource, verb) it needs, and compares the union with the rules of
the rendered ClusterRole (cluster-wide: informers, binding, status, events) and Role (the
leader Lease in its namespace).

How a call becomes a permission:

- the method gives the verb (:data:`VERBS`): ``list``, ``watch``, ``get``, ``create``,
  ``replace`` → ``update``, ``patch``; ``bind`` is ``create`` on ``pods/binding``; ``served`` is
  API discovery (a non-resource GET that the default ``system:discovery`` role allows everyone);
- the first argument gives the resource: a constant of ``scheduler/client/kube.py`` (``PODS``,
  ``LEASES``…) is read from the code; a variable is resolved by :data:`DYNAMIC`, a table that
  cites where its values come from — and, for the informers, is itself checked against the code;
- ``sub="status"`` makes it the ``…/status`` subresource.

A new call, a new method or a new variable makes this test fail until the table (and the chart)
follow, so the RBAC cannot silently fall behind the code.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from scheduler.client import kube as kube_module
from scheduler.client import podgroup_api
from scheduler.client.kube import Resource
from scheduler.model import kinds
from scheduler.operator import apis as apis_module
from tests.chart.helmchart import ROOT, objects, render

SCHEDULER = ROOT / "scheduler"
OPERATOR = SCHEDULER / "operator"

VERBS: dict[str, str | None] = {
    "list": "list",
    "list_pages": "list",  # GET with limit/continue (kube.py KubeClient.list_pages)
    "watch": "watch",
    "get": "get",
    "create": "create",
    "replace": "update",  # PUT
    "patch": "patch",
    "delete": "delete",  # binding/claims.py (a claim rolled back); preemptor.py Preemptor._evict (victims)
    "bind": "create",  # POST pods/{name}/binding (kube.py KubeClient.bind)
    "served": None,  # GET /apis/<group>/<version>: discovery, allowed by system:discovery
}
NOT_API_CALLS = {"close", "fenced"}  # KubeClient methods that send no request

WATCHED: tuple[Resource, ...] = (
    *(Resource.of(kind) for kind in kinds.KINDS if kind.live is not None and kind is not kinds.POD_GROUP),
    *(api.resource for api in podgroup_api.PREFERENCE))
"""The resources ``run`` watches: the rows of ``scheduler/model/kinds.py`` watched live, PodGroups in each version
``podgroup_api`` speaks (discovery.py ``watched_resources`` returns these: tests/unit/model/test_kinds.py)."""

DYNAMIC: dict[tuple[str, str, str], tuple[str | Resource, ...]] = {
    # (file, function, argument as written) -> the kube.py constants (or resources) it can hold, and why
    # informers.py Informer.run lists and watches `self.resource`: one Informer per resource
    # that discovery.py watched_resources returns (WATCHED).
    ("live/informers.py", "Informer.run", "self.resource"): WATCHED,
    # discovery.py list_objects (simulate --from-cluster) lists each resource of watched_resources once.
    ("client/discovery.py", "list_objects", "res"): WATCHED,
    # status_writer.py StatusWriter._set_group_condition / _patch_group: `res` is COMPOSITES for a
    # CompositePodGroup, else the resource of the PodGroup's API (podgroup_api.of: PODGROUPS or PODGROUPS_V1ALPHA2).
    ("live/status_writer.py", "StatusWriter._set_group_condition", "res"): ("PODGROUPS", "PODGROUPS_V1ALPHA2",
                                                                           "COMPOSITES"),
    ("live/status_writer.py", "StatusWriter._patch_group", "res"): ("PODGROUPS", "PODGROUPS_V1ALPHA2", "COMPOSITES"),
    # api_writer.py KubeWriter: the binding cycle's writer (scheduler/binding/). `self.resource(kind)` is the
    # resource of the row the plugin names: reads of claims (DynamicResources: a re-read after a 409), pods
    # (DefaultBinder: a 409 decided by the pod), PVCs and PVs (VolumeBinding); a scheduler-made claim created and
    # deleted on rollback; patches of PVC annotations / PV claimRefs; status patches of claims (allocation,
    # reservedFor) and of pods (extendedResourceClaimStatus).
    ("live/api_writer.py", "KubeWriter.get", "self.resource(kind)"): (
        "RESOURCE_CLAIMS", "PODS", "PERSISTENT_VOLUME_CLAIMS", "PERSISTENT_VOLUMES"),
    ("live/api_writer.py", "KubeWriter.create", "self.resource(kind)"): ("RESOURCE_CLAIMS",),
    ("live/api_writer.py", "KubeWriter.delete", "self.resource(kind)"): ("RESOURCE_CLAIMS",),
    ("live/api_writer.py", "KubeWriter._patch", "self.resource(kind)"): (
        "PERSISTENT_VOLUME_CLAIMS", "PERSISTENT_VOLUMES"),
    ("live/api_writer.py", "KubeWriter._patch_status", "self.resource(kind)"): ("RESOURCE_CLAIMS", "PODS"),
    # operator/handlers.py Reconciler: `res` is groups.resource_of(spec, served) (COMPOSITES for a
    # CompositePodGroup, else Served.podgroups: PODGROUPS, PODGROUPS_V1ALPHA2 or COSCHEDULING_PODGROUPS), or the
    # resource Reconciler.owned listed an object from; _recreate runs for v1alpha2 only.
    **{("operator/handlers.py", f"Reconciler.{fn}", "res"): ("PODGROUPS", "PODGROUPS_V1ALPHA2", "COMPOSITES",
                                                             "COSCHEDULING_PODGROUPS")
       for fn in ("owned", "reconcile", "_ensure", "_recreate")},
}

LEASE_GROUP = "coordination.k8s.io"

IMPLIED: dict[tuple[str, str, str], set[tuple[str, str, str]]] = {
    # Writing status.allocation / status.reservedFor of a ResourceClaim also needs update/patch on the
    # synthetic resourceclaims/binding subresource (authorization only; no request goes to it) since
    # v1.36, gate DRAResourceClaimGranularStatusAuthorization (kubernetes/kubernetes#134947).
    ("resource.k8s.io", "resourceclaims/status", "patch"): {("resource.k8s.io", "resourceclaims/binding", "patch"),
                                                           ("resource.k8s.io", "resourceclaims/binding", "update")},
}


@dataclass(frozen=True)
class Call:
    file: str
    function: str
    method: str
    resource: str  # the first argument as written ("" when none)
    sub: str | None
    line: int


def kube_calls(root: Path = SCHEDULER) -> list[Call]:
    """Every ``….kube.<method>(…)`` / ``kube.<method>(…)`` call under ``root``, except kube.py itself;
    under scheduler/ the operator's package (another process, its own ClusterRole) is left out."""
    calls: list[Call] = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "kube.py" and path.parent == SCHEDULER / "client":
            continue
        if root == SCHEDULER and OPERATOR in path.parents:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for function, node in _calls_with_scope(tree):
            func = node.func
            if not isinstance(func, ast.Attribute) or not _is_kube(func.value):
                continue
            sub = next((kw.value.value for kw in node.keywords
                        if kw.arg == "sub" and isinstance(kw.value, ast.Constant)), None)
            first = ast.unparse(node.args[0]) if node.args else ""
            calls.append(Call(str(path.relative_to(SCHEDULER)), function, func.attr, first, sub, node.lineno))
    return calls


def _is_kube(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id == "kube"
    return isinstance(node, ast.Attribute) and node.attr == "kube"


def _calls_with_scope(tree: ast.Module) -> Iterator[tuple[str, ast.Call]]:
    def walk(node: ast.AST, scope: list[str]) -> Iterator[tuple[str, ast.Call]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                yield from walk(child, [*scope, child.name])
            else:
                if isinstance(child, ast.Call):
                    yield ".".join(scope), child
                yield from walk(child, scope)

    yield from walk(tree, [])


def constant(name: str | Resource) -> Resource:
    if isinstance(name, Resource):
        return name
    res = getattr(kube_module, name, None) or getattr(apis_module, name, None)
    assert isinstance(res, Resource), f"{name} is not a Resource constant of scheduler/client/kube.py"
    return res


def needed(root: Path = SCHEDULER) -> tuple[set[tuple[str, str, str]], list[Call]]:
    """The (group, resource, verb) triples the code under ``root`` needs, and the calls that need none (discovery)."""
    triples: set[tuple[str, str, str]] = set()
    discovery: list[Call] = []
    for call in kube_calls(root):
        where = f"scheduler/{call.file}:{call.line} {call.function}: kube.{call.method}({call.resource}…)"
        if call.method in NOT_API_CALLS:
            continue
        assert call.method in VERBS, f"{where}: unknown KubeClient method; add it to VERBS"
        verb = VERBS[call.method]
        if verb is None:
            discovery.append(call)
            continue
        if call.method == "bind":
            triples.add(("", "pods/binding", "create"))
            continue
        key = (call.file, call.function, call.resource)
        names = DYNAMIC.get(key) or ((call.resource,) if call.resource.isupper() else None)
        assert names, f"{where}: resource is a variable; add {key} to DYNAMIC with the constants it can hold"
        for name in names:
            res = constant(name)
            triples.add((res.group, res.plural + (f"/{call.sub}" if call.sub else ""), verb))
    for triple in list(triples):
        triples |= IMPLIED.get(triple, set())
    return triples, discovery


def granted(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {(group, resource, verb) for rule in rules for group in rule.get("apiGroups", [])
            for resource in rule.get("resources", []) for verb in rule.get("verbs", [])}


def rbac(values: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """The scheduler's ClusterRole and Role (not the operator's, ``operator.enabled``)."""
    return {o["kind"]: o for o in objects(render(values)) if o["kind"] in ("ClusterRole", "Role")
            and o["metadata"]["labels"]["app.kubernetes.io/component"] == "scheduler"}


def test_every_kube_call_is_understood() -> None:
    """The scan sees the calls we know of (a scan that finds nothing would prove nothing)."""
    methods = {(c.file, c.method) for c in kube_calls()}
    assert {("live/informers.py", "list_pages"), ("live/informers.py", "watch"), ("live/api_writer.py", "bind"),
            ("live/api_writer.py", "get"),
            ("live/status_writer.py", "patch"), ("live/event_recorder.py", "create"), ("live/leader.py", "replace"),
            ("live/leader.py", "create"),
            ("client/discovery.py", "served"), ("client/discovery.py", "list_pages")} <= methods
    triples, discovery = needed()
    assert triples
    assert {c.file for c in discovery} == {"client/discovery.py", "client/podgroup_api.py"}


def test_cluster_role_grants_exactly_the_verbs_the_code_uses() -> None:
    triples, _ = needed()
    cluster_wide = {t for t in triples if t[0] != LEASE_GROUP}
    role = rbac()["ClusterRole"]
    assert granted(role["rules"]) == cluster_wide
    for rule in role["rules"]:
        assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"]
        assert "resourceNames" not in rule and "nonResourceURLs" not in rule


@pytest.mark.parametrize("values, namespace, lease", [
    ({}, "gang-scheduler", "gang-scheduler"),
    ({"config": {"leaseNamespace": "kube-system", "leaseName": "team-a-gangs"}}, "kube-system", "team-a-gangs"),
], ids=["lease-in-release-namespace", "lease-elsewhere"])
def test_role_grants_the_lease_verbs_the_code_uses_on_the_lease_only(values: dict[str, Any], namespace: str,
                                                                     lease: str) -> None:
    triples, _ = needed()
    on_leases = {t for t in triples if t[0] == LEASE_GROUP}
    assert on_leases == {(LEASE_GROUP, "leases", v) for v in ("get", "create", "update")}
    role = rbac(values)["Role"]
    assert role["metadata"]["namespace"] == namespace
    assert granted(role["rules"]) == on_leases
    by_verbs = {tuple(r["verbs"]): r.get("resourceNames") for r in role["rules"]}
    # get/update only on the one Lease; create cannot be limited by name (RBAC ignores resourceNames for create)
    assert by_verbs == {("get", "update"): [lease], ("create",): None}


def test_no_rbac_objects_when_rbac_create_is_false() -> None:
    kinds = {o["kind"] for o in objects(render({"rbac": {"create": False}}))}
    assert not kinds & {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}


def test_no_lease_role_without_leader_election() -> None:
    kinds = {o["kind"] for o in objects(render({"config": {"leaderElect": False}, "replicaCount": 1}))}
    assert "ClusterRole" in kinds and not kinds & {"Role", "RoleBinding"}


def test_bindings_name_the_roles_and_the_service_account() -> None:
    objs = objects(render())
    sa = next(o for o in objs if o["kind"] == "ServiceAccount")["metadata"]
    for kind, role_kind in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        binding = next(o for o in objs if o["kind"] == kind)
        role = next(o for o in objs if o["kind"] == role_kind)
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind,
                                      "name": role["metadata"]["name"]}
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": sa["name"], "namespace": sa["namespace"]}]
        if kind == "RoleBinding":
            assert binding["metadata"]["namespace"] == role["metadata"]["namespace"]
    deployment = next(o for o in objs if o["kind"] == "Deployment")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == sa["name"]

