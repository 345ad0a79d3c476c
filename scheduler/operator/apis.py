"""Which group API the cluster serves, by discovery: the operator's one decision about the cluster.

* ``scheduling.k8s.io/v1beta1`` podgroups served (v1.37 with ``GenericWorkload`` and the beta group
  enabled, reference §0): pods get ``spec.schedulingGroup.podGroupName`` — the field exists exactly
  where this API does, so the served API is the honest proxy for the pod field. CompositePodGroups
  are made only where ``v1alpha3`` compositepodgroups are served too.
* else ``scheduling.x-k8s.io/v1alpha1`` podgroups served (the scheduler-plugins CRD): pods get the
  label ``scheduling.x-k8s.io/pod-group``; one PodGroup per gang (that API has no trees).
* neither: :class:`NoGroupApi` — the operator has nothing to write and does not start.

Read once at start: an API enabled later needs a restart (the chart's Deployment rolls on upgrade).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from scheduler.errors import GangSchedulerError
from scheduler.live.kube import COMPOSITES, PODGROUPS, KubeClient, Resource
from scheduler.model import coscheduling

COSCHEDULING_PODGROUPS = Resource(coscheduling.API_GROUP, coscheduling.VERSION, coscheduling.PLURAL, True,
                                  coscheduling.KIND)
"""scheduler-plugins' PodGroup as the operator writes it: ``kind`` is the object's own (``PodGroup``), where
:data:`scheduler.live.kube.COSCHEDULING_PODGROUPS` carries the cache's name for the kind."""


class NoGroupApi(GangSchedulerError):
    """Neither ``scheduling.k8s.io/v1beta1`` nor ``scheduling.x-k8s.io/v1alpha1`` PodGroups are served."""


class Flavour(enum.Enum):
    """The group API the operator writes."""

    WORKLOAD = "scheduling.k8s.io"
    COSCHEDULING = "scheduling.x-k8s.io"


@dataclass(frozen=True)
class Served:
    """What discovery found. ``composite``: CompositePodGroups can be written (implies ``WORKLOAD``)."""

    flavour: Flavour
    composite: bool = False

    @property
    def podgroups(self) -> Resource:
        """The PodGroup resource to write."""
        return PODGROUPS if self.flavour is Flavour.WORKLOAD else COSCHEDULING_PODGROUPS


async def discover(kube: KubeClient) -> Served:
    """Ask the API server (``GET /apis/{group}/{version}``) which group API it serves; raises
    :class:`NoGroupApi` when neither is, and :class:`~scheduler.live.kube.ApiError` when discovery fails."""
    if PODGROUPS.plural in await kube.served(PODGROUPS.group_version):
        return Served(Flavour.WORKLOAD, composite=COMPOSITES.plural in await kube.served(COMPOSITES.group_version))
    if COSCHEDULING_PODGROUPS.plural in await kube.served(COSCHEDULING_PODGROUPS.group_version):
        return Served(Flavour.COSCHEDULING)
    raise NoGroupApi(f"neither {PODGROUPS.group_version} nor {COSCHEDULING_PODGROUPS.group_version} podgroups are "
                     "served: enable GenericWorkload (v1.37) or install the scheduler-plugins PodGroup CRD")
