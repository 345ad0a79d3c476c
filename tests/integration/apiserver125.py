"""The emulated API server of the oldest cluster the chart installs on, Kubernetes 1.25 (``Chart.yaml``
``kubeVersion``): what ``apiserver.py``'s :class:`ApiServer` does, minus what later versions added.

* ``/version`` answers ``git_version`` (``v1.25.16``, the last 1.25 patch release; a test may set an older
  one to see Helm refuse the chart): Helm's ``kubeVersion`` check and clients read it there.
* Pods have no ``metadata.generation``: the API server sets it on pods only since v1.33
  (``PodObservedGenerationTracking``, KEP-5067); so a scheduler writing ``observedGeneration`` on a pod
  condition of an older cluster is caught below.
* Every create and update of a built-in kind (pods and their ``/status``, Events, Leases, nodes …; not the
  custom resources, which ``crds.py`` checks against their CRD) is checked against the **v1.25 strict OpenAPI
  schema** (``apivalidation.schema_errors``): a field v1.25 does not define answers ``422 Invalid`` and
  stores nothing, as a server with ``fieldValidation=Strict`` does (its default drops the field instead).

What is served (no ``scheduling.k8s.io`` PodGroups, no ``resource.k8s.io/v1``) is the ``k8s`` fixture's
table, ``conftest.RESOURCES_1_25``.
"""

from __future__ import annotations

from typing import Any

import attrs
from kmock import KubernetesError

from tests.integration import apivalidation as av
from tests.integration import crds
from tests.integration.apiserver import ApiServer

VERSION = "1.25.0"
"""The strict schemas writes are checked against (kubernetes-validate's ``v1.25.0-local-strict``)."""


@attrs.define(kw_only=True)
class ApiServer125(ApiServer):
    """:class:`ApiServer` as a Kubernetes 1.25 server answers (module docstring)."""

    git_version: str = "v1.25.16"

    async def _serve_server_version(self, request: Any) -> dict[str, str]:
        major, minor, *_ = self.git_version.removeprefix("v").split(".")
        return {"major": major, "minor": minor, "gitVersion": self.git_version, "gitTreeState": "clean",
                "platform": "linux/amd64"}

    async def _commit(self, key: Any, body: dict[str, Any], type_: str) -> dict[str, Any]:
        if (key[0].group, key[0].plural) == ("", "pods"):
            body["metadata"].pop("generation", None)  # not set on pods before v1.33
        return await super()._commit(key, body, type_)  # type: ignore[no-any-return]

    def _validate(self, req: Any, body: dict[str, Any], old: dict[str, Any] | None) -> None:
        super()._validate(req, body, old)
        r = req.resource
        if (r.group, r.version, r.plural) in crds.SCHEMAS:
            return
        api_version = f"{r.group}/{r.version}" if r.group else r.version
        errs = av.schema_errors(body, api_version, self._kind(r), VERSION)
        if errs:
            name = (body.get("metadata") or {}).get("name") or ""
            status = av.invalid_status(r.group, self._kind(r), name, errs)
            raise KubernetesError(status=422, reason="Invalid", message=status["message"], details=status["details"])
