"""The checks of the validating webhook: what the scheduler would report about a PodGroup or
CompositePodGroup, asked at ``kubectl apply`` time, with the same words.

Reused, not copied: the model (values of the wrong type or range are refused when parsed),
:func:`~scheduler.model.scheduling.policy_error` (neither or both of ``basic`` / ``gang``, a count
< 1) and :meth:`~scheduler.groups.index.GroupIndex.layout_problems` (a cycle in
``parentCompositePodGroupName`` among the groups the operator sees, more than 4 levels). Those are
rejections. A topology key that no node has is a warning: the group is valid, it just cannot be
placed until such a node exists (and nodes come and go). No I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from pydantic import ValidationError

from scheduler.field_errors import plain_message
from scheduler.groups.index import GroupIndex
from scheduler.model.base import from_wire
from scheduler.model.scheduling import CompositePodGroup, PodGroup, policy_error, topology_key

JSON = dict[str, Any]


def _parsed(kind: str, body: JSON) -> PodGroup | CompositePodGroup:
    return from_wire(PodGroup, body) if kind == "PodGroup" else from_wire(CompositePodGroup, body)


def problems(kind: str, body: JSON, podgroups: Iterable[JSON], composites: Iterable[JSON]) -> list[str]:
    """Why ``body`` (a ``kind`` object: PodGroup or CompositePodGroup, as sent to the API server) is
    refused, given the other PodGroups and CompositePodGroups of its namespace (their bodies; a
    stored version of ``body`` itself is replaced by it); empty when it is accepted.

    Messages: the model's (``spec.schedulingPolicy.gang.minCount: ...``), then the scheduler's own
    (``PodGroup ns/name: spec.schedulingPolicy must set exactly one of basic, gang``,
    ``cycle in parentCompositePodGroupName: a → b → a``, ``tree depth 5 exceeds 4``).
    """
    try:
        obj = _parsed(kind, body)
    except ValidationError as exc:
        return [f"{'.'.join(str(p) for p in err['loc'])}: {plain_message(err)}"
                for err in exc.errors(include_url=False)]
    ns, name = obj.metadata.namespace, obj.metadata.name
    found = []
    if err := policy_error(obj.spec.scheduling_policy):
        found.append(f"{kind} {ns}/{name}: {err}")
    index = GroupIndex(scheduler_name="")
    for others, other_kind in ((podgroups, "PodGroup"), (composites, "CompositePodGroup")):
        for other in others:
            try:
                parsed = _parsed(other_kind, other)
            except ValidationError:
                continue  # a stored object the scheduler cannot read either: not this request's problem
            key = (parsed.metadata.namespace, parsed.metadata.name)
            if key[0] == ns and (other_kind, key[1]) != (kind, name):
                _feed(index, key, parsed)
    _feed(index, (ns, name), obj)
    return found + index.layout_problems(kind, (ns, name))


def _feed(index: GroupIndex, key: tuple[str, str], obj: PodGroup | CompositePodGroup) -> None:
    if isinstance(obj, PodGroup):
        index.set_podgroup(key, obj)
    else:
        index.set_composite(key, obj)


def warnings(kind: str, body: JSON, node_label_keys: Collection[str]) -> list[str]:
    """Admission warnings for ``body``: a topology key that no node of ``node_label_keys`` (every
    label key on some node) has. Empty for a body that does not parse (:func:`problems` refuses it)."""
    try:
        obj = _parsed(kind, body)
    except ValidationError:
        return []
    key = topology_key(obj.spec.scheduling_constraints)
    if key is None or key in node_label_keys:
        return []
    return [f"spec.schedulingConstraints.topology[0].key: no node has the label {key!r}; "
            f"the group cannot be placed until a node does"]
