"""The command line: exit codes, bad input naming file and object, partly bad files, text report."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from scheduler.cli import main
from scheduler.offline.loader import NOTHING_FOUND

# libyaml's wording (simulate parses with it when PyYAML has it), else PyYAML's own.
MAPPING_VALUES = "in this context" if yaml.__with_libyaml__ else "here"
CONTROL_CHARACTER = "control" if yaml.__with_libyaml__ else "special"

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


def test_a_workload_without_a_creation_time_queues_after_a_dumps_older_gang(tmp_path: Path) -> None:
    """Stamped with the time of the run, as the API server stamps what it creates: the dump's older gang of the same
    priority goes first and takes the room (by name alone, the hand-written ``a-new`` would)."""
    def gang(name: str, stamp: str) -> str:
        return "".join(f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}-{i}, namespace: ml{stamp}}}
spec:
  schedulerName: gang-scheduler
  schedulingGroup: {{podGroupName: {name}}}
  containers: [{{name: c, resources: {{requests: {{cpu: "1"}}}}}}]""" for i in range(3)) + f"""
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {{name: {name}, namespace: ml{stamp}}}
spec: {{schedulingPolicy: {{gang: {{minCount: 3}}}}}}
"""
    old = ", creationTimestamp: '2026-01-01T00:00:00Z'"
    dump = write(tmp_path, """
apiVersion: v1
kind: Node
metadata: {name: n1, creationTimestamp: '2026-01-01T00:00:00Z'}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
""" + gang("z-old", old), "dump.yaml")
    added = write(tmp_path, gang("a-new", ""), "added.yaml")
    code, out, _ = invoke("simulate", "-o", "json", dump, added)
    assert code == 0
    status = {g["name"]: g["status"] for g in json.loads(out)["groups"]}
    assert status == {"z-old": "Scheduled", "a-new": "Unschedulable"}


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
    path = write(tmp_path, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: j}\n")
    code, _, err = invoke("simulate", path)
    assert code == 2
    assert ("no Node, Pod, PodGroup, CompositePodGroup, Job, JobSet, PyTorchJob or LeaderWorkerSet found"
            in err)


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
    assert pod["reason"] == ("0/1 nodes are available: 1 Insufficient cpu. preemption: Preemption is not helpful for "
                             "scheduling (no node the pods may use has the allocatable to hold one of them)")


def test_text_report_on_builtin_example_names_groups_and_nodes() -> None:
    code, out, _ = invoke("simulate")
    assert code == 0
    assert "[OK  ] PodGroup ml-team/llm-pretrain-6f7c9-workers-2rl42" in out
    assert "[FAIL] PodGroup ml-team/eval-16x4" in out
    assert "ml-team/notebook-prep -> cpu-m5-1" in out
    assert "Node utilisation" in out and "gpu-b2-2" in out


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(b"apiVersion: v1\nkind: Node\n# caf\xe9\nmetadata: {name: n1}\n",
                     "{path}: not UTF-8 text: byte 0xe9 at line 3 (offset 31)", id="latin-1-comment"),
        pytest.param(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "{path}: not UTF-8 text: byte 0x89 at line 1 (offset 0)",
                     id="binary-file"),
        pytest.param(b"kind: Pod\n  bad: [unclosed\n", f'{{path}}: not valid YAML: mapping values are not allowed '
                     f'{MAPPING_VALUES}\n  in "{{path}}", line 2, column 6', id="yaml-error-names-the-file"),
        pytest.param(b"kind: Pod\x00\n", f'not valid YAML: unacceptable character #x0000: {CONTROL_CHARACTER} '
                     'characters are not allowed\n  in "{path}", position 9', id="control-character-names-the-file"),
        pytest.param(b"hello\n", "{path}: " + NOTHING_FOUND + "; 1 invalid:\n"
                     "  {path}: document 1 is a string ('hello'), not an object", id="top-level-scalar"),
        pytest.param(b"- a\n- b\n", "{path}: document 1 is a sequence, not an object", id="top-level-sequence"),
        pytest.param(BAD_POD.encode(), "{path}: " + NOTHING_FOUND + "; 1 invalid:\n"
                     "  {path}: Pod default/broken: ", id="every-object-invalid"),
    ],
)
def test_bad_snapshot_exits_2_with_an_error_naming_the_file(tmp_path: Path, content: bytes, expected: str) -> None:
    path = tmp_path / "snap.yaml"
    path.write_bytes(content)
    code, out, err = invoke("simulate", str(path))
    assert code == 2
    assert out == ""
    assert err.startswith("error: ")
    assert expected.format(path=path) in err
    assert "<unicode string>" not in err and "Traceback" not in err


def test_exit_2_rule_applies_to_the_whole_set_of_files(tmp_path: Path) -> None:
    """One usable file beside one with nothing usable, an empty one and an empty list: rc 0, the bad document is
    listed by position and the empty file as empty (a file given by mistake is not passed over in silence); an empty
    list, as kubectl prints a kind with no object, is no problem."""
    good, bad = write(tmp_path, NODE + "---" + GOOD_POD, "good.yaml"), write(tmp_path, "42\n", "bad.yaml")
    empty = write(tmp_path, "", "empty.yaml")
    none = write(tmp_path, "apiVersion: v1\nkind: List\nitems: []\n", "none.yaml")
    code, out, _ = invoke("simulate", "-o", "json", good, bad, empty, none)
    assert code == 0
    doc = json.loads(out)
    assert doc["pods"][0]["node"] == "n1"
    assert doc["invalid"] == [{"file": bad, "kind": "", "namespace": "", "name": "",
                               "reason": "document 1 is a number ('42'), not an object"},
                              {"file": empty, "kind": "", "namespace": "", "name": "", "reason": "is empty"}]


def test_list_item_that_is_not_an_object_is_named_by_position(tmp_path: Path) -> None:
    text = "apiVersion: v1\nkind: List\nitems:\n- " + textwrap.indent(textwrap.dedent(NODE).strip(), "  ").lstrip()
    code, out, _ = invoke("simulate", "-o", "json", write(tmp_path, text + "\n- oops\n"))
    assert code == 0
    (bad,) = json.loads(out)["invalid"]
    assert bad["reason"] == "document 1, items[1] is a string ('oops'), not an object"


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        pytest.param("GANG_SCHEDULER_SCORING", "bogus",
                     "error: GANG_SCHEDULER_SCORING 'bogus': must be 'pack' or 'spread'\n", id="scoring"),
        pytest.param("GANG_SCHEDULER_SEARCH_BUDGET", "abc",
                     "error: GANG_SCHEDULER_SEARCH_BUDGET 'abc': must be a valid integer, unable to parse "
                     "string as an integer\n", id="budget-not-a-number"),
        pytest.param("GANG_SCHEDULER_SEARCH_BUDGET", "0",
                     "error: GANG_SCHEDULER_SEARCH_BUDGET '0': must be greater than or equal to 1\n",
                     id="budget-below-one"),
        pytest.param("GANG_SCHEDULER_BACKOFF_INITIAL_S", "100",
                     "error: GANG_SCHEDULER_BACKOFF_MAX_S 60.0 (the default): must not be below the first backoff "
                     "(100 s)\n", id="a-default-simulate-has-no-flag-for-is-named-as-its-variable"),
    ],
)
def test_bad_environment_variable_exits_2_naming_it(variable: str, value: str, expected: str) -> None:
    result = CliRunner().invoke(main, ["simulate"], env={variable: value})
    assert result.exit_code == 2
    assert result.stderr == expected
    assert result.stdout == ""


BASIC_GROUP = """
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: bg, namespace: default}
spec: {schedulingPolicy: {basic: {}}}
"""
MEMBER = """
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  schedulerName: {scheduler}
  schedulingGroup: {{podGroupName: bg}}
  containers: [{{name: c, resources: {{requests: {{cpu: "2"}}}}}}]
"""
CLAIM_POD = GOOD_POD.replace("  containers:", "  resourceClaims: [{name: gpu, resourceClaimName: c1}]\n  containers:")
CLAIM = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c1, namespace: default}
"""

TEMPLATE = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: t1, namespace: default}
spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}}
"""
SLICE = """
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: n1-gpus}}
spec:
  driver: gpu.example.com
  nodeName: n1
  pool: {{name: n1, generation: 1, resourceSliceCount: {count}}}
  devices: [{{name: gpu-0}}]
"""
GPU_CLASS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec: {selectors: [{cel: {expression: "device.driver == 'gpu.example.com'"}}]}
"""


def members(n: int, scheduler: str = "gang-scheduler") -> str:
    return "---".join(MEMBER.format(name=f"m{i}", scheduler=scheduler) for i in range(n))


@pytest.mark.parametrize(
    ("snapshot", "args", "lines"),
    [
        pytest.param(NODE + "---" + BASIC_GROUP + "---" + members(3), [], [
            "Pods left pending (1):",
            "  PodGroup default/bg, 1 pod(s): m2",
            "    group bg: 2/3 placed; 0/1 nodes are available: 1 Insufficient cpu. pod group preemption: No "
            "preemption victims found for incoming pod.",
        ], id="basic-group-leftover-listed"),
        pytest.param(NODE + "---" + GOOD_POD.replace('cpu: "1"', 'cpu: "64"'), [], [
            "Pods left pending (1):", "  default/ok: 0/1 nodes are available: 1 Insufficient cpu. preemption: "
            "Preemption is not helpful for scheduling (no node the pods may use has the allocatable to hold one of "
            "them)",
        ], id="lone-pod-that-does-not-fit-listed-once"),
        pytest.param(NODE + "---" + members(2).replace("podGroupName: bg", "podGroupName: nope"), [], [
            "  PodGroup default/nope, 2 pod(s): m0, m1",
            "    waiting for PodGroup default/nope to appear",
        ], id="orphans-listed"),
        pytest.param(NODE + "---" + GOOD_POD + "---" + members(2, "default-scheduler") + "---"
                     + GOOD_POD.replace("name: ok", "name: running").replace("spec:", "spec:\n  nodeName: n1"),
                     ["--scheduler-name", "foo"], [
            'note: no pending pod has spec.schedulerName "foo" (pending pods by schedulerName: default-scheduler (2), '
            'gang-scheduler (1))',
        ], id="scheduler-name-hint"),
        pytest.param(NODE, [], ['note: no pending pod has spec.schedulerName "gang-scheduler" (no pod is pending)'],
                     id="scheduler-name-hint-without-pods"),
        pytest.param(BASIC_GROUP + "---" + members(2), [], [
            "note: the snapshot has no Node, so no pod can be placed: give the cluster's nodes too (kubectl get "
            "nodes -o json), or ask the cluster itself with --from-cluster --add FILE",
            "         Unschedulable: group bg: 0/2 placeable; 0/0 nodes are available.",
        ], id="workload-file-alone-told-to-add-nodes"),
        pytest.param(NODE + "---" + CLAIM_POD + "---" + CLAIM, [], ["Pods without a scheduling group:",
                                                                    "  default/ok -> n1"], id="dra-empty-claim"),
        pytest.param(NODE + "---" + CLAIM_POD, [], [
            "  default/ok: waiting for ResourceClaim default/c1 of claim 'gpu' to be created",
        ], id="dra-claim-missing"),
        pytest.param(NODE + "---" + CLAIM_POD.replace("c1}", "c1}, {name: x, resourceClaimTemplateName: t1}")
                     + "---" + CLAIM + "---" + TEMPLATE + "---" + SLICE.format(count=1) + "---" + GPU_CLASS, [], [
            "note: 1 ResourceClaim(s) not in the snapshot made from their ResourceClaimTemplate, as the "
            "resourceclaim controller would",
            "  default/ok -> n1: gpu-0 (gpu.example.com)",
        ], id="dra-synthesised-claim-and-devices-of-a-lone-pod"),
        pytest.param(NODE + "---" + CLAIM_POD + "---" + CLAIM + "---" + SLICE.format(count=2), [], [
            'warning: 1 DRA problem(s), listed under "DRA problems" (JSON: dra_problems)',
            "DRA problems (devices not used, selectors that failed):",
            "  pool gpu.example.com/n1: 1/2 slices of generation 1 seen; not used until complete",
        ], id="dra-incomplete-pool"),
        pytest.param(NODE + "---" + GOOD_POD + "---" + SLICE.format(count=1).replace("k8s.io/v1", "k8s.io/v1beta1"),
                     [], ["warning: 1 resource.k8s.io object(s) of resource.k8s.io/v1beta1 skipped "
                          "(only resource.k8s.io/v1 is read)"], id="dra-other-version-skipped"),
        pytest.param(NODE + "---" + GOOD_POD + "---"
                     + "\napiVersion: scheduling.sigs.k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: nginx}\n"
                     + "spec: {minMember: 3}\n", [],
                     ["warning: 1 scheduling.sigs.k8s.io/v1alpha1 PodGroup object(s) skipped (a PodGroup is read only "
                      "as scheduling.k8s.io/v1alpha2, scheduling.k8s.io/v1alpha3, scheduling.k8s.io/v1beta1, "
                      "scheduling.x-k8s.io/v1alpha1; it is not ours): default/nginx"],
                     id="older-scheduler-plugins-podgroup-skipped"),
    ],
)
def test_text_report_lines(tmp_path: Path, snapshot: str, args: list[str], lines: list[str]) -> None:
    code, out, _ = invoke("simulate", *args, write(tmp_path, snapshot))
    assert code == 0
    report = out.splitlines()
    for line in lines:
        assert line in report
    assert sum(line.startswith(("note:", "warning:")) for line in report) == sum(
        line.startswith(("note:", "warning:")) for line in lines)


def test_the_utilisation_table_marks_nodes_that_take_no_pods(tmp_path: Path) -> None:
    """A new user saw free room on a node the reasons did not count: the row now says why."""
    cordoned = NODE.replace("n1", "n2").replace("status:", "spec: {unschedulable: true}\nstatus:")
    not_ready = NODE.replace("n1", "n3").replace("pods: \"110\"}", "pods: \"110\"}, conditions: "
                                                 "[{type: Ready, status: Unknown}]")
    _, out, _ = invoke("simulate", write(tmp_path, NODE + "---" + cordoned + "---" + not_ready))
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith(("n1 ", "n2 ", "n3 "))}
    assert rows["n2"].endswith("  (cordoned)") and rows["n3"].endswith("  (Ready=Unknown)")
    assert not rows["n1"].endswith(")")


def test_every_pod_left_pending_appears_once_in_the_text_report(tmp_path: Path) -> None:
    path = write(tmp_path, NODE + "---" + BASIC_GROUP + "---" + members(3) + "---" +
                 GOOD_POD.replace('cpu: "1"', 'cpu: "64"'))
    _, out, _ = invoke("simulate", path)
    _, doc, _ = invoke("simulate", "-o", "json", path)
    pending = [f"{p['namespace']}/{p['name']}" for p in json.loads(doc)["pods"] if p["node"] is None]
    assert sorted(pending) == ["default/m2", "default/ok"]
    lines = out.splitlines()
    section = lines[lines.index("Pods left pending (2):") + 1:]
    section = section[:section.index("")] if "" in section else section
    listed = [line.removeprefix("  ").partition(": ")[0] for line in section if not line.startswith("    ")]
    assert sorted(listed) == ["PodGroup default/bg, 1 pod(s)", "default/ok"]  # the group's member by name, once
    assert "  PodGroup default/bg, 1 pod(s): m2" in section


# --- `simulate -`: the snapshot on standard input -----------------------------------


@pytest.mark.parametrize(
    ("args", "stdin", "pods", "invalid"),
    [
        pytest.param(["-"], NODE + "---" + GOOD_POD, [("ok", "n1")], [], id="dash-reads-stdin"),
        pytest.param(["-"], NODE + "---" + GOOD_POD + "---" + BAD_POD, [("ok", "n1")],
                     [("<stdin>", "broken")], id="stdin-problems-name-stdin"),
        pytest.param(["{file}", "-"], GOOD_POD, [("ok", "n1")], [], id="file-and-stdin-are-merged"),
    ],
)
def test_simulate_dash_reads_the_snapshot_from_stdin(tmp_path: Path, args: list[str], stdin: str,
                                                     pods: list[tuple[str, str]],
                                                     invalid: list[tuple[str, str]]) -> None:
    node_file = write(tmp_path, NODE, "node.yaml")
    result = CliRunner().invoke(main, ["simulate", "-o", "json", *(a.format(file=node_file) for a in args)],
                                input=textwrap.dedent(stdin))
    assert (result.exit_code, result.stderr) == (0, "")
    doc = json.loads(result.stdout)
    assert [(p["name"], p["node"]) for p in doc["pods"]] == pods
    assert [(p["file"], p["name"]) for p in doc["invalid"]] == invalid


@pytest.mark.parametrize(
    ("stdin", "expected"),
    [
        pytest.param("kind: Pod\n  bad: [unclosed\n", 'error: <stdin>: not valid YAML: mapping values are not '
                     f'allowed {MAPPING_VALUES}\n  in "<stdin>", line 2, column 6', id="yaml-error-names-stdin"),
        pytest.param("", "error: <stdin>: " + NOTHING_FOUND, id="empty-stdin"),
    ],
)
def test_unusable_stdin_exits_2_naming_stdin(stdin: str, expected: str) -> None:
    result = CliRunner().invoke(main, ["simulate", "-"], input=stdin)
    assert result.exit_code == 2
    assert result.stderr.startswith(expected)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(["--add", "job.yaml"], "error: --add needs --from-cluster", id="add-without-from-cluster"),
        pytest.param(["--kubeconfig", "kc"], "error: --kubeconfig needs --from-cluster", id="kubeconfig-on-files"),
        pytest.param(["--from-cluster", "snap.yaml"], "error: --from-cluster reads the cluster: give the workload "
                     "to add with --add FILE", id="files-with-from-cluster"),
        pytest.param(["--from-cluster", "--kubeconfig", "/nonexistent/kubeconfig"],
                     "error: no usable cluster configuration: ", id="no-cluster"),
    ],
)
def test_simulate_from_cluster_flags_that_do_not_go_together_exit_2(args: list[str], expected: str) -> None:
    code, out, err = invoke("simulate", *args)
    assert code == 2
    assert out == ""
    assert err.startswith(expected), err


TYPOS = NODE + """
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: g, namespace: ml}
spec:
  schedulingPolicy:
    gang: {minCont: 2}
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGrup
metadata: {name: h, namespace: ml}
spec: {}
---
apiVersion: v1
kind: Pod
metadata: {name: w-0, namespace: ml}
spec:
  schedulerName: gang-scheduler
  containers:
  - name: c
    resoures: {requests: {cpu: "64"}}
"""


def test_unknown_fields_and_kinds_are_warned_naming_the_closest_known_one(tmp_path: Path) -> None:
    """What ``kubectl apply --validate=strict`` would refuse is not dropped without a word: a pod whose requests
    sit under ``resoures:`` is warned about (it is placed with no requests), ``minCont:`` is named beside the
    group's ``minCount must be >= 1``, and ``kind: PodGrup`` is not skipped silently."""
    path = write(tmp_path, TYPOS)
    code, out, _ = invoke("simulate", "-o", "json", path)
    assert code == 0
    doc = json.loads(out)
    unknown = [w for w in doc["warnings"] if w["kind"] in ("unknown-field", "unknown-kind")]
    assert unknown == [
        {"level": "warning", "kind": "unknown-field", "group": "ml/g", "field": "spec.schedulingPolicy.gang.minCont",
         "message": f"{path}: PodGroup ml/g: spec.schedulingPolicy.gang.minCont: unknown field (did you mean "
                    "minCount?); ignored"},
        {"level": "warning", "kind": "unknown-kind",
         "message": f"{path}: PodGrup ml/h: no such kind in the scheduling.k8s.io API group of Kubernetes v1.37 (did "
                    "you mean PodGroup?); skipped"},
        {"level": "warning", "kind": "unknown-field", "pod": "ml/w-0", "field": "spec.containers[0].resoures",
         "message": f"{path}: Pod ml/w-0: spec.containers[0].resoures: unknown field (did you mean resources?); "
                    "ignored"},
    ]
    _, text, _ = invoke("simulate", path)
    assert f"warning: {path}: Pod ml/w-0: spec.containers[0].resoures: unknown field (did you mean resources?); " \
           "ignored" in text.splitlines()
    assert "minCount must be >= 1" in text


def test_a_list_item_is_checked_like_a_document(tmp_path: Path) -> None:
    items = json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        yaml.safe_load(NODE), {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
                               "spec": {"schedulerName": "gang-scheduler", "containers": [{"name": "c"}],
                                        "tolerations": [{"key": "k", "efect": "NoSchedule"}]}}]})
    code, out, _ = invoke("simulate", "-o", "json", write(tmp_path, items, "snap.json"))
    assert code == 0
    assert [w["field"] for w in json.loads(out)["warnings"] if w["kind"] == "unknown-field"] == \
        ["spec.tolerations[0].efect"]


def test_a_snapshot_without_nodes_prints_no_empty_utilisation_table(tmp_path: Path) -> None:
    code, out, _ = invoke("simulate", write(tmp_path, BASIC_GROUP + "---" + members(2)))
    assert code == 0
    assert "note: the snapshot has no Node" in out and "Node utilisation" not in out
    code, out, _ = invoke("simulate", write(tmp_path, NODE + "---" + BASIC_GROUP + "---" + members(2)))
    assert code == 0 and "Node utilisation" in out


def test_the_utilisation_table_shows_ephemeral_storage_once_a_pod_requests_it(tmp_path: Path) -> None:
    node = NODE.replace('pods: "110"', 'pods: "110", ephemeral-storage: 100Gi')
    code, out, _ = invoke("simulate", write(tmp_path, node + "---" + GOOD_POD))
    assert code == 0 and "ephemeral-storage" not in out
    asks = GOOD_POD.replace('cpu: "1"', 'cpu: "1", ephemeral-storage: 30Gi')
    code, out, _ = invoke("simulate", write(tmp_path, node + "---" + asks + "---" +
                                            asks.replace("name: ok", "name: big").replace("30Gi", "80Gi")))
    assert code == 0
    header = next(line for line in out.splitlines() if line.startswith("node "))
    assert header.split() == ["node", "cpu", "memory", "ephemeral-storage"]
    row = next(line for line in out.splitlines() if line.startswith("n1 "))
    assert "80Gi/100Gi +80Gi  80%" in row  # big goes first (same age, by name); ok no longer fits
    assert "Insufficient ephemeral-storage" in out  # the reason that names it, and the column to read it by


def test_pod_names_are_listed_in_the_order_of_their_numbers(tmp_path: Path) -> None:
    code, out, _ = invoke("simulate", write(tmp_path, NODE + "---" + BASIC_GROUP + "---" + members(12)))
    assert code == 0
    assert "  PodGroup default/bg, 10 pod(s): m2, m3, m4, m5, m6, m7, m8, m9, m10, m11" in out.splitlines()


def test_the_utilisation_table_shows_ephemeral_storage_a_pod_left_pending_requests(tmp_path: Path) -> None:
    """No pod got any ephemeral-storage, but the one left pending asks more than a node has: its reason names
    Insufficient ephemeral-storage, and the table has the column to read that by."""
    node = NODE.replace('pods: "110"', 'pods: "110", ephemeral-storage: 100Gi')
    asks = GOOD_POD.replace('cpu: "1"', 'cpu: "1", ephemeral-storage: 200Gi')
    code, out, _ = invoke("simulate", write(tmp_path, node + "---" + asks))
    assert code == 0 and "Insufficient ephemeral-storage" in out
    header = next(line for line in out.splitlines() if line.startswith("node "))
    assert header.split() == ["node", "cpu", "memory", "ephemeral-storage"]
    row = next(line for line in out.splitlines() if line.startswith("n1 "))
    assert "0/100Gi   0%" in row


def test_utilisation_rows_are_in_the_order_of_the_node_numbers(tmp_path: Path) -> None:
    nodes = "---".join(NODE.replace("n1", f"n{i}") for i in (10, 2, 1))
    code, out, _ = invoke("simulate", write(tmp_path, nodes + "---" + GOOD_POD))
    assert code == 0
    rows = [line.split()[0] for line in out.splitlines() if line.startswith("n") and line.split()[0][1:].isdigit()]
    assert rows == ["n1", "n2", "n10"]
