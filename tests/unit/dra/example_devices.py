"""The devices of the example ResourceSlices (``tests/data/resourceslices``) as ``DeviceView`` values.

The files are verbatim copies of the shared examples. This module reads them with
``yaml.safe_load_all`` and converts each device dict by hand (one of ``int``/``bool``/``string``/
``version`` per attribute, ``capacity[name].value`` as a quantity), without the pydantic models,
so the CEL tests and ``tests/bench/bench_cel.py`` depend only on ``scheduler.dra.cel``.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

import yaml

from scheduler.dra.cel import AttributeValue, DeviceView, Version
from scheduler.model.quantity import parse as parse_quantity

SLICES = Path(__file__).resolve().parents[2] / "data" / "resourceslices"


def documents(path: Path) -> Iterator[dict[str, Any]]:
    """Every object in a YAML file: multi-document streams and ``kind: List`` items, in order."""
    for doc in yaml.safe_load_all(path.read_text()):
        if doc is None:
            continue
        if str(doc.get("kind", "")).endswith("List") and "items" in doc:
            yield from doc["items"] or []
        else:
            yield doc


def attribute_value(attribute: dict[str, Any]) -> AttributeValue:
    """``{"string": "gpu"}`` → ``"gpu"``, ``{"version": "9.0.0"}`` → ``Version(9, 0, 0)``, …"""
    (kind, value), = attribute.items()
    if kind == "version":
        return Version.parse(str(value))
    if kind == "int":
        return int(value)
    if kind == "bool":
        return bool(value)
    if kind == "string":
        return str(value)
    raise ValueError(f"unsupported attribute {attribute!r}")


def device_view(driver: str, device: dict[str, Any]) -> DeviceView:
    """The ``DeviceView`` of one ``spec.devices[]`` entry of a slice published by ``driver``."""
    attributes = {name: attribute_value(a) for name, a in (device.get("attributes") or {}).items()}
    capacity: dict[str, Decimal] = {
        name: parse_quantity(str(c["value"])) for name, c in (device.get("capacity") or {}).items()
    }
    return DeviceView.build(driver, attributes, capacity, bool(device.get("allowMultipleAllocations", False)))


def example_devices() -> dict[str, DeviceView]:
    """Every device of every example ResourceSlice, keyed ``driver/pool/device``, in file order."""
    out: dict[str, DeviceView] = {}
    for path in sorted(SLICES.glob("*.yaml")):
        for obj in documents(path):
            if obj.get("kind") != "ResourceSlice":
                continue
            spec = obj["spec"]
            for device in spec.get("devices") or []:
                out[f"{spec['driver']}/{spec['pool']['name']}/{device['name']}"] = device_view(spec["driver"], device)
    return out


def device_class_selectors() -> dict[str, list[str]]:
    """DeviceClass name → its CEL selector expressions, from ``deviceclasses.yaml``."""
    return {
        obj["metadata"]["name"]: [s["cel"]["expression"] for s in obj["spec"].get("selectors") or []]
        for obj in documents(SLICES / "deviceclasses.yaml")
        if obj.get("kind") == "DeviceClass"
    }


OVER_COST_LIMIT: Final = (
    "device.attributes.exists(d1, device.attributes[d1].exists(a1, device.attributes.exists(d2, d2 != d1 && "
    "device.attributes[d2].exists(a2, device.attributes[d1][a1] == device.attributes[d2][a2]))))")
"""A selector over resource.k8s.io's cost limit: some attribute value held by two domains. Four nested
comprehensions over ``device.attributes`` (32 domains × 32 names, twice): estimated cost 24,714,531."""
