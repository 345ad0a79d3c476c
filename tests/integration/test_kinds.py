"""``run`` lists and watches the rows of the table of kinds (``scheduler.model.kinds``), as each row says.

``watched_resources`` asks the emulated API server what it serves; the resources it returns are compared with
the rows of the table, by their ``live`` rule: watched always, in the PodGroup API discovery chose, only with
preemption, or when the server serves them (the four DRA kinds all or none). A row added to the table is
expected in the watch list by the same rule. Clusters: v1.37 (everything served), v1.36 (PodGroups as
v1alpha2, no CompositePodGroup, no scheduler-plugins CRD), v1.25 with scheduler-plugins (no workload API, no DRA).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.client.discovery import GroupApis, discover_group_apis, watched_resources
from scheduler.client.kube import KubeClient, Resource
from scheduler.model import kinds
from scheduler.model.kinds import IfServed, Kind, Watch
from tests.integration.apiserver import ApiServer


def expected(groups: GroupApis, preemption: bool, served: set[str]) -> list[Resource]:
    """The watch list the table's rules give: ``served`` is the set of ``group/version/plural`` paths."""
    def watched(kind: Kind[Any]) -> list[Resource]:
        res = Resource.of(kind)
        if kind.live is Watch.ALWAYS or (kind.live is Watch.PREEMPTION and preemption):
            return [res]
        if kind.live is Watch.GROUP_API:
            return [r for r in groups.resources if r.kind == kind.name]
        if isinstance(kind.live, IfServed):
            together = [k for k in kinds.KINDS if k.live == kind.live and k.api_version() == kind.api_version()] \
                if kind.live.all_or_none else [kind]
            return [res] if all(f"{k.api_version()}/{k.plural}" in served for k in together) else []
        return []

    return [r for kind in kinds.KINDS for r in watched(kind)]


def paths(k8s: ApiServer) -> set[str]:
    """``group/version/plural`` of what ``k8s`` serves (``version/plural`` for the core group)."""
    return {"/".join(p for p in (r.group, r.version, r.plural) if p) for r in k8s.resources}


@pytest.mark.parametrize("preemption", [True, False], ids=["preemption", "no-preemption"])
@pytest.mark.parametrize("version", [
    pytest.param("1.37", marks=pytest.mark.kubernetes("1.37")),
    pytest.param("1.36", marks=pytest.mark.kubernetes("1.36")),
    pytest.param("1.25", marks=pytest.mark.kubernetes("1.25")),
])
async def test_run_watches_the_rows_of_the_table_by_their_rule(k8s: ApiServer, kube: KubeClient, version: str,
                                                                preemption: bool) -> None:
    groups = await discover_group_apis(kube)
    resources = await watched_resources(kube, preemption, groups)
    assert resources == expected(groups, preemption, paths(k8s))
    assert len(set(resources)) == len(resources)
    # what each cluster leaves out, said plainly (so the rule above cannot pass by leaving everything out)
    by_kind = {r.kind for r in resources}
    assert {kinds.POD.name, kinds.NODE.name, kinds.NAMESPACE.name, kinds.PRIORITY_CLASS.name} <= by_kind
    assert (kinds.POD_DISRUPTION_BUDGET.name in by_kind) is preemption
    assert (kinds.COMPOSITE_POD_GROUP.name in by_kind) is (version == "1.37")
    assert (kinds.RESOURCE_CLAIM.name in by_kind) is (version != "1.25")
    assert {kinds.PERSISTENT_VOLUME_CLAIM.name, kinds.CSI_NODE.name} <= by_kind
    podgroups = {r.group_version for r in resources if r.plural == "podgroups"}
    assert podgroups == {"1.37": {"scheduling.k8s.io/v1beta1", "scheduling.x-k8s.io/v1alpha1"},
                         "1.36": {"scheduling.k8s.io/v1alpha2"}, "1.25": {"scheduling.x-k8s.io/v1alpha1"}}[version]


async def test_an_optional_kind_the_server_does_not_serve_is_left_out_alone(k8s: ApiServer, kube: KubeClient) -> None:
    """A storage kind is watched when served, each on its own; the DRA kinds only all together."""
    del k8s.resources["storage.k8s.io/v1/csinodes"]
    del k8s.resources["resource.k8s.io/v1/deviceclasses"]
    groups = await discover_group_apis(kube)
    resources = await watched_resources(kube, True, groups)
    assert resources == expected(groups, True, paths(k8s))
    by_kind = {r.kind for r in resources}
    assert kinds.CSI_NODE.name not in by_kind and kinds.STORAGE_CLASS.name in by_kind
    assert not by_kind & {k.name for k in kinds.KINDS if k.group == "resource.k8s.io"}
