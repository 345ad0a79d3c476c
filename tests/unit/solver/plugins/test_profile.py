"""The default profile: kube's filter order with every dynamic plugin, and the variants a solve runs with
(``Profile.gates``: plugins no pending pod needs are left out)."""

from __future__ import annotations

import pytest

from scheduler.framework import NodeTable, Snapshot
from scheduler.model.pod import Pod
from scheduler.solver.plugins import DEFAULT_PROFILE, Profile
from tests.unit.groups.builders import NS
from tests.unit.solver.builders import pod
from tests.unit.solver.storage_builders import with_volumes

VOLUME_PLUGINS = ["VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone"]


def names(plugins: tuple[object, ...]) -> list[str]:
    return [p.name for p in plugins]  # type: ignore[attr-defined]


def test_filters_run_in_kubes_default_profile_order() -> None:
    assert names(DEFAULT_PROFILE.filters) == ["NodePorts", "NodeResourcesFit", *VOLUME_PLUGINS, "PodTopologySpread",
                                              "InterPodAffinity", "DynamicResources"]
    assert names(DEFAULT_PROFILE.reservers)[0] == "DynamicResources"  # the only one that may reserve fewer


def variant(devices: bool, volumes: bool) -> Profile:
    snapshot = Snapshot.build(NodeTable.build([]), [])
    if devices:
        snapshot = Snapshot(snapshot.table, snapshot.used, snapshot.infos, dra=object())  # type: ignore[arg-type]
    member: Pod = pod("w-0", namespace=NS)
    if volumes:
        member = with_volumes(member, "data")
    return DEFAULT_PROFILE.for_pods(snapshot, [member])


@pytest.mark.parametrize(("devices", "volumes", "filters"), [
    pytest.param(True, True, ["NodeResourcesFit", *VOLUME_PLUGINS, "DynamicResources"], id="devices-and-volumes"),
    pytest.param(False, True, ["NodeResourcesFit", *VOLUME_PLUGINS], id="volumes-without-a-device-view"),
    pytest.param(True, False, ["NodeResourcesFit", "DynamicResources"], id="no-pod-names-a-volume"),
    pytest.param(False, False, ["NodeResourcesFit"], id="plain-gang"),
])
def test_a_solve_leaves_out_the_plugins_it_cannot_need(devices: bool, volumes: bool, filters: list[str]) -> None:
    profile = variant(devices, volumes)
    assert names(profile.filters) == filters
    assert set(names(profile.pre_filters)) == set(filters) - {"NodeResourcesFit"}
    assert set(names(profile.reservers)) == set(filters) - {"VolumeZone"}
    assert variant(devices, volumes) is profile  # made once
