"""The strings extension's ``"…".format([…])`` in device selectors, as Kubernetes (strings version 2) runs it.

Cases are cel-go's ``ext/strings_test.go`` ``TestStringFormat`` (the version that tests ``ext/formatting.go``,
the formatter below strings version 4): the rows without a locale and those for ``en_US``, Kubernetes' locale,
with their expected outputs and error texts compared whole. Rows needing cel-go test types (``ext.TestAllTypes``)
or other locales (``fr_FR``) do not apply. Grouping of large ``%f`` values, negative exponents and the ``%e`` width
follow x/text's ``internal/number`` ``appendDecimal``/``appendScientific`` and cel-go's
``fmt.Sprintf("%%%de", precision)``.
"""

from __future__ import annotations

import datetime
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.dra.cel import DeviceView, SelectorError, compile_selector
from scheduler.dra.cel_string_format import FormatError, go_g, string_format

NOTHING = DeviceView.build("example.com")

# TestStringFormat: (format, arguments, expected output)
OUTPUTS = [
    ("no substitution", [], "no substitution"),
    ("str is %s and some more", ["filler"], "str is filler and some more"),
    ("%% and also %%", [], "% and also %"),
    ("%%%s%%", ["text"], "%text%"),
    ("%s%%", ["percent on the right"], "percent on the right%"),
    ("%%%s", ["percent on the left"], "%percent on the left"),
    ("%d %d %d, %s %s %s, %d %d %d, %s %s %s", [1, 2, 3, "A", "B", "C", 4, 5, 6, "D", "E", "F"],
     "1 2 3, A B C, 4 5 6, D E F"),
    ("%.3f", [1.2345], "1.234"),
    ("this is 5 in binary: %b", [5], "this is 5 in binary: 101"),
    ("bit set from bool: %b", [True], "bit set from bool: 1"),
    ("%o", [11], "13"),
    ("this is an unsigned octal: %o", [65535], "this is an unsigned octal: 177777"),
    ("%x is 20 in hexadecimal", [30], "1e is 20 in hexadecimal"),
    ("%X is 20 in hexadecimal", [30], "1E is 20 in hexadecimal"),
    ("%X is 6000 in hexadecimal", [6000], "1770 is 6000 in hexadecimal"),
    ("%x", ["Hello world!"], "48656c6c6f20776f726c6421"),
    ("%X", ["Hello world!"], "48656C6C6F20776F726C6421"),
    ("%x", [b"byte string"], "6279746520737472696e67"),
    ("%X", [b"byte string"], "6279746520737472696E67"),
    ("%.6e", [1052.032911275], "1.052033\u202f\u00d7\u202f10\u2070\u00b3"),
    ("%f", [2.71828], "2.718280"),
    ("%e", [2.71828], "2.718280\u202f\u00d7\u202f10\u2070\u2070"),
    ("unescaped unicode: %e, escaped unicode: %e", [2.71828, 2.71828],
     "unescaped unicode: 2.718280\u202f×\u202f10⁰⁰, escaped unicode: 2.718280\u202f\u00d7\u202f10\u2070\u2070"),
    ("%f", ["NaN"], "NaN"),
    ("%f", ["Infinity"], "∞"),
    ("%f", ["-Infinity"], "-∞"),
    ("null: %s", [None], "null: null"),
    ("some bytes: %s", [b"xyz"], "some bytes: xyz"),
    ("%s", [datetime.datetime(2023, 2, 3, 23, 31, 20, tzinfo=datetime.UTC)], "2023-02-03T23:31:20Z"),
    ("%s", [datetime.timedelta(hours=1, minutes=45, seconds=47)], "6347s"),
    ("%s", [["abc", 3.14, None, [9, 8, 7, 6], datetime.datetime(2023, 2, 3, 23, 31, 20, tzinfo=datetime.UTC)]],
     '["abc", 3.140000, null, [9, 8, 7, 6], timestamp("2023-02-03T23:31:20Z")]'),
    ("%s", [{"key1": b"xyz", "key5": None, "key2": datetime.timedelta(hours=2), "key4": True, "key3": 2.71828}],
     '{"key1":b"xyz", "key2":duration("7200s"), "key3":2.718280, "key4":true, "key5":null}'),
    ("map with multiple key types: %s", [{1: "value1", 2: "value2", "x": math.nan}],
     'map with multiple key types: {"x":"NaN", 1:"value1", 2:"value2"}'),
    ("true bool: %s, false bool: %s", [True, False], "true bool: true, false bool: false"),
    ("dynIntStr: %s dynDoubleStr: %s", [32, 56.8], "dynIntStr: 32 dynDoubleStr: 56.8"),
    ("dynamic double: %.3f", [4.5], "dynamic double: 4.500"),
    ("NaN: %f, infinity: %f", [math.nan, math.inf], "NaN: NaN, infinity: ∞"),
    ("dyntype list: %s", [[6, 4.2, "a string"]], 'dyntype list: [6, 4.200000, "a string"]'),
    ("dyntype map: %s", [{"strKey": "x", True: 42, 6: datetime.timedelta(minutes=7, seconds=2)}],
     'dyntype map: {"strKey":"x", 6:duration("422s"), true:42}'),
    # x/text en-US: grouping by three, negative exponents with a superscript minus, -0.0 unsigned
    ("%.3f", [1234567.891], "1,234,567.891"),
    ("%f", [-1234.5], "-1,234.500000"),
    ("%.0f", [999.5], "1,000"),
    ("%f", [-0.0], "0.000000"),
    ("%e", [-0.00012], "-1.200000\u202f\u00d7\u202f10\u207b\u2070\u2074"),
    ("%e", [1e100], "1.000000\u202f\u00d7\u202f10\u00b9\u2070\u2070"),
    # cel-go passes the precision of %e on as a width: six decimals always, padded to the width
    ("%.2e", [2.71828], "2.718280\u202f\u00d7\u202f10\u2070\u2070"),
    ("%.20e", [2.71828], "     2.718280\u202f\u00d7\u202f10\u2070\u2070"),
]

# TestStringFormat: (format, arguments, error text)
ERRORS = [
    ("%a", [1], 'could not parse formatting clause: unrecognized formatting clause "a"'),
    ("%d %d %d", [0, 1], "index 2 out of range"),
    ("string is %b", ["abc"], "error during formatting: only integers and bools can be formatted as binary, was "
                              "given string"),
    ("%d", [datetime.timedelta(minutes=30, seconds=2)],
     "error during formatting: decimal clause can only be used on integers, was given google.protobuf.Duration"),
    ("octal: %o", ["a string"], "error during formatting: octal clause can only be used on integers, was given "
                                "string"),
    ("double is %x", [0.5], "error during formatting: only integers, byte buffers, and strings can be formatted as "
                            "hex, was given double"),
    ("double is %E", [0.5], 'could not parse formatting clause: unrecognized formatting clause "E"'),
    ("null: %d", [None], "error during formatting: decimal clause can only be used on integers, was given "
                         "null_type"),
    ("null: %e", [None], "error during formatting: scientific clause can only be used on doubles, was given "
                         "null_type"),
    ("null: %f", [None], "error during formatting: fixed-point clause can only be used on doubles, was given "
                         "null_type"),
    ("null: %x", [None], "error during formatting: only integers, byte buffers, and strings can be formatted as "
                         "hex, was given null_type"),
    ("null: %b", [None], "error during formatting: only integers and bools can be formatted as binary, was given "
                         "null_type"),
    ("null: %o", [None], "error during formatting: octal clause can only be used on integers, was given "
                         "null_type"),
    ("%s", [{"q": {"__quantity__": "1"}}], "error during formatting: no formatting function for "
                                           "kubernetes.Quantity"),
]


@pytest.mark.parametrize(("text", "arguments", "expected"), OUTPUTS)
def test_outputs_match_cel_go(text: str, arguments: list[object], expected: str) -> None:
    assert string_format(text, arguments) == expected


@pytest.mark.parametrize(("text", "arguments", "expected"), ERRORS)
def test_errors_match_cel_go(text: str, arguments: list[object], expected: str) -> None:
    with pytest.raises(FormatError) as caught:
        string_format(text, arguments)
    assert str(caught.value) == expected


@pytest.mark.parametrize(("expression", "expected"), [
    ("'%d GiB'.format([80]) == '80 GiB'", True),
    ("'%s/%s'.format([device.driver, 'x']) == 'example.com/x'", True),
    ("'%.1f'.format([2.25]) == '2.2'", True),
    ("'%x'.format([255]) == 'ff'", True),
    ("'%s'.format([[1, 'a']]) == '[1, \"a\"]'", True),
])
def test_format_in_selectors(expression: str, expected: bool) -> None:
    assert compile_selector(expression).matches(NOTHING) is expected


@pytest.mark.parametrize(("expression", "reason"), [
    ("'%d %d'.format([1]) == ''", "index 1 out of range"),
    ("'%d'.format([1, 2]) == ''", "too many arguments supplied to string.format (expected 1, got 2)"),
    ("'%q'.format([1]) == ''", 'could not parse formatting clause: unrecognized formatting clause "q"'),
    ("'%.f'.format([1.0]) == ''", 'could not parse formatting clause: error while parsing precision: error while '
                                  'converting precision to integer: strconv.Atoi: parsing "": invalid syntax'),
])
def test_literal_calls_are_checked_when_compiled(expression: str, reason: str) -> None:
    """cel-go's ``stringFormatValidator``: a literal format string with a list literal is checked at compile time."""
    with pytest.raises(SelectorError) as caught:
        compile_selector(expression)
    assert caught.value.reason == f"CEL compile error: {reason}"


def test_a_wrong_argument_type_fails_when_evaluated() -> None:
    with pytest.raises(SelectorError) as caught:
        compile_selector("'%d'.format([device.driver]) == ''").matches(NOTHING)
    assert "error during formatting: decimal clause can only be used on integers, was given string" in \
        caught.value.reason


@pytest.mark.parametrize(("value", "expected"), [
    (56.8, "56.8"), (1e6, "1e+06"), (123456.0, "123456"), (0.0001, "0.0001"), (1e-05, "1e-05"), (-0.0, "-0"),
    (1.5e300, "1.5e+300"), (math.inf, "+Inf"), (math.nan, "NaN"),
])
def test_double_to_string_is_go_percent_g(value: float, expected: str) -> None:
    """cel-go ``Double.ConvertToType(StringType)`` is ``fmt.Sprintf("%g", d)``: shortest digits, exponent form
    from 1e+06 and below 1e-04."""
    assert go_g(value) == expected


@given(st.floats(allow_nan=False, allow_infinity=False, width=64), st.integers(0, 12))
def test_fixed_is_python_rounding_with_grouping(value: float, precision: int) -> None:
    """Go's ``strconv`` and Python round a double to N decimals alike (correctly rounded); x/text adds en-US
    grouping, and an exact zero carries no sign."""
    expected = f"{value:,.{precision}f}" if value != 0 else f"{0.0:.{precision}f}"
    assert string_format(f"%.{precision}f", [value]) == expected
