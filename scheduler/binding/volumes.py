"""VolumeBinding's PreBind: write a plan's claim bindings, then wait until every claim is bound.

kube-scheduler's VolumeBinding PreBind (``binder.go`` ``BindPodVolumes``, v1.37) does this per pod;
here it is one PreBind step of the gang's binding cycle (claims, **volumes**, then the binds),
so no pod of the plan is bound before every WaitForFirstConsumer claim of the plan is:

1. **Write** each :class:`~scheduler.framework.plan.VolumeClaimBinding` (concurrently, bounded by the
   writer, each behind the leadership fence): a
   provisioned claim gets the annotation ``volume.kubernetes.io/selected-node: <node>`` (merge patch on
   the PVC); a statically bound one its PV's ``spec.claimRef`` plus ``pv.kubernetes.io/bound-by-controller``
   (merge patch on the PV, kube's ``GetBindVolumeToClaim``). Each patch carries the ``resourceVersion`` the
   cache shows, so a claim or PV someone else changed since answers 409 — unless a re-read shows our value
   already there. A claim annotated for another node, or a PV claimed for another claim, fails at once.
2. **Wait** — bounded by ``timeout_s`` — until the cache shows every claim fully bound
   (``spec.volumeName`` and ``pv.kubernetes.io/bind-completed``) to a PV whose node affinity admits the
   chosen node: the binding cycle's general wait for a condition (:meth:`ApiWriter.wait
   <scheduler.framework.interface.ApiWriter.wait>`), re-read whenever the cache applied a PVC or PV, so
   nothing polls the API (kube polls its informer cache every second; an event is both sooner and cheaper). Once the
   cache has shown our write, the controllers' signals fail it early, with kube's ``checkBindings``
   wording: the annotation removed (:data:`SELECTED_NODE_RESET`, the provisioner asking to reschedule),
   set to another node (:data:`PROVISIONING_FAILED`), the PV's claimRef gone (:data:`CLAIM_REF_RESET`),
   a bound PV whose affinity excludes the node (:data:`NODE_AFFINITY_MISMATCH`), or the claim deleted.

On failure or timeout the binding cycle rolls the plan back and binds no pod. **The annotation and a written
claimRef are left in place**, as kube-scheduler leaves them (its Unreserve only restores its assume
cache): once written, the provisioner or the PV controller owns the next step and may be provisioning or
binding already; withdrawing would race with it and could strand a volume made for a node the next plan
does not choose. The provisioner removes the annotation itself when it needs the scheduler to choose
again, and the next attempt treats a claim still annotated as pinned to that node (VolumeBinding's
Filter), so it resumes waiting for the same volume instead of asking for a second one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from scheduler.errors import ApiError, Conflict
from scheduler.framework.binding_cycle import BindingCycle, Failure, Undone
from scheduler.framework.cycle_state import StateKey
from scheduler.framework.interface import JSON, ApiWriter
from scheduler.framework.plan import VolumeClaimBinding
from scheduler.framework.selectors import node_selector_matches
from scheduler.model.base import ObjectMeta
from scheduler.model.kinds import PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM
from scheduler.model.node import Node
from scheduler.model.storage import (
    BOUND_BY_CONTROLLER,
    SELECTED_NODE,
    PersistentVolume,
    PersistentVolumeClaim,
)

log = logging.getLogger(__name__)

NAME = "VolumeBinding"

SELECTED_NODE_RESET = 'selectedNode annotation reset for PVC "{claim}"'
PROVISIONING_FAILED = 'provisioning failed for PVC "{claim}"'
CLAIM_REF_RESET = 'ClaimRef got reset for pv "{volume}"'
NODE_AFFINITY_MISMATCH = "pv \"{volume}\" node affinity doesn't match node \"{node}\""
"""binder.go ``checkBindings`` errors (v1.37); ``{claim}`` is the claim's name, ``{volume}`` the PV's."""
TIMED_OUT = "binding volumes: timed out waiting for the condition"
"""``BindPodVolumes``' error on timeout (``binding volumes: %w`` around the poll's timeout error)."""
CLAIM_DELETED = 'persistentvolumeclaim "{claim}" not found'
ANNOTATED_ELSEWHERE = 'persistentvolumeclaim "{claim}" is annotated for node "{other}"'
VOLUME_TAKEN = 'persistentvolume "{volume}" is claimed by {other}'
VOLUME_GONE = 'persistentvolume "{volume}" not found'
LEADERSHIP_LOST = "leadership lost before writing the claim"
NO_WATCH = "no PersistentVolumeClaim watch: claims cannot be seen bound"

KINDS = frozenset({PERSISTENT_VOLUME_CLAIM.name, PERSISTENT_VOLUME.name})
"""The cache kinds whose changes can end the wait."""

WRITTEN: StateKey[list[str]] = StateKey(f"{NAME}/written")
"""Claim keys annotated and PV names claimed by this plan (left in place on failure)."""


@dataclass(frozen=True, slots=True)
class ClaimSource:
    """Where the step reads claims (by ``ns/name``), PVs and nodes (by name): the cache."""

    claims: Callable[[str], PersistentVolumeClaim | None]
    volumes: Callable[[str], PersistentVolume | None]
    nodes: Callable[[str], Node | None]


@dataclass(slots=True)
class VolumeOutcome:
    """What the step did: ``written`` (claim keys annotated, PV names claimed — left in place on failure),
    ``failure`` (None: every claim is bound)."""

    written: list[str] = field(default_factory=list)
    failure: Failure | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None


class VolumeBindingPreBind:
    """See the module docstring. ``source``: the cache's claims, PVs and nodes (None: no claim watch, so a plan
    with claim bindings fails — nothing could see them bound); ``timeout_s``: the wait bound
    (``volume_binding_timeout_s``)."""

    name = NAME

    def __init__(self, source: ClaimSource | None, *, timeout_s: float) -> None:
        self.source = source
        self.timeout_s = timeout_s

    def pre_flight(self, cycle: BindingCycle) -> bool:
        return bool(cycle.plan.volumes)

    async def pre_bind(self, cycle: BindingCycle, writer: ApiWriter) -> Failure | None:
        if self.source is None:
            return Failure(cycle.plan.volumes[0].claim, f"binding volumes failed: {NO_WATCH}")
        outcome = await self.bind(cycle.plan.volumes, writer)
        cycle.write(WRITTEN, outcome.written)
        if outcome.failure is None:
            return None
        failure = outcome.failure
        return Failure(failure.key, f"binding volumes failed: {failure.message}", failure.status)

    async def rollback(self, cycle: BindingCycle, writer: ApiWriter) -> Undone:
        """Nothing is undone: the annotations and claimRefs stay (see the module docstring)."""
        written = cycle.read(WRITTEN, [])
        if not written or cycle.bound_keys:
            return Undone()
        return Undone(note=f"left in place, as kube-scheduler leaves them: {', '.join(written)} (the next attempt "
                           "resumes with them)")

    async def bind(self, bindings: Sequence[VolumeClaimBinding], writer: ApiWriter) -> VolumeOutcome:
        """Write every binding, then wait until all are bound (see the module docstring). Never raises
        :class:`ApiError`: a failed write or wait is the outcome's ``failure``."""
        outcome = VolumeOutcome()
        stop = asyncio.Event()

        async def one(binding: VolumeClaimBinding) -> None:
            async with writer.slot():
                if stop.is_set():
                    return
                try:
                    failure = await self._write(binding, outcome, writer)
                except ApiError as exc:
                    failure = Failure(binding.volume or binding.claim, f"writing {_what(binding)}: {exc}",
                                      exc.status)
                if failure is not None:
                    outcome.failure = outcome.failure or failure
                    stop.set()

        await asyncio.gather(*(one(b) for b in bindings))
        if outcome.failure is None:
            outcome.failure = await self._wait(bindings, writer)
        if outcome.failure is not None and outcome.written:
            log.info("volumes not bound (%s); left in place as kube-scheduler leaves them: %s",
                     outcome.failure.message, ", ".join(outcome.written))
        return outcome

    # -- writes ------------------------------------------------------------------------------------
    async def _write(self, binding: VolumeClaimBinding, outcome: VolumeOutcome, writer: ApiWriter
                     ) -> Failure | None:
        assert self.source is not None
        if not writer.leading():
            return Failure(binding.claim, LEADERSHIP_LOST)
        claim = self.source.claims(binding.claim)
        ns, name = binding.claim.partition("/")[::2]
        if claim is None:
            return Failure(binding.claim, CLAIM_DELETED.format(claim=name), 404)
        if claim.is_bound:
            return None  # bound meanwhile (the wait checks its PV admits the node)
        if binding.volume is None:
            other = claim.selected_node
            if other == binding.node:
                return None  # an earlier attempt's annotation, left in place: nothing to write
            if other is not None:
                return Failure(binding.claim, ANNOTATED_ELSEWHERE.format(claim=name, other=other), 409)
            await _patch_claim(ns, name, claim, binding, writer)
            outcome.written.append(binding.claim)
            return None
        volume = self.source.volumes(binding.volume)
        if volume is None:
            return Failure(binding.volume, VOLUME_GONE.format(volume=binding.volume), 404)
        if volume.bound_to(claim):
            return None
        ref = volume.spec.claim_ref
        if ref is not None:
            return Failure(binding.volume, VOLUME_TAKEN.format(volume=binding.volume,
                                                               other=f"{ref.namespace}/{ref.name}"), 409)
        await _patch_volume(volume, claim, writer)
        outcome.written.append(binding.volume)
        return None

    # -- the wait ----------------------------------------------------------------------------------
    async def _wait(self, bindings: Sequence[VolumeClaimBinding], writer: ApiWriter) -> Failure | None:
        seen: set[str] = set()
        """Claims whose written state the cache has shown: from then on, its absence is the controllers' signal."""
        pending: list[str] = []

        def bound() -> bool | Failure:
            pending.clear()
            for binding in bindings:
                state = self._check(binding, seen)
                if isinstance(state, Failure):
                    return state
                if not state:
                    pending.append(binding.claim)
            return not pending

        state = await writer.wait(bound, KINDS, self.timeout_s)
        if isinstance(state, Failure):
            return state
        if state:
            return None
        return Failure(pending[0], f"{TIMED_OUT} ({self.timeout_s:g} s; not bound: {', '.join(pending)})")

    def _check(self, binding: VolumeClaimBinding, seen: set[str]) -> Failure | bool:
        """True when the claim is bound where it should be, False while it is not yet, or the failure."""
        assert self.source is not None
        name = binding.claim.partition("/")[2]
        claim = self.source.claims(binding.claim)
        if claim is None:
            return Failure(binding.claim, CLAIM_DELETED.format(claim=name), 404)
        if claim.is_bound:
            volume = self.source.volumes(claim.spec.volume_name)
            if volume is None:
                return False  # the PV's watch event has not arrived yet
            node = self.source.nodes(binding.node)
            if not _admits(volume, node):
                return Failure(binding.claim, NODE_AFFINITY_MISMATCH.format(volume=volume.name, node=binding.node))
            return True
        if binding.volume is not None:
            volume = self.source.volumes(binding.volume)
            if volume is None:
                return Failure(binding.volume, VOLUME_GONE.format(volume=binding.volume), 404)
            if volume.bound_to(claim):
                seen.add(binding.claim)
            elif binding.claim in seen:
                return Failure(binding.claim, CLAIM_REF_RESET.format(volume=binding.volume))
            return False
        selected = claim.selected_node
        if selected == binding.node:
            seen.add(binding.claim)
        elif binding.claim in seen:
            message = (SELECTED_NODE_RESET if selected is None else PROVISIONING_FAILED).format(claim=name)
            return Failure(binding.claim, message)
        return False


async def _patch_claim(ns: str, name: str, claim: PersistentVolumeClaim, binding: VolumeClaimBinding,
                       writer: ApiWriter) -> None:
    body: JSON = {"metadata": {"resourceVersion": claim.metadata.resource_version,
                               "annotations": {SELECTED_NODE: binding.node}}}
    try:
        await writer.patch(PERSISTENT_VOLUME_CLAIM, ns, name, body)
    except Conflict:
        current = await writer.get(PERSISTENT_VOLUME_CLAIM, ns, name)
        if ((current.get("metadata") or {}).get("annotations") or {}).get(SELECTED_NODE) != binding.node:
            raise
        # an earlier attempt of ours landed


async def _patch_volume(volume: PersistentVolume, claim: PersistentVolumeClaim, writer: ApiWriter) -> None:
    meta = claim.metadata
    ref = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": meta.namespace, "name": meta.name,
           "uid": meta.uid, "resourceVersion": meta.resource_version}
    body: JSON = {"metadata": {"resourceVersion": volume.metadata.resource_version,
                               "annotations": {BOUND_BY_CONTROLLER: "yes"}}, "spec": {"claimRef": ref}}
    try:
        await writer.patch(PERSISTENT_VOLUME, None, volume.name, body)
    except Conflict:
        current = await writer.get(PERSISTENT_VOLUME, None, volume.name)
        got = (current.get("spec") or {}).get("claimRef") or {}
        if (got.get("namespace"), got.get("name"), got.get("uid")) != (meta.namespace, meta.name, meta.uid):
            raise


def _admits(volume: PersistentVolume, node: Node | None) -> bool:
    """kube's ``CheckNodeAffinity``: no required affinity admits every node; otherwise it must match the node's
    labels (the node built from labels only). An unknown node is not admitted."""
    affinity = volume.spec.node_affinity
    if affinity is None or affinity.required is None:
        return True
    if node is None:
        return False
    return node_selector_matches(affinity.required, Node(metadata=ObjectMeta(labels=node.metadata.labels)))


def _what(binding: VolumeClaimBinding) -> str:
    if binding.volume is None:
        return f"{SELECTED_NODE} on PersistentVolumeClaim {binding.claim}"
    return f"claimRef of PersistentVolume {binding.volume} for {binding.claim}"
