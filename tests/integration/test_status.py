"""StatusWriter against the emulated API server: group conditions, pod Events, PodScheduled, flood control.

Everything goes over real HTTP through :class:`KubeClient`; objects are seeded through the API and
read back through it. Request counts come from the emulator's request log.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

import kmock
import pytest

from scheduler.client.kube import COMPOSITES, EVENTS, PODGROUPS, PODS, STRATEGIC_PATCH, ApiError, KubeClient, Resource
from scheduler.errors import Conflict
from scheduler.live.status_writer import OWN_WRITE_KEEP_S, StatusWriter
from scheduler.model.pod import Pod
from scheduler.model.scheduling import CompositePodGroup, PodGroup
from tests.integration.apiserver import ApiServer
from tests.integration.livekit import conflicting

NS = "ml"
PG_BODY = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "workers"},
           "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
CPG_BODY = {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup", "metadata": {"name": "train"},
            "spec": {"workloadRef": {"workloadName": "llm", "templateName": "all"},
                     "schedulingPolicy": {"gang": {"minGroupCount": 2}}}}
POD_BODY = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "worker-0"},
            "spec": {"schedulerName": "gang-scheduler", "schedulingGroup": {"podGroupName": "workers"},
                     "containers": [{"name": "c", "image": "i"}]}}
OLD = "2020-01-01T00:00:00Z"
MICROTIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
EVENT_NAME = re.compile(r"worker-0\.[0-9a-f]{16}")  # client-go's <pod name>.<hex nanoseconds>
NO_FIT = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."


@pytest.fixture
def writer(kube: KubeClient) -> StatusWriter:
    return StatusWriter(kube, "gang-scheduler", instance="gang-scheduler-0")


async def pod_group(kube: KubeClient) -> PodGroup:
    return PodGroup.model_validate(await kube.get(PODGROUPS, NS, "workers"))


async def pod(kube: KubeClient) -> Pod:
    return Pod.model_validate(await kube.get(PODS, NS, "worker-0"))


def conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in obj.get("status", {}).get("conditions", [])}


def patches(k8s: ApiServer, res: Resource) -> list[kmock.Request]:
    return [r for r in k8s if r.method == "PATCH" and r.resource == kmock.resource(res.group, res.version, res.plural)]


async def events(kube: KubeClient) -> list[dict[str, Any]]:
    items, _ = await kube.list(EVENTS, NS)
    return items


# --- PodGroup / CompositePodGroup condition --------------------------------------------------------------------


async def test_an_existing_condition_with_an_empty_message_is_sent_back_with_it(kube: KubeClient,
                                                                                writer: StatusWriter) -> None:
    # metav1.Condition.message is required (it may be ""): a Go client sends "message": "", and the server refuses
    # a condition list from which it was dropped (status.conditions[0].message: Required value)
    await kube.create(PODGROUPS, NS, PG_BODY)
    other = {"type": "example.com/Audited", "status": "True", "reason": "Audited", "message": "",
             "lastTransitionTime": OLD}
    await kube.patch(PODGROUPS, NS, "workers", {"status": {"conditions": [other]}}, sub="status")

    assert await writer.group_condition(await pod_group(kube), False, "Unschedulable", "gang workers: 1/2 placeable")
    got = conditions(await kube.get(PODGROUPS, NS, "workers"))
    assert got["example.com/Audited"] == other
    assert got["PodGroupInitiallyScheduled"]["message"] == "gang workers: 1/2 placeable"


async def test_condition_written_false_then_true(kube: KubeClient, writer: StatusWriter, k8s: ApiServer) -> None:
    await kube.create(PODGROUPS, NS, PG_BODY)

    assert await writer.group_condition(await pod_group(kube), False, "Unschedulable", "gang workers: 1/2 placeable")
    cond = conditions(await kube.get(PODGROUPS, NS, "workers"))["PodGroupInitiallyScheduled"]
    assert {k: v for k, v in cond.items() if k != "lastTransitionTime"} == {
        "type": "PodGroupInitiallyScheduled", "status": "False", "reason": "Unschedulable",
        "message": "gang workers: 1/2 placeable", "observedGeneration": 1}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", cond["lastTransitionTime"])

    assert await writer.group_condition(await pod_group(kube), True, "Scheduled", "2/2 pods bound")
    cond = conditions(await kube.get(PODGROUPS, NS, "workers"))["PodGroupInitiallyScheduled"]
    assert (cond["status"], cond["reason"], cond["message"]) == ("True", "Scheduled", "2/2 pods bound")
    assert len(patches(k8s, PODGROUPS)) == 2
    assert all(r.subresource == "status" for r in patches(k8s, PODGROUPS))
    assert not k8s.errors


@pytest.mark.refusals_expected
async def test_a_condition_on_a_group_deleted_meanwhile_is_dropped_quietly(kube: KubeClient, writer: StatusWriter,
                                                                          caplog: pytest.LogCaptureFixture) -> None:
    await kube.create(PODGROUPS, NS, PG_BODY)
    gone = await pod_group(kube)
    await kube.delete(PODGROUPS, NS, "workers")
    with caplog.at_level("INFO"):
        assert not await writer.group_condition(gone, False, "Unschedulable", "gang workers: 1/2 placeable",
                                                raise_errors=True)  # not raised: nothing to retry
    assert [r for r in caplog.records if r.levelname == "WARNING"] == []


async def test_true_is_terminal(kube: KubeClient, writer: StatusWriter, k8s: ApiServer) -> None:
    await kube.create(PODGROUPS, NS, PG_BODY)
    stale = await pod_group(kube)
    assert await writer.group_condition(stale, True, "Scheduled", "bound")
    stored = await kube.get(PODGROUPS, NS, "workers")

    assert not await writer.group_condition(await pod_group(kube), False, "Unschedulable", "later failure")
    assert len(patches(k8s, PODGROUPS)) == 1  # judged on the fresh object: no request at all

    # A stale cached copy (no condition yet) is caught by the resourceVersion precondition: 409, re-read, no write.
    seen = len(list(k8s))
    assert not await writer.group_condition(stale, False, "Unschedulable", "later failure")
    assert [(r.method, r.subresource) for r in list(k8s)[seen:]] == [("PATCH", "status"), ("GET", None)]
    assert await kube.get(PODGROUPS, NS, "workers") == stored
    assert [getattr(e, "status", None) for e in k8s.errors] == [409]  # the rejected stale PATCH


@pytest.mark.parametrize(("conflicts", "written"), [(2, True), (3, True), (4, False)])
async def test_a_one_shot_condition_survives_writers_landing_in_between(
        kube: KubeClient, writer: StatusWriter, k8s: ApiServer, conflicts: int, written: bool) -> None:
    """Found by the starvation test flaking: ``NodesReserved=False/Fitted`` met two 409s in a row (the
    group's other conditions were being written at the same moment) and was lost, since nothing writes it
    again. A write is now tried up to 4 times, each on the group read again."""
    await kube.create(PODGROUPS, NS, PG_BODY)
    conflicting(k8s, conflicts)

    assert await writer.group_reservation(await pod_group(kube), False, "Fitted", "the group fitted") is written

    stored = conditions(await kube.get(PODGROUPS, NS, "workers"))
    assert ("NodesReserved" in stored) is written
    assert len(patches(k8s, PODGROUPS)) == min(conflicts + 1, 4)


async def test_identical_repeat_writes_nothing(kube: KubeClient, writer: StatusWriter, k8s: ApiServer) -> None:
    await kube.create(PODGROUPS, NS, PG_BODY)
    assert await writer.group_condition(await pod_group(kube), False, "Unschedulable", NO_FIT)

    for _ in range(3):
        assert not await writer.group_condition(await pod_group(kube), False, "Unschedulable", NO_FIT)

    assert len(patches(k8s, PODGROUPS)) == 1


async def test_new_generation_is_written_with_same_message(kube: KubeClient, writer: StatusWriter,
                                                           k8s: ApiServer) -> None:
    # The emulator never bumps generation; hand the writer a copy as the cache would see it after a spec change.
    await kube.create(PODGROUPS, NS, PG_BODY)
    assert await writer.group_condition(await pod_group(kube), False, "Unschedulable", NO_FIT)
    group = await pod_group(kube)
    bumped = group.model_copy(update={"metadata": group.metadata.model_copy(update={"generation": 2})})

    assert await writer.group_condition(bumped, False, "Unschedulable", NO_FIT)

    cond = conditions(await kube.get(PODGROUPS, NS, "workers"))["PodGroupInitiallyScheduled"]
    assert cond["observedGeneration"] == 2


async def seed_conditions(kube: KubeClient) -> None:
    """A PodGroup with a DisruptionTarget and an old False condition, written through ``/status``."""
    await kube.create(PODGROUPS, NS, PG_BODY)
    await kube.patch(PODGROUPS, NS, "workers", {"status": {"conditions": [
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
         "message": "gang-scheduler: preempting", "lastTransitionTime": OLD},
        {"type": "PodGroupInitiallyScheduled", "status": "False", "reason": "Unschedulable",
         "message": "old message", "lastTransitionTime": OLD, "observedGeneration": 1},
    ]}}, sub="status")


async def test_message_change_keeps_last_transition_time(kube: KubeClient, writer: StatusWriter) -> None:
    await seed_conditions(kube)

    assert await writer.group_condition(await pod_group(kube), False, "Unschedulable", "new message")
    cond = conditions(await kube.get(PODGROUPS, NS, "workers"))["PodGroupInitiallyScheduled"]
    assert (cond["message"], cond["lastTransitionTime"]) == ("new message", OLD)

    assert await writer.group_condition(await pod_group(kube), True, "Scheduled", "bound")
    cond = conditions(await kube.get(PODGROUPS, NS, "workers"))["PodGroupInitiallyScheduled"]
    assert cond["status"] == "True" and cond["lastTransitionTime"] != OLD


async def test_other_condition_types_preserved(kube: KubeClient, writer: StatusWriter) -> None:
    await seed_conditions(kube)

    assert await writer.group_condition(await pod_group(kube), True, "Scheduled", "bound")

    stored = (await kube.get(PODGROUPS, NS, "workers"))["status"]["conditions"]
    assert [c["type"] for c in stored] == ["DisruptionTarget", "PodGroupInitiallyScheduled"]
    assert stored[0] == {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                         "message": "gang-scheduler: preempting", "lastTransitionTime": OLD}


async def test_composite_gets_composite_condition_type(kube: KubeClient, writer: StatusWriter,
                                                       k8s: ApiServer) -> None:
    await kube.create(COMPOSITES, NS, CPG_BODY)
    cpg = CompositePodGroup.model_validate(await kube.get(COMPOSITES, NS, "train"))

    assert await writer.group_condition(cpg, False, "Invalid", "tree depth 5 > 4")

    stored = await kube.get(COMPOSITES, NS, "train")
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in stored["status"]["conditions"]] == [
        ("CompositePodGroupInitiallyScheduled", "False", "Invalid", "tree depth 5 > 4")]
    assert len(patches(k8s, COMPOSITES)) == 1 and not patches(k8s, PODGROUPS)


async def test_condition_message_truncated_to_limit(kube: KubeClient, writer: StatusWriter) -> None:
    await kube.create(PODGROUPS, NS, PG_BODY)

    assert await writer.group_condition(await pod_group(kube), False, "Unschedulable", "x" * 40000)

    message = conditions(await kube.get(PODGROUPS, NS, "workers"))["PodGroupInitiallyScheduled"]["message"]
    assert len(message.encode()) <= 32768 and message == "x" * 32765 + "…"


async def test_group_write_error_is_logged_not_raised(kube: KubeClient, writer: StatusWriter, k8s: ApiServer,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    await kube.create(PODGROUPS, NS, PG_BODY)
    k8s["patch", kmock.resource("scheduling.k8s.io/v1beta1/podgroups")] << 500 << {
        "kind": "Status", "code": 500, "reason": "InternalError", "message": "etcd is down"}

    with caplog.at_level(logging.WARNING, logger="scheduler.live.status_writer"):
        assert not await writer.group_condition(await pod_group(kube), True, "Scheduled", "bound")

    assert "status" not in await kube.get(PODGROUPS, NS, "workers")
    assert [r.getMessage() for r in caplog.records] == [
        "status write failed: PodGroup ml/workers: 500 InternalError: etcd is down"]


# --- pod Events and PodScheduled -------------------------------------------------------------------------------


async def test_scheduled_event_shape(kube: KubeClient, writer: StatusWriter) -> None:
    await kube.create(PODS, NS, POD_BODY)
    p = await pod(kube)

    await writer.pod_scheduled(p, "node-17")

    [event] = await events(kube)
    md = event.pop("metadata")
    assert EVENT_NAME.fullmatch(md["name"]) and md["namespace"] == NS and "generateName" not in md
    assert MICROTIME.fullmatch(event.pop("eventTime"))
    assert event == {
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "type": "Normal", "reason": "Scheduled",
        "action": "Binding", "note": "Successfully assigned ml/worker-0 to node-17",
        "reportingController": "gang-scheduler", "reportingInstance": "gang-scheduler-0",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": NS, "name": "worker-0",
                      "uid": p.metadata.uid}}
    assert p.metadata.uid


async def test_failed_scheduling_event_and_condition(kube: KubeClient, writer: StatusWriter,
                                                     k8s: ApiServer) -> None:
    await kube.create(PODS, NS, POD_BODY)
    p = await pod(kube)

    await writer.pod_unschedulable(p, "Unschedulable", NO_FIT)

    [event] = await events(kube)
    assert {k: event[k] for k in ("type", "reason", "action", "note", "reportingController")} == {
        "type": "Warning", "reason": "FailedScheduling", "action": "Scheduling", "note": NO_FIT,
        "reportingController": "gang-scheduler"}
    assert event["regarding"]["uid"] == p.metadata.uid
    cond = conditions(await kube.get(PODS, NS, "worker-0"))["PodScheduled"]
    assert {k: v for k, v in cond.items() if k != "lastTransitionTime"} == {
        "type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": NO_FIT,
        "observedGeneration": 1}
    [patch] = patches(k8s, PODS)
    assert patch.subresource == "status" and patch.headers["Content-Type"] == STRATEGIC_PATCH


async def test_scheduler_error_keeps_other_pod_conditions(kube: KubeClient, writer: StatusWriter) -> None:
    await kube.create(PODS, NS, POD_BODY)
    await kube.patch(PODS, NS, "worker-0", {"status": {"conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "old",
         "lastTransitionTime": OLD},
        {"type": "PodReadyToStartContainers", "status": "False", "lastTransitionTime": OLD}]}}, sub="status")

    await writer.pod_unschedulable(await pod(kube), "SchedulerError", "pods of one tree name two schedulers")

    stored = (await kube.get(PODS, NS, "worker-0"))["status"]["conditions"]
    assert stored == [
        {"type": "PodScheduled", "status": "False", "reason": "SchedulerError",
         "message": "pods of one tree name two schedulers", "lastTransitionTime": OLD, "observedGeneration": 1},
        {"type": "PodReadyToStartContainers", "status": "False", "lastTransitionTime": OLD}]


async def test_long_note_truncated_to_1024_bytes(kube: KubeClient, writer: StatusWriter) -> None:
    await kube.create(PODS, NS, POD_BODY)
    message = "é" * 600  # 1200 bytes

    await writer.pod_unschedulable(await pod(kube), "Unschedulable", message)

    [event] = await events(kube)
    assert event["note"] == "é" * 510 + "…" and len(event["note"].encode()) <= 1024
    assert conditions(await kube.get(PODS, NS, "worker-0"))["PodScheduled"]["message"] == message


async def test_identical_failure_repeated_is_written_once(kube: KubeClient, writer: StatusWriter,
                                                          k8s: ApiServer) -> None:
    await kube.create(PODS, NS, POD_BODY)
    p = await pod(kube)

    for _ in range(3):
        await writer.pod_unschedulable(p, "Unschedulable", NO_FIT)

    assert len(await events(kube)) == 1
    assert len(patches(k8s, PODS)) == 1


async def test_changed_failure_message_is_written_at_once(kube: KubeClient, writer: StatusWriter,
                                                          k8s: ApiServer) -> None:
    await kube.create(PODS, NS, POD_BODY)

    await writer.pod_unschedulable(await pod(kube), "Unschedulable", NO_FIT)
    await writer.pod_unschedulable(await pod(kube), "Unschedulable", "0/4 nodes are available: 4 Too many pods.")

    assert sorted(e["note"] for e in await events(kube)) == [NO_FIT, "0/4 nodes are available: 4 Too many pods."]
    assert conditions(await kube.get(PODS, NS, "worker-0"))["PodScheduled"]["message"] == \
        "0/4 nodes are available: 4 Too many pods."
    assert len(patches(k8s, PODS)) == 2


async def test_message_that_changes_back_rewrites_the_condition_but_not_its_event(kube: KubeClient,
                                                                                  writer: StatusWriter,
                                                                                  k8s: ApiServer) -> None:
    await kube.create(PODS, NS, POD_BODY)
    waiting = "gang workers: 3/4 pods exist (minCount 4)"

    for message in (waiting, NO_FIT, waiting):  # a fourth pod came and went within the interval
        await writer.pod_unschedulable(await pod(kube), "Unschedulable", message)

    assert conditions(await kube.get(PODS, NS, "worker-0"))["PodScheduled"]["message"] == waiting
    assert sorted(e["note"] for e in await events(kube)) == sorted([waiting, NO_FIT])
    assert not patches(k8s, EVENTS)  # the third report counts into the first Event's series, written later
    assert len(patches(k8s, PODS)) == 3


@pytest.mark.looptime
async def test_identical_failure_after_interval_is_written_again(kube: KubeClient, writer: StatusWriter,
                                                                 k8s: ApiServer) -> None:
    await kube.create(PODS, NS, POD_BODY)
    await writer.pod_unschedulable(await pod(kube), "Unschedulable", NO_FIT)

    await asyncio.sleep(59)
    await writer.pod_unschedulable(await pod(kube), "Unschedulable", NO_FIT)
    assert len(await events(kube)) == 1

    await asyncio.sleep(2)  # 61 s after the first write
    await writer.pod_unschedulable(await pod(kube), "Unschedulable", NO_FIT)

    [event] = await events(kube)  # one Event whose series counts all three observations
    assert event["series"]["count"] == 3 and MICROTIME.fullmatch(event["series"]["lastObservedTime"])
    assert len(patches(k8s, EVENTS)) == 1
    assert len(patches(k8s, PODS)) == 1  # the pod already carries this exact condition
    assert len(writer._recent) == 1  # the expired entry was replaced, not kept


async def test_event_post_500_does_not_raise(kube: KubeClient, writer: StatusWriter, k8s: ApiServer,
                                             caplog: pytest.LogCaptureFixture) -> None:
    await kube.create(PODS, NS, POD_BODY)
    p = await pod(kube)
    k8s["post", kmock.resource("events.k8s.io/v1/events")] << 500 << {
        "kind": "Status", "code": 500, "reason": "InternalError", "message": "etcd is down"}

    with caplog.at_level(logging.WARNING, logger="scheduler.live.status_writer"):
        await writer.pod_scheduled(p, "node-17")
        await writer.pod_unschedulable(p, "Unschedulable", NO_FIT)

    assert await events(kube) == []
    assert conditions(await kube.get(PODS, NS, "worker-0"))["PodScheduled"]["reason"] == "Unschedulable"
    assert [r.getMessage() for r in caplog.records] == [
        "status write failed: Pod ml/worker-0 event Scheduled: 500 InternalError: etcd is down",
        "status write failed: Pod ml/worker-0 event FailedScheduling: 500 InternalError: etcd is down"]


# --- Events a real API server accepts, repeats as a series -------------------------------------------


async def test_an_event_named_from_the_pod_alone_is_refused_and_the_writers_event_is_accepted(
        kube: KubeClient, writer: StatusWriter, caplog: pytest.LogCaptureFixture, k8s: ApiServer) -> None:
    await kube.create(PODS, NS, {**POD_BODY, "metadata": {"name": "fits-2"}})
    p = Pod.model_validate(await kube.get(PODS, NS, "fits-2"))
    old = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"generateName": "fits-2.", "namespace": NS},
           "eventTime": "2026-11-29T10:00:00.000000Z", "reportingController": "gang-scheduler",
           "reportingInstance": "gang-scheduler-0", "action": "Binding", "reason": "Scheduled", "type": "Normal",
           "note": "Successfully assigned ml/fits-2 to node-17",
           "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": NS, "name": "fits-2", "uid": p.metadata.uid}}

    with k8s.expecting_refusal("metadata.generateName"), pytest.raises(ApiError) as info:  # the body sent before
        await kube.create(EVENTS, NS, old)
    with caplog.at_level(logging.WARNING, logger="scheduler.live.status_writer"):
        await writer.pod_scheduled(p, "node-17")
        await writer.pod_unschedulable(p, "Unschedulable", NO_FIT)

    assert (info.value.status, info.value.reason) == (422, "Invalid")
    assert 'is invalid: metadata.generateName: Invalid value: "fits-2.": a lowercase RFC 1123 subdomain' \
        in info.value.message
    assert caplog.records == []
    assert sorted(e["reason"] for e in await events(kube)) == ["FailedScheduling", "Scheduled"]
    assert all(re.fullmatch(r"fits-2\.[0-9a-f]{16}", e["metadata"]["name"]) for e in await events(kube))


async def test_a_condition_on_a_pod_changed_since_raises_for_a_retry_and_the_retry_writes_it(
        kube: KubeClient, writer: StatusWriter) -> None:
    """The pod changed after the copy the report was made against (another writer): the condition's 409 is raised to
    the queue and not remembered as written; written again against the pod as it is now, it lands. The attempt's
    Event is a write of its own: recorded whatever becomes of the condition."""
    await kube.create(PODS, NS, POD_BODY)
    stale = await pod(kube)
    await kube.patch(PODS, NS, "worker-0", {"metadata": {"labels": {"team": "a"}}})
    await writer.failed_scheduling_event(stale, "Unschedulable", NO_FIT)
    with pytest.raises(Conflict):
        await writer.unschedulable_condition(stale, "Unschedulable", NO_FIT, raise_errors=True)
    assert await writer.unschedulable_condition(await pod(kube), "Unschedulable", NO_FIT, raise_errors=True)
    assert [e["note"] for e in await events(kube)] == [NO_FIT]
    assert conditions(await kube.get(PODS, NS, "worker-0"))["PodScheduled"]["message"] == NO_FIT


async def test_a_report_made_before_our_own_nomination_write_is_sent_against_the_version_it_produced(
        kube: KubeClient, writer: StatusWriter, k8s: ApiServer) -> None:
    """The scheduler's own nominatedNodeName write lands between the cached copy and the report made from it: the
    report waits for that write and goes against the version it produced, so it is not refused; a change by anyone
    else since still refuses it (a pod bound since is left alone)."""
    await kube.create(PODS, NS, POD_BODY)
    copy = await pod(kube)
    writer.nominating([copy])  # decided: the write is sent after the report is made
    report = asyncio.create_task(writer.unschedulable_condition(copy, "Unschedulable", NO_FIT, raise_errors=True))
    await asyncio.sleep(0.1)
    assert not report.done() and not patches(k8s, PODS)  # it waits for our write
    await writer.pod_nomination(copy, "n1")
    assert await report
    stored = await kube.get(PODS, NS, "worker-0")
    assert stored["status"]["nominatedNodeName"] == "n1"
    assert conditions(stored)["PodScheduled"]["message"] == NO_FIT
    assert not k8s.errors

    writer.nominating([copy])
    await writer.pod_nomination(copy, None)
    await kube.bind(NS, "worker-0", "node-17")  # a change that is not ours
    with pytest.raises(Conflict):
        await writer.unschedulable_condition(copy, "Unschedulable", "0/4 nodes are available.", raise_errors=True)
    assert conditions(await kube.get(PODS, NS, "worker-0"))["PodScheduled"]["status"] == "True"


@pytest.mark.looptime
async def test_what_our_nomination_writes_produced_is_kept_only_while_a_report_may_use_it(
        kube: KubeClient, writer: StatusWriter) -> None:
    """A write that produced no version a report could use (the pod bound since) is forgotten as it ends; one that did
    is kept for the reports queued before it ended, and forgotten a while after (:data:`OWN_WRITE_KEEP_S`)."""
    await kube.create(PODS, NS, POD_BODY)
    await kube.create(PODS, NS, {**POD_BODY, "metadata": {"name": "worker-1"}})
    await kube.bind(NS, "worker-1", "node-17")
    pending, bound = await pod(kube), Pod.model_validate(await kube.get(PODS, NS, "worker-1"))
    writer.nominating([pending, bound])
    await writer.pod_nomination(pending, "n1")
    await writer.pod_nomination(bound, None)
    assert list(writer._own) == [pending.key]
    await asyncio.sleep(OWN_WRITE_KEEP_S + 1)
    writer.nominating([])
    assert not writer._own


async def test_longest_pod_name_gets_a_uuid_named_event(kube: KubeClient, writer: StatusWriter) -> None:
    name = "p" * 253  # a valid pod name; "<name>.<hex>" would be 270 characters
    await kube.create(PODS, NS, {**POD_BODY, "metadata": {"name": name}})
    p = Pod.model_validate(await kube.get(PODS, NS, name))

    await writer.pod_unschedulable(p, "Unschedulable", NO_FIT)

    [event] = await events(kube)
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", event["metadata"]["name"])
    assert event["regarding"]["name"] == name


async def test_long_identity_is_cut_to_the_reporting_instance_limit(kube: KubeClient) -> None:
    await kube.create(PODS, NS, POD_BODY)
    writer = StatusWriter(kube, "gang-scheduler", instance="i" * 200)

    await writer.pod_scheduled(await pod(kube), "node-17")

    [event] = await events(kube)
    assert event["reportingInstance"] == "i" * 128


async def test_concurrent_identical_events_create_one_event(kube: KubeClient, writer: StatusWriter,
                                                            k8s: ApiServer) -> None:
    await kube.create(PODS, NS, POD_BODY)
    p = await pod(kube)

    await asyncio.gather(writer.pod_scheduled(p, "node-17"), writer.pod_scheduled(p, "node-17"))

    assert len(await events(kube)) == 1
    assert not patches(k8s, EVENTS)  # the repeat is counted; a series is written an interval later at the earliest


async def test_failed_event_create_is_forgotten_and_tried_again(kube: KubeClient, writer: StatusWriter,
                                                                k8s: ApiServer) -> None:
    await kube.create(PODS, NS, POD_BODY)
    p = await pod(kube)
    view = k8s["post", kmock.resource("events.k8s.io/v1/events")]
    n = len(view)
    view[n:n + 1] << 500 << {"kind": "Status", "code": 500, "reason": "InternalError", "message": "etcd is down"}

    await writer.pod_scheduled(p, "node-17")
    assert await events(kube) == []
    await writer.pod_scheduled(p, "node-17")

    [event] = await events(kube)
    assert "series" not in event


@pytest.mark.looptime
async def test_series_is_written_at_most_once_per_interval_then_ends(kube: KubeClient, writer: StatusWriter,
                                                                     k8s: ApiServer) -> None:
    await kube.create(PODS, NS, POD_BODY)
    loop = asyncio.get_running_loop()
    start, counts = loop.time(), list[int | None]()
    for at in (0, 30, 61, 90, 125):  # seconds of loop time; the writer's interval is 60 s
        await asyncio.sleep(start + at - loop.time())
        await writer.pod_unschedulable(await pod(kube), "Unschedulable", NO_FIT)
        [event] = await events(kube)
        counts.append((event.get("series") or {}).get("count"))

    assert counts == [None, None, 3, 3, 5]  # 30 s and 90 s are counted only; 61 s and 125 s write the count
    assert [r.headers["Content-Type"] for r in patches(k8s, EVENTS)] == [STRATEGIC_PATCH] * 2
    first_patch = patches(k8s, EVENTS)[0].data
    assert first_patch["series"]["count"] == 3 and first_patch.keys() == {"series"}
    assert MICROTIME.fullmatch(first_patch["series"]["lastObservedTime"])

    await asyncio.sleep(361)  # past client-go's 6-minute finishTime: the series has ended
    await writer.pod_unschedulable(await pod(kube), "Unschedulable", NO_FIT)

    second = [e for e in await events(kube) if e["metadata"]["name"] != event["metadata"]["name"]]
    assert [e.get("series") for e in second] == [None]  # a new Event, not a sixth count on the old one


@pytest.mark.looptime
async def test_series_of_an_event_the_server_dropped_recreates_it(kube: KubeClient, writer: StatusWriter) -> None:
    await kube.create(PODS, NS, POD_BODY)
    await writer.pod_unschedulable(await pod(kube), "Unschedulable", NO_FIT)
    [first] = await events(kube)
    await kube.delete(EVENTS, NS, first["metadata"]["name"])  # what the API server's --event-ttl (1 h) does

    await asyncio.sleep(61)
    await writer.pod_unschedulable(await pod(kube), "Unschedulable", NO_FIT)

    [again] = await events(kube)
    assert again["metadata"]["name"] == first["metadata"]["name"] and again["series"]["count"] == 2
    assert {k: again[k] for k in ("eventTime", "note", "reason")} == {k: first[k] for k in ("eventTime", "note",
                                                                                           "reason")}


async def test_report_on_a_pod_bound_meanwhile_writes_no_event(kube: KubeClient, writer: StatusWriter) -> None:
    # the server's order: our report is about the pod as the cache saw it; the bind lands first
    await kube.create(PODS, NS, POD_BODY)
    stale = await pod(kube)
    await kube.bind(NS, "worker-0", "node-17")

    await writer.pod_unschedulable(stale, "Unschedulable", NO_FIT)

    assert await events(kube) == []
    assert conditions(await kube.get(PODS, NS, "worker-0"))["PodScheduled"]["status"] == "True"


async def test_the_preempting_event_names_the_victims_of_its_own_namespace_only(kube: KubeClient,
                                                                               writer: StatusWriter) -> None:
    await kube.create(PODGROUPS, NS, PG_BODY)
    await writer.preempting(await pod_group(kube), [(f"{NS}/low-0", "n0"), ("other/theirs-0", "n1"),
                                                    ("other/theirs-1", "n1")])
    [event] = await events(kube)
    assert event["reason"] == "Preempting"
    assert event["note"] == (f"Preempting 3 pod(s) of lower priority to make room: {NS}/low-0 on n0, "
                             "2 in other namespaces")
