"""The static cost estimate of DRA selectors (``scheduler.dra.cel_cost``) against Kubernetes' own figures.

Expected costs are those Kubernetes' tests pin, quoted case by case:

* ``staging/src/k8s.io/dynamic-resource-allocation/cel/compile_test.go`` (``expectCost``: the
  ``CompilationResult.MaxCost`` of selectors in the DRA environment, list-type attributes on);
* ``staging/src/k8s.io/apiserver/pkg/cel/library/cost_test.go`` (``expectEstimatedCost`` of the
  Kubernetes libraries on literals: no size of the ``device`` variable involved, so the figures hold in
  the DRA environment too).
"""

from __future__ import annotations

import pytest

from scheduler.dra import cel_cost
from scheduler.dra.cel import SelectorError, compile_selector
from scheduler.dra.cel_cost import COST_LIMIT, Call, CostParseError, Literal, estimate_cost, limit_error, parse
from tests.unit.dra.example_devices import OVER_COST_LIMIT, device_class_selectors

D = 'device.attributes["dra.example.com"]'
C = 'device.capacity["dra.example.com"]'
TEN = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
NESTED_SEVEN = (f"{TEN}.all(x, {TEN}.all(y, {TEN}.all(z, {TEN}.all(z2, {TEN}.all(z3, {TEN}.all(z4, {TEN}.all(z5, "
                "int('1'.find('[0-9]*')) < 100)))))))")

COMPILE_TEST = [  # dynamic-resource-allocation/cel/compile_test.go, testcases[name].expectCost
    pytest.param('device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))', 6,
                 id="runtime-error-lookup-identifier"),
    pytest.param('device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))', 6,
                 id="runtime-error-lookup-map"),
    pytest.param('"no-such-domain" in device.attributes', 3, id="domain-check-negative"),
    pytest.param('device.driver == ""', 2, id="empty-driver-name"),
    pytest.param('device.driver == "dra.example.com"', 4, id="real-driver-name"),
    pytest.param(f"{D}.name", 4, id="driver-name-qualifier"),
    pytest.param(f'{D}["name"]', 4, id="driver-name-qualifier-map-lookup"),
    pytest.param(f"cel.bind(dra, {D}, dra.name)", 15, id="bind"),
    pytest.param(f"{D}.name > 0", 5, id="int"),
    pytest.param(f'{D}.name == "fish"', 5, id="string"),
    pytest.param(f"{D}.name.exists(x, x > 0)", 5 + (3 + 3) * 64, id="macro-exists-on-int"),
    pytest.param(f"{D}.name.exists(x, x == true)", 5 + (3 + 3) * 64, id="macro-exists-on-bool"),
    pytest.param(f'{D}.name.exists(x, x == "fish")', 5 + (3 + 3) * 64, id="macro-exists-on-string"),
    pytest.param(f'{D}.names.isGreaterThan(semver("0.0.1"))', 6, id="list-of-semver"),
    pytest.param(f"{D}.names.asList().exists(x, x > 0)", 390, id="macro-on-list-of-int"),
    pytest.param(f'{D}.names.asList().all(x, x != "")', 262, id="macro-on-list-of-string"),
    pytest.param(f'{D}.names.asList().all(x, x.isGreaterThan(semver("0.0.1")))', 390, id="macro-on-list-of-semver"),
    pytest.param(f"{D}.name.includes(true)", 4 + 48, id="includes-function-on-bool-scalar-positive"),
    pytest.param(f'{D}.name.includes(semver("1.0.0"))', 4 + 48 + 1, id="includes-function-on-semver-scalar-positive"),
    pytest.param(f'{D}.name.asList().includes("value-49")', 53,
                 id="includes-function-on-very-long-list-runtime-error-with-as-list"),
    pytest.param(f"1 in {D}.names.asList()", 69, id="in-operator-on-list"),
    pytest.param(f'{D}.name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)', 7, id="version_v"),
    pytest.param(f'{D}.name.exists(x, x.isGreaterThan(semver("0.0.1")))', 5 + (3 + 4) * 64,
                 id="macro-exists-on-version"),
    pytest.param(f'{C}.name.isGreaterThan(quantity("1Ki"))', 6, id="quantity"),
    pytest.param(f'"name" in {C} && {C}.name.isGreaterThan(quantity("1Ki"))', 10, id="check-positive"),
    pytest.param(f'!("name" in {C}) || {C}.name.isGreaterThan(quantity("1Ki"))', 11, id="check-negative"),
    pytest.param(f"""
{C}.quantity.isGreaterThan(quantity("1Ki")) &&
{D}.bool &&
{D}.int > 0 &&
{D}.string == "fish" &&
{D}.version.isGreaterThan(semver("0.0.1")) &&
{C}["quantity"].isGreaterThan(quantity("1Ki")) &&
{D}["bool"] &&
{D}["int"] > 0 &&
{D}["string"] == "fish" &&
{D}["version"].isGreaterThan(semver("0.0.1"))
""", 52, id="all"),
    pytest.param(f"{D}.a && {D}.b && {D}.c", 12, id="many"),
    pytest.param('device.attributes.exists_one(x, x == "dra.example.com")', 164, id="check_attribute_domains"),
    pytest.param(f'{D}.exists_one(x, x == "services")', 133, id="check_attribute_ids"),
    pytest.param(f'{D}.services.split("example").size() >= 2', 19, id="split_attribute"),
    pytest.param(f'{D}.services.matches("[^a]?sym")', 18, id="regexp_attribute"),
    pytest.param('device.capacity.exists_one(x, x == "dra.example.com")', 164, id="check_capacity_domains"),
    pytest.param(f'{C}.exists_one(x, x == "memory")', 133, id="check_capacity_ids"),
    pytest.param(NESTED_SEVEN, 85555551, id="expensive"),
    pytest.param("device.allowMultipleAllocations == true", 3, id="allow_multiple_allocations"),
    pytest.param("device.allowMultipleAllocations == false", 3, id="allow_multiple_allocations_false"),
]


@pytest.mark.parametrize(("expression", "cost"), COMPILE_TEST)
def test_dra_selector_costs_are_those_of_kubernetes_compile_test(expression: str, cost: int) -> None:
    assert estimate_cost(expression)[1] == cost


LIBRARY_COST_TEST = [  # apiserver/pkg/cel/library/cost_test.go, expectEstimatedCost (min, max)
    pytest.param("[1, 2, 3, 4, 5].sum()", (15, 15), id="TestListsCost-int-sum"),
    pytest.param("[uint(1), uint(2), uint(3), uint(4), uint(5)].max()", (20, 20), id="TestListsCost-uint-max"),
    pytest.param("[1, 2, 3, 4, 5].indexOf(3)", (15, 15), id="TestIndexOfCost-int"),
    pytest.param("[duration('1s'), duration('2s'), duration('3s'), duration('4s'), duration('5s')]"
                 ".lastIndexOf(duration('3s'))", (21, 21), id="TestIndexOfCost-duration"),
    pytest.param("'01234567890123456789012345678901234567890123456789'.indexOf('123')", (5, 5),
                 id="TestIndexOfCost-string"),
    pytest.param("url('https:://kubernetes.io/').getScheme()", (4, 4), id="TestURLsCost-getScheme"),
    pytest.param("url('https:://kubernetes.io/').getQuery()", (4, 4), id="TestURLsCost-getQuery"),
    pytest.param("ip('192.168.0.1')", (2, 2), id="TestIPCost-ipv4"),
    pytest.param("ip('2001:db8:3333:4444:5555:6666:7777:8888').isLoopback()", (5, 5), id="TestIPCost-ipv6-accessor"),
    pytest.param("ip.isCanonical('2001:db8:3333:4444:5555:6666:7777:8888')", (8, 8), id="TestIPIsCanonicalCost"),
    pytest.param("cidr('192.168.0.0/16').prefixLength()", (3, 3), id="TestCIDRCost-accessor"),
    pytest.param("cidr('192.168.0.0/16').containsCIDR(cidr('192.0.0.0/30'))", (7, 11), id="TestCIDRCost-cidr"),
    pytest.param("cidr('192.168.0.0/16').containsCIDR('192.0.0.0/30')", (7, 11), id="TestCIDRCost-cidr-string"),
    pytest.param("cidr('192.168.0.0/16').containsIP(ip('192.169.0.1'))", (5, 8), id="TestCIDRCost-ip"),
    pytest.param("cidr('2001:db8::/32').containsIP(ip('2001:db8:3333:4444:5555:6666:7777:8888'))", (7, 10),
                 id="TestCIDRCost-ipv6-ip"),
    pytest.param("'abc 123 def 123'.findAll('123')", (2, 2), id="TestRegexCost-findAll"),
    pytest.param("'abc 123 def 123'.findAll('123', 1)", (2, 2), id="TestRegexCost-findAll-limit"),
    pytest.param('quantity("12Mi")', (1, 1), id="TestQuantityCost-path"),
    pytest.param('quantity("200M").compareTo(quantity("0.2G")) > 0', (4, 4), id="TestQuantityCost-compare_equal"),
    pytest.param('quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger() > 0', (7, 7),
                 id="TestQuantityCost-arith_chain"),
    pytest.param("sets.contains([], [])", (21, 21), id="TestSetsCost-contains-empty"),
    pytest.param("sets.contains([1, 2, 3, 4], [2, 3])", (29, 29), id="TestSetsCost-contains"),
    pytest.param("sets.contains([[1], [2, 3]], [[2, 3.0]])", (53, 53), id="TestSetsCost-contains-nested"),
    pytest.param("!sets.equivalent([1, 2], [2u, 2, 2.0])", (34, 34), id="TestSetsCost-equivalent"),
    pytest.param("sets.intersects([[1], [2, 3]], [[1, 2], [2, 3.0]])", (65, 65), id="TestSetsCost-intersects"),
]


@pytest.mark.parametrize(("expression", "cost"), LIBRARY_COST_TEST)
def test_library_function_costs_are_those_of_kubernetes_cost_test(expression: str, cost: tuple[int, int]) -> None:
    assert estimate_cost(expression) == cost


def test_the_strings_extension_costs_by_the_size_of_an_attribute() -> None:
    """library/cost.go: ``lowerAscii`` traverses its target once (64 × 0.1 → 7) and its result is as long;
    ``replace`` costs two traversals (64 × 0.2 → 13); ``strings.quote`` one (cel-go ``ExtQuoteString``)."""
    assert estimate_cost(f"{D}.name.lowerAscii() == 'abc'") == (4 + 0 + 1, 4 + 7 + 1)
    assert estimate_cost(f"{D}.name.replace('a', 'b').size() > 1")[1] == 4 + 13 + 1 + 1
    assert estimate_cost(f"strings.quote({D}.name) == ''")[1] == 4 + 7


def test_a_realistic_device_class_selector_is_far_under_the_limit() -> None:
    """The driver DeviceClasses of the example ResourceSlices (NVIDIA GPU, MIG, vGPU, dranet, compute
    domains): a few equality tests each, costing tens where the limit is a million. The H100 selector:
    ``device.driver`` (2) ``==`` a 14-character literal (1.4 → 2), ``&&`` (nothing of its own), the
    attribute (4) ``==`` 21 characters (2.1 → 3); at least the left side (3) is evaluated."""
    selectors = [s for expressions in device_class_selectors().values() for s in expressions]
    assert selectors
    costs = [estimate_cost(s)[1] for s in selectors]
    assert max(costs) < 100
    assert all(limit_error(s) is None for s in selectors)
    assert estimate_cost("device.driver == 'gpu.nvidia.com' && "
                         "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'") == (3, 11)


def test_four_nested_comprehensions_over_device_attributes_are_over_the_limit_and_refused() -> None:
    """32 domains × 32 names, twice over: 24,714,531 by cel-go's rules (2 levels cost 11,555)."""
    assert estimate_cost(OVER_COST_LIMIT) == (3, 24_714_531)
    assert limit_error(OVER_COST_LIMIT) == (
        "too complex, exceeds cost limit (estimated cost 24,714,531, limit 1,000,000)")
    with pytest.raises(SelectorError) as refused:
        compile_selector(OVER_COST_LIMIT)
    assert refused.value.reason == ("CEL compile error: too complex, exceeds cost limit "
                                    "(estimated cost 24,714,531, limit 1,000,000)")
    two_levels = "device.attributes.exists(d, device.attributes[d].exists(a, device.attributes[d][a] == 'x'))"
    assert estimate_cost(two_levels)[1] == 11_555
    assert compile_selector(two_levels).expression == two_levels


def nested(levels: int) -> str:
    """``levels`` comprehensions over ten-element lists around ``x > 0``: 11 + 10 × (3 + inner) each."""
    expression = "x0 > 0"
    for level in range(levels):
        expression = f"{TEN}.all(x{level}, {expression})"
    return expression


def test_the_limit_lies_between_five_and_six_nested_comprehensions() -> None:
    """validation.go refuses ``MaxCost > CELSelectorExpressionMaxCost`` (1,000,000)."""
    assert COST_LIMIT == 1_000_000 and cel_cost.LIMIT_MESSAGE == "too complex, exceeds cost limit"
    assert estimate_cost(nested(5))[1] == 655_551
    assert estimate_cost(nested(6))[1] == 6_555_551
    assert compile_selector(nested(5)).expression == nested(5)
    with pytest.raises(SelectorError, match="too complex, exceeds cost limit"):
        compile_selector(nested(6))


def test_comparing_two_values_of_unknown_size_is_over_the_limit_as_in_kubernetes() -> None:
    """cel-go prices ``==`` by the smaller side's size; ``type(x)`` and a type name have none, so the
    estimate is 2**64 × 0.1 (cost_test.go ``equality_reflexivity`` shows that figure for unknown sizes)."""
    assert estimate_cost("type(1) == int") == (3, 1844674407370955264 + 2)
    assert limit_error("type(1) in [int]") is None


@pytest.mark.parametrize("expression", [
    "'a\\'b\\u00e9\\x41\\101' == 'ab'", "r'\\d+'.size() == 3", "b'\\xff' == b''", "'''multi\nline''' != ''",
    "0x1F == 31 && 3u > 2u && 1.5e3 > 1.0 && -1 < 0 && !!true", "{'a': 1, 'b': 2}.size() == 2",
    "[1, 2].map(x, x > 1, x * 2).size() == 1", "{'a': 1}.all(k, v, v > 0)", ".device.driver == 'x'",
])
def test_the_parser_reads_what_the_library_reads(expression: str) -> None:
    import cel

    cel.compile(expression)
    estimate_cost(expression)


def test_string_literal_sizes_are_counted_in_code_points_after_escapes() -> None:
    """cel-go ``computeExprSize``: a string literal's rune count; a bytes literal's byte count, where
    ``\\xff`` is one byte and ``é`` two; a raw string keeps its backslashes."""
    comparison = parse("'\\u00e9\\x41\\101' == b'\\xff\\xfe\u00e9'")
    assert isinstance(comparison, Call)
    assert [a.value for a in comparison.args if isinstance(a, Literal)] == [3, 4]
    raw = parse("r'\\d+'.size()")
    assert isinstance(raw, Call) and isinstance(raw.target, Literal) and raw.target.value == 3


def test_text_outside_the_grammar_is_a_cost_estimation_failure() -> None:
    with pytest.raises(CostParseError):
        parse("device.driver ==")
    assert limit_error("1 +") == "cost estimation failed: unexpected ''"


def test_two_variable_comprehensions_are_sized_by_their_range_as_cel_go_sizes_them() -> None:
    """checker/cost.go ``costComprehension``: a comprehension whose accumulator starts as an empty list or map
    (``transformList``, ``transformMap``, ``transformMapEntry``, ext/comprehensions.go) is sized by its range
    (``rangeCnt``); over a map literal the key variable has the keys' size and the value variable the values'
    (``pushIterKey``/``pushIterValue``); ``_==_`` costs the smaller side's size × 0.1, scalars being size 1.
    ``cel.@mapInsert`` has no estimator of its own: 1 plus its arguments."""
    # map 30 + [] 10 + @result 1 + 1 × (1 + [(k + ' ' 1+1) + v 2+1] 10 + 1) + == (list 10, min(1, 1) × 0.1 → 1)
    assert estimate_cost("{'greeting': 'hello'}.transformList(k, v, k + ' ' + v) == ['greeting hello']") == (69, 69)
    # map 30 + {} 30 + @result 1 + 1 × @mapInsert(1 + 1 + upperAscii 5 × 0.1 → 1 + 1, + 1) + == (map 30 + 1)
    assert estimate_cost("{'greeting': 'hello'}.transformMap(k, v, v.upperAscii()) == {'greeting': 'HELLO'}") == (
        97, 97)
    # map 30 + {} 30 + @result 1 + 2 × @mapInsert(1 + {k + '!': v} 30 + 2 + 1, + 1) + size() 1 + == 1
    assert estimate_cost("{'greeting': 'aloha', 'farewell': 'aloha'}.transformMapEntry(k, v, {k + '!': v}).size() "
                         "== 2") == (133, 133)
    assert estimate_cost("[1, 2, 3].transformList(i, v, i > 0, v * 2)")[1] < 100


def test_sort_by_is_costed_as_cel_go_expands_it() -> None:
    """ext/lists.go ``sortByMacro``: ``cel.bind(@__sortBy_input__, l, @__sortBy_input__.@sortByAssociatedKeys(
    @__sortBy_input__.map(e, key)))``; ``estimateListSortBy`` prices the keys' size n as n² × 2 (+ 0.1 for
    string keys) + 1 + 10 and, as upstream, sizes the result n². The map over the result then runs 9 times."""
    assert estimate_cost("[-10, 0, 1000].sortBy(e, -e)") == (104, 104)
    assert estimate_cost("['b', 'a'].sortBy(e, e)") == (79, 79)
    assert estimate_cost("[{'n': 'foo', 's': 0}, {'n': 'bar', 's': -10}, {'n': 'baz', 's': 1000}]"
                         ".sortBy(e, e.s).map(e, e.n) == ['bar', 'foo', 'baz']")[1] == 343


@pytest.mark.parametrize(("expression", "cost"), [
    # ext/lists.go version 3 (Kubernetes' base environment since 1.34): estimateAllocatingListCall, the
    # result's size × factor + 1 (call) + 10 (list), after the target's own cost
    ("lists.range(5)", 5 + 11),
    ("[1, 2, 3, 4].slice(1, 3)", 10 + 2 + 11),
    ("[1, 2, 3, 4].slice(1, [3][0])", 10 + (4 - 1) + 11 + 11),  # end unknown: the target's size
    ("[[1], [2, 3]].flatten()", 30 + 2 + 11),
    ("[[1], [2, 3]].flatten(2)", 30 + 2 * 2 + 11),  # × depth
    ("[1, 2, 3].reverse()", 10 + 3 + 11),
    ("[1, 2, 3].distinct()", 10 + 9 * 2 + 11),  # n² × 2
    ("[3, 2, 1].sort()", 10 + 9 * 2 + 11),
    ("['b', 'a'].sort()", 10 + 9 + 11),  # 4 × 2.1, rounded up
    ("[1, 2, 3].distinct().size() == 9", 10 + 29 + 1 + 1),  # distinct's result is sized n², as upstream
])
def test_list_extension_functions_are_costed_as_in_cel_go(expression: str, cost: int) -> None:
    assert estimate_cost(expression) == (cost, cost)


def test_list_extension_calls_kubernetes_refuses_for_their_estimate() -> None:
    """``lists.range(n)`` of a non-literal n is sized 2**64 - 1 (``nodeAsUintValue``'s default), and a
    literal ``slice(3, 2)`` is sized ``2 - 3`` in uint64: both over the limit, as in Kubernetes."""
    assert limit_error(f"lists.range({D}.count).size() > 0") is not None
    assert limit_error("[1, 2, 3].slice(3, 2).size() == 0") is not None
    assert limit_error(f"{D}.values.sort().size() > 0") is None  # 64 values: 64² × 2.1 + 11


def test_the_estimate_reads_the_selector_as_written_not_its_rewrite() -> None:
    """The library runs ``sortBy`` and the two-variable macros through helpers (``_sort_by_keys``, ``_entries``)
    that cel-go does not have; the cost is that of the text as written, which Kubernetes accepts here."""
    from scheduler.dra.cel import _rewrite

    original = "[{'n': 'foo', 's': 0}, {'n': 'bar', 's': -10}].sortBy(e, e.s).map(e, e.n) == ['bar', 'foo']"
    assert "_sort_by_keys" in _rewrite(original)
    assert limit_error(_rewrite(original)) is not None  # a helper's result has no size: the map over it is unbounded
    assert limit_error(original) is None
    assert compile_selector(original).expression == original
