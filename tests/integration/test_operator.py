"""The operator (``gang-scheduler operator``) against the emulated API server:
kopf's managed webhook configurations, the webhooks called over HTTPS with AdmissionReviews,
PodGroups created, owned and kept in step with the Job, and a Job's pods bound all or nothing by
the scheduler."""

from __future__ import annotations

import asyncio
import json

import kmock
import pytest

from scheduler.client import podgroup_api
from scheduler.client.kube import COMPOSITES, NODES, PODGROUPS, PODGROUPS_V1ALPHA2, PODS, KubeClient, Resource
from scheduler.operator.apis import COSCHEDULING_PODGROUPS, Flavour, NoGroupApi, discover
from scheduler.operator.runner import GroupApiChanged
from tests.integration.conftest import VERBS
from tests.integration.livekit import NS, until
from tests.integration.operatorkit import (
    CONFIGURATION,
    JOBS,
    LWS,
    MUTATING,
    VALIDATING,
    Admission,
    drop_workload_api,
    job,
    job_pod,
    operating,
    register,
    review,
)

OPT_IN = {"key": "gang-scheduler.io/gang", "operator": "In", "values": ["true"]}


@pytest.fixture
def served(k8s):  # type: ignore[no-untyped-def]
    register(k8s)
    return k8s


async def podgroup_of(kube: KubeClient, name: str) -> dict | None:
    items, _ = await kube.list(PODGROUPS, NS)
    return next((pg for pg in items if pg["metadata"]["name"] == name), None)


async def min_count(kube: KubeClient, name: str) -> int | None:
    pg = await podgroup_of(kube, name)
    return pg["spec"]["schedulingPolicy"]["gang"]["minCount"] if pg else None


@pytest.mark.looptime
async def test_kopf_manages_the_webhook_configurations(served, kube: KubeClient) -> None:
    async with operating(served, kube):
        mutating = await kube.get(MUTATING, None, CONFIGURATION)
        validating = await kube.get(VALIDATING, None, CONFIGURATION)
    # stopped: the persistent mutating webhooks stay (opted-in pods are refused, not scheduled alone),
    # the validating ones are taken out
    after = await kube.get(MUTATING, None, CONFIGURATION)
    assert [h["name"] for h in after["webhooks"]] == [h["name"] for h in mutating["webhooks"]]
    assert not (await kube.get(VALIDATING, None, CONFIGURATION)).get("webhooks")
    # one webhook per handler; the JobSet / PyTorchJob ones have no rules here, as those kinds are not served
    hooks = {tuple(h["rules"][0]["resources"]): h for h in mutating["webhooks"] if h["rules"]}
    assert len(mutating["webhooks"]) == 5
    pods = hooks[("pods",)]
    assert pods["objectSelector"] == {"matchExpressions": [OPT_IN]}  # only opted-in pods wait on us
    assert pods["failurePolicy"] == "Fail" and pods["sideEffects"] == "None"
    assert pods["rules"][0]["operations"] == ["CREATE"]
    assert pods["name"] == f"pods-gang.{CONFIGURATION}"  # kopf's <handler>.<configuration>: ≥ 3 segments
    assert pods["clientConfig"]["caBundle"] and pods["clientConfig"]["url"].startswith("https://127.0.0.1:")
    assert {("jobs",), ("leaderworkersets",)} <= hooks.keys()  # JobSet/PyTorchJob are not served here
    checks = {h["rules"][0]["resources"][0]: h for h in validating["webhooks"] if h["rules"]}
    assert checks.keys() == {"podgroups", "compositepodgroups"}
    assert all(h["failurePolicy"] == "Ignore" for h in checks.values())
    # CREATE only: the scheduler's own PodGroup writes (conditions, as it binds) never wait on the operator
    assert all(h["rules"][0]["operations"] == ["CREATE"] for h in checks.values())


@pytest.mark.looptime
async def test_a_configuration_name_without_a_domain_is_refused_by_the_api_server(served, kube: KubeClient) -> None:
    # kopf names each webhook <handler>.<configuration>; the API server wants ≥ 3 dot-separated segments
    # (IsFullyQualifiedName), so "gang-scheduler-operator" makes every configuration write a 422
    refused = "should be a domain with at least three segments separated by dots"
    with served.expecting_refusal(refused), pytest.raises(Exception):  # noqa: B017 (kopf's own error)
        async with operating(served, kube, managed="gang-scheduler-operator"):
            pass
    assert any("pods-gang.gang-scheduler-operator" in r.message for r in served.refusals)
    assert not (await kube.get(MUTATING, None, "gang-scheduler-operator")).get("webhooks")


async def test_kopf_logs_in_with_the_kubeconfig_the_operator_was_given(served, tmp_path, monkeypatch) -> None:
    """``operator --kubeconfig FILE`` with no ``$KUBECONFIG`` and no ``~/.kube/config``: kopf's own logins would find
    nothing; it must watch with the file's server and token, the ones our client writes with."""
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
              "clusters": [{"name": "k", "cluster": {"server": str(served.url).rstrip("/")}}],
              "users": [{"name": "u", "user": {"token": "operator-t0ken"}}],
              "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}]}
    path = tmp_path / "kubeconfig.json"
    path.write_text(json.dumps(config))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    kube = await KubeClient.connect(str(path))
    try:
        async with operating(served, kube):
            watches = [r for r in served if r.action == kmock.action.WATCH and r.resource == "batch/v1/jobs"]
            assert watches and all(r.headers.get("Authorization") == "Bearer operator-t0ken" for r in watches)
    finally:
        await kube.close()


@pytest.mark.looptime
async def test_pod_webhook_sets_scheduler_and_group_over_https(served, kube: KubeClient) -> None:
    async with operating(served, kube):
        admission = Admission(kube)
        pod = job_pod(job("train", 2))
        pod["metadata"]["labels"]["gang-scheduler.io/gang"] = "true"
        mutated = await admission.mutated(PODS, pod)
        other = job_pod(job("other", 2))
        other["metadata"]["labels"]["gang-scheduler.io/gang"] = "true"
        other["spec"]["schedulerName"] = "volcano"
        kept = await admission.call(MUTATING, PODS, review(PODS, other))
    assert mutated["spec"]["schedulerName"] == "gang-scheduler"
    assert mutated["spec"]["schedulingGroup"] == {"podGroupName": "train"}
    assert kept["allowed"] and "patch" not in kept
    assert kept["warnings"] == [
        "spec.schedulerName 'volcano' was set explicitly: the pod is not made part of gang other"]


@pytest.mark.looptime
async def test_job_webhook_labels_the_pod_template(served, kube: KubeClient) -> None:
    async with operating(served, kube):
        mutated = await Admission(kube).mutated(JOBS, job("train", 2))
    assert mutated["spec"]["template"]["metadata"]["labels"] == {"gang-scheduler.io/gang": "true"}


@pytest.mark.looptime
async def test_validating_webhook_rejects_with_the_schedulers_messages(served, kube: KubeClient) -> None:
    await kube.create(NODES, None, {"apiVersion": "v1", "kind": "Node",
                                    "metadata": {"name": "n0", "labels": {"topology.kubernetes.io/zone": "a"}}})
    pg = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "g", "namespace": NS}}

    def group(**spec: object) -> dict:
        return {**pg, "spec": spec}

    # a cycle the operator can see: b's parent a is stored, a (applied now) names b
    for name, parent in (("b", "a"),):
        await kube.create(COMPOSITES, NS, {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
                                           "metadata": {"name": name, "namespace": NS},
                                           "spec": {"parentCompositePodGroupName": parent,
                                                    "workloadRef": {"workloadName": "w", "templateName": name},
                                                    "schedulingPolicy": {"gang": {"minGroupCount": 1}}}})
    cycle = {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
             "metadata": {"name": "a", "namespace": NS},
             "spec": {"parentCompositePodGroupName": "b", "workloadRef": {"workloadName": "w", "templateName": "a"},
                      "schedulingPolicy": {"gang": {"minGroupCount": 1}}}}
    async with operating(served, kube):
        admission = Admission(kube)
        await until(lambda: any(r.resource == "v1/nodes" for r in served), what="node index")
        both = await admission.call(VALIDATING, PODGROUPS, review(PODGROUPS, group(
            schedulingPolicy={"basic": {}, "gang": {"minCount": 2}})))
        zero = await admission.call(VALIDATING, PODGROUPS, review(PODGROUPS, group(
            schedulingPolicy={"gang": {"minCount": 0}})))
        loop = await admission.call(VALIDATING, COMPOSITES, review(COMPOSITES, cycle))
        rack = await admission.call(VALIDATING, PODGROUPS, review(PODGROUPS, group(
            schedulingPolicy={"gang": {"minCount": 2}}, schedulingConstraints={"topology": [{"key": "rack"}]})))
        zone = await admission.call(VALIDATING, PODGROUPS, review(PODGROUPS, group(
            schedulingPolicy={"gang": {"minCount": 2}},
            schedulingConstraints={"topology": [{"key": "topology.kubernetes.io/zone"}]})))
    assert not both["allowed"] and both["status"]["code"] == 422
    assert both["status"]["message"] == f"PodGroup {NS}/g: spec.schedulingPolicy must set exactly one of basic, gang"
    assert zero["status"]["message"] == f"PodGroup {NS}/g: spec.schedulingPolicy.gang.minCount must be >= 1"
    assert not loop["allowed"]
    assert loop["status"]["message"] == "cycle in parentCompositePodGroupName: a → b → a"
    assert rack["allowed"] and rack["warnings"] == [
        "spec.schedulingConstraints.topology[0].key: no node has the label 'rack'; "
        "the group cannot be placed until a node does"]
    assert zone["allowed"] and not zone.get("warnings")


@pytest.mark.looptime
async def test_job_gets_an_owned_podgroup_kept_in_step_when_scaled(served, kube: KubeClient) -> None:
    async with operating(served, kube):
        created = await kube.create(JOBS, NS, job("train", 3))
        await until(lambda: podgroup_of(kube, "train"), what="PodGroup made")
        pg = await podgroup_of(kube, "train")
        assert pg is not None
        assert pg["spec"] == {"schedulingPolicy": {"gang": {"minCount": 3}}}
        (owner,) = pg["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "Job", "train", created["metadata"]["uid"], True)
        await kube.patch(JOBS, NS, "train", {"spec": {"parallelism": 5}})
        assert await until(lambda: _is(min_count(kube, "train"), 5), what="minCount follows parallelism")
        await kube.patch(JOBS, NS, "train", {"metadata": {"annotations": {"gang-scheduler.io/min-count": "2"}}})
        assert await until(lambda: _is(min_count(kube, "train"), 2), what="minCount follows the annotation")
        await kube.create(JOBS, NS, job("plain", 3, opted_in=False))
        await kube.create(JOBS, NS, job("later", 1))
        await until(lambda: podgroup_of(kube, "later"), what="the next Job's PodGroup")
    assert await podgroup_of(kube, "plain") is None  # not opted in: left alone


async def _is(coro, value) -> bool:  # type: ignore[no-untyped-def]
    return (await coro) == value


@pytest.mark.looptime
async def test_leaderworkerset_groups_follow_replicas(served, kube: KubeClient) -> None:
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
           "metadata": {"name": "serve", "namespace": NS, "labels": {"gang-scheduler.io/gang": "true"}},
           "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 4, "workerTemplate": {"spec": {"containers": []}}}}}

    async def names() -> set[str]:
        pgs, _ = await kube.list(PODGROUPS, NS)
        cpgs, _ = await kube.list(COMPOSITES, NS)
        return {pg["metadata"]["name"] for pg in pgs + cpgs}

    async with operating(served, kube):
        await kube.create(LWS, NS, lws)
        want = {"serve-0", "serve-0-leader", "serve-0-workers", "serve-1", "serve-1-leader", "serve-1-workers"}
        assert await until(lambda: _is(names(), want), what="two groups of leader + workers")
        workers = await podgroup_of(kube, "serve-0-workers")
        assert workers is not None and workers["spec"]["parentCompositePodGroupName"] == "serve-0"
        assert workers["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
        await kube.patch(LWS, NS, "serve", {"spec": {"replicas": 1}})
        assert await until(lambda: _is(names(), {"serve-0", "serve-0-leader", "serve-0-workers"}),
                           what="the second group removed on scale-down")
        assert await warning_events(kube, "GangNeverStarts") == []
        ready = {**lws, "metadata": {**lws["metadata"], "name": "ready"},
                 "spec": {**lws["spec"], "replicas": 1, "startupPolicy": "LeaderReady"}}
        await kube.create(LWS, NS, ready)
        (never,) = await until(lambda: warning_events(kube, "GangNeverStarts"), what="GangNeverStarts event")
        assert await until(lambda: _is(names(), {"serve-0", "serve-0-leader", "serve-0-workers", "ready-0",
                                                 "ready-0-leader", "ready-0-workers"}), what="its groups made")
    assert never["involvedObject"]["name"] == "ready"
    assert never["message"].startswith("no group of it can start: startupPolicy LeaderReady: a group's workers are "
                                       "made once its leader is ready")


@pytest.fixture
def plugins_only(k8s):  # type: ignore[no-untyped-def]
    """A cluster with no workload API, but the scheduler-plugins PodGroup CRD."""
    register(k8s)
    drop_workload_api(k8s)
    return k8s


@pytest.mark.looptime
async def test_scheduler_plugins_cluster_gets_min_member_and_the_pod_label(plugins_only, kube: KubeClient) -> None:
    async with operating(plugins_only, kube):
        admission = Admission(kube)
        validating = await kube.get(VALIDATING, None, CONFIGURATION)
        stored = await kube.create(JOBS, NS, await admission.mutated(JOBS, job("train", 3)))
        pg = await until(lambda: _first(kube.list(COSCHEDULING_PODGROUPS, NS)), what="scheduler-plugins PodGroup")
        pod = await admission.mutated(PODS, job_pod(stored))
    assert pg["spec"] == {"minMember": 3} and pg["metadata"]["ownerReferences"][0]["name"] == "train"
    assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "train"
    assert pod["spec"]["schedulerName"] == "gang-scheduler" and "schedulingGroup" not in pod["spec"]
    assert validating.get("webhooks") in (None, [])  # nothing of scheduling.k8s.io to check here


async def _first(coro):  # type: ignore[no-untyped-def]
    items, _ = await coro
    return items[0] if items else None


@pytest.mark.looptime
async def test_the_operator_stops_when_the_cluster_serves_another_group_api(served, kube: KubeClient) -> None:
    """The handlers are made for the group API served at start: while discovery finds it, the operator runs on; once
    another is served (here the workload API switched off, scheduler-plugins' CRD left), it stops after two answers
    in a row find it, with GroupApiChanged, to be started again for it."""
    with pytest.raises(GroupApiChanged, match=r"^the cluster now serves scheduling\.x-k8s\.io/v1alpha1, where the "
                                              r"operator was started for scheduling\.k8s\.io/v1beta1 with "
                                              r"CompositePodGroups: stopped, to start again for it$"):
        async with operating(served, kube, discovery_interval_s=30) as task:
            await asyncio.sleep(100)  # three discoveries finding what was served at start
            assert not task.done()
            drop_workload_api(served)
            await asyncio.sleep(31)  # one answer: looked at again
            assert not task.done()
            await asyncio.sleep(30)
            assert task.done()


@pytest.mark.looptime
async def test_one_answer_or_a_failed_discovery_does_not_stop_the_operator(served, kube: KubeClient) -> None:
    """An API server's passing answers — CompositePodGroups missing from one discovery, discovery failing with 500 —
    stop nothing: it takes two answers in a row finding another API."""
    composites = "scheduling.k8s.io/v1alpha3/compositepodgroups"
    info = served.resources[composites]
    failing = served["get /apis/scheduling.k8s.io/v1beta1"]
    async with operating(served, kube, discovery_interval_s=30) as task:
        await asyncio.sleep(35)
        del served.resources[composites]  # the discovery at 60 s does not find them
        await asyncio.sleep(30)
        served.resources[composites] = info  # the one at 90 s does
        await asyncio.sleep(30)
        n = len(failing)
        failing[n:n + 2] << 500 << {"kind": "Status", "code": 500}  # the ones at 120 and 150 s fail
        await asyncio.sleep(100)
        assert len(failing) > n and not task.done()


async def test_no_group_api_at_all_is_refused_at_start(k8s, kube: KubeClient) -> None:
    for path in ("scheduling.k8s.io/v1beta1/podgroups", "scheduling.k8s.io/v1alpha3/compositepodgroups",
                 "scheduling.x-k8s.io/v1alpha1/podgroups"):
        del k8s.resources[path]
    with pytest.raises(NoGroupApi, match=r"scheduling\.k8s\.io/v1beta1 podgroups is not served \(nor "
                                         r"scheduling\.k8s\.io/v1alpha2\).*, or install scheduler-plugins' "
                                         r"PodGroup CRD \(scheduling\.x-k8s\.io/v1alpha1, chart value "
                                         r"crds\.install\)$"):
        await discover(kube)


@pytest.fixture
def with_jobset(k8s):  # type: ignore[no-untyped-def]
    register(k8s)
    k8s.resources["jobset.x-k8s.io/v1alpha2/jobsets"] = kmock.ResourceInfo(
        kind="JobSet", singular="jobset", namespaced=True, verbs=VERBS, subresources=("status",))
    return k8s


@pytest.mark.looptime
async def test_jobset_templates_labelled_and_tree_made(with_jobset, kube: KubeClient) -> None:
    """kubernetes-sigs/jobset docs/concepts: replicated jobs → child Jobs <jobset>-<rjob>-<i>, one leaf each."""
    jobsets = Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", True, "JobSet")
    template = job("x", 2)["spec"]
    body = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "pt", "namespace": NS, "labels": {"gang-scheduler.io/gang": "true"}},
            "spec": {"replicatedJobs": [{"name": "driver", "template": {"spec": {**template, "parallelism": 1}}},
                                        {"name": "workers", "replicas": 2, "template": {"spec": template}}]}}
    async with operating(with_jobset, kube):
        admitted = await Admission(kube).mutated(jobsets, body)
        await kube.create(jobsets, NS, admitted)

        async def tree() -> dict[str, dict] | None:
            pgs, _ = await kube.list(PODGROUPS, NS)
            cpgs, _ = await kube.list(COMPOSITES, NS)
            got = {o["metadata"]["name"]: o["spec"] for o in pgs + cpgs}
            return got if len(got) == 4 else None

        groups = await until(tree, what="the JobSet's tree")
    for rjob in admitted["spec"]["replicatedJobs"]:
        assert rjob["template"]["spec"]["template"]["metadata"]["labels"] == {"gang-scheduler.io/gang": "true"}
    assert groups["pt"]["schedulingPolicy"] == {"gang": {"minGroupCount": 3}}
    assert groups["pt-workers-1"] == {"schedulingPolicy": {"gang": {"minCount": 2}},
                                      "parentCompositePodGroupName": "pt",
                                      "workloadRef": {"workloadName": "pt", "templateName": "workers"}}
    assert groups["pt-driver-0"]["schedulingPolicy"] == {"gang": {"minCount": 1}}


async def warning_events(kube: KubeClient, reason: str) -> list[dict]:
    items, _ = await kube.list(Resource("", "v1", "events", True, "Event"), NS)
    return [e for e in items if e.get("reason") == reason and e.get("type") == "Warning"]


@pytest.mark.looptime
async def test_what_cannot_be_honoured_is_a_warning_event_or_an_admission_warning(served, kube: KubeClient) -> None:
    taken = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "taken", "namespace": NS}, "spec": {"schedulingPolicy": {"gang": {"minCount": 7}}}}
    await kube.create(PODGROUPS, NS, taken)
    async with operating(served, kube):
        await kube.create(JOBS, NS, job("taken", 2))
        exists = await until(lambda: warning_events(kube, "GangGroupExists"), what="GangGroupExists event")
        big = job("big", 2)
        big["metadata"]["annotations"] = {"gang-scheduler.io/min-count": "5"}
        await kube.create(JOBS, NS, big)
        too_many = await until(lambda: warning_events(kube, "GangMinCount"), what="GangMinCount event")
        stray = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stray", "namespace": NS,
                                                                 "labels": {"gang-scheduler.io/gang": "true"}},
                 "spec": {"schedulerName": "default-scheduler", "containers": []}}
        unknown = await Admission(kube).call(MUTATING, PODS, review(PODS, stray))
    assert exists[0]["message"] == f"PodGroup {NS}/taken exists and is not this workload's: left as is"
    assert exists[0]["involvedObject"]["name"] == "taken"
    assert (await podgroup_of(kube, "taken"))["spec"]["schedulingPolicy"] == {"gang": {"minCount": 7}}  # untouched
    assert too_many[0]["message"].startswith("annotation gang-scheduler.io/min-count='5' is more than the 2 pods")
    assert await min_count(kube, "big") == 5  # honoured all the same
    assert unknown["allowed"] and "patch" not in unknown
    assert unknown["warnings"] == ["gang-scheduler.io/gang: no Job, JobSet, PyTorchJob or LeaderWorkerSet labels on "
                                   "this pod, so its group is not known; it is left to spec.schedulerName "
                                   "'default-scheduler'"]


@pytest.mark.kubernetes("1.36")
@pytest.mark.looptime
async def test_v136_cluster_gets_v1alpha2_podgroups_and_the_pod_field(served, kube: KubeClient) -> None:
    """1.36: v1alpha2 PodGroups (the scheduler's discovery; no CompositePodGroups, so a LeaderWorkerSet
    replica is one flat PodGroup), ``spec.schedulingGroup`` on pods, and the validating webhook reading
    v1alpha2 as the scheduler does."""
    found = await discover(kube)
    assert (found.flavour, found.workload, found.composite) == (Flavour.WORKLOAD, podgroup_api.V1ALPHA2, False)
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
           "metadata": {"name": "serve", "namespace": NS, "labels": {"gang-scheduler.io/gang": "true"}},
           "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 3, "workerTemplate": {"spec": {"containers": []}}}}}
    v1alpha2 = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                "metadata": {"name": "hand", "namespace": NS}}
    async with operating(served, kube):
        admission = Admission(kube)
        stored = await kube.create(JOBS, NS, await admission.mutated(JOBS, job("train", 3)))
        await kube.create(LWS, NS, lws)
        pgs = await until(lambda: _all(kube.list(PODGROUPS_V1ALPHA2, NS), 2), what="v1alpha2 PodGroups")
        pod = await admission.mutated(PODS, job_pod(stored))
        zero = await admission.call(VALIDATING, PODGROUPS_V1ALPHA2, review(PODGROUPS_V1ALPHA2, {
            **v1alpha2, "spec": {"schedulingPolicy": {"gang": {"minCount": 0}}, "disruptionMode": "PodGroup"}}))
        fine = await admission.call(VALIDATING, PODGROUPS_V1ALPHA2, review(PODGROUPS_V1ALPHA2, {
            **v1alpha2, "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": "PodGroup",
                                 "podGroupTemplateRef": {"workload": {"workloadName": "w",
                                                                      "podGroupTemplateName": "t"}}}}))
    specs = {pg["metadata"]["name"]: pg["spec"] for pg in pgs}
    assert specs == {"train": {"schedulingPolicy": {"gang": {"minCount": 3}}},
                     "serve-0": {"schedulingPolicy": {"gang": {"minCount": 3}}}}  # leader + 2 workers, one group
    assert pod["spec"]["schedulingGroup"] == {"podGroupName": "train"}
    assert "scheduling.x-k8s.io/pod-group" not in pod["metadata"]["labels"]
    assert pod["spec"]["schedulerName"] == "gang-scheduler"
    assert not zero["allowed"] and "minCount" in zero["status"]["message"]
    assert fine["allowed"], fine  # v1.36 fields (a disruptionMode string, podGroupTemplateRef) are read, not refused


async def _all(coro, n: int):  # type: ignore[no-untyped-def]
    items, _ = await coro
    return items if len(items) >= n else None


@pytest.mark.kubernetes("1.36")
@pytest.mark.looptime
async def test_v136_podgroup_with_a_member_bound_is_not_made_again(served, kube: KubeClient) -> None:
    """A PodGroup with a member bound is placed (the scheduler's plan is on record from its first bind on): its
    minimum is kept, with a Warning saying why."""
    async with operating(served, kube):
        await kube.create(JOBS, NS, job("train", 2))
        made = await until(lambda: _first(kube.list(PODGROUPS_V1ALPHA2, NS)), what="PodGroup made")
        await kube.create(PODS, NS, {"metadata": {"name": "train-a", "namespace": NS},
                                     "spec": {"nodeName": "n0", "schedulingGroup": {"podGroupName": "train"},
                                              "containers": [{"name": "main", "image": "busybox"}]}})
        await kube.patch(JOBS, NS, "train", {"spec": {"parallelism": 3}})
        (warning,) = await until(lambda: warning_events(kube, "GangImmutable"), what="GangImmutable event")
        kept = await kube.get(PODGROUPS_V1ALPHA2, NS, "train")
    assert kept["metadata"]["uid"] == made["metadata"]["uid"]
    assert kept["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    assert warning["message"].endswith("and 1 of its pods are bound, so it is not made again; delete it to have it "
                                       "made again")


@pytest.mark.looptime
@pytest.mark.parametrize("value", ["99999999999", "²", "٣", "9" * 5000], ids=["beyond-int32", "superscript",
                                                                            "arabic-indic", "5000-digits"])
async def test_a_min_count_that_is_not_a_minimum_is_a_warning_and_never_applied(served, kube: KubeClient,
                                                                                value: str) -> None:
    """Never written (99999999999 was created as minCount, then refused every 5 s), never read as another number
    ("٣" was read as 3), never a handler failing every 60 s ("²", 5,000 digits): the PodGroup gets the Job's own
    minimum and the Job a Warning Event saying why."""
    train = job("train", 2)
    train["metadata"]["annotations"] = {"gang-scheduler.io/min-count": value}
    async with operating(served, kube):
        await kube.create(JOBS, NS, train)
        (warning,) = await until(lambda: warning_events(kube, "GangMinCount"), what="GangMinCount event")
        assert await until(lambda: min_count(kube, "train"), what="the PodGroup") == 2
    assert "is not applied" in warning["message"]
    assert ("2147483647" in warning["message"]) == value.isascii()
