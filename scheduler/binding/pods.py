"""The Bind plugin: ``POST pods/{name}/binding`` for each member (kube-scheduler's ``DefaultBinder``).

Architecture §6: each member is bound on its own; there is no group bind. What keeps the gang atomic is that
the plan was complete and assumed before the first write, that every PreBind step succeeded for every member
first, and that the caller forgets the rest of the plan as soon as one member cannot be bound.

**The durable intent** (``scheduler.groups.intent``, architecture §14): the Bindings of a plan that places
members of a group carry the plan as the annotation ``gang-scheduler.io/intent``, which the API server merges
into each pod as it binds it — every Binding when the plan is small (the binds go out side by side); else the
first member's alone, and once that Binding has landed the other binds start, the next :data:`CARRIERS` − 1 of
them carrying it too (so one member lost — failed, evicted, its node gone — does not take the plan off record). A
member found bound already by an earlier attempt (a 409 for our node) does not count as landed: its pod may carry
another plan, so the next member's Binding carries this one, alone, until one lands. A member whose annotations leave
no room for it within the API server's 256 KiB for all of a pod's (``groups.intent.room_for``; past it every later
update of the pod, its kubelet's included, is refused) carries none, and of a large plan the members with room go
first. So no member is bound without the plan that placed it on record, and a restarted scheduler holds the rest
of its room.

**Check before each bind** (``cycle.precheck``): just before a member's bind, the check of its target against the cache
as it is *now* — the member's PodGroup is the one the plan was made for (not deleted, nor made again under another uid:
its spec may ask for another gang), the node still exists, is not cordoned, has no NoSchedule/NoExecute taint the pod
does not tolerate, still has the labels the pod's node selection needs and the allocatable the plan's pods on it need,
the pod's claims still stand; asked again just before each attempt is sent, after the client's rate limiter or a
retry's backoff let it go. A refusal stops the plan like a failed bind: no further bind starts, the members not bound
are forgotten, and the root is requeued.

* 409 for a pod that turns out to be bound to our node is success (an earlier attempt landed; decided by
  reading the pod, not by parsing the message); so is a lost answer (5xx, transport) after which the pod
  reads as bound to our node.
* 404 (pod deleted) or any other 409 (bound elsewhere, gated, being deleted) is permanent for that member: no
  new bind of the plan starts.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from scheduler.errors import ApiError, Conflict, TargetChanged
from scheduler.framework.binding_cycle import BindingCycle, BindOutcome, Precheck
from scheduler.framework.interface import ApiWriter
from scheduler.groups.intent import INTENT_ANNOTATION, SHARED_MAX_BYTES, intent_annotation, room_for
from scheduler.model.kinds import POD
from scheduler.model.pod import Pod

log = logging.getLogger(__name__)

NAME = "DefaultBinder"

CARRIERS = 3
"""Bindings that carry a large plan's intent (a small plan's ride on every one)."""


class DefaultBinder:
    """See the module docstring."""

    name = NAME

    async def bind(self, cycle: BindingCycle, writer: ApiWriter) -> None:
        await bind_plan(cycle.plan.placements, writer, cycle.outcome, cycle.precheck, cycle.token)


async def bind_plan(placements: Sequence[tuple[Pod, str]], writer: ApiWriter, outcome: BindOutcome | None = None,
                    precheck: Precheck | None = None, token: str | None = None) -> BindOutcome:
    """Bind every (pod, node); stop starting new binds after a permanent failure or a refusal of ``precheck``.
    ``outcome`` (returned) is filled in as each bind lands. ``token``: the plan's name in the cache; a plan that
    places members of a group then carries its durable intent on its Bindings (the module docstring; None: no
    intent)."""
    outcome = outcome if outcome is not None else BindOutcome()
    stop = asyncio.Event()
    carried = _intents(placements, token) if token is not None else {}
    shared = all(len(value) <= SHARED_MAX_BYTES for value in carried.values())

    def intent_of(pod: Pod) -> str | None:
        """The intent ``pod``'s Binding carries: its namespace's, unless the pod has no room left for it."""
        value = carried.get(pod.metadata.namespace)
        return value if value is not None and room_for(pod, value) else None

    async def one(pod: Pod, node: str, intent: str | None) -> bool:
        """Bind ``pod``; whether a Binding of ours landed (False: skipped, refused, failed, or found bound)."""
        async with writer.slot():
            if stop.is_set() or not writer.leading():
                outcome.skipped.append(pod.key)
                stop.set()
                return False
            refused = precheck(pod, node) if precheck is not None else None
            if refused is not None:
                if outcome.failed is None:
                    outcome.failed = (pod.key, TargetChanged(refused))
                stop.set()
                return False
            try:
                landed = await _bind(pod, node, writer, {INTENT_ANNOTATION: intent} if intent is not None else None,
                                     (lambda: precheck(pod, node)) if precheck is not None else None)
            except ApiError as exc:
                if outcome.failed is None:
                    outcome.failed = (pod.key, exc)
                stop.set()
                return False
            outcome.bound.append((pod, node))
            return landed

    if len(placements) == 1:  # a lone pod: no task of its own
        pod, node = placements[0]
        await one(pod, node, intent_of(pod))
    elif shared:
        await asyncio.gather(*(one(pod, node, intent_of(pod)) for pod, node in placements))
    else:  # the plan on record first: one Binding carrying it lands before any other starts
        rest = sorted(((pod, node, intent_of(pod)) for pod, node in placements),
                      key=lambda member: member[2] is None)  # members with room for it first
        if rest[0][2] is None:
            log.warning("plan %s: no member has room among its annotations for the plan's intent; its members are "
                        "bound without one (a restart cannot hold their room)", token)
        while rest and rest[0][2] is not None and not await one(*rest[0]):
            rest.pop(0)
        await asyncio.gather(*(one(pod, node, intent if 0 < i < CARRIERS else None)
                               for i, (pod, node, intent) in enumerate(rest) if i > 0 or intent is None))
    return outcome


def _intents(placements: Sequence[tuple[Pod, str]], token: str) -> dict[str, str]:
    """Namespace → the intent annotation value of its members in ``placements`` (a plan's members share one
    namespace), for a plan that places members of a group (nothing for lone pods: no gang to hold room for). A plan
    too large to record (``groups.intent``, over ~9,000 members) is bound without one, with a warning."""
    if not any(pod.group_name is not None for pod, _ in placements):
        return {}
    at = datetime.now(UTC).isoformat(timespec="microseconds")
    by_namespace: dict[str, list[tuple[Pod, str]]] = {}
    for pod, node in placements:
        by_namespace.setdefault(pod.metadata.namespace, []).append((pod, node))
    values: dict[str, str] = {}
    for namespace, members in by_namespace.items():
        value = intent_annotation(token, at, members)
        if value is None:
            log.warning("plan %s: the placements of its %d members in namespace %s are too large to record as its "
                        "intent; they are bound without one (a restart cannot hold their room)", token,
                        len(members), namespace)
        else:
            values[namespace] = value
    return values


async def _bind(pod: Pod, node: str, writer: ApiWriter, annotations: dict[str, str] | None,
                check: Callable[[], str | None] | None = None) -> bool:
    """Bind ``pod`` to ``node`` with the Binding's ``annotations``, ``check`` asked again just before each attempt is
    sent (``ApiWriter.bind``); True when this Binding landed, False when the pod was found bound to ``node`` already
    (by an earlier attempt, whose annotations it carries). Raises :class:`ApiError` when it is not bound there
    (:class:`TargetChanged` when ``check`` refused)."""
    try:
        await writer.bind(pod, node, annotations, check)
    except ApiError as exc:
        # A 409, or a failure whose reply may have been lost (5xx, timeout): an attempt of ours may have
        # landed ("already assigned" to our node is success) — ask the server.
        if (isinstance(exc, Conflict) or exc.retryable) and await _bound_to(pod, node, writer):
            return False
        raise
    return True


async def _bound_to(pod: Pod, node: str, writer: ApiWriter) -> bool:
    """Whether the pod is bound to ``node`` now (decides a 409 by the object, not the message text): the pod of that
    name, if it is this one (its uid: a pod deleted and made again under the name is another pod)."""
    try:
        current = await writer.get(POD, pod.metadata.namespace, pod.metadata.name)
    except ApiError:
        return False
    uid = (current.get("metadata") or {}).get("uid")
    if pod.metadata.uid and uid and uid != pod.metadata.uid:
        return False
    return bool((current.get("spec") or {}).get("nodeName") == node)
