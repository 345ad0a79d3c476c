"""Kubernetes' format CEL library: named string formats and their validation messages.

``k8s.io/apiserver/pkg/cel/library/format.go`` (v1.37, in the base environment of ``environment/base.go``)
declares

* ``format.named(name)`` → ``optional<kubernetes.NamedFormat>``: the format of that name, or ``optional.none()``;
* ``format.<name>()`` → ``kubernetes.NamedFormat`` for each of :data:`FORMATS`;
* ``<format>.validate(s)`` → ``optional<list<string>>``: ``optional.none()`` when ``s`` is valid, else the
  messages Kubernetes' validators give, word for word.

The validators are those ``format.go`` calls: apimachinery's ``NameIsDNSLabel``/``NameIsDNSSubdomain``/
``NameIsDNS1035Label`` (``pkg/api/validation/generic.go``, over ``pkg/util/validation/validation.go``),
``IsQualifiedName`` and ``IsValidLabelValue`` (``pkg/api/validate/content/kube.go``), Go's
``url.ParseRequestURI`` (:mod:`scheduler.dra.cel_net`), and kube-openapi's ``strfmt`` ``uuid``, ``byte``
(govalidator's base64 pattern), ``date`` and ``datetime``. Lengths are counted in UTF-8 bytes, as Go's
``len`` counts them. A format value is the one-key map ``{"__format__": "<name>"}`` (:mod:`scheduler.dra.cel_values`),
so ``format.named('uri').value() == format.uri()`` holds and two different formats are unequal.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from cel import OptionalValue

from scheduler.dra import cel_net
from scheduler.dra.cel_values import FORMAT_KEY, as_text, no_overload, opaque_text

# --- apimachinery pkg/util/validation/validation.go and pkg/api/validate/content --------------------------

_DNS1123_LABEL: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN: Final = _DNS1123_LABEL + "(\\." + _DNS1123_LABEL + ")*"
_DNS1035_LABEL: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
_LABEL_KEY: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE: Final = "(" + _LABEL_KEY + ")?"
_DNS1123_LABEL_MESSAGE: Final = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
                                 "'-', and must start and end with an alphanumeric character")
_DNS1123_SUBDOMAIN_MESSAGE: Final = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                                     "characters, '-' or '.', and must start and end with an alphanumeric character")
_DNS1035_LABEL_MESSAGE: Final = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
                                 "with an alphabetic character, and end with an alphanumeric character")
_LABEL_KEY_MESSAGE: Final = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
                             "an alphanumeric character")
_LABEL_VALUE_MESSAGE: Final = ("a valid label must be an empty string or consist of alphanumeric characters, '-', "
                               "'_' or '.', and must start and end with an alphanumeric character")
_LABEL_KEY_EXAMPLES: Final = ("MyName", "my.name", "123-abc")


def _matcher(pattern: str) -> Callable[[str], bool]:
    """Go's ``regexp.MustCompile("^" + pattern + "$").MatchString``: the whole text (``$`` is its very end)."""
    compiled = re.compile(pattern)
    return lambda text: compiled.fullmatch(text) is not None


_is_dns1123_label: Final = _matcher(_DNS1123_LABEL)
_is_dns1123_subdomain: Final = _matcher(_DNS1123_SUBDOMAIN)
_is_dns1035_label: Final = _matcher(_DNS1035_LABEL)
_is_label_key: Final = _matcher(_LABEL_KEY)
_is_label_value: Final = _matcher(_LABEL_VALUE)


def _size(text: str) -> int:
    """Go's ``len``: UTF-8 bytes (a byte :func:`_mask_trailing_dash` split off a character counts as one)."""
    return len(text.encode("utf-8", "surrogateescape"))


def regex_error(message: str, pattern: str, *examples: str) -> str:
    """apimachinery's ``RegexError``: ``<message> (e.g. 'a' or 'b', regex used for validation is '<pattern>')``."""
    shown = "".join(("" if i == 0 else " or ") + f"'{example}', " for i, example in enumerate(examples))
    return f"{message} ({'e.g. ' if examples else ''}{shown}regex used for validation is '{pattern}')"


def is_dns1123_label(value: str) -> list[str]:
    """``validation.IsDNS1123Label``: at most 63 characters of ``[a-z0-9-]``, alphanumeric at both ends."""
    problems = ["must be no more than 63 characters"] if _size(value) > 63 else []
    if not _is_dns1123_label(value):
        if _is_dns1123_subdomain(value):
            problems.append("must not contain dots")
        else:
            problems.append(regex_error(_DNS1123_LABEL_MESSAGE, _DNS1123_LABEL, "my-name", "123-abc"))
    return problems


def is_dns1123_subdomain(value: str, length_unit: str = "characters") -> list[str]:
    """``validation.IsDNS1123Subdomain``: at most 253 of them, dot-separated labels. ``content.IsDNS1123Subdomain``
    (what a qualified name's prefix is checked with) says ``bytes`` where util/validation says ``characters``."""
    problems = [f"must be no more than 253 {length_unit}"] if _size(value) > 253 else []
    if not _is_dns1123_subdomain(value):
        problems.append(regex_error(_DNS1123_SUBDOMAIN_MESSAGE, _DNS1123_SUBDOMAIN, "example.com"))
    return problems


def is_dns1035_label(value: str) -> list[str]:
    """``validation.IsDNS1035Label``: a DNS-1123 label that starts with a letter."""
    problems = ["must be no more than 63 characters"] if _size(value) > 63 else []
    if not _is_dns1035_label(value):
        problems.append(regex_error(_DNS1035_LABEL_MESSAGE, _DNS1035_LABEL, "my-name", "abc-123"))
    return problems


def is_qualified_name(value: str) -> list[str]:
    """``content.IsLabelKey`` (``IsQualifiedName``): ``[prefix/]name``, the prefix a DNS subdomain, the name at
    most 63 bytes of alphanumerics, ``-``, ``_``, ``.`` with alphanumeric ends."""
    parts = value.split("/")
    if len(parts) > 2:
        return ["a valid label key " + regex_error(_LABEL_KEY_MESSAGE, _LABEL_KEY, *_LABEL_KEY_EXAMPLES)
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    problems: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        if not parts[0]:
            problems.append("prefix part must be non-empty")
        else:
            problems += ["prefix part " + problem for problem in is_dns1123_subdomain(parts[0], "bytes")]
    if not name:
        problems.append("name part must be non-empty")
    elif _size(name) > 63:
        problems.append("name part must be no more than 63 bytes")
    if not _is_label_key(name):
        problems.append("name part " + regex_error(_LABEL_KEY_MESSAGE, _LABEL_KEY, *_LABEL_KEY_EXAMPLES))
    return problems


def is_label_value(value: str) -> list[str]:
    """``content.IsLabelValue``: empty, or at most 63 bytes shaped like a label key's name."""
    problems = ["must be no more than 63 bytes"] if _size(value) > 63 else []
    if not _is_label_value(value):
        problems.append(regex_error(_LABEL_VALUE_MESSAGE, _LABEL_VALUE, "MyValue", "my_value", "12345"))
    return problems


def _mask_trailing_dash(name: str) -> str:
    """generic.go ``maskTrailingDash`` for the ``…Prefix`` formats (a name that will get a suffix): a trailing
    ``-`` and the byte before it become ``a`` (``name[:len(name)-2] + "a"``, on bytes). On ``"-"`` alone Go's
    slice panics, which cel-go reports as an internal error."""
    if not name.endswith("-"):
        return name
    data = name.encode("utf-8", "surrogateescape")
    if len(data) < 2:
        raise ValueError(f"internal error: runtime error: slice bounds out of range [:{len(data) - 2}]")
    return (data[:-2] + b"a").decode("utf-8", "surrogateescape")


# --- kube-openapi pkg/validation/strfmt ---------------------------------------------------------

_UUID: Final = re.compile("[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}", re.IGNORECASE)
"""strfmt ``UUIDPattern`` (default.go): upper case allowed, dashes optional."""
_BASE64: Final = re.compile("(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})")
"""govalidator ``Base64`` (patterns.go), which strfmt's ``byte`` format matches: padded, not empty."""
_DATE: Final = re.compile("([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIME: Final = re.compile("([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))")
"""strfmt ``DateTimePattern`` (time.go), matched against the lower-cased text after the date's ``t``."""
_DAYS_IN_MONTH: Final = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def is_date(text: str) -> bool:
    """strfmt ``IsDate``: Go's ``time.Parse("2006-01-02", text)``: four-digit year, two-digit month and day, a day
    that exists in that month (year 0 is a leap year, as in Go's proleptic calendar)."""
    match = _DATE.fullmatch(text)
    if match is None:
        return False
    year, month, day = (int(part) for part in match.groups())
    if not 1 <= month <= 12:
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 1 <= day <= _DAYS_IN_MONTH[month - 1] + (month == 2 and leap)


def is_datetime(text: str) -> bool:
    """strfmt ``IsDateTime`` (time.go): at least 4 characters; split at each ``t`` of the lower-cased text, the
    first part a :func:`is_date`, the second ``hh:mm:ss[.frac](z|±hh:mm)`` with ``hh <= 23``, ``mm, ss <= 59``
    (parts after a second ``t`` are not looked at, as there)."""
    parts = text.lower().split("t")
    if len(text) < 4 or len(parts) < 2 or not is_date(parts[0]):
        return False
    match = _TIME.fullmatch(parts[1])
    return match is not None and match[1] <= "23" and match[2] <= "59" and match[3] <= "59"


def _uri(text: str) -> list[str]:
    problem = cel_net.request_uri_error(text)
    return [problem] if problem else []


def _check(accepts: Callable[[str], bool], message: str) -> Callable[[str], list[str]]:
    return lambda text: [] if accepts(text) else [message]


FORMATS: Final[dict[str, Callable[[str], list[str]]]] = {
    "dns1123Label": is_dns1123_label,
    "dns1123Subdomain": is_dns1123_subdomain,
    "dns1035Label": is_dns1035_label,
    "qualifiedName": is_qualified_name,
    "dns1123LabelPrefix": lambda name: is_dns1123_label(_mask_trailing_dash(name)),
    "dns1123SubdomainPrefix": lambda name: is_dns1123_subdomain(_mask_trailing_dash(name)),
    "dns1035LabelPrefix": lambda name: is_dns1035_label(_mask_trailing_dash(name)),
    "labelValue": is_label_value,
    "uri": _uri,
    "uuid": _check(lambda text: _UUID.fullmatch(text) is not None, "does not match the UUID format"),
    "byte": _check(lambda text: _BASE64.fullmatch(text) is not None, "invalid base64"),
    "date": _check(is_date, "invalid date"),
    "datetime": _check(is_datetime, "invalid datetime"),
}
"""format.go ``ConstantFormats``: each format's name and its validator (the problems with a string, none if it is
valid)."""


# --- the CEL functions ------------------------------------------------------------------------


def named(name: object) -> OptionalValue:
    """``format.named(name)``: ``optional.of`` the format, or ``optional.none()`` for a name not in :data:`FORMATS`."""
    text = as_text(name, "format.named")
    return OptionalValue.of({FORMAT_KEY: text}) if text in FORMATS else OptionalValue.none()


def validate(target: object, text: object) -> OptionalValue:
    """``<format>.validate(s)``: ``optional.none()`` if ``s`` is valid, else ``optional.of`` the list of messages.
    ``TypeError`` (no such overload) unless ``target`` is a format and ``s`` a string."""
    name = opaque_text(target, FORMAT_KEY, "validate")
    if name not in FORMATS or not isinstance(text, str):
        raise no_overload("validate", target, text)
    problems = FORMATS[name](text)
    return OptionalValue.of(problems) if problems else OptionalValue.none()


FUNCTIONS: Final[dict[str, Callable[..., object]]] = {"format.named": named, "validate": validate}
"""The format library's callbacks by CEL name. ``format.<name>()`` has none: :mod:`scheduler.dra.cel` rewrites it
to ``format.named('<name>').value()``, the same value, so that every device's CEL context carries two callbacks
rather than fifteen (the library copies each into every context it makes)."""
