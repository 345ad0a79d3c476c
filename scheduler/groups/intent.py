"""Durable intent: the plan of a gang, recorded on its PodGroups before the first bind.

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

Size. The API server refuses an object whose annotations together exceed 256 KiB
(``TotalAnnotationSizeLimitB``, apimachinery ``ValidateAnnotations``), and at ~110 bytes per member a
plain intent passes that limit near 2,400 pods. So a pod's uid is kept as its first
:data:`UID_PREFIX` characters (enough to tell incarnations apart), an intent over
:data:`PLAIN_MAX_BYTES` is stored zlib-compressed and base64-encoded behind ``zlib:`` (~14 bytes per
member), and one that is still over :data:`INTENT_MAX_BYTES` (leaving the rest of the 256 KiB to
other annotations) is not recorded: :func:`intent_annotation` returns None and the binder removes any
older intent, so such a gang (over ~9,000 members) is scheduled without durable intent.

Reading is bounded, because anyone who may edit a PodGroup can write the annotation: a value over
:data:`INTENT_MAX_BYTES`, one that inflates past :data:`INFLATED_MAX_BYTES`, nesting deeper than the
decoder's limit (``"[" * 60000`` raises :class:`RecursionError` in :func:`json.loads`) or any shape but
``{"pods": {name: {"node": str, "uid": str}}}`` is invalid (:func:`intent_problem` says why) and reads as
no intent. Each distinct value is decoded once (:data:`_DECODED_CACHE` values kept), since the cache reads the
intent of the old and the new object of every PodGroup event.

Pure: parsing and formatting. The group index reads it into trees; the live binder writes it.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import zlib
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from scheduler.model.pod import Pod
from scheduler.model.scheduling import PodGroup

INTENT_ANNOTATION = "gang-scheduler.io/intent"
"""The PodGroup annotation holding the durable intent of the last plan that placed its members."""

UID_PREFIX = 8
"""Characters of a pod's uid kept in an intent (32 random bits of a UUID: a recreated pod's differ)."""
PLAIN_MAX_BYTES = 32 * 1024
"""An intent up to this size is stored as readable JSON, a larger one compressed."""
INTENT_MAX_BYTES = 128 * 1024
"""The largest intent recorded: half of the API server's 256 KiB for all annotations of an object."""
COMPRESSED = "zlib:"
"""Prefix of a compressed intent: base64 of the zlib-compressed JSON follows."""
INFLATED_MAX_BYTES = 16 * 1024 * 1024
"""The most a compressed intent may inflate to: a hand-made value cannot make us inflate without bound."""
_DECODED_CACHE = 64
"""Distinct annotation values whose decoding is remembered (one per PodGroup with an intent, in practice)."""

NO_INTENT: Mapping[str, tuple[str, str]] = MappingProxyType({})


def parse_intent(group: PodGroup) -> Mapping[str, tuple[str, str]]:
    """Pod name → (node, uid prefix) of the intent recorded on ``group``; empty when there is none.

    A malformed value (not ours, hand-edited, too large or too deeply nested: :func:`intent_problem`) reads
    as no intent: it can only hold room, so ignoring it never binds anything wrongly. Never raises.
    """
    text = group.metadata.annotations.get(INTENT_ANNOTATION)
    return _decode(text)[0] if text else NO_INTENT


def intent_problem(group: PodGroup) -> str | None:
    """Why the intent annotation on ``group`` is invalid (and read as none); None when it is valid or absent."""
    text = group.metadata.annotations.get(INTENT_ANNOTATION)
    return _decode(text)[1] if text else None


@functools.lru_cache(maxsize=_DECODED_CACHE)
def _decode(text: str) -> tuple[Mapping[str, tuple[str, str]], str | None]:
    """(pod name → (node, uid prefix), None) for a valid annotation value; (:data:`NO_INTENT`, why) otherwise."""
    if len(text) > INTENT_MAX_BYTES:
        return NO_INTENT, f"{INTENT_ANNOTATION} is {len(text)} characters, over the limit of {INTENT_MAX_BYTES}"
    try:
        if text.startswith(COMPRESSED):
            inflater = zlib.decompressobj()
            raw = inflater.decompress(base64.b64decode(text[len(COMPRESSED):], validate=True), INFLATED_MAX_BYTES)
            if inflater.unconsumed_tail:
                return NO_INTENT, f"{INTENT_ANNOTATION} inflates past {INFLATED_MAX_BYTES} bytes"
            text = raw.decode()
        pods = json.loads(text).get("pods") or {}
        intent = {str(name): (_text(v["node"]), _text(v.get("uid") or "")) for name, v in pods.items()}
    except RecursionError:
        return NO_INTENT, f"{INTENT_ANNOTATION} is nested too deeply"
    except (ValueError, TypeError, KeyError, AttributeError, binascii.Error, zlib.error) as exc:
        return NO_INTENT, f"{INTENT_ANNOTATION} is not a valid intent ({type(exc).__name__})"
    return MappingProxyType(intent), None


def _text(value: object) -> str:
    """``value`` if it is a string; raises TypeError otherwise (a node name or uid that is not one is invalid)."""
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def intended_node(intent: Mapping[str, tuple[str, str]], pod: Pod) -> str | None:
    """The node ``intent`` names for ``pod``; None when it names no pod of that name, or another incarnation."""
    entry = intent.get(pod.metadata.name)
    if entry is None or (entry[1] and pod.metadata.uid and not pod.metadata.uid.startswith(entry[1])):
        return None
    return entry[0]


def intent_entries(placements: Iterable[tuple[Pod, str]]) -> dict[str, tuple[str, str]]:
    """Pod name → (node, uid prefix) for ``placements`` (pod, node): what :func:`parse_intent` reads back from
    :func:`intent_annotation` of the same placements."""
    return {pod.metadata.name: (node, pod.metadata.uid[:UID_PREFIX]) for pod, node in placements}


def intent_annotation(plan: str, placements: Iterable[tuple[Pod, str]]) -> str | None:
    """The annotation value recording that plan ``plan`` places each (pod, node) of ``placements``: JSON up
    to :data:`PLAIN_MAX_BYTES`, else compressed; None when even that exceeds :data:`INTENT_MAX_BYTES`."""
    pods = {name: {"node": node, "uid": uid} for name, (node, uid) in sorted(intent_entries(placements).items())}
    text = json.dumps({"plan": plan, "pods": pods}, separators=(",", ":"))
    if len(text.encode()) <= PLAIN_MAX_BYTES:
        return text
    packed = COMPRESSED + base64.b64encode(zlib.compress(text.encode(), 9)).decode()
    return packed if len(packed) <= INTENT_MAX_BYTES else None
