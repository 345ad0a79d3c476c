"""Golden test of ``gang-scheduler simulate --output json`` on the built-in example.

The JSON keys are a public interface. To accept an intended change of output, run
``UPDATE_GOLDEN=1 make test`` and review the diff of ``tests/data/golden/``.
"""

from __future__ import annotations

import json
import os

from click.testing import CliRunner

from scheduler.cli import main
from tests.scenario.conftest import DATA

GOLDEN = DATA / "golden" / "simulate-default.json"


def test_simulate_json_on_builtin_example_matches_golden() -> None:
    result = CliRunner().invoke(main, ["simulate", "--output", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(doc, indent=2) + "\n")
    assert doc == json.loads(GOLDEN.read_text())


def test_json_keeps_the_documented_keys() -> None:
    doc = json.loads(GOLDEN.read_text())
    for group in doc["groups"]:
        assert {"namespace", "name", "kind", "root", "status", "placements", "reason"} <= set(group)
        assert group["status"] in {"Scheduled", "Preempted", "Unschedulable", "Waiting", "Invalid"}
    for pod in doc["pods"]:
        assert {"namespace", "name", "node", "reason"} <= set(pod)
    for entry in doc["pending"]:
        assert set(entry) == {"namespace", "group", "pods", "reason"}
    for node in doc["nodes"]:
        for resource in node["resources"].values():
            assert set(resource) == {"allocatable", "used_before", "used", "added", "evicted"}
    assert [n["name"] for n in doc["nodes"] if n["state"]] == ["gpu-b2-2"]  # the example's cordoned node
    assert doc["allocations"] == []  # the built-in example has no DRA objects (tests/scenario/test_dra.py has)
