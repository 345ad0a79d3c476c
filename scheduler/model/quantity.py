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

:data:`Quantity` and :data:`NonNegativeQuantity` are the pydantic field types of a quantity as
it appears in an object: a string or a number, never a boolean (``Quantity.UnmarshalJSON``
fails on ``true``), and for resource requests, limits, overhead and node capacity not below 0
(the API server's ``ValidateResourceQuantityValue``). A malformed string still passes them and
raises :class:`QuantityError` when it is converted, so an object with one parses.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Annotated

from pydantic import AfterValidator, PlainValidator
from pydantic_core import PydanticCustomError

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
HUGEPAGES_PREFIX = "hugepages-"

ResourceList = dict[str, int]

MAX_EXPONENT = 24
"""Largest decimal exponent :func:`to_units` accepts (1e24 bytes is a yottabyte; no node has it).
The API accepts quantities like ``1e999999``; converting one to an integer would take seconds."""

GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
"""What Go's ``strings.TrimSpace`` removes (``unicode.IsSpace``: the Unicode White_Space set).
Python's ``str.strip()`` also removes U+001C..U+001F, which Go keeps (and ParseQuantity rejects)."""


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

    Surrounding white space is removed first, as the API server does when it decodes an object:
    ``Quantity.UnmarshalJSON`` (apimachinery ``pkg/api/resource/quantity.go``, v1.37) calls
    ``ParseQuantity(strings.TrimSpace(value))``, kept "for backwards compatibility"
    (kubernetes/kubernetes#26907; YAML sent by kubectl is decoded as JSON), so ``cpu: " 2 "`` is
    stored as ``2``. ``ParseQuantity`` alone (CEL's ``quantity()``) rejects it: see ``dra/cel.py``.
    Raises :class:`QuantityError` for anything else ``ParseQuantity`` rejects.
    """
    text = str(quantity).strip(GO_SPACE)
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


def _as_quantity(value: object) -> str | int | float:
    """A quantity as written: a string or a number. Raises ``PydanticCustomError`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise PydanticCustomError("quantity_type", "must be a quantity (a string or a number)")
    return value


@functools.lru_cache(maxsize=4096)
def _is_negative(quantity: str | int | float) -> bool:
    """``quantity`` parses and is below 0 (a malformed one is not negative: it fails on conversion)."""
    try:
        return parse(quantity) < 0
    except QuantityError:
        return False


def _as_non_negative_quantity(value: object) -> str | int | float:
    """A quantity that is not below 0; ``PydanticCustomError`` otherwise, in the API server's words."""
    quantity = _as_quantity(value)
    if _is_negative(quantity):
        # apimachinery validation IsNegativeErrorMsg, via core ValidateNonnegativeQuantity (v1.37)
        raise PydanticCustomError("quantity_negative", "must be greater than or equal to 0")
    return quantity


Quantity = Annotated[str | int | float, PlainValidator(_as_quantity)]
"""A ``resource.Quantity`` field: a string or a number (the schema's ``oneOf``), not a boolean."""

NonNegativeQuantity = Annotated[str | int | float, PlainValidator(_as_non_negative_quantity)]
"""A quantity the API server requires to be ≥ 0: container and pod-level requests and limits,
``spec.overhead`` (core ``ValidateResourceRequirements`` / ``validateOverhead``), node
``status.capacity`` and ``status.allocatable`` (``ValidateNodeResources``), all through
``ValidateResourceQuantityValue`` (pkg/apis/core/validation, v1.37). Without this a bound pod
requesting ``nvidia.com/gpu: "-6"`` would free six GPUs on its node."""


CONTAINER_RESOURCES = frozenset({CPU, MEMORY, EPHEMERAL_STORAGE})
"""The resources a container may request without a domain (core ``standardContainerResources``), besides
``hugepages-<size>``."""


def _as_container_resource_name(value: str) -> str:
    """A resource name a container may request or limit: ``cpu``, ``memory``, ``ephemeral-storage``,
    ``hugepages-<size>``, or a name with a domain (``nvidia.com/gpu``). A name without a domain that is none
    of those — a typo such as ``memroy`` — raises ``PydanticCustomError`` in the API server's words
    (core ``validateContainerResourceName``, pkg/apis/core/validation/validation.go, v1.37): the server
    refuses the pod, and counting it as an extended resource nobody offers would hide the typo."""
    if "/" not in value and value not in CONTAINER_RESOURCES and not value.startswith(HUGEPAGES_PREFIX):
        raise PydanticCustomError("resource_name", "must be a standard resource for containers")
    return value


ContainerResourceName = Annotated[str, AfterValidator(_as_container_resource_name)]
"""The key of a container's ``resources.requests`` / ``resources.limits``."""


def fractional_extended(resources: Mapping[str, str | int | float]) -> str | None:
    """The first extended resource (:func:`is_extended`) in ``resources`` whose quantity is not a whole number, as
    ``name`` (``nvidia.com/gpu: "500m"``), else None. The API server refuses such a request or limit ("must be an
    integer": core ``ValidateResourceRequirements`` with ``IsIntegerResourceName``); counting it rounded up would
    hide the mistake. Quantities are valid already (checked by their field's type)."""
    for name, quantity in resources.items():
        if is_extended(name):
            value = parse(quantity)
            if value.adjusted() <= MAX_EXPONENT and value != value.to_integral_value():
                return name
    return None


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
    """Human form of an integer amount: ``cpu`` in cores, byte resources with a binary suffix to three significant
    digits (``512Mi``, ``1.5Gi``, ``1.95Ti``, ``1536Ti``), every other resource as a count."""
    if resource == CPU:
        return f"{units / 1000:g}"
    if resource in (MEMORY, EPHEMERAL_STORAGE) or resource.startswith(HUGEPAGES_PREFIX):
        for suffix, power in (("Ti", 4), ("Gi", 3), ("Mi", 2), ("Ki", 1)):
            value = units / 1024**power
            # compared as rounded, so 1023.8Gi shows as 1Ti, not 1024Gi
            if abs(value) >= 1 or (power > 1 and round(abs(value) * 1024) >= 1024):
                return (f"{value:.3g}" if abs(value) < 999.5 else f"{value:.0f}") + suffix
        return str(units)
    return str(units)


def locate(error: QuantityError, quantities: Iterable[tuple[str, str, str | int | float]]) -> QuantityError:
    """``error`` naming the field of the first of ``quantities`` — ``(field path, resource, quantity)``, an object's
    own (``Pod.resource_quantities``) — that does not parse: ``spec.containers[0].resources.requests.cpu: invalid
    quantity …``; ``error`` itself when each does."""
    for path, resource, value in quantities:
        try:
            to_units(resource, value)
        except QuantityError as exc:
            return QuantityError(f"{path}: {exc}")
    return error
