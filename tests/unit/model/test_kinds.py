"""The table of kinds (``scheduler.model.kinds``) is what the cache holds and what ``simulate`` reads.

Every row is checked through the code that uses it, not against a copy of the table: an object of each
row, in each version the row names, is loaded from a snapshot file into the ``Objects`` list the row names
and handed to the cache under the row's name, and the cache's typed accessors read the rows' mappings.
A row added to the table is checked the same way, so a consumer that does not follow it fails here. The
live watch list is checked against the emulated API server in ``tests/integration/test_kinds.py``.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.cache import cluster
from scheduler.cache.cluster import ClusterCache
from scheduler.model import kinds
from scheduler.model.kinds import Kind
from scheduler.offline.loader import Objects, load

SPECS: dict[str, dict[str, Any]] = {
    # the fields a row's model requires beyond metadata
    kinds.RESOURCE_SLICE.name: {"spec": {"driver": "gpu.example.com", "allNodes": True,
                                         "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}}},
}

OFFLINE = [pytest.param(kind, version, id=f"{kind.api_version(version)}-{kind.kind}")
           for kind in kinds.KINDS if kind.offline is not None for version in kind.versions]
CACHED = [pytest.param(kind, id=kind.name) for kind in kinds.CACHED]

ACCESSORS: dict[str, Kind[Any]] = {
    "pods": kinds.POD, "nodes": kinds.NODE, "podgroups": kinds.POD_GROUP,
    "coscheduling_podgroups": kinds.COSCHEDULING_POD_GROUP, "namespaces": kinds.NAMESPACE,
    "budgets": kinds.POD_DISRUPTION_BUDGET, "device_classes": kinds.DEVICE_CLASS,
    "resource_claims": kinds.RESOURCE_CLAIM, "volume_claims": kinds.PERSISTENT_VOLUME_CLAIM,
    "volumes": kinds.PERSISTENT_VOLUME, "storage_classes": kinds.STORAGE_CLASS, "csi_nodes": kinds.CSI_NODE,
}
"""The cache's typed accessors and the row each reads."""


def document(kind: Kind[Any], version: str | None = None, name: str = "x") -> dict[str, Any]:
    """A minimal object of ``kind`` as the API (or a snapshot file) writes it, without a namespace."""
    return {"apiVersion": kind.api_version(version), "kind": kind.kind, "metadata": {"name": name},
            **SPECS.get(kind.name, {})}


def stored_type(kind: Kind[Any]) -> type:
    """What the cache and the loader keep of ``kind``: the conversion's return type, else the model."""
    return typing.get_type_hints(kind.convert)["return"] if kind.convert is not None else kind.model


@pytest.mark.parametrize("kind, version", OFFLINE)
def test_every_row_is_read_from_snapshot_files_in_each_of_its_versions(tmp_path: Path, kind: Kind[Any],
                                                                       version: str) -> None:
    node = document(kinds.NODE, name="n0")  # a snapshot needs a Node, Pod or group to be usable
    path = tmp_path / "snapshot.yaml"
    path.write_text(yaml.safe_dump_all([node, document(kind, version)]))
    objects = load([path])
    loaded = objects.of(kind)
    assert objects.problems == [] and not objects.skipped
    assert [o.metadata.name for o in loaded if o.metadata.name == "x"] == ["x"]
    [obj] = [o for o in loaded if o.metadata.name == "x"]
    assert type(obj) is stored_type(kind)
    assert obj.metadata.namespace == ("default" if kind.namespaced else "")
    assert (kind.name in objects.by_kind()) is kind.cached


@pytest.mark.parametrize("kind", [pytest.param(k, id=k.name) for k in kinds.KINDS if k.offline is not None])
def test_a_row_in_a_version_it_does_not_name_is_skipped_and_named(kind: Kind[Any]) -> None:
    objects = Objects()
    objects.add("snapshot.yaml", document(kind, "v9"))
    assert objects.skipped == {f"{kind.api_version('v9')} {kind.kind}": 1}
    assert objects.unread == {(kind.kind, "default" if kind.namespaced else "", "x"): kind.api_version("v9")}
    assert objects.of(kind) == []


def test_the_offline_lists_are_the_rows_read_offline() -> None:
    """Every list of ``Objects`` is some row's (a list no row names would never be filled), each row's its own; the
    lists of what loading found (problems, warnings, unknown fields and kinds, the workloads not expanded) are no
    kind's, nor are the workloads kept raw to be made into pods (Jobs, JobSets, PyTorchJobs, LeaderWorkerSets:
    ``scheduler.offline.jobs``, ``jobsets``, ``pytorchjobs``, ``leaderworkersets``)."""
    lists = {name for name, hint in typing.get_type_hints(Objects).items() if typing.get_origin(hint) is list}
    named = [kind.offline for kind in kinds.KINDS if kind.offline is not None]
    assert sorted(named) == sorted(lists - {"problems", "warnings", "unknown", "unexpanded", "jobs", "jobsets",
                                                      "pytorchjobs", "leaderworkersets"})


@pytest.mark.parametrize("kind", CACHED)
def test_every_cached_row_is_held_by_the_cache_under_its_name(kind: Kind[Any]) -> None:
    cache = ClusterCache("gang-scheduler")
    raw = document(kind)
    if kind.namespaced:
        raw["metadata"]["namespace"] = "ns"
    cache.apply(kind.name, "ADDED", raw)
    key = "ns/x" if kind.namespaced else "x"
    assert type(cache.objects[kind.name][key]) is stored_type(kind)
    cache.apply(kind.name, "DELETED", raw)
    assert key not in cache.objects[kind.name]


def test_the_cache_holds_the_cached_rows_and_every_row_run_watches() -> None:
    """An informer feeds the cache under its resource's kind: a row watched live but not cached would fail."""
    assert set(ClusterCache("gang-scheduler").objects) == set(cluster.KINDS) == {k.name for k in kinds.CACHED}
    assert {k.name for k in kinds.KINDS if k.live is not None} <= set(cluster.KINDS)
    assert [k.name for k in kinds.KINDS if not k.cached] == ["Workload"]  # context only


@pytest.mark.parametrize("accessor, kind", [pytest.param(a, k, id=a) for a, k in ACCESSORS.items()])
def test_each_typed_accessor_reads_its_rows_objects(accessor: str, kind: Kind[Any]) -> None:
    cache = ClusterCache("gang-scheduler")
    raw = document(kind)
    if kind.namespaced:
        raw["metadata"]["namespace"] = "ns"
    cache.apply(kind.name, "ADDED", raw)
    read = getattr(cache, accessor)
    assert list(read) == ["ns/x" if kind.namespaced else "x"]
    hint = typing.get_type_hints(getattr(ClusterCache, accessor).fget)["return"]
    assert typing.get_args(hint)[1] is stored_type(kind)


def test_names_are_unique_and_kinds_of_one_api_group_apart() -> None:
    """The cache keys kinds by name; the loader by (apiVersion, kind)."""
    assert len({k.name for k in kinds.KINDS}) == len(kinds.KINDS)
    read_as = [(api, k.kind) for k in kinds.KINDS for api in k.api_versions]
    assert len(set(read_as)) == len(read_as)
