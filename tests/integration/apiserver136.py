"""The emulated API server of a Kubernetes 1.36 cluster with ``GenericWorkload`` on: what ``apiserver.py``'s
:class:`ApiServer` does, plus the v1.36 rules for ``scheduling.k8s.io/v1alpha2`` objects.

* Every create and update of a ``scheduling.k8s.io/v1alpha2`` object (PodGroup, Workload), its ``/status``
  included, is checked against the **v1.36 strict OpenAPI schema** shipped in ``kubernetes-validate``
  (``v1.36.0-local-strict``): a field v1.36 does not define (``workloadRef``, a struct ``disruptionMode``,
  ``parentCompositePodGroupName``), a wrong type or a condition without its required ``reason`` /
  ``message`` / ``lastTransitionTime`` answers ``422 Invalid`` and stores nothing — as a server with
  ``fieldValidation=Strict`` does, stricter than its default ``Warn`` (which drops unknown fields).
* A PodGroup's ``spec`` is immutable in v1.36 (every ``PodGroupSpec`` field says "This field is immutable";
  ``minCount`` became mutable only with v1beta1, in 1.37, KEP-5832): an update that changes
  it answers ``422 Invalid`` ``field is immutable`` (apimachinery ``ValidateImmutableField``).

Condition *types* are not in the schema (``metav1.Condition.type`` is any qualified name): tests assert the
v1.36 names themselves.
"""

from __future__ import annotations

from typing import Any

from kmock import KubernetesError

from tests.integration import apivalidation as av
from tests.integration.apiserver import ApiServer

VERSION = "1.36.0"
GROUP, V1ALPHA2 = "scheduling.k8s.io", "v1alpha2"


class ApiServer136(ApiServer):
    """:class:`ApiServer` with the v1.36 validation of ``scheduling.k8s.io/v1alpha2`` writes (module docstring)."""

    def _validate(self, req: Any, body: dict[str, Any], old: dict[str, Any] | None) -> None:
        super()._validate(req, body, old)
        r = req.resource
        if (r.group, r.version) != (GROUP, V1ALPHA2):
            return
        kind = self._kind(r)
        name = (body.get("metadata") or {}).get("name") or ""
        errs = av.schema_errors(body, f"{GROUP}/{V1ALPHA2}", kind, VERSION)
        if old is not None and kind == "PodGroup" and body.get("spec") != old.get("spec"):
            errs.append(av.invalid("spec", body.get("spec"), "field is immutable"))
        if errs:
            status = av.invalid_status(GROUP, kind, name, errs)
            raise KubernetesError(status=422, reason="Invalid", message=status["message"], details=status["details"])
