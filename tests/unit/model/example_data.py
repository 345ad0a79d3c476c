"""Reading the example snapshots in ``tests/data`` for the model tests.

The files are verbatim copies of the shared examples (each keeps its origin header). This
module only splits them into raw objects and picks the model for each one; it does not use
``scheduler.offline.loader`` so that the model tests do not depend on the loader.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from scheduler.model import (
    CompositePodGroup,
    DeviceClass,
    Node,
    Pod,
    PodGroup,
    PriorityClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
    Workload,
)
from scheduler.model.storage import CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass

DATA = Path(__file__).resolve().parents[2] / "data"

MODELS: dict[tuple[str, str], type[BaseModel]] = {
    ("v1", "Pod"): Pod,
    ("v1", "Node"): Node,
    ("scheduling.k8s.io/v1beta1", "PodGroup"): PodGroup,
    ("scheduling.k8s.io/v1alpha3", "CompositePodGroup"): CompositePodGroup,
    ("scheduling.k8s.io/v1beta1", "Workload"): Workload,
    ("scheduling.k8s.io/v1", "PriorityClass"): PriorityClass,
    ("resource.k8s.io/v1", "ResourceSlice"): ResourceSlice,
    ("resource.k8s.io/v1", "DeviceClass"): DeviceClass,
    ("resource.k8s.io/v1", "ResourceClaim"): ResourceClaim,
    ("resource.k8s.io/v1", "ResourceClaimTemplate"): ResourceClaimTemplate,
    ("v1", "PersistentVolumeClaim"): PersistentVolumeClaim,
    ("v1", "PersistentVolume"): PersistentVolume,
    ("storage.k8s.io/v1", "StorageClass"): StorageClass,
    ("storage.k8s.io/v1", "CSINode"): CSINode,
}
"""(apiVersion, kind) → model, for the kinds the scheduler models."""


def documents(text: str) -> Iterator[dict[str, Any]]:
    """Every object in a YAML text: multi-document streams and ``kind: List`` items, in order."""
    for doc in yaml.safe_load_all(text):
        if doc is None:
            continue
        if str(doc.get("kind", "")).endswith("List") and "items" in doc:
            yield from doc["items"] or []
        else:
            yield doc


def modelled_objects(path: Path) -> list[tuple[type[BaseModel], dict[str, Any]]]:
    """``(model, raw object)`` for every object in ``path`` whose apiVersion/kind we model."""
    out = []
    for raw in documents(path.read_text()):
        model = MODELS.get((raw.get("apiVersion"), raw.get("kind")))
        if model is not None:
            out.append((model, raw))
    return out


def load_one(relative: str, model: type[BaseModel], name: str) -> Any:
    """Parse the object of ``model``'s kind named ``name`` from ``tests/data/<relative>``."""
    for found, raw in modelled_objects(DATA / relative):
        if found is model and raw["metadata"]["name"] == name:
            return model.model_validate(raw)
    raise LookupError(f"{relative}: no {model.__name__} named {name!r}")


def _as_datetime(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return value
    return value


def differences(sub: Any, sup: Any, path: str = "") -> list[str]:
    """Where ``sub`` is not a sub-structure of ``sup``; empty when it is.

    Mappings: every key of ``sub`` must be in ``sup`` with a sub-structure value. Sequences
    (lists and tuples alike): same length, element by element. Datetimes compare with a
    timestamp string after parsing it. Anything else must be equal *and* of the same type,
    so a coercion (``"8"`` → ``8``, ``1`` → ``True``) counts as a difference.
    """
    where = path or "<root>"
    if isinstance(sub, dict):
        if not isinstance(sup, dict):
            return [f"{where}: mapping vs {type(sup).__name__}"]
        out: list[str] = []
        for key, value in sub.items():
            if key not in sup:
                out.append(f"{path}.{key}: missing")
            else:
                out.extend(differences(value, sup[key], f"{path}.{key}"))
        return out
    if isinstance(sub, list | tuple):
        if not isinstance(sup, list | tuple):
            return [f"{where}: sequence vs {type(sup).__name__}"]
        if len(sub) != len(sup):
            return [f"{where}: {len(sub)} items vs {len(sup)}"]
        return [d for i, (a, b) in enumerate(zip(sub, sup, strict=True)) for d in differences(a, b, f"{path}[{i}]")]
    if isinstance(sub, datetime) or isinstance(sup, datetime):
        a, b = _as_datetime(sub), _as_datetime(sup)
        if isinstance(a, datetime) and isinstance(b, datetime) and a == b:
            return []
        return [f"{where}: {sub!r} vs {sup!r}"]
    if type(sub) is not type(sup) or sub != sup:
        return [f"{where}: {sub!r} vs {sup!r}"]
    return []


def is_subset(sub: Any, sup: Any) -> bool:
    """``sub`` is a sub-structure of ``sup`` (see :func:`differences`)."""
    return not differences(sub, sup)
