"""Objects shaped and sized as a real kube-apiserver stores and serves them, for the end-to-end benchmark.

What a client sends is not what the server returns. A minimal pod POSTed with one container comes back
about 3 KB of JSON: the API server's defaulting (``pkg/apis/core/v1/defaults.go``: ``dnsPolicy``,
``restartPolicy``, ``schedulerName``, ``securityContext``, ``terminationGracePeriodSeconds``, per container
``imagePullPolicy`` and the termination message fields), its admission plugins (``ServiceAccount``: the
projected ``kube-api-access-*`` token volume and its mount in every container; ``DefaultTolerationSeconds``:
the ``not-ready`` / ``unreachable`` NoExecute tolerations of 300 s; ``Priority``: ``priority`` and
``preemptionPolicy``), the status it starts with (``phase: Pending``, ``qosClass``) and ``managedFields``
(server-side field tracking, ``staging/src/k8s.io/apimachinery/pkg/util/managedfields``: one entry per
manager, operation and subresource, its ``fieldsV1`` naming every field that manager set). Nodes are
published by kubelets with addresses, conditions, ``nodeInfo``, ``daemonEndpoints`` and the images they hold
(``status.images``, at most ``--node-status-max-images`` = 50); :func:`node_body` dresses a benchmark node
(name, labels, allocatable, taints) in the shape of a real EKS node (``tests/data/nodes``).

Every function here is pure: the emulator (``tests/bench/emulator.py``) calls :func:`default_pod` on a pod
create, :func:`scheduled_condition` on a binding and :func:`track_fields` on every write.
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import json
import random
from functools import cache
from pathlib import Path
from typing import Any

import yaml

JSON = dict[str, Any]

NODE_TEMPLATES = Path(__file__).resolve().parents[1] / "data" / "nodes"
CPU_TEMPLATE = "cpu-only-eks-m5.yaml"
GPU_TEMPLATE = "h100-8gpu-eks-p5.yaml"

TOKEN_EXPIRATION_S = 3607
"""The bound service-account token's ``expirationSeconds`` the ServiceAccount admission plugin sets
(``plugin/pkg/admission/serviceaccount``: one hour plus the 7 s jitter kubelets allow)."""
DEFAULT_TOLERATION_S = 300
"""``DefaultTolerationSeconds`` admission: pods tolerate a not-ready or unreachable node this long."""
SERVICE_ACCOUNT_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"

NODE_IMAGES = 12
"""Images a benchmark node reports in ``status.images`` (a node running a few system DaemonSets and
workloads; a kubelet reports at most 50)."""


def now() -> str:
    """The server's timestamp format (RFC 3339, seconds, UTC)."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- managedFields ------------------------------------------------------------------------------------------

def _item_key(item: Any) -> str | None:
    """The ``k:`` key of a list item: its merge key (``name``, ``type``, ``key``+``effect`` for taints …), as
    server-side apply names associative list members; None for a list of scalars."""
    if not isinstance(item, dict):
        return None
    for keys in (("name",), ("type",), ("containerPort", "protocol"), ("key", "operator", "effect"),
                 ("mountPath",), ("address", "type")):
        if all(k in item for k in keys):
            return "k:" + json.dumps({k: item[k] for k in keys}, separators=(",", ":"), sort_keys=True)
    return None


def fields_v1(value: Any) -> JSON:
    """The ``fieldsV1`` set of the fields in ``value`` (a request body's map): ``f:<field>`` per map key,
    ``k:{…}`` per item of an associative list (its items keyed, :func:`_item_key`) with ``.`` for the item
    itself; any other list is atomic (``f:<field>: {}``), as server-side apply records them."""
    out: JSON = {}
    for key, sub in value.items():
        if isinstance(sub, dict) and sub:
            out[f"f:{key}"] = {".": {}, **fields_v1(sub)}
        elif isinstance(sub, list) and sub and all(_item_key(item) is not None for item in sub):
            out[f"f:{key}"] = {str(_item_key(item)): {".": {}, **fields_v1(item)} for item in sub}
        else:
            out[f"f:{key}"] = {}
    return out


def track_fields(stored: JSON, sent: Any, manager: str, subresource: str | None) -> None:
    """Record in ``stored.metadata.managedFields`` that ``manager`` wrote the fields of ``sent`` (the request
    body; ``metadata`` bookkeeping left out), as an ``Update`` at ``now()``: its entry for (manager, operation,
    subresource) is replaced by the union of the fields it set before and now, as the field manager does."""
    if not isinstance(sent, dict):
        return
    body = {k: v for k, v in sent.items() if k not in ("apiVersion", "kind")}
    if isinstance(body.get("metadata"), dict):
        meta = {k: v for k, v in body["metadata"].items()
                if k in ("labels", "annotations", "ownerReferences", "finalizers")}
        body = {**body, "metadata": meta} if meta else {k: v for k, v in body.items() if k != "metadata"}
    fields = fields_v1(body)
    if not fields:
        return
    entries = stored.setdefault("metadata", {}).setdefault("managedFields", [])
    for entry in entries:
        if entry["manager"] == manager and entry.get("subresource") == subresource:
            entry["fieldsV1"] = _union(entry["fieldsV1"], fields)
            entry["time"] = now()
            return
    entry = {"apiVersion": stored.get("apiVersion", "v1"), "fieldsType": "FieldsV1", "fieldsV1": fields,
             "manager": manager, "operation": "Update", "time": now()}
    if subresource:
        entry["subresource"] = subresource
    entries.append(entry)


def _union(a: JSON, b: JSON) -> JSON:
    out = dict(a)
    for key, sub in b.items():
        out[key] = _union(out[key], sub) if key in out else sub
    return out


def manager_of(user_agent: str) -> str:
    """The field manager the server names for a request without ``fieldManager``: the User-Agent up to its
    first ``/`` (``kube-scheduler/v1.37.0 (linux/amd64)`` → ``kube-scheduler``)."""
    return (user_agent or "unknown").split("/", 1)[0] or "unknown"


# -- pods ---------------------------------------------------------------------------------------------------

def _qos(containers: list[JSON]) -> str:
    """``status.qosClass`` (``pkg/apis/core/helper/qos``): BestEffort with no request or limit at all,
    Guaranteed when every container limits cpu and memory and requests what it limits, else Burstable."""
    resources = [c.get("resources") or {} for c in containers]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    for r in resources:
        limits, requests = r.get("limits") or {}, r.get("requests") or {}
        if any(limits.get(k) is None or requests.get(k, limits[k]) != limits[k] for k in ("cpu", "memory")):
            return "Burstable"
    return "Guaranteed"


def _suffix(seed: str) -> str:
    """Five characters as the server's name generator makes them (consonants and digits), from ``seed``."""
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(alphabet[b % len(alphabet)] for b in digest[:5])


def default_pod(sent: JSON) -> tuple[JSON, JSON]:
    """A pod as the API server stores it after defaulting and admission: (the object, the defaulted body
    before admission — what ``managedFields`` says the creator set). ``sent``: the POSTed body (not changed).

    Defaulting (``SetDefaults_Pod`` / ``SetDefaults_PodSpec`` / ``SetDefaults_Container``, v1.37), then the
    ServiceAccount, DefaultTolerationSeconds and Priority admission plugins, then ``status``.
    """
    pod = copy.deepcopy(sent)
    spec = pod.setdefault("spec", {})
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    spec.setdefault("terminationGracePeriodSeconds", 30)
    for container in (*spec.get("initContainers", ()), *spec.get("containers", ())):
        image = str(container.get("image", ""))
        latest = ":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest")
        container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
        container.setdefault("terminationMessagePath", "/dev/termination-log")
        container.setdefault("terminationMessagePolicy", "File")
        resources = container.setdefault("resources", {})
        if resources.get("limits") and not resources.get("requests"):
            resources["requests"] = dict(resources["limits"])
    created = copy.deepcopy(pod)
    # ServiceAccount admission: the default account and its projected token volume, mounted everywhere.
    spec.setdefault("serviceAccountName", "default")
    spec["serviceAccount"] = spec["serviceAccountName"]
    volume = token_volume_name(str(pod.get("metadata", {}).get("name")))
    spec.setdefault("volumes", []).append({"name": volume, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_S, "path": "token"}},
        {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
        {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                    "path": "namespace"}]}}]}})
    for container in (*spec.get("initContainers", ()), *spec.get("containers", ())):
        container.setdefault("volumeMounts", []).append(
            {"mountPath": SERVICE_ACCOUNT_MOUNT, "name": volume, "readOnly": True})
    # DefaultTolerationSeconds admission.
    tolerations = spec.setdefault("tolerations", [])
    for taint in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not any(t.get("key") == taint for t in tolerations):
            tolerations.append({"effect": "NoExecute", "key": taint, "operator": "Exists",
                                "tolerationSeconds": DEFAULT_TOLERATION_S})
    # Priority admission (no PriorityClass named: the global default, 0).
    spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    status = pod.setdefault("status", {})
    status.setdefault("phase", "Pending")
    status["qosClass"] = _qos(spec.get("containers", []))
    return pod, created


def token_volume_name(pod_name: str) -> str:
    """The name the ServiceAccount admission plugin gives a pod's projected token volume: ``kube-api-access-`` and
    five random characters, here drawn from ``pod_name``, so every pod has its own, as in a cluster."""
    return f"kube-api-access-{_suffix(pod_name)}"


def with_own_token(spec: JSON, pod_name: str) -> JSON:
    """``spec`` (of a pod :func:`default_pod` admitted) with its token volume and every container's mount of it named
    for ``pod_name`` (:func:`token_volume_name`): a new spec sharing every other part with ``spec``."""
    old = next(v["name"] for v in spec["volumes"] if v["name"].startswith("kube-api-access-"))
    new = token_volume_name(pod_name)

    def renamed(container: JSON) -> JSON:
        return {**container, "volumeMounts": [{**m, "name": new} if m.get("name") == old else m
                                              for m in container.get("volumeMounts", ())]}

    out = {**spec, "volumes": [{**v, "name": new} if v["name"] == old else v for v in spec["volumes"]],
           "containers": [renamed(c) for c in spec.get("containers", ())]}
    if spec.get("initContainers"):
        out["initContainers"] = [renamed(c) for c in spec["initContainers"]]
    return out


def running_pod(sent: JSON) -> JSON:
    """A pod of another scheduler as the server stores it once bound and running: ``sent`` (with ``spec.nodeName``
    and the kubelet's ``status``, :func:`running_status`) defaulted and admitted (:func:`default_pod`), with the
    ``managedFields`` of its creator (``kube-controller-manager``, as for a ReplicaSet's pod) and of the
    kubelet's status writes. A new dict; the server's stamps (uid, resourceVersion …) are not set."""
    pod, created = default_pod(sent)
    track_fields(pod, {k: v for k, v in created.items() if k != "status"}, "kube-controller-manager", None)
    track_fields(pod, {"status": pod["status"]}, "kubelet", "status")
    return pod


def owned_by_job(body: JSON, job: str, index: int, job_uid: str) -> JSON:
    """``body`` (a pod to create) as the Job controller creates it (``pkg/controller/job``, v1.37): the
    ``generateName`` prefix, the controller labels and the completion index of an Indexed Job, and the
    controlling ``ownerReference``. Returns a new dict."""
    pod = copy.deepcopy(body)
    meta = pod.setdefault("metadata", {})
    meta["generateName"] = f"{job}-{index}-"
    meta["labels"] = {**meta.get("labels", {}), "batch.kubernetes.io/controller-uid": job_uid,
                      "batch.kubernetes.io/job-completion-index": str(index), "batch.kubernetes.io/job-name": job,
                      "controller-uid": job_uid, "job-name": job}
    meta["annotations"] = {**meta.get("annotations", {}), "batch.kubernetes.io/job-completion-index": str(index)}
    meta["ownerReferences"] = [{"apiVersion": "batch/v1", "blockOwnerDeletion": True, "controller": True,
                                "kind": "Job", "name": job, "uid": job_uid}]
    pod["spec"]["containers"][0].setdefault("env", []).append(
        {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}}})
    pod["spec"].setdefault("hostname", f"{job}-{index}")
    pod["spec"].setdefault("subdomain", job)
    return pod


def scheduled_condition() -> JSON:
    """The ``PodScheduled=True`` condition the binding subresource sets (``pkg/registry/core/pod/storage``
    ``assignPod``): ``lastProbeTime`` null, ``lastTransitionTime`` now."""
    return {"lastProbeTime": None, "lastTransitionTime": now(), "status": "True", "type": "PodScheduled"}


def _status_mounts(container: JSON) -> list[JSON]:
    """A container's ``volumeMounts`` as its status reports them (``recursiveReadOnly`` resolved for read-only
    mounts); a container not yet admitted (no mounts in its spec) gets the service-account token's."""
    mounts = container.get("volumeMounts") or [{"mountPath": SERVICE_ACCOUNT_MOUNT, "name": "kube-api-access",
                                                 "readOnly": True}]
    return [{**m, "recursiveReadOnly": "Disabled"} if m.get("readOnly") else dict(m) for m in mounts]


def running_status(body: JSON, index: int) -> JSON:
    """The status a kubelet reports for ``body`` (a pod with ``spec.nodeName``) running: phase, the four pod
    conditions, host and pod IPs, start time, QoS class and a running status per container (``pkg/kubelet/status``)."""
    stamp = now()
    ip = f"10.{128 + index // 65536 % 64}.{index // 256 % 256}.{index % 256}"
    conditions = [{"lastProbeTime": None, "lastTransitionTime": stamp, "status": "True", "type": t}
                  for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")]
    containers = [{"allocatedResources": (c.get("resources") or {}).get("requests", {}),
                   "containerID": "containerd://" + hashlib.sha256(f"{index}/{c.get('name')}".encode()).hexdigest(),
                   "image": c.get("image", ""), "imageID": f"{c.get('image', '')}@sha256:{'0' * 64}",
                   "lastState": {}, "name": c.get("name", ""), "ready": True,
                   "resources": c.get("resources") or {}, "restartCount": 0, "started": True,
                   "state": {"running": {"startedAt": stamp}}, "volumeMounts": _status_mounts(c)}
                  for c in body.get("spec", {}).get("containers", [])]
    return {"phase": "Running", "conditions": conditions, "containerStatuses": containers,
            "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}], "podIP": ip, "podIPs": [{"ip": ip}],
            "qosClass": _qos(body.get("spec", {}).get("containers", [])), "startTime": stamp}


def starting_status(running: JSON) -> JSON:
    """The status a kubelet reports for a pod (with no init containers) when it has admitted the pod and is creating
    its containers, its first status write, before ``running`` (the pod's :func:`running_status`, whose start time it
    shares, as the kubelet keeps it): phase ``Pending``, the host IP, start time and QoS class, the pod conditions as
    they stand then (initialized; not yet ready) and per container what the kubelet knows of one the runtime has not
    created yet — its name, image, mounts and ``waiting: ContainerCreating``, no resources
    (``pkg/kubelet/kubelet_pods.go`` ``convertToAPIContainerStatuses``)."""
    names = " ".join(c["name"] for c in running["containerStatuses"])
    unready = {"reason": "ContainersNotReady", "message": f"containers with unready status: [{names}]"}
    conditions = []
    for condition in running["conditions"]:
        if condition["type"] == "PodReadyToStartContainers":
            condition = {**condition, "status": "False"}
        elif condition["type"] in ("Ready", "ContainersReady"):
            condition = {**condition, "status": "False", **unready}
        conditions.append(condition)
    containers = [{"image": c["image"], "imageID": "", "lastState": {}, "name": c["name"], "ready": False,
                   "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}},
                   "volumeMounts": c["volumeMounts"]} for c in running["containerStatuses"]]
    return {"phase": "Pending", "conditions": conditions, "containerStatuses": containers,
            "hostIP": running["hostIP"], "hostIPs": running["hostIPs"], "qosClass": running["qosClass"],
            "startTime": running["startTime"]}

# -- nodes --------------------------------------------------------------------------------------------------

@cache
def _template(name: str) -> JSON:
    body: JSON = yaml.safe_load((NODE_TEMPLATES / name).read_text())
    return body


def _images(rng: random.Random, gpu: bool) -> list[JSON]:
    repos = ["602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/kube-proxy",
             "602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon-k8s-cni",
             "602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon-k8s-cni-init",
             "602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/pause",
             "public.ecr.aws/ebs-csi-driver/aws-ebs-csi-driver",
             "registry.k8s.io/sig-storage/csi-node-driver-registrar",
             "registry.k8s.io/sig-storage/livenessprobe",
             "quay.io/prometheus/node-exporter",
             "docker.io/fluent/fluent-bit",
             "example.com/ml/trainer"]
    if gpu:
        repos += ["nvcr.io/nvidia/k8s-device-plugin", "nvcr.io/nvidia/gpu-feature-discovery",
                  "nvcr.io/nvidia/k8s/dcgm-exporter", "nvcr.io/nvidia/cloud-native/dcgm"]
    out = []
    for repo in rng.sample(repos, min(NODE_IMAGES, len(repos))):
        digest = f"{rng.getrandbits(256):064x}"
        out.append({"names": [f"{repo}@sha256:{digest}", f"{repo}:v1.{rng.randrange(40)}.{rng.randrange(10)}"],
                    "sizeBytes": rng.randrange(5_000_000, 900_000_000)})
    return out


def node_body(bench: JSON, seed: int) -> JSON:
    """A benchmark node (``bench_solver.node_dicts``: name, labels, allocatable, taints) as its kubelet
    registers it: the real EKS node of ``tests/data/nodes`` (GPU: the p5 H100 node, else the m5 CPU node)
    with the benchmark's name, labels (added to the template's, hostname replaced), taints, allocatable and
    capacity, its own addresses and IDs, and ``status.images``. The template's ``uid``, ``resourceVersion``
    and ``creationTimestamp`` are left out (the server sets them)."""
    name = bench["metadata"]["name"]
    gpu = bool(bench.get("spec", {}).get("taints"))
    node = copy.deepcopy(_template(GPU_TEMPLATE if gpu else CPU_TEMPLATE))
    rng = random.Random(f"{seed}/{name}")
    meta = node["metadata"]
    for key in ("uid", "resourceVersion", "creationTimestamp"):
        meta.pop(key, None)
    meta["name"] = name
    meta["labels"] = {**meta.get("labels", {}), **bench["metadata"].get("labels", {}),
                      "kubernetes.io/hostname": name}
    ip = f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
    meta.setdefault("annotations", {})["alpha.kubernetes.io/provided-node-ip"] = ip
    node["spec"] = {**node.get("spec", {}), **bench.get("spec", {}),
                    "providerID": f"aws:///us-east-1a/i-{rng.getrandbits(64):017x}"}
    if not node["spec"].get("taints"):
        node["spec"].pop("taints", None)
    status = node["status"]
    status["allocatable"] = dict(bench["status"]["allocatable"])
    status["capacity"] = dict(bench["status"].get("capacity") or bench["status"]["allocatable"])
    status["addresses"] = [{"address": ip, "type": "InternalIP"}, {"address": name, "type": "Hostname"},
                           {"address": f"ip-{ip.replace('.', '-')}.ec2.internal", "type": "InternalDNS"}]
    info = status["nodeInfo"]
    info["bootID"] = str(_uuid(rng))
    info["machineID"] = f"{rng.getrandbits(128):032x}"
    info["systemUUID"] = str(_uuid(rng))
    status["images"] = _images(rng, gpu)
    return node


def _uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:]}"
