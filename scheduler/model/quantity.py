"""Kubernetes quantities as exact integers, and per-resource arithmetic.

Parsing follows apimachinery's ``resource.ParseQuantity`` grammar exactly
(``<signedNumber><suffix>``; suffixes ``n u m "" k M G T P E``, ``Ki … Ei``, or a
decimal exponent ``e3`` / ``E3``) into an exact ``Decimal``. We keep our own parser
because the Python libraries checked (lightkube 0.17's ``parse_quantity``) reject
``n``/``u``/``E3`` and accept ``Yi``/``Y``/``1e3m``, which the API server rejects.
The integer unit each resource is counted in follows kube-scheduler's
``framework.Resource``:

* ``cpu`` in milli-cores (``Quantity.MilliValue()``);
* every other resource (memory, ephemeral-storage, hugepages-*, pods,
  extended resources) in whole units, rounded up (``Quantity.Value()``).

A *resource list* here is a ``dict[str, int]`` in those units.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
HUGEPAGES_PREFIX = "hugepages-"

ResourceList = dict[str, int]

MAX_EXPONENT = 24
"""Largest decimal exponent :func:`to_units` accepts (1e24 bytes is a yottabyte; no node has it).
The API accepts quantities like ``1e999999``; converting one to an integer would take seconds."""

class QuantityError(ValueError):
    """A string is not a valid Kubernetes quantity (raised by :func:`to_units`)."""


_GRAMMAR = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE]?)"
)
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def parse(quantity: str | int | float) -> Decimal:
    """Parse a quantity (``"100m"``, ``"2Gi"``, ``"1e3"``, ``4``) into an exact ``Decimal``.

    Raises :class:`QuantityError` for anything apimachinery's ``ParseQuantity`` rejects.
    """
    text = str(quantity).strip()  # Quantity.UnmarshalJSON trims surrounding space
    match = _GRAMMAR.fullmatch(text)
    try:
        if match is None:
            raise ValueError("does not match <signedNumber><suffix>")
        number, suffix = Decimal(match["number"]), match["suffix"]
    except (ValueError, InvalidOperation) as exc:
        raise QuantityError(f"invalid quantity {quantity!r}: {exc}") from ValueError(str(exc))
    try:
        if suffix in _BINARY:
            return number * (Decimal(1024) ** _BINARY[suffix])
        if suffix in _DECIMAL:
            return number.scaleb(_DECIMAL[suffix])
        return number.scaleb(int(suffix[1:]))
    except ArithmeticError as exc:  # an exponent beyond Decimal's range (decimal.Overflow)
        raise QuantityError(f"invalid quantity {quantity!r}: out of range") from ValueError(str(exc))


@functools.lru_cache(maxsize=4096)
def to_units(resource: str, quantity: str | int | float) -> int:
    """Convert one quantity into the integer unit the scheduler counts ``resource`` in.

    ``cpu`` → milli-cores; everything else → whole units (bytes, pods, devices),
    rounded up like ``resource.Quantity.Value()``.
    Raises :class:`QuantityError` on a malformed quantity. Memoised: a cluster repeats a few
    hundred distinct quantities across thousands of pods (64 identical gang members parse once).
    """
    value = parse(quantity)
    if value.adjusted() > MAX_EXPONENT:  # refuse before building a huge integer (event loop time)
        raise QuantityError(f"invalid quantity {quantity!r}: larger than 1e{MAX_EXPONENT}")
    return math.ceil(value * 1000) if resource == CPU else math.ceil(value)


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
    """Human form of an integer amount: ``cpu`` in cores, byte resources with a binary suffix
    (``512Mi``, ``1.5Gi``, ``2Ti``), every other resource as a count."""
    if resource == CPU:
        return f"{units / 1000:g}"
    if resource in (MEMORY, EPHEMERAL_STORAGE) or resource.startswith(HUGEPAGES_PREFIX):
        for suffix, power in (("Ti", 4), ("Gi", 3), ("Mi", 2), ("Ki", 1)):
            if abs(units) >= 1024**power:
                return f"{units / 1024**power:.1f}".removesuffix(".0") + suffix
        return str(units)
    return str(units)
