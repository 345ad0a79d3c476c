"""Reading cluster snapshots: multi-document YAML and ``kind: List`` files into typed objects.

Objects are dispatched on ``apiVersion`` + ``kind`` (the scheduler-plugins CRD
``scheduling.x-k8s.io`` PodGroup is *not* ours and is skipped). Kinds the scheduler does not
read (Jobs, Deployments, DRA objects for now) are counted and skipped. An object that fails to
parse — a malformed field, a bad quantity — is reported as a :class:`LoadProblem` naming file,
kind, namespace/name and what is wrong; the rest of the file still loads. An identical
redefinition of an object is a no-op; a different one is a problem and the first one is kept.
Only a file that cannot be read or parsed as YAML raises :class:`SnapshotError`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from scheduler.errors import SnapshotError
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.model.quantity import QuantityError
from scheduler.model.scheduling import CompositePodGroup, PodGroup, PriorityClass, Workload

KINDS: dict[tuple[str, str], type[BaseModel]] = {
    ("v1", "Pod"): Pod,
    ("v1", "Node"): Node,
    ("scheduling.k8s.io/v1beta1", "PodGroup"): PodGroup,
    ("scheduling.k8s.io/v1alpha3", "PodGroup"): PodGroup,
    ("scheduling.k8s.io/v1alpha3", "CompositePodGroup"): CompositePodGroup,
    ("scheduling.k8s.io/v1beta1", "Workload"): Workload,
    ("scheduling.k8s.io/v1alpha3", "Workload"): Workload,
    ("scheduling.k8s.io/v1", "PriorityClass"): PriorityClass,
}
"""(apiVersion, kind) → model, for every object the scheduler reads."""


@dataclass(frozen=True, slots=True)
class LoadProblem:
    """An object that could not be used: where it is and what is wrong."""

    file: str
    kind: str
    namespace: str
    name: str
    message: str

    def __str__(self) -> str:
        ident = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.file}: {self.kind} {ident}: {self.message}"


@dataclass(slots=True)
class Objects:
    """Everything read from a snapshot, by kind, plus what was skipped and what was wrong."""

    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    podgroups: list[PodGroup] = field(default_factory=list)
    composites: list[CompositePodGroup] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    priority_classes: list[PriorityClass] = field(default_factory=list)
    problems: list[LoadProblem] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    _seen: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict, repr=False)

    def _bucket(self, obj: BaseModel) -> list[Any]:
        match obj:
            case Pod():
                return self.pods
            case Node():
                return self.nodes
            case PodGroup():
                return self.podgroups
            case CompositePodGroup():
                return self.composites
            case Workload():
                return self.workloads
            case PriorityClass():
                return self.priority_classes
        raise TypeError(type(obj))  # pragma: no cover - KINDS and this match are kept in step

    def add(self, source: str, raw: Any) -> None:
        """Parse one raw object into its model, or record why it cannot be used."""
        if not isinstance(raw, dict):
            self.problems.append(LoadProblem(source, "?", "", "?", f"not an object: {type(raw).__name__}"))
            return
        api_version, kind = str(raw.get("apiVersion", "")), str(raw.get("kind", ""))
        meta_raw = raw.get("metadata")
        meta: dict[str, Any] = meta_raw if isinstance(meta_raw, dict) else {}
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        model = KINDS.get((api_version, kind))
        if model is None:
            if not kind or not api_version:
                self.problems.append(LoadProblem(source, kind or "?", ns, name or "?", "missing apiVersion or kind"))
            else:
                self.skipped[f"{api_version} {kind}"] += 1
            return
        if not name:
            self.problems.append(LoadProblem(source, kind, ns, "?", "metadata.name is missing"))
            return
        ident = (kind, ns, name)
        if ident in self._seen:
            if self._seen[ident] != raw:
                self.problems.append(
                    LoadProblem(source, kind, ns, name, "defined again with different content; the first is kept")
                )
            return
        try:
            obj = model.model_validate(raw)
            _check_quantities(obj)
        except ValidationError as exc:
            detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
            self.problems.append(LoadProblem(source, kind, ns, name, detail))
            return
        except QuantityError as exc:
            self.problems.append(LoadProblem(source, kind, ns, name, str(exc)))
            return
        self._seen[ident] = raw
        self._bucket(obj).append(obj)


def _check_quantities(obj: BaseModel) -> None:
    """Parse the quantities the solver will read now, so a bad one is reported at load time."""
    if isinstance(obj, Pod):
        _ = obj.requests
    elif isinstance(obj, Node):
        _ = obj.allocatable


def _documents(path: Path) -> Iterator[Any]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise SnapshotError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        raise SnapshotError(f"{path}: not valid YAML: {exc}") from exc
    for doc in docs:
        if doc is None:
            continue
        if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") and "items" in doc:
            yield from doc.get("items") or []
        else:
            yield doc


def load(paths: Iterable[str | Path]) -> Objects:
    """Read every file into one :class:`Objects`.

    Raises :class:`SnapshotError` if a file cannot be read or is not YAML, or if the files
    hold no object the scheduler reads at all.
    """
    objects = Objects()
    names = [Path(p) for p in paths]
    for path in names:
        for raw in _documents(path):
            objects.add(str(path), raw)
    if not names:
        raise SnapshotError("no snapshot file given")
    if not (objects.nodes or objects.pods or objects.podgroups or objects.composites or objects.problems):
        raise SnapshotError(f"{', '.join(map(str, names))}: no Node, Pod, PodGroup or CompositePodGroup found")
    return objects
