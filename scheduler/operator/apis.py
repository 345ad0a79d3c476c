"""Which group API the cluster serves, by discovery: the operator's one decision about the cluster.

* a ``scheduling.k8s.io`` PodGroup version is served — ``v1beta1`` (v1.37 with ``GenericWorkload`` and
  the beta group enabled), else ``v1alpha2`` (v1.36 with ``GenericWorkload``), chosen by the scheduler's
  own :func:`scheduler.client.podgroup_api.discover` and :data:`~scheduler.client.podgroup_api.PREFERENCE`
  (the v1alpha2 → v1beta1 API change of KEP-5832), so operator and scheduler always speak the same version:
  pods get ``spec.schedulingGroup.podGroupName`` (core/v1 ``PodSchedulingGroup`` is in the PodSpec of both
  releases, gated by the same ``GenericWorkload`` that serves the API, so the served API is the
  honest proxy for the pod field). CompositePodGroups are made only on v1beta1 where ``v1alpha3``
  compositepodgroups are served too (v1.36 has none, and a v1alpha2 PodGroup has no
  ``parentCompositePodGroupName``). On v1alpha2 ``gang.minCount`` is immutable (:attr:`Served.mutable_minimum`).
* else ``scheduling.x-k8s.io/v1alpha1`` podgroups served (the scheduler-plugins CRD): pods get the
  label ``scheduling.x-k8s.io/pod-group``; one PodGroup per gang (that API has no trees).
* neither: :class:`NoGroupApi` — the operator has nothing to write and does not start.

Read at start, and asked again while the operator runs: when another API is served it stops, to be started again
for it (``scheduler.operator.runner``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from scheduler.client import podgroup_api
from scheduler.client.discovery import discover_group_apis
from scheduler.client.kube import COMPOSITES, KubeClient, Resource
from scheduler.client.podgroup_api import PodGroupApi
from scheduler.errors import GangSchedulerError
from scheduler.model import coscheduling

COSCHEDULING_PODGROUPS = Resource(coscheduling.API_GROUP, coscheduling.VERSION, coscheduling.PLURAL, True,
                                  coscheduling.KIND)
"""scheduler-plugins' PodGroup as the operator writes it: ``kind`` is the object's own (``PodGroup``), where
:data:`scheduler.client.kube.COSCHEDULING_PODGROUPS` carries the cache's name for the kind."""


class NoGroupApi(GangSchedulerError):
    """No ``scheduling.k8s.io`` PodGroup version we read, nor ``scheduling.x-k8s.io/v1alpha1`` PodGroups, is served."""


class Flavour(enum.Enum):
    """The group API the operator writes."""

    WORKLOAD = "scheduling.k8s.io"
    COSCHEDULING = "scheduling.x-k8s.io"


@dataclass(frozen=True)
class Served:
    """What discovery found. ``workload``: the ``scheduling.k8s.io`` PodGroup version written (``WORKLOAD`` only);
    ``composite``: CompositePodGroups can be written (implies ``WORKLOAD`` on v1beta1)."""

    flavour: Flavour
    composite: bool = False
    workload: PodGroupApi = podgroup_api.V1BETA1

    @property
    def podgroups(self) -> Resource:
        """The PodGroup resource to write."""
        return self.workload.resource if self.flavour is Flavour.WORKLOAD else COSCHEDULING_PODGROUPS

    @property
    def mutable_minimum(self) -> bool:
        """Whether a PodGroup's minimum can be patched: ``minCount`` in the ``scheduling.k8s.io/v1beta1``
        ``PodGroup`` API, ``minMember`` in scheduler-plugins; not in v1alpha2, whose whole ``PodGroupSpec`` is
        immutable (v1.36 OpenAPI: every field says "This field is immutable")."""
        return self.flavour is Flavour.COSCHEDULING or self.workload is not podgroup_api.V1ALPHA2

    def describe(self) -> str:
        """What is written, for the log and the health probe (``scheduling.k8s.io/v1alpha2``, …)."""
        composite = " with CompositePodGroups" if self.composite else ""
        return f"{self.podgroups.group_version}{composite}"


async def discover(kube: KubeClient) -> Served:
    """Ask the API server (``GET /apis/{group}/{version}``) which group API it serves — the scheduler's own discovery
    (:func:`scheduler.client.discovery.discover_group_apis`), so the two always read and write the same API; raises
    :class:`NoGroupApi` (with the scheduler's not-ready message) when none is, and
    :class:`~scheduler.client.kube.ApiError` when discovery fails."""
    groups = await discover_group_apis(kube)
    if groups.podgroups is not None:
        composite = (groups.podgroups is podgroup_api.V1BETA1
                     and COMPOSITES.plural in await kube.served(COMPOSITES.group_version))
        return Served(Flavour.WORKLOAD, composite=composite, workload=groups.podgroups)
    if groups.coscheduling:
        return Served(Flavour.COSCHEDULING)
    raise NoGroupApi(groups.problem)
