"""``simulate`` with preemption: the ``preemptions`` JSON key, the text report, ``--no-preemption``."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from scheduler.cli import main
from tests.scenario.test_examples import EXTRA_NO_PACKING, FRAGMENTED, POD

LOW_JOBS = """
apiVersion: v1
kind: Node
metadata: {{name: n{i}}}
status: {{allocatable: {{cpu: "2", memory: 8Gi, pods: "110"}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: low-{i}, namespace: ml, labels: {{app: low{i}}}}}
spec:
  schedulerName: default-scheduler
  nodeName: n{i}
  priority: {priority}
  containers: [{{name: c, resources: {{requests: {{cpu: "2"}}}}}}]
status: {{phase: Running, startTime: "2026-01-01T00:0{i}:00Z"}}
---
"""
HIGH = """
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: high, namespace: ml}
spec: {schedulingPolicy: {gang: {minCount: 1}}, priority: 1000}
---
apiVersion: v1
kind: Pod
metadata: {name: high-0, namespace: ml}
spec:
  schedulerName: gang-scheduler
  schedulingGroup: {podGroupName: high}
  containers: [{name: c, resources: {requests: {cpu: "2"}}}]
"""
PDB = """
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: keep-low2, namespace: ml}
spec: {selector: {matchLabels: {app: low2}}}
status: {disruptionsAllowed: 0}
"""


def simulate_json(tmp_path: Path, text: str, *flags: str, base: Path | None = None) -> dict[str, Any]:
    path = tmp_path / "snapshot.yaml"
    path.write_text(textwrap.dedent(text))
    files = [str(base)] if base else []
    result = CliRunner().invoke(main, ["simulate", "--output", "json", *flags, *files, str(path)])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.output)
    return doc


def cluster(priorities: tuple[int, ...]) -> str:
    return "".join(LOW_JOBS.format(i=i, priority=p) for i, p in enumerate(priorities)) + HIGH


def group(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(g for g in doc["groups"] if g["name"] == name)


def test_the_preemptor_is_scheduled_where_its_victim_ran_and_the_victim_is_listed(tmp_path: Path) -> None:
    doc = simulate_json(tmp_path, cluster((5, 1, 5)))
    assert doc["preemptions"] == [{
        "preemptor": {"namespace": "ml", "name": "high", "kind": "PodGroup"},
        "victims": [{"namespace": "ml", "name": "low-1", "node": "n1"}],
        "message": "pod group preemption: found a placement for podgroup, preempting 1 victims: 1 pod(s) without "
                   "a group"}]
    assert group(doc, "high")["status"] == "Scheduled" and group(doc, "high")["placements"] == {"high-0": "n1"}


def test_no_preemption_keeps_the_key_empty_and_the_gang_pending(tmp_path: Path) -> None:
    doc = simulate_json(tmp_path, cluster((5, 1, 5)), "--no-preemption")
    assert doc["preemptions"] == []
    assert group(doc, "high")["status"] == "Unschedulable"


@pytest.mark.parametrize(("extra", "victim"), [
    pytest.param("", "low-2", id="the-youngest-goes"),
    pytest.param(PDB, "low-1", id="a-pdb-protected-pod-is-kept"),
])
def test_pdbs_in_the_snapshot_steer_the_choice(tmp_path: Path, extra: str, victim: str) -> None:
    doc = simulate_json(tmp_path, cluster((1, 1, 1)) + extra)
    assert [v["name"] for p in doc["preemptions"] for v in p["victims"]] == [victim]


def test_text_report_lists_the_victims_under_the_preemptor_by_group(tmp_path: Path) -> None:
    text = textwrap.dedent(EXTRA_NO_PACKING + "".join(
        POD.format(name=f"big-{i}", group="schedulingGroup: {podGroupName: big-6x4}", gpu=4) for i in range(6)))
    path = tmp_path / "big.yaml"
    path.write_text(text)
    result = CliRunner().invoke(main, ["simulate", str(FRAGMENTED), str(path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    head = lines.index(next(line for line in lines if "PodGroup ml-team/big-6x4" in line))
    assert lines[head + 1].startswith("         placed 6 pod(s) on ")
    assert lines[head + 2] == "         preempted 6 pod(s) to make room:"
    assert lines[head + 3].startswith("           pods without a group in research: finetune-06-l4s7z on dgx-11, ")


ABOVE_MINIMUM = """
apiVersion: v1
kind: Node
metadata: {{name: n0}}
status: {{allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}}}
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {{name: blockers, namespace: ml}}
spec: {{schedulingPolicy: {{basic: {{}}}}, priority: 10}}
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {{name: high, namespace: ml}}
spec: {{schedulingPolicy: {policy}, priority: 100}}
{blockers}{members}"""
MEMBER = """---
apiVersion: v1
kind: Pod
metadata: {{name: {group}-{i}, namespace: ml}}
spec:
  schedulerName: gang-scheduler
  schedulingGroup: {{podGroupName: {group}}}
  containers: [{{name: c, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
"""
RUNNING_ON_N0 = """  nodeName: n0
status: {phase: Running, startTime: "2026-01-01T00:00:00Z"}
"""


def above_minimum(policy: str, blockers: int, blocker_cpu: str, members: int, member_cpu: str) -> str:
    running = "".join(MEMBER.format(group="blockers", i=i, cpu=blocker_cpu) + RUNNING_ON_N0 for i in range(blockers))
    return ABOVE_MINIMUM.format(policy=policy, blockers=running,
                                members="".join(MEMBER.format(group="high", i=i, cpu=member_cpu)
                                                for i in range(members)))


@pytest.mark.parametrize(("policy", "blockers", "blocker_cpu", "members", "member_cpu"), [
    ("{basic: {}}", 1, "4", 3, "1"),            # a basic group of three on a node one priority-10 pod fills
    ("{gang: {minCount: 3}}", 4, "1", 4, "1"),  # a gang of four, minCount 3, four priority-10 blockers
], ids=["basic-group-of-three", "gang-of-four-min-count-three"])
def test_members_above_the_minimum_preempt_too_and_every_member_is_placed(
        tmp_path: Path, policy: str, blockers: int, blocker_cpu: str, members: int, member_cpu: str) -> None:
    """Kubernetes' PodGroup preemption tests (``podgrouppreemption_test.go``, v1.36) preempt for every pending
    member: the blockers of lower priority go — all of them that stand in the way, in one preemption for the
    root — and every member is placed, not only the minimum."""
    doc = simulate_json(tmp_path, above_minimum(policy, blockers, blocker_cpu, members, member_cpu))
    assert len(doc["preemptions"]) == 1
    victims = sorted(v["name"] for v in doc["preemptions"][0]["victims"])
    assert victims == [f"blockers-{i}" for i in range(blockers)]
    assert group(doc, "high")["status"] == "Scheduled"
    assert group(doc, "high")["placements"] == {f"high-{i}": "n0" for i in range(members)}


def test_members_above_the_minimum_evict_nothing_in_vain_and_say_why(tmp_path: Path) -> None:
    """A gang of three 2-cpu members (minCount 1) on a 4-cpu node holding one 1-cpu pod of priority 10: the
    minimum fits; all three would not fit even with the blocker gone, so nothing is evicted, one member is
    placed, and the two left out say that preemption would not help."""
    doc = simulate_json(tmp_path, above_minimum("{gang: {minCount: 1}}", 1, "1", 3, "2"))
    assert doc["preemptions"] == []
    assert len(group(doc, "high")["placements"]) == 1
    left = [p for p in doc["pods"] if p["name"].startswith("high-") and p.get("node") is None]
    assert len(left) == 2
    assert {p["reason"] for p in left} == {  # appended as kube-scheduler appends a PostFilter message
        "gang high: 1/3 placed (minCount 1); 0/1 nodes are available: 1 Insufficient cpu. pod group preemption: "
        "Preemption is not helpful for scheduling (no fit even with the one lower-priority pod evicted: "
        "ml/blockers-0)"}
