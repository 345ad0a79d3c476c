"""``Pod.asks``: what the profile's gates read of a pending pod, once per pod object."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.snapshot import bound_copy
from scheduler.model.pod import (
    ASKS_POD_AFFINITY,
    ASKS_PORTS,
    ASKS_PREFERRED_NODE_AFFINITY,
    ASKS_SPREAD,
    ASKS_VOLUMES,
)
from tests.unit.solver.builders import pod

SPREAD = {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]}
ANTI = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}}
PREFERRED = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 1, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}]}}
REQUIRED_NODE = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "a", "operator": "Exists"}]}]}}}


TOKEN_VOLUME = {"name": "kube-api-access-x2b4c", "projected": {"defaultMode": 420, "sources": [
    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
    {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}}]}}
"""The service-account token volume the API server's ServiceAccount admission adds to every pod."""


@pytest.mark.parametrize(("kw", "asks"), [
    ({}, set()),
    ({"spec": {"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]}}, {ASKS_VOLUMES}),
    ({"spec": {"volumes": [{"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]}}, {ASKS_VOLUMES}),
    ({"spec": {"volumes": [{"name": "d", "awsElasticBlockStore": {"volumeID": "vol-1"}}]}}, {ASKS_VOLUMES}),
    ({"spec": {"volumes": [TOKEN_VOLUME, {"name": "c", "configMap": {"name": "cm"}}, {"name": "t", "emptyDir": {}}]}},
     set()),
    ({"ports": [{"containerPort": 80}]}, {ASKS_PORTS}),
    ({"spec": SPREAD}, {ASKS_SPREAD}),
    ({"affinity": ANTI}, {ASKS_POD_AFFINITY}),
    ({"affinity": PREFERRED}, {ASKS_PREFERRED_NODE_AFFINITY}),
    ({"affinity": REQUIRED_NODE}, set()),  # a static filter: no gate
    ({"affinity": {**ANTI, **PREFERRED}, "spec": SPREAD}, {ASKS_POD_AFFINITY, ASKS_PREFERRED_NODE_AFFINITY,
                                                           ASKS_SPREAD}),
], ids=["plain", "volumes", "ephemeral-volume", "legacy-disk", "only-volumes-no-plugin-judges", "ports",
        "spread", "anti-affinity", "preferred-node-affinity", "required-node-affinity",
        "several"])
def test_what_a_pod_asks_for(kw: dict[str, Any], asks: set[str]) -> None:
    assert pod("p", **kw).asks == asks


def test_a_bound_copy_asks_the_same() -> None:
    p = pod("p", affinity=ANTI)
    assert bound_copy(p, "n1").asks == p.asks == {ASKS_POD_AFFINITY}
