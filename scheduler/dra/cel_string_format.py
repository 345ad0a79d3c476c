"""The strings extension's ``format`` as Kubernetes runs it: cel-go ``ext/formatting.go`` with the en-US printer.

Kubernetes' base environment (``apiserver/pkg/cel/environment/base.go``) has cel-go's strings extension at
version 2 (``ext.Strings(ext.StringsVersion(2))``); below version 4 ``"…".format([args])`` is
``ext/formatting.go``, not the locale-free ``formatting_v2.go``, and Kubernetes sets no locale, so ``%f`` and
``%e`` go through ``golang.org/x/text/message`` for en-US (``x/text/internal/number`` ``appendDecimal`` /
``appendScientific``). The clauses, as cel-go's ``ext/strings_test.go`` (``TestStringFormat``) expects them:

* ``%s``: a string, bool, int, double (Go's ``%g``: ``56.8``, ``1e+21``), bytes, null (``null``), timestamp
  (RFC 3339, UTC), duration (``6347s``), list or map. Inside a list or map each element is written as a CEL
  literal: strings and bytes quoted (``"abc"``, ``b"xyz"``), doubles with six decimals (``3.140000``, ``"NaN"``),
  timestamps and durations as ``timestamp("…")`` / ``duration("…")``; a map's ``key:value`` pairs are sorted
  by key;
* ``%d`` (ints), ``%b`` (ints, bools as ``1``/``0``), ``%o`` (ints), ``%x``/``%X`` (ints, and strings or bytes
  byte by byte);
* ``%f`` (doubles, or the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``): ``%.Nf``, default 6 decimals,
  rounded as Go's ``strconv`` rounds, with en-US grouping (``1,234,567.000000``); ``NaN``, ``∞``, ``-∞``;
  ``-0.0`` is printed unsigned (x/text's ``ConvertFloat`` tests ``x < 0``);
* ``%e`` (the same): ``d.dddddd × 10ⁿⁿ`` with narrow no-break spaces around ``×``, a superscript exponent of
  at least two digits and ``⁻`` when negative. The precision is always 6: cel-go passes ``%.N`` on as a width
  (``fmt.Sprintf("%%%de", precision)``), so ``%.2e`` prints six decimals and ``%.20e`` pads to 20 characters;
* ``%%`` is a ``%``.

Errors carry cel-go's words: ``could not parse formatting clause: unrecognized formatting clause "a"``,
``error during formatting: decimal clause can only be used on integers, was given double``, ``index 2 out of
range``. ``uint`` values reach this module as Python ints and are formatted like ints.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Final

from scheduler.dra.cel_values import OPAQUE_TYPES, go_quote, no_overload, type_name


class FormatError(ValueError):
    """A ``format`` failure, with cel-go's message."""


_SPECIAL_FLOATS: Final = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_SUPERSCRIPT: Final = str.maketrans("0123456789-", "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207b")
_DEFAULT_PRECISION: Final = 6


def _cel_type(value: object) -> str:
    """cel-go's name of a value's type in format messages (``google.protobuf.Duration`` for a duration)."""
    if isinstance(value, datetime.datetime):
        return "google.protobuf.Timestamp"
    if isinstance(value, datetime.timedelta):
        return "google.protobuf.Duration"
    return type_name(value)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_opaque(value: object) -> bool:
    return isinstance(value, dict) and len(value) == 1 and next(iter(value)) in OPAQUE_TYPES


# --- Go's number texts ----------------------------------------------------------------------


def _shortest_digits(value: float) -> tuple[str, int]:
    """The shortest decimal digits that read back as ``abs(value)`` (Go's and Python's shortest form) and the
    position of the decimal point: ``1052.5`` → ``("10525", 4)``."""
    _, digits, exponent = Decimal(repr(abs(value))).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    return text, len(digits) + int(exponent)


def _place(digits: str, point: int) -> str:
    if point <= 0:
        return "0." + "0" * -point + digits
    if point >= len(digits):
        return digits + "0" * (point - len(digits))
    return digits[:point] + "." + digits[point:]


def go_g(value: float) -> str:
    """Go's ``fmt.Sprintf("%g", value)``, CEL's ``string(double)``: the shortest digits, in exponent form
    (``1.234567e+06``, ``1e-05``) when the exponent is below -4 or at least 6."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0"
    digits, point = _shortest_digits(value)
    exponent = point - 1
    if exponent < -4 or exponent >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    return sign + _place(digits, point)


def _go_seconds(delta: datetime.timedelta) -> str:
    """cel-go's ``string(duration)``: ``strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"``."""
    seconds = delta.total_seconds()
    if seconds == 0:
        return "0s"
    digits, point = _shortest_digits(seconds)
    return ("-" if seconds < 0 else "") + _place(digits, point) + "s"


def _go_timestamp(moment: datetime.datetime) -> str:
    """cel-go's ``string(timestamp)``: Go's ``time.RFC3339Nano`` in UTC (no trailing zeros in the fraction)."""
    utc = moment.astimezone(datetime.UTC) if moment.tzinfo else moment
    fraction = f"{utc.microsecond:06d}".rstrip("0")
    return utc.strftime("%Y-%m-%dT%H:%M:%S") + ("." + fraction if fraction else "") + "Z"


def _fixed_en_us(value: float, precision: int) -> str:
    """x/text en-US ``%.Nf``: ``strconv``'s correctly rounded digits, integer part grouped by three with ``,``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    text = f"{abs(value):.{precision}f}"
    whole, _, fraction = text.partition(".")
    grouped = f"{int(whole):,}"
    sign = "-" if value < 0 else ""
    return sign + grouped + ("." + fraction if fraction else "")


def _scientific_en_us(value: float, width: int | None) -> str:
    """x/text en-US ``%e`` with cel-go's width quirk: six decimals, ``×`` between narrow no-break spaces,
    ``10`` and a superscript exponent of at least two digits, left-padded with spaces to ``width`` characters."""
    if math.isnan(value):
        text = "NaN"
    elif math.isinf(value):
        text = "∞" if value > 0 else "-∞"
    else:
        mantissa, _, exponent = f"{abs(value):.{_DEFAULT_PRECISION}e}".partition("e")
        power = int(exponent)
        digits = f"{'-' if power < 0 else ''}{abs(power):02d}".translate(_SUPERSCRIPT)
        text = ("-" if value < 0 else "") + f"{mantissa}\u202f\u00d7\u202f10{digits}"
    return text.rjust(width) if width else text


# --- the clauses (ext/formatting.go stringFormatter) ----------------------------------------------

_STRING_TYPES: Final = "strings, bools, bytes, ints, doubles, maps, lists, types, durations, and timestamps"


def _scalar_text(value: object) -> str | None:
    """``FormatString`` of a scalar (``ConvertToType(StringType)``), or None for a list, map or other value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if _is_int(value):
        return str(value)
    if isinstance(value, float):
        return go_g(value)
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if value is None:
        return "null"
    if isinstance(value, datetime.datetime):
        return _go_timestamp(value)
    if isinstance(value, datetime.timedelta):
        return _go_seconds(value)
    return None


def _literal(value: object) -> str:
    """An element of a list or map as ``formatList``/``formatMap`` write it: ``clauseForType`` then
    ``quoteForCEL``."""
    if isinstance(value, float):
        text = f"{value:.6f}" if math.isfinite(value) else go_g(value)
        return text if math.isfinite(value) else go_quote(text)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bytes):
        return "b" + go_quote(value.decode("utf-8", "replace"))
    if isinstance(value, datetime.datetime):
        return f"timestamp({go_quote(_go_timestamp(value))})"
    if isinstance(value, datetime.timedelta):
        return f"duration({go_quote(_go_seconds(value))})"
    if isinstance(value, list | dict) and not _is_opaque(value):
        return _string(value)
    scalar = _scalar_text(value)
    if scalar is None:
        raise FormatError(f"no formatting function for {_cel_type(value)}")
    return scalar


def _string(value: object) -> str:
    """``%s`` (``FormatString``)."""
    if isinstance(value, list):
        return "[" + ", ".join(_literal(item) for item in value) + "]"
    if isinstance(value, dict) and not _is_opaque(value):
        pairs = []
        for key, item in value.items():
            if not isinstance(key, str | bool | int):
                raise FormatError(f"no formatting function for map key of type {_cel_type(key)}")
            pairs.append((_literal(key), _literal(item)))
        return "{" + ", ".join(f"{key}:{item}" for key, item in sorted(pairs, key=lambda pair: pair[0])) + "}"
    text = _scalar_text(value)
    if text is None:
        raise FormatError(f"string clause can only be used on {_STRING_TYPES}, was given {_cel_type(value)}")
    return text


def _decimal(value: object) -> str:
    if not _is_int(value):
        raise FormatError(f"decimal clause can only be used on integers, was given {_cel_type(value)}")
    return str(value)


def _float_argument(value: object, clause: str) -> float:
    """A double, or one of the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (``%f``/``%e`` accept them)."""
    if isinstance(value, float):
        return value
    if isinstance(value, str) and value in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[value]
    raise FormatError(f"{clause} clause can only be used on doubles, was given {_cel_type(value)}")


def _binary(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if not _is_int(value):
        raise FormatError(f"only integers and bools can be formatted as binary, was given {_cel_type(value)}")
    return format(value, "b")


def _hex(value: object, upper: bool) -> str:
    if _is_int(value):
        text = format(value, "x")
    elif isinstance(value, str | bytes):
        text = (value.encode() if isinstance(value, str) else value).hex()
    else:
        raise FormatError("only integers, byte buffers, and strings can be formatted as hex, was given "
                          + _cel_type(value))
    return text.upper() if upper else text


def _octal(value: object) -> str:
    if not _is_int(value):
        raise FormatError(f"octal clause can only be used on integers, was given {_cel_type(value)}")
    return format(value, "o")


_CLAUSES: Final[dict[str, Callable[[object, int | None], str]]] = {
    "s": lambda value, _: _string(value),
    "d": lambda value, _: _decimal(value),
    "f": lambda value, precision: _fixed_en_us(_float_argument(value, "fixed-point"),
                                               _DEFAULT_PRECISION if precision is None else precision),
    "e": lambda value, precision: _scientific_en_us(_float_argument(value, "scientific"), precision),
    "b": lambda value, _: _binary(value),
    "x": lambda value, _: _hex(value, upper=False),
    "X": lambda value, _: _hex(value, upper=True),
    "o": lambda value, _: _octal(value),
}
"""The clause letters (``parseFormattingClause``) and their formatters of (argument, precision)."""


def _precision(text: str, start: int) -> tuple[int, int | None]:
    """``parsePrecision``: the index after ``.digits`` at ``start`` and the number, or ``(start, None)``."""
    if text[start] != ".":
        return start, None
    end = start + 1
    while end < len(text) and "0" <= text[end] <= "9":
        end += 1
    if end >= len(text):
        raise FormatError("could not parse formatting clause: error while parsing precision: could not find end "
                          "of precision specifier")
    if end == start + 1:
        raise FormatError('could not parse formatting clause: error while parsing precision: error while '
                          'converting precision to integer: strconv.Atoi: parsing "": invalid syntax')
    return end, int(text[start + 1:end])


def _pieces(text: str, count: int) -> Iterator[str | tuple[str, int | None]]:
    """``parseFormatString`` over ``text`` with ``count`` arguments: literal text, and ``(letter, precision)`` for
    each clause in turn (the n-th clause takes argument n). :class:`FormatError` with cel-go's message when a
    clause does not parse or has no argument, raised when that clause is reached."""
    i, index = 0, 0
    while i < len(text):
        if text[i] != "%":
            yield text[i]
            i += 1
        elif text[i + 1:i + 2] == "%":
            yield "%"
            i += 2
        else:
            if index >= count:
                raise FormatError(f"index {index} out of range")
            if i + 1 >= len(text):
                raise FormatError("unexpected end of string")
            end, precision = _precision(text, i + 1)
            if text[end] not in _CLAUSES:
                shown = chr(text[end].encode()[0])  # Go reads the clause letter as one byte
                raise FormatError(f'could not parse formatting clause: unrecognized formatting clause "{shown}"')
            yield text[end], precision
            i, index = end + 1, index + 1


def string_format(text: object, arguments: object) -> str:
    """``text.format(arguments)`` (ext/formatting.go): each clause replaced by the next argument, formatted.
    ``TypeError`` (no such overload) unless ``text`` is a string and ``arguments`` a list; :class:`FormatError`
    with cel-go's message for a bad clause, a missing argument or an argument of the wrong type."""
    if not isinstance(text, str) or not isinstance(arguments, list):
        raise no_overload("format", text, arguments)
    out: list[str] = []
    index = 0
    for piece in _pieces(text, len(arguments)):
        if isinstance(piece, str):
            out.append(piece)
            continue
        letter, precision = piece
        try:
            out.append(_CLAUSES[letter](arguments[index], precision))
        except FormatError as exc:
            raise FormatError(f"error during formatting: {exc}") from None
        index += 1
    return "".join(out)


def literal_error(text: str, count: int) -> str | None:
    """Why cel-go's ``stringFormatValidator`` refuses ``"text".format([a, b, …])`` — a literal format string with
    a list literal of ``count`` elements — when the expression is compiled, else None: a clause that does not
    parse, more clauses than arguments, or arguments left over (``too many arguments supplied to string.format
    (expected 1, got 2)``). The arguments' types are not checked here (they are when formatted)."""
    try:
        used = sum(1 for piece in _pieces(text, count) if not isinstance(piece, str))
    except FormatError as exc:
        return str(exc)
    if count > used:
        return f"too many arguments supplied to string.format (expected {used}, got {count})"
    return None
