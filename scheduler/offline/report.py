"""Rendering a :class:`~scheduler.offline.simulate.Simulation`: the readable report and the JSON document.

The JSON keys are a public interface: ``groups[].{namespace, name, kind, root,
status, placements, reason}`` and ``pods[].{namespace, name, node, reason}``; extra keys
(``policy``, ``priority``, ``nodes``, ``invalid``) may be added, none removed or renamed.
The document also has ``allocations[].{claim, reservedFor: {kind, name}, node, devices[].{request, driver,
pool, device}}`` (one entry per claim a plan allocates, in queue order; ``[]`` without DRA), with
the extra keys ``pods`` (the plan's pods using the claim) and ``synthesized``;
``warnings[].{level, kind, message}`` (the summary's ``note:`` / ``warning:`` lines, ``kind`` one of
``no-pods-of-ours``, ``job-expanded``, ``workload-not-ours``, ``workload-not-expanded``, ``skipped-api-version``,
``dra-problems``, ``synthesized-claims``, ``synthesized-volume-claims`` and ``unhonoured-field``) and
``dra_problems[]`` (every line of the report's "DRA problems" section: unusable pools and slices,
malformed claims and templates, selector errors met while solving); ``volumes[].{claim, node, volume, provisioned, pods,
root}`` (one entry per WaitForFirstConsumer PersistentVolumeClaim a plan binds, in queue order: the PV
matched or, ``provisioned``, the one made for it; ``[]`` without such claims), and ``warnings[]`` entries
of kind ``unhonoured-field``, one per field a pending pod sets that no plugin honours (its volume claims'
included), with the extra keys ``pod`` (``namespace/name``) and ``field`` (the field path);
``preemptions[]``: one entry per preempting root, ``{preemptor: {namespace, name, kind}, victims:
[{namespace, name, node}]}`` (victims are pods, in eviction order), always present (``[]`` with none,
and with ``--no-preemption``), plus the extra key ``message``; ``waiting[]``: one entry per root whose plan
would wait for its devices' binding conditions live (KEP-5007), ``{root: {namespace, name, kind}, conditions:
["ns/claim: driver/pool/device Condition"]}`` (``[]`` with none); ``roomTaken[]``: one entry per root left
unschedulable whose room on the cluster as given roots placed before it took (:mod:`scheduler.offline.room`),
``{root: {namespace, name, kind}, nodes: {node: pods}, takenBy: [{namespace, name, kind, priority}]}`` — those
roots, with pods on those nodes (``takenBy`` never empty; ``[]`` with no entry). ``warnings[]`` also has entries of kind
``unhonoured-object-field`` (a field of a PodGroup that is not honoured, named with its file and object),
and entries of kind ``unknown-field`` (a field the v1.37 API does not know, in a Pod's, PodGroup's or
CompositePodGroup's metadata or spec, with the closest known field; extra keys ``field`` and ``pod`` or
``group``) and ``unknown-kind`` (an object skipped because no v1.37 API group serves its kind, with the
closest kind).
``groups[].status`` is one of :data:`~scheduler.offline.simulate.SCHEDULED`, ``PREEMPTED``, ``UNSCHEDULABLE``,
``WAITING``, ``INVALID`` (the text report's :data:`MARKS`); ``nodes[].resources[r]`` has ``added`` and ``evicted``
beside ``used_before`` and ``used`` (what this run placed and what its preemptions took off the node),
``nodes[].state`` why the node takes no new pods (``cordoned``, ``Ready=False``; ``[]`` when it takes them), and
``pending[].{namespace, group, pods, reason}`` groups the pods left pending by PodGroup and reason, as the text
report prints them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scheduler.dra.device_snapshot import DraView
from scheduler.dra.writes import result_fields
from scheduler.framework.node_table import IntArray
from scheduler.framework.snapshot import Snapshot, pod_vector
from scheduler.groups.workloads import JOB
from scheduler.model.base import first_named
from scheduler.model.dra import API_GROUP as DRA_GROUP
from scheduler.model.dra import API_VERSION as DRA_VERSION
from scheduler.model.dra import DeviceUse
from scheduler.model.node import Node
from scheduler.model.pod import NodeSelector
from scheduler.model.quantity import CPU, EPHEMERAL_STORAGE, HUGEPAGES_PREFIX, MEMORY, format_units, is_extended
from scheduler.model.scheduling import GroupKey
from scheduler.offline.loader import EXPANDED, KINDS
from scheduler.offline.room import RoomTaken
from scheduler.offline.simulate import (
    INVALID,
    PREEMPTED,
    SCHEDULED,
    UNSCHEDULABLE,
    WAITING,
    AllocationOutcome,
    GroupOutcome,
    PodOutcome,
    PreemptionOutcome,
    Simulation,
)

UNHONOURED = "unhonoured-field"
"""``warnings[].kind`` of a field a pod sets that no plugin honours."""
UNKNOWN_FIELD = "unknown-field"
"""``warnings[].kind`` of a field the v1.37 API does not know (``kubectl apply --validate=strict`` refuses it)."""
UNKNOWN_KIND = "unknown-kind"
"""``warnings[].kind`` of an object skipped because no v1.37 API group serves its kind."""
UNHONOURED_OBJECT = "unhonoured-object-field"
"""``warnings[].kind`` of a field of another object that is not honoured (a v1.36 PodGroup's unknown
``disruptionMode``); the message names the file, the object and the field."""

MAX_DEVICE_LINES = 20
"""Device lines shown per group in the text report (the JSON has every allocation)."""
MAX_POD_NAMES = 10
"""Pod names shown per line of "Pods left pending" (the JSON has every pod)."""
MARKS = {SCHEDULED: "OK  ", PREEMPTED: "PREEMPTED", UNSCHEDULABLE: "FAIL", WAITING: "WAIT", INVALID: "BAD "}
"""The text report's mark per group status (the JSON's ``status``)."""

_EXPANDED_NAMES = [f"{JOB.api_version} {JOB.kind}s", *(f"{kind.api_version} {kind.kind}s" for kind in EXPANDED)]
EXPANDED_TEXT = f"{', '.join(_EXPANDED_NAMES[:-1])} and {_EXPANDED_NAMES[-1]}"
"""The workloads ``simulate`` makes pods of, for the note naming the ones it does not (``batch/v1 Jobs, … and …``)."""


def _moves(sim: Simulation, final: Snapshot) -> tuple[IntArray, IntArray]:
    """The requests this run placed on each node and those its preemptions evicted from it, each ``(N, R)`` over
    ``final``'s table (the units of ``used``): ``used`` is the initial one plus the first minus the second."""
    table = final.table
    added, evicted = np.zeros_like(final.used), np.zeros_like(final.used)
    for p in sim.pods:
        if p.node is not None and (row := table.index.get(p.node)) is not None:
            added[row] += pod_vector(table, p.pod)
    for outcome in sim.preemptions:
        for pod, node in outcome.victims:
            if (row := table.index.get(node)) is not None:
                evicted[row] += pod_vector(table, pod)
    return added, evicted


def _node_rows(sim: Simulation, initial: Snapshot, final: Snapshot) -> list[dict[str, Any]]:
    table = final.table
    added, evicted = _moves(sim, final)
    shown = [r for r in table.resources if r in (CPU, MEMORY) or is_extended(r)]
    rows = []
    for i, node in enumerate(table.nodes):
        res = {}
        for r in shown:
            j = table.column[r]
            alloc = int(table.allocatable[i, j])
            if alloc <= 0 and r not in (CPU, MEMORY):
                continue
            res[r] = {"allocatable": alloc, "used_before": int(initial.used[i, j]), "used": int(final.used[i, j]),
                      "added": int(added[i, j]), "evicted": int(evicted[i, j])}
        rows.append({"name": node.name, "resources": res, "state": _node_marks(node)})
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
        "pending": [
            {"namespace": ns, "group": group, "pods": [p.pod.metadata.name for p in pods], "reason": reason}
            for (ns, group, reason), pods in pending_by_reason(sim).items()
        ],
        "invalid": [
            {"file": x.file, "kind": x.kind, "namespace": x.namespace, "name": x.name, "reason": x.message}
            for x in sim.problems
        ],
    }
    if sim.snapshot is not None and sim.initial is not None:
        doc["nodes"] = _node_rows(sim, sim.initial, sim.snapshot)
    doc["allocations"] = [_allocation_json(a) for a in sim.allocations]
    doc["warnings"] = [_notice_json(n) for n in notices(sim)]
    doc["dra_problems"] = list(sim.dra_problems)
    doc["volumes"] = [{"claim": v.binding.claim, "node": v.binding.node, "volume": v.volume,
                       "provisioned": v.provisioned, "pods": [k.partition("/")[2] for k in v.binding.pods],
                       "root": v.root.name} for v in sim.volumes]
    doc["preemptions"] = [_preemption_json(p) for p in sim.preemptions]
    doc["waiting"] = [{"root": {"namespace": k.namespace, "name": k.name, "kind": k.kind}, "conditions": list(w)}
                      for k, w in sim.waiting.items()]
    doc["roomTaken"] = [{"root": {"namespace": k.namespace, "name": k.name, "kind": k.kind}, "nodes": dict(t.nodes),
                         "takenBy": [{"namespace": b.namespace, "name": b.name, "kind": b.kind, "priority": priority}
                                     for b, priority in t.by]}
                        for k, t in sim.room_taken.items()]
    return doc


def _notice_json(n: Notice) -> dict[str, Any]:
    """One ``warnings`` entry: ``level``, ``kind``, ``message``, and ``pod`` or ``group`` with ``field`` when about
    an unhonoured field."""
    entry: dict[str, Any] = {"level": n.level, "kind": n.kind, "message": n.message}
    for key, value in (("pod", n.pod), ("group", n.group)):
        if value is not None:
            entry[key] = value
            entry["field"] = n.field
    return entry


def _preemption_json(outcome: PreemptionOutcome) -> dict[str, Any]:
    """One ``preemptions`` entry (stable keys ``preemptor`` and ``victims``; ``message`` extra)."""
    root = outcome.root
    return {
        "preemptor": {"namespace": root.namespace, "name": root.name, "kind": root.kind},
        "victims": [{"namespace": pod.metadata.namespace, "name": pod.metadata.name, "node": node}
                    for pod, node in outcome.victims],
        "message": outcome.message,
    }


def _allocation_json(outcome: AllocationOutcome) -> dict[str, Any]:
    """One ``allocations`` entry. ``reservedFor`` is the first consumer (a claim shared by name
    among several pods is reserved for each; ``pods`` lists the plan's pods using it)."""
    a = outcome.allocation
    kind, name, _uid = a.reserved_for[0] if a.reserved_for else ("", "", "")
    return {
        "claim": a.claim,
        "reservedFor": {"kind": kind, "name": name},
        "node": a.node,
        "devices": [{"request": r, "driver": d, "pool": p, "device": n, **result_fields(use)}
                    for (r, d, p, n), use in zip(a.results, a.device_uses, strict=True)],
        "pods": [pod for pod, _ in outcome.pods],
        "synthesized": outcome.synthesized,
    }


def render_json(sim: Simulation) -> str:
    """:func:`to_json` as indented JSON text."""
    return json.dumps(to_json(sim), indent=2, sort_keys=False)


def pending_by_reason(sim: Simulation) -> dict[tuple[str, str | None, str], list[PodOutcome]]:
    """The pending pods of ours that got no node, by (namespace, PodGroup name or None, reason), in report order:
    the members of a gang that share a reason come as one entry (the text report prints it once)."""
    out: dict[tuple[str, str | None, str], list[PodOutcome]] = {}
    for p in sim.pods:
        if p.node is None:
            out.setdefault((p.pod.metadata.namespace, p.pod.group_name, p.reason or ""), []).append(p)
    return out


def _pct(used: int, alloc: int) -> str:
    return f"{100 * used / alloc:3.0f}%" if alloc else "  - "


def render_text(sim: Simulation) -> str:
    """A readable report: warnings, groups in queue order (with the devices chosen per pod and per
    group claim), lone pods placed, every pod left pending with its reason, load problems, DRA
    problems, node utilisation and device utilisation."""
    out: list[str] = []
    scheduled = sum(g.status == SCHEDULED for g in sim.groups)
    preempted = sum(g.status == PREEMPTED for g in sim.groups)
    placed = sum(p.node is not None for p in sim.pods)
    out.append(f"Groups: {scheduled}/{len(sim.groups)} scheduled{f', {preempted} preempted' if preempted else ''}; "
               f"pods: {placed}/{len(sim.pods)} placed")
    out.extend(_notice_lines(notices(sim)))
    out.append("")
    for g in sim.groups:
        indent = "  " if g.key == g.root else "    "
        head = (f"{indent}[{MARKS[g.status]}] {g.key}  "
                f"({g.policy}, priority {g.priority})")
        out.append(head)
        if g.placements and g.key.kind == "PodGroup":
            by_node: dict[str, int] = {}
            for node in g.placements.values():
                by_node[node] = by_node.get(node, 0) + 1
            nodes = ", ".join(f"{n} x{c}" if c > 1 else n for n, c in sorted(by_node.items(),
                                                                             key=lambda item: _by_name(item[0])))
            out.append(f"{indent}       placed {len(g.placements)} pod(s) on {nodes}")
            out.extend(_device_lines(_allocations_of(sim, g), f"{indent}       "))
            out.extend(_volume_lines(sim, g, f"{indent}       "))
        elif g.status == SCHEDULED and g.key.kind == "PodGroup" and not g.reason:
            left = sum(p.node is None and p.pod.group_name == g.key.name and p.pod.metadata.namespace ==
                       g.key.namespace for p in sim.pods)
            out.append(f"{indent}       " + (f"its bound members satisfy it; {left} member(s) left pending "
                                             "(see Pods left pending)" if left else
                                             "nothing to place: its bound members satisfy it"))
        if g.reason:
            out.append(f"{indent}       {g.status}: {_continued(g.reason, indent + '         ')}")
        if g.key == g.root:
            out.extend(_preemption_lines(sim, g, f"{indent}       "))
            if (taken := sim.room_taken.get(g.key)) is not None:
                out.append(f"{indent}       {_room_taken_text(taken)}")
    single = [p for p in sim.pods if p.pod.group_name is None and p.node is not None]
    if single:
        out.append("")
        out.append("Pods without a scheduling group:")
        for p in single:
            mine = [a for a in sim.allocations if a.root.kind == "Pod" and (p.pod.metadata.name, p.node) in a.pods
                    and a.root.namespace == p.pod.metadata.namespace]
            devices = _devices_text([r for a in mine for r in zip(a.allocation.results, a.allocation.device_uses,
                                                                  strict=True)], p.node) if mine else ""
            out.append(f"  {p.pod.key} -> {p.node}{': ' + devices if devices else ''}")
    if sim.waiting:
        out.append("")
        out.append(f"Plans that would wait for binding conditions before binding ({len(sim.waiting)}):")
        for key, conditions in sim.waiting.items():
            out.append(f"  {key}: {'; '.join(conditions)}")
    pending = pending_by_reason(sim)
    if pending:
        out.append("")
        out.append(f"Pods left pending ({sum(len(pods) for pods in pending.values())}):")
        for (ns, group, reason), pods in pending.items():
            if group is None:
                for p in pods:
                    out.append(f"  {p.pod.key}: {_continued(reason, '    ')}")
                    key = GroupKey("Pod", p.pod.metadata.namespace, p.pod.metadata.name)
                    if (taken := sim.room_taken.get(key)) is not None:  # a lone pod's root: no group line above
                        out.append(f"    {_room_taken_text(taken)}")
                continue
            names = sorted((p.pod.metadata.name for p in pods), key=_by_name)
            if len(names) > MAX_POD_NAMES:
                names = [*names[:MAX_POD_NAMES], f"… and {len(names) - MAX_POD_NAMES} more (see --output json)"]
            out.append(f"  PodGroup {ns}/{group}, {len(pods)} pod(s): {', '.join(names)}")
            out.append(f"    {_continued(reason, '    ')}")
    if sim.problems:
        out.append("")
        out.append("Invalid objects (skipped):")
        for x in sim.problems:
            out.append(f"  {x}")
    if sim.dra_problems:
        out.append("")
        out.append("DRA problems (devices not used, selectors that failed):")
        out.extend(f"  {_continued(x, '    ')}" for x in sim.dra_problems)
    if sim.snapshot is not None and sim.initial is not None and len(sim.snapshot.table):  # no Node: the note says so
        out.append("")
        out.append(_utilisation(sim, sim.initial, sim.snapshot))
        if isinstance(sim.snapshot.dra, DraView) and isinstance(sim.initial.dra, DraView):
            device_rows = _device_utilisation(sim.initial.dra, sim.snapshot.dra)
            if device_rows:
                out.append("")
                out.extend(device_rows)
    return "\n".join(out)


def _preemption_lines(sim: Simulation, g: GroupOutcome, indent: str) -> list[str]:
    """``preempted 10 pod(s) to make room:`` and one line per victim group (``PodGroup ml/low-3: low-3-0 on
    n1, …``; pods of no group on a line of their own), for each preemption root ``g`` made."""
    lines: list[str] = []
    for outcome in sim.preemptions:
        if outcome.root != g.key:
            continue
        lines.append(f"{indent}preempted {len(outcome.victims)} pod(s) to make room:")
        by_group: dict[str, list[str]] = {}
        for pod, node in outcome.victims:
            group = f"PodGroup {pod.metadata.namespace}/{pod.group_name}" if pod.group_name else \
                f"pods without a group in {pod.metadata.namespace}"
            by_group.setdefault(group, []).append(f"{pod.metadata.name} on {node}")
        lines.extend(f"{indent}  {group}: {', '.join(sorted(pods, key=_by_name))}"
                     for group, pods in sorted(by_group.items(), key=lambda item: _by_name(item[0])))
    return lines


def _room_taken_text(taken: RoomTaken) -> str:
    """``fits the cluster as given (on n1 x2, n2): the room went to PodGroup ml/big (priority 100), placed before it
    in this run`` (:mod:`scheduler.offline.room`)."""
    nodes = ", ".join(f"{node} x{count}" if count > 1 else node for node, count in taken.nodes)
    who = _named([f"{k.kind} {k.namespace}/{k.name} (priority {priority})" for k, priority in taken.by])
    return f"fits the cluster as given (on {nodes}): the room went to {who}, placed before it in this run"


def _continued(text: str, indent: str) -> str:
    """``text`` with its continuation lines indented (a CEL compile error carries the expression and a caret)."""
    return text.replace("\n", "\n" + indent)


def _allocations_of(sim: Simulation, g: GroupOutcome) -> list[AllocationOutcome]:
    """The allocations shown under PodGroup ``g``: its pods' claims and the claims reserved for it."""
    mine = set(g.placements.items())
    out = []
    for a in sim.allocations:
        if a.root != g.root:
            continue
        reserved = a.allocation.reserved_for
        if any(kind == "PodGroup" and name == g.key.name for kind, name, _ in reserved) or mine & set(a.pods):
            out.append(a)
    return out


def _device_lines(allocations: list[AllocationOutcome], indent: str) -> list[str]:
    """``devices: w-0 -> node: gpu-0, gpu-1 (gpu.nvidia.com)`` per pod, then one line per shared claim (with the
    node it is bound to, when a device binds it to one)."""
    per_pod: dict[tuple[str, str], list[tuple[tuple[str, str, str, str], DeviceUse]]] = {}
    shared: list[str] = []
    for a in allocations:
        alloc = a.allocation
        if alloc.node is not None and len(a.pods) == 1:
            per_pod.setdefault(a.pods[0], []).extend(zip(alloc.results, alloc.device_uses, strict=True))
            continue
        kind = alloc.reserved_for[0][0] if alloc.reserved_for else ""
        who = "reserved for the PodGroup" if kind == "PodGroup" else f"shared by {len(a.pods)} pod(s)"
        claim = alloc.claim.split("/", 1)[-1]
        bound = f", bound to {alloc.node} (bindsToNode)" if alloc.node is not None else ""
        shared.append(f"claim {claim} ({who}) -> "
                      f"{_devices_text(list(zip(alloc.results, alloc.device_uses, strict=True)), None)}{bound}")
    lines = [f"{pod} -> {node}: {_devices_text(results, node)}" for (pod, node), results in sorted(per_pod.items())]
    lines += shared
    if not lines:
        return []
    if len(lines) > MAX_DEVICE_LINES:
        lines = [*lines[:MAX_DEVICE_LINES], f"… and {len(lines) - MAX_DEVICE_LINES} more (see --output json)"]
    pad = " " * len("devices: ")
    return [f"{indent}{'devices: ' if i == 0 else pad}{line}" for i, line in enumerate(lines)]


def _volume_lines(sim: Simulation, g: GroupOutcome, indent: str) -> list[str]:
    """``volumes: data-web-0 -> pvc-… (provisioned on web-node-1)`` per claim the group's pods bound."""
    pods = {f"{g.key.namespace}/{name}" for name in g.placements}
    lines = [f"{v.binding.claim.partition('/')[2]} -> {v.volume} ({'provisioned on' if v.provisioned else 'on'} "
             f"{v.binding.node})" for v in sim.volumes if v.root == g.root and pods & set(v.binding.pods)]
    if len(lines) > MAX_DEVICE_LINES:
        lines = [*lines[:MAX_DEVICE_LINES], f"… and {len(lines) - MAX_DEVICE_LINES} more (see --output json)"]
    pad = " " * len("volumes: ")
    return [f"{indent}{'volumes: ' if i == 0 else pad}{line}" for i, line in enumerate(lines)]


def _devices_text(results: list[tuple[tuple[str, str, str, str], DeviceUse]], node: str | None) -> str:
    """``gpu-0, gpu-1 (gpu.nvidia.com); rack-b1/channel-0 (interconnect.example.com)``: devices by driver,
    the pool shown unless it is named after ``node`` (node-local pools usually are); a share of a device with
    ``allowMultipleAllocations`` with what it consumes (``cpudevnuma000 [dra.cpu/cpu 16]``)."""
    by_driver: dict[str, list[str]] = {}
    for (_request, driver, pool, device), use in results:
        text = device if pool == node else f"{pool}/{device}"
        if use.share_id is not None:
            consumed = result_fields(use).get("consumedCapacity", {})
            text += f" [{', '.join(f'{name} {amount}' for name, amount in consumed.items()) or 'share'}]"
        by_driver.setdefault(driver, []).append(text)
    return "; ".join(f"{', '.join(devs)} ({driver})" for driver, devs in by_driver.items())


@dataclass(frozen=True, slots=True)
class Notice:
    """One hint of the report's summary: ``level`` ``note`` or ``warning``, a stable ``kind``, the text; for an
    unhonoured field also the ``field`` path and the ``pod`` (``namespace/name``) or the PodGroup (``group``,
    ``namespace/name``) that sets it."""

    level: str
    kind: str
    message: str
    pod: str | None = None
    field: str | None = None
    group: str | None = None


def _notice_lines(found: Sequence[Notice]) -> list[str]:
    """The summary's lines: one per notice, but one per finding for the same field not honoured on several pods — the
    members of one gang written alike — naming the first :data:`MAX_NAMED` (``warning: pods ml/w-0, ml/w-1 and 58
    more: spec.priorityClassName: …``). The JSON keeps a warning per pod."""
    by_finding: dict[tuple[str, str], list[str]] = {}
    order: list[Notice | tuple[str, str]] = []
    for n in found:
        prefix = f"pod {n.pod}: "
        if n.kind == UNHONOURED and n.pod is not None and n.message.startswith(prefix):
            finding = (n.level, n.message.removeprefix(prefix))
            if finding not in by_finding:
                by_finding[finding] = []
                order.append(finding)
            by_finding[finding].append(n.pod)
        else:
            order.append(n)
    lines = []
    for item in order:
        if isinstance(item, Notice):
            lines.append(f"{item.level}: {item.message}")
            continue
        pods = by_finding[item]
        who = f"pod {pods[0]}" if len(pods) == 1 else f"pods {first_named(pods, MAX_NAMED)}"
        lines.append(f"{item[0]}: {who}: {item[1]}")
    return lines


MAX_NAMED = 5
"""Objects a note that lists them names (the rest counted): bound pods on a node the snapshot lacks, Jobs of ours
that made no pod."""


_DIGITS = re.compile(r"(\d+)")


def _by_name(name: str) -> tuple[str | int, ...]:
    """Sort key that orders the numbers inside names by value: ``w-2`` before ``w-10``, as a reader expects of a
    Job's or StatefulSet's ordinal pods and of numbered nodes."""
    return tuple(int(part) if i % 2 else part for i, part in enumerate(_DIGITS.split(name)))


def _named(items: list[str]) -> str:
    """The first :data:`MAX_NAMED` of ``items``, then how many more."""
    return first_named(items, MAX_NAMED)


def notices(sim: Simulation) -> list[Notice]:
    """The hints under the summary, for both renderings: no pod of ours found, or no Node to place them on; DRA
    objects of another version skipped; bound pods on a node the snapshot lacks; DRA problems (listed in full under
    their own heading / key); claims made from templates; ephemeral volumes' PVCs made from pods' templates; then
    one warning per field a pending pod sets that no plugin honours. Objects of a kind we read under another
    apiVersion (scheduler-plugins' older ``scheduling.sigs.k8s.io`` PodGroup, an old Workload) get a
    ``skipped-api-version`` warning each."""
    out: list[Notice] = []
    if not sim.pods:  # sim.pods holds every pending pod of ours
        found = ", ".join(f"{name} ({n})" for name, n in sorted(sim.pods_by_scheduler.items(),
                                                                key=lambda kv: (-kv[1], kv[0])))
        others = f"pending pods by schedulerName: {found}" if found else "no pod is pending"
        out.append(Notice("note", "no-pods-of-ours",
                          f'no pending pod has spec.schedulerName "{sim.scheduler_name}" ({others})'))
    elif sim.initial is not None and not len(sim.initial.table):  # a workload file given alone
        out.append(Notice("note", "no-nodes", "the snapshot has no Node, so no pod can be placed: give the "
                                              "cluster's nodes too (kubectl get nodes -o json), or ask the cluster "
                                              "itself with --from-cluster --add FILE"))
    other = sorted({kind.split()[0] for kind in sim.skipped if kind.startswith(f"{DRA_GROUP}/")})
    if other:
        count = sum(n for kind, n in sim.skipped.items() if kind.startswith(f"{DRA_GROUP}/"))
        out.append(Notice("warning", "skipped-api-version", f"{count} {DRA_GROUP} object(s) of {', '.join(other)} "
                                                            f"skipped (only {DRA_VERSION} is read)"))
    read_as: dict[str, list[str]] = {}
    for version, kind in KINDS:
        read_as.setdefault(kind, []).append(version)
    for key, count in sorted(sim.skipped.items()):  # e.g. scheduler-plugins' older scheduling.sigs.k8s.io PodGroup
        version, _, kind = key.partition(" ")
        if kind in read_as and not version.startswith(f"{DRA_GROUP}/"):
            names = sorted(f"{ns}/{name}" if ns else name for (k, ns, name), v in sim.unread.items()
                           if (k, v) == (kind, version))
            out.append(Notice("warning", "skipped-api-version",
                              f"{count} {version} {kind} object(s) skipped (a {kind} is read only as "
                              f"{', '.join(sorted(read_as[kind]))}; it is not ours): {', '.join(names)}"))
    for line in sim.jobs:
        out.append(Notice("note", "job-expanded", line))
    if sim.jobs_not_made:
        out.append(Notice("note", "job-expanded", f"{len(sim.jobs_not_made)} workload(s) of ours not made into pods: "
                                                  f"{_named(sim.jobs_not_made)}"))
    if sim.workloads_not_ours:
        out.append(Notice("note", "workload-not-ours",
                          f"{len(sim.workloads_not_ours)} workload(s) given without their pods are not ours, so "
                          f"none of their pods was made: {_named(sim.workloads_not_ours)}; to make one ours, set "
                          f'its pod templates\' schedulerName to "{sim.scheduler_name}", or label it '
                          'gang-scheduler.io/gang: "true" with templates that name no scheduler'))
    if sim.unexpanded:
        out.append(Notice("note", "workload-not-expanded",
                          f"{len(sim.unexpanded)} workload(s) not made into pods, as simulate makes the pods of "
                          f"{EXPANDED_TEXT} only: {_named(sim.unexpanded)}; give the pods (and groups) their "
                          "controllers would make"))
    if sim.off_snapshot:
        shown = _named([f"{pod} on {node}" for pod, node in sim.off_snapshot])
        out.append(Notice("warning", "bound-to-unknown-node",
                          f"{len(sim.off_snapshot)} pod(s) bound to a node the snapshot does not hold ({shown}): "
                          "they take no node's room, and a group's bound pods still count toward its minCount; "
                          "give the snapshot those nodes (kubectl get nodes -o json)"))
    for problem in sim.load_warnings:
        out.append(Notice("warning", UNHONOURED_OBJECT, f"{problem} (not honoured)"))
    for problem, path in sim.unknown:
        ident = f"{problem.namespace}/{problem.name}"
        out.append(Notice("warning", UNKNOWN_FIELD if path else UNKNOWN_KIND, str(problem), field=path,
                          pod=ident if path and problem.kind == "Pod" else None,
                          group=ident if path and problem.kind != "Pod" else None))
    if sim.dra_problems:
        out.append(Notice("warning", "dra-problems",
                          f"{len(sim.dra_problems)} DRA problem(s), listed under \"DRA problems\" (JSON: "
                          "dra_problems)"))
    if sim.synthesized:
        out.append(Notice("note", "synthesized-claims",
                          f"{len(sim.synthesized)} ResourceClaim(s) not in the snapshot made from their "
                          "ResourceClaimTemplate, as the resourceclaim controller would"))
    if sim.synthesized_volume_claims:
        out.append(Notice("note", "synthesized-volume-claims",
                          f"{len(sim.synthesized_volume_claims)} PersistentVolumeClaim(s) of generic ephemeral "
                          "volumes not in the snapshot made from the pods' templates, as the ephemeral volume "
                          "controller would"))
    for pod, finding in sim.unhonoured:
        out.append(Notice("warning", UNHONOURED, f"pod {pod.key}: {finding} (not honoured)", pod.key, finding.field))
    for group, finding in sim.unhonoured_groups:
        md = group.metadata
        out.append(Notice("warning", UNHONOURED,
                          f"{group.api_version} {group.kind} {md.namespace}/{md.name}: {finding} (not honoured)",
                          field=finding.field, group=f"{md.namespace}/{md.name}"))
    return out


def _utilisation(sim: Simulation, initial: Snapshot, final: Snapshot) -> str:
    """Per node and resource ``used/allocatable +added −evicted pct``: what this run placed and what its preemptions
    evicted, each shown (a node whose victims were swapped for new pods reads ``8/8 +8 −8``, not an unchanged 8/8).
    Columns: cpu, memory, ``ephemeral-storage`` and ``hugepages-<size>`` when a node offers them and some pod uses
    them or a pending pod of ours asks for them (placed or left pending), and every extended resource a node offers."""
    table = final.table
    moved = _moves(sim, final)
    asked = {r for p in sim.pods for r, v in p.pod.requests.items() if v > 0}  # placed or left pending
    storage = [r for r in table.resources if (r == EPHEMERAL_STORAGE or r.startswith(HUGEPAGES_PREFIX))
               and (r in asked or np.any(final.used[:, table.column[r]] > 0)
                    or np.any(moved[1][:, table.column[r]] > 0))]
    ext = [r for r in table.resources if is_extended(r) and np.any(table.allocatable[:, table.column[r]] > 0)]
    cols = [CPU, MEMORY, *storage, *ext]
    header = f"{'node':<16}" + "".join(f"  {c:>30}" for c in cols)
    lines = ["Node utilisation (used/allocatable after placement; +N = added by this run, −N = evicted by its "
             "preemptions):", header]
    for i, node in sorted(enumerate(table.nodes), key=lambda row: _by_name(row[1].name)):
        cells = []
        for r in cols:
            j = table.column.get(r)
            if j is None:
                cells.append(f"  {'-':>30}")
                continue
            alloc, used = int(table.allocatable[i, j]), int(final.used[i, j])
            if alloc == 0:
                cells.append(f"  {'-':>30}")
                continue
            added, evicted = int(moved[0][i, j]), int(moved[1][i, j])
            delta = (f" +{format_units(r, added)}" if added else "") + (f" −{format_units(r, evicted)}" if evicted
                                                                       else "")
            text = f"{format_units(r, used)}/{format_units(r, alloc)}{delta} {_pct(used, alloc)}"
            cells.append(f"  {text:>30}")
        lines.append(f"{node.name:<16}" + "".join(cells) + _node_state(node))
    return "\n".join(lines)


def _node_marks(node: Node) -> list[str]:
    """Why a node takes no new pods: ``cordoned``, ``Ready=False`` / ``Ready=Unknown``; empty when it takes them."""
    marks = ["cordoned"] if node.spec.unschedulable else []
    ready = node.condition("Ready")
    if ready is not None and ready.status != "True":
        marks.append(f"Ready={ready.status}")
    return marks


def _node_state(node: Node) -> str:
    """``  (cordoned)`` / ``  (Ready=False)`` after a node's row: why free room there was not used."""
    marks = _node_marks(node)
    return f"  ({', '.join(marks)})" if marks else ""


def _device_utilisation(initial: DraView, final: DraView) -> list[str]:
    """Devices allocated/published per node (node-local slices) and per pool of node-set or all-node
    slices, before and after this run; ``free`` counts devices still allocatable (not allocated, and
    enough left of every shared counter they consume; a shared device while some of its capacity is left).
    A shared device (``allowMultipleAllocations``) counts as allocated once any share of it is."""
    inventory = final.inventory
    state = inventory.state(final.assumed)
    before = {u.device for u in (*initial.inventory.allocated, *initial.assumed) if u.takes}
    rows: dict[tuple[int, str, str], list[int]] = {}
    elsewhere = 0
    for dev_id, device in sorted(inventory.devices.items()):
        scope = inventory.scope.get(dev_id)
        if isinstance(scope, str):
            if scope not in inventory.table.index:
                elsewhere += 1
                continue
            key = (0, scope, device.driver)
        else:
            kind = "node set" if isinstance(scope, NodeSelector) else "all nodes"
            key = (1, f"{device.pool} ({kind})", device.driver)
        counts = rows.setdefault(key, [0, 0, 0, 0])
        counts[0] += 1
        counts[1] += dev_id in before
        counts[2] += dev_id in state.taken or dev_id in state.shares
        counts[3] += state.fits(device) and (not device.shared or state.fullness(device) < 1)
    if not rows:
        return []
    lines = ["Devices (allocated/published after placement; +N = added by this run; free = still allocatable):"]
    width = max(len(name) for _, name, _ in rows)
    dwidth = max(len(driver) for _, _, driver in rows)
    for (_, name, driver), (total, was, now, free) in sorted(rows.items()):
        added = f" +{now - was}" if now > was else ""
        lines.append(f"{name:<{width}}  {driver:<{dwidth}}  {f'{now}/{total}{added}':>10}  free {free}")
    if elsewhere:
        lines.append(f"({elsewhere} device(s) of node-local slices name nodes not in the snapshot)")
    return lines
