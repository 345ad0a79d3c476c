"""Which PodGroup API the live scheduler speaks: ``scheduling.k8s.io/v1beta1`` (Kubernetes 1.37) or
``v1alpha2`` (1.36), chosen once by API discovery.

:func:`discover` asks the server for each version of :data:`PREFERENCE` in turn and takes the first
that serves ``podgroups`` — v1beta1 first, so a 1.37 cluster that still serves v1alpha2 is read as
1.37 (as kube-scheduler reads the newest version it knows). The chosen :class:`PodGroupApi` is where
the two shapes meet the one internal model (:mod:`scheduler.model.podgroup_v1alpha2`): the informer
decodes every v1alpha2 object it receives, the status writer encodes the conditions it writes, and
both use its resource path. A decoded object keeps its
``apiVersion``, so :func:`of` tells from a cached PodGroup which API it came from.

There is no CompositePodGroup in 1.36 (it is ``v1alpha3``, 1.37 only): on such a cluster the
driver's discovery of composites finds none and every tree is a single PodGroup.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.client.kube import JSON, PODGROUPS, PODGROUPS_V1ALPHA2, KubeClient, Resource
from scheduler.model import podgroup_v1alpha2
from scheduler.model.base import from_wire
from scheduler.model.podgroup_v1alpha2 import Decoded
from scheduler.model.scheduling import PodGroup


@dataclass(frozen=True, slots=True)
class PodGroupApi:
    """One served PodGroup API version: its ``resource``, what a cluster enables to serve it (``enable``),
    and the conversion of its objects to and from the internal model (``decoder`` / ``encoder``: None when the version
    *is* the internal shape)."""

    resource: Resource
    enable: str
    decoder: Callable[[Mapping[str, Any]], Decoded] | None = None
    encoder: Callable[[Sequence[Mapping[str, Any]]], list[JSON]] | None = None

    def decode(self, raw: Mapping[str, Any]) -> Decoded:
        """``raw`` (API JSON of this version) in the internal shape, with what of it is not honoured."""
        return Decoded(dict(raw)) if self.decoder is None else self.decoder(raw)

    def parse(self, raw: Mapping[str, Any]) -> PodGroup:
        """The internal model of ``raw``. Raises pydantic's ``ValidationError`` for a malformed object."""
        return from_wire(PodGroup, self.decode(raw).raw)

    def conditions(self, conditions: Sequence[Mapping[str, Any]]) -> list[JSON]:
        """``status.conditions`` (internal names) as this version names them."""
        return [dict(c) for c in conditions] if self.encoder is None else self.encoder(conditions)

    def informer_decode(self, report: Callable[[PodGroup, str], None]
                        ) -> Callable[[Mapping[str, Any]], Mapping[str, Any]] | None:
        """What the PodGroup informer applies to every object it receives (None: nothing to convert);
        ``report(group, problems)`` is called for an object with fields not honoured."""
        if self.decoder is None:
            return None

        def decode(raw: Mapping[str, Any]) -> Mapping[str, Any]:
            decoded = self.decode(raw)
            if decoded.problems:
                try:
                    group = from_wire(PodGroup, decoded.raw)
                except ValueError:  # malformed: the cache reports it and drops it
                    return decoded.raw
                report(group, "; ".join(decoded.problems))
            return decoded.raw

        return decode


V1BETA1 = PodGroupApi(PODGROUPS, "GenericWorkload (and --runtime-config=scheduling.k8s.io/v1beta1=true)")
V1ALPHA2 = PodGroupApi(PODGROUPS_V1ALPHA2,
                       "GenericWorkload (and --runtime-config=scheduling.k8s.io/v1alpha2=true) on Kubernetes 1.36",
                       podgroup_v1alpha2.decode, podgroup_v1alpha2.encode_conditions)
PREFERENCE = (V1BETA1, V1ALPHA2)
"""The PodGroup APIs we read, most preferred first."""


def of(group: PodGroup) -> PodGroupApi:
    """The API a cached PodGroup was read from (by its ``apiVersion``; v1beta1 unless it says v1alpha2)."""
    return V1ALPHA2 if group.api_version == podgroup_v1alpha2.API_VERSION else V1BETA1


async def discover(kube: KubeClient) -> tuple[PodGroupApi | None, str]:
    """The first API of :data:`PREFERENCE` the server serves ``podgroups`` under, and ``""``; or None and the
    reason (naming the versions and what to enable). Raises :class:`~scheduler.client.kube.ApiError` when
    discovery itself fails."""
    for api in PREFERENCE:
        if api.resource.plural in await kube.served(api.resource.group_version):
            return api, ""
    first, *others = PREFERENCE
    return None, (f"API {first.resource.group_version} {first.resource.plural} is not served (nor "
                  f"{', '.join(a.resource.group_version for a in others)}): enable the feature gate {first.enable}"
                  + "".join(f", or {a.enable}" for a in others))
