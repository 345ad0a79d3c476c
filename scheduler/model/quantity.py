"""Kubernetes quantities as exact integers, and per-resource arithmetic.

Parsing is lightkube's ``parse_quantity`` (a maintained implementation of the
apimachinery grammar, returning a ``Decimal`` rounded *up* to milli-units, as
``resource.Quantity`` does). This module only decides the integer unit each
resource is counted in, the way kube-scheduler's ``framework.Resource`` does:

* ``cpu`` in milli-cores (``Quantity.MilliValue()``);
* every other resource (memory, ephemeral-storage, hugepages-*, pods,
  extended resources) in whole units, rounded up (``Quantity.Value()``).

A *resource list* here is a ``dict[str, int]`` in those units.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from decimal import Decimal

from lightkube.utils.quantity import parse_quantity

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
HUGEPAGES_PREFIX = "hugepages-"

ResourceList = dict[str, int]


class QuantityError(ValueError):
    """A string is not a valid Kubernetes quantity (raised by :func:`to_units`)."""


def parse(quantity: str | int | float) -> Decimal:
    """Parse a quantity (``"100m"``, ``"2Gi"``, ``"1e3"``, ``4``) into an exact ``Decimal``.

    Raises :class:`QuantityError` for anything the apimachinery grammar rejects.
    """
    text = str(quantity).strip()
    try:
        value = parse_quantity(text)
    except ValueError as exc:
        raise QuantityError(f"invalid quantity {quantity!r}: {exc}") from exc
    if value is None:  # pragma: no cover - parse_quantity only returns None for None input
        raise QuantityError(f"invalid quantity {quantity!r}")
    return value


def to_units(resource: str, quantity: str | int | float) -> int:
    """Convert one quantity into the integer unit the scheduler counts ``resource`` in.

    ``cpu`` → milli-cores; everything else → whole units (bytes, pods, devices),
    rounded up like ``resource.Quantity.Value()``.
    Raises :class:`QuantityError` on a malformed quantity.
    """
    value = parse(quantity)
    if resource == CPU:
        return math.ceil(value * 1000)
    return math.ceil(value)


def resource_list(raw: Mapping[str, str | int | float] | None) -> ResourceList:
    """Convert an API resource map (``{"cpu": "500m", "memory": "1Gi"}``) into integer units."""
    if not raw:
        return {}
    return {name: to_units(name, q) for name, q in raw.items()}


def add(a: Mapping[str, int], b: Mapping[str, int]) -> ResourceList:
    """Per-resource sum of two resource lists."""
    out = dict(a)
    for name, v in b.items():
        out[name] = out.get(name, 0) + v
    return out


def maximum(a: Mapping[str, int], b: Mapping[str, int]) -> ResourceList:
    """Per-resource maximum of two resource lists (a missing entry counts as 0)."""
    out = dict(a)
    for name, v in b.items():
        out[name] = max(out.get(name, 0), v)
    return out


def total(lists: Iterable[Mapping[str, int]]) -> ResourceList:
    """Per-resource sum of many resource lists."""
    out: ResourceList = {}
    for item in lists:
        for name, v in item.items():
            out[name] = out.get(name, 0) + v
    return out


def is_extended(resource: str) -> bool:
    """True for extended resources (``vendor.com/thing``), per ``v1helper.IsExtendedResourceName``.

    Names in the ``kubernetes.io/`` domain and ``requests.``-prefixed quota names are not extended.
    """
    if "/" not in resource:
        return False
    domain = resource.split("/", 1)[0]
    return not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io") or resource.startswith("requests."))


def format_units(resource: str, units: int) -> str:
    """Human form of an integer amount: ``cpu`` as cores, byte resources in Gi, others as counts."""
    if resource == CPU:
        return f"{units / 1000:g}"
    if resource in (MEMORY, EPHEMERAL_STORAGE) or resource.startswith(HUGEPAGES_PREFIX):
        return f"{units / 2**30:.1f}Gi"
    return str(units)
