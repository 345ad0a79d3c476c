"""scheduler-plugins' Coscheduling API (``scheduling.x-k8s.io/v1alpha1`` PodGroup) and its one conversion.

Clusters without the workload API (``scheduling.k8s.io`` PodGroups, v1.36/v1.37 gates) run gangs with
kubernetes-sigs/scheduler-plugins: a ``scheduling.x-k8s.io/v1alpha1`` PodGroup CRD and pods that join it
with the label ``scheduling.x-k8s.io/pod-group: <name>``. This module holds that API as the CRD defines it
(``apis/scheduling/v1alpha1/types.go``; ``manifests/crds/scheduling.x-k8s.io_podgroups.yaml``, vendored in
``charts/gang-scheduler/crds/``) and :func:`to_podgroup`, the *one* boundary where such an object becomes
the :class:`~scheduler.model.scheduling.PodGroup` the cache, the groups, the solver and preemption read:

* ``spec.minMember`` ≥ 1 → ``schedulingPolicy.gang.minCount`` (all-or-nothing, our search, our preemption);
  ``minMember`` 0 or absent → ``basic`` (Coscheduling's Permit lets every pod through when
  ``assigned + 1 >= minMember``, ``pkg/coscheduling/core/core.go``, i.e. members one by one);
* ``spec.minResources`` (Coscheduling's PreFilter refuses the gang while the cluster's free total lacks it,
  ``CheckClusterResource``) and ``spec.scheduleTimeoutSeconds`` (how long Coscheduling's Permit holds
  members waiting for their siblings) are kept on :attr:`CoscheduledPodGroup.source` and *reported*, never
  dropped: our search places the whole gang in one cycle, so no member waits at Permit and no partial
  reservation can time out, and a gang is placed only when every member's requests fit — minResources is
  not a separate check (:func:`unhonoured_fields`, listed in the README);
* ``status`` is scheduler-plugins' own (``phase``, ``scheduled``, ``running``, ``succeeded``, ``failed``,
  ``occupiedBy``, ``scheduleStartTime``), no ``conditions``: :func:`desired_status` computes it the way
  scheduler-plugins' PodGroup controller and Coscheduling's PostBind do.

A pod names its PodGroup with ``spec.schedulingGroup.podGroupName`` (a ``scheduling.k8s.io`` PodGroup) or,
failing that, the label :data:`POD_GROUP_LABEL` (or the older :data:`LEGACY_POD_GROUP_LABEL`) — a
``scheduling.x-k8s.io`` PodGroup (:func:`label_link`). The two kinds are never merged: a pod joins only a
group of the API it links by (``groups/index.py`` marks a tree Invalid otherwise), and where both kinds
have one name the ``scheduling.k8s.io`` one is the group of that name (``cache/cluster.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from pydantic import Field

from scheduler.model.base import Int32, KubeModel, OwnedObjectMeta, Time
from scheduler.model.scheduling import API_GROUP as WORKLOAD_API_GROUP
from scheduler.model.scheduling import Empty, GangPolicy, PodGroup, PodGroupSchedulingPolicy, PodGroupSpec

API_GROUP = "scheduling.x-k8s.io"
"""``scheduling.GroupName`` of scheduler-plugins (``apis/scheduling/register.go``)."""
VERSION = "v1alpha1"
API_VERSION = f"{API_GROUP}/{VERSION}"
PLURAL = "podgroups"
KIND = "PodGroup"
CACHE_KIND = f"{KIND}.{API_GROUP}"
"""The cache's and the informer's name for this kind (``podgroups.scheduling.x-k8s.io`` in kubectl's
spelling of a resource), apart from the workload API's ``PodGroup``."""

POD_GROUP_LABEL = f"{API_GROUP}/pod-group"
"""``v1alpha1.PodGroupLabel`` (``scheduling.GroupName + "/pod-group"``): the pod label naming its PodGroup."""
LEGACY_POD_GROUP_LABEL = "pod-group.scheduling.sigs.k8s.io"
"""The label of scheduler-plugins before the API moved to ``scheduling.x-k8s.io`` (``"pod-group." +
scheduling.GroupName`` with the group ``scheduling.sigs.k8s.io``); still read, after :data:`POD_GROUP_LABEL`."""

# PodGroupPhase (types.go): the phases scheduler-plugins' controller and Coscheduling's PostBind write.
PENDING = "Pending"
PRE_SCHEDULING = "PreScheduling"
SCHEDULING = "Scheduling"
SCHEDULED = "Scheduled"
RUNNING = "Running"
FINISHED = "Finished"
FAILED = "Failed"
TERMINAL_PHASES = frozenset({FINISHED, FAILED})
"""The controller stops reconciling a group in these phases (``podgroup_controller.go`` ``Reconcile``)."""


class CoschedulingPodGroupSpec(KubeModel):
    """``v1alpha1.PodGroupSpec``: ``minMember`` (int32), ``minResources`` (a ResourceList, quantities as
    written), ``scheduleTimeoutSeconds`` (int32, seconds)."""

    min_member: Int32 = 0
    min_resources: dict[str, str | int] = Field(default_factory=dict)
    schedule_timeout_seconds: Int32 | None = None


class CoschedulingPodGroupStatus(KubeModel):
    """``v1alpha1.PodGroupStatus``: ``phase``, ``occupiedBy``, the counters (int32) and ``scheduleStartTime``."""

    phase: str = ""
    occupied_by: str = ""
    scheduled: Int32 = 0
    running: Int32 = 0
    succeeded: Int32 = 0
    failed: Int32 = 0
    schedule_start_time: Time | None = None


class CoschedulingPodGroup(KubeModel):
    """``scheduling.x-k8s.io/v1alpha1 PodGroup`` as the CRD defines it (types.go)."""

    api_version: str = API_VERSION
    kind: str = KIND
    metadata: OwnedObjectMeta = Field(default_factory=OwnedObjectMeta)
    spec: CoschedulingPodGroupSpec = Field(default_factory=CoschedulingPodGroupSpec)
    status: CoschedulingPodGroupStatus = Field(default_factory=CoschedulingPodGroupStatus)


class CoscheduledPodGroup(PodGroup):
    """A :class:`CoschedulingPodGroup` as the scheduler reads every PodGroup (:func:`to_podgroup`): a
    :class:`PodGroup` with ``apiVersion`` ``scheduling.x-k8s.io/v1alpha1`` and the CRD object it came from in
    :attr:`source` (its status is what the status writer compares; its spec what is reported)."""

    source: CoschedulingPodGroup = Field(default_factory=CoschedulingPodGroup)


def to_podgroup(obj: CoschedulingPodGroup) -> CoscheduledPodGroup:
    """The PodGroup the scheduler reads for ``obj`` (module docstring): gang ``minCount = minMember`` when
    ``minMember`` ≥ 1, else ``basic``; same metadata."""
    policy = (PodGroupSchedulingPolicy(gang=GangPolicy(min_count=obj.spec.min_member)) if obj.spec.min_member >= 1
              else PodGroupSchedulingPolicy(basic=Empty()))
    return CoscheduledPodGroup(api_version=obj.api_version, kind=KIND, metadata=obj.metadata,
                               spec=PodGroupSpec(scheduling_policy=policy), source=obj)


def label_link(labels: Mapping[str, str]) -> str | None:
    """The ``scheduling.x-k8s.io`` PodGroup a pod's ``labels`` name: :data:`POD_GROUP_LABEL`, else
    :data:`LEGACY_POD_GROUP_LABEL` (``util.GetPodGroupLabel`` reads the first); None when neither is set."""
    return labels.get(POD_GROUP_LABEL) or labels.get(LEGACY_POD_GROUP_LABEL) or None


def api_group_of(group: PodGroup) -> str:
    """The API group a PodGroup object came from: ``scheduling.x-k8s.io`` or ``scheduling.k8s.io``."""
    return API_GROUP if isinstance(group, CoscheduledPodGroup) else WORKLOAD_API_GROUP


def unhonoured_fields(group: CoscheduledPodGroup) -> list[tuple[str, str]]:
    """The fields ``group`` sets that the scheduler does not act on, as ``(field path, why)`` (module
    docstring); empty when it sets none. Reported by ``simulate`` (a warning) and ``run`` (an Event on the
    PodGroup)."""
    spec = group.source.spec
    out = []
    if spec.min_resources:
        listed = ", ".join(f"{k}={v}" for k, v in sorted(spec.min_resources.items()))
        out.append(("spec.minResources", f"{listed} is not checked as a cluster-wide total: the gang is placed only "
                                         "when every member's own requests fit, all at once"))
    if spec.schedule_timeout_seconds is not None:
        out.append(("spec.scheduleTimeoutSeconds", f"{spec.schedule_timeout_seconds} has no effect: members never "
                                                   "wait at Permit, the whole gang is placed in one cycle or not "
                                                   "at all"))
    return out


class MemberCounts(KubeModel):
    """The counts :func:`desired_status` reads of a group's member pods (pods labelled with its name, any
    scheduler): ``pods`` that exist, ``bound`` (``spec.nodeName`` set, any phase), and by phase
    ``running`` / ``succeeded`` / ``failed`` (``getCurrentPodStats``)."""

    pods: int = 0
    bound: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0


def desired_status(current: CoschedulingPodGroupStatus, min_member: int, counts: MemberCounts,
                   occupied_by: str, now: datetime) -> CoschedulingPodGroupStatus:
    """What the group's status should be now, level-triggered, as scheduler-plugins computes it.

    ``current``: the status the object shows; ``min_member``: ``spec.minMember``; ``counts``: its members now;
    ``occupied_by``: ``"<ns>/<owner>,…"`` of its first member (``fillOccupiedObj``); ``now``: the wall clock
    (UTC) for ``scheduleStartTime``. Sources: ``pkg/controllers/podgroup_controller.go`` ``Reconcile`` (the
    phases from Pending on, the counters, ``occupiedBy``) and Coscheduling's ``PostBind`` (``scheduled``,
    Scheduling / Scheduled, ``scheduleStartTime`` at the first bind):

    * a group in a terminal phase (Finished, Failed) is left as it is, as the controller leaves it;
    * ``scheduled`` = members bound; ``running`` / ``succeeded`` / ``failed`` = members by phase;
    * phase: no member, or fewer than ``minMember`` and none bound → Pending; ``minMember`` members and none
      bound → PreScheduling; some bound but fewer than ``minMember`` → Scheduling; ``minMember`` bound →
      Scheduled, then Running once ``running + succeeded >= minMember``; Failed once a member failed and
      ``failed + running + succeeded >= minMember``; Finished once ``succeeded >= minMember``;
    * ``occupiedBy`` is set once the group leaves Pending and kept; ``scheduleStartTime`` is set at the first
      bound member and kept.
    """
    if current.phase in TERMINAL_PHASES:
        return current
    need = max(min_member, 1)
    if counts.pods == 0 or (counts.pods < need and counts.bound == 0):
        phase = PENDING
    elif counts.bound == 0:
        phase = PRE_SCHEDULING
    elif counts.bound < need and counts.running + counts.succeeded < need:
        phase = SCHEDULING
    else:
        phase = RUNNING if counts.running + counts.succeeded >= need else SCHEDULED
    if counts.failed and counts.failed + counts.running + counts.succeeded >= need:
        phase = FAILED
    if counts.succeeded >= need:
        phase = FINISHED
    start = current.schedule_start_time or (now if counts.bound else None)
    return CoschedulingPodGroupStatus(
        phase=phase, occupied_by=current.occupied_by or ("" if phase == PENDING else occupied_by),
        scheduled=counts.bound, running=counts.running, succeeded=counts.succeeded, failed=counts.failed,
        schedule_start_time=start)


def occupied_by(namespace: str, owner_references: list[dict[str, object]]) -> str:
    """``status.occupiedBy`` for a group whose first member (in ``namespace``) has ``owner_references`` (raw
    ``metadata.ownerReferences``): ``"<namespace>/<owner name>"`` per owner, sorted, joined by ``,``; empty
    without owners (``fillOccupiedObj`` in ``podgroup_controller.go``)."""
    return ",".join(sorted(f"{namespace}/{ref.get('name', '')}" for ref in owner_references))


def status_patch(status: CoschedulingPodGroupStatus) -> dict[str, object]:
    """``status`` as the JSON of a merge PATCH of the status subresource (camelCase; ``scheduleStartTime``
    as RFC 3339 UTC with seconds, as ``metav1.Time`` marshals; absent fields as ``null``, which removes them)."""
    start = status.schedule_start_time
    return {"phase": status.phase or None, "occupiedBy": status.occupied_by or None, "scheduled": status.scheduled,
            "running": status.running, "succeeded": status.succeeded, "failed": status.failed,
            "scheduleStartTime": start.strftime("%Y-%m-%dT%H:%M:%SZ") if start is not None else None}
