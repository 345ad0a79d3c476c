"""A pending pod of ours is checked as sent for fields the v1.37 API does not know once per ``metadata.generation``:
an update of its status (the scheduler's own ``PodScheduled`` condition) or labels is not decoded again; a spec
change (a new generation), or a server that sets no generation, is."""

from __future__ import annotations

import copy
from typing import Any

from scheduler.cache.cluster import ClusterCache
from scheduler.client.kube import PODS
from scheduler.live.unhonoured import UnhonouredFields
from scheduler.model.pod import Pod


def sent(generation: int | None, unknown: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "p", "namespace": "ml", "uid": "uid-p"}
    if generation is not None:
        metadata["generation"] = generation
    container: dict[str, Any] = {"name": "main", "resources": {"requests": {"cpu": "1"}}}
    if unknown:
        container["resoures"] = {}
    return {"metadata": metadata, "spec": {"schedulerName": "gang-scheduler", "containers": [container]},
            "status": {"phase": "Pending"}}


def checker() -> tuple[UnhonouredFields, Any]:
    fields = UnhonouredFields("gang-scheduler", ClusterCache("gang-scheduler"), None, None)  # type: ignore[arg-type]
    see = fields.seen(PODS)
    assert see is not None
    return fields, see


def test_a_pod_is_decoded_again_only_when_its_generation_changes() -> None:
    fields, see = checker()
    decoded: list[int] = []

    def show(raw: dict[str, Any]) -> None:
        def again() -> dict[str, Any]:
            decoded.append(1)
            return raw
        see(Pod.model_validate(raw), again)

    show(sent(1))
    reported = copy.deepcopy(sent(1))
    reported["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    show(reported)  # its own status write: the same generation
    assert len(decoded) == 1 and fields._unknown == {}
    show(sent(2, unknown=True))  # a spec change that brings a field the API does not know
    assert len(decoded) == 2
    assert "resoures" in fields._unknown["uid-p"]


def test_a_pod_without_a_generation_is_checked_at_every_update() -> None:
    _, see = checker()
    decoded: list[int] = []
    for _ in range(3):
        see(Pod.model_validate(sent(None)), lambda: decoded.append(1) or sent(None))
    assert len(decoded) == 3
