"""The Kubernetes CEL libraries in device selectors: regex, IP, CIDR, two-variable comprehensions, optionals.

Cases are Kubernetes' own where it has them: ``staging/src/k8s.io/apiserver/pkg/cel/library/ip_test.go``
(``TestIP``), ``cidr_test.go`` (``TestCIDR``) and the examples of ``regex.go``, ``ip.go`` and ``cidr.go``;
cel-go's ``ext/comprehensions.go`` examples for the two-variable macros. Error texts are compared whole
where Kubernetes' tests compare them whole.
"""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.dra import cel_net
from scheduler.dra.cel import DeviceView, SelectorError, compile_selector
from tests.unit.dra.example_devices import example_devices

NOTHING = DeviceView.build("example.com")
DEVICES = example_devices()
ENA = DEVICES["dra.net/gpu-a100-p4d-1/pci-0000-20-01-0"]  # dra.net/ipv4 198.51.100.11/24, ifName ens65
EFA = DEVICES["dra.net/gpu-a100-p4d-1/pci-0000-10-1b-0"]  # an RDMA device: no ipv4 attribute
NET = "device.attributes['dra.net']"


def holds(expression: str, device: DeviceView = NOTHING) -> bool:
    return compile_selector(expression).matches(device)


def runtime_error(expression: str) -> str:
    with pytest.raises(SelectorError) as caught:
        holds(expression)
    assert caught.value.reason.startswith("CEL runtime error: ")
    return caught.value.reason


# ip_test.go TestIP: (expression, result) pairs, each asserted as `expression == result`
IP_CASES = [
    ("ip('192.168.0.1') == ip('192.168.0.1')", True),
    ("isIP('192.168.0.1')", True),
    ("isIP('192.168.0.1.0')", False),
    ("ip.isCanonical('127.0.0.1')", True),
    ("ip('192.168.0.1').family() == 4", True),
    ("ip('0.0.0.0').isUnspecified()", True),
    ("ip('127.0.0.1').isUnspecified()", False),
    ("ip('127.0.0.1').isLoopback()", True),
    ("ip('1.2.3.4').isLoopback()", False),
    ("ip('224.0.0.1').isLinkLocalMulticast()", True),
    ("ip('224.0.1.1').isLinkLocalMulticast()", False),
    ("ip('169.254.169.254').isLinkLocalUnicast()", True),
    ("ip('192.168.0.1').isLinkLocalUnicast()", False),
    ("ip('192.168.0.1').isGlobalUnicast()", True),
    ("ip('255.255.255.255').isGlobalUnicast()", False),
    ("ip('2001:db8::68') == ip('2001:db8::68')", True),
    ("isIP('2001:db8::68')", True),
    ("isIP('2001:db8:::68')", False),
    ("ip.isCanonical('2001:db8::68')", True),
    ("ip.isCanonical('2001:DB8::68')", False),
    ("ip('2001:db8::68').family() == 6", True),
    ("ip('::').isUnspecified()", True),
    ("ip('::1').isUnspecified()", False),
    ("ip('::1').isLoopback()", True),
    ("ip('2001:db8::abcd').isLoopback()", False),
    ("ip('ff02::1').isLinkLocalMulticast()", True),
    ("ip('fd00::1').isLinkLocalMulticast()", False),
    ("ip('fe80::1').isLinkLocalUnicast()", True),
    ("ip('fd80::1').isLinkLocalUnicast()", False),
    ("ip('2001:db8::abcd').isGlobalUnicast()", True),
    ("ip('ff00::1').isGlobalUnicast()", False),
    ("string(ip('192.168.0.1')) == '192.168.0.1'", True),
    # ip.go examples: canonical forms, and == compares addresses
    ("ip.isCanonical('2001:db8::0:0:0:abcd')", False),
    ("ip('2001:DB8::0:0:0:abcd') == ip('2001:db8::abcd')", True),
    ("string(ip('2001:DB8::0:0:0:abcd')) == '2001:db8::abcd'", True),
    ("isIP('127.0.0.256') || isIP(':::1') || isIP('::ffff:1.2.3.4') || isIP('fe80::1%eth0')", False),
]


@pytest.mark.parametrize(("expression", "expected"), IP_CASES)
def test_ip_library_as_ip_test_go(expression: str, expected: bool) -> None:
    assert holds(expression) is expected


@pytest.mark.parametrize(("expression", "message"), [
    ("ip('192.168.0.1.0').family() == 4", 'IP Address "192.168.0.1.0" parse error during conversion from string: '
                                          'ParseAddr("192.168.0.1.0"): IPv4 address too long'),
    ("ip.isCanonical('127.0.0.1.0')", 'IP Address "127.0.0.1.0" parse error during conversion from string: '
                                      'ParseAddr("127.0.0.1.0"): IPv4 address too long'),
    ("ip('2001:db8:::68').family() == 6", 'IP Address "2001:db8:::68" parse error during conversion from string: '
                                          'ParseAddr("2001:db8:::68"): each colon-separated field must have at least '
                                          'one digit (at ":68")'),
    ("ip('::ffff:1.2.3.4').family() == 6", 'IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed'),
    ("ip('fe80::1%eth0').family() == 6", 'IP address "fe80::1%eth0" with zone value is not allowed'),
    ("ip('010.0.0.1').family() == 4", 'IP Address "010.0.0.1" parse error during conversion from string: '
                                      'ParseAddr("010.0.0.1"): IPv4 field has octet with leading zero'),
])
def test_invalid_ip_fails_with_kubernetes_message(expression: str, message: str) -> None:
    """ip_test.go "parse invalid ipv4" / "parse invalid ipv6" / "ip.isCanonical invalid": the evaluation error
    carries Kubernetes' text (Go's netip.ParseAddr inside)."""
    assert message in runtime_error(expression)


# cidr_test.go TestCIDR
CIDR_CASES = [
    ("cidr(dyn('192.168.0.0/24')) == cidr('192.168.0.0/24')", True),
    ("cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))", True),
    ("cidr('192.168.0.0/24').containsIP(ip('192.168.1.1'))", False),
    ("cidr('192.168.0.0/24').containsIP('192.168.0.1')", True),
    ("cidr('192.168.0.0/24').containsIP('192.168.1.1')", False),
    ("cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/25'))", True),
    ("cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/23'))", False),
    ("cidr('192.168.0.0/24').containsCIDR('192.168.0.0/25')", True),
    ("cidr('192.168.0.0/24').containsCIDR('192.168.0.0/23')", False),
    ("cidr('192.168.0.0/24').ip() == ip('192.168.0.0')", True),
    ("cidr('192.168.0.0/24').masked() == cidr('192.168.0.0/24')", True),
    ("cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')", True),
    ("cidr('192.168.0.0/24').prefixLength() == 24", True),
    ("cidr('2001:db8::/32').containsIP(ip('2001:db8::1'))", True),
    ("cidr('2001:db8::/32').containsIP(ip('2001:dc8::1'))", False),
    ("cidr('2001:db8::/32').containsIP('2001:db8::1')", True),
    ("cidr('2001:db8::/32').containsIP('2001:dc8::1')", False),
    ("cidr('2001:db8::/32').containsCIDR(cidr('2001:db8::/33'))", True),
    ("cidr('2001:db8::/32').containsCIDR(cidr('2001:db8::/31'))", False),
    ("cidr('2001:db8::/32').containsCIDR('2001:db8::/33')", True),
    ("cidr('2001:db8::/32').containsCIDR('2001:db8::/31')", False),
    ("cidr('2001:db8::/32').ip() == ip('2001:db8::')", True),
    ("cidr('2001:db8::/32').masked() == cidr('2001:db8::/32')", True),
    ("cidr('2001:db8:1::/32').masked() == cidr('2001:db8::/32')", True),
    ("cidr('2001:db8::/32').prefixLength() == 32", True),
    ("string(cidr('192.168.0.0/24')) == '192.168.0.0/24'", True),
    # cidr.go examples: a prefix keeps its host bits, so == sees them; families never contain each other
    ("cidr('192.168.0.1/24') == cidr('192.168.0.1/24').masked()", False),
    ("cidr('192.168.0.1/24').ip().family() == 4 && cidr('::1/128').ip() == ip('::1')", True),
    ("cidr('::/0').containsIP(ip('10.0.0.1'))", False),
    ("isCIDR('192.168.0.0/24') && !isCIDR('192.168.0.0/33') && !isCIDR('192.168.0.0/08')", True),
]


@pytest.mark.parametrize(("expression", "expected"), CIDR_CASES)
def test_cidr_library_as_cidr_test_go(expression: str, expected: bool) -> None:
    assert holds(expression) is expected


@pytest.mark.parametrize(("expression", "message"), [
    ("cidr('192.168.0.0/').prefixLength() == 0",
     'network address parse error during conversion from string: network address parse error during conversion '
     'from string: netip.ParsePrefix("192.168.0.0/"): bad bits after slash: ""'),
    ("cidr('2001:db8::/').prefixLength() == 0",
     'network address parse error during conversion from string: network address parse error during conversion '
     'from string: netip.ParsePrefix("2001:db8::/"): bad bits after slash: ""'),
    ("cidr('10.0.0.0/33').prefixLength() == 0", 'netip.ParsePrefix("10.0.0.0/33"): prefix length out of range'),
    ("cidr('10.0.0.0/8').containsIP('10.0.0.256')", 'ParseAddr("10.0.0.256"): IPv4 field has value >255'),
])
def test_invalid_cidr_fails_with_kubernetes_message(expression: str, message: str) -> None:
    """cidr_test.go "parse invalid ipv4" / "parse invalid ipv6" (the prefix repeated as stringToCIDR repeats it)."""
    assert message in runtime_error(expression)


@pytest.mark.parametrize(("expression", "expected"), [
    # regex.go examples
    ("'abc 123'.find('[0-9]+') == '123'", True),
    ("'abc 123'.find('xyz') == ''", True),
    ("'123 abc 456'.findAll('[0-9]+') == ['123', '456']", True),
    ("'123 abc 456'.findAll('[0-9]+', 1) == ['123']", True),
    ("'123 abc 456'.findAll('xyz') == []", True),
    ("'123 abc 456'.findAll('[0-9]+', 0) == []", True),
    # Go's FindAllString: an empty match right after a match is skipped (Python's re keeps it)
    ("'123 abc 456'.findAll('[0-9]*') == ['123', '', '', '', '', '456']", True),
    ("'abc 123'.find('[0-9]*') == ''", True),
    # RE2 syntax Go accepts: named groups both ways, Unicode classes, case folding
    ("'NVIDIA H100'.find('(?P<model>H[0-9]+)') == 'H100' && 'H100'.find('(?<m>[0-9]+)') == '100'", True),
    ("'gpu-ä1'.find('\\\\pL[0-9]') == 'ä1' && 'A100'.find('(?i)a1') == 'A1'", True),
])
def test_regex_find_and_find_all(expression: str, expected: bool) -> None:
    assert holds(expression) is expected


@pytest.mark.parametrize(("pattern", "message"), [
    ("H(?=1)", "invalid or unsupported Perl syntax: `(?=`"),
    ("(H)\\\\1", "invalid escape sequence: `\\1`"),
    ("H{1001}", "invalid repeat count: `{1001}`"),
    ("\\\\C", "invalid escape sequence: `\\C`"),
    ("[H", "missing closing ]: `[H`"),
])
def test_literal_pattern_go_refuses_is_a_compile_error(pattern: str, message: str) -> None:
    """A lookaround or backreference is not RE2: Kubernetes refuses a literal pattern when it makes the program
    (regex.go FindRegexOptimization); so does the static check, before any device is tried."""
    with pytest.raises(SelectorError) as caught:
        compile_selector(f"{NET}.ifName.find('{pattern}') == ''")
    assert caught.value.reason == f"CEL compile error: program instantiation failed: error parsing regexp: {message}"


def test_computed_pattern_go_refuses_fails_at_evaluation() -> None:
    reason = runtime_error("'H100'.findAll('H(' + '?=1)') == []")
    assert "Illegal regex: error parsing regexp: invalid or unsupported Perl syntax: `(?=`" in reason


@pytest.mark.parametrize(("expression", "expected"), [
    (f"cidr('198.51.100.0/24').containsIP(cidr({NET}.ipv4).ip())", True),
    (f"cidr({NET}.ipv4).masked() == cidr('198.51.100.0/24')", True),
    (f"cidr({NET}.ipv4).prefixLength() == 24 && cidr({NET}.ipv4).ip().isGlobalUnicast()", True),
    (f"{NET}.ifName.find('^ens[0-9]+$') == 'ens65'", True),
    (f"{NET}.mac.findAll('[0-9a-f]{{2}}').size() == 6", True),
    (f"'ipv4' in {NET} && cidr('10.0.0.0/8').containsIP(cidr({NET}.ipv4).ip())", False),
])
def test_on_a_dranet_nic(expression: str, expected: bool) -> None:
    """dranet publishes a netdev's address with its prefix (``dra.net/ipv4: 198.51.100.11/24``)."""
    assert holds(expression, ENA) is expected


def test_missing_attribute_guarded_by_in() -> None:
    assert holds(f"'ipv4' in {NET} && cidr({NET}.ipv4).containsIP('198.51.100.11')", EFA) is False


@pytest.mark.parametrize(("expression", "expected"), [
    # urls.go examples
    ("isURL('https://user:pass@example.com:80/path?query=val#fragment') && isURL('/absolute-path')", True),
    ("isURL('https://a:b:c/') || isURL('../relative-path')", False),
    ("url('/path').getScheme() == '' && url('https://example.com/').getScheme() == 'https'", True),
    ("url('https://example.com:80/').getHost() == 'example.com:80'", True),
    ("url('https://example.com/').getHost() == 'example.com'", True),
    ("url('https://[::1]:80/').getHost() == '[::1]:80' && url('https://[::1]/').getHost() == '[::1]'", True),
    ("url('/path').getHost() == '' && url('/path').getHostname() == '' && url('/path').getPort() == ''", True),
    ("url('https://example.com:80/').getHostname() == 'example.com'", True),
    ("url('https://127.0.0.1:80/').getHostname() == '127.0.0.1'", True),
    ("url('https://[::1]:80/').getHostname() == '::1'", True),
    ("url('https://example.com:80/').getPort() == '80' && url('https://example.com/').getPort() == ''", True),
    ("url('https://example.com/path').getEscapedPath() == '/path'", True),
    ("url('https://example.com/path with spaces/').getEscapedPath() == '/path%20with%20spaces/'", True),
    ("url('https://example.com').getEscapedPath() == ''", True),
    ("url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}", True),
    ("url('https://example.com/path?key with spaces=value with spaces').getQuery() "
     "== {'key with spaces': ['value with spaces']}", True),
    ("url('https://example.com/path?').getQuery() == {} && url('https://example.com/path').getQuery() == {}", True),
    # == compares Go's URL.String(): the scheme is lower-cased, the path escaped
    ("url('HTTPS://example.com/a b') == url('https://example.com/a%20b')", True),
    ("url('https://example.com/a') == url('https://example.com/b')", False),
])
def test_url_library(expression: str, expected: bool) -> None:
    assert holds(expression) is expected


@pytest.mark.parametrize(("expression", "message"), [
    ("url('https://a:b:c/').getPort() == ''",
     'URL parse error during conversion from string: parse "https://a:b:c/": invalid port ":c" after host'),
    ("url('../relative-path').getPort() == ''",
     'URL parse error during conversion from string: parse "../relative-path": invalid URI for request'),
    ("url('https://[1.2.3.4]/').getPort() == ''",
     'URL parse error during conversion from string: parse "https://[1.2.3.4]/": invalid IP-literal'),
])
def test_invalid_url_fails_with_kubernetes_message(expression: str, message: str) -> None:
    """urls.go ``stringToUrl``: Go's ``url.ParseRequestURI`` error, prefixed."""
    assert message in runtime_error(expression)


@pytest.mark.parametrize(("expression", "expected"), [
    # cel-go ext/lists.go examples (version 3, in Kubernetes' base environment since 1.34)
    ("lists.range(5) == [0, 1, 2, 3, 4]", True),
    ("[1, 2, 3, 4].slice(1, 3) == [2, 3] && [1, 2, 3, 4].slice(2, 4) == [3, 4]", True),
    ("[1, [2, 3], [4]].flatten() == [1, 2, 3, 4] && [1, 2, [], [], [3, 4]].flatten() == [1, 2, 3, 4]", True),
    ("[1, [2, [3, 4]]].flatten() == [1, 2, [3, 4]] && [1, [2, [3, [4]]]].flatten(2) == [1, 2, 3, [4]]", True),
    ("[1, 2, 2, 3, 3, 3].distinct() == [1, 2, 3] && ['b', 'b', 'c', 'a', 'c'].distinct() == ['b', 'c', 'a']", True),
    ("[1, 'b', 2, 'b'].distinct() == [1, 'b', 2] && [true, 1].distinct() == [true, 1]", True),
    ("[5, 3, 1, 2].reverse() == [2, 1, 3, 5]", True),
    ("[3, 2, 1].sort() == [1, 2, 3] && ['b', 'c', 'a'].sort() == ['a', 'b', 'c']", True),
    ("[-10, 0, 1000].sortBy(e, -e) == [1000, 0, -10]", True),
    ("[{'n': 'foo', 's': 0}, {'n': 'bar', 's': -10}, {'n': 'baz', 's': 1000}].sortBy(e, e.s).map(e, e.n) "
     "== ['bar', 'foo', 'baz']", True),
])
def test_list_extension(expression: str, expected: bool) -> None:
    assert holds(expression) is expected


@pytest.mark.parametrize(("expression", "message"), [
    ("[1, 2, 3, 4].slice(3, [2][0]) == []",
     "cannot slice(3, 2), start index must be less than or equal to end index"),
    ("[1, 2, 3, 4].slice(0, 5) == []", "cannot slice(0, 5), list is length 4"),
    ("[1, [2, [3, [4]]]].flatten(-1) == []", "level must be non-negative"),
    ("[1, 'b'].sort() == []", "list elements must have the same type"),
    ("[[1, 2, 3]].sort() == []", "list elements must be comparable"),
    ("device.driver.reverse() == ''", "no such overload: reverse(string)"),
])
def test_list_extension_errors(expression: str, message: str) -> None:
    """ext/lists.go's errors; ``reverse`` of a string is the strings extension's version 3, which Kubernetes does
    not use, so only the list overload exists (without types, this is found when evaluated)."""
    assert message in runtime_error(expression)


@pytest.mark.parametrize(("expression", "expected"), [
    # cel-go ext/comprehensions.go examples
    ("[1, 2, 3].all(i, v, i < v)", True),
    ("[1, 2, 3].exists(i, v, i > 1 && v == 3)", True),
    ("[1, 2, 3].existsOne(i, v, i == 1 || v == 3)", False),
    ("[1, 2, 3].exists_one(i, v, i == 0)", True),
    ("{'hello': 'world', 'taco': 'taco'}.all(k, v, k != v)", False),
    ("{'hello': 'world', 'taco': 'taco'}.exists(k, v, k == v)", True),
    ("[1, 2, 3].transformList(i, v, i > 0, v * 2) == [4, 6]", True),
    ("[1, 2, 3].transformList(i, v, v * i) == [0, 2, 6]", True),
    ("{'greeting': 'hello'}.transformList(k, v, k + ' ' + v) == ['greeting hello']", True),
    ("[1, 2, 3].transformMap(i, v, v * 2) == {0: 2, 1: 4, 2: 6}", True),
    ("{'greeting': 'hello'}.transformMap(k, v, v.upperAscii()) == {'greeting': 'HELLO'}", True),
    ("{'a': 1, 'b': 2}.transformMap(k, v, v > 1, k) == {'b': 'b'}", True),
    ("{'greeting': 'aloha', 'farewell': 'aloha'}.transformMapEntry(k, v, {k + '!': v}).size() == 2", True),
    ("[[1], [2, 3]].all(i, l, l.all(j, x, x > i))", True),
])
def test_two_variable_comprehensions(expression: str, expected: bool) -> None:
    assert holds(expression) is expected


def test_slicing_from_a_literal_start_past_a_literal_end_is_refused_as_too_complex() -> None:
    """ext/lists.go ``estimateListSlice`` sizes the result ``end - start`` in uint64, so ``slice(3, 2)`` is
    sized 2**64 - 1 and the API server refuses it before it can run (hence the computed end above)."""
    with pytest.raises(SelectorError, match="too complex, exceeds cost limit"):
        compile_selector("[1, 2, 3, 4].slice(3, 2) == []")


def test_two_variable_comprehension_over_list_attributes() -> None:
    device = DeviceView.build("cpu.example.com", {"resource.kubernetes.io/numaNode": (0, 1)})
    numa = "device.attributes['resource.kubernetes.io'].numaNode"
    assert holds(f"{numa}.exists(i, n, i == 1 && n == 1)", device) is True
    assert holds(f"{numa}.all(i, n, i == 0 || n > 0)", device) is True
    assert holds(f"{numa}.exists(i, n, i == 0 && n == 1)", device) is False


def test_comparing_both_iteration_variables_of_a_list_attribute_is_refused_as_too_complex() -> None:
    """compile.go declares a list-type attribute ``dyn`` (at most 64 values, no element type), so cel-go's checker
    types both variables of ``all(i, n, …)`` ``dyn`` with no size, and ``_==_`` costs the smaller side's size
    × 0.1 (checker/cost.go): unknown on both sides, as Kubernetes estimates it."""
    with pytest.raises(SelectorError, match="too complex, exceeds cost limit"):
        compile_selector("device.attributes['resource.kubernetes.io'].numaNode.all(i, n, n == i)")


def test_transform_map_entry_refuses_a_key_twice() -> None:
    """comprehensions.go example: ``{valueVar: keyVar}`` over two equal values is an error (``mapInsert``)."""
    reason = runtime_error("{'greeting': 'aloha', 'farewell': 'aloha'}.transformMapEntry(k, v, {v: k}).size() == 1")
    assert "insert failed: key aloha already exists" in reason


@pytest.mark.parametrize(("expression", "expected"), [
    ("optional.of(1).orValue(2) == 1", True),
    ("optional.none().orValue(2) == 2", True),
    ("optional.ofNonZeroValue(0).hasValue()", False),
    ("optional.none().or(optional.of('x')).value() == 'x'", True),
])
def test_optional_values_the_library_runs(expression: str, expected: bool) -> None:
    assert holds(expression) is expected


@pytest.mark.parametrize(("expression", "reason"), [
    ("device.attributes['dra.net'].?ipv4.hasValue()", "unsupported syntax '.?'"),
    ("optional.of(1).optMap(v, v + 1).value() == 2",
     "function 'optMap' of the Kubernetes CEL environment is not supported by gang-scheduler"),
    ("image('nginx').tag() == 'latest'", "undeclared reference to 'image' (in container '')"),
    ("_entries([1]) == []", "undeclared reference to '_entries' (in container '')"),
])
def test_what_is_not_provided_is_refused_when_compiled(expression: str, reason: str) -> None:
    """The image library is not in v1.37's base environment (base.go), so Kubernetes does not declare it either;
    the rewriter's helpers are not declared to selectors."""
    with pytest.raises(SelectorError) as caught:
        compile_selector(expression)
    assert caught.value.reason.startswith("CEL compile error: ")
    assert reason in caught.value.reason


def test_string_of_a_plain_map_is_still_no_overload() -> None:
    assert "no such overload: string(map)" in runtime_error("string({'a': 1}) == ''")


@given(st.ip_addresses(), st.ip_addresses(), st.data())
def test_contains_ip_agrees_with_ipaddress(network_address: ipaddress.IPv4Address | ipaddress.IPv6Address,
                                           address: ipaddress.IPv4Address | ipaddress.IPv6Address,
                                           data: st.DataObject) -> None:
    """``cidr(c).containsIP(ip)`` is ``ip in ip_network(c, strict=False)``, families never mixing; ``string()``
    of an address is its RFC 5952 text, as Python's ``ipaddress`` writes it."""
    length = data.draw(st.integers(0, network_address.max_prefixlen))
    network = ipaddress.ip_network(f"{network_address}/{length}", strict=False)
    if (network_address.version == 6 and network_address.ipv4_mapped) or (address.version == 6 and address.ipv4_mapped):
        return  # refused by Kubernetes' ip()/cidr(): tested above
    prefix = cel_net.cidr(f"{network_address}/{length}")
    value = cel_net.ip(str(address))
    assert cel_net.contains_ip(prefix, value) is (address in network)
    assert cel_net.contains_ip(prefix, str(address)) is (address in network)
    assert cel_net.to_string(value) == str(address)
    assert cel_net.to_string(cel_net.masked(prefix)) == str(network)
    assert cel_net.contains_cidr(prefix, cel_net.masked(prefix)) is True


@given(st.ip_addresses(v=6))
def test_ipv6_text_round_trips(address: ipaddress.IPv6Address) -> None:
    """Any spelling of an address (exploded, upper case) parses to the same canonical value."""
    if address.ipv4_mapped:
        return
    assert cel_net.ip(address.exploded.upper()) == cel_net.ip(str(address)) == {"__ip__": str(address)}
