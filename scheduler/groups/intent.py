"""Durable intent: the plan of a gang, carried on the Bindings of its members.

A gang is bound one ``pods/binding`` call per member (there is no group bind), so a failed bind, a crash or a lost
lease can leave it bound below its minimum. The plan must then outlive the process that made it: whoever schedules
next holds the nodes it chose for the members still pending, rather than giving that room away. So each Binding of
a plan carries the annotation :data:`INTENT_ANNOTATION` holding
``{"plan": token, "at": time, "pods": {pod name: {"node": node, "uid": uid}}}`` for every member the plan places,
and the API server merges a Binding's annotations into the pod in the same storage update that sets its node
(``BindingREST``, ``pkg/registry/core/pod/storage``): no member is bound without the plan on it. A plan whose
annotation is at most :data:`SHARED_MAX_BYTES` goes on every Binding, and its binds go out side by side; a larger one
goes on the first member's Binding alone, and the other binds start once that one has landed, the next two carrying it
too (``binding.pods``). An
intent matters only once a member is bound (a gang with none bound holds nothing), so none is written before.

A restarted scheduler, or the next leader, reads it back from the bound members (:func:`held_intent`): a tree with
members bound but not satisfied is *partial* (:attr:`~scheduler.groups.tree.GroupTree.partial`), and the nodes the
latest plan recorded on its bound members names for its pending members are held for it against every root of lower
or equal priority — as room nominated by preemption is held (:class:`~scheduler.framework.snapshot.Nominated`) —
until it is satisfied or torn down (architecture §14). Plans are told apart by ``at`` (the time the plan was
bound, RFC 3339 with microseconds): a later plan for the same pod wins. The pods' UIDs are kept so a member
recreated under the same name (a new incarnation) is not held for.

Why on the Bindings rather than a write of its own (an annotation on the PodGroup, or ``status.nominatedNodeName``
on every member, what kube-scheduler uses for preemption): no request and no watch event more than the binds, and no
round trip before them; the record exists exactly when it matters — when a member is bound.

Size. The API server refuses an object whose annotations together exceed 256 KiB
(``TotalAnnotationSizeLimitB``, apimachinery ``ValidateAnnotations``), and at ~50 bytes per member a
plain intent passes that limit near 5,000 pods. So a pod's uid is kept as its first
:data:`UID_PREFIX` characters (enough to tell incarnations apart), an intent over
:data:`PLAIN_MAX_BYTES` is stored zlib-compressed and base64-encoded behind ``zlib:`` (~14 bytes per
member), and one that is still over :data:`INTENT_MAX_BYTES` (leaving the rest of the 256 KiB to
other annotations) is not recorded: :func:`intent_annotation` returns None, and such a gang (over ~9,000 members) is
bound without durable intent.

Reading is bounded, because anyone who may edit a pod can write the annotation: a value over
:data:`INTENT_MAX_BYTES`, one that inflates past :data:`INFLATED_MAX_BYTES`, nesting deeper than the
decoder's limit (``"[" * 60000`` raises :class:`RecursionError` in :func:`json.loads`) or any shape but
``{"at": str, "pods": {name: {"node": str, "uid": str}}}`` is invalid (:func:`intent_problem` says why) and reads as
no intent. Each distinct value is decoded once (:data:`_DECODED_CACHE` values kept): every bound member of a small
gang carries the same one.

Pure: parsing and formatting. The cache reads it into held room; the Bind plugin writes it.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import zlib
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import NamedTuple

from scheduler.model.pod import PodReads

INTENT_ANNOTATION = "gang-scheduler.io/intent"
"""The pod annotation, set by the Binding that bound it, holding the plan that placed it and its gang's other
members."""

UID_PREFIX = 8
"""Characters of a pod's uid kept in an intent (32 random bits of a UUID: a recreated pod's differ)."""
SHARED_MAX_BYTES = 1024
"""An intent up to this size (about 20 members) is carried by every Binding of its plan, else by the first only."""
PLAIN_MAX_BYTES = 32 * 1024
"""An intent up to this size is stored as readable JSON, a larger one compressed."""
ANNOTATIONS_MAX_BYTES = 256 * 1024
"""The most all annotations of an object may hold together, keys and values (apimachinery
``TotalAnnotationSizeLimitB``): a pod past it has every later update refused, its kubelet's status included."""
INTENT_MAX_BYTES = ANNOTATIONS_MAX_BYTES // 2
"""The largest intent recorded: half of the API server's 256 KiB for all annotations of an object."""
COMPRESSED = "zlib:"
"""Prefix of a compressed intent: base64 of the zlib-compressed JSON follows."""
INFLATED_MAX_BYTES = 16 * 1024 * 1024
"""The most a compressed intent may inflate to: a hand-made value cannot make us inflate without bound."""
_DECODED_CACHE = 256
"""Distinct annotation values whose decoding is remembered (one per plan of a gang partly bound, in practice)."""


class Intent(NamedTuple):
    """One recorded plan: when it was bound (``at``, RFC 3339; later plans sort after earlier ones) and pod key
    (``namespace/name``) → (node, uid prefix) for each member it places."""

    at: str
    pods: Mapping[str, tuple[str, str]]


NO_INTENT: Mapping[str, tuple[str, str]] = MappingProxyType({})

SHAPE = '{"at": string, "pods": {pod name: {"node": string, "uid": string}}}'
"""The shape an intent must have (``"plan"``, the plan's name, and any other key are not read)."""


def parse_intent(pod: PodReads) -> Intent | None:
    """The intent recorded on ``pod`` (its namespace is the plan's); None when there is none.

    A malformed value (not ours, hand-edited, too large or too deeply nested: :func:`intent_problem`) reads
    as no intent: it can only hold room, so ignoring it never binds anything wrongly. Never raises.
    """
    text = pod.metadata.annotations.get(INTENT_ANNOTATION)
    return _decode(pod.metadata.namespace, text)[0] if text else None


def intent_problem(pod: PodReads) -> str | None:
    """Why the intent annotation on ``pod`` is invalid (and read as none); None when it is valid or absent."""
    text = pod.metadata.annotations.get(INTENT_ANNOTATION)
    return _decode(pod.metadata.namespace, text)[1] if text else None


def held_intent(bound: Iterable[PodReads]) -> Mapping[str, tuple[str, str]]:
    """Pod key → (node, uid prefix) that the intents recorded on ``bound`` (a tree's bound members) name, each pod's
    entry from the latest plan naming it (:attr:`Intent.at`); :data:`NO_INTENT` when none carries one. Reads only the
    intents of distinct plans once: every member of a small gang carries the same."""
    # one value decodes to one object (_decode is memoised): the members of one plan give one entry here
    intents = {id(intent): intent for pod in bound if (intent := parse_intent(pod)) is not None}
    if not intents:
        return NO_INTENT
    if len(intents) == 1:
        return next(iter(intents.values())).pods
    merged: dict[str, tuple[str, str]] = {}
    for intent in sorted(intents.values(), key=lambda i: i.at):
        merged.update(intent.pods)
    return merged


@functools.lru_cache(maxsize=_DECODED_CACHE)
def _decode(namespace: str, text: str) -> tuple[Intent | None, str | None]:
    """(the intent, None) for a valid annotation value on a pod of ``namespace``; (None, why) otherwise."""
    if len(text) > INTENT_MAX_BYTES:
        return None, f"{INTENT_ANNOTATION} is {len(text)} characters, over the limit of {INTENT_MAX_BYTES}"
    try:
        if text.startswith(COMPRESSED):
            inflater = zlib.decompressobj()
            raw = inflater.decompress(base64.b64decode(text[len(COMPRESSED):], validate=True), INFLATED_MAX_BYTES)
            if inflater.unconsumed_tail:
                return None, f"{INTENT_ANNOTATION} inflates past {INFLATED_MAX_BYTES} bytes"
            text = raw.decode()
        value = json.loads(text)
    except RecursionError:
        return None, f"{INTENT_ANNOTATION} is nested too deeply"
    except (ValueError, binascii.Error, zlib.error):
        return None, (f"{INTENT_ANNOTATION} is not base64 of zlib-compressed JSON after {COMPRESSED!r}"
                      if text.startswith(COMPRESSED) else f"{INTENT_ANNOTATION} is not JSON")
    try:
        at = _text(value["at"])
        intent = {f"{namespace}/{name}": (_text(v["node"]), _text(v["uid"])) for name, v in value["pods"].items()}
    except (TypeError, KeyError, AttributeError):
        return None, f"{INTENT_ANNOTATION} does not have the shape {SHAPE}"
    return Intent(at, MappingProxyType(intent)), None


def _text(value: object) -> str:
    """``value`` if it is a string; raises TypeError otherwise (a node name or uid that is not one is invalid)."""
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def room_for(pod: PodReads, value: str) -> bool:
    """Whether ``pod`` can carry the intent ``value`` (of :func:`intent_annotation`: ASCII, as ``json.dumps`` and
    base64 write it, so its length is its size in bytes): its annotations with it stay within
    :data:`ANNOTATIONS_MAX_BYTES` (an intent it carries already is replaced)."""
    used = sum(len(key.encode()) + len(text.encode()) for key, text in pod.metadata.annotations.items()
               if key != INTENT_ANNOTATION)
    return used + len(INTENT_ANNOTATION) + len(value) <= ANNOTATIONS_MAX_BYTES


def intended_node(intent: Mapping[str, tuple[str, str]], pod: PodReads) -> str | None:
    """The node ``intent`` (:func:`held_intent`) names for ``pod``; None when it names no pod of that key, or another
    incarnation."""
    entry = intent.get(pod.key)
    if entry is None or (entry[1] and pod.metadata.uid and not pod.metadata.uid.startswith(entry[1])):
        return None
    return entry[0]


def intent_annotation(plan: str, at: str, placements: Iterable[tuple[PodReads, str]]) -> str | None:
    """The annotation value recording that plan ``plan``, bound at ``at`` (RFC 3339), places each (pod, node) of
    ``placements`` (pods of one namespace): JSON up to :data:`PLAIN_MAX_BYTES`, else compressed; None when even that
    exceeds :data:`INTENT_MAX_BYTES`."""
    pods = {pod.metadata.name: {"node": node, "uid": pod.metadata.uid[:UID_PREFIX]}
            for pod, node in sorted(placements, key=lambda pn: pn[0].metadata.name)}
    text = json.dumps({"plan": plan, "at": at, "pods": pods}, separators=(",", ":"))
    if len(text.encode()) <= PLAIN_MAX_BYTES:
        return text
    packed = COMPRESSED + base64.b64encode(zlib.compress(text.encode(), 9)).decode()
    return packed if len(packed) <= INTENT_MAX_BYTES else None
