"""``LeanPod``: the compact shape of a pod on a node — the same reads as a ``Pod``, from a model or from bytes."""

from __future__ import annotations

import copy
import json
from collections import OrderedDict
from typing import Any

import pytest

from scheduler.model import lean_pod as lean_pod_module
from scheduler.model.base import from_wire
from scheduler.model.lean_pod import LeanPod, decode_bound, decode_pod, lean_pod
from scheduler.model.pod import ASKS_POD_AFFINITY, ASKS_PORTS, ASKS_VOLUMES, Pod

GI = 2**30


def running(name: str = "web-1", node: str = "node-a", **spec: Any) -> dict[str, Any]:
    """A running pod as a server returns it: defaulted spec, managedFields, the kubelet's status."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "prod", "uid": f"uid-{name}", "resourceVersion": "42",
                     "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"app": "web", "tier": "front"},
                     "managedFields": [{"manager": "kubelet", "operation": "Update", "fieldsV1": {"f:status": {}}}]},
        "spec": {"nodeName": node, "schedulerName": "default-scheduler", "priority": 100,
                 "containers": [{"name": "app", "image": "nginx", "env": [{"name": "A", "value": "1"}],
                                 "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}],
                 "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                  "effect": "NoExecute", "tolerationSeconds": 300}],
                 "volumes": [{"name": "kube-api-access", "projected": {"sources": []}}], **spec},
        "status": {"phase": "Running", "startTime": "2026-01-01T00:00:05Z",
                   "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:06Z"}],
                   "containerStatuses": [{"name": "app", "containerID": f"containerd://{name}", "ready": True,
                                          "allocatedResources": {"cpu": "500m", "memory": "1Gi"}}]},
    }


def both(body: dict[str, Any]) -> tuple[LeanPod, LeanPod]:
    """The pod decoded from its bytes, and made from its model validated as API JSON (``from_wire``)."""
    data = json.dumps(body).encode()
    decoded = decode_bound(data)
    assert decoded is not None
    return decoded, lean_pod(from_wire(Pod, data))


def test_bytes_and_model_give_the_same_lean_pod_with_the_reads_of_a_pod() -> None:
    body = running(affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}})
    decoded, made = both(body)
    full = Pod.model_validate(body)
    assert decoded == made
    assert decoded.key == full.key == "prod/web-1"
    assert decoded.requests == full.requests == {"cpu": 500, "memory": GI, "pods": 1}
    assert decoded.asks == full.asks == frozenset({ASKS_POD_AFFINITY})
    assert decoded.spec.affinity == full.spec.affinity
    assert decoded.spec.tolerations == full.spec.tolerations
    assert decoded.metadata.labels == {"app": "web", "tier": "front"}
    assert decoded.status.start_time == full.status.start_time
    assert (decoded.is_bound, decoded.is_terminal, decoded.is_terminating, decoded.spec.priority) == (
        True, False, False, 100)
    assert (decoded.api_version, decoded.kind) == ("v1", "Pod")


def test_a_pod_without_a_node_is_left_to_the_full_model() -> None:
    body = running()
    del body["spec"]["nodeName"]
    assert decode_bound(json.dumps(body).encode()) is None


def test_requests_count_what_the_kubelet_actuated() -> None:
    """A pod resized in place holds the larger of its spec and its container status (InPlacePodVerticalScaling)."""
    body = running()
    body["status"]["containerStatuses"][0]["allocatedResources"] = {"cpu": "2", "memory": "1Gi"}
    decoded, made = both(body)
    assert decoded.requests == made.requests == {"cpu": 2000, "memory": GI, "pods": 1}


def test_pods_of_one_template_share_their_parts() -> None:
    a = decode_bound(json.dumps(running("web-1", "node-a")).encode())
    b = decode_bound(json.dumps(running("web-2", "node-b")).encode())
    assert a is not None and b is not None
    assert a.spec.containers[0] is b.spec.containers[0]
    assert a.metadata.labels is b.metadata.labels
    assert a.requests is b.requests
    assert (a.spec.node_name, b.spec.node_name, a.metadata.uid, b.metadata.uid) == (
        "node-a", "node-b", "uid-web-1", "uid-web-2")


def admitted(name: str, node: str = "node-a", **spec: Any) -> dict[str, Any]:
    """:func:`running` as the ServiceAccount admission plugin leaves a pod: its own token volume, mounted in every
    container, beside ``spec``'s volumes and a ConfigMap volume of its template."""
    body = running(name, node, **spec)
    token = f"kube-api-access-{name[-5:]:x>5}"
    body["spec"]["volumes"] = [*spec.get("volumes", ()), {"name": "config", "configMap": {"name": "web"}},
                               {"name": token, "projected": {"defaultMode": 420, "sources": []}}]
    for container in body["spec"]["containers"]:
        container["volumeMounts"] = [{"name": "config", "mountPath": "/etc/web"},
                                     {"name": token, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                      "readOnly": True}]
    return body


def test_pods_whose_token_volumes_differ_share_what_their_template_reads() -> None:
    """Each pod's own token volume name makes its containers' and volumes' JSON its own: the containers (which do
    not read their mounts), the template's volumes and the requests are still one object for all; the token volume
    keeps each pod's name."""
    a, b = (decode_bound(json.dumps(admitted(name)).encode()) for name in ("web-aaaaa", "web-bbbbb"))
    assert a is not None and b is not None
    assert a.spec.containers[0] is b.spec.containers[0]
    assert a.spec.volumes[0] is b.spec.volumes[0]
    assert a.requests is b.requests and a.asks is b.asks
    assert a.spec.volumes[1] is not b.spec.volumes[1]
    assert [v.name for v in a.spec.volumes] == ["config", "kube-api-access-aaaaa"]
    assert [v.name for v in b.spec.volumes] == ["config", "kube-api-access-bbbbb"]
    for name in ("web-aaaaa", "web-bbbbb", "web-aaaaa"):
        decoded, made = both(admitted(name))
        assert decoded == made


@pytest.mark.parametrize("change", [
    pytest.param(lambda c: c.update(name="other"), id="its name"),
    pytest.param(lambda c: c.update(ports=[{"containerPort": 80, "hostPort": 80}]), id="a port"),
    pytest.param(lambda c: c["resources"]["requests"].update(cpu="2"), id="a request"),
])
def test_a_container_that_reads_otherwise_is_its_own(change: Any) -> None:
    """Containers alike but for a field their model reads are not shared, whatever their mounts; nor are the requests
    (the kubelet's status, which actuates more than the spec asks, names the first pod's container)."""
    first, body = admitted("web-aaaaa"), admitted("web-bbbbb")
    for pod in (first, body):
        pod["status"]["containerStatuses"][0]["allocatedResources"]["cpu"] = "1"
    decode_bound(json.dumps(first).encode())
    change(body["spec"]["containers"][0])
    decoded, made = both(body)
    assert decoded == made
    assert decoded.spec.containers == made.spec.containers != lean_pod(Pod.model_validate(first)).spec.containers


def test_an_init_container_renamed_does_not_take_the_requests_its_status_gave_another() -> None:
    """The requests' memo tells init containers apart by name: the kubelet's status actuates 3 cpu for ``i``, so a pod
    whose init container is ``j`` counts its spec's 1 cpu."""
    def with_init(name: str, init: str) -> dict[str, Any]:
        body = admitted(name, initContainers=[{"name": init, "resources": {"requests": {"cpu": "1"}}}])
        body["status"]["initContainerStatuses"] = [{"name": "i", "allocatedResources": {"cpu": "3"}}]
        return body

    first, made = both(with_init("web-aaaaa", "i"))
    assert first == made and first.requests["cpu"] == 3000
    decoded, made = both(with_init("web-bbbbb", "j"))
    assert decoded == made and decoded.requests["cpu"] == 1000


@pytest.mark.parametrize("first", ["restartPolicy", "restart_policy"])
def test_of_both_spellings_in_one_item_the_api_one_counts_either_way(first: str) -> None:
    """A ``snake_case`` spelling beside the API name is an unknown field, whichever comes first: the API one counts,
    in the memo too."""
    spellings = {"restartPolicy": "Always", "restart_policy": "Never"}
    init = {"name": "i", first: spellings[first], **{k: v for k, v in spellings.items() if k != first},
            "resources": {"requests": {"cpu": "1"}}}
    decoded, made = both(admitted("web-aaaaa", initContainers=[init]))
    assert decoded == made and decoded.spec.init_containers[0].restart_policy == "Always"


@pytest.mark.parametrize("field,value", [
    ("containers", None), ("containers", [1]), ("containers", {"name": "app"}), ("initContainers", [None]),
    ("volumes", None), ("volumes", [{"name": "v"}, "w"]), ("volumes", [{"configMap": {"name": "no name"}}]),
])
def test_a_list_of_items_the_model_refuses_is_refused(field: str, value: Any) -> None:
    body = admitted("web-aaaaa")
    body["spec"][field] = value
    data = json.dumps(body).encode()
    with pytest.raises(ValueError):
        Pod.model_validate_json(data)
    with pytest.raises(ValueError):
        decode_bound(data)


@pytest.mark.parametrize("source,value", [
    ("persistentVolumeClaim", {"claimName": "data-0"}),
    ("ephemeral", {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}),
    ("gcePersistentDisk", {"pdName": "disk"}),
    ("awsElasticBlockStore", {"volumeID": "vol-1"}),
    ("iscsi", {"targetPortal": "10.0.0.1:3260", "iqn": "iqn.2001-04.com.example:disk", "lun": 0}),
    ("rbd", {"monitors": ["10.0.0.1:6789"], "image": "disk"}),
])
def test_a_volume_alike_but_for_a_source_the_scheduler_judges_is_its_own(source: str, value: Any) -> None:
    """Each volume source the models read keeps a volume apart from one without it."""
    decode_bound(json.dumps(admitted("web-aaaaa", volumes=[{"name": "data"}])).encode())
    decoded, made = both(admitted("web-bbbbb", volumes=[{"name": "data", source: value}]))
    assert decoded == made
    assert decoded.spec.volumes[0].judged and decoded.asks == frozenset({ASKS_VOLUMES})


def test_a_volume_named_otherwise_keeps_its_name_and_its_source() -> None:
    """A claim volume memoised under one name and met under another is validated anew: the name is the pod's."""
    claim = {"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}}
    decode_bound(json.dumps(admitted("web-aaaaa", volumes=[claim])).encode())
    decoded, made = both(admitted("web-bbbbb", volumes=[{**claim, "name": "scratch"}]))
    assert decoded == made
    assert [(v.name, v.persistent_volume_claim.claim_name) for v in decoded.spec.volumes
            if v.persistent_volume_claim] == [("scratch", "data-0")]
    assert decoded.asks == made.asks == frozenset({ASKS_VOLUMES})


def test_only_the_disruption_target_condition_is_kept() -> None:
    body = running()
    body["metadata"]["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    body["status"]["conditions"].append({"type": "DisruptionTarget", "status": "True",
                                         "reason": "PreemptionByScheduler", "message": "preempted"})
    decoded, made = both(body)
    assert decoded == made
    assert [c.type for c in decoded.status.conditions] == ["DisruptionTarget"]
    assert decoded.terminating_by_preemption
    assert decoded.status.container_statuses == ()


def test_host_ports_and_judged_volumes_are_kept() -> None:
    body = running()
    body["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}]
    body["spec"]["volumes"].append({"name": "data", "persistentVolumeClaim": {"claimName": "data-web-1"}})
    decoded, made = both(body)
    assert decoded == made
    assert decoded.asks == frozenset({ASKS_PORTS, ASKS_VOLUMES})
    assert decoded.spec.containers[0].ports[0].host_port == 8080
    assert [v.persistent_volume_claim.claim_name for v in decoded.spec.volumes if v.persistent_volume_claim] == [
        "data-web-1"]


@pytest.mark.parametrize("path, value", [
    (("spec", "priority"), "high"),
    (("metadata", "labels"), {"app": 1}),
    (("status", "conditions"), [{"type": 3}]),
    (("apiVersion",), 1),
    (("spec", "priority"), 2**31),  # a field's own constraints (int32) hold here too
    (("spec", "resourceClaims"), [{"name": "gpu", "resourceClaimName": "a"},
                                  {"name": "gpu", "resourceClaimName": "b"}]),  # and its validators
    (("metadata", "creationTimestamp"), "2026-01-01T00:00:00"),
])
def test_what_the_full_model_refuses_is_refused(path: tuple[str, ...], value: Any) -> None:
    body = copy.deepcopy(running())
    target = body
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    data = json.dumps(body).encode()
    with pytest.raises(ValueError):
        Pod.model_validate_json(data)
    with pytest.raises(ValueError):
        decode_bound(data)


def test_a_malformed_quantity_raises_as_the_full_model_does() -> None:
    body = running()
    body["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    with pytest.raises(ValueError):
        decode_bound(json.dumps(body).encode())


def test_lean_pod_of_a_pending_pod_bound_to_a_node() -> None:
    """How the cache shows an assumed pod: the pending pod's values, on the node."""
    body = running()
    del body["spec"]["nodeName"]
    pending = Pod.model_validate(body)
    shown = lean_pod(pending, "node-z")
    assert shown.spec.node_name == "node-z" and shown.is_bound
    assert shown.requests == pending.requests
    assert lean_pod(shown) is shown
    assert lean_pod(shown, "node-y").spec.node_name == "node-y"


def pending_then_bound(name: str = "web-1", **spec: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A pod as created (no node, no kubelet status) and the watch event of its bind: the node, a new
    resourceVersion, ``PodScheduled``, the binding's managedFields entry."""
    bound = running(name, "node-b", **spec)
    bound["status"] = {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:00:02Z"}]}
    pending = copy.deepcopy(bound)
    del pending["spec"]["nodeName"]
    pending["status"] = {"phase": "Pending"}
    bound["metadata"]["resourceVersion"] = "43"
    bound["metadata"]["managedFields"].append({"manager": "gang-scheduler", "operation": "Update"})
    return pending, bound


def test_a_bound_pod_reuses_the_parts_of_its_pending_version() -> None:
    """The watch event of a bind: the parts, requests and asks of the pod decoded without a node, which equal
    what decoding the bound pod alone gives; its own resourceVersion, node and status."""
    pending_body, bound_body = pending_then_bound(
        "reuse-1", volumes=[{"name": "kube-api-access-x7k2p", "projected": {"sources": []}}])
    pending = decode_pod(json.dumps(pending_body).encode())
    assert isinstance(pending, Pod)
    bound = decode_pod(json.dumps(bound_body).encode())
    assert isinstance(bound, LeanPod)
    assert bound == lean_pod(Pod.model_validate(bound_body))
    assert bound.spec.containers is pending.spec.containers and bound.spec.volumes is pending.spec.volumes
    assert bound.requests is pending.requests and bound.asks is pending.asks
    assert (bound.spec.node_name, bound.metadata.resource_version) == ("node-b", "43")
    assert bound.status.phase == "Pending" and bound.status.conditions == ()


@pytest.mark.parametrize("change", [
    lambda b: b["spec"]["containers"][0]["resources"]["requests"].update(cpu="2"),  # resized in place
    lambda b: b["metadata"]["labels"].update(tier="back"),
    lambda b: b["spec"]["tolerations"].append({"key": "gpu", "operator": "Exists"}),
    lambda b: b["status"].update(containerStatuses=[{"name": "app", "allocatedResources": {"cpu": "3"}}]),
    lambda b: b["metadata"].update(uid="uid-other"),
])
def test_a_bound_pod_that_changed_is_decoded_from_its_own_bytes(change: Any) -> None:
    pending_body, bound_body = pending_then_bound("changed-1")
    pending = decode_pod(json.dumps(pending_body).encode())
    change(bound_body)
    bound = decode_pod(json.dumps(bound_body).encode())
    assert bound == lean_pod(Pod.model_validate(bound_body))  # its requests included
    assert bound.spec.containers is not pending.spec.containers


def test_a_deleted_pending_pod_is_forgotten() -> None:
    pending_body, bound_body = pending_then_bound("gone-1")
    pending = decode_pod(json.dumps(pending_body).encode())
    decode_pod(json.dumps(pending_body).encode(), deleted=True)
    bound = decode_pod(json.dumps(bound_body).encode())
    assert bound == lean_pod(Pod.model_validate(bound_body))
    assert bound.spec.containers is not pending.spec.containers



def kubelet_writes(name: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A pod's bind, then the kubelet's two status writes (its container being created, then running)."""
    _, bound = pending_then_bound(name)
    creating = copy.deepcopy(bound)
    creating["metadata"]["resourceVersion"] = "44"
    creating["status"] = {"phase": "Pending", "startTime": "2026-01-01T00:00:05Z", "hostIP": "10.0.0.1",
                          "containerStatuses": [{"name": "app", "ready": False, "image": "nginx",
                                                 "state": {"waiting": {"reason": "ContainerCreating"}},
                                                 "allocatedResources": {"cpu": "500m", "memory": "1Gi"}}]}
    started = running(name, "node-b")
    started["metadata"]["resourceVersion"] = "45"
    started["metadata"]["managedFields"] = creating["metadata"]["managedFields"]
    return bound, creating, started


def decoded_afresh(body: dict[str, Any], *, watched: bool = True) -> LeanPod | Pod:
    """``decode_pod`` of ``body`` (as a watch event's object unless not ``watched``) with the memos of field values and
    requests emptied first, so that what it shares with an earlier version of the pod comes from the pods it
    remembers."""
    lean_pod_module._field.cache_clear()
    lean_pod_module._DERIVED.clear()
    return decode_pod(json.dumps(body).encode(), watched=watched)


def test_the_kubelets_status_writes_reuse_the_parts_of_the_bound_pod() -> None:
    """The watch events of the kubelet's status writes: the metadata and spec as the pod's previous version has them
    (the same objects), its own status and resourceVersion, the requests recomputed only when the container
    statuses ask otherwise — each what decoding that version alone gives."""
    bodies = kubelet_writes("kubelet-1")
    decoded = [decoded_afresh(body) for body in bodies]
    for body, pod in zip(bodies, decoded, strict=True):
        assert pod == lean_pod(Pod.model_validate(body))
    bound, creating, started = decoded
    assert isinstance(bound, LeanPod) and isinstance(creating, LeanPod) and isinstance(started, LeanPod)
    assert creating.spec.containers is bound.spec.containers and started.spec.containers is bound.spec.containers
    assert creating.metadata.labels is bound.metadata.labels and started.spec.tolerations is bound.spec.tolerations
    assert started.requests is creating.requests  # the same actuated resources
    assert [p.metadata.resource_version for p in decoded] == ["43", "44", "45"]
    assert [p.status.phase for p in decoded] == ["Pending", "Pending", "Running"]


def test_a_pod_resized_in_place_gets_the_requests_its_kubelet_actuated() -> None:
    _, _, started = kubelet_writes("resized-1")
    resized = copy.deepcopy(started)
    resized["metadata"]["resourceVersion"] = "46"
    resized["status"]["containerStatuses"][0]["allocatedResources"] = {"cpu": "3", "memory": "1Gi"}
    before, after = decoded_afresh(started), decoded_afresh(resized)
    assert after == lean_pod(Pod.model_validate(resized)) and after.requests["cpu"] == 3000
    assert after.spec.containers is before.spec.containers and before.requests["cpu"] == 500


def test_a_deleted_or_long_unseen_bound_pod_is_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lean_pod_module, "_BOUND", OrderedDict())
    bound, creating, _ = kubelet_writes("forgotten-1")
    first = decoded_afresh(bound)
    decode_pod(json.dumps(bound).encode(), deleted=True, watched=True)
    again = decoded_afresh(creating)
    assert again == lean_pod(Pod.model_validate(creating)) and again.spec.containers is not first.spec.containers
    monkeypatch.setattr(lean_pod_module, "BOUND_SIZE", 1)
    decoded_afresh(kubelet_writes("forgotten-2")[0])  # lets go of forgotten-1, the pod decoded longest ago
    later = decoded_afresh(bound)
    assert later == lean_pod(Pod.model_validate(bound)) and later.spec.containers is not again.spec.containers


def test_a_listed_bound_pod_is_not_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    """A list's pods (most of a cluster, running on unchanged) are not digested: only watch events' pods are."""
    monkeypatch.setattr(lean_pod_module, "_BOUND", OrderedDict())
    bound, creating, _ = kubelet_writes("listed-1")
    listed = decoded_afresh(bound, watched=False)
    watched = decoded_afresh(creating)
    assert watched == lean_pod(Pod.model_validate(creating)) and watched.spec.containers is not listed.spec.containers
    assert decoded_afresh(creating).spec.containers is watched.spec.containers


@pytest.mark.parametrize("change", [
    lambda b: b["metadata"]["labels"].update(tier="back"),
    lambda b: b["metadata"].update(deletionTimestamp="2026-01-01T00:01:00Z"),
    lambda b: b["spec"]["tolerations"].append({"key": "gpu", "operator": "Exists"}),
    lambda b: b["spec"]["containers"][0]["resources"]["requests"].update(cpu="2"),
    lambda b: b["spec"].update(nodeName="node-c"),
])
def test_a_watched_bound_pod_that_changed_is_decoded_from_its_own_bytes(change: Any) -> None:
    _, _, started = kubelet_writes("rewatched-1")
    before = decoded_afresh(started)
    changed = copy.deepcopy(started)
    changed["metadata"]["resourceVersion"] = "46"
    change(changed)
    after = decoded_afresh(changed)
    assert after == lean_pod(Pod.model_validate(changed)) and after != before


def test_a_sidecar_resized_in_place_gets_the_requests_its_kubelet_actuated() -> None:
    sidecar = {"name": "proxy", "image": "envoy", "restartPolicy": "Always",
               "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}
    _, _, started = kubelet_writes("sidecar-1")
    started["spec"]["initContainers"] = [sidecar]
    started["status"]["initContainerStatuses"] = [{"name": "proxy", "allocatedResources": {"cpu": "100m"}}]
    resized = copy.deepcopy(started)
    resized["status"]["initContainerStatuses"][0]["allocatedResources"] = {"cpu": "2"}
    before, after = decoded_afresh(started), decoded_afresh(resized)
    assert after == lean_pod(Pod.model_validate(resized)) and after.requests["cpu"] - before.requests["cpu"] == 1900


@pytest.mark.parametrize("field", ["conditions", "containerStatuses", "initContainerStatuses"])
def test_a_null_status_list_is_refused_as_the_full_model_refuses_it(field: str) -> None:
    _, _, started = kubelet_writes("null-1")
    started["status"][field] = None
    data = json.dumps(started).encode()
    with pytest.raises(ValueError):
        Pod.model_validate_json(data)
    with pytest.raises(ValueError):
        decode_pod(data, watched=True)


def test_a_pending_version_with_container_statuses_lends_the_bound_pod_nothing() -> None:
    """Requests read the container statuses; a bound version without them must not take the pending version's."""
    pending, bound = pending_then_bound("pending-status-1")
    pending["status"]["containerStatuses"] = [{"name": "app", "allocatedResources": {"cpu": "3"}}]
    running_again = copy.deepcopy(bound)
    running_again["metadata"]["resourceVersion"] = "44"
    decoded = [decoded_afresh(body) for body in (pending, bound, running_again)]
    assert decoded[0].requests["cpu"] == 3000
    assert decoded[1] == lean_pod(Pod.model_validate(bound)) and decoded[1].requests["cpu"] == 500
    assert decoded[2] == lean_pod(Pod.model_validate(running_again))


def test_a_container_status_naming_its_container_only_asks_nothing() -> None:
    """The kubelet's first status of a pod names its containers before they run: the requests are the bind's."""
    bound, creating, _ = kubelet_writes("named-1")
    creating["status"]["containerStatuses"][0].pop("allocatedResources")
    first, second = decoded_afresh(bound), decoded_afresh(creating)
    assert second == lean_pod(Pod.model_validate(creating)) and second.requests is first.requests


@pytest.mark.parametrize("name", [5, None, ["x"]])
def test_a_container_status_name_the_full_model_refuses_is_refused(name: Any) -> None:
    bound, creating, _ = kubelet_writes("badname-1")
    creating["status"]["containerStatuses"] = [{"name": name}]
    data = json.dumps(creating).encode()
    with pytest.raises(ValueError):
        Pod.model_validate_json(data)
    with pytest.raises(ValueError):
        decode_bound(data)
    decode_pod(json.dumps(bound).encode(), watched=True)
    with pytest.raises(ValueError):
        decode_pod(data, watched=True)


def started_as_asked(name: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A pod's bind, the kubelet's first write (its container named, nothing actuated), then its second reporting the
    container started at the size asked: ``allocatedResources`` and ``resources`` as in the spec."""
    bound, creating, started = kubelet_writes(name)
    creating["status"]["containerStatuses"][0].pop("allocatedResources")
    started["spec"]["containers"][0]["resources"]["limits"] = {"memory": "2Gi"}
    for body in (bound, creating):
        body["spec"]["containers"][0]["resources"]["limits"] = {"memory": "2Gi"}
    started["status"]["containerStatuses"][0]["resources"] = {"requests": {"cpu": "500m", "memory": "1Gi"},
                                                              "limits": {"memory": "2Gi"}}
    return bound, creating, started


def test_a_container_started_at_the_size_asked_keeps_the_requests_of_its_spec() -> None:
    """The kubelet's second write reports the actuated resources; when they are what the spec asks, the requests of the
    bind (its spec's) stand, as computing them again gives."""
    decoded = [decoded_afresh(body) for body in started_as_asked("as-asked-1")]
    for body, pod in zip(started_as_asked("as-asked-1"), decoded, strict=True):
        assert pod == lean_pod(Pod.model_validate(body))
    assert decoded[2].requests is decoded[0].requests


@pytest.mark.parametrize("change", [
    {"allocatedResources": {"cpu": "750m", "memory": "1Gi"}},  # resized in place: more than the spec asks
    {"allocatedResources": {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "1Gi"}},  # a resource not asked
    {"allocatedResources": {"cpu": 0.5, "memory": "1Gi"}},  # a number: the same quantity, computed in full
    {"allocatedResources": {"cpu": "0.5", "memory": "1Gi"}},  # another spelling of the same quantity
    {"resources": {"requests": {"cpu": "1"}, "limits": {"memory": "2Gi"}}},
    {"resources": {"requests": {"cpu": "500m"}, "claims": [{"name": "gpu"}]}},
    {"name": "sidecar"},  # a container the spec lacks
])
def test_a_container_reported_otherwise_has_its_requests_computed(change: dict[str, Any]) -> None:
    bound, creating, started = started_as_asked("otherwise-1")
    started["status"]["containerStatuses"][0].update(change)
    decoded = [decoded_afresh(body) for body in (bound, creating, started)]
    assert decoded[2] == lean_pod(Pod.model_validate(started))


@pytest.mark.parametrize("change", [
    {"allocatedResources": {"cpu": True}},
    {"allocatedResources": None},
    {"resources": {"requests": {"cpu": "500m"}, "limits": {"memory": False}}},
    {"resources": {"requests": ["cpu"]}},
    {"resources": "500m"},
])
def test_a_container_status_the_full_model_refuses_is_refused(change: dict[str, Any]) -> None:
    bound, creating, started = started_as_asked("refused-1")
    started["status"]["containerStatuses"][0].update(change)
    assert_refused_after(bound, creating, started)


def assert_refused_after(bound: dict[str, Any], creating: dict[str, Any], started: dict[str, Any]) -> None:
    """``started`` is refused by the full model, and by the lean decoder after ``bound`` and ``creating``."""
    data = json.dumps(started).encode()
    with pytest.raises(ValueError):
        Pod.model_validate_json(data)
    decoded_afresh(bound)
    decoded_afresh(creating)
    with pytest.raises(ValueError):
        decode_pod(data, watched=True)


def test_a_boolean_equal_to_the_number_the_spec_asks_is_refused() -> None:
    """``true == 1`` in Python: a quantity reported as ``true`` where the spec asks the number 1 is refused, as the
    full model refuses a boolean quantity, not taken as what the spec asks."""
    bodies = started_as_asked("bool-1")
    for body in bodies:
        body["spec"]["containers"][0]["resources"]["requests"]["cpu"] = 1
    bound, creating, started = bodies
    started["status"]["containerStatuses"][0]["allocatedResources"]["cpu"] = True
    started["status"]["containerStatuses"][0]["resources"]["requests"]["cpu"] = 1
    assert_refused_after(bound, creating, started)


def test_a_container_back_at_the_size_asked_after_a_resize_has_its_requests_computed() -> None:
    """Only requests computed from nothing actuated are the spec's: after an in-place resize, a report back at the
    size asked has them computed again."""
    bound, creating, started = started_as_asked("resized-back-1")
    resized = copy.deepcopy(started)
    resized["status"]["containerStatuses"][0]["allocatedResources"] = {"cpu": "3", "memory": "1Gi"}
    back = copy.deepcopy(started)
    back["metadata"]["resourceVersion"] = "47"
    decoded = [decoded_afresh(body) for body in (bound, creating, resized, back)]
    assert decoded[2].requests["cpu"] == 3000
    assert decoded[3] == lean_pod(Pod.model_validate(back)) and decoded[3].requests["cpu"] == 500


@pytest.mark.parametrize(("init_status", "cpu"), [
    ({"name": "proxy", "allocatedResources": {"cpu": "100m"}}, 600),  # as asked: the spec's requests
    ({"name": "proxy", "allocatedResources": {"cpu": "1"}}, 1500),  # resized: computed
])
def test_a_sidecars_status_counts_as_its_containers_do(init_status: dict[str, Any], cpu: int) -> None:
    """The init containers' statuses are judged as the app containers' are, also when the app containers' ask
    nothing (named only)."""
    sidecar = {"name": "proxy", "image": "envoy", "restartPolicy": "Always",
               "resources": {"requests": {"cpu": "100m"}}}
    bodies = started_as_asked("sidecar-as-asked-1")
    for body in bodies:
        body["spec"]["initContainers"] = [sidecar]
    bound, creating, started = bodies
    started["status"]["containerStatuses"][0] = {"name": "app"}
    started["status"]["initContainerStatuses"] = [init_status]
    decoded = [decoded_afresh(body) for body in (bound, creating, started)]
    assert decoded[2] == lean_pod(Pod.model_validate(started)) and decoded[2].requests["cpu"] == cpu


def test_containers_of_one_name_each_count_their_status() -> None:
    """Repeated names (which the API refuses) are left to the full computation, where a status counts for each
    container of its name."""
    bodies = started_as_asked("twins-1")
    twin = {"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "2"}}}
    for body in bodies:
        body["spec"]["containers"].append(copy.deepcopy(twin))
    bound, creating, started = bodies
    started["status"]["containerStatuses"][0]["allocatedResources"] = {"cpu": "2"}
    started["status"]["containerStatuses"][0].pop("resources")
    decoded = [decoded_afresh(body) for body in (bound, creating, started)]
    assert decoded[2] == lean_pod(Pod.model_validate(started)) and decoded[2].requests["cpu"] == 4000


@pytest.mark.parametrize("spec", [
    pytest.param({"initContainers": [{"name": "i", "restart_policy": "Always",
                                      "resources": {"requests": {"cpu": "2"}}}]},
                 id="an init container's restart_policy"),
    pytest.param({"containers": [{"name": "app", "resources": {"requests": {"cpu": "500m"}},
                                  "ports": [{"containerPort": 80, "hostPort": 80, "host_ip": "10.0.0.1"}]}]},
                 id="a port's host_ip"),
    pytest.param({"volumes": [{"name": "data", "ephemeral": {"volume_claim_template": {"spec": {}}}}]},
                 id="an ephemeral volume's volume_claim_template"),
])
def test_a_snake_case_key_in_a_container_or_volume_is_ignored_as_from_wire_ignores_it(spec: dict[str, Any]) -> None:
    """The bytes of a pod on a node read as :func:`~scheduler.model.base.from_wire` reads them, item by item too: a
    ``snake_case`` key is an unknown field dropped, not the field it resembles (a sidecar, a host IP, a volume claim
    template the pod does not have)."""
    data = json.dumps(running("web-snake", **spec)).encode()
    decoded, full = decode_pod(data), from_wire(Pod, data)
    assert decoded.requests == full.requests
    assert decoded.asks == full.asks
    assert decoded.spec.containers == full.spec.containers
    assert decoded.spec.init_containers == full.spec.init_containers
    assert decoded.spec.volumes == full.spec.volumes


def test_a_snake_case_key_the_api_name_requires_is_refused_as_from_wire_refuses_it() -> None:
    """``persistentVolumeClaim: {claim_name: …}`` has no ``claimName``: the full model refuses it, so must the bytes'
    decoder (else a ``kubectl get -o json`` snapshot takes the pod a YAML one reports as invalid)."""
    data = json.dumps(running(volumes=[{"name": "data", "persistentVolumeClaim": {"claim_name": "data"}}])).encode()
    with pytest.raises(ValueError):
        from_wire(Pod, data)
    with pytest.raises(ValueError):
        decode_bound(data)


@pytest.mark.parametrize("change", [
    pytest.param(lambda c: c.update(restart_policy="Always"), id="a container field"),
    pytest.param(lambda c: c.update(resize_policy=[{"resourceName": "cpu", "restartPolicy": "NotRequired"}]),
                 id="a field the model does not read either"),
])
def test_a_container_alike_but_for_a_snake_case_key_is_shared(change: Any) -> None:
    """A ``snake_case`` key is no field of the container (``from_wire``): it reads as its template's, and shares its
    parts."""
    first, body = admitted("web-aaaaa"), admitted("web-bbbbb")
    decode_bound(json.dumps(first).encode())
    change(body["spec"]["containers"][0])
    decoded, made = both(body)
    assert decoded == made
    assert decoded.spec.containers == lean_pod(from_wire(Pod, json.dumps(first).encode())).spec.containers


def _bound_bytes(uid: str, annotations: dict[str, Any], rv: str, node: str = "n1") -> bytes:
    return json.dumps({"metadata": {"name": "w-0", "namespace": "ml", "uid": uid, "resourceVersion": rv,
                                    "annotations": annotations},
                       "spec": {"nodeName": node, "schedulingGroup": {"podGroupName": "g"},
                                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
                       "status": {"phase": "Running"}}).encode()


INTENT = "gang-scheduler.io/intent"


def test_the_bind_adding_an_annotation_reuses_the_pending_pods_parts() -> None:
    """The Binding of a gang's member adds the plan's durable intent to its annotations: its watch event still takes
    the parts of the pod decoded pending, and the annotations from its own bytes."""
    uid = "uid-bind-annotated"
    pending = json.loads(_bound_bytes(uid, {}, "1"))
    del pending["spec"]["nodeName"]
    before = decode_pod(json.dumps(pending).encode(), watched=True)
    bound = decode_pod(_bound_bytes(uid, {INTENT: '{"at":"a","pods":{}}'}, "2"), watched=True)
    assert dict(bound.metadata.annotations) == {INTENT: '{"at":"a","pods":{}}'}
    assert bound.spec.containers is before.spec.containers and bound.spec.node_name == "n1"


@pytest.mark.parametrize("after", [{}, {INTENT: '{"at":"b","pods":{}}'}, {"other": "x"}],
                         ids=["removed", "replaced", "another"])
def test_an_annotation_edit_on_a_bound_pod_is_read(after: dict[str, str]) -> None:
    uid = f"uid-edit-{len(after)}-{sorted(after)}"
    first = decode_pod(_bound_bytes(uid, {INTENT: '{"at":"a","pods":{}}'}, "1"), watched=True)
    again = decode_pod(_bound_bytes(uid, dict(after), "2"), watched=True)
    assert dict(again.metadata.annotations) == after
    assert again.spec.containers is first.spec.containers and again.requests is first.requests  # the fast path


def test_a_non_string_annotation_is_refused_on_the_fast_path() -> None:
    uid = "uid-non-string-annotation"
    decode_pod(_bound_bytes(uid, {}, "1"), watched=True)
    with pytest.raises(ValueError):
        decode_pod(_bound_bytes(uid, {"x": 1}, "2"), watched=True)
