"""Why a group did not fit: the per-node verdicts and the group messages built on them.

Every reason the search gives is built here, from one source: the Filter verdicts for the next member that
did not fit, counted over the nodes the attempt could use — kube-scheduler's ``FitError`` histogram
(``0/N nodes are available: 3 Insufficient cpu, 1 node(s) had untolerated taint {…}.``,
``pkg/scheduler/framework/types.go``, v1.37) with the group's head in front (``gang g: 3/8 placeable
(minCount 8)``). A group with a topology key is judged the same way inside the domain that came closest (the
attempt that placed the most members), and the reason names that domain (KEP-5732: each placement is tried with
the default algorithm on its nodes). Resource arithmetic over a domain (``4 cpu free on the 3 node(s) passing
every other filter, 8 needed``) is quoted only when room was all the members lacked: it sums the nodes that pass
every filter but NodeResourcesFit, and only when every node passing the static filters is one of them, so a
taint or a rule between pods is never read as a shortage of room.

Pure: reads the cycle state, changes nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Signature
from scheduler.framework.node_table import BoolArray, IntArray, NodeTable
from scheduler.framework.status import Code, format_histogram
from scheduler.groups.tree import Composite, Group, Leaf
from scheduler.model.quantity import format_units
from scheduler.solver.plugins import Profile, resources_fit

NO_ROWS: IntArray = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """The verdicts for the next copy of a signature that did not fit.

    ``message``: the node histogram (and the solve's DRA selector errors); ``limited``: some node refused with
    code UNSCHEDULABLE (removing pods could help: preemption may be tried); ``rejectors``: the plugins that
    refused a node (the queueing hints key on them); ``short_of_room``: when room was the only thing the nodes
    passing the static filters lacked — each refused by NodeResourcesFit alone, every other Filter letting the
    copy there — those rows, ``(k,)``; empty otherwise.
    """

    message: str
    limited: bool
    rejectors: frozenset[str] = field(default_factory=frozenset)
    short_of_room: IntArray = field(default_factory=lambda: NO_ROWS)


@dataclass(frozen=True, slots=True)
class Domain:
    """The topology domain a group is being placed in: its ``key`` (node label), ``value``, and ``count``, how many
    domains of that key the group could choose from; ``by_room``: chosen as the closest by room, every domain being
    short of it (``scheduler.solver.domains``), rather than one tried in turn; ``together``: besides, the domains'
    nodes hold the group's need together — for a gang, as many copies of its members' smallest requests (per
    resource) as it needs members, each on one node — so the
    constraint, not the cluster, is what is short."""

    key: str
    value: str
    count: int
    by_room: bool = False
    together: bool = False


def phrase(where: Domain | None, closest: bool, placed: int | None = None) -> str:
    """`` in topology.kubernetes.io/zone a`` for a reason given inside ``where`` (empty outside a domain) — with
    `` (best of 2 domains)`` when ``closest`` (a failure's text: the one kept is the attempt that placed the
    most members, the first of equals) and there was a choice; `` (one of 2 domains)`` instead when the attempt
    placed nothing (``placed``: members, or satisfied children, it placed) in a domain not chosen for its room (not
    :attr:`Domain.by_room`): a failure is kept only where an attempt fell short, so an attempt that placed nothing
    says nothing of the domains tried after it (one may have held the group whole) or not tried at all."""
    if where is None:
        return ""
    text = f" in {where.key} {where.value}"
    if not closest or where.count < 2:
        return text
    return f"{text} (one of {where.count} domains)" if placed == 0 and not where.by_room else \
        f"{text} (best of {where.count} domains)"


def diagnose(state: CycleState, profile: Profile, sig: Signature, mask: BoolArray, need: int = 0) -> Diagnosis:
    """The node histogram for the next copy of ``sig`` within ``mask`` (``(N,)``: the nodes the attempt may use).

    Static rejections count their reasons. The nodes passing them go through the Filter plugins in order, each
    node counted under the first plugin that refuses it, as kube's framework stops at the first failing Filter
    (a plugin may count several reasons per node: one ``Insufficient <r>`` per short resource). Nodes every
    Filter allows where Reserve still placed nothing count under the profile's ``short_reserve`` reason (DRA's);
    that plugin's detail on every node it refused (DRA's device counts) follows the histogram, and so does a
    sentence naming the requested resources no node offers at all (``No node offers example.com/fpga.``: kube says
    only ``Insufficient``, which reads as a shortage when the name is mistyped or no device plugin runs).
    The nodes NodeResourcesFit refuses are also asked of the Filters after it (not counted), to find whether
    room alone was short. ``need``: for a gang whose pending members are all of ``sig``'s shape, the members it
    still needs (its minimum less those bound), else 0; when a Filter's rule between copies of ``sig`` lets the
    nodes hold fewer than that, whatever their room, a sentence says so (:func:`copies_bound`) — the histogram
    counts each node under its first failing Filter only — and the room they lack is not quoted
    (:attr:`Diagnosis.short_of_room` empty): no room would do.
    """
    counts: Counter[str] = Counter()
    rejectors: set[str] = set()
    for row, status in sig.static.rejected.items():
        if mask[row]:
            counts.update(status.reasons)
            rejectors.add(status.plugin)
    allowed = mask & sig.static.ok if sig.nodes is None else mask & sig.static.ok & sig.nodes
    rows = np.flatnonzero(mask & sig.static.ok)
    room_only = NO_ROWS
    limited = False
    short = profile.short_reserve
    short_rows = [NO_ROWS]
    """The nodes the short-reserve plugin refused, as a Filter or in Reserve (its detail is about them)."""
    for plugin in profile.filters:
        if room_only.size:
            others = plugin.filter(state, sig, room_only)
            if others is not None:
                room_only = room_only[others > 0]
        if not rows.size:
            continue
        caps = plugin.filter(state, sig, rows)
        if caps is None:
            continue
        refused = caps <= 0
        if refused.any():
            found = plugin.rejections(state, sig, rows[refused])
            if found.counts:
                counts.update(found.counts)
                rejectors.add(plugin.name)
                limited |= found.code is Code.UNSCHEDULABLE
            if plugin.name == resources_fit.NAME:
                room_only = rows[refused]
            if short is not None and plugin.name == short.name:
                short_rows.append(rows[refused])
        rows = rows[~refused]
    if rows.size and short is not None:
        counts[short.shortfall_reason()] += int(rows.size)
        rejectors.add(short.name)
        limited = True
        short_rows.append(rows)
    message = format_histogram(int(mask.sum()), counts)
    if sig.unknown and resources_fit.NAME in rejectors:  # "Insufficient" of what no node has: a typo, a missing plugin
        message += f" No node offers {', '.join(sig.unknown)}."
    refused_rows = np.concatenate(short_rows)
    if short is not None and refused_rows.size and (detail := short.shortfall_detail(state, sig, refused_rows)):
        message += " " + detail
    if notes := profile.notes(state):
        message += " " + "; ".join(notes)
    bounded = copies_bound(state, profile, sig, allowed, need)
    short_of_room = room_only if room_only.size == int(allowed.sum()) and allowed[room_only].all() else NO_ROWS
    if bounded:
        message += bounded
        short_of_room = NO_ROWS
    return Diagnosis(message, limited, frozenset(rejectors), short_of_room)


def copies_bound(state: CycleState, profile: Profile, sig: Signature, allowed: BoolArray, need: int) -> str:
    """`` Its own required pod anti-affinity allows one of these pods per kubernetes.io/hostname: at most 4 on the
    4 node(s) it may use here, 8 needed.`` when a Filter's rule between copies of ``sig``
    (:attr:`~scheduler.solver.plugins.Profile.capped_filters`, the rule in its own words) lets ``allowed`` (``(N,)``:
    the nodes the copies may use) hold fewer than ``need`` of them (the members a gang of this one shape still
    needs) however much room they have; empty otherwise, and at once for ``need`` 0. What no added resource and no
    eviction of other pods would lift, where kube's histogram names each node's first failing Filter only."""
    if need <= 0 or not profile.capped_filters:
        return ""
    rows = np.flatnonzero(allowed)
    for plugin in profile.capped_filters:
        if (bound := plugin.most_copies(state, sig, rows)) is not None and bound[1] < need:
            rule, most = bound
            return f" {rule}: at most {most} on the {rows.size} node(s) it may use here, {need} needed."
    return ""


def describe(group: Group) -> str:
    """``gang g`` / ``group g`` (basic) / ``composite c`` / ``pod p``: how a message names a group."""
    if isinstance(group, Composite):
        return f"composite {group.name}"
    if group.key.kind == "Pod":
        return f"pod {group.name}"
    return f"gang {group.name}" if group.min_count is not None else f"group {group.name}"


def leaf_message(leaf: Leaf, placed: int, nodes: str, verb: str, context: str = "") -> str:
    """``gang g: 3/8 placeable (minCount 8)[ in <key> <value> …][: room]; 0/12 nodes are available: …``.

    ``placed``: pending members placed by the attempt (bound members are added); ``nodes``: the node histogram
    for the first member that did not fit; ``verb``: ``placeable`` for the best failed attempt, ``placed`` for
    the leaf's placement in the final plan; ``context``: the domain's :func:`phrase` and the room it lacked
    (:func:`room_short`), empty outside a topology domain. A lone pod (never in a domain: it has no topology
    key and no parent) is reported by the histogram alone.
    """
    if leaf.key.kind == "Pod":
        return nodes
    total, members = placed + len(leaf.bound), len(leaf.pending) + len(leaf.bound)
    head = f"{describe(leaf)}: {total}/{members} {verb}"
    if leaf.min_count is not None:
        head += f" (minCount {leaf.min_count})"
    head += context
    return f"{head}; {nodes}" if nodes else head


def room_together(where: Domain | None) -> str:
    """After :func:`room_short`'s text when every domain is short but they hold the need together:
    ``; the 2 topology.kubernetes.io/zone domains have that room together, not one of them`` (else empty)."""
    if where is None or not where.together:
        return ""
    return f"; the {where.count} {where.key} domains have that room together, not one of them"


def room_short(table: NodeTable, free: IntArray, rows: IntArray, need: IntArray) -> str:
    """``: 4 cpu free on the 3 node(s) passing every other filter (at most 2 on one), 8 needed`` — or empty when
    those nodes have room.

    ``free``: ``(N, R)`` free capacity before the attempt (an overcommitted node counts as none); ``rows``: the
    domain's nodes, when room alone was short on all it could use (:attr:`Diagnosis.short_of_room`); ``need``:
    the group's lower-bound need, ``(R,)``. Quotes the resource the group needs the largest share of; empty when
    ``rows`` is empty or holds ``need`` in every resource (the members then failed on how the room is split
    among nodes).
    """
    cols = np.flatnonzero(need > 0)
    if not rows.size or not cols.size:
        return ""
    room = np.maximum(free[np.ix_(rows, cols)], 0)
    have = room.sum(axis=0)
    if bool((have >= need[cols]).all()):
        return ""
    j = int(np.argmax(need[cols] / np.maximum(have, 1)))
    resource = table.resources[cols[j]]
    most = f" (at most {format_units(resource, int(room[:, j].max()))} on one)" if len(rows) > 1 and have[j] else ""
    return (f": {format_units(resource, int(have[j]))} {resource} free on the {len(rows)} node(s) passing every "
            f"other filter{most}, {format_units(resource, int(need[cols[j]]))} needed")


def clauses(parts: Iterable[str]) -> str:
    """``parts`` (reasons) joined by ``"; "``, each but the last without its closing full stop — kube's node histogram
    ends with one: ``…: 4 Insufficient cpu; pod b-0: 0/4 nodes are available: …``, never ``cpu.; pod b-0``."""
    items = list(parts)
    return "; ".join([p[:-1] if p.endswith(".") else p for p in items[:-1]] + items[-1:])
