"""Kubernetes' format CEL library in device selectors: ``format.named``, ``format.<name>()``, ``validate``.

Cases are Kubernetes' ``staging/src/k8s.io/apiserver/pkg/cel/library/format_test.go`` (``TestFormat``), whose
expected messages are compared whole; the others follow the validators ``format.go`` calls (apimachinery's
``util/validation/validation.go``, ``api/validate/content/kube.go``, ``api/validation/generic.go``, kube-openapi's
``strfmt``, Go's ``net/url``), each cited where it is used.
"""

from __future__ import annotations

import base64
import datetime
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.dra import cel_format
from scheduler.dra.cel import DeviceView, SelectorError, compile_selector

NOTHING = DeviceView.build("example.com")

DNS1123_LABEL = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
                 "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
DNS1123_SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                     "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                     "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
DNS1035_LABEL = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
                 "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
                 "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
NAME_PART = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
             "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
LABEL_VALUE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
               "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
               "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def holds(expression: str) -> bool:
    return compile_selector(expression).matches(NOTHING)


def problems(name: str, text: str) -> list[str]:
    """What ``format.<name>().validate(text)`` holds: ``[]`` for ``optional.none()``."""
    result = cel_format.validate({"__format__": name}, text)
    return list(result.value()) if result.has_value() else []


# format_test.go TestFormat: the example usages, each valid (optional.none())
VALID = [
    ("dns1123Label", "my-label-name"),
    ("dns1123Subdomain", "apiextensions.k8s.io"),
    ("qualifiedName", "apiextensions.k8s.io/v1beta1"),
    ("dns1123LabelPrefix", "my-label-prefix-"),
    ("dns1123SubdomainPrefix", "mysubdomain.prefix.-"),
    ("dns1035LabelPrefix", "my-label-prefix-"),
    ("uri", "http://example.com"),
    ("uuid", "123e4567-e89b-12d3-a456-426614174000"),
    ("byte", "aGVsbG8="),
    ("date", "2021-01-01"),
    ("datetime", "2021-01-01T00:00:00Z"),
    ("dns1123Subdomain", "example.com"),
    ("dns1035Label", "my-label-name"),
    ("qualifiedName", "my.name"),
    ("date", "2020-01-01"),
    ("datetime", "2020-01-01T00:00:00Z"),
    ("labelValue", "my-cool-label-Value"),
]

# format_test.go TestFormat: the failures and their messages, word for word
INVALID = [
    ("dns1123Label", "contains a space", [DNS1123_LABEL]),
    ("dns1123Subdomain", "contains a space", [DNS1123_SUBDOMAIN]),
    ("dns1035Label", "contains a space", [DNS1035_LABEL]),
    ("qualifiedName", "contains a space", [NAME_PART]),
    ("dns1123LabelPrefix", "contains a space-", [DNS1123_LABEL]),
    ("dns1123SubdomainPrefix", "contains a space-", [DNS1123_SUBDOMAIN]),
    ("dns1035LabelPrefix", "contains a space-", [DNS1035_LABEL]),
    ("byte", "aGVsbG8", ["invalid base64"]),
    ("date", "2020-01-32", ["invalid date"]),
    ("datetime", "2020-01-32T00:00:00Z", ["invalid datetime"]),
    ("labelValue", "my-cool-label-Value!!\n\n!!!", [LABEL_VALUE]),
]


@pytest.mark.parametrize(("name", "text"), VALID)
def test_valid_strings_give_none(name: str, text: str) -> None:
    assert holds(f"format.{name}().validate({text!r}).hasValue()") is False
    assert holds(f"!format.named({name!r}).value().validate({text!r}).hasValue()") is True


@pytest.mark.parametrize(("name", "text", "expected"), INVALID)
def test_invalid_strings_give_kubernetes_messages(name: str, text: str, expected: list[str]) -> None:
    assert problems(name, text) == expected
    assert holds(f"format.{name}().validate({text!r}).value().size() == {len(expected)}") is True
    assert holds(f"format.{name}().validate({text!r}).value()[0] == {expected[0]!r}") is True


@pytest.mark.parametrize("name", sorted(cel_format.FORMATS))
def test_every_constant_is_named_and_equal_only_to_itself(name: str) -> None:
    """format_test.go: ``format.named(n).hasValue()``, ``format.named(n).value() == format.n()`` and
    ``format.a() == format.b()`` false for every other pair (compared as values: in a selector, ``==`` of two
    formats has no size to estimate and is over the cost limit, see below)."""
    assert holds(f"format.named('{name}').hasValue()") is True
    value = cel_format.named(name).value()
    assert value == {"__format__": name}
    assert all(value != cel_format.named(other).value() for other in cel_format.FORMATS if other != name)


def test_equality_of_formats_is_over_the_cost_limit() -> None:
    """cel-go's estimate of ``==`` on values without a size (a ``kubernetes.NamedFormat``) is the largest cost, so
    the selector is refused when compiled (:mod:`scheduler.dra.cel_cost`)."""
    with pytest.raises(SelectorError) as caught:
        compile_selector("format.named('uri').value() == format.uri()")
    assert "too complex, exceeds cost limit" in caught.value.reason


def test_the_format_set_is_format_go_constant_formats() -> None:
    """format.go v1.37 ``ConstantFormats``: thirteen formats, each name within ``cel.MaxFormatSize`` (64)."""
    assert set(cel_format.FORMATS) == {
        "dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName", "dns1123LabelPrefix",
        "dns1123SubdomainPrefix", "dns1035LabelPrefix", "labelValue", "uri", "uuid", "byte", "date", "datetime"}


def test_unknown_format_is_none() -> None:
    """format_test.go ``unknown_format``."""
    assert holds("format.named('unknown').hasValue()") is False
    assert holds("format.named('unknown').orValue(format.uri()).validate('foo').hasValue()") is True


@pytest.mark.parametrize(("name", "text", "expected"), [
    # validation.go IsDNS1123Label: a valid subdomain that is no label has dots; length in characters
    ("dns1123Label", "a.b", ["must not contain dots"]),
    ("dns1123Label", "a" * 64, ["must be no more than 63 characters"]),
    ("dns1123Label", "-" + "a" * 63, ["must be no more than 63 characters", DNS1123_LABEL]),
    ("dns1035Label", "1abc", [DNS1035_LABEL]),
    ("dns1123Subdomain", "a" * 254, ["must be no more than 253 characters"]),
    # content/kube.go IsLabelKey: prefix and name parts, lengths in bytes
    ("qualifiedName", "/name", ["prefix part must be non-empty"]),
    ("qualifiedName", "example.com/", ["name part must be non-empty", NAME_PART]),
    ("qualifiedName", "Example.com/name", ["prefix part " + DNS1123_SUBDOMAIN]),
    ("qualifiedName", "a" * 64, ["name part must be no more than 63 bytes"]),
    ("qualifiedName", "a/b/c", ["a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must "
                                "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
                                "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') "
                                "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]),
    ("labelValue", "", []),
    ("labelValue", "é" * 32, ["must be no more than 63 bytes", LABEL_VALUE]),
    # generic.go maskTrailingDash: the dash and the byte before it become "a"
    ("dns1123LabelPrefix", "ab-", []),
    ("dns1123LabelPrefix", "a.-", []),
    ("dns1123LabelPrefix", "é-", [DNS1123_LABEL]),
    # Go's url.ParseRequestURI, its url.Error text
    ("uri", "foo", ['parse "foo": invalid URI for request']),
    ("uri", "", ['parse "": empty url']),
    ("uri", "/just/a/path", []),
    # strfmt uuid (dashes optional, any case), byte (padded base64), date and datetime (time.Parse, IsDateTime)
    ("uuid", "123E4567E89B12D3A456426614174000", []),
    ("uuid", "123e4567-e89b-12d3-a456-42661417400", ["does not match the UUID format"]),
    ("byte", "", ["invalid base64"]),
    ("byte", "aGVsbG8h", []),
    ("date", "2024-02-29", []),
    ("date", "2023-02-29", ["invalid date"]),
    ("date", "2021-1-01", ["invalid date"]),
    ("datetime", "2021-01-01t23:59:59.123+05:30", []),
    ("datetime", "2021-01-01T24:00:00Z", ["invalid datetime"]),
    ("datetime", "2021-01-01T00:00:00", ["invalid datetime"]),
])
def test_validators_follow_apimachinery_and_strfmt(name: str, text: str, expected: list[str]) -> None:
    assert problems(name, text) == expected


def test_prefix_of_a_lone_dash_is_go_slice_panic() -> None:
    """``maskTrailingDash("-")`` slices ``name[:-1]``, a Go panic cel-go turns into an evaluation error."""
    with pytest.raises(SelectorError) as caught:
        holds("format.dns1123LabelPrefix().validate('-').hasValue()")
    assert "internal error: runtime error: slice bounds out of range [:-1]" in caught.value.reason


@pytest.mark.parametrize("expression", [
    "format.uri().validate(1).hasValue()",
    "'x'.validate('y').hasValue()",
    "format.named(1).hasValue()",
])
def test_wrong_argument_types_are_no_overload(expression: str) -> None:
    with pytest.raises(SelectorError) as caught:
        holds(expression)
    assert "no such overload" in caught.value.reason


def test_format_names_pass_the_static_check_and_typos_do_not() -> None:
    assert compile_selector("format.named(device.driver).hasValue()") is not None
    with pytest.raises(SelectorError) as caught:
        compile_selector("formats.uri().validate('x').hasValue()")
    assert caught.value.reason == "CEL compile error: undeclared reference to 'formats' (in container '')"


@given(st.uuids())
def test_every_uuid_spelling_is_valid(value: uuid.UUID) -> None:
    for text in (str(value), str(value).upper(), value.hex):
        assert problems("uuid", text) == []


@given(st.binary(min_size=1, max_size=64))
def test_standard_base64_is_valid(data: bytes) -> None:
    assert problems("byte", base64.b64encode(data).decode()) == []


@given(st.dates())
def test_iso_dates_are_valid(day: datetime.date) -> None:
    """Every day of years 1–9999, written as ISO 8601 (four-digit year), is a date for Go's ``time.Parse``."""
    assert problems("date", day.isoformat()) == []
