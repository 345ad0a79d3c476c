"""Volumes in ``simulate`` on a realistic snapshot (tests/data/workloads/d-statefulset-wffc-pvcs.yaml): StatefulSet
gangs with WaitForFirstConsumer claims, local PVs, ephemeral volumes, a missing claim, a ReadWriteOncePod claim."""

from __future__ import annotations

import json
from collections import Counter

from click.testing import CliRunner

from scheduler.cli import main
from scheduler.framework import SolverConfig
from scheduler.offline.loader import load
from scheduler.offline.report import notices, to_json
from scheduler.offline.simulate import Simulation, simulate
from scheduler.solver.plugins.node_volume_limits import attached, limits
from scheduler.solver.plugins.volume_restrictions import RWOP_CONFLICT
from tests.scenario.conftest import DATA

SNAPSHOT = DATA / "workloads" / "d-statefulset-wffc-pvcs.yaml"
ZONE = "topology.kubernetes.io/zone"


def run() -> Simulation:
    return simulate(load([SNAPSHOT]), "gang-scheduler", SolverConfig())


def test_each_gang_gets_what_its_volumes_allow() -> None:
    sim = run()
    assert {g.key.name: g.status for g in sim.groups} == {
        "etl": "Scheduled", "kafka": "Scheduled", "ledger-audit": "Unschedulable", "postgres": "Scheduled",
        "reports": "Unschedulable"}
    reasons = {p.pod.metadata.name: p.reason for p in sim.pods if p.node is None}
    assert reasons == {
        "reports-0": 'gang reports: 0/1 placeable (minCount 1); persistentvolumeclaim "warehouse" not found',
        "ledger-audit-0": f"gang ledger-audit: 0/1 placeable (minCount 1); 0/4 nodes are available: 4 {RWOP_CONFLICT}. "
                          "pod group preemption: No preemption victims found for incoming pod."}


def test_the_kafka_gang_follows_its_bound_volume_into_us_east_1b_and_binds_the_other_claims_there() -> None:
    sim = run()
    nodes = {p.pod.metadata.name: p.node for p in sim.pods if p.pod.metadata.name.startswith("kafka")}
    assert set(nodes.values()) <= {"ip-10-0-2-10", "ip-10-0-2-11"}  # us-east-1b, where data-kafka-0's EBS volume is
    kafka = {v.binding.claim: v for v in sim.volumes if v.root.name == "kafka"}
    assert set(kafka) == {"data/data-kafka-1", "data/data-kafka-2"}  # data-kafka-0 is bound already
    for i in (1, 2):
        outcome = kafka[f"data/data-kafka-{i}"]
        assert outcome.provisioned and outcome.binding.node == nodes[f"kafka-{i}"]
        assert outcome.binding.pods == (f"data/kafka-{i}",)
    final = sim.snapshot.volumes if sim.snapshot is not None else None
    assert final is not None
    claim = final.claims["data/data-kafka-1"]
    assert claim.is_bound and claim.selected_node == nodes["kafka-1"]
    affinity = final.volumes[claim.spec.volume_name].spec.node_affinity
    assert affinity is not None and affinity.required is not None
    (term,) = affinity.required.node_selector_terms
    assert {(r.key, r.values) for r in term.match_expressions} >= {(ZONE, ("us-east-1b",))}


def test_local_pv_claims_are_matched_one_per_node_that_has_a_disk() -> None:
    sim = run()
    postgres = sorted((v.binding.node, v.volume, v.provisioned) for v in sim.volumes if v.root.name == "postgres")
    assert postgres == [("ip-10-0-1-10", "local-pv-ip-10-0-1-10-nvme1n1", False),
                        ("ip-10-0-1-11", "local-pv-ip-10-0-1-11-nvme1n1", False)]


def test_ephemeral_claims_are_made_and_no_node_exceeds_its_attach_limit() -> None:
    sim = run()
    assert sim.synthesized_volume_claims == frozenset({"data/etl-0-scratch", "data/etl-1-scratch"})
    assert any(n.kind == "synthesized-volume-claims" for n in notices(sim))
    final = sim.snapshot
    assert final is not None and final.volumes is not None
    limit = limits(final.volumes, final.table, "ebs.csi.aws.com")
    counts = Counter({info.name: len(attached(final.volumes, info).get("ebs.csi.aws.com", ())) for info in final.infos})
    assert all(counts[n.name] <= limit[i] for i, n in enumerate(final.table.nodes))
    assert counts["ip-10-0-2-11"] <= 2  # the node whose CSINode allows 2 (its ledger writer holds one)


def test_json_lists_every_bound_claim_and_the_run_is_deterministic() -> None:
    doc = to_json(run())
    assert [v["claim"] for v in doc["volumes"]] == ["data/etl-0-scratch", "data/etl-1-scratch", "data/data-kafka-1",
                                                   "data/data-kafka-2", "data/pgdata-postgres-0",
                                                   "data/pgdata-postgres-1"]
    for entry in doc["volumes"]:
        assert set(entry) == {"claim", "node", "volume", "provisioned", "pods", "root"}
    assert to_json(run()) == doc
    cli = CliRunner().invoke(main, ["simulate", str(SNAPSHOT), "--output", "json"])
    assert cli.exit_code == 0, cli.output
    assert json.loads(cli.output)["volumes"] == doc["volumes"]
