"""DRA device selectors: CEL expressions evaluated against one device, as Kubernetes evaluates them.

DeviceClasses (``spec.selectors[].cel.expression``) and claim requests (``exactly.selectors``,
``firstAvailable[].selectors``) pick devices with CEL. The allocator asks "does this device
match?" for many (selector, device) pairs, so each expression is compiled once
(:func:`compile_selector`, memoised) and a :class:`Selector` is then evaluated against
:class:`DeviceView` values, each of which converts its data for CEL once.

The environment mirrors ``k8s.io/dynamic-resource-allocation/cel`` (``compile.go``, v1.37) plus the
apiserver's ``library/quantity.go`` and ``library/semverlib.go``:

* ``device.driver`` (string), ``device.allowMultipleAllocations`` (bool);
* ``device.attributes[domain][name]``: int, bool, string or semver, or a list of one of them (the
  alpha list attributes ``ints``/``bools``/``strings``/``versions``, KEP-5491). A qualified name without a
  domain belongs to the driver's domain, so ``productName`` published by ``gpu.nvidia.com`` is
  ``device.attributes["gpu.nvidia.com"].productName``. Looking up a domain the device does not have
  gives an empty map (so ``"pcieRoot" in device.attributes["resource.kubernetes.io"]`` is false), and
  reading a missing attribute is an evaluation error (``no such key``);
* ``device.capacity[domain][name]``: a Quantity;
* ``quantity(s)``, ``isQuantity(s)``; on quantities ``compareTo``, ``isGreaterThan``, ``isLessThan``,
  ``asInteger``, ``isInteger``, ``asApproximateFloat``, ``sign``, ``add``, ``sub`` (int or quantity);
* ``semver(s[, normalize])``, ``isSemver(s[, normalize])``; on versions ``compareTo``,
  ``isGreaterThan``, ``isLessThan``, ``major``, ``minor``, ``patch``; ``==`` ignores build metadata;
* ``cel.bind(name, value, body)``; ``includes`` (a list attribute holds a value, or a scalar equals it);
* the strings extension at Kubernetes' version 2 (``charAt``, ``indexOf``, ``lastIndexOf``, ``join``,
  ``lowerAscii``, ``upperAscii``, ``replace``, ``split``, ``substring``, ``trim``, ``strings.quote``, and
  ``format`` as cel-go's ``ext/formatting.go`` prints for en-US: :mod:`scheduler.dra.cel_string_format`),
  the sets extension (``sets.contains``/``equivalent``/``intersects``) and Kubernetes' list library
  (``isSorted``, ``sum``, ``min``, ``max``, list ``indexOf``/``lastIndexOf``);
* Kubernetes' regex (``find``, ``findAll``), IP, CIDR and URL libraries, cel-go's list extension at version 3
  (``lists.range``, ``slice``, ``flatten``, ``distinct``, ``reverse``, ``sort``, ``sortBy``) and the
  two-variable comprehensions (``all``/``exists``/``existsOne`` with two variables, ``transformList``,
  ``transformMap``, ``transformMapEntry``): :mod:`scheduler.dra.cel_library` and :mod:`scheduler.dra.cel_net`;
* the optional values the library runs natively (``optional.of``/``none``/``ofNonZeroValue``, ``hasValue``,
  ``value``, ``orValue``, ``or``);
* Kubernetes' format library (``format.named``, ``format.dns1123Label()`` and the other named formats,
  ``validate`` giving an optional list of apimachinery's messages): :mod:`scheduler.dra.cel_format`.

Kubernetes v1.37's quantity library has no ``mul``/``div``/``divInt`` (``apiserver/pkg/cel/library/
quantity.go`` declares ``quantity``, ``isQuantity``, ``sign``, ``isGreaterThan``, ``isLessThan``,
``compareTo``, ``asApproximateFloat``, ``asInteger``, ``isInteger``, ``add``, ``sub``; the three are only
proposed, kubernetes/kubernetes#135995): a selector using them is refused, as the API server refuses it.

**Static check** (:func:`_check`): a name the environment does not declare — a function, a variable
other than ``device`` and those the macros bind, a field of ``device`` other than its four — is a
compile error with cel-go's wording, so a claim is refused when read rather than per device.
Functions of Kubernetes' base environment that are not provided (:data:`NOT_PROVIDED`: ``optMap``/
``optFlatMap``) are refused the same way, naming the function. A literal ``find``/``findAll`` pattern Go's
regexp refuses (a lookaround, a backreference) is a compile error too, as Kubernetes compiles such patterns when
it makes the program, and so is a ``"literal".format([list literal])`` whose clauses do not parse or do not
match the number of arguments (cel-go's ``stringFormatValidator``).
A selector whose estimated cost exceeds ``CELSelectorExpressionMaxCost`` is refused too, with the API
server's ``too complex, exceeds cost limit``.

An expression that does not parse raises :class:`SelectorError` from :func:`compile_selector`; one that
fails on a device, or gives something other than a bool, raises it from :meth:`Selector.matches`.
Kubernetes aborts the allocation in both cases instead of skipping the device; the caller names
the class or claim (``class gpu.nvidia.com: selector #0: CEL runtime error: …``).

The library is ``common-expression-language`` (the Rust ``cel`` crate, imported as ``cel``), chosen
over the pure-Python ``cel-python`` on correctness and speed: see ``docs/benchmarks.md``, "CEL
selectors". It has no custom value types and no default-valued maps, so this module:

* passes a Quantity as the one-key map ``{"__quantity__": "<exact decimal>"}`` and a semver as
  ``{"__semver__": "<version without build metadata>"}``. The canonical strings make ``==`` compare
  values (``quantity("1k") == quantity("1000")``), and the functions above are Python callbacks
  that read these maps;
* passes IP addresses, CIDR prefixes and URLs the same way, keyed by Go's canonical text, and named formats
  by their name (:mod:`scheduler.dra.cel_values`);
* rewrites ``device.attributes[d]`` / ``device.capacity[d]`` (and the ``.d`` form) to
  ``(d in device.attributes ? device.attributes[d] : {})``, ``format.uri()`` to
  ``format.named("uri").value()``, ``cel.bind(x, v, e)`` to
  ``[v].map(x, e)[0]``, ``l.sortBy(e, k)`` to ``l.map(e, [e, k])._sort_by_keys()`` and a two-variable
  macro ``r.all(k, v, p)`` to ``r._entries().all(_e, …)`` binding ``k`` and ``v`` to each ``[key, value]``
  entry, before compiling. The helpers the rewritten text calls start with ``_``, which no declared
  function does, so a selector naming one is refused by the static check.

Known differences from Kubernetes: the static check has no types (an attribute is ``dyn`` there too,
but a type mismatch elsewhere, or a non-bool result, is found when evaluated, not when compiled);
the per-expression cost limit is applied to cel-go's estimate when compiled
(:func:`scheduler.dra.cel_cost.limit_error`, the API server's check), not to the actual cost while
evaluating (the library does not count it; kube-scheduler does); the functions of :data:`NOT_PROVIDED`
are refused; the parser refuses the
optional syntax ``.?``, ``[?``, ``[?e]`` and ``{?k: v}``. ``size()`` and ``type()`` of a quantity, semver,
IP, CIDR, URL or format see the map, and the type names ``net.IP`` / ``net.CIDR`` are not declared. A domain map
reached by aliasing ``device.attributes`` itself (``cel.bind(a, device.attributes, a["x"])``) errors on a
missing domain instead of giving an empty map.

This module does not read API objects or pydantic models, and knows nothing of classes, claims,
pools or nodes: the allocator builds :class:`DeviceView` values from ResourceSlice devices.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final, TypeAlias

import cel as _cel
from cel import stdlib as _stdlib

from scheduler.dra import cel_cost, cel_format, cel_library, cel_string_format
from scheduler.dra.cel_library import TWO_VARIABLE_MACROS
from scheduler.dra.cel_values import QUANTITY_KEY as _QUANTITY_KEY
from scheduler.dra.cel_values import SEMVER_KEY as _SEMVER_KEY
from scheduler.dra.cel_values import accepts
from scheduler.dra.cel_values import as_text as _as_text
from scheduler.dra.cel_values import same as _same
from scheduler.dra.cel_values import type_name as _cel_type_name
from scheduler.model.quantity import parse as parse_quantity

# Our callbacks raise on a wrong argument type; the library re-raises that as RuntimeError (which
# becomes a SelectorError carrying the same text) and also logs it at WARNING on logger "cel".
# That would log once per (selector, device) pair, so the duplicate goes no further than ERROR.
logging.getLogger("cel").setLevel(logging.ERROR)

SELECTOR_CACHE_SIZE: Final = 4096
"""Compiled expressions kept by :func:`compile_selector`. A cluster has a few DeviceClasses (≤ 32
selectors each) and claims made from a few templates, so distinct expressions number in the tens;
4,096 bounds memory if claims carry many one-off expressions."""

_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_UINT64_MAX: Final = 2**64 - 1


class SelectorError(Exception):
    """A device selector failed to compile, failed on a device, or did not give a bool.

    ``expression`` is the CEL text as written; ``reason`` starts like Kubernetes' allocator
    messages (``CEL compile error: …``, ``CEL runtime error: …``, ``CEL result of type string
    could not be converted to bool``). Permanent for this expression (compile) or this device
    (evaluation): the claim cannot be allocated until the expression or the device changes.
    """

    def __init__(self, expression: str, reason: str) -> None:
        super().__init__(expression, reason)
        self.expression = expression
        self.reason = reason

    def __str__(self) -> str:
        shown = self.expression if len(self.expression) <= 200 else self.expression[:199] + "…"
        return f"CEL selector {shown!r}: {self.reason}"


# --- semantic versions -------------------------------------------------------------------------

_NUMERIC = re.compile(r"0|[1-9][0-9]*")
_IDENTIFIER = re.compile(r"[0-9A-Za-z-]+")


@dataclass(frozen=True)
class Version:
    """A semantic version (semver 2.0), the value of a DRA ``version`` attribute.

    :meth:`parse` and :meth:`compare` follow github.com/blang/semver/v4 ``Parse`` and ``Compare``,
    which Kubernetes uses for attributes and CEL ``semver()``. ``build`` metadata is kept but does
    not take part in ``==`` or ordering, as in blang's ``EQ``.
    """

    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()
    build: tuple[str, ...] = field(default=(), compare=False)

    @classmethod
    def parse(cls, text: str, *, normalize: bool = False) -> Version:
        """Parse ``MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]`` strictly (no ``v``, no leading zeros).

        ``normalize=True`` first applies Kubernetes' ``normalizeAndParse`` (semverlib.go): drop one
        leading ``v``, strip leading zeros, fill in a missing minor or patch with ``0``.
        Raises ``ValueError`` naming the offending part.
        """
        if normalize:
            text = _normalize_semver(text)
        if not text:
            raise ValueError("version string empty")
        parts = text.split(".", 2)
        if len(parts) != 3:
            raise ValueError(f"{text!r}: no Major.Minor.Patch elements found")
        major, minor, rest = parts
        build: tuple[str, ...] = ()
        prerelease: tuple[str, ...] = ()
        if "+" in rest:
            rest, _, build_text = rest.partition("+")
            build = tuple(build_text.split("."))
            for part in build:
                if not _IDENTIFIER.fullmatch(part):
                    raise ValueError(f"{text!r}: invalid build metadata {part!r}")
        if "-" in rest:
            rest, _, pre_text = rest.partition("-")
            prerelease = tuple(pre_text.split("."))
            for part in prerelease:
                numeric_ok = _NUMERIC.fullmatch(part) is not None and int(part) <= _UINT64_MAX
                if not _IDENTIFIER.fullmatch(part) or (part.isdigit() and not numeric_ok):
                    raise ValueError(f"{text!r}: invalid prerelease identifier {part!r}")
        numbers = []
        for label, number in (("major", major), ("minor", minor), ("patch", rest)):
            if not _NUMERIC.fullmatch(number) or int(number) > _UINT64_MAX:
                raise ValueError(f"{text!r}: invalid {label} number {number!r}")
            numbers.append(int(number))
        return cls(numbers[0], numbers[1], numbers[2], prerelease, build)

    def compare(self, other: Version) -> int:
        """-1, 0 or 1 by semver precedence: numbers, then a release above its prereleases, then
        prerelease identifiers left to right (numeric below alphanumeric, fewer below more)."""
        mine, theirs = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if mine != theirs:
            return 1 if mine > theirs else -1
        left, right = self.prerelease, other.prerelease
        if not left or not right:
            return (not left) - (not right)
        for a, b in zip(left, right, strict=False):
            if a != b:
                if a.isdigit() and b.isdigit():
                    return 1 if int(a) > int(b) else -1
                if a.isdigit() or b.isdigit():
                    return -1 if a.isdigit() else 1
                return 1 if a > b else -1
        return (len(left) > len(right)) - (len(left) < len(right))

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text


def _normalize_semver(text: str) -> str:
    """Kubernetes ``normalizeAndParse`` (apiserver library/semverlib.go), before the strict parse."""
    parts = text.removeprefix("v").split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            part = part.lstrip("0")
            if not part or not part[0].isdigit():
                part = "0" + part
            parts[i] = part
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise ValueError(f"{text!r}: short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


# --- the device a selector sees ----------------------------------------------------------------

AttributeValue: TypeAlias = (bool | int | str | Version | tuple[bool, ...] | tuple[int, ...] | tuple[str, ...]
                             | tuple[Version, ...])
"""One DRA attribute value: ``int`` (int64), ``bool``, ``string`` or ``version``, or a tuple of one of them
for the alpha list forms ``ints`` / ``bools`` / ``strings`` / ``versions`` (KEP-5491)."""


def split_qualified_name(name: str, driver: str) -> tuple[str, str]:
    """``("gpu.nvidia.com", "productName")`` for ``productName`` of driver ``gpu.nvidia.com``;
    a name with a domain (``resource.kubernetes.io/pcieRoot``) is split at its first ``/``.

    Mirrors ``parseQualifiedName`` in dynamic-resource-allocation/cel/compile.go (v1.37).
    """
    domain, sep, rest = name.partition("/")
    return (domain, rest) if sep else (driver, name)


@dataclass(frozen=True)
class DeviceView:
    """What a selector sees of one device: its driver, attributes and capacities by domain.

    ``attributes``: domain → attribute name → value (int64, bool, str or :class:`Version`).
    ``capacity``: domain → capacity name → exact quantity (``Decimal``, e.g. ``81559Mi`` as
    85520809984). Build it with :meth:`build` from a ResourceSlice device's qualified names.
    Treat it as immutable: the CEL form of the data is made on the first evaluation and kept.
    Raises ``TypeError`` or ``ValueError`` for a value outside those types or the int64 range.
    """

    driver: str
    attributes: dict[str, dict[str, AttributeValue]] = field(default_factory=dict)
    capacity: dict[str, dict[str, Decimal]] = field(default_factory=dict)
    allow_multiple_allocations: bool = False

    def __post_init__(self) -> None:
        for domain, values in self.attributes.items():
            for name, value in values.items():
                for item in value if isinstance(value, tuple) else (value,):
                    if isinstance(item, int) and not isinstance(item, bool):
                        if not _INT64_MIN <= item <= _INT64_MAX:
                            raise ValueError(f"attribute {domain}/{name}: {item} is outside int64")
                    elif not isinstance(item, bool | str | Version):
                        raise TypeError(f"attribute {domain}/{name}: {item!r} is not an int, bool, str or Version")
        for domain, quantities in self.capacity.items():
            for name, quantity in quantities.items():
                if not isinstance(quantity, Decimal):
                    raise TypeError(f"capacity {domain}/{name}: {quantity!r} is not a Decimal")

    @classmethod
    def build(
        cls,
        driver: str,
        attributes: Mapping[str, AttributeValue] | None = None,
        capacity: Mapping[str, Decimal] | None = None,
        allow_multiple: bool = False,
    ) -> DeviceView:
        """Group a device's qualified names by domain (:func:`split_qualified_name`), e.g.
        ``{"productName": …, "resource.kubernetes.io/pcieRoot": …}`` of driver ``gpu.nvidia.com``
        → ``{"gpu.nvidia.com": {"productName": …}, "resource.kubernetes.io": {"pcieRoot": …}}``."""
        by_domain: dict[str, dict[str, AttributeValue]] = {}
        for qualified, value in (attributes or {}).items():
            domain, name = split_qualified_name(qualified, driver)
            by_domain.setdefault(domain, {})[name] = value
        capacity_by_domain: dict[str, dict[str, Decimal]] = {}
        for qualified, quantity in (capacity or {}).items():
            domain, name = split_qualified_name(qualified, driver)
            capacity_by_domain.setdefault(domain, {})[name] = quantity
        return cls(driver, by_domain, capacity_by_domain, allow_multiple)

    @functools.cached_property
    def _cel_context(self) -> _cel.Context:
        """The ``device`` variable converted for the library, with the quantity/semver functions.

        Converting costs ~35 µs per device (the library copies every map entry into Rust), so it
        happens once per view; evaluating a compiled selector against it then costs 0.3–6 µs
        (docs/benchmarks.md, "CEL selectors").
        """
        device = {
            "driver": self.driver,
            "attributes": {
                domain: {name: _attribute_to_cel(value) for name, value in values.items()}
                for domain, values in self.attributes.items()
            },
            "capacity": {
                domain: {name: _quantity_to_cel(q) for name, q in quantities.items()}
                for domain, quantities in self.capacity.items()
            },
            "allowMultipleAllocations": self.allow_multiple_allocations,
        }
        return _cel.Context(variables={"device": device}, functions=_CALLBACKS)

    def __getstate__(self) -> dict[str, Any]:
        """Copy and pickle without the converted form (it holds a library object); it is rebuilt."""
        state = dict(self.__dict__)
        state.pop("_cel_context", None)
        return state


# --- compiling and matching --------------------------------------------------------------------

# What the library raises while evaluating: KeyError (no such key), IndexError, TypeError (no such
# overload), ValueError, ArithmeticError (division by zero, overflow) and RuntimeError (undefined
# names, and errors raised by our callbacks).
_EVALUATION_ERRORS: Final = (KeyError, IndexError, TypeError, ValueError, ArithmeticError, RuntimeError)


@dataclass(frozen=True, eq=False)
class Selector:
    """One compiled device selector; get it from :func:`compile_selector`."""

    expression: str
    _program: _cel.Program = field(repr=False)

    def matches(self, device: DeviceView) -> bool:
        """Whether ``device`` satisfies the selector.

        Raises :class:`SelectorError` when evaluation fails (a missing attribute, a type mismatch,
        a bad ``quantity()`` argument, …) or the result is not a bool, like ``DeviceMatches`` in
        dynamic-resource-allocation/cel/compile.go, v1.37.
        """
        try:
            result = self._program.execute(device._cel_context)
        except _EVALUATION_ERRORS as exc:
            raise SelectorError(self.expression, f"CEL runtime error: {_describe(exc)}") from exc
        if isinstance(result, bool):
            return result
        # wording: compile.go DeviceMatches, v1.37
        raise SelectorError(
            self.expression, f"CEL result of type {_cel_type_name(result)} could not be converted to bool"
        )


def compile_selector(expression: str) -> Selector:
    """The compiled form of one CEL selector expression, compiled once per distinct text.

    Raises :class:`SelectorError` (reason ``CEL compile error: …``, with the library's position
    marker) when the expression does not parse, uses an undeclared name, or its estimated cost is over
    the API's limit (``too complex, exceeds cost limit``). Failures are remembered too, so a bad expression
    in a DeviceClass costs one compile, not one per scheduling cycle.
    """
    compiled = _compile(expression)
    if isinstance(compiled, str):
        raise SelectorError(expression, compiled)
    return compiled


@functools.lru_cache(maxsize=SELECTOR_CACHE_SIZE)
def _compile(expression: str) -> Selector | str:
    """A :class:`Selector`, or the reason it cannot be compiled."""
    try:
        program = _cel.compile(expression)
    except (ValueError, RuntimeError) as exc:
        return f"CEL compile error: {exc}"  # wording: structured allocator selectorsMatch, v1.37
    if problem := _check(expression, program) or cel_cost.limit_error(expression):
        return f"CEL compile error: {problem}"
    rewritten = _rewrite(expression)
    if rewritten != expression:
        # cannot fail for text that parsed; if it did, the unrewritten program is kept
        with contextlib.suppress(ValueError, RuntimeError):
            program = _cel.compile(rewritten)
    return Selector(expression, program)


def _describe(exc: Exception) -> str:
    if isinstance(exc, KeyError) and exc.args:
        return f"no such key: {exc.args[0]}"
    return str(exc)


# --- the static check: names the environment declares ---------------------------------------

DEVICE_FIELDS: Final = frozenset({"driver", "attributes", "capacity", "allowMultipleAllocations"})
"""The fields of ``kubernetes.DRADevice`` (compile.go, v1.37, with consumable capacity)."""

_STANDARD_FUNCTIONS: Final = frozenset({
    "size", "contains", "startsWith", "endsWith", "matches", "int", "uint", "double", "string", "bytes", "bool",
    "timestamp", "duration", "dyn", "type", "has", "all", "exists", "exists_one", "map", "filter",
    "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear", "getFullYear", "getHours", "getMilliseconds",
    "getMinutes", "getMonth", "getSeconds",
})
"""CEL's standard functions and macros (the language definition's standard environment)."""

NOT_PROVIDED: Final = frozenset({
    # optional values whose macros the library does not expand (it runs optional.of/none/orValue/value/hasValue)
    "optMap", "optFlatMap",
})
"""Functions of the Kubernetes v1.37 DRA environment (``apiserver/pkg/cel/environment/base.go``) that are not
provided here: a selector using one is refused when compiled, naming it, rather than evaluated differently from
Kubernetes."""

_NAMES: Final = frozenset({"device", "cel", "sets", "strings", "lists", "ip", "optional", "format", "int", "uint",
                           "double", "string", "bytes", "bool", "list", "map", "type", "null_type", "dyn"})
"""Identifiers a selector may use besides the variables its comprehensions bind: the ``device`` variable,
the namespaces of functions it may call, and type names."""

_BINDERS: Final = TWO_VARIABLE_MACROS | {"map", "filter", "bind", "sortBy"}


def _check(expression: str, program: _cel.Program) -> str | None:
    """Why ``expression`` (parsed as ``program``) uses a name the v1.37 DRA environment does not declare, or a
    function we cannot run, else None — what cel-go's checker refuses at compile time (an undeclared
    variable or function, an undefined field of ``device``), found without types: nothing is checked of
    what an attribute holds (its type is ``dyn``), so a type mismatch is still found when evaluated."""
    references = program.references()
    tokens = _tokens(expression)
    bound = _bound_names(tokens)
    for name in references["functions"]:
        if name.startswith("@") or not name.isidentifier():
            continue  # an operator: _+_, _[_], !_, @in, @not_strictly_false
        if name in NOT_PROVIDED:
            return f"function '{name}' of the Kubernetes CEL environment is not supported by gang-scheduler"
        if name not in _PROVIDED:
            return f"undeclared reference to '{name}' (in container '')"  # wording: cel-go checker
    for name in references["variables"]:
        if name not in _NAMES and name not in bound:
            return f"undeclared reference to '{name}' (in container '')"  # wording: cel-go checker
    for i, token in enumerate(tokens):
        if (token.kind == "ident" and token.text == "device" and not _is(tokens, i - 1, len(tokens), ".")
                and _is(tokens, i + 1, len(tokens), ".") and i + 2 < len(tokens)
                and tokens[i + 2].kind == "ident" and tokens[i + 2].text not in DEVICE_FIELDS):
            return f"undefined field '{tokens[i + 2].text}'"  # wording: cel-go checker
    return _literal_regex_error(tokens) or _literal_format_error(tokens)


def _literal_regex_error(tokens: list[_Token]) -> str | None:
    """Why a literal pattern of ``find``/``findAll`` is refused, else None: Kubernetes compiles such a pattern
    when it makes the program (regex.go ``FindRegexOptimization``), so a pattern Go refuses fails the claim at
    admission (``program instantiation failed: error parsing regexp: …``), not per device."""
    hi = len(tokens)
    for i, token in enumerate(tokens):
        if (token.kind == "ident" and token.text in ("find", "findAll") and _is(tokens, i - 1, hi, ".")
                and _is(tokens, i + 1, hi, "(") and i + 2 < hi and tokens[i + 2].kind == "string"
                and (_is(tokens, i + 3, hi, ")") or _is(tokens, i + 3, hi, ","))):
            pattern = _cel.compile(tokens[i + 2].text).execute()  # the literal's value: escapes, raw strings
            if isinstance(pattern, str) and (problem := cel_library.regex_error(pattern)):
                return f"program instantiation failed: {problem}"  # wording: compile.go CompileCELExpression
    return None


def _literal_format_error(tokens: list[_Token]) -> str | None:
    """Why a ``"literal".format([list literal])`` is refused, else None: cel-go's strings extension checks such
    calls when the expression is compiled (ext/formatting.go ``stringFormatValidator``): every clause must parse
    and have an argument, and no argument may be left over."""
    hi = len(tokens)
    for i, token in enumerate(tokens):
        if (token.kind == "string" and _is(tokens, i + 1, hi, ".") and _is(tokens, i + 2, hi, "format")
                and _is(tokens, i + 3, hi, "(") and _is(tokens, i + 4, hi, "[")):
            close = _closing(tokens, i + 4, hi)
            if not _is(tokens, close + 1, hi, ")"):
                continue
            elements = [(lo, end) for lo, end in _split_arguments(tokens, i + 5, close) if end > lo]
            text = _cel.compile(token.text).execute()  # the literal's value: escapes, raw strings
            if isinstance(text, str) and (problem := cel_string_format.literal_error(text, len(elements))):
                return problem
    return None


def _bound_names(tokens: list[_Token]) -> set[str]:
    """Names bound by comprehension macros and ``cel.bind``: ``x`` in ``l.all(x, …)``, ``k``/``v`` in
    ``m.all(k, v, …)``, ``a`` in ``cel.bind(a, …)``."""
    bound: set[str] = set()
    hi = len(tokens)
    for i, token in enumerate(tokens):
        if token.kind != "ident" or token.text not in _BINDERS or not _is(tokens, i - 1, hi, "."):
            continue
        j = i + 1
        while _is(tokens, j, hi, "(") or _is(tokens, j, hi, ","):
            if j + 2 < hi and tokens[j + 1].kind == "ident" and _is(tokens, j + 2, hi, ","):
                bound.add(tokens[j + 1].text)
                j += 2
            else:
                break
    return bound


# --- values and functions the Kubernetes CEL libraries add -------------------------------------


def _attribute_to_cel(value: AttributeValue) -> object:
    if isinstance(value, tuple):  # a list attribute: a CEL list of its values
        return [_attribute_to_cel(v) for v in value]
    return {_SEMVER_KEY: _semver_key(value)} if isinstance(value, Version) else value


def _quantity_to_cel(value: Decimal) -> dict[str, str]:
    return {_QUANTITY_KEY: _canonical(value)}


def _canonical(value: Decimal) -> str:
    """One text per value: ``"85520809984"``, ``"0.1"`` (so equal quantities give equal maps)."""
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")


def _semver_key(version: Version) -> str:
    return str(Version(version.major, version.minor, version.patch, version.prerelease))


def _is_quantity(value: object) -> bool:
    return isinstance(value, dict) and len(value) == 1 and _QUANTITY_KEY in value


def _is_semver(value: object) -> bool:
    return isinstance(value, dict) and len(value) == 1 and _SEMVER_KEY in value


@functools.lru_cache(maxsize=1024)
def _decimal(canonical: str) -> Decimal:
    return Decimal(canonical)


@functools.lru_cache(maxsize=1024)
def _version(canonical: str) -> Version:
    return Version.parse(canonical)


def _as_quantity(value: object, function: str) -> Decimal:
    if isinstance(value, dict) and _is_quantity(value):
        return _decimal(value[_QUANTITY_KEY])
    raise TypeError(f"no such overload: {function}({_cel_type_name(value)})")


def _as_version(value: object, function: str) -> Version:
    if isinstance(value, dict) and _is_semver(value):
        return _version(value[_SEMVER_KEY])
    raise TypeError(f"no such overload: {function}({_cel_type_name(value)})")


@functools.lru_cache(maxsize=1024)
def _canonical_quantity(text: str) -> str:
    """Canonical form of a ``quantity("…")`` argument; ``ValueError`` where ``ParseQuantity`` fails."""
    if text != text.strip():  # parse() trims like UnmarshalJSON; ParseQuantity does not
        raise ValueError(f"quantities must match the regular expression: {text!r}")
    return _canonical(parse_quantity(text))


def _quantity(text: object) -> dict[str, str]:
    return {_QUANTITY_KEY: _canonical_quantity(_as_text(text, "quantity"))}


def _is_quantity_text(text: object) -> bool:
    return accepts(_canonical_quantity, text, "isQuantity")


def _semver(text: object, normalize: object = False) -> dict[str, str]:
    if not isinstance(normalize, bool):
        raise TypeError(f"no such overload: semver(string, {_cel_type_name(normalize)})")
    return {_SEMVER_KEY: _semver_key(Version.parse(_as_text(text, "semver"), normalize=normalize))}


def _is_semver_text(text: object, normalize: object = False) -> bool:
    return accepts(functools.partial(_semver, normalize=normalize), text, "isSemver")


def _compare_to(left: object, right: object, function: str = "compareTo") -> int:
    if _is_quantity(left) and _is_quantity(right):
        a, b = _as_quantity(left, function), _as_quantity(right, function)
        return (a > b) - (a < b)
    if _is_semver(left) and _is_semver(right):
        return _as_version(left, function).compare(_as_version(right, function))
    raise TypeError(f"no such overload: {_cel_type_name(left)}.{function}({_cel_type_name(right)})")


def _is_greater_than(left: object, right: object) -> bool:
    return _compare_to(left, right, "isGreaterThan") == 1


def _is_less_than(left: object, right: object) -> bool:
    return _compare_to(left, right, "isLessThan") == -1


def _sign(value: object) -> int:
    q = _as_quantity(value, "sign")
    return (q > 0) - (q < 0)


def _is_integer(value: object) -> bool:
    q = _as_quantity(value, "isInteger")
    return q == q.to_integral_value() and _INT64_MIN <= q <= _INT64_MAX


def _as_integer(value: object) -> int:
    if not _is_integer(value):
        raise ValueError("cannot convert value to integer")  # wording: library/quantity.go, v1.37
    return int(_as_quantity(value, "asInteger"))


def _as_approximate_float(value: object) -> float:
    return float(_as_quantity(value, "asApproximateFloat"))


def _operand(value: object, function: str) -> Decimal:
    if isinstance(value, int) and not isinstance(value, bool):
        return Decimal(value)
    return _as_quantity(value, function)


def _add(left: object, right: object) -> dict[str, str]:
    return _quantity_to_cel(_as_quantity(left, "add") + _operand(right, "add"))


def _sub(left: object, right: object) -> dict[str, str]:
    return _quantity_to_cel(_as_quantity(left, "sub") - _operand(right, "sub"))


def _major(value: object) -> int:
    return _as_version(value, "major").major


def _minor(value: object) -> int:
    return _as_version(value, "minor").minor


def _patch(value: object) -> int:
    return _as_version(value, "patch").patch


MAX_ATTRIBUTE_VALUES: Final = 64
"""``ResourceSliceMaxAttributeValuesPerDevice`` of resource.k8s.io/v1: ``includes`` refuses a longer list
(compile.go ``includesFunc``, v1.37)."""


def _includes(target: object, value: object) -> bool:
    """``<attribute>.includes(<value>)``: whether a list attribute holds ``value``, or a scalar one equals it
    (compile.go ``includesFunc``, v1.37, gate ``DRAListTypeAttributes``)."""
    if isinstance(target, list):
        if len(target) > MAX_ATTRIBUTE_VALUES:  # wording: compile.go includesFunc, v1.37
            raise ValueError(f"'includes' function cannot be applied to lists longer than {MAX_ATTRIBUTE_VALUES} "
                             "values")
        return any(_same(item, value) for item in target)
    return _same(target, value)


def _index_of(target: object, value: object, *offset: object) -> int:
    """``indexOf`` of the strings extension (a string and an offset) and of Kubernetes' list library."""
    if isinstance(target, list) and not offset:
        return next((i for i, item in enumerate(target) if _same(item, value)), -1)
    return int(_stdlib.index_of(_as_text(target, "indexOf"), _as_text(value, "indexOf"), *offset))  # type: ignore[arg-type]


def _last_index_of(target: object, value: object, *offset: object) -> int:
    """``lastIndexOf`` of the strings extension and of Kubernetes' list library."""
    if isinstance(target, list) and not offset:
        return next((i for i in range(len(target) - 1, -1, -1) if _same(target[i], value)), -1)
    return int(_stdlib.last_index_of(_as_text(target, "lastIndexOf"), _as_text(value, "lastIndexOf"),
                                     *offset))  # type: ignore[arg-type]


def _is_sorted(items: object) -> bool:
    """``isSorted`` of Kubernetes' list library (library/lists.go)."""
    if not isinstance(items, list):
        raise TypeError(f"no such overload: isSorted({_cel_type_name(items)})")
    return all(not items[i + 1] < items[i] for i in range(len(items) - 1))


_FUNCTIONS: Final[dict[str, Callable[..., Any]]] = {
    # Kubernetes' DRA environment (compile.go, v1.37)
    "includes": _includes,
    # the strings extension at Kubernetes' version 2 (cel-go ext.Strings, base environment since 1.29)
    "charAt": _stdlib.char_at,
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "join": _stdlib.join,
    "lowerAscii": _stdlib.lower_ascii,
    "upperAscii": _stdlib.upper_ascii,
    "replace": _stdlib.replace,
    "split": _stdlib.split,
    "substring": _stdlib.substring,
    "trim": _stdlib.trim,
    "strings.quote": _stdlib.quote,
    # Kubernetes' list library (library/lists.go)
    "isSorted": _is_sorted,
    "sum": _stdlib.sum_,
    "min": _stdlib.min_,
    "max": _stdlib.max_,
    # the sets extension (cel-go ext.Sets, base environment since 1.29)
    "sets.contains": _stdlib.sets_contains,
    "sets.equivalent": _stdlib.sets_equivalent,
    "sets.intersects": _stdlib.sets_intersects,
    # Kubernetes' quantity and semver libraries
    "quantity": _quantity,
    "isQuantity": _is_quantity_text,
    "semver": _semver,
    "isSemver": _is_semver_text,
    "compareTo": _compare_to,
    "isGreaterThan": _is_greater_than,
    "isLessThan": _is_less_than,
    "sign": _sign,
    "isInteger": _is_integer,
    "asInteger": _as_integer,
    "asApproximateFloat": _as_approximate_float,
    "add": _add,
    "sub": _sub,
    "major": _major,
    "minor": _minor,
    "patch": _patch,
    # Kubernetes' regex, IP and CIDR libraries
    **cel_library.FUNCTIONS,
}
"""The functions of the Kubernetes DRA CEL environment the library does not have natively, as Python
callbacks: ``includes``, the strings and sets extensions and the list library (the library's own
``cel.stdlib`` implementations where it has them), the quantity and semver libraries, and the regex, IP and
CIDR libraries of :mod:`scheduler.dra.cel_library`. The library calls ``x.f(a)`` as ``f(x, a)``."""

OPTIONAL_FUNCTIONS: Final = frozenset({"of", "none", "ofNonZeroValue", "hasValue", "value", "orValue", "or"})
"""The optional-value functions the library runs natively (cel-go ``cel.OptionalTypes``, in Kubernetes' base
environment since 1.28); its parser refuses the ``.?``, ``[?``, ``[?e]`` and ``{?k: v}`` syntax."""

_CALLBACKS: Final = {**_FUNCTIONS, **cel_library.HELPERS}
""":data:`_FUNCTIONS` and the helpers only rewritten text calls."""

_PROVIDED: Final = (_STANDARD_FUNCTIONS | TWO_VARIABLE_MACROS | OPTIONAL_FUNCTIONS | {"bind", "sortBy"}
                    | {name.rpartition(".")[2] for name in _FUNCTIONS} | set(cel_format.FORMATS))
"""Every function a selector may call here: CEL's own, the two-variable macros, the optional-value functions,
``cel.bind``, those of :data:`_FUNCTIONS` and the named formats (``format.dns1123Label()``, rewritten)."""


# --- source rewriting: empty-map default for domains, cel.bind ---------------------------------

_TOKEN: Final = cel_cost.TOKEN
_DOMAIN_MAPS: Final = frozenset({"attributes", "capacity"})


@dataclass(frozen=True)
class _Token:
    kind: str  # space is folded into ``lead``; otherwise string | number | ident | punct
    text: str
    lead: str  # the whitespace before the token (comments become one space)


class _RewriteError(Exception):
    """The token stream does not have the shape the rewrite expects (never for parsed text)."""


def _rewrite(expression: str) -> str:
    """``expression`` with domain lookups defaulting to ``{}`` and ``cel.bind`` expanded.

    Only called on text the library has parsed. Returns the text unchanged if it holds neither
    construct or the token stream is not understood.
    """
    tokens = _tokens(expression)
    try:
        return _emit(tokens, 0, len(tokens))
    except _RewriteError:
        return expression


def _tokens(expression: str) -> list[_Token]:
    """The tokens of ``expression``, each with the whitespace before it (comments become one space)."""
    tokens: list[_Token] = []
    lead: list[str] = []
    for match in _TOKEN.finditer(expression):
        kind, text = match.lastgroup or "punct", match.group()
        if kind == "space":
            lead.append(" " if text.startswith("//") else text)
        else:
            tokens.append(_Token(kind, text, "".join(lead)))
            lead = []
    return tokens


def _is(tokens: list[_Token], i: int, hi: int, text: str) -> bool:
    return 0 <= i < hi and tokens[i].text == text and tokens[i].kind != "string"


def _emit(tokens: list[_Token], lo: int, hi: int) -> str:
    out: list[str] = []
    i = lo
    while i < hi:
        token = tokens[i]
        after_dot = i > 0 and _is(tokens, i - 1, hi, ".")
        starts_member = token.kind == "ident" and not after_dot and _is(tokens, i + 1, hi, ".")
        if starts_member and token.text == "device" and i + 3 < hi and tokens[i + 2].text in _DOMAIN_MAPS:
            base = f"device.{tokens[i + 2].text}"
            if _is(tokens, i + 3, hi, "["):
                close = _closing(tokens, i + 3, hi)
                key = _emit(tokens, i + 4, close)
                out.append(f"{token.lead}(({key}) in {base} ? {base}[{key}] : {{}})")
                i = close + 1
                continue
            in_has = i >= 2 and _is(tokens, i - 1, hi, "(") and _is(tokens, i - 2, hi, "has")
            is_field = _is(tokens, i + 3, hi, ".") and i + 4 < hi and tokens[i + 4].kind == "ident"
            is_call = _is(tokens, i + 5, hi, "(")
            if is_field and not is_call and not (in_has and _is(tokens, i + 5, hi, ")")):
                key = f'"{tokens[i + 4].text}"'
                out.append(f"{token.lead}({key} in {base} ? {base}[{key}] : {{}})")
                i += 5
                continue
        if starts_member and token.text == "cel" and _is(tokens, i + 2, hi, "bind") and _is(tokens, i + 3, hi, "("):
            close = _closing(tokens, i + 3, hi)
            arguments = _split_arguments(tokens, i + 4, close)
            if len(arguments) == 3 and arguments[0][1] - arguments[0][0] == 1:
                name = tokens[arguments[0][0]].text
                value, body = _emit(tokens, *arguments[1]), _emit(tokens, *arguments[2])
                out.append(f"{token.lead}[{value}].map({name}, {body})[0]")
                i = close + 1
                continue
        if (starts_member and token.text == "format" and i + 4 < hi and tokens[i + 2].text in cel_format.FORMATS
                and _is(tokens, i + 3, hi, "(") and _is(tokens, i + 4, hi, ")")):
            out.append(f'{token.lead}format.named("{tokens[i + 2].text}").value()')  # the same value (format.go)
            i += 5
            continue
        if after_dot and token.text == "sortBy" and token.kind == "ident" and _is(tokens, i + 1, hi, "("):
            close = _closing(tokens, i + 1, hi)
            arguments = _split_arguments(tokens, i + 2, close)
            first = arguments[0]
            if len(arguments) == 2 and first[1] - first[0] == 1 and tokens[first[0]].kind == "ident":
                name, key = tokens[arguments[0][0]].text, _emit(tokens, *arguments[1])
                out.append(f"{token.lead}map({name}, [{name}, {key}])._sort_by_keys()")  # ext/lists.go sortByMacro
                i = close + 1
                continue
        if after_dot and token.kind == "ident" and token.text in TWO_VARIABLE_MACROS and _is(tokens, i + 1, hi, "("):
            close = _closing(tokens, i + 1, hi)
            arguments = _split_arguments(tokens, i + 2, close)
            if _two_variable_form(token.text, tokens, arguments):
                names = (tokens[arguments[0][0]].text, tokens[arguments[1][0]].text)
                parts = [_emit(tokens, *argument) for argument in arguments[2:]]
                out.append(token.lead + _two_variable(token.text, names, parts))
                i = close + 1
                continue
        out.append(token.lead + token.text)
        i += 1
    return "".join(out)


def _two_variable_form(macro: str, tokens: list[_Token], arguments: list[tuple[int, int]]) -> bool:
    """Whether ``arguments`` are a two-variable call of ``macro``: two names, then one expression (two, a filter
    and a transform, for the ``transform…`` macros)."""
    count = len(arguments)
    if count != 3 and not (count == 4 and macro.startswith("transform")):
        return False
    return all(hi - lo == 1 and tokens[lo].kind == "ident" for lo, hi in arguments[:2])


def _two_variable(macro: str, names: tuple[str, str], parts: list[str]) -> str:
    """The text replacing ``.macro(a, b, …)`` after its receiver: one-variable macros over ``_entries()``, the
    receiver's ``[key or index, value]`` pairs, binding ``a`` and ``b`` like ``cel.bind`` (cel-go
    ``ext/comprehensions.go``: the same accumulation, one step per entry)."""
    first, second = names

    def bound(body: str) -> str:
        return f"[_e[0]].map({first}, [_e[1]].map({second}, {body})[0])[0]"

    if macro in ("all", "exists"):
        return f"_entries().{macro}(_e, {bound(parts[0])})"
    if macro in ("existsOne", "exists_one"):
        return f"_entries().exists_one(_e, {bound(parts[0])})"
    kept = f"filter(_e, {bound(parts[0])})." if len(parts) == 2 else ""
    if macro == "transformList":
        return f"_entries().{kept}map(_e, {bound(parts[-1])})"
    if macro == "transformMap":
        return f"_entries().{kept}map(_e, [_e[0], {bound(parts[-1])}])._to_map()"
    return f"_entries().{kept}map(_e, {bound(parts[-1])})._merge_maps()"


def _closing(tokens: list[_Token], start: int, hi: int) -> int:
    """Index of the bracket closing the one at ``start``."""
    depth = 0
    for j in range(start, hi):
        token = tokens[j]
        if token.kind == "punct" and token.text in "([{":
            depth += 1
        elif token.kind == "punct" and token.text in ")]}":
            depth -= 1
            if depth == 0:
                return j
    raise _RewriteError(start)


def _split_arguments(tokens: list[_Token], lo: int, hi: int) -> list[tuple[int, int]]:
    """Token ranges of the comma-separated arguments between ``lo`` and ``hi``."""
    ranges: list[tuple[int, int]] = []
    depth, start = 0, lo
    for j in range(lo, hi):
        token = tokens[j]
        if token.kind != "punct":
            continue
        if token.text in "([{":
            depth += 1
        elif token.text in ")]}":
            depth -= 1
        elif token.text == "," and depth == 0:
            ranges.append((start, j))
            start = j + 1
    ranges.append((start, hi))
    return ranges
