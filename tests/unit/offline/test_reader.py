"""Snapshot files into raw documents (``scheduler.offline.reader``): the same documents as ``yaml.safe_load_all``
with either parser, JSON read as JSON, and the loader dispatching them."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.errors import SnapshotError
from scheduler.framework.plan import SolverConfig
from scheduler.model.lean_pod import LeanPod, lean_pod
from scheduler.model.pod import Pod
from scheduler.offline.loader import load
from scheduler.offline.reader import STDIN, documents
from scheduler.offline.report import to_json
from scheduler.offline.simulate import simulate

REPO = Path(__file__).resolve().parents[3]
SNAPSHOTS = sorted([*REPO.glob("scheduler/examples/*.yaml"), *REPO.glob("tests/data/**/*.yaml")])
LOADERS = [pytest.param(yaml.SafeLoader, id="pure-python"),
           pytest.param(getattr(yaml, "CSafeLoader", yaml.SafeLoader), id="libyaml")]

TRICKY = {
    "merge-keys": "base: &b {a: 1, b: 2}\nother: &o {b: 3, c: 4}\nx:\n  <<: [*b, *o]\n  a: 9\ny: {<<: *b, d: 1}\n"
                  "z:\n  b: 7\n  <<: *o\n  <<: *b\n",
    "yaml-1.1-scalars": "a: yes\nb: 1:30\nc: 2026-11-01T00:00:00Z\nd: 0x1f\ne: ~\nf: 1e3\ng: .inf\nh: 010\n"
                        "i: -1_000\nj: 'yes'\nk: \"1\"\nl: No\nm: 2026-11-01\nn: null\no: \"\"\np:\n",
    "explicit-tags": "- !!str 123\n- !!binary aGVsbG8=\n- !!int '7'\n- !!float 1\n- '<<'\n",
    "documents": "---\na: 1\n---\n---\n- x\n...\n--- plain\n",
    "anchors": "a: &x hello\nb: *x\nc: &y [1, {k: v}]\nd: *y\n",
    "keys": "1: one\ntrue: t\n? complex\n: key\nnull: n\n",
    "texts-seen-again": "- {name: no, note: null, type: nodes}\n- {name: 'no', note: !!str null, type: ! nodes}\n"
                        "- {name: no, note: nothing, type: 'true', nodes: ~}\n"
                        "- {name: name, null: nodes, 'null': true}\n",
    "flow-and-json-like": "{a: b, c: [1, 2], d: {e: f}}\n",
    "json-between-dashes": '{"kind": "Pod"}\n---\n{"kind": "Node"}\n',
    "empty": "",
    "comments-only": "# nothing\n",
}
ERRORS = {
    "duplicate-anchor": "a: &x 1\nb: &x 2\n",
    "undefined-alias": "a: *nope\n",
    "merge-not-a-mapping": "a: {<<: 1}\n",
    "merge-as-a-value": "a: <<\n",
    "value-tag": "a: =\n",
    "unknown-tag": "a: !foo bar\n",
    "mapping-key-in-mapping": "? {a: 1}\n: x\n",
    "syntax": "kind: Pod\n  bad: [unclosed\n",
}


def _safe(data: bytes, loader: type[yaml.SafeLoader]) -> list[Any]:
    return list(yaml.load_all(data, Loader=loader))


def _read(path: Path, loader: type[yaml.SafeLoader] | None = None) -> list[Any]:
    return [doc for _, doc in (documents(path, loader=loader) if loader else documents(path))]


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize("name", TRICKY)
def test_yaml_documents_are_what_safe_load_all_gives(tmp_path: Path, name: str, loader: type[yaml.SafeLoader]) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text(TRICKY[name])
    assert _read(path, loader) == _safe(path.read_bytes(), yaml.SafeLoader)


@pytest.mark.parametrize("loader", LOADERS)
def test_every_snapshot_in_the_repository_reads_as_safe_load_all_reads_it(loader: type[yaml.SafeLoader]) -> None:
    assert len(SNAPSHOTS) > 20
    for path in SNAPSHOTS:
        assert _read(path, loader) == _safe(path.read_bytes(), yaml.SafeLoader), path


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize("name", ERRORS)
def test_what_safe_load_all_refuses_is_refused_naming_the_file(tmp_path: Path, name: str,
                                                                loader: type[yaml.SafeLoader]) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text(ERRORS[name])
    with pytest.raises(yaml.YAMLError):
        _safe(path.read_bytes(), yaml.SafeLoader)
    with pytest.raises(SnapshotError, match=f"^{path}: not valid YAML: .*\n  in \"{path}\", line"):
        _read(path, loader)


@pytest.mark.parametrize("tag", ["!!set {a, b}", "!!omap [{a: 1}]", "!custom {a: 1}"])
def test_tagged_collections_are_refused(tmp_path: Path, tag: str) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text(f"x: {tag}\n")
    with pytest.raises(SnapshotError, match="is not supported in a snapshot"):
        _read(path)


def test_a_recursive_alias_and_deep_nesting_do_not_crash(tmp_path: Path) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text("&a [1, *a]\n")
    [doc] = _read(path)
    assert doc[1] is doc
    path.write_text("a: " + "[" * 900 + "]" * 900 + "\n")  # PyYAML's own constructor recurses too deep here
    [deep] = _read(path)
    assert isinstance(deep["a"], list)


OBJECTS = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"}} for i in range(3)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(json.dumps({"apiVersion": "v1", "kind": "List", "items": OBJECTS}, indent=4),
                     [{"apiVersion": "v1", "kind": "List", "items": OBJECTS}], id="kubectl-o-json-list"),
        pytest.param("\n".join(json.dumps(o) for o in OBJECTS) + "\n", OBJECTS, id="ndjson"),
        pytest.param("".join(json.dumps(o, indent=2) for o in OBJECTS), OBJECTS, id="concatenated"),
        pytest.param("\ufeff" + json.dumps(OBJECTS[0]), OBJECTS[:1], id="byte-order-mark"),
        pytest.param("  [1, 2]", [[1, 2]], id="top-level-array"),
        pytest.param("{kind: Node, metadata: {name: n1}}", [{"kind": "Node", "metadata": {"name": "n1"}}],
                     id="yaml-flow-mapping-is-yaml"),
        pytest.param('{"kind": "Node"}\n---\n{"kind": "Pod"}\n', [{"kind": "Node"}, {"kind": "Pod"}],
                     id="json-documents-between-yaml-separators"),
    ],
)
def test_json_is_read_as_json(tmp_path: Path, text: str, expected: list[Any]) -> None:
    path = tmp_path / "snap.json"
    path.write_bytes(text.encode())
    assert _read(path) == expected


CUT = '{\n  "kind": "List",\n  "items": [\n    {"kind": "Node"}\n'


@pytest.mark.parametrize(
    ("text", "position"),
    [
        pytest.param(CUT, "line 5, column 1: Expecting ',' delimiter", id="truncated-list"),
        pytest.param(CUT[:-6], "line 4, column 14: Unterminated string starting at", id="cut-inside-a-string"),
        pytest.param('{"kind": "Node"}\n}\n', "line 2, column 1: Expecting value", id="trailing-garbage"),
        pytest.param('{"a": 1} {"b": ', "line 1, column 16: Expecting value", id="second-document-cut-off"),
        pytest.param("\ufeff[1, 2", "line 1, column 6: Expecting ',' delimiter", id="after-a-byte-order-mark"),
    ],
)
def test_a_file_that_starts_like_json_and_is_not_is_reported_with_the_json_position(
        tmp_path: Path, text: str, position: str) -> None:
    """Not "not valid YAML": the JSON decoder's line and column (counted from the first character after a byte-order
    mark), for a file and for standard input alike."""
    path = tmp_path / "dump.json"
    path.write_bytes(text.encode())
    with pytest.raises(SnapshotError) as file_error:
        _read(path)
    assert str(file_error.value).startswith(f"{path}: not valid JSON: {position}")
    with pytest.raises(SnapshotError) as stdin_error:
        list(documents(Path(STDIN), io.BytesIO(text.encode())))
    assert str(stdin_error.value).startswith(f"<stdin>: not valid JSON: {position}")


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_a_list_on_stdin_loads_its_items(fmt: str) -> None:
    dump = {"apiVersion": "v1", "kind": "List", "items": OBJECTS}
    text = yaml.safe_dump(dump) if fmt == "yaml" else json.dumps(dump)
    objects = load(["-"], stdin=io.BytesIO(text.encode()))
    assert [n.metadata.name for n in objects.nodes] == ["n0", "n1", "n2"]
    assert objects.problems == []


def test_a_redefinition_is_compared_as_read(tmp_path: Path) -> None:
    """The raw objects are not kept: a second definition is compared through its model (fields not read are not)."""
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0", "labels": {"a": "1"}}}
    same_but_unread = {**node, "spec": {"podCIDR": "10.0.0.0/24"}}
    other = {**node, "metadata": {"name": "n0", "labels": {"a": "2"}}}
    broken = {**node, "status": {"allocatable": {"cpu": "lots"}}}
    path = tmp_path / "snap.yaml"
    path.write_text(yaml.safe_dump_all([node, same_but_unread, other, broken]))
    objects = load([path])
    assert [n.metadata.labels for n in objects.nodes] == [{"a": "1"}]
    assert [str(p) for p in objects.problems] == [
        f"{path}: Node n0: defined again with different content; the first is kept"] * 2


def test_added_objects_without_a_creation_time_are_stamped(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    stamped = {**OBJECTS[1], "metadata": {"name": "n1", "creationTimestamp": "2020-01-01T00:00:00Z"}}
    dry_run = {**OBJECTS[2], "metadata": {"name": "n2", "creationTimestamp": None}}  # kubectl --dry-run -o yaml
    path.write_text(yaml.safe_dump_all([OBJECTS[0], stamped, dry_run]))
    objects = load([path], created="2026-12-01T15:00:00Z")
    assert [n.metadata.creation_timestamp.year for n in objects.nodes if n.metadata.creation_timestamp] == [
        2026, 2020, 2026]


def _json_list(docs: list[Any]) -> str:
    """``docs`` as ``kubectl get -o json`` writes them: one ``List``, each item's ``apiVersion`` and ``kind`` first."""
    items = [{**{k: d[k] for k in ("apiVersion", "kind") if k in d}, **d} if isinstance(d, dict) else d for d in docs]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, default=str, indent=2)


def _pod(name: str, node: str | None, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ml", "uid": f"uid-{name}"}
    container = {"name": "c", "resources": {"requests": {"cpu": "1"}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [container], **({"nodeName": node} if node else {}), **spec}}


def _loaded(objects: Any) -> dict[str, Any]:
    """What a load gave, comparable across the YAML and the JSON paths (pods in the shape the cache keeps)."""
    return {"pods": [lean_pod(p) if isinstance(p, Pod) and p.is_bound else p for p in objects.pods],
            "nodes": [n.model_dump() for n in objects.nodes], "podgroups": [g.model_dump() for g in objects.podgroups],
            "problems": [str(p) for p in objects.problems], "warnings": [str(w) for w in objects.warnings],
            "unknown": [(str(p), path) for p, path in objects.unknown], "skipped": dict(objects.skipped)}


EDGES = [
    _pod("bound", "n0"),
    _pod("pending", None),
    {**_pod("typo", "n0"), "spec": {**_pod("typo", "n0")["spec"], "resoures": {}}},  # told, on a node too
    {**_pod("snake", None), "spec": {**_pod("snake", None)["spec"], "node_name": "n0"}},  # told, and not on n0
    _pod("bad-quantity", "n0", overhead={"cpu": "lots"}),
    {**_pod("no-namespace", "n0"), "metadata": {"name": "no-namespace", "uid": "u"}},
    {**_pod("no-uid", "n0"), "metadata": {"name": "no-uid", "namespace": "ml"}},
    _pod("bound", "n0"),  # the same again: a no-op
    _pod("bound", "n1"),  # different: a problem, the first kept
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0", "uid": "n0"},
     "status": {"allocatable": {"cpu": "8", "pods": "110"}}},
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "x"}}},
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0", "uid": "n0"}, "spec": {"unschedulable": True}},
    {"kind": "Pod", "metadata": {"name": "no-api-version"}},
    {"metadata": {"name": "m"}, "apiVersion": "v1", "kind": "Node"},  # apiVersion not first: read the plain way
    {"apiVersion": "v1", "kind": "Pods", "metadata": {"name": "typo-kind"}},
    {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "g", "namespace": "ml"},
     "spec": {"schedulingPolicy": {"gang": {"minCont": 2}}}},
    "not an object",
]


def test_a_json_list_loads_as_the_same_objects_in_yaml_do(tmp_path: Path) -> None:
    """The items of a JSON ``List`` decoded straight from their bytes (a pod on a node into its compact shape) give
    what the plain path gives: the same objects, problems, unknown-field warnings and redefinitions."""
    path = tmp_path / "snap"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": EDGES}))
    plain = load([path])
    path.write_text(_json_list(EDGES))
    listed = load([path])
    assert _loaded(listed) == _loaded(plain)
    assert sum(isinstance(p, LeanPod) for p in listed.pods) == 1  # the rest needed add(): a default, a finding …
    assert any("resoures" in str(p) for p, _ in listed.unknown)
    assert [(p.kind, p.name) for p in listed.problems] == [
        ("Pod", "bad-quantity"), ("Pod", "bound"), ("Node", "n1"), ("Node", "n0"), ("Pod", "no-api-version"), ("", "")]


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_a_snake_case_key_is_an_unknown_field_ignored_on_both_paths(tmp_path: Path, fmt: str) -> None:
    """``spec.node_name`` is not ``spec.nodeName``: the API server drops (or refuses) it, the warning says it is
    ignored, and it is — the pod is pending, whichever path read it."""
    docs = [{**_pod("snake", None), "spec": {**_pod("snake", None)["spec"], "node_name": "n0"}},
            {**_pod("group", None),
             "spec": {**_pod("group", None)["spec"], "scheduling_group": {"pod_group_name": "g"}}}]
    path = tmp_path / "snap"
    path.write_text(_json_list(docs) if fmt == "json" else yaml.safe_dump_all(docs))
    objects = load([path])
    assert [(p.metadata.name, p.spec.node_name, p.group_name) for p in objects.pods] == [
        ("snake", "", None), ("group", "", None)]
    assert sorted(path_ for _, path_ in objects.unknown) == ["spec.node_name", "spec.scheduling_group"]


@pytest.mark.parametrize("snapshot", SNAPSHOTS, ids=[p.name for p in SNAPSHOTS])
def test_every_snapshot_as_a_json_list_simulates_as_its_yaml(tmp_path: Path, snapshot: Path) -> None:
    """``simulate``'s report of each snapshot of the repository is the same read from ``kubectl get -o json``."""
    docs = [d for d in yaml.safe_load_all(snapshot.read_text()) if d is not None]
    items = [i for d in docs for i in (d.get("items") or [] if str(d.get("kind", "")).endswith("List") else [d])]
    path = tmp_path / "snap"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    try:
        plain = to_json(simulate(load([path]), "gang-scheduler", SolverConfig()))
    except SnapshotError:
        return  # nothing to schedule in it (DeviceClasses alone)
    path.write_text(_json_list(items))
    assert to_json(simulate(load([path]), "gang-scheduler", SolverConfig())) == plain


def test_times_without_a_zone_and_a_condition_type_that_is_no_string_make_invalid_objects(tmp_path: Path) -> None:
    """A ``metav1.Time`` needs a zone (the API server refuses one without); a bare YAML date is a time without
    one. Such pods, and a v1alpha2 PodGroup whose condition type is a list, are listed as invalid; the rest is
    scheduled (before, the queue compared a time without a zone with one that had it, and raised)."""
    path = tmp_path / "snap.yaml"
    pod = ("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, creationTimestamp: {time}}}\n"
           "spec: {{schedulerName: gang-scheduler, containers: [{{name: c, image: x}}]}}\n")
    path.write_text("---\n".join([
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '4', pods: '110'}}\n",
        pod.format(name="zoned", time="'2026-01-01T00:00:00Z'"),
        pod.format(name="local", time="'2026-01-01T00:00:00'"),
        pod.format(name="dated", time="2026-01-01"),
        "apiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\nmetadata: {name: g}\n"
        "spec: {schedulingPolicy: {gang: {minCount: 1}}}\nstatus: {conditions: [{type: []}]}\n"]))
    objects = load([path])
    assert sorted(str(p).split(": ", 1)[1] for p in objects.problems) == [
        "Pod default/dated: metadata.creationTimestamp: must have timezone info",
        'Pod default/local: metadata.creationTimestamp: must have timezone info (got "2026-01-01T00:00:00")',
        "PodGroup default/g: status.conditions[0].type: must be a valid string"]
    sim = simulate(objects, "gang-scheduler", SolverConfig())
    assert [(p.pod.key, p.node) for p in sim.pods] == [("default/zoned", "n1")]


def test_json_nested_deeper_than_python_reads_is_a_snapshot_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 5000 + "]" * 5000)
    with pytest.raises(SnapshotError, match=f"^{path}: JSON nested too deeply to read"):
        load([path])


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_a_snake_case_key_inside_a_bound_pods_volume_is_read_alike_on_both_paths(tmp_path: Path, fmt: str) -> None:
    """``persistentVolumeClaim.claim_name`` lies where the unknown-field check does not look, so a JSON list's pod on
    a node goes to the bytes' decoder: it refuses the claim without ``claimName`` as ``add`` does, not take the pod."""
    docs = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0", "uid": "uid-n0"}},
            {**_pod("pvc", "n0"), "spec": {**_pod("pvc", "n0")["spec"], "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claim_name": "data"}}]}}]
    path = tmp_path / "snap"
    path.write_text(_json_list(docs) if fmt == "json" else yaml.safe_dump_all(docs))
    objects = load([path])
    assert objects.pods == []
    assert [(p.kind, p.name) for p in objects.problems] == [("Pod", "pvc")]
