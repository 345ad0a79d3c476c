"""CEL values of the Kubernetes library types, as the CEL library in use can hold them, and their messages.

The library has no custom value types, so :mod:`scheduler.dra.cel` and its libraries pass each Kubernetes type
(``apiserver/pkg/cel``: Quantity, Semver, net.IP, net.CIDR, URL, NamedFormat) as a one-key map from a marker key
to one canonical text per value, so that CEL's ``==`` on the maps compares the values as Kubernetes' ``Equal`` does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

QUANTITY_KEY: Final = "__quantity__"
SEMVER_KEY: Final = "__semver__"
IP_KEY: Final = "__ip__"
CIDR_KEY: Final = "__cidr__"
URL_KEY: Final = "__url__"
FORMAT_KEY: Final = "__format__"
OPAQUE_TYPES: Final = {QUANTITY_KEY: "kubernetes.Quantity", SEMVER_KEY: "kubernetes.Semver", IP_KEY: "net.IP",
                       CIDR_KEY: "net.CIDR", URL_KEY: "kubernetes.URL", FORMAT_KEY: "kubernetes.NamedFormat"}
"""The marker keys, with the CEL name of the type each stands for."""

_NAMES: Final = {bool: "bool", int: "int", float: "double", str: "string", bytes: "bytes", list: "list"}


def type_name(value: object) -> str:
    """The CEL name of a value's type, for messages (``string``, ``map``, ``net.IP``, ``kubernetes.Quantity``)."""
    if isinstance(value, dict):
        if len(value) == 1:
            (key,) = value
            if isinstance(key, str) and key in OPAQUE_TYPES:
                return OPAQUE_TYPES[key]
        return "map"
    if value is None:
        return "null_type"
    return _NAMES.get(type(value), type(value).__name__)


def no_overload(function: str, *arguments: object) -> TypeError:
    """cel-go's ``no such overload`` error for ``function`` applied to ``arguments``, naming their types."""
    return TypeError(f"no such overload: {function}({', '.join(type_name(a) for a in arguments)})")


def as_text(value: object, function: str) -> str:
    """``value`` if it is a string, else :func:`no_overload`."""
    if isinstance(value, str):
        return value
    raise no_overload(function, value)


def opaque_text(value: object, key: str, function: str) -> str:
    """The canonical text of a one-key map of ``key`` (an IP, a CIDR, …), else :func:`no_overload`."""
    if isinstance(value, dict) and len(value) == 1 and key in value:
        return str(value[key])
    raise no_overload(function, value)


def accepts(parse: Callable[[str], object], value: object, function: str) -> bool:
    """Whether ``parse`` takes the string ``value`` without ``ValueError``: the ``isIP``, ``isCIDR``, ``isURL``,
    ``isQuantity``, ``isSemver`` predicates. A non-string is :func:`no_overload`."""
    try:
        parse(as_text(value, function))
    except ValueError:
        return False
    return True


def same(left: object, right: object) -> bool:
    """CEL equality of two values: a bool never equals a number (Python's ``True == 1`` does)."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    return left == right


def go_quote(text: str) -> str:
    """Go's ``strconv.Quote`` for the texts these messages hold (printable ASCII, quotes and backslashes)."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif not char.isprintable():
            out.append(f"\\x{ord(char):02x}" if ord(char) < 0x80 else f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'
