"""The emulator's validation (``apivalidation.py`` via ``apiserver.py``): it must reject what a real API server rejects.

Events the scheduler once sent were refused by real clusters (``metadata.generateName: Invalid value:
"fits-2."``) while the emulator stored it. These tests pin the server rules the emulator now applies, so a test that
passes against it does not fail on a cluster for the same reason. Rules and messages: see ``apivalidation.py``.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import kmock
import pytest

from scheduler.client.kube import EVENTS, PODGROUPS, PODS, ApiError, KubeClient, Resource
from tests.integration import apivalidation as av
from tests.integration.apiserver import ApiServer

pytestmark = pytest.mark.refusals_expected  # these tests provoke the server's refusals and assert each one

NS = "ml"
CORE_EVENTS = Resource("", "v1", "events", True, "Event")
SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
                 "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
                 r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


def event(**over: Any) -> dict[str, Any]:
    """A valid ``events.k8s.io/v1`` Event for pod ml/fits-2, as kube-scheduler's recorder writes one."""
    body: dict[str, Any] = {
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "fits-2.18a2b3c4d5e6f708", "namespace": NS},
        "eventTime": "2026-11-29T10:00:00.123456Z", "reportingController": "gang-scheduler",
        "reportingInstance": "gang-scheduler-0", "action": "Scheduling", "reason": "FailedScheduling",
        "type": "Warning", "note": "0/3 nodes are available",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": NS, "name": "fits-2", "uid": "u1"}}
    for key, value in over.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value
    return body


def fields(errs: list[av.FieldError]) -> list[str]:
    return [e.field for e in errs]


# --- names ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, ok", [
    ("fits-2", True),
    ("fits-2.18a2b3c4d5e6f708", True),          # client-go's <name>.<hex nanoseconds>
    ("a" * 253, True),
    ("a" * 254, False),                          # over the 253-character limit
    ("fits-2.", False),                          # ends in '.'
    (".fits-2", False),
    ("Fits-2", False),                           # upper case
    ("fits_2", False),
    ("fits..2", False),                          # empty label
    ("-fits", False),
    ("", False),
], ids=lambda v: repr(v)[:24])
def test_dns_subdomain(name: str, ok: bool) -> None:
    assert (av.dns1123_subdomain(name) == []) is ok


@pytest.mark.parametrize("generate_name, fields_", [
    ("fits-2.", ["metadata.generateName"]),      # the old StatusWriter prefix: rejected though "fits-2.vn75x" is fine
    ("fits-2-", []),                             # a trailing '-' is allowed in a prefix (maskTrailingDash)
    ("fits-2", []),
    ("Fits-2-", ["metadata.generateName", "metadata.name"]),
], ids=["trailing-dot-rejected", "trailing-dash-allowed", "plain", "upper-case-both-fields"])
def test_generate_name_is_checked_as_a_prefix_and_the_generated_name_as_a_name(generate_name: str,
                                                                                 fields_: list[str]) -> None:
    md = {"generateName": generate_name, "name": av.generate_name(generate_name, random.Random(1))}
    assert fields(av.validate_metadata(md, "subdomain")) == fields_


def test_old_generate_name_error_reads_like_the_issue() -> None:
    md = {"generateName": "fits-2.", "name": "fits-2.vn75x"}
    [err] = av.validate_metadata(md, "subdomain")
    assert str(err) == f'metadata.generateName: Invalid value: "fits-2.": {SUBDOMAIN_MSG}'


def test_generated_name_is_prefix_cut_to_58_plus_5_characters_of_the_server_alphabet() -> None:
    name = av.generate_name("x" * 100, random.Random(7))
    assert len(name) == 63 and name.startswith("x" * 58)
    assert set(name[58:]) <= set(av.GENERATED_ALPHABET)


def test_name_rules_per_kind() -> None:
    assert av.name_rule("", "v1", "pods", "Pod") == "subdomain"
    assert av.name_rule("events.k8s.io", "v1", "events", "Event") == "subdomain"
    assert av.name_rule("", "v1", "namespaces", "Namespace") == "label"
    assert av.name_rule("", "v1", "events", "Event") == "segment"  # core v1 Events skip ObjectMeta validation
    assert fields(av.validate_metadata({"name": "a.b"}, "label")) == ["metadata.name"]
    assert av.validate_metadata({"generateName": "fits-2.", "name": "fits-2.vn75x"}, "segment") == []
    assert fields(av.validate_metadata({"name": "a/b"}, "segment")) == ["metadata.name"]


@pytest.mark.parametrize("value, ok", [
    ("gang-scheduler", True), ("example.com/gang-scheduler", True), ("Gang_Scheduler.v2", True),
    ("a" * 64, False), ("gang scheduler", False), ("a/b/c", False), ("/x", False), ("", False),
], ids=lambda v: repr(v)[:24])
def test_qualified_name(value: str, ok: bool) -> None:
    assert (av.qualified_name(value) == []) is ok


# --- events.k8s.io/v1 Event bodies ----------------------------------------------------------------------------


def test_a_well_formed_event_passes() -> None:
    assert av.validate_event_create(event()) == []
    assert av.validate_event_create(event(series={"count": 2, "lastObservedTime": "2026-11-29T10:01:00.000000Z"})) \
        == []


@pytest.mark.parametrize("over, fields_", [
    ({"eventTime": None}, ["eventTime"]),
    ({"reportingController": None}, ["reportingController", "reportingController", "reportingController"]),
    ({"reportingController": "gang scheduler"}, ["reportingController"]),
    ({"reportingInstance": None}, ["reportingInstance"]),
    ({"reportingInstance": "i" * 129}, ["reportingInstance"]),
    ({"action": None}, ["action"]),
    ({"action": "a" * 129}, ["action"]),
    ({"reason": None}, ["reason"]),
    ({"reason": "r" * 129}, ["reason"]),
    ({"note": "é" * 513}, ["message"]),          # 1026 bytes: the limit is in bytes
    ({"type": "Error"}, ["type"]),
    ({"type": None}, ["type"]),
    ({"regarding": None}, ["involvedObject.namespace"]),
    ({"series": {"count": 1, "lastObservedTime": "2026-11-29T10:01:00.000000Z"}}, ["series.count"]),
    ({"series": {"count": 2}}, ["series.lastObservedTime"]),
    ({"deprecatedCount": 1}, ["count"]),
    ({"deprecatedFirstTimestamp": "2026-11-29T10:00:00Z"}, ["firstTimestamp"]),
    ({"deprecatedSource": {"component": "gang-scheduler"}}, ["source"]),
    ({"metadata": {"generateName": "fits-2.", "name": "fits-2.vn75x", "namespace": NS}}, ["metadata.generateName"]),
    ({"metadata": {"name": "x" * 250 + ".18a2b3c4d5e6f708", "namespace": NS}}, ["metadata.name"]),
], ids=["no-eventTime", "no-controller", "controller-not-qualified", "no-instance", "instance-129",
        "no-action", "action-129", "no-reason", "reason-129", "note-over-1024-bytes", "type-Error", "no-type",
        "no-regarding", "series-count-1", "series-no-time", "deprecatedCount", "deprecatedFirstTimestamp",
        "deprecatedSource", "old-generateName", "name-over-253"])
def test_event_create_rule(over: dict[str, Any], fields_: list[str]) -> None:
    assert fields(av.validate_event_create(event(**over))) == fields_


def test_event_update_allows_only_the_series_to_change() -> None:
    old = event()
    series = {"count": 2, "lastObservedTime": "2026-11-29T10:01:00.000000Z"}
    assert av.validate_event_update(event(series=series), old) == []
    assert fields(av.validate_event_update(event(note="changed"), old)) == ["message"]
    assert fields(av.validate_event_update(event(series={"count": 1, "lastObservedTime": "x"}), old)) == \
        ["series.count"]


def test_invalid_status_has_the_real_servers_shape() -> None:
    errs = av.validate_metadata({"generateName": "fits-2.", "name": "fits-2.vn75x"}, "subdomain")
    assert av.invalid_status("events.k8s.io", "Event", "fits-2.vn75x", errs) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": 422, "reason": "Invalid",
        "message": f'Event.events.k8s.io "fits-2.vn75x" is invalid: metadata.generateName: Invalid value: '
                   f'"fits-2.": {SUBDOMAIN_MSG}',
        "details": {"name": "fits-2.vn75x", "group": "events.k8s.io", "kind": "Event", "causes": [
            {"reason": "FieldValueInvalid", "field": "metadata.generateName",
             "message": f'Invalid value: "fits-2.": {SUBDOMAIN_MSG}'}]}}


# --- over HTTP --------------------------------------------------------------------------------------------------


async def test_event_with_the_old_generate_name_gets_the_issues_422_and_is_not_stored(kube: KubeClient,
                                                                                       k8s: ApiServer) -> None:
    old = event(metadata={"generateName": "fits-2.", "namespace": NS})

    with pytest.raises(ApiError) as info:
        await kube.create(EVENTS, NS, old)

    assert (info.value.status, info.value.reason) == (422, "Invalid")
    assert info.value.message.startswith('Event.events.k8s.io "fits-2.')
    assert f'is invalid: metadata.generateName: Invalid value: "fits-2.": {SUBDOMAIN_MSG}' in info.value.message
    assert (await kube.list(EVENTS, NS))[0] == []
    [post] = [r for r in k8s if r.method == "POST"]
    assert post.resource == kmock.resource("events.k8s.io/v1/events")


async def test_422_body_is_a_status_with_causes(k8s: ApiServer) -> None:
    resp = await k8s.post(f"/apis/events.k8s.io/v1/namespaces/{NS}/events", json=event(eventTime=None, action=None))
    body = await resp.json()

    assert resp.status == 422
    assert (body["kind"], body["status"], body["reason"], body["code"]) == ("Status", "Failure", "Invalid", 422)
    assert [(c["reason"], c["field"]) for c in body["details"]["causes"]] == [
        ("FieldValueRequired", "action"), ("FieldValueRequired", "eventTime")]


@pytest.mark.parametrize("res, body", [
    (PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "Fits_2"}, "spec": {"containers": []}}),
    (PODGROUPS, {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"generateName": "g."},
                 "spec": {"schedulingPolicy": {"basic": {}}}}),
], ids=["pod-upper-case-name", "podgroup-generate-name-with-dot"])
async def test_every_kind_gets_the_name_rule(kube: KubeClient, res: Resource, body: dict[str, Any]) -> None:
    with pytest.raises(ApiError) as info:
        await kube.create(res, NS, body)

    assert (info.value.status, info.value.reason) == (422, "Invalid")
    assert (await kube.list(res, NS))[0] == []


async def test_core_v1_events_keep_their_lax_name_rule(kube: KubeClient) -> None:
    body = {"apiVersion": "v1", "kind": "Event", "metadata": {"generateName": "fits-2."},
            "involvedObject": {"kind": "Pod", "namespace": NS, "name": "fits-2"}, "reason": "Scheduled"}

    created = await kube.create(CORE_EVENTS, NS, body)

    assert created["metadata"]["name"].startswith("fits-2.")


async def test_event_patch_may_set_the_series_but_not_change_the_note(kube: KubeClient) -> None:
    await kube.create(EVENTS, NS, event())
    name = event()["metadata"]["name"]
    series = {"count": 2, "lastObservedTime": "2026-11-29T10:01:00.000000Z"}

    patched = await kube.patch(EVENTS, NS, name, {"series": series})
    with pytest.raises(ApiError) as info:
        await kube.patch(EVENTS, NS, name, {"note": "changed"})

    assert patched["series"] == series
    assert info.value.status == 422 and "message: Invalid value" in info.value.message
    assert (await kube.get(EVENTS, NS, name))["note"] == "0/3 nodes are available"


async def test_event_time_that_go_cannot_decode_is_a_400(kube: KubeClient) -> None:
    with pytest.raises(ApiError) as info:
        await kube.create(EVENTS, NS, event(eventTime="2026-11-29 10:00"))

    assert (info.value.status, info.value.reason) == (400, "BadRequest")


async def test_annotations_over_256_kib_are_refused_on_patch(kube: KubeClient) -> None:
    """``ValidateAnnotations`` runs on every update: a large durable intent would meet it."""
    body = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "g"},
            "spec": {"schedulingPolicy": {"basic": {}}}}
    await kube.create(PODGROUPS, NS, body)
    fits = "x" * (av.TOTAL_ANNOTATION_SIZE_MAX - len("a/b"))

    await kube.patch(PODGROUPS, NS, "g", {"metadata": {"annotations": {"a/b": fits}}})
    with pytest.raises(ApiError) as info:
        await kube.patch(PODGROUPS, NS, "g", {"metadata": {"annotations": {"a/b": fits + "x"}}})

    assert (info.value.status, info.value.reason) == (422, "Invalid")
    assert info.value.message.endswith(
        'is invalid: metadata.annotations: Too long: may not be more than 262144 bytes')
    assert (await kube.get(PODGROUPS, NS, "g"))["metadata"]["annotations"]["a/b"] == fits


def test_annotation_keys_must_be_qualified_names() -> None:
    assert fields(av.validate_annotations({"annotations": {"gang-scheduler.io/intent": "{}", "a b": ""}})) == [
        "metadata.annotations"]


# --- the server's timing: graceful pod deletion, the watch after the response ---------------------------------

BOUND_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
             "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]}}


async def test_a_bound_pod_deleted_stays_terminating_until_its_kubelet_confirms(k8s: ApiServer,
                                                                               kube: KubeClient) -> None:
    k8s.kubelet_after_s = None  # the test is the kubelet
    await kube.create(PODS, NS, BOUND_POD)
    await kube.delete(PODS, NS, "p")
    md = (await kube.get(PODS, NS, "p"))["metadata"]
    assert md["deletionGracePeriodSeconds"] == 30 and md["deletionTimestamp"]  # the pod's default grace period
    assert k8s.terminating() == [(NS, "p")]
    await kube.delete(PODS, NS, "p")  # again: nothing changes, the pod stays terminating
    assert k8s.terminating() == [(NS, "p")]

    assert await k8s.kubelet_confirm() == 1
    with pytest.raises(ApiError) as gone:
        await kube.get(PODS, NS, "p")
    assert gone.value.status == 404 and k8s.terminating() == []


@pytest.mark.parametrize("pod_body, options", [
    pytest.param(BOUND_POD, {"gracePeriodSeconds": 0}, id="grace-period-0"),
    pytest.param({**BOUND_POD, "spec": {"containers": [{"name": "c", "image": "i"}]}}, None, id="never-scheduled"),
    pytest.param({**BOUND_POD, "status": {"phase": "Succeeded"}}, None, id="already-terminated"),
])
async def test_a_pod_that_needs_no_kubelet_goes_at_once(k8s: ApiServer, kube: KubeClient, pod_body: dict[str, Any],
                                                       options: dict[str, Any] | None) -> None:
    k8s.kubelet_after_s = None
    await kube.create(PODS, NS, pod_body)
    await kube.delete(PODS, NS, "p", body=options)
    with pytest.raises(ApiError) as gone:
        await kube.get(PODS, NS, "p")
    assert gone.value.status == 404


async def test_the_watch_shows_concurrent_writes_once_each_in_resource_version_order(k8s: ApiServer,
                                                                                   kube: KubeClient) -> None:
    """Each write's event is published after its response, and never before the events of writes answered
    earlier: a watcher sees every resourceVersion once, increasing."""
    _, since = await kube.list(PODS, NS)
    names = [f"p{i}" for i in range(20)]
    await asyncio.gather(*(kube.create(PODS, NS, {**BOUND_POD, "metadata": {"name": n}}) for n in names))
    seen: list[int] = []
    async with asyncio.timeout(10):
        async for event in kube.watch(PODS, since, NS):
            seen.append(int(event["object"]["metadata"]["resourceVersion"]))
            if len(seen) == len(names):
                break
    assert seen == sorted(seen) and len(set(seen)) == len(names)


GATED = {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}], "nodeSelector": {"zone": "a"}}
NOT_ADDED = 'spec.nodeSelector: Invalid value: {"zone":"b"}: only additions to spec.nodeSelector are allowed'


@pytest.mark.parametrize(("old", "new", "refused"), [
    (GATED, {**GATED, "nodeSelector": {"zone": "a", "flavor": "spot"}}, None),  # gated: a selector entry added
    (GATED, {"nodeSelector": {"zone": "a", "flavor": "spot"}}, None),  # and the gate removed in the same update
    (GATED, {**GATED, "nodeSelector": {"zone": "b"}}, NOT_ADDED),  # an entry changed, not added
    (GATED, {**GATED, "nodeSelector": {"other": "x"}}, "only additions to spec.nodeSelector are allowed"),
    ({"nodeSelector": {"zone": "a"}}, {"nodeSelector": {"zone": "a", "flavor": "spot"}},  # not gated
     "pod updates may not change fields"),
    (GATED, {**GATED, "schedulingGroup": {"podGroupName": "other"}}, "pod updates may not change fields"),
])
async def test_a_gated_pods_node_selector_may_only_grow(kube: KubeClient, old: dict[str, Any], new: dict[str, Any],
                                                        refused: str | None) -> None:
    """``ValidatePodUpdate`` with KEP-3838's relaxation, over HTTP: while the stored pod has scheduling gates,
    entries may be added to its ``nodeSelector`` (how Kueue sets a flavor's node labels as it ungates a pod), in
    the same update that removes the gate; changing or removing one is refused as the real server refuses it."""
    created = await kube.create(PODS, NS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "main", "image": "example.com/x:1"}], **old}})
    spec = {k: v for k, v in created["spec"].items() if k not in old}
    update = {**created, "spec": {**spec, **new}}
    if refused is None:
        assert (await kube.replace(PODS, NS, "p", update))["spec"].get("nodeSelector") == new["nodeSelector"]
    else:
        with pytest.raises(ApiError) as err:
            await kube.replace(PODS, NS, "p", update)
        assert err.value.status == 422 and refused in err.value.message, err.value.message


async def test_a_binding_whose_uid_is_not_the_pods_is_a_conflict(kube: KubeClient) -> None:
    """BindingREST binds under a UID precondition: a plan made for a pod since deleted and recreated under the same
    name does not bind the new one."""
    await kube.create(PODS, NS, {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
    uid = (await kube.get(PODS, NS, "p"))["metadata"]["uid"]
    with pytest.raises(ApiError) as refused:
        await kube.bind(NS, "p", "n0", uid="another-uid")
    assert refused.value.status == 409 and "Precondition failed: UID in precondition: another-uid" in str(refused.value)
    await kube.bind(NS, "p", "n0", uid=uid)
    assert (await kube.get(PODS, NS, "p"))["spec"]["nodeName"] == "n0"
