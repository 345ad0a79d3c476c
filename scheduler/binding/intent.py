"""The durable intent, as the first PreBind step: record the plan on its PodGroups before any other write.

Architecture §14: before any claim write or bind, every PodGroup the plan places members of gets the annotation
:data:`~scheduler.groups.intent.INTENT_ANNOTATION` (a merge patch of ``metadata.annotations``, one per PodGroup)
naming each member's node. If the binds then stop half-way — a failed bind, a crash, a lost lease — whoever
schedules next reads the plan back from the PodGroups and holds the rest of its room. A permanent failure of
this write binds nothing. Nothing is rolled back: an intent whose members are not bound holds nothing once
the plan is forgotten (``groups.intent`` reads only the members still pending on the recorded nodes).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from scheduler.errors import ApiError
from scheduler.framework.binding_cycle import BindingCycle, Failure, RecordedIntent, Undone
from scheduler.framework.interface import JSON, ApiWriter
from scheduler.framework.plan import Plan
from scheduler.groups.intent import INTENT_ANNOTATION, intent_annotation, intent_entries
from scheduler.model.kinds import COSCHEDULING_POD_GROUP, POD_GROUP, Kind
from scheduler.model.pod import Pod

log = logging.getLogger(__name__)

NAME = "DurableIntent"


class DurableIntent:
    """See the module docstring. Skipped for a cycle without a token (nothing to name the plan by)."""

    name = NAME

    def pre_flight(self, cycle: BindingCycle) -> bool:
        return cycle.token is not None and any(p.group_name is not None for p, _ in cycle.plan.placements)

    async def pre_bind(self, cycle: BindingCycle, writer: ApiWriter) -> Failure | None:
        assert cycle.token is not None, "pre_flight skips a cycle without a token"
        failed = await write_intent(cycle.plan, cycle.token, writer, cycle.recorded)
        if failed is None:
            return None
        group, error = failed
        return Failure(group, f"recording the plan on PodGroup {group} failed: {error}", error.status, error)

    async def rollback(self, cycle: BindingCycle, writer: ApiWriter) -> Undone:
        return Undone()


async def write_intent(plan: Plan, token: str, writer: ApiWriter, recorded: RecordedIntent | None = None
                       ) -> tuple[str, ApiError] | None:
    """Record ``plan`` (under ``token``) on each PodGroup it places members of, unless ``recorded`` says the
    PodGroup shows these very placements already (a retry of the same plan writes nothing); None when all
    stand, else the first PodGroup (``ns/name``) whose write failed for good, and the error. A PodGroup
    whose intent is too large to record (``groups.intent``: over ~9,000 members) gets its older intent
    removed instead, with a warning: that gang is bound without durable intent."""
    by_group: dict[tuple[str, str], list[tuple[Pod, str]]] = {}
    kind: dict[tuple[str, str], Kind[Any]] = {}  # the PodGroup API each member links (a tree links one)
    for pod, node in plan.placements:
        if pod.group_name is not None:
            by_group.setdefault((pod.metadata.namespace, pod.group_name), []).append((pod, node))
            kind[pod.metadata.namespace, pod.group_name] = (
                COSCHEDULING_POD_GROUP if pod.group_api == COSCHEDULING_POD_GROUP.group else POD_GROUP)
    if not by_group:  # group-less pods: nothing to record (the binds check the fence themselves)
        return None
    values = {key: intent_annotation(token, ps) for key, ps in by_group.items()}
    if recorded is not None:
        values = {(ns, name): value for (ns, name), value in values.items()
                  if recorded(ns, name) != (intent_entries(by_group[ns, name]) if value is not None else {})}
    failures: list[tuple[str, ApiError]] = []

    async def one(ns: str, name: str, value: str | None) -> None:
        if value is None:
            log.warning("PodGroup %s/%s: the plan of its %d members is too large to record as its intent; "
                        "it is bound without one (a restart cannot hold its room)", ns, name,
                        len(by_group[ns, name]))
        body: JSON = {"metadata": {"annotations": {INTENT_ANNOTATION: value}}}
        async with writer.slot():
            try:
                await writer.patch(kind[ns, name], ns, name, body, reply=False)
            except ApiError as exc:
                failures.append((f"{ns}/{name}", exc))

    if not writer.leading():
        return (f"{plan.root.namespace}/{plan.root.name}", ApiError(0, "NotLeader", "leadership lost"))
    await asyncio.gather(*(one(ns, name, value) for (ns, name), value in sorted(values.items())))
    return failures[0] if failures else None
