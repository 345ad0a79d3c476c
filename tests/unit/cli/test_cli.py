"""The command line: exit codes, bad input naming file and object, partly bad files, text report."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from click.testing import CliRunner

from scheduler.cli import main

NODE = """
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
"""
GOOD_POD = """
apiVersion: v1
kind: Pod
metadata: {name: ok, namespace: default}
spec:
  schedulerName: gang-scheduler
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
"""
BAD_POD = """
apiVersion: v1
kind: Pod
metadata: {name: broken, namespace: default}
spec:
  schedulerName: gang-scheduler
  containers: [{name: c, resources: {requests: {cpu: "lots"}}}]
"""


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def write(tmp_path: Path, text: str, name: str = "snap.yaml") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_unreadable_file_exits_2_naming_it(tmp_path: Path) -> None:
    code, _, err = invoke("simulate", str(tmp_path / "missing.yaml"))
    assert code == 2
    assert f"{tmp_path / 'missing.yaml'}: cannot read" in err


def test_invalid_yaml_exits_2_naming_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "kind: Pod\n  bad: [unclosed\n")
    code, _, err = invoke("simulate", path)
    assert code == 2
    assert err.startswith(f"error: {path}: not valid YAML")


def test_file_with_nothing_we_read_exits_2(tmp_path: Path) -> None:
    path = write(tmp_path, "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\n")
    code, _, err = invoke("simulate", path)
    assert code == 2
    assert "no Node, Pod, PodGroup or CompositePodGroup found" in err


def test_partly_bad_file_schedules_the_rest_and_reports_the_bad_object(tmp_path: Path) -> None:
    path = write(tmp_path, NODE + "---" + GOOD_POD + "---" + BAD_POD)
    code, out, _ = invoke("simulate", "-o", "json", path)
    assert code == 0
    doc = json.loads(out)
    assert doc["pods"] == [{"namespace": "default", "name": "ok", "node": "n1", "reason": None}]
    (bad,) = doc["invalid"]
    assert (bad["file"], bad["kind"], bad["namespace"], bad["name"]) == (path, "Pod", "default", "broken")
    assert "invalid quantity 'lots'" in bad["reason"]


def test_kind_list_files_are_read(tmp_path: Path) -> None:
    text = "apiVersion: v1\nkind: List\nitems:\n"
    for doc in (NODE, GOOD_POD):
        text += "- " + textwrap.indent(textwrap.dedent(doc).strip(), "  ").lstrip() + "\n"
    code, out, _ = invoke("simulate", "-o", "json", write(tmp_path, text))
    assert code == 0
    assert json.loads(out)["pods"][0]["node"] == "n1"


def test_nothing_fits_is_not_an_error(tmp_path: Path) -> None:
    big = GOOD_POD.replace('cpu: "1"', 'cpu: "64"')
    code, out, _ = invoke("simulate", "-o", "json", write(tmp_path, NODE + "---" + big))
    assert code == 0
    (pod,) = json.loads(out)["pods"]
    assert pod["node"] is None
    assert pod["reason"] == "0/1 nodes are available: 1 Insufficient cpu."


def test_text_report_on_builtin_example_names_groups_and_nodes() -> None:
    code, out, _ = invoke("simulate")
    assert code == 0
    assert "[OK  ] PodGroup ml-team/llm-pretrain-6f7c9-workers-2rl42" in out
    assert "[FAIL] PodGroup ml-team/eval-16x4" in out
    assert "ml-team/notebook-prep -> cpu-m5-1" in out
    assert "Node utilisation" in out and "gpu-b2-2" in out
