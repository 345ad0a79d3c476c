"""Quantities as exact integers: ``parse``, ``to_units``, ``resource_list``, ``is_extended``, ``format_units``.

Expected values follow apimachinery ``resource.Quantity``: ``cpu`` is counted with
``MilliValue()`` and everything else with ``Value()``, both rounding *up*.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal

import pytest

from scheduler.model.quantity import (
    QuantityError,
    add,
    format_units,
    is_extended,
    maximum,
    parse,
    resource_list,
    to_units,
    total,
)

KI, MI, GI = 2**10, 2**20, 2**30

TO_UNITS = [
    # cpu → milli-cores
    pytest.param("cpu", "100m", 100, id="cpu-milli-suffix-is-milli-cores"),
    pytest.param("cpu", "1m", 1, id="cpu-1m-is-the-smallest-unit"),
    pytest.param("cpu", "1", 1000, id="cpu-one-core-is-1000-milli"),
    pytest.param("cpu", "0.5", 500, id="cpu-half-core-is-500-milli"),
    pytest.param("cpu", "1.5", 1500, id="cpu-decimal-fraction"),
    pytest.param("cpu", "0.1", 100, id="cpu-0.1-equals-100m"),
    pytest.param("cpu", ".5", 500, id="cpu-leading-dot-fraction"),
    pytest.param("cpu", "1e3", 1_000_000, id="cpu-decimal-exponent"),
    pytest.param("cpu", "+1", 1000, id="cpu-explicit-plus-sign"),
    pytest.param("cpu", "0.0001", 1, id="cpu-below-one-milli-rounds-up"),
    pytest.param("cpu", "15790m", 15790, id="cpu-eks-m5-allocatable"),
    pytest.param("cpu", 4, 4000, id="cpu-yaml-int"),
    pytest.param("cpu", 0.5, 500, id="cpu-yaml-float"),
    pytest.param("cpu", "1n", 1, id="cpu-1n-rounds-up-to-1-milli"),
    pytest.param("cpu", "1u", 1, id="cpu-1u-rounds-up-to-1-milli"),
    pytest.param("cpu", "1500000u", 1500, id="cpu-micro-suffix"),
    pytest.param("cpu", "250000000n", 250, id="cpu-nano-suffix-as-metrics-server-reports"),
    # everything else → whole units, rounded up
    pytest.param("memory", "2Gi", 2 * GI, id="memory-binary-suffix-Gi"),
    pytest.param("memory", "1Ki", KI, id="memory-binary-suffix-Ki"),
    pytest.param("memory", "500M", 500_000_000, id="memory-decimal-suffix-M"),
    pytest.param("memory", "1e3", 1000, id="memory-decimal-exponent"),
    pytest.param("memory", "81559Mi", 81559 * MI, id="memory-nvml-81559Mi-in-bytes"),
    pytest.param("memory", "0.1", 1, id="memory-fraction-of-a-byte-rounds-up"),
    pytest.param("memory", "400m", 1, id="memory-400m-is-0.4-bytes-rounds-up-to-1"),
    pytest.param("memory", "1.5Gi", 1536 * MI, id="memory-1.5Gi-equals-1536Mi"),
    pytest.param("memory", "1k", 1000, id="memory-lowercase-k-is-kilo"),
    pytest.param("memory", "1E", 10**18, id="memory-E-alone-is-exa"),
    pytest.param("memory", "1E3", 1000, id="memory-uppercase-E-exponent"),
    pytest.param("memory", "1e+3", 1000, id="memory-signed-exponent"),
    pytest.param("memory", "1.G", 10**9, id="memory-trailing-dot-before-suffix-as-apimachinery-allows"),
    pytest.param("memory", "1Ei", 2**60, id="memory-Ei-is-the-largest-binary-suffix"),
    pytest.param("pods", "110", 110, id="pods-count"),
    pytest.param("nvidia.com/gpu", "8", 8, id="extended-resource-count"),
    pytest.param("nvidia.com/gpu", 2, 2, id="extended-resource-yaml-int"),
    pytest.param("nvidia.com/mig-1g.5gb", "0", 0, id="extended-resource-zero"),
    pytest.param("hugepages-2Mi", "1Gi", GI, id="hugepages-in-bytes"),
    pytest.param("ephemeral-storage", "104845292Ki", 104845292 * KI, id="ephemeral-storage-in-bytes"),
]


@pytest.mark.parametrize(("resource", "quantity", "expected"), TO_UNITS)
def test_to_units(resource: str, quantity: str | int | float, expected: int) -> None:
    assert to_units(resource, quantity) == expected


# Kubernetes docs, "Resource Management for Pods and Containers" → "Memory resource units":
# "the following represent roughly the same value: 128974848, 129e6, 129M, 128974848000m, 123Mi".
# "Roughly": three of them are exactly 123 MiB, the two decimal ones are 25152 bytes more.
APIMACHINERY_MEMORY = [
    pytest.param("128974848", 128_974_848, id="plain-integer"),
    pytest.param("129e6", 129_000_000, id="decimal-exponent-129e6"),
    pytest.param("129M", 129_000_000, id="decimal-suffix-129M"),
    pytest.param("128974848000m", 128_974_848, id="milli-suffix-128974848000m"),
    pytest.param("123Mi", 123 * MI, id="binary-suffix-123Mi"),
]


@pytest.mark.parametrize(("quantity", "expected_bytes"), APIMACHINERY_MEMORY)
def test_upstream_memory_examples_are_exact(quantity: str, expected_bytes: int) -> None:
    assert to_units("memory", quantity) == expected_bytes


def test_upstream_memory_examples_differ_by_25152_bytes() -> None:
    values = {q: to_units("memory", q) for q in ("128974848", "129e6", "129M", "128974848000m", "123Mi")}
    assert values == {
        "128974848": 128_974_848,
        "129e6": 129_000_000,
        "129M": 129_000_000,
        "128974848000m": 128_974_848,
        "123Mi": 128_974_848,
    }
    assert values["129M"] - values["123Mi"] == 25_152


PARSE = [
    pytest.param("100m", Decimal("0.1"), id="milli"),
    pytest.param("1.5", Decimal("1.5"), id="decimal-fraction"),
    pytest.param("2Gi", Decimal(2 * GI), id="binary-suffix"),
    pytest.param("500M", Decimal(500_000_000), id="decimal-suffix"),
    pytest.param("1e3", Decimal(1000), id="exponent"),
    pytest.param("0.1", Decimal("0.1"), id="tenth"),
    pytest.param("+1", Decimal(1), id="plus-sign"),
    pytest.param("1Ki", Decimal(1024), id="kibi"),
    # apimachinery godoc: "1.5 will be serialized as 1500m", "1.5Gi will be serialized as 1536Mi"
    pytest.param("1500m", Decimal("1.5"), id="godoc-1500m-is-1.5"),
    pytest.param("1536Mi", Decimal(1536 * MI), id="godoc-1536Mi-is-1.5Gi"),
    pytest.param("0.0001", Decimal("0.0001"), id="sub-milli-kept-exact"),
    pytest.param("1n", Decimal("1E-9"), id="nano"),
    pytest.param("1E3", Decimal(1000), id="uppercase-exponent"),
    pytest.param(" 2Gi ", Decimal(2 * GI), id="surrounding-space-trimmed-like-UnmarshalJSON"),
    pytest.param("\t2\n", Decimal(2), id="tab-and-newline-trimmed"),
    pytest.param("\u00a02\u3000", Decimal(2), id="unicode-white-space-trimmed-like-go-TrimSpace"),
    pytest.param(7, Decimal(7), id="int-input"),
    pytest.param(0.25, Decimal("0.25"), id="float-input"),
]


@pytest.mark.parametrize(("quantity", "expected"), PARSE)
def test_parse_returns_exact_decimal(quantity: str | int | float, expected: Decimal) -> None:
    value = parse(quantity)
    assert isinstance(value, Decimal)
    assert value == expected


MALFORMED = [
    pytest.param("abc", id="letters-only"),
    pytest.param("1.2.3", id="two-decimal-points"),
    pytest.param("1Qi", id="unknown-binary-suffix"),
    pytest.param("", id="empty"),
    pytest.param("Gi", id="suffix-without-number"),
    pytest.param("1K", id="uppercase-K-is-not-a-suffix"),
    pytest.param("1e", id="dangling-exponent"),
    pytest.param("1 Gi", id="space-before-suffix"),
    pytest.param("0x10", id="hex"),
    pytest.param("1Yi", id="Yi-is-not-a-suffix-binary-stops-at-Ei"),
    pytest.param("1Zi", id="Zi-is-not-a-suffix"),
    pytest.param("1Y", id="Y-is-not-a-suffix-decimal-stops-at-E"),
    pytest.param("1e3m", id="exponent-then-suffix"),
    pytest.param("1ki", id="lowercase-ki"),
    pytest.param(".", id="lone-dot"),
    pytest.param("1.5.Gi", id="dot-after-fraction"),
    pytest.param("\x1c1", id="file-separator-is-not-go-white-space-though-python-strips-it"),
    pytest.param("1\u200b", id="zero-width-space-is-not-white-space"),
]


@pytest.mark.parametrize("quantity", MALFORMED)
def test_malformed_quantity_raises_quantity_error(quantity: str) -> None:
    with pytest.raises(QuantityError, match=r"^invalid quantity ") as err:
        parse(quantity)
    assert repr(quantity) in str(err.value)
    assert isinstance(err.value, ValueError)
    assert err.value.__cause__ is not None  # raised ``from`` the underlying error
    with pytest.raises(QuantityError, match=r"^invalid quantity "):
        to_units("cpu", quantity)


def test_huge_exponent_raises_quantity_error_not_decimal_overflow() -> None:
    with pytest.raises(QuantityError, match=r"^invalid quantity '1e1000000'"):
        parse("1e1000000")


RESOURCE_LIST = [
    pytest.param(None, {}, id="none-is-empty"),
    pytest.param({}, {}, id="empty-is-empty"),
    pytest.param(
        {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "2", "pods": 110},
        {"cpu": 500, "memory": GI, "nvidia.com/gpu": 2, "pods": 110},
        id="each-resource-in-its-unit",
    ),
    pytest.param(
        {"cpu": "255500m", "memory": "526751488Ki", "nvidia.com/gpu": "14", "nvidia.com/mig-1g.5gb": "0"},
        {"cpu": 255500, "memory": 526751488 * KI, "nvidia.com/gpu": 14, "nvidia.com/mig-1g.5gb": 0},
        id="zero-entries-are-kept",
    ),
    pytest.param({"cpu": 2, "memory": 0.5}, {"cpu": 2000, "memory": 1}, id="numbers-from-yaml"),
]


@pytest.mark.parametrize(("raw", "expected"), RESOURCE_LIST)
def test_resource_list(raw: dict[str, str | int | float] | None, expected: dict[str, int]) -> None:
    assert resource_list(raw) == expected


def test_resource_list_names_the_bad_quantity() -> None:
    with pytest.raises(QuantityError, match=r"^invalid quantity '12x': "):
        resource_list({"cpu": "1", "memory": "12x"})


ARITHMETIC = [
    pytest.param(add, {"cpu": 1000, "memory": 5}, {"cpu": 500, "gpu": 2}, {"cpu": 1500, "memory": 5, "gpu": 2},
                 id="add-sums-shared-keys-and-keeps-the-rest"),
    pytest.param(add, {}, {"cpu": 1}, {"cpu": 1}, id="add-to-empty"),
    pytest.param(maximum, {"cpu": 1000, "memory": 5}, {"cpu": 500, "gpu": 2}, {"cpu": 1000, "memory": 5, "gpu": 2},
                 id="maximum-per-resource"),
    pytest.param(maximum, {"cpu": 1}, {"cpu": 7}, {"cpu": 7}, id="maximum-takes-the-larger-right-side"),
]


@pytest.mark.parametrize(("fn", "a", "b", "expected"), ARITHMETIC)
def test_arithmetic_is_per_resource_and_leaves_inputs_alone(
    fn: Callable[[Mapping[str, int], Mapping[str, int]], dict[str, int]],
    a: dict[str, int],
    b: dict[str, int],
    expected: dict[str, int],
) -> None:
    a_before, b_before = dict(a), dict(b)
    assert fn(a, b) == expected
    assert (a, b) == (a_before, b_before)


@pytest.mark.parametrize(
    ("lists", "expected"),
    [
        pytest.param([], {}, id="nothing"),
        pytest.param([{"cpu": 1, "pods": 1}, {"cpu": 2, "pods": 1}, {"gpu": 8}], {"cpu": 3, "pods": 2, "gpu": 8},
                     id="sums-many"),
    ],
)
def test_total(lists: list[dict[str, int]], expected: dict[str, int]) -> None:
    assert total(lists) == expected


IS_EXTENDED = [
    pytest.param("cpu", False, id="cpu-is-native"),
    pytest.param("memory", False, id="memory-is-native"),
    pytest.param("pods", False, id="pods-is-native"),
    pytest.param("ephemeral-storage", False, id="ephemeral-storage-is-native"),
    pytest.param("hugepages-2Mi", False, id="hugepages-is-native"),
    pytest.param("nvidia.com/gpu", True, id="vendor-domain-is-extended"),
    pytest.param("nvidia.com/mig-1g.5gb", True, id="mig-profile-is-extended"),
    pytest.param("vpc.amazonaws.com/efa", True, id="subdomain-vendor-is-extended"),
    pytest.param("intel.com/mlnx_sriov_rdma1", True, id="sriov-vf-is-extended"),
    pytest.param("kubernetes.io/something", False, id="kubernetes.io-domain-is-native"),
    pytest.param("deviceclass.resource.kubernetes.io/gpu.nvidia.com", False,
                 id="kubernetes.io-subdomain-is-native"),
    pytest.param("requests.nvidia.com/gpu", False, id="quota-requests-prefix-is-not-extended"),
]


@pytest.mark.parametrize(("name", "expected"), IS_EXTENDED)
def test_is_extended(name: str, expected: bool) -> None:
    assert is_extended(name) is expected


FORMAT_UNITS = [
    pytest.param("cpu", 1500, "1.5", id="cpu-as-cores"),
    pytest.param("cpu", 250, "0.25", id="cpu-fraction-of-a-core"),
    pytest.param("cpu", 24000, "24", id="cpu-whole-cores-without-decimals"),
    pytest.param("cpu", 191450, "191.45", id="cpu-p5-allocatable"),
    pytest.param("cpu", 0, "0", id="cpu-zero"),
    pytest.param("memory", 256 * GI, "256Gi", id="memory-whole-Gi-without-decimals"),
    pytest.param("memory", 1536 * MI, "1.5Gi", id="memory-fractional-Gi"),
    pytest.param("memory", 57591 * MI, "56.2Gi", id="memory-to-three-significant-digits"),
    pytest.param("memory", 2047 * GI, "2Ti", id="memory-rounded-up-to-a-whole-Ti"),
    pytest.param("memory", 1996 * GI, "1.95Ti", id="memory-a-p5-allocatable-not-rounded-to-2Ti"),
    pytest.param("memory", 1056 * GI, "1.03Ti", id="memory-used-beside-it-not-rounded-to-1Ti"),
    pytest.param("memory", 1536 * 1024**4, "1536Ti", id="memory-thousands-of-Ti-without-an-exponent"),
    pytest.param("memory", 9997 * GI // 10, "1000Gi", id="memory-rounding-to-1000-without-an-exponent"),
    pytest.param("memory", 10238 * GI // 10, "1Ti", id="memory-rounding-to-1024Gi-is-1Ti"),
    pytest.param("memory", 10234 * GI // 10, "1023Gi", id="memory-just-under-1024Gi"),
    pytest.param("ephemeral-storage", 3 * GI, "3Gi", id="ephemeral-storage-in-Gi"),
    pytest.param("memory", 512 * MI, "512Mi", id="memory-under-a-Gi-in-Mi"),
    pytest.param("memory", 3 * 1024**4, "3Ti", id="memory-in-Ti"),
    pytest.param("memory", 1000, "1000", id="memory-under-a-Ki-in-bytes"),
    pytest.param("hugepages-1Gi", 2 * GI, "2Gi", id="hugepages-in-Gi"),
    pytest.param("nvidia.com/gpu", 8, "8", id="extended-as-count"),
    pytest.param("pods", 110, "110", id="pods-as-count"),
]


@pytest.mark.parametrize(("resource", "units", "expected"), FORMAT_UNITS)
def test_format_units(resource: str, units: int, expected: str) -> None:
    assert format_units(resource, units) == expected
