"""Fields and kinds the Kubernetes v1.37 API does not know: what ``kubectl apply --validate=strict`` refuses.

A hand-written manifest given to ``simulate`` has not met the API server, which refuses (strict) or drops
(the default) a field its schema lacks; the models ignore unknown fields (``model/base.py``), so a typo —
``resoures:`` under a container, ``minCont:`` under ``gang`` — would leave a pod with no requests or a gang
with no minCount, silently. :func:`unknown_fields` names each such field and the closest known one, in the
parts of an object the scheduler reads (:data:`SHAPES`: a Pod's metadata and spec — containers and their
resources and ports, affinity, tolerations, spread constraints, claims, gates, volumes — and a PodGroup's
or CompositePodGroup's metadata and spec, every level); ``simulate`` lists them as warnings, ``run`` writes a
Warning Event (there the API server has already dropped what its own version does not know, so what is
left is a field newer than v1.37). :func:`unknown_kind` does the same for an object's ``kind``.

The tables are the v1.37 OpenAPI schema's property names (``io.k8s.api.core.v1.PodSpec`` and so on);
``tests/unit/model/test_strict.py`` checks every table against the schema of ``kubernetes-validate==1.37.0``
and the kinds against its group-version-kinds, so they are regenerated from it, not edited by hand. Maps
whose keys are free (``labels``, ``nodeSelector``, ``requests``) are not looked into.

Cost: one set difference per object level present, so a plain pod costs a few microseconds. From JSON bytes,
:func:`known_only` answers the common case — no unknown field — without building the object's values at all.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from scheduler.model.base import field_path

CUTOFF = 0.6
"""How alike a known name must be to be offered as the closest (``difflib`` ratio: ``resoures``/``resources``
is 0.94, ``minCont``/``minCount`` 0.93)."""
KIND_CUTOFF = 0.8
"""The same for a kind outside the built-in API groups (a CRD's ``JobSet`` is not offered ``Job``)."""


@dataclass(frozen=True, slots=True)
class Shape:
    """The v1.37 field names of one object type (``fields``), and the shapes of the fields looked into
    (``children``: an object, or each object of a list)."""

    fields: frozenset[str]
    children: tuple[tuple[str, Shape], ...] = ()


def _shape(names: str, **children: Shape) -> Shape:
    """A :class:`Shape` from its field names not looked into (space-separated) and those looked into."""
    return Shape(frozenset(names.split()) | children.keys(), tuple(children.items()))


@dataclass(frozen=True, slots=True)
class UnknownField:
    """A field the v1.37 schema does not have at ``path`` (``spec.containers[0].resoures``), and the known
    field at that level most like it, if any."""

    path: str
    closest: str | None

    def __str__(self) -> str:
        hint = f" (did you mean {self.closest}?)" if self.closest else ""
        return f"{self.path}: unknown field{hint}; ignored"


# --- generated from the v1.37 schema (test_strict.py) ------------------------------------------------
# One constant per definition; a v1alpha3 definition whose properties are a v1beta1 one's (TopologyConstraint,
# the scheduling constraints, CompositeDisruptionMode, WorkloadReference) reuses that table.
OBJECT_META = _shape("annotations creationTimestamp deletionGracePeriodSeconds deletionTimestamp finalizers "
                      "generateName generation labels managedFields name namespace ownerReferences resourceVersion "
                      "selfLink uid")
"""``meta.v1.ObjectMeta``."""
LABEL_SELECTOR_REQUIREMENT = _shape("key operator values")
"""``meta.v1.LabelSelectorRequirement``."""
LABEL_SELECTOR = _shape("matchLabels", matchExpressions=LABEL_SELECTOR_REQUIREMENT)
"""``meta.v1.LabelSelector``."""
RESOURCE_REQUIREMENTS = _shape("claims limits requests")
"""``core.v1.ResourceRequirements``."""
CONTAINER_PORT = _shape("containerPort hostIP hostPort name protocol")
"""``core.v1.ContainerPort``."""
CONTAINER = _shape(("args command env envFrom image imagePullPolicy lifecycle livenessProbe name readinessProbe "
                    "resizePolicy restartPolicy restartPolicyRules securityContext startupProbe stdin stdinOnce "
                    "terminationMessagePath terminationMessagePolicy tty volumeDevices volumeMounts workingDir"),
                   resources=RESOURCE_REQUIREMENTS, ports=CONTAINER_PORT)
"""``core.v1.Container``."""
NODE_SELECTOR_REQUIREMENT = _shape("key operator values")
"""``core.v1.NodeSelectorRequirement``."""
NODE_SELECTOR_TERM = _shape("", matchExpressions=NODE_SELECTOR_REQUIREMENT, matchFields=NODE_SELECTOR_REQUIREMENT)
"""``core.v1.NodeSelectorTerm``."""
NODE_SELECTOR = _shape("", nodeSelectorTerms=NODE_SELECTOR_TERM)
"""``core.v1.NodeSelector``."""
PREFERRED_SCHEDULING_TERM = _shape("weight", preference=NODE_SELECTOR_TERM)
"""``core.v1.PreferredSchedulingTerm``."""
NODE_AFFINITY = _shape("",
                       requiredDuringSchedulingIgnoredDuringExecution=NODE_SELECTOR,
                       preferredDuringSchedulingIgnoredDuringExecution=PREFERRED_SCHEDULING_TERM)
"""``core.v1.NodeAffinity``."""
POD_AFFINITY_TERM = _shape("matchLabelKeys mismatchLabelKeys namespaces topologyKey",
                           labelSelector=LABEL_SELECTOR, namespaceSelector=LABEL_SELECTOR)
"""``core.v1.PodAffinityTerm``."""
WEIGHTED_POD_AFFINITY_TERM = _shape("weight", podAffinityTerm=POD_AFFINITY_TERM)
"""``core.v1.WeightedPodAffinityTerm``."""
POD_AFFINITY = _shape("",
                      requiredDuringSchedulingIgnoredDuringExecution=POD_AFFINITY_TERM,
                      preferredDuringSchedulingIgnoredDuringExecution=WEIGHTED_POD_AFFINITY_TERM)
"""``core.v1.PodAffinity``."""
POD_ANTI_AFFINITY = _shape("",
                           requiredDuringSchedulingIgnoredDuringExecution=POD_AFFINITY_TERM,
                           preferredDuringSchedulingIgnoredDuringExecution=WEIGHTED_POD_AFFINITY_TERM)
"""``core.v1.PodAntiAffinity``."""
AFFINITY = _shape("", nodeAffinity=NODE_AFFINITY, podAffinity=POD_AFFINITY, podAntiAffinity=POD_ANTI_AFFINITY)
"""``core.v1.Affinity``."""
TOLERATION = _shape("effect key operator tolerationSeconds value")
"""``core.v1.Toleration``."""
TOPOLOGY_SPREAD_CONSTRAINT = _shape(("matchLabelKeys maxSkew minDomains nodeAffinityPolicy nodeTaintsPolicy "
                                     "topologyKey whenUnsatisfiable"), labelSelector=LABEL_SELECTOR)
"""``core.v1.TopologySpreadConstraint``."""
POD_SCHEDULING_GROUP = _shape("podGroupName")
"""``core.v1.PodSchedulingGroup``."""
POD_RESOURCE_CLAIM = _shape("name resourceClaimName resourceClaimTemplateName")
"""``core.v1.PodResourceClaim``."""
POD_SCHEDULING_GATE = _shape("name")
"""``core.v1.PodSchedulingGate``."""
VOLUME = _shape("awsElasticBlockStore azureDisk azureFile cephfs cinder configMap csi downwardAPI emptyDir ephemeral "
                 "fc flexVolume flocker gcePersistentDisk gitRepo glusterfs hostPath image iscsi name nfs "
                 "persistentVolumeClaim photonPersistentDisk portworxVolume projected quobyte rbd scaleIO secret "
                 "storageos vsphereVolume")
"""``core.v1.Volume``."""
POD_SPEC = _shape(("activeDeadlineSeconds automountServiceAccountToken dnsConfig dnsPolicy enableServiceLinks "
                   "ephemeralContainers evictionResponders hostAliases hostIPC hostNetwork hostPID hostUsers hostname "
                   "hostnameOverride imagePullSecrets nodeName nodeSelector os overhead preemptionPolicy priority "
                   "priorityClassName readinessGates restartPolicy runtimeClassName schedulerName securityContext "
                   "serviceAccount serviceAccountName setHostnameAsFQDN shareProcessNamespace subdomain "
                   "terminationGracePeriodSeconds"),
                  containers=CONTAINER, initContainers=CONTAINER, resources=RESOURCE_REQUIREMENTS, affinity=AFFINITY,
                  tolerations=TOLERATION, topologySpreadConstraints=TOPOLOGY_SPREAD_CONSTRAINT,
                  schedulingGroup=POD_SCHEDULING_GROUP, resourceClaims=POD_RESOURCE_CLAIM,
                  schedulingGates=POD_SCHEDULING_GATE, volumes=VOLUME)
"""``core.v1.PodSpec``."""
POD = _shape("apiVersion kind status", metadata=OBJECT_META, spec=POD_SPEC)
"""``core.v1.Pod``."""
GANG_SCHEDULING_POLICY = _shape("minCount")
"""``scheduling.v1beta1.GangSchedulingPolicy``."""
POD_GROUP_SCHEDULING_POLICY = _shape("basic", gang=GANG_SCHEDULING_POLICY)
"""``scheduling.v1beta1.PodGroupSchedulingPolicy``."""
TOPOLOGY_CONSTRAINT = _shape("key")
"""``scheduling.v1beta1.TopologyConstraint``."""
POD_GROUP_SCHEDULING_CONSTRAINTS = _shape("", topology=TOPOLOGY_CONSTRAINT)
"""``scheduling.v1beta1.PodGroupSchedulingConstraints``."""
DISRUPTION_MODE = _shape("all single")
"""``scheduling.v1beta1.DisruptionMode``."""
POD_GROUP_RESOURCE_CLAIM = _shape("name resourceClaimName resourceClaimTemplateName")
"""``scheduling.v1beta1.PodGroupResourceClaim``."""
WORKLOAD_REFERENCE = _shape("templateName workloadName")
"""``scheduling.v1beta1.WorkloadReference``."""
POD_GROUP_SPEC = _shape("parentCompositePodGroupName preemptionPolicy priority priorityClassName",
                        schedulingPolicy=POD_GROUP_SCHEDULING_POLICY,
                        schedulingConstraints=POD_GROUP_SCHEDULING_CONSTRAINTS, disruptionMode=DISRUPTION_MODE,
                        resourceClaims=POD_GROUP_RESOURCE_CLAIM, workloadRef=WORKLOAD_REFERENCE)
"""``scheduling.v1beta1.PodGroupSpec``."""
POD_GROUP = _shape("apiVersion kind status", metadata=OBJECT_META, spec=POD_GROUP_SPEC)
"""``scheduling.v1beta1.PodGroup``."""
COMPOSITE_GANG_SCHEDULING_POLICY = _shape("minGroupCount")
"""``scheduling.v1alpha3.CompositeGangSchedulingPolicy``."""
COMPOSITE_POD_GROUP_SCHEDULING_POLICY = _shape("basic", gang=COMPOSITE_GANG_SCHEDULING_POLICY)
"""``scheduling.v1alpha3.CompositePodGroupSchedulingPolicy``."""
COMPOSITE_POD_GROUP_SPEC = _shape("parentCompositePodGroupName preemptionPolicy priority priorityClassName",
                                  schedulingPolicy=COMPOSITE_POD_GROUP_SCHEDULING_POLICY,
                                  schedulingConstraints=POD_GROUP_SCHEDULING_CONSTRAINTS,
                                  disruptionMode=DISRUPTION_MODE, workloadRef=WORKLOAD_REFERENCE)
"""``scheduling.v1alpha3.CompositePodGroupSpec``."""
COMPOSITE_POD_GROUP = _shape("apiVersion kind status", metadata=OBJECT_META, spec=COMPOSITE_POD_GROUP_SPEC)
"""``scheduling.v1alpha3.CompositePodGroup``."""
# --- end of generated tables ---------------------------------------------------------------------------

SHAPES: dict[tuple[str, str], Shape] = {
    ("v1", "Pod"): POD,
    ("scheduling.k8s.io/v1beta1", "PodGroup"): POD_GROUP,
    ("scheduling.k8s.io/v1alpha3", "CompositePodGroup"): COMPOSITE_POD_GROUP,
}
"""(apiVersion, kind) → the shape checked; other objects (and other versions of these) are not checked."""

KINDS: dict[str, frozenset[str]] = {group: frozenset(names.split()) for group, names in {
    "": ("Binding ComponentStatus ConfigMap Endpoints Event LimitRange Namespace Node PersistentVolume "
         "PersistentVolumeClaim Pod PodTemplate ReplicationController ResourceQuota Secret Service ServiceAccount"),
    "admissionregistration.k8s.io": ("MutatingAdmissionPolicy MutatingAdmissionPolicyBinding "
                                     "MutatingWebhookConfiguration ValidatingAdmissionPolicy "
                                     "ValidatingAdmissionPolicyBinding ValidatingWebhookConfiguration"),
    "apiextensions.k8s.io": "CustomResourceDefinition",
    "apiregistration.k8s.io": "APIService",
    "apps": "ControllerRevision DaemonSet Deployment ReplicaSet StatefulSet",
    "authentication.k8s.io": "SelfSubjectReview TokenRequest TokenReview",
    "authorization.k8s.io": ("LocalSubjectAccessReview SelfSubjectAccessReview SelfSubjectRulesReview "
                             "SubjectAccessReview"),
    "autoscaling": "HorizontalPodAutoscaler Scale",
    "batch": "CronJob Job",
    "certificates.k8s.io": "CertificateSigningRequest ClusterTrustBundle PodCertificateRequest",
    "coordination.k8s.io": "Lease LeaseCandidate",
    "discovery.k8s.io": "EndpointSlice",
    "events.k8s.io": "Event",
    "flowcontrol.apiserver.k8s.io": "FlowSchema PriorityLevelConfiguration",
    "internal.apiserver.k8s.io": "StorageVersion",
    "lifecycle.k8s.io": "Eviction EvictionRequest",
    "networking.k8s.io": "IPAddress Ingress IngressClass NetworkPolicy ServiceCIDR",
    "node.k8s.io": "RuntimeClass",
    "policy": "Eviction PodDisruptionBudget",
    "rbac.authorization.k8s.io": "ClusterRole ClusterRoleBinding Role RoleBinding",
    "resource.k8s.io": ("DeviceClass DeviceTaintRule ResourceClaim ResourceClaimTemplate ResourcePoolStatusRequest "
                        "ResourceSlice"),
    "scheduling.k8s.io": "CompositePodGroup PodGroup PriorityClass Workload",
    "storage.k8s.io": "CSIDriver CSINode CSIStorageCapacity StorageClass VolumeAttachment VolumeAttributesClass",
    "storagemigration.k8s.io": "StorageVersionMigration",
}.items()}
"""API group (``""``: core) → the kinds the v1.37 API serves in it (lists left out)."""
BUILT_IN_KINDS = frozenset().union(*KINDS.values())


def unknown_fields(raw: Mapping[str, Any], shape: Shape | None = None) -> list[UnknownField]:
    """The fields of ``raw`` (an object as read: apiVersion, kind, metadata, spec, …) its v1.37 schema does not
    have, in the parts :data:`SHAPES` covers, level by level (sorted by name within one level); empty for an
    object of another kind or version. ``shape``: the object's, when ``raw`` does not say its apiVersion and
    kind (the items of an API list do not)."""
    if shape is None:
        shape = SHAPES.get((str(raw.get("apiVersion", "")), str(raw.get("kind", ""))))
    found: list[UnknownField] = []
    if shape is not None:
        _walk(raw, shape, [], found)
    return found


def _walk(obj: Mapping[Any, Any], shape: Shape, path: list[str | int], found: list[UnknownField]) -> None:
    """Add what ``obj`` has beyond ``shape`` to ``found``, then look into its children; ``path`` (the location, as
    :func:`~scheduler.model.base.field_path` spells it) is only formatted for a finding."""
    for name in () if shape.fields.issuperset(obj) else sorted(map(str, obj.keys() - shape.fields)):
        close = difflib.get_close_matches(name, shape.fields, n=1, cutoff=CUTOFF)
        found.append(UnknownField(field_path([*path, name]), close[0] if close else None))
    for name, child in shape.children:
        value = obj.get(name)
        if value is None:
            continue
        path.append(name)
        if isinstance(value, dict):
            _walk(value, child, path, found)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, dict):
                    path.append(i)
                    _walk(item, child, path, found)
                    path.pop()
        path.pop()


def known_only(shape: Shape) -> Callable[[bytes], bool]:
    """A test of one object's JSON bytes: True when it has no field beyond ``shape`` in the parts :func:`unknown_fields`
    looks into (so ``unknown_fields`` of its value is empty), False when it has one *or* when the test cannot tell (a
    looked-into field that is neither an object, a list of objects nor null; malformed JSON): the caller then decodes
    the object and asks :func:`unknown_fields`. The bytes are walked by msgspec (a struct per shape, its other fields
    skipped unread, unknown fields refused), about a tenth of the cost of decoding them."""
    decoder = msgspec.json.Decoder(_strict_struct(shape))

    def test(data: bytes) -> bool:
        try:
            decoder.decode(data)
        except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError
            return False
        return True

    return test


_STRICT: dict[int, type[msgspec.Struct]] = {}
"""id of a :class:`Shape` (all are module constants) → its struct (:func:`_strict_struct`)."""


def _strict_struct(shape: Shape) -> type[msgspec.Struct]:
    """The msgspec struct of ``shape``: its fields not looked into as raw JSON, each child as its own struct or a list
    of them, any other field refused (``forbid_unknown_fields``)."""
    if (done := _STRICT.get(id(shape))) is not None:
        return done
    children = dict(shape.children)
    fields: list[tuple[str, Any, Any]] = []
    for i, name in enumerate(sorted(shape.fields)):
        child = children.get(name)
        struct: Any = None if child is None else _strict_struct(child)
        kind: Any = msgspec.Raw if struct is None else struct | types.GenericAlias(list, (struct,)) | None
        fields.append((f"f{i}", kind, msgspec.field(default=None, name=name)))
    made = msgspec.defstruct(f"_Known{id(shape):x}", fields, forbid_unknown_fields=True, module=__name__)
    _STRICT[id(shape)] = made
    return made


def unknown_kind(api_version: str, kind: str, read: frozenset[str]) -> str | None:
    """Why an object of ``kind`` under ``api_version`` is skipped as a kind nobody serves, or None when the kind is
    a v1.37 one (skipped quietly: the scheduler reads ``read`` only, a Job is no mistake) or may be a custom
    resource's (a kind of another API group that is like no kind in ``read``: ``JobSet``).

    A kind unknown in a built-in API group (``scheduling.k8s.io`` ``PodGrup``) is named with the closest kind of
    that group; one of another group, when it is like a kind the scheduler reads (``Pods``), with that kind.
    """
    if kind in BUILT_IN_KINDS or kind in read:
        return None
    group = api_version.rpartition("/")[0]
    if group in KINDS:
        close = difflib.get_close_matches(kind, KINDS[group], n=1, cutoff=CUTOFF)
        what = f"no such kind in the {group or 'core'} API group of Kubernetes v1.37"
    else:
        close = difflib.get_close_matches(kind, read, n=1, cutoff=KIND_CUTOFF)
        if not close:
            return None
        what = "not a kind the scheduler reads"
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"{what}{hint}; skipped"
