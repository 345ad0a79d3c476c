"""Which PodGroup APIs to read when discovery finds more than at start, and what a pod of an API not read is told."""

from __future__ import annotations

from scheduler.client import podgroup_api
from scheduler.client.discovery import GroupApis, merged, unread_apis


def test_an_api_found_later_is_added_and_none_is_dropped_or_changed() -> None:
    crd_only = GroupApis(None, True)
    assert merged(crd_only, GroupApis(podgroup_api.V1BETA1, False)) == GroupApis(podgroup_api.V1BETA1, True)
    v136 = GroupApis(podgroup_api.V1ALPHA2, False)
    assert merged(v136, GroupApis(podgroup_api.V1BETA1, True)) == GroupApis(podgroup_api.V1ALPHA2, True)
    both = GroupApis(podgroup_api.V1BETA1, True)
    assert merged(both, GroupApis(None, False)) == both


def test_each_api_not_served_names_when_it_is_looked_for_again() -> None:
    assert unread_apis(GroupApis(podgroup_api.V1BETA1, True), 30.0) == {}
    assert unread_apis(GroupApis(None, True), 12.5) == {
        "scheduling.k8s.io": "the scheduling.k8s.io PodGroup API is not served (looked for again every 12.5 s)"}
    assert unread_apis(GroupApis(podgroup_api.V1ALPHA2, False), 30.0) == {
        "scheduling.x-k8s.io": "scheduler-plugins' PodGroup CRD (scheduling.x-k8s.io/v1alpha1) is not served (looked "
                               "for again every 30 s)"}
