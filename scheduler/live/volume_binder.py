"""PreBind for PersistentVolumeClaims: write a plan's claim bindings, then wait until every claim is bound.

kube-scheduler's VolumeBinding PreBind (``binder.go`` ``BindPodVolumes``, v1.37) does this per pod;
here it is one step of the gang's bind transaction (``Binder.commit``: claims, **volumes**, bindings),
so no pod of the plan is bound before every WaitForFirstConsumer claim of the plan is:

1. **Write** each :class:`~scheduler.framework.plan.VolumeClaimBinding` (concurrently, bounded by the
   binder's semaphore, each behind the leadership fence, in the client's urgent lane like binds): a
   provisioned claim gets the annotation ``volume.kubernetes.io/selected-node: <node>`` (merge patch on
   the PVC); a statically bound one its PV's ``spec.claimRef`` plus ``pv.kubernetes.io/bound-by-controller``
   (merge patch on the PV, kube's ``GetBindVolumeToClaim``). Each patch carries the ``resourceVersion`` the
   cache shows, so a claim or PV someone else changed since answers 409 — unless a re-read shows our value
   already there. A claim annotated for another node, or a PV claimed for another claim, fails at once.
2. **Wait** — bounded by ``timeout_s`` — until the cache shows every claim fully bound
   (``spec.volumeName`` and ``pv.kubernetes.io/bind-completed``) to a PV whose node affinity admits the
   chosen node. The step learns of changes from the watch: the driver hands every cache event to
   :meth:`ClaimChanges.notify`, which wakes the waiter; between events it sleeps, so nothing polls the
   API (kube polls its informer cache every second; an event is both sooner and cheaper). Once the
   cache has shown our write, the controllers' signals fail it early, with kube's ``checkBindings``
   wording: the annotation removed (:data:`SELECTED_NODE_RESET`, the provisioner asking to reschedule),
   set to another node (:data:`PROVISIONING_FAILED`), the PV's claimRef gone (:data:`CLAIM_REF_RESET`),
   a bound PV whose affinity excludes the node (:data:`NODE_AFFINITY_MISMATCH`), or the claim deleted.

On failure or timeout the caller rolls the plan back and binds no pod. **The annotation and a written
claimRef are left in place**, as kube-scheduler leaves them (its Unreserve only restores its assume
cache): once written, the provisioner or the PV controller owns the next step and may be provisioning or
binding already; withdrawing would race with it and could strand a volume made for a node the next plan
does not choose. The provisioner removes the annotation itself when it needs the scheduler to choose
again, and the next attempt treats a claim still annotated as pinned to that node (VolumeBinding's
Filter), so it resumes waiting for the same volume instead of asking for a second one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from scheduler.client.kube import (
    JSON,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    ApiError,
    Conflict,
    KubeClient,
    Lane,
)
from scheduler.framework.events import ClusterEvent
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

T = TypeVar("T")

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

KINDS = frozenset({PERSISTENT_VOLUME_CLAIM.name, PERSISTENT_VOLUME.name})


class Retry(Protocol):
    """The binder's retry with backoff (``Binder._retry``)."""

    def __call__(self, what: str, call: Callable[[], Awaitable[T]]) -> Awaitable[T]: ...


class ClaimChanges:
    """Wakes whoever waits for claims when the cache applied a PVC or PV change (the driver calls :meth:`notify`).

    A waiter takes :meth:`event` *before* it reads the cache and waits on it after: a change in between
    sets that very event, so none is missed.
    """

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def event(self) -> asyncio.Event:
        return self._event

    def notify(self, events: Iterable[ClusterEvent]) -> None:
        if any(e.kind in KINDS for e in events):
            self._event.set()
            self._event = asyncio.Event()


@dataclass(frozen=True, slots=True)
class ClaimSource:
    """Where the step reads claims (by ``ns/name``), PVs and nodes (by name) — the cache — and learns of changes."""

    claims: Callable[[str], PersistentVolumeClaim | None]
    volumes: Callable[[str], PersistentVolume | None]
    nodes: Callable[[str], Node | None]
    changes: ClaimChanges


@dataclass(frozen=True, slots=True)
class VolumeFailure:
    """Why the volumes of a plan are not bound: the object (``ns/name`` of a claim, or a PV name), the message,
    the HTTP status of a failed write (0: none)."""

    key: str
    message: str
    status: int = 0


@dataclass(slots=True)
class VolumeOutcome:
    """What the step did: ``written`` (claim keys annotated, PV names claimed — left in place on failure),
    ``failure`` (None: every claim is bound)."""

    written: list[str] = field(default_factory=list)
    failure: VolumeFailure | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None


class VolumeBinder:
    """See the module docstring. ``source``: the cache's claims, PVs and nodes and the wake-up the driver feeds;
    ``timeout_s``: the wait bound (``volume_binding_timeout_s``); ``retry``, ``semaphore``, ``fence``: the
    binder's (backoff, write concurrency, leadership)."""

    def __init__(self, kube: KubeClient, source: ClaimSource, *, timeout_s: float, retry: Retry,
                 semaphore: asyncio.Semaphore, fence: Callable[[], bool]) -> None:
        self.kube = kube
        self.claims = source.claims
        self.volumes = source.volumes
        self.nodes = source.nodes
        self.changes = source.changes
        self.timeout_s = timeout_s
        self.retry = retry
        self.semaphore = semaphore
        self.fence = fence

    async def bind(self, bindings: Sequence[VolumeClaimBinding]) -> VolumeOutcome:
        """Write every binding, then wait until all are bound (see the module docstring). Never raises
        :class:`ApiError`: a failed write or wait is the outcome's ``failure``."""
        outcome = VolumeOutcome()
        stop = asyncio.Event()

        async def one(binding: VolumeClaimBinding) -> None:
            async with self.semaphore:
                if stop.is_set():
                    return
                try:
                    failure = await self._write(binding, outcome)
                except ApiError as exc:
                    failure = VolumeFailure(binding.volume or binding.claim, f"writing {_what(binding)}: {exc}",
                                            exc.status)
                if failure is not None:
                    outcome.failure = outcome.failure or failure
                    stop.set()

        await asyncio.gather(*(one(b) for b in bindings))
        if outcome.failure is None:
            outcome.failure = await self._wait(bindings)
        if outcome.failure is not None and outcome.written:
            log.info("volumes not bound (%s); left in place as kube-scheduler leaves them: %s",
                     outcome.failure.message, ", ".join(outcome.written))
        return outcome

    # -- writes --------------------------------------------------------------------------------
    async def _write(self, binding: VolumeClaimBinding, outcome: VolumeOutcome) -> VolumeFailure | None:
        if not self.fence():
            return VolumeFailure(binding.claim, LEADERSHIP_LOST)
        claim = self.claims(binding.claim)
        ns, name = binding.claim.partition("/")[::2]
        if claim is None:
            return VolumeFailure(binding.claim, CLAIM_DELETED.format(claim=name), 404)
        if claim.is_bound:
            return None  # bound meanwhile (the wait checks its PV admits the node)
        if binding.volume is None:
            other = claim.selected_node
            if other == binding.node:
                return None  # an earlier attempt's annotation, left in place: nothing to write
            if other is not None:
                return VolumeFailure(binding.claim, ANNOTATED_ELSEWHERE.format(claim=name, other=other), 409)
            await self._patch_claim(ns, name, claim, binding)
            outcome.written.append(binding.claim)
            return None
        volume = self.volumes(binding.volume)
        if volume is None:
            return VolumeFailure(binding.volume, VOLUME_GONE.format(volume=binding.volume), 404)
        if volume.bound_to(claim):
            return None
        ref = volume.spec.claim_ref
        if ref is not None:
            return VolumeFailure(binding.volume, VOLUME_TAKEN.format(volume=binding.volume,
                                                                     other=f"{ref.namespace}/{ref.name}"), 409)
        await self._patch_volume(volume, claim)
        outcome.written.append(binding.volume)
        return None

    async def _patch_claim(self, ns: str, name: str, claim: PersistentVolumeClaim, binding: VolumeClaimBinding) -> None:
        body: JSON = {"metadata": {"resourceVersion": claim.metadata.resource_version,
                                   "annotations": {SELECTED_NODE: binding.node}}}
        try:
            await self.retry(f"annotate claim {binding.claim}",
                             lambda: self.kube.patch(PERSISTENT_VOLUME_CLAIMS, ns, name, body, lane=Lane.URGENT))
        except Conflict:
            current = await self.kube.get(PERSISTENT_VOLUME_CLAIMS, ns, name, lane=Lane.URGENT)
            if ((current.get("metadata") or {}).get("annotations") or {}).get(SELECTED_NODE) != binding.node:
                raise
            # an earlier attempt of ours landed

    async def _patch_volume(self, volume: PersistentVolume, claim: PersistentVolumeClaim) -> None:
        meta = claim.metadata
        ref = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": meta.namespace, "name": meta.name,
               "uid": meta.uid, "resourceVersion": meta.resource_version}
        body: JSON = {"metadata": {"resourceVersion": volume.metadata.resource_version,
                                   "annotations": {BOUND_BY_CONTROLLER: "yes"}}, "spec": {"claimRef": ref}}
        try:
            await self.retry(f"bind volume {volume.name} to {claim.key}",
                             lambda: self.kube.patch(PERSISTENT_VOLUMES, None, volume.name, body, lane=Lane.URGENT))
        except Conflict:
            current = await self.kube.get(PERSISTENT_VOLUMES, None, volume.name, lane=Lane.URGENT)
            got = (current.get("spec") or {}).get("claimRef") or {}
            if (got.get("namespace"), got.get("name"), got.get("uid")) != (meta.namespace, meta.name, meta.uid):
                raise

    # -- the wait ------------------------------------------------------------------------------
    async def _wait(self, bindings: Sequence[VolumeClaimBinding]) -> VolumeFailure | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        seen: set[str] = set()
        """Claims whose written state the cache has shown: from then on, its absence is the controllers' signal."""
        while True:
            wake = self.changes.event()
            pending: list[str] = []
            for binding in bindings:
                state = self._check(binding, seen)
                if isinstance(state, VolumeFailure):
                    return state
                if not state:
                    pending.append(binding.claim)
            if not pending:
                return None
            remaining = deadline - loop.time()
            if remaining <= 0:
                return VolumeFailure(pending[0], f"{TIMED_OUT} ({self.timeout_s:g} s; not bound: "
                                                 f"{', '.join(pending)})")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), remaining)

    def _check(self, binding: VolumeClaimBinding, seen: set[str]) -> VolumeFailure | bool:
        """True when the claim is bound where it should be, False while it is not yet, or the failure."""
        name = binding.claim.partition("/")[2]
        claim = self.claims(binding.claim)
        if claim is None:
            return VolumeFailure(binding.claim, CLAIM_DELETED.format(claim=name), 404)
        if claim.is_bound:
            volume = self.volumes(claim.spec.volume_name)
            if volume is None:
                return False  # the PV's watch event has not arrived yet
            node = self.nodes(binding.node)
            if not _admits(volume, node):
                return VolumeFailure(binding.claim, NODE_AFFINITY_MISMATCH.format(volume=volume.name,
                                                                                  node=binding.node))
            return True
        if binding.volume is not None:
            volume = self.volumes(binding.volume)
            if volume is None:
                return VolumeFailure(binding.volume, VOLUME_GONE.format(volume=binding.volume), 404)
            if volume.bound_to(claim):
                seen.add(binding.claim)
            elif binding.claim in seen:
                return VolumeFailure(binding.claim, CLAIM_REF_RESET.format(volume=binding.volume))
            return False
        selected = claim.selected_node
        if selected == binding.node:
            seen.add(binding.claim)
        elif binding.claim in seen:
            message = (SELECTED_NODE_RESET if selected is None else PROVISIONING_FAILED).format(claim=name)
            return VolumeFailure(binding.claim, message)
        return False


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
