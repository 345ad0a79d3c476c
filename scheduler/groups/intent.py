"""Durable intent: the plan of a gang, recorded on its PodGroups before the first bind (issue 12).

Before any claim write or bind of a plan, the live binder writes, on every PodGroup the plan places
members of, the annotation :data:`INTENT_ANNOTATION` holding
``{"plan": token, "pods": {pod name: {"node": node, "uid": uid}}}`` for that PodGroup's members in the
plan. A restarted scheduler, or the next leader, reads it back from the PodGroup alone (the tree's
:attr:`~scheduler.groups.tree.Leaf.intended`): a tree with members bound but not satisfied is
*partial* (:attr:`~scheduler.groups.tree.GroupTree.partial`), and the nodes its intent names for its
pending members are held for it against every root of lower or equal priority — as room nominated by
preemption is held (:class:`~scheduler.framework.snapshot.Nominated`) — until it is satisfied or
torn down (architecture §14).

Why an annotation on the PodGroup rather than ``status.nominatedNodeName`` on every member (what
kube-scheduler uses for preemption): one write per PodGroup instead of one per pod before the first
bind — a 64-pod gang's half-bound window and write load — and one write is all or nothing: a crash
cannot leave half the members nominated. The pods' UIDs are kept so a member recreated under the same
name (a new incarnation) is not held for.

Pure: parsing and formatting. The group index reads it into trees; the live binder writes it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from scheduler.model.pod import Pod
from scheduler.model.scheduling import PodGroup

INTENT_ANNOTATION = "gang-scheduler.io/intent"
"""The PodGroup annotation holding the durable intent of the last plan that placed its members."""

NO_INTENT: Mapping[str, tuple[str, str]] = MappingProxyType({})


def parse_intent(group: PodGroup) -> Mapping[str, tuple[str, str]]:
    """Pod name → (node, uid) of the intent recorded on ``group``; empty when there is none.

    A malformed value (not ours, or hand-edited) reads as no intent: it can only hold room, so
    ignoring it never binds anything wrongly.
    """
    text = group.metadata.annotations.get(INTENT_ANNOTATION)
    if not text:
        return NO_INTENT
    try:
        pods = json.loads(text).get("pods") or {}
        return {str(name): (str(v["node"]), str(v.get("uid") or "")) for name, v in pods.items()}
    except (ValueError, TypeError, KeyError, AttributeError):
        return NO_INTENT


def intended_node(intent: Mapping[str, tuple[str, str]], pod: Pod) -> str | None:
    """The node ``intent`` names for ``pod``; None when it names no pod of that name, or another incarnation."""
    entry = intent.get(pod.metadata.name)
    if entry is None or (entry[1] and pod.metadata.uid and entry[1] != pod.metadata.uid):
        return None
    return entry[0]


def intent_annotation(plan: str, placements: Iterable[tuple[Pod, str]]) -> str:
    """The annotation value recording that plan ``plan`` places each (pod, node) of ``placements``."""
    pods = {pod.metadata.name: {"node": node, "uid": pod.metadata.uid} for pod, node in placements}
    return json.dumps({"plan": plan, "pods": dict(sorted(pods.items()))}, separators=(",", ":"))
