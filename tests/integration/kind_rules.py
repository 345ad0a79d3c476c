"""Per-kind rules a real API server enforces and no OpenAPI schema carries, for the emulator (``apiserver.py``).

Each is the hand-written validation of that kind in kubernetes/kubernetes (``pkg/apis/<group>/validation``), as
far as our writes can trip over it:

* **conditions** (:data:`CONDITION_LISTS`): every ``metav1.Condition`` list — PodGroup, CompositePodGroup,
  PodDisruptionBudget and ResourceClaim device status — through ``metav1validation.ValidateConditions``
  (:func:`~tests.integration.apivalidation.validate_conditions`); a pod's own ``PodCondition`` types through
  ``validatePodConditions`` (``pkg/apis/core/validation/validation.go``: a qualified name unless a system type).
* **immutable fields on update** (:func:`update_errors`): a pod's spec (``ValidatePodUpdate``: only container
  images, ``activeDeadlineSeconds``, added tolerations and removed scheduling gates may change, and while the pod is
  gated, added ``nodeSelector`` entries (KEP-3838, ``validateNodeSelectorMutation``; a gated pod's node affinity is
  not emulated: any change of it is refused) — so ``spec.schedulingGroup`` and ``spec.nodeName`` never do); a
  PodGroup's spec but ``schedulingPolicy.gang.minCount`` (``scheduling/v1beta1`` ``PodGroupSpec``: "This field is
  immutable" on every other field; the policy's variant is frozen), so its parent link never changes; a
  CompositePodGroup's whole spec; a ResourceClaim's spec and, once set, its ``status.allocation`` (``resource/v1``
  ``AllocationResult``: no modification once set); no new finalizer on an object being deleted
  (``ValidateObjectMetaUpdate``).
* **ResourceClaim allocation results** (:func:`allocation_result_errors`, ``pkg/apis/resource/validation``
  ``validateDeviceRequestAllocationResult``): a ``shareID`` is a UUID in RFC 4122 normalized form with lowercase
  hexadecimal characters (``validateUID``, origin ``format=k8s-uuid``), and every ``consumedCapacity`` amount is
  a non-negative quantity.
* **webhook configurations** (:func:`webhook_configuration_errors`, ``pkg/apis/admissionregistration/validation``
  ``validateMutatingWebhookConfiguration`` / ``validateValidatingWebhookConfiguration``): each webhook's name a
  fully qualified name (≥ 3 dot-separated segments) and unique, ``sideEffects`` and ``admissionReviewVersions``
  set, ``timeoutSeconds`` within 1–30, exactly one of ``clientConfig.url`` (https, no fragment or query) and
  ``clientConfig.service`` (port 1–65535, path starting with ``/``), and valid label selectors.

Not emulated: one-of unions (``x-kubernetes-unions``: a PodGroup policy with neither ``basic`` nor ``gang``),
admission plugins, defaulting.
"""

from __future__ import annotations

import copy
import re
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import urlsplit

from tests.integration.apivalidation import (
    FieldError,
    forbidden,
    fully_qualified_name,
    invalid,
    qualified_name,
    required,
    validate_conditions,
)

JSON = dict[str, Any]

CONDITION_LISTS: dict[tuple[str, str], tuple[tuple[str, ...], ...]] = {
    ("scheduling.k8s.io", "podgroups"): (("status", "conditions"),),
    ("scheduling.k8s.io", "compositepodgroups"): (("status", "conditions"),),
    ("policy", "poddisruptionbudgets"): (("status", "conditions"),),
    ("resource.k8s.io", "resourceclaims"): (("status", "devices", "*", "conditions"),),
}
"""(group, plural) → where its ``metav1.Condition`` lists are (``*``: every item of a list)."""

POD_SYSTEM_CONDITIONS = ("PodScheduled", "Ready", "Initialized")

POD_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)")
"""``ValidatePodUpdate``'s message (``pkg/apis/core/validation/validation.go``)."""

NODE_SELECTOR_MUTATION = "only additions to spec.nodeSelector are allowed (no mutations or deletions)"
"""``validateNodeSelectorMutation``'s message, for a gated pod (``pkg/apis/core/validation/validation.go``)."""

IMMUTABLE = "field is immutable"


def _lists_at(obj: Any, path: tuple[str, ...], prefix: str = "") -> list[tuple[str, Any]]:
    if not path:
        return [(prefix, obj)]
    head, rest = path[0], path[1:]
    if head == "*":
        items = obj if isinstance(obj, list) else []
        return [found for i, item in enumerate(items) for found in _lists_at(item, rest, f"{prefix}[{i}]")]
    if not isinstance(obj, dict) or head not in obj:
        return []
    return _lists_at(obj[head], rest, f"{prefix}.{head}" if prefix else head)


def condition_errors(group: str, plural: str, body: JSON) -> list[FieldError]:
    """The condition rules of the module docstring for an object of ``group``/``plural``."""
    if (group, plural) == ("", "pods"):
        conditions = (body.get("status") or {}).get("conditions")
        return [invalid(f"status.conditions[{i}].type", c.get("type"), m)
                for i, c in enumerate(conditions if isinstance(conditions, list) else [])
                if isinstance(c, dict) and c.get("type") not in POD_SYSTEM_CONDITIONS
                for m in qualified_name(str(c.get("type") or ""))]
    return [err for path in CONDITION_LISTS.get((group, plural), ())
            for where, conditions in _lists_at(body, path) for err in validate_conditions(conditions, where)]


def _spec_changes(new: JSON, old: JSON, keep: tuple[str, ...] = ()) -> list[FieldError]:
    """``field is immutable`` for each top-level spec field that differs, but those in ``keep``."""
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    return [invalid(f"spec.{k}", ns.get(k), IMMUTABLE) for k in sorted(set(ns) | set(os_))
            if k not in keep and ns.get(k) != os_.get(k)]


def _podgroup_changes(new: JSON, old: JSON) -> list[FieldError]:
    errs = _spec_changes(new, old, keep=("schedulingPolicy",))
    np_ = (new.get("spec") or {}).get("schedulingPolicy") or {}
    op_ = (old.get("spec") or {}).get("schedulingPolicy") or {}
    if set(np_) != set(op_) or np_.get("basic") != op_.get("basic"):
        errs.append(invalid("spec.schedulingPolicy", np_, IMMUTABLE))
    elif {k: v for k, v in (np_.get("gang") or {}).items() if k != "minCount"} != \
            {k: v for k, v in (op_.get("gang") or {}).items() if k != "minCount"}:
        errs.append(invalid("spec.schedulingPolicy.gang", np_.get("gang"), IMMUTABLE))
    return errs


def _pod_changes(new: JSON, old: JSON) -> list[FieldError]:
    """``ValidatePodUpdate``: the old spec with what may change taken from the new one must be the new spec."""
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    allowed = copy.deepcopy(os_)
    for key in ("containers", "initContainers"):
        olds, news = allowed.get(key) or [], ns.get(key) or []
        if len(olds) == len(news):
            for o, n in zip(olds, news, strict=True):
                if isinstance(o, dict) and isinstance(n, dict) and "image" in n:
                    o["image"] = n["image"]
    if "activeDeadlineSeconds" in ns:
        allowed["activeDeadlineSeconds"] = ns["activeDeadlineSeconds"]
    old_tol, new_tol = os_.get("tolerations") or [], ns.get("tolerations") or []
    if all(t in new_tol for t in old_tol):
        allowed["tolerations"] = ns.get("tolerations")
    old_gates, new_gates = os_.get("schedulingGates") or [], ns.get("schedulingGates") or []
    if all(g in old_gates for g in new_gates):
        allowed["schedulingGates"] = ns.get("schedulingGates")
    errs: list[FieldError] = []
    old_selector, new_selector = os_.get("nodeSelector") or {}, ns.get("nodeSelector") or {}
    if old_gates and new_selector != old_selector:  # KEP-3838: a gated pod's nodeSelector may grow
        if not isinstance(new_selector, dict) or any(new_selector.get(k) != v for k, v in old_selector.items()):
            errs.append(invalid("spec.nodeSelector", new_selector, NODE_SELECTOR_MUTATION))
        allowed["nodeSelector"] = ns.get("nodeSelector")
    allowed = {k: v for k, v in allowed.items() if v is not None}
    if allowed == {k: v for k, v in ns.items() if v is not None}:
        return errs
    changed = sorted(k for k in set(ns) | set(os_) if ns.get(k) != allowed.get(k))
    return [*errs, forbidden("spec", f"{POD_UPDATE_FORBIDDEN}\n  changed: {', '.join(changed)}")]


def update_errors(group: str, plural: str, new: JSON, old: JSON, subresource: str | None) -> list[FieldError]:
    """The immutable-field rules of the module docstring for an update of ``old`` into ``new``."""
    errs: list[FieldError] = []
    old_md, new_md = old.get("metadata") or {}, new.get("metadata") or {}
    if old_md.get("deletionTimestamp"):
        added = [f for f in new_md.get("finalizers") or [] if f not in (old_md.get("finalizers") or [])]
        if added:
            errs.append(forbidden("metadata.finalizers", f"no new finalizers can be added if the object is being "
                                                         f"deleted, found new finalizers {added}"))
    if subresource == "status":
        if (group, plural) == ("resource.k8s.io", "resourceclaims"):
            was = (old.get("status") or {}).get("allocation")
            now = (new.get("status") or {}).get("allocation")
            if was and now and was != now:
                errs.append(invalid("status.allocation", now, IMMUTABLE))
        return errs
    if (group, plural) == ("", "pods"):
        errs += _pod_changes(new, old)
    elif (group, plural) == ("scheduling.k8s.io", "podgroups") and "v1alpha2" not in str(new.get("apiVersion")):
        errs += _podgroup_changes(new, old)
    elif (group, plural) in (("scheduling.k8s.io", "compositepodgroups"), ("resource.k8s.io", "resourceclaims")):
        errs += _spec_changes(new, old)
    return errs


def _selector_errors(selector: Any, path: str) -> list[FieldError]:
    """``ValidateLabelSelector`` (apimachinery ``pkg/apis/meta/v1/validation``): keys qualified names; ``In`` /
    ``NotIn`` need values, ``Exists`` / ``DoesNotExist`` take none."""
    if not isinstance(selector, dict):
        return []
    errs: list[FieldError] = []
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        here = f"{path}.matchExpressions[{i}]"
        op, values = expr.get("operator"), expr.get("values") or []
        if op in ("In", "NotIn") and not values:
            errs.append(required(f"{here}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist") and values:
            errs.append(forbidden(f"{here}.values", "may not be specified when `operator` is 'Exists' or "
                                                    "'DoesNotExist'"))
        elif op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            errs.append(invalid(f"{here}.operator", op, "not a valid selector operator"))
        errs += [invalid(f"{here}.key", expr.get("key"), m) for m in qualified_name(str(expr.get("key") or ""))]
    for key in selector.get("matchLabels") or {}:
        errs += [invalid(f"{path}.matchLabels", key, m) for m in qualified_name(key)]
    return errs


def _client_config_errors(cc: Any, path: str) -> list[FieldError]:
    if not isinstance(cc, dict):
        return [required(path)]
    url, service = cc.get("url"), cc.get("service")
    if (url is None) == (service is None):
        return [required(path, "exactly one of url or service is required")]
    if url is not None:
        parts = urlsplit(str(url))
        if parts.scheme != "https":
            return [invalid(f"{path}.url", url, "'https' is the only allowed URL scheme")]
        if not parts.hostname:
            return [invalid(f"{path}.url", url, "host must be specified")]
        if parts.fragment or parts.query:
            return [invalid(f"{path}.url", url, "fragments and query parameters are not permitted")]
        return []
    errs = []
    if not service.get("name"):
        errs.append(required(f"{path}.service.name", "service name is required"))
    if not service.get("namespace"):
        errs.append(required(f"{path}.service.namespace", "service namespace is required"))
    port = service.get("port", 443)
    if not isinstance(port, int) or not 1 <= port <= 65535:
        errs.append(invalid(f"{path}.service.port", port, "port is not valid: must be between 1 and 65535, inclusive"))
    svc_path = service.get("path")
    if svc_path is not None and not str(svc_path).startswith("/"):
        errs.append(invalid(f"{path}.service.path", svc_path, "must start with a '/'"))
    return errs


def webhook_configuration_errors(body: JSON) -> list[FieldError]:
    """The webhook rules of the module docstring for a Mutating/ValidatingWebhookConfiguration."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, hook in enumerate(body.get("webhooks") or []):
        here = f"webhooks[{i}]"
        name = str(hook.get("name") or "")
        errs += [required(f"{here}.name") if m == "Required value" else invalid(f"{here}.name", name, m)
                 for m in fully_qualified_name(name)]
        if name in seen:
            errs.append(FieldError("FieldValueDuplicate", f"{here}.name", name))
        seen.add(name)
        versions = hook.get("admissionReviewVersions") or []
        if not any(v in ("v1", "v1beta1") for v in versions):
            errs.append(required(f"{here}.admissionReviewVersions", "must specify one of v1, v1beta1"))
        if hook.get("sideEffects") not in ("None", "NoneOnDryRun"):
            errs.append(FieldError("FieldValueNotSupported", f"{here}.sideEffects", hook.get("sideEffects"),
                                   'supported values: "None", "NoneOnDryRun"'))
        timeout = hook.get("timeoutSeconds")
        if timeout is not None and not (isinstance(timeout, int) and 1 <= timeout <= 30):
            errs.append(invalid(f"{here}.timeoutSeconds", timeout, "the timeout value must be between 1 and 30 "
                                                                   "seconds"))
        errs += _client_config_errors(hook.get("clientConfig"), f"{here}.clientConfig")
        for key in ("objectSelector", "namespaceSelector"):
            errs += _selector_errors(hook.get(key), f"{here}.{key}")
    return errs


WEBHOOK_CONFIGURATIONS = frozenset({("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
                                    ("admissionregistration.k8s.io", "validatingwebhookconfigurations")})


UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
QUANTITY = re.compile(r"([+-]?[0-9.]+)([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?")


def allocation_result_errors(body: JSON) -> list[FieldError]:
    """``validateDeviceRequestAllocationResult``'s ``shareID`` rule (``validateUID``, its wording) and the
    ``consumedCapacity`` quantities' sign, for every result of ``status.allocation``."""
    alloc = (body.get("status") or {}).get("allocation")
    results = ((alloc or {}).get("devices") or {}).get("results") if isinstance(alloc, dict) else None
    errs: list[FieldError] = []
    for i, result in enumerate(results if isinstance(results, list) else []):
        if not isinstance(result, dict):
            continue
        path = f"status.allocation.devices.results[{i}]"
        share = result.get("shareID")
        if isinstance(share, str):
            if UUID.fullmatch(share) is None:
                errs.append(invalid(f"{path}.shareID", share, f"error validating uid: invalid UUID length: {len(share)}"
                                    if len(share) != 36 else "error validating uid: invalid UUID format"))
            elif share != share.lower():
                errs.append(invalid(f"{path}.shareID", share, "uid must be in RFC 4122 normalized form, "
                                    "`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters"))
        for name, amount in (result.get("consumedCapacity") or {}).items():
            match = QUANTITY.fullmatch(str(amount))
            try:
                negative = match is not None and Decimal(match.group(1)) < 0
            except InvalidOperation:
                negative = False
            if negative:
                errs.append(invalid(f"{path}.consumedCapacity[{name}]", amount, "must be greater than or equal to 0"))
    return errs


def kind_errors(group: str, plural: str, body: JSON) -> list[FieldError]:
    """Every create-and-update rule of the module docstring for ``body``."""
    errs = condition_errors(group, plural, body)
    if (group, plural) in WEBHOOK_CONFIGURATIONS:
        errs += webhook_configuration_errors(body)
    if (group, plural) == ("resource.k8s.io", "resourceclaims"):
        errs += allocation_result_errors(body)
    return errs
