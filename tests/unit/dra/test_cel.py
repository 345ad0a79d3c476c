"""DRA device selectors: ``compile_selector``, ``Selector.matches``, ``DeviceView``, ``Version``.

Expected results follow Kubernetes v1.37: ``k8s.io/dynamic-resource-allocation/cel`` (compile.go:
domain grouping, empty map for an unknown domain, bool results) and the apiserver CEL libraries
``quantity.go`` / ``semverlib.go``. The devices are the example ResourceSlices in
``tests/data/resourceslices``, converted by hand from their YAML dicts (``example_devices``).
"""

from __future__ import annotations

import copy
import pickle
import uuid
from decimal import Decimal

import pytest

from scheduler.dra import cel as dra_cel
from scheduler.dra.cel import DeviceView, SelectorError, Version, compile_selector, split_qualified_name
from tests.unit.dra.example_devices import device_class_selectors, example_devices

DEVICES = example_devices()
H100 = DEVICES["gpu.nvidia.com/gpu-node-1/gpu-1"]  # 8x H100 p5 node; memory 81559Mi
A100 = DEVICES["gpu.nvidia.com/gpu-a100-p4d-1/gpu-0"]  # memory 40Gi, pcieRoot pci0000:10
MIG = DEVICES["gpu.nvidia.com/gpu-a100-mig-1/gpu-0-mig-1g5gb-19-0"]
EXAMPLE_GPU = DEVICES["gpu.example.com/dra-example-driver-cluster-worker/gpu-3"]  # index 3, driverVersion 1.0.0
EFA = DEVICES["dra.net/gpu-a100-p4d-1/pci-0000-10-1b-0"]  # dra.net/rdma: true, published fully qualified
ENA = DEVICES["dra.net/gpu-a100-p4d-1/pci-0000-20-01-0"]
CHANNEL = DEVICES["interconnect.example.com/rack-a1/channel-0"]
NV = "device.attributes['gpu.nvidia.com']"
MEM = "device.capacity['gpu.nvidia.com'].memory"


def unique(expression: str) -> str:
    """``expression`` made distinct from every other test's, so the shared compile cache is cold."""
    return f"{expression} || '{uuid.uuid4()}' == ''"


MATCHES = [
    # driver
    pytest.param("device.driver == 'gpu.nvidia.com'", H100, True, id="driver-equal"),
    pytest.param("device.driver == 'gpu.nvidia.com'", EXAMPLE_GPU, False, id="driver-differs"),
    # attribute kinds
    pytest.param(f"{NV}.productName == 'NVIDIA H100 80GB HBM3'", H100, True, id="string-attribute-equal"),
    pytest.param(f"{NV}.productName == 'NVIDIA H100 80GB HBM3'", A100, False, id="string-attribute-differs"),
    pytest.param("device.attributes['gpu.example.com'].index == 3", EXAMPLE_GPU, True, id="int-attribute-equal"),
    pytest.param("device.attributes['gpu.example.com'].index < 3", EXAMPLE_GPU, False, id="int-attribute-compare"),
    pytest.param("device.attributes['dra.net'].rdma", EFA, True, id="bool-attribute-true"),
    pytest.param("device.attributes['dra.net'].rdma == true", ENA, False, id="bool-attribute-false"),
    pytest.param("device.allowMultipleAllocations", H100, False, id="allow-multiple-allocations-default-false"),
    # domains: short names belong to the driver, qualified names to their own domain
    pytest.param(f"{NV}.type == 'gpu'", H100, True, id="short-name-is-in-driver-domain"),
    pytest.param("device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0000:55'", H100, True,
                 id="qualified-name-is-in-its-own-domain"),
    pytest.param("device.attributes['dra.net'].pciDevice == 'Elastic Fabric Adapter (EFA)'", EFA, True,
                 id="qualified-name-in-driver-domain-same-as-short"),
    pytest.param("'pcieRoot' in device.attributes['gpu.nvidia.com']", H100, False,
                 id="qualified-name-not-under-driver-domain"),
    pytest.param("device.attributes.exists(d, d == 'resource.kubernetes.io')", H100, True, id="iterate-domains"),
    # the `in` idiom and has()
    pytest.param("'productName' in device.attributes['gpu.nvidia.com']", H100, True, id="in-present-attribute"),
    pytest.param("'profile' in device.attributes['gpu.nvidia.com']", H100, False, id="in-absent-attribute"),
    pytest.param("'pcieRoot' in device.attributes['resource.kubernetes.io']", CHANNEL, False,
                 id="in-unknown-domain-is-false-not-an-error"),
    pytest.param("'memory' in device.capacity['gpu.nvidia.com']", EFA, False, id="in-unknown-capacity-domain"),
    pytest.param("has(device.attributes['gpu.nvidia.com'].profile)", MIG, True, id="has-present-attribute"),
    pytest.param("has(device.attributes['gpu.nvidia.com'].profile)", H100, False, id="has-absent-attribute"),
    pytest.param("device.driver == 'dra.net' && device.attributes['dra.net'].rdma", H100, False,
                 id="false-and-missing-domain-short-circuits"),
    # quantities: 81559Mi (85,520,809,984 bytes) is less than 80Gi (85,899,345,920) but more than 80G
    pytest.param(f"{MEM}.compareTo(quantity('80Gi')) == -1", H100, True, id="quantity-compareTo-81559Mi-below-80Gi"),
    pytest.param(f"{MEM}.compareTo(quantity('81559Mi')) == 0", H100, True, id="quantity-compareTo-equal"),
    pytest.param(f"{MEM}.isGreaterThan(quantity('80Gi'))", H100, False, id="quantity-isGreaterThan-80Gi-false"),
    pytest.param(f"{MEM}.isGreaterThan(quantity('80G'))", H100, True, id="quantity-isGreaterThan-80G-decimal-true"),
    pytest.param(f"{MEM}.isLessThan(quantity('80Gi'))", H100, True, id="quantity-isLessThan"),
    pytest.param(f"{MEM}.compareTo(quantity('40Gi')) >= 0", A100, True, id="quantity-compareTo-40Gi-equal"),
    pytest.param(f"{MEM} == quantity('40960Mi')", A100, True, id="quantity-equal-across-suffixes"),
    pytest.param(f"{MEM}.asInteger() == 85520809984", H100, True, id="quantity-asInteger"),
    pytest.param(f"{MEM}.asApproximateFloat() > 8.5e10", H100, True, id="quantity-asApproximateFloat"),
    pytest.param("quantity('1.5').isInteger()", H100, False, id="quantity-isInteger-false"),
    pytest.param("quantity('50k').add(20).sub(quantity('100k')).sub(-50000) == quantity('20')", H100, True,
                 id="quantity-add-sub-int-and-quantity"),
    pytest.param("quantity('200M').compareTo(quantity('0.2G')) == 0", H100, True, id="quantity-compareTo-upstream-doc"),
    pytest.param("quantity('-1').sign() == -1", H100, True, id="quantity-sign"),
    pytest.param("isQuantity('1.3Gi') && !isQuantity('200K')", H100, True, id="isQuantity"),
    # semantic versions
    pytest.param(f"{NV}.driverVersion.isGreaterThan(semver('580.100.0'))", H100, True, id="semver-isGreaterThan"),
    pytest.param(f"{NV}.driverVersion.isLessThan(semver('580.105.10'))", H100, True,
                 id="semver-numeric-not-lexical-order"),
    pytest.param(f"{NV}.driverVersion.compareTo(semver('580.105.8')) == 0", H100, True, id="semver-compareTo-equal"),
    pytest.param(f"{NV}.driverVersion == semver('580.105.8+build.5')", H100, True, id="semver-equal-ignores-build"),
    pytest.param(f"{NV}.cudaComputeCapability.major() == 9 && {NV}.cudaComputeCapability.minor() == 0",
                 H100, True, id="semver-major-minor"),
    pytest.param("device.attributes['gpu.example.com'].driverVersion.patch() == 0", EXAMPLE_GPU, True,
                 id="semver-patch"),
    pytest.param("semver('1.0.0-rc.1').isLessThan(semver('1.0.0'))", H100, True, id="semver-prerelease-below-release"),
    pytest.param("semver('v1.2', true) == semver('1.2.0')", H100, True, id="semver-normalize"),
    pytest.param("isSemver('1.2.3') && !isSemver('v1.2.3') && isSemver('v1.2', true)", H100, True, id="isSemver"),
    # cel.bind and text that only looks like a lookup
    pytest.param("cel.bind(g, device.attributes['gpu.nvidia.com'], g.type == 'gpu' && g.architecture == 'Hopper')",
                 H100, True, id="cel-bind"),
    pytest.param("device.driver == \"device.attributes['x'].y\"", H100, False, id="lookup-inside-string-untouched"),
    pytest.param("device.attributes['gpu.nvidia.com'].type == 'gpu' // the class\n && true", H100, True,
                 id="comment-and-newline"),
]


@pytest.mark.parametrize(("expression", "device", "expected"), MATCHES)
def test_matches(expression: str, device: DeviceView, expected: bool) -> None:
    assert compile_selector(expression).matches(device) is expected


EVALUATION_ERRORS = [
    pytest.param(f"{NV}.profile == '1g.5gb'", H100, "CEL runtime error: no such key: profile",
                 id="missing-attribute"),
    pytest.param("device.attributes['gpu.example.com'].index == 3", H100, "CEL runtime error: no such key: index",
                 id="missing-attribute-in-unknown-domain"),
    pytest.param("device.capacity['gpu.nvidia.com'].cores > 0", H100, "CEL runtime error: no such key: cores",
                 id="missing-capacity"),
    pytest.param(f"{NV}.productName", H100, "CEL result of type string could not be converted to bool",
                 id="string-result"),
    pytest.param(f"{MEM}.compareTo(quantity('80Gi'))", H100, "CEL result of type int could not be converted to bool",
                 id="int-result"),
    pytest.param(MEM, H100, "CEL result of type kubernetes.Quantity could not be converted to bool",
                 id="quantity-result"),
    pytest.param(f"{NV}.driverVersion", H100, "CEL result of type kubernetes.Semver could not be converted to bool",
                 id="semver-result"),
]


@pytest.mark.parametrize(("expression", "device", "reason"), EVALUATION_ERRORS)
def test_evaluation_error_is_a_selector_error(expression: str, device: DeviceView, reason: str) -> None:
    selector = compile_selector(expression)
    with pytest.raises(SelectorError) as caught:
        selector.matches(device)
    assert (caught.value.expression, caught.value.reason) == (expression, reason)
    assert str(caught.value) == f"CEL selector {expression!r}: {reason}"


LIBRARY_ERRORS = [
    pytest.param(f"{MEM}.compareTo('80Gi') > 0", "no such overload: kubernetes.Quantity.compareTo(string)",
                 id="compareTo-with-a-string"),
    pytest.param(f"{MEM}.compareTo(semver('1.0.0')) > 0",
                 "no such overload: kubernetes.Quantity.compareTo(kubernetes.Semver)", id="quantity-vs-semver"),
    pytest.param("quantity('200K').sign() > 0", "invalid quantity '200K'", id="bad-quantity"),
    pytest.param("semver('1.0').major() == 1", "no Major.Minor.Patch elements found", id="bad-semver"),
    pytest.param("quantity(' 1').sign() > 0", "quantities must match the regular expression", id="quantity-with-space"),
    pytest.param("quantity('1.5').asInteger() == 1", "cannot convert value to integer", id="asInteger-of-fraction"),
    pytest.param(f"{NV}.type > 1", "No such overload", id="operator-type-mismatch"),
]


@pytest.mark.parametrize(("expression", "detail"), LIBRARY_ERRORS)
def test_library_error_is_a_runtime_selector_error(expression: str, detail: str) -> None:
    with pytest.raises(SelectorError) as caught:
        compile_selector(expression).matches(H100)
    assert caught.value.expression == expression
    assert caught.value.reason.startswith("CEL runtime error: ")
    assert detail in caught.value.reason


@pytest.mark.parametrize(
    "expression",
    [
        pytest.param("device.driver ==", id="missing-operand"),
        pytest.param("device.driver == 'gpu", id="unterminated-string"),
        pytest.param("(device.driver == 'x'", id="unbalanced-parenthesis"),
        pytest.param("", id="empty"),
    ],
)
def test_compile_error_names_the_expression(expression: str) -> None:
    with pytest.raises(SelectorError) as caught:
        compile_selector(expression)
    assert caught.value.expression == expression
    assert caught.value.reason.startswith("CEL compile error: ")
    assert "Syntax error" in caught.value.reason
    assert str(caught.value).startswith(f"CEL selector {expression!r}: CEL compile error: ")


def test_long_expression_is_shortened_in_the_message_only() -> None:
    expression = "device.driver == '" + "x" * 300 + "' +"
    with pytest.raises(SelectorError) as caught:
        compile_selector(expression)
    assert caught.value.expression == expression
    assert str(caught.value).startswith(f"CEL selector {expression[:199] + '…'!r}: ")


# --- memoisation ---------------------------------------------------------------------------------


class CountingCompile:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        self._real = dra_cel._cel.compile
        monkeypatch.setattr(dra_cel._cel, "compile", self)

    def __call__(self, expression: str) -> object:
        self.calls.append(expression)
        return self._real(expression)


def test_same_expression_gives_the_same_selector_compiled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    counting = CountingCompile(monkeypatch)
    expression = unique("device.driver == 'gpu.nvidia.com'")
    first = compile_selector(expression)
    compiled = len(counting.calls)
    second = compile_selector(expression)
    assert second is first
    assert compiled == 1  # nothing to rewrite: one compile
    assert len(counting.calls) == compiled


def test_rewritten_expression_is_compiled_once_too(monkeypatch: pytest.MonkeyPatch) -> None:
    counting = CountingCompile(monkeypatch)
    expression = unique("'x' in device.attributes['gpu.nvidia.com']")
    assert compile_selector(expression) is compile_selector(expression)
    assert counting.calls[0] == expression  # the original first, for errors that point into it
    assert len(counting.calls) == 2  # then the rewritten text, once


def test_compile_failure_is_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    counting = CountingCompile(monkeypatch)
    expression = f"device.driver == '{uuid.uuid4()}' &&"
    reasons = []
    for _ in range(3):
        with pytest.raises(SelectorError) as caught:
            compile_selector(expression)
        reasons.append(caught.value.reason)
    assert len(counting.calls) == 1
    assert len(set(reasons)) == 1


# --- DeviceView ------------------------------------------------------------------------------------


def test_build_groups_qualified_names_by_domain() -> None:
    view = DeviceView.build(
        "gpu.nvidia.com",
        {"productName": "NVIDIA H100 80GB HBM3", "resource.kubernetes.io/pcieRoot": "pci0000:55", "index": 1},
        {"memory": Decimal(85520809984), "example.com/slots": Decimal(4)},
        allow_multiple=True,
    )
    assert view == DeviceView(
        driver="gpu.nvidia.com",
        attributes={
            "gpu.nvidia.com": {"productName": "NVIDIA H100 80GB HBM3", "index": 1},
            "resource.kubernetes.io": {"pcieRoot": "pci0000:55"},
        },
        capacity={"gpu.nvidia.com": {"memory": Decimal(85520809984)}, "example.com": {"slots": Decimal(4)}},
        allow_multiple_allocations=True,
    )
    assert compile_selector("device.allowMultipleAllocations").matches(view) is True


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("productName", ("gpu.nvidia.com", "productName"), id="short-name-gets-driver-domain"),
        pytest.param("resource.kubernetes.io/pcieRoot", ("resource.kubernetes.io", "pcieRoot"), id="qualified"),
        pytest.param("dra.net/pciDevice", ("dra.net", "pciDevice"), id="qualified-other-driver"),
    ],
)
def test_split_qualified_name(name: str, expected: tuple[str, str]) -> None:
    assert split_qualified_name(name, "gpu.nvidia.com") == expected


@pytest.mark.parametrize(
    ("attributes", "capacity", "error", "message"),
    [
        pytest.param({"ratio": 1.5}, {}, TypeError, "attribute gpu.example.com/ratio: 1.5 is not an int, bool, str",
                     id="float-attribute"),
        pytest.param({"big": 2**63}, {}, ValueError,
                     "attribute gpu.example.com/big: 9223372036854775808 is outside int64", id="int-beyond-int64"),
        pytest.param({}, {"memory": "80Gi"}, TypeError, "capacity gpu.example.com/memory: '80Gi' is not a Decimal",
                     id="capacity-not-parsed"),
    ],
)
def test_device_view_rejects_values_cel_cannot_hold(
    attributes: dict[str, object], capacity: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        DeviceView.build("gpu.example.com", attributes, capacity)  # type: ignore[arg-type]


def test_device_view_copies_after_evaluation() -> None:
    view = DeviceView.build("gpu.example.com", {"index": 3}, {"memory": Decimal(2**30)})
    selector = compile_selector("device.attributes['gpu.example.com'].index == 3")
    assert selector.matches(view) is True
    for clone in (copy.deepcopy(view), pickle.loads(pickle.dumps(view))):
        assert clone == view
        assert selector.matches(clone) is True


# --- Version (blang/semver v4 Parse and Compare) -------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("580.105.8", Version(580, 105, 8), id="release"),
        pytest.param("1.0.0-alpha.1", Version(1, 0, 0, ("alpha", "1")), id="prerelease"),
        pytest.param("1.0.0-x-y.0+build.7", Version(1, 0, 0, ("x-y", "0"), ("build", "7")), id="hyphen-and-build"),
    ],
)
def test_version_parse(text: str, expected: Version) -> None:
    parsed = Version.parse(text)
    assert parsed == expected
    assert (parsed.prerelease, parsed.build) == (expected.prerelease, expected.build)
    assert str(parsed) == text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("", "version string empty", id="empty"),
        pytest.param("1.2", "no Major.Minor.Patch elements found", id="two-parts"),
        pytest.param("v1.2.3", "invalid major number 'v1'", id="v-prefix"),
        pytest.param("01.2.3", "invalid major number '01'", id="leading-zero"),
        pytest.param("1.2.3-01", "invalid prerelease identifier '01'", id="numeric-prerelease-leading-zero"),
        pytest.param("1.2.3-a..b", "invalid prerelease identifier ''", id="empty-prerelease-identifier"),
        pytest.param("1.2.3+b_1", "invalid build metadata 'b_1'", id="bad-build-character"),
        pytest.param("1.2.x", "invalid patch number 'x'", id="non-numeric-patch"),
    ],
)
def test_version_parse_rejects(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Version.parse(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("v1.2", "1.2.0", id="v-prefix-and-short"),
        pytest.param("01.02.03", "1.2.3", id="leading-zeros"),
        pytest.param("1", "1.0.0", id="major-only"),
    ],
)
def test_version_parse_normalize(text: str, expected: str) -> None:
    assert str(Version.parse(text, normalize=True)) == expected


def test_version_precedence_follows_semver_spec() -> None:
    # the example chain of semver.org §11, plus build metadata that does not count
    chain = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11",
             "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0"]
    versions = [Version.parse(v) for v in chain]
    for i, low in enumerate(versions):
        for high in versions[i + 1:]:
            assert (low.compare(high), high.compare(low)) == (-1, 1), (low, high)
    assert Version.parse("1.0.0+a").compare(Version.parse("1.0.0+b")) == 0


# --- the example DeviceClasses against the example devices ---------------------------------------

CLASS_MATCHES = {
    # class: (driver of every matching device, how many)
    "gpu.nvidia.com": ("gpu.nvidia.com", 19),  # 8 H100 + 8 A100 + 2 vGPU + the whole GPU beside the MIGs
    "mig.nvidia.com": ("gpu.nvidia.com", 4),
    "vfio.gpu.nvidia.com": ("gpu.nvidia.com", 0),
    "compute-domain-default-channel.nvidia.com": ("compute-domain.nvidia.com", 1),
    "compute-domain-daemon.nvidia.com": ("compute-domain.nvidia.com", 1),
    "mig-1g-12gb.gpu.nvidia.com": ("gpu.nvidia.com", 0),  # the example MIG layout has 1g.5gb, not 1g.12gb
    "gpu.example.com": ("gpu.example.com", 8),
    "efa.networking.k8s.aws": ("dra.net", 4),
    "interconnect.example.com": ("interconnect.example.com", 16),
}


@pytest.mark.parametrize(("class_name", "driver", "expected"), [(c, *v) for c, v in sorted(CLASS_MATCHES.items())])
def test_example_device_class_selectors(class_name: str, driver: str, expected: int) -> None:
    selectors = [compile_selector(e) for e in device_class_selectors()[class_name]]
    assert selectors
    # every example class checks the driver first, so on other devices it is false, not an error
    matching = [name for name, device in DEVICES.items() if all(s.matches(device) for s in selectors)]
    assert len(matching) == expected
    assert all(name.startswith(driver + "/") for name in matching)


def test_example_efa_class_picks_the_efa_nics_not_the_ena() -> None:
    (expression,) = device_class_selectors()["efa.networking.k8s.aws"]
    selector = compile_selector(expression)
    assert [n for n, d in DEVICES.items() if d.driver == "dra.net" and selector.matches(d)] == [
        "dra.net/gpu-a100-p4d-1/pci-0000-10-1b-0",
        "dra.net/gpu-a100-p4d-1/pci-0000-20-1b-0",
        "dra.net/gpu-a100-p4d-1/pci-0000-90-1b-0",
        "dra.net/gpu-a100-p4d-1/pci-0000-a0-1b-0",
    ]


@pytest.mark.parametrize(
    ("request_selector", "expected"),
    [
        pytest.param(f"{NV}.productName == 'NVIDIA H100 80GB HBM3'", 8, id="productName-H100"),
        pytest.param(f"{MEM}.compareTo(quantity('40Gi')) >= 0", 17, id="memory-at-least-40Gi"),
        pytest.param(f"{MEM}.isGreaterThan(quantity('80Gi'))", 0, id="memory-above-80Gi-none-81559Mi-is-less"),
        # 580.126.x: 8 A100 (p4d), 2 vGPU, 1 whole GPU on the MIG node; not the H100s' 580.105.8
        pytest.param(f"{NV}.driverVersion.isGreaterThan(semver('580.110.0'))", 11, id="driverVersion-above-580.110"),
        pytest.param(f"{NV}.architecture == 'Ampere' && {NV}.brand == 'NvidiaVCS'", 2, id="vgpu-brand"),
    ],
)
def test_request_selectors_on_devices_of_the_gpu_class(request_selector: str, expected: int) -> None:
    (class_expression,) = device_class_selectors()["gpu.nvidia.com"]
    in_class = [d for d in DEVICES.values() if compile_selector(class_expression).matches(d)]
    assert sum(compile_selector(request_selector).matches(d) for d in in_class) == expected


def test_every_example_gpu_shares_a_pcie_root_with_an_efa_nic_on_the_p4d_node() -> None:
    root = "device.attributes['resource.kubernetes.io'].pcieRoot"
    (efa_class,) = device_class_selectors()["efa.networking.k8s.aws"]
    efa_roots = {
        DEVICES[n].attributes["resource.kubernetes.io"]["pcieRoot"]
        for n in DEVICES if n.startswith("dra.net/") and compile_selector(efa_class).matches(DEVICES[n])
    }
    gpus = [d for n, d in DEVICES.items() if n.startswith("gpu.nvidia.com/gpu-a100-p4d-1/")]
    for pcie_root in sorted(efa_roots):
        selector = compile_selector(f"{root} == '{pcie_root}'")
        assert sum(selector.matches(g) for g in gpus) == 2


LISTS = DeviceView.build("cpu.example.com", {
    "resource.kubernetes.io/numaNode": (0, 1), "resource.kubernetes.io/pcieRoot": ("pci0000:00", "pci0000:40"),
    "smt": (True,), "driverVersion": (Version.parse("1.2.0"), Version.parse("2.0.0")), "socket": 0,
    "model": "EPYC 9654"})
"""A CPU device as a driver publishes it with list attributes (KEP-5491): NUMA nodes and PCIe roots."""
RK = "device.attributes['resource.kubernetes.io']"
CPU = "device.attributes['cpu.example.com']"


@pytest.mark.parametrize(("expression", "expected"), [
    pytest.param(f"{RK}.numaNode.includes(1)", True, id="includes-in-a-list"),
    pytest.param(f"{RK}.numaNode.includes(2)", False, id="includes-not-in-a-list"),
    pytest.param(f"{CPU}.socket.includes(0)", True, id="includes-on-a-scalar"),
    pytest.param(f"{CPU}.smt.includes(1)", False, id="includes-bool-is-not-an-int"),
    pytest.param(f"{RK}.numaNode.exists(n, n > 0)", True, id="list-exists"),
    pytest.param(f"{RK}.numaNode.all(n, n < 2)", True, id="list-all"),
    pytest.param(f"'pci0000:40' in {RK}.pcieRoot", True, id="list-in"),
    pytest.param(f"{RK}.pcieRoot.size() == 2", True, id="list-size"),
    pytest.param(f"{CPU}.driverVersion.exists(v, v.isGreaterThan(semver('1.5.0')))", True, id="list-of-versions"),
    pytest.param(f"{CPU}.model.lowerAscii().startsWith('epyc')", True, id="strings-lowerAscii"),
    pytest.param(f"{CPU}.model.split(' ')[1] == '9654'", True, id="strings-split"),
    pytest.param(f"{CPU}.model.substring(0, 4) == 'EPYC'", True, id="strings-substring"),
    pytest.param(f"{CPU}.model.indexOf('9') == 5", True, id="strings-indexOf"),
    pytest.param(f"{RK}.numaNode.indexOf(1) == 1", True, id="lists-indexOf"),
    pytest.param(f"{RK}.numaNode.isSorted() && {RK}.numaNode.max() == 1 && {RK}.numaNode.sum() == 1", True,
                 id="lists-isSorted-max-sum"),
    pytest.param(f"sets.intersects({RK}.numaNode, [1, 3])", True, id="sets-intersects"),
])
def test_list_attributes_and_the_kubernetes_libraries(expression: str, expected: bool) -> None:
    assert compile_selector(expression).matches(LISTS) is expected


@pytest.mark.parametrize(("expression", "reason"), [
    pytest.param(f"{MEM}.mul(2).isGreaterThan(quantity('1Gi'))", "undeclared reference to 'mul' (in container '')",
                 id="quantity-mul-is-not-in-v1.37"),
    pytest.param(f"{MEM}.div(2).isGreaterThan(quantity('1Gi'))", "undeclared reference to 'div' (in container '')",
                 id="quantity-div-is-not-in-v1.37"),
    pytest.param(f"{MEM}.divInt(2).isGreaterThan(quantity('1Gi'))",
                 "undeclared reference to 'divInt' (in container '')", id="quantity-divInt-is-not-in-v1.37"),
    pytest.param("device.driver.charAt(0).codePointAt(0) == 103",
                 "undeclared reference to 'codePointAt' (in container '')", id="not-a-kubernetes-function"),
    pytest.param("device.model == 'x'", "undefined field 'model'", id="unknown-device-field"),
    pytest.param("driver == 'gpu.nvidia.com'", "undeclared reference to 'driver' (in container '')",
                 id="unknown-variable"),
    pytest.param(f"[1, 2].exists(x, x == y) || {NV}.index == 0", "undeclared reference to 'y' (in container '')",
                 id="variable-not-bound-by-the-macro"),
    pytest.param(f"{NV}.productName.find('H(?=1)') == 'H'",
                 "program instantiation failed: error parsing regexp: invalid or unsupported Perl syntax: `(?=`",
                 id="regex-lookahead-is-not-re2"),
    pytest.param("'%d GiB'.format([80, 2]) == '80 GiB'",
                 "too many arguments supplied to string.format (expected 1, got 2)",
                 id="string-format-literal-arguments-checked"),
])
def test_static_check_refuses_undeclared_names_at_compile_time(expression: str, reason: str) -> None:
    """Kubernetes' checker refuses these when the claim or class is created; here they fail to compile, so a
    claim using one is invalid when read (never evaluated device by device)."""
    with pytest.raises(SelectorError) as caught:
        compile_selector(expression)
    assert caught.value.reason == f"CEL compile error: {reason}"


def test_bound_names_pass_the_static_check() -> None:
    expression = (f"cel.bind(nv, {NV}, nv.type == 'gpu') && device.attributes.exists(d, d == 'gpu.nvidia.com') "
                  "&& [1, 2].map(i, i * 2).filter(j, j > 2).size() == 1 && type(1) in [int]")
    assert compile_selector(expression).matches(H100) is True
