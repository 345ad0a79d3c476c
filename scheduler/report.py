"""Rendering a :class:`~scheduler.simulate.Simulation`: the readable report and the JSON document.

The JSON keys are a public interface (issue #2): ``groups[].{namespace, name, kind, root,
status, placements, reason}`` and ``pods[].{namespace, name, node, reason}``; extra keys
(``policy``, ``priority``, ``nodes``, ``invalid``) may be added, none removed or renamed.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from scheduler.model.quantity import CPU, MEMORY, format_units, is_extended
from scheduler.simulate import Simulation
from scheduler.solver.snapshot import Snapshot

DRA_GROUP = "resource.k8s.io"
"""API group of the DRA objects (ResourceSlice, DeviceClass, ResourceClaim…) the loader skips."""


def _node_rows(initial: Snapshot, final: Snapshot) -> list[dict[str, Any]]:
    table = final.table
    shown = [r for r in table.resources if r in (CPU, MEMORY) or is_extended(r)]
    rows = []
    for i, node in enumerate(table.nodes):
        res = {}
        for r in shown:
            j = table.column[r]
            alloc = int(table.allocatable[i, j])
            if alloc <= 0 and r not in (CPU, MEMORY):
                continue
            res[r] = {"allocatable": alloc, "used_before": int(initial.used[i, j]), "used": int(final.used[i, j])}
        rows.append({"name": node.name, "resources": res})
    return rows


def to_json(sim: Simulation) -> dict[str, Any]:
    """The machine-readable result (stable keys, see the module docstring)."""
    doc: dict[str, Any] = {
        "groups": [
            {
                "namespace": g.key.namespace,
                "name": g.key.name,
                "kind": g.key.kind,
                "root": g.root.name,
                "status": g.status,
                "placements": dict(sorted(g.placements.items())),
                "reason": g.reason,
                "policy": g.policy,
                "priority": g.priority,
            }
            for g in sim.groups
        ],
        "pods": [
            {"namespace": p.pod.metadata.namespace, "name": p.pod.metadata.name, "node": p.node, "reason": p.reason}
            for p in sim.pods
        ],
        "invalid": [
            {"file": x.file, "kind": x.kind, "namespace": x.namespace, "name": x.name, "reason": x.message}
            for x in sim.problems
        ],
    }
    if sim.snapshot is not None and sim.initial is not None:
        doc["nodes"] = _node_rows(sim.initial, sim.snapshot)
    return doc


def render_json(sim: Simulation) -> str:
    """:func:`to_json` as indented JSON text."""
    return json.dumps(to_json(sim), indent=2, sort_keys=False)


def _pct(used: int, alloc: int) -> str:
    return f"{100 * used / alloc:3.0f}%" if alloc else "  - "


def render_text(sim: Simulation) -> str:
    """A readable report: warnings, groups in queue order, lone pods placed, every pod left pending
    with its reason, load problems, node utilisation."""
    out: list[str] = []
    scheduled = sum(g.status == "Scheduled" for g in sim.groups)
    placed = sum(p.node is not None for p in sim.pods)
    out.append(f"Groups: {scheduled}/{len(sim.groups)} scheduled; pods: {placed}/{len(sim.pods)} placed")
    out.extend(_notes(sim))
    out.append("")
    for g in sim.groups:
        indent = "  " if g.key == g.root else "    "
        mark = {"Scheduled": "OK  ", "Unschedulable": "FAIL", "Waiting": "WAIT", "Invalid": "BAD "}[g.status]
        head = f"{indent}[{mark}] {g.key.kind} {g.key.namespace}/{g.key.name}  ({g.policy}, priority {g.priority})"
        out.append(head)
        if g.placements and g.key.kind == "PodGroup":
            by_node: dict[str, int] = {}
            for node in g.placements.values():
                by_node[node] = by_node.get(node, 0) + 1
            nodes = ", ".join(f"{n} x{c}" if c > 1 else n for n, c in sorted(by_node.items()))
            out.append(f"{indent}       placed {len(g.placements)} pod(s) on {nodes}")
        if g.reason:
            out.append(f"{indent}       {g.status}: {g.reason}")
    single = [p for p in sim.pods if p.pod.group_name is None and p.node is not None]
    if single:
        out.append("")
        out.append("Pods without a scheduling group:")
        for p in single:
            out.append(f"  {p.pod.key} -> {p.node}")
    pending = [p for p in sim.pods if p.node is None]
    if pending:
        out.append("")
        out.append(f"Pods left pending ({len(pending)}):")
        for p in pending:
            out.append(f"  {p.pod.key}: {p.reason}")
    if sim.problems:
        out.append("")
        out.append("Invalid objects (skipped):")
        for x in sim.problems:
            out.append(f"  {x}")
    if sim.snapshot is not None and sim.initial is not None:
        out.append("")
        out.append(_utilisation(sim.initial, sim.snapshot))
    return "\n".join(out)


def _notes(sim: Simulation) -> list[str]:
    """One-line hints under the summary: no pod of ours found; DRA objects or claims ignored."""
    notes: list[str] = []
    if not sim.pods:  # sim.pods holds every pending pod of ours
        found = ", ".join(f"{name} ({n})" for name, n in sorted(sim.pods_by_scheduler.items(),
                                                                key=lambda kv: (-kv[1], kv[0])))
        notes.append(f'note: no pending pod has spec.schedulerName "{sim.scheduler_name}" '
                     f'(found: {found or "no pods"})')
    dra = sum(n for kind, n in sim.skipped.items() if kind.startswith(f"{DRA_GROUP}/"))
    claims = sum(1 for p in sim.pods if p.pod.spec.resource_claims)
    if dra or claims:
        parts = []
        if dra:
            parts.append(f"{dra} {DRA_GROUP} object(s) skipped")
        if claims:
            parts.append(f"{claims} pending pod(s) with spec.resourceClaims placed by their other requests only")
        notes.append(f"warning: DRA is not supported yet: {'; '.join(parts)}")
    return notes


def _utilisation(initial: Snapshot, final: Snapshot) -> str:
    table = final.table
    ext = [r for r in table.resources if is_extended(r) and np.any(table.allocatable[:, table.column[r]] > 0)]
    cols = [CPU, MEMORY, *ext]
    header = f"{'node':<16}" + "".join(f"  {c:>30}" for c in cols)
    lines = ["Node utilisation (used/allocatable after placement; +N = added by this run):", header]
    for i, node in enumerate(table.nodes):
        cells = []
        for r in cols:
            j = table.column.get(r)
            if j is None:
                cells.append(f"  {'-':>30}")
                continue
            alloc, used, before = (int(table.allocatable[i, j]), int(final.used[i, j]), int(initial.used[i, j]))
            if alloc == 0:
                cells.append(f"  {'-':>30}")
                continue
            added = used - before
            delta = f" +{format_units(r, added)}" if added else ""
            text = f"{format_units(r, used)}/{format_units(r, alloc)}{delta} {_pct(used, alloc)}"
            cells.append(f"  {text:>30}")
        lines.append(f"{node.name:<16}" + "".join(cells))
    return "\n".join(lines)
