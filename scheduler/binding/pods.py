"""The Bind plugin: ``POST pods/{name}/binding`` for each member (kube-scheduler's ``DefaultBinder``).

Architecture §6: each member is bound on its own; there is no group bind. What keeps the gang atomic is that
the plan was complete and assumed before the first write, that every PreBind step succeeded for every member
first, and that the caller forgets the rest of the plan as soon as one member cannot be bound.

**Check before each bind** (``cycle.precheck``): just before a member's bind, the check of its target against
the cache as it is *now* — the node still exists, is not cordoned, has no NoSchedule/NoExecute taint the pod
does not tolerate, still has the labels the pod's node selection needs and the allocatable the plan's pods on
it need, the pod's claims still stand. A refusal stops the plan like a failed bind: no further
bind starts, the members not bound are forgotten, and the root is requeued.

* 409 for a pod that turns out to be bound to our node is success (an earlier attempt landed; decided by
  reading the pod, not by parsing the message); so is a lost answer (5xx, transport) after which the pod
  reads as bound to our node.
* 404 (pod deleted) or any other 409 (bound elsewhere, gated, being deleted) is permanent for that member: no
  new bind of the plan starts.
"""

from __future__ import annotations

import asyncio

from scheduler.errors import ApiError, Conflict, TargetChanged
from scheduler.framework.binding_cycle import BindingCycle, BindOutcome, Precheck
from scheduler.framework.interface import ApiWriter
from scheduler.model.kinds import POD
from scheduler.model.pod import Pod

NAME = "DefaultBinder"


class DefaultBinder:
    """See the module docstring."""

    name = NAME

    async def bind(self, cycle: BindingCycle, writer: ApiWriter) -> None:
        await bind_plan(cycle.plan.placements, writer, cycle.outcome, cycle.precheck)


async def bind_plan(placements: tuple[tuple[Pod, str], ...] | list[tuple[Pod, str]], writer: ApiWriter,
                    outcome: BindOutcome | None = None, precheck: Precheck | None = None) -> BindOutcome:
    """Bind every (pod, node); stop starting new binds after a permanent failure or a refusal of ``precheck``.
    ``outcome`` (returned) is filled in as each bind lands."""
    outcome = outcome if outcome is not None else BindOutcome()
    stop = asyncio.Event()

    async def one(pod: Pod, node: str) -> None:
        async with writer.slot():
            if stop.is_set() or not writer.leading():
                outcome.skipped.append(pod.key)
                stop.set()
                return
            refused = precheck(pod, node) if precheck is not None else None
            if refused is not None:
                if outcome.failed is None:
                    outcome.failed = (pod.key, TargetChanged(refused))
                stop.set()
                return
            try:
                await _bind(pod, node, writer)
            except ApiError as exc:
                if outcome.failed is None:
                    outcome.failed = (pod.key, exc)
                stop.set()
                return
            outcome.bound.append((pod, node))

    if len(placements) == 1:  # a lone pod: no task of its own
        await one(*placements[0])
    else:
        await asyncio.gather(*(one(pod, node) for pod, node in placements))
    return outcome


async def _bind(pod: Pod, node: str, writer: ApiWriter) -> None:
    try:
        await writer.bind(pod, node)
    except ApiError as exc:
        # A 409, or a failure whose reply may have been lost (5xx, timeout): an attempt of ours may have
        # landed ("already assigned" to our node is success) — ask the server.
        if (isinstance(exc, Conflict) or exc.retryable) and await _bound_to(pod, node, writer):
            return
        raise


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
