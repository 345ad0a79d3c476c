"""The recording binder: ``simulate``'s stand-in for the API server, so offline runs the live bookkeeping.

After the cycle assumed a plan, :meth:`RecordingBinder.commit` makes the plan's writes the way the
API server would show them to the watch — each :class:`~scheduler.dra.writes.ClaimWrite` applied to
its claim (``status.allocation`` and ``status.reservedFor``; a claim the plan creates, or made from
its template, appears allocated), then each pod bound to its node — and feeds them to the
:class:`~scheduler.cache.cluster.ClusterCache` as watch events. The cache then ends the plan's
assumptions exactly as it does live: a claim allocated by one plan pins the pods of later plans to
it, never allocated twice. Nothing fails here, so the result always says every pod was bound.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.cache.cluster import ClusterCache
from scheduler.cycle import BindResult
from scheduler.dra.writes import ClaimWrite, merged_reservations
from scheduler.framework.plan import Plan
from scheduler.framework.snapshot import bound_copy
from scheduler.model.dra import ResourceClaim


class RecordingBinder:
    """Applies plans to ``cache`` as the watch would show them; see the module docstring."""

    def __init__(self, cache: ClusterCache) -> None:
        self.cache = cache

    def commit(self, plan: Plan, writes: Sequence[ClaimWrite]) -> tuple[BindResult, set[str]]:
        """Apply the plan's claim writes, then bind its pods. Returns the result (every pod bound, nothing
        to forget) and the keys of the claims the plan brought into existence (made from a template, or
        scheduler-made extended-resource claims)."""
        made: set[str] = set()
        claims = self.cache.objects["ResourceClaim"]
        for write in writes:
            current = claims.get(write.claim)
            if current is None:
                current = self.cache.devices.synthesized.get(write.claim) or _created(write)
                made.add(write.claim)
            body = current.model_dump(by_alias=True, exclude_none=True, mode="json")
            status = dict(body.get("status") or {})
            existing = tuple(status.get("reservedFor") or ())
            status["reservedFor"] = merged_reservations(existing, write.reserve)
            if write.allocation is not None:
                status["allocation"] = write.allocation
            self.cache.load_one("ResourceClaim", ResourceClaim.model_validate({**body, "status": status}))
        for pod, node in plan.placements:
            current_pod = self.cache.pod(pod.key)
            if current_pod is not None:
                self.cache.load_one("Pod", bound_copy(current_pod, node))
        return BindResult(bound=list(plan.placements)), made


def _created(write: ClaimWrite) -> ResourceClaim:
    """The claim a write creates (an extended-resource claim), under the solver's name for it."""
    assert write.create is not None, f"claim {write.claim} is neither known nor created by its write"
    ns, _, name = write.claim.partition("/")
    body = dict(write.create)
    meta = {k: v for k, v in body.get("metadata", {}).items() if k != "generateName"}
    return ResourceClaim.model_validate({**body, "metadata": {**meta, "name": name, "namespace": ns}})
