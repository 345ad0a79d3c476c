"""The static cost estimate of a DRA device selector, as Kubernetes computes it to refuse a selector.

The API server refuses a DeviceClass, ResourceClaim or ResourceClaimTemplate whose CEL selector's
*estimated* worst-case cost exceeds ``CELSelectorExpressionMaxCost`` (1,000,000) of resource.k8s.io:
``validateCELSelector`` in ``pkg/apis/resource/validation/validation.go`` (v1.37) adds
``field.Forbidden(…expression, "too complex, exceeds cost limit")``. The estimate is cel-go's
``checker.Cost`` (``checker/cost.go``) over the type-checked AST, with Kubernetes' function costs
(``apiserver/pkg/cel/library/cost.go``, ``CostEstimator.EstimateCallCost``), cel-go's sets extension
(``ext/sets.go``, ``estimateSetsCost``), its list extension at version 3 (``ext/lists.go``, ``estimateList…``)
and the sizes DRA declares for the ``device`` variable
(``dynamic-resource-allocation/cel/compile.go``, ``sizeEstimator``): ≤ 32 domains and ≤ 32 names per
domain in ``attributes`` and ``capacity``, domains ≤ 63 characters, names ≤ 32, the driver ≤ 63, an
attribute value ≤ 64 (a string, or a list of up to 48 values), ``allowMultipleAllocations`` 1.

:func:`estimate_cost` parses the expression (:func:`parse`, a recursive-descent parser of CEL's grammar
that expands macros the way cel-go's parser does: ``all``/``exists``/``exists_one``/``map``/``filter``,
their two-variable forms, ``transformList``/``transformMap``/``transformMapEntry``, ``sortBy``, ``has`` and
``cel.bind``) and walks it with cel-go's rules: 1 per identifier
and per field selected from a map or object, 0 per literal, 10 per list and 30 per map built, a call 1
plus its arguments unless the function has a size-dependent cost, ``&&``/``||``/``?:`` the cost of
their operands only, a comprehension its range's size times the cost of one step. Types are inferred
as far as the costs depend on them (map or object vs ``dyn`` for a select, list vs map for ``in``,
indexing and iteration, string vs number for comparisons and ``+``); where cel-go's checker would
resolve several overloads for a ``dyn`` argument, the estimate is the union of theirs, as cel-go's.

Why our own parser: the ``cel`` library (Rust) exposes no syntax tree, only ``references()``; the one
Python parser that gives one, cel-python's, is a Lark grammar whose package pulls in google-re2,
pendulum and jmespath as run-time dependencies and whose parse tree keeps CEL's grammar levels
(``conditionalor``, ``member_dot_arg``, …) with macros unexpanded, so it needs a tree walk of its own
as long as this parser to reach cel-go's AST. The parser only runs on text the library has already
parsed, so it does not need to report syntax errors well (:class:`CostParseError`).

Known differences from Kubernetes' estimate: protobuf message construction with a dotted type name
(``google.protobuf.Int64Value{value: 1}``) and the optional syntax (``?.``, ``[?``) do not parse, so
:func:`limit_error` refuses them (``cost estimation failed``); ``validate`` of the format library and
the ``check`` authorizer functions are not costed (not in the DRA environment). A function this module
does not know costs like an unknown O(1) function (1 plus its arguments). Where Kubernetes releases
priced things differently, this follows v1.37's ``library/cost.go``: equality of two quantities or
versions costs 1, and the parsing functions (``quantity``, ``semver``, ``ip``, ``cidr``, …) cost their
argument's length × 0.1, as ``cost_test.go`` pins them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Final, TypeAlias

COST_LIMIT: Final = 1_000_000
"""``CELSelectorExpressionMaxCost`` of resource.k8s.io/v1 (``k8s.io/api/resource/v1/types.go``)."""

LIMIT_MESSAGE: Final = "too complex, exceeds cost limit"
"""The API server's reason (validation.go ``validateCELSelector``, v1.37), after ``Forbidden:``."""

_U64: Final = 2**64 - 1

Estimate: TypeAlias = tuple[int, int]
"""``(min, max)`` of a cost or a size, saturating at 2**64-1 as cel-go's ``CostEstimate``."""

_UNKNOWN: Final[Estimate] = (0, _U64)
_ONE: Final[Estimate] = (1, 1)
_ZERO: Final[Estimate] = (0, 0)

# cel-go common/cost.go
_SELECT_AND_IDENT: Final = 1
_LIST_CREATE: Final = 10
_MAP_CREATE: Final = 30
_STRUCT_CREATE: Final = 40
_STRING_TRAVERSAL: Final = 0.1
_REGEX_LENGTH: Final = 0.25

# resource.k8s.io/v1 limits the DRA size estimator uses (compile.go, types.go)
_MAX_ATTRIBUTES: Final = 32  # ResourceSliceMaxAttributesAndCapacitiesPerDevice
_MAX_DOMAIN: Final = 63  # DeviceMaxDomainLength
_MAX_ID: Final = 32  # DeviceMaxIDLength
_MAX_DRIVER: Final = 63  # DriverNameMaxLength
_MAX_ATTRIBUTE_VALUE: Final = 64  # max(DeviceAttributeMaxValueLength 64, ResourceSliceMaxAttributeValuesPerDevice 48)
_INCLUDES_COST: Final = 48  # ResourceSliceMaxAttributeValuesPerDevice: "cost of includes is max list length"


def _add(a: Estimate, b: Estimate) -> Estimate:
    low, high = a[0] + b[0], a[1] + b[1]
    return (low if low < _U64 else _U64), (high if high < _U64 else _U64)


def _mul(a: Estimate, b: Estimate) -> Estimate:
    low, high = a[0] * b[0], a[1] * b[1]
    return (low if low < _U64 else _U64), (high if high < _U64 else _U64)


def _factor(a: Estimate, factor: float) -> Estimate:
    """cel-go ``MultiplyByCostFactor``: each bound times ``factor``, rounded up, saturating."""
    return _times(a[0], factor), _times(a[1], factor)


def _times(x: int, factor: float) -> int:
    product = math.ceil(float(x) * factor)
    return _U64 if product >= 2.0**64 else product


def _union(a: Estimate, b: Estimate) -> Estimate:
    return min(a[0], b[0]), max(a[1], b[1])


# --- the syntax tree -----------------------------------------------------------------------------


@dataclass(eq=False, slots=True)
class Literal:
    kind: str  # bool | int | uint | double | string | bytes | null
    value: object


@dataclass(eq=False, slots=True)
class Ident:
    name: str


@dataclass(eq=False, slots=True)
class Select:
    operand: Expr
    field: str
    test_only: bool = False  # has(operand.field)


@dataclass(eq=False, slots=True)
class Call:
    function: str  # "_&&_", "size", "sets.contains", …
    target: Expr | None
    args: list[Expr]


@dataclass(eq=False, slots=True)
class ListExpr:
    elements: list[Expr]


@dataclass(eq=False, slots=True)
class MapExpr:
    entries: list[tuple[Expr, Expr]]


@dataclass(eq=False, slots=True)
class StructExpr:
    name: str
    values: list[Expr]


@dataclass(eq=False, slots=True)
class Comprehension:
    iter_var: str
    iter_var2: str | None
    iter_range: Expr
    accu_var: str
    accu_init: Expr
    loop_condition: Expr
    loop_step: Expr
    result: Expr


Expr: TypeAlias = Literal | Ident | Select | Call | ListExpr | MapExpr | StructExpr | Comprehension
"""A node of cel-go's AST (``common/ast``), macros expanded."""



# --- parsing -------------------------------------------------------------------------------------


class CostParseError(ValueError):
    """The text is not CEL this parser understands (only for text the library refused too)."""


TOKEN: Final = re.compile(
    "|".join(
        (
            r"(?P<space>\s+|//[^\n]*)",
            # raw strings first (no escapes), then ordinary strings; b-prefixes are bytes
            r"(?P<string>(?:[bB]?[rR]|[rR][bB])(?:'''.*?'''|\"\"\".*?\"\"\"|'[^'\n]*'|\"[^\"\n]*\")"
            r"|[bB]?(?:'''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\"|'(?:\\.|[^'\\\n])*'|\"(?:\\.|[^\"\\\n])*\"))",
            r"(?P<number>0[xX][0-9a-fA-F]+[uU]?|[0-9]*\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+(?:[eE][+-]?[0-9]+)?[uU]?)",
            r"(?P<ident>[A-Za-z_][A-Za-z0-9_]*)",
            r"(?P<punct>&&|\|\||[=!<>]=|.)",
        )
    ),
    re.DOTALL,
)
"""CEL's tokens (cel-go ``parser/gen/CEL.g4``): space and comments, string and bytes literals (raw ones
without escapes), numbers, identifiers, operators; also the tokenizer of ``scheduler.dra.cel``'s rewrite."""

_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-3][0-7]{2}|.)", re.DOTALL)
_SIMPLE_ESCAPES: Final = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}

_Tok: TypeAlias = tuple[str, str, object]
"""``(kind, text, value)``: kind ``string`` (text ``string``/``bytes``, value the decoded size),
``number``, ``ident``, ``op`` or ``end``."""


def _literal_size(body: str, raw: bool, is_bytes: bool) -> int:
    """The size of a literal's value (cel-go ``computeExprSize``): code points of a string, bytes of a
    bytes literal, where ``\\xHH`` and octal escapes are one byte each."""

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if len(code) > 1:
            if is_bytes and code[0] not in "uU":
                return "\0"
            return chr(int(code[1:], 16) if code[0] in "xuU" else int(code, 8))
        return _SIMPLE_ESCAPES.get(code, code)

    value = body if raw or "\\" not in body else _ESCAPE.sub(one, body)
    return len(value.encode("utf-8", "surrogatepass")) if is_bytes else len(value)


def _scan(text: str) -> list[_Tok]:
    tokens: list[_Tok] = []
    for _, string, number, ident, punct in TOKEN.findall(text):
        if ident:
            tokens.append(("ident", ident, None))
        elif punct:
            tokens.append(("op", punct, None))
        elif number:
            tokens.append(("number", number, None))
        elif string:
            quote = len(string) - len(string.lstrip("bBrR"))
            prefix, rest = string[:quote].lower(), string[quote:]
            width = 3 if rest[:3] in ("'''", '"""') and len(rest) >= 6 else 1
            size = _literal_size(rest[width:-width], "r" in prefix, "b" in prefix)
            tokens.append(("string", "bytes" if "b" in prefix else "string", size))
    tokens.append(("end", "", None))
    return tokens


_BINARY: Final[dict[str, tuple[int, str]]] = {
    "||": (1, "_||_"), "&&": (2, "_&&_"),
    **{op: (3, f"_{op}_") for op in ("<", "<=", ">", ">=", "==", "!=")}, "in": (3, "@in"),
    "+": (4, "_+_"), "-": (4, "_-_"), "*": (5, "_*_"), "/": (5, "_/_"), "%": (5, "_%_"),
}
"""Binary operators by precedence (CEL.g4: ``||`` < ``&&`` < relations < ``+ -`` < ``* / %``), all
left-associative, with cel-go's function names."""
_NAMESPACES: Final = frozenset({"cel", "sets", "strings", "math", "base64", "format", "ip", "lists", "optional"})
_ACCUMULATOR: Final = "@result"


def parse(text: str) -> Expr:
    """cel-go's AST of ``text``, macros expanded as cel-go's parser expands them (``parser/macro.go``).

    Raises :class:`CostParseError` for text outside CEL's grammar.
    """
    parser = _Parser(_scan(text))
    expr = parser.expr()
    if parser.peek()[0] != "end":
        raise CostParseError(f"unexpected {parser.peek()[1]!r}")
    return expr


class _Parser:
    def __init__(self, tokens: list[_Tok]) -> None:
        self.tokens = tokens
        self.position = 0

    def peek(self) -> _Tok:
        return self.tokens[self.position]

    def take(self) -> _Tok:
        token = self.tokens[self.position]
        self.position += 1
        return token

    def accept(self, text: str) -> bool:
        kind, token, _ = self.tokens[self.position]
        if token == text and kind != "string":
            self.position += 1
            return True
        return False

    def expect(self, text: str) -> None:
        if not self.accept(text):
            raise CostParseError(f"expected {text!r}, got {self.peek()[1]!r}")

    def expr(self) -> Expr:
        condition = self.binary(1)
        if self.accept("?"):
            if_true = self.binary(1)
            self.expect(":")
            return Call("_?_:_", None, [condition, if_true, self.expr()])
        return condition

    def binary(self, lowest: int) -> Expr:
        """Precedence climbing over :data:`_BINARY`, operators of ``lowest`` precedence and above."""
        left = self.unary()
        while True:
            kind, token, _ = self.tokens[self.position]
            operator = _BINARY.get(token) if kind in ("op", "ident") else None
            if operator is None or operator[0] < lowest:
                return left
            self.position += 1
            left = Call(operator[1], None, [left, self.binary(operator[0] + 1)])

    def unary(self) -> Expr:
        for operator, function in (("!", "!_"), ("-", "-_")):
            count = 0
            while self.accept(operator):
                count += 1
            if count:
                operand = self.member()
                if count % 2 == 0:  # cel-go folds an even number of ! or -
                    return operand
                if function == "-_" and isinstance(operand, Literal) and operand.kind in ("int", "double"):
                    return Literal(operand.kind, -operand.value)  # type: ignore[operator]  # a negative literal
                return Call(function, None, [operand])
        return self.member()

    def member(self) -> Expr:
        expr = self.primary()
        while True:
            if self.accept("."):
                kind, name, _ = self.take()
                if kind != "ident":
                    raise CostParseError(f"expected a field name, got {name!r}")
                expr = self.member_call(expr, name, self.arguments(")")) if self.accept("(") else Select(expr, name)
            elif self.accept("["):
                index = self.expr()
                self.expect("]")
                expr = Call("_[_]", None, [expr, index])
            else:
                return expr

    def arguments(self, closing: str) -> list[Expr]:
        args: list[Expr] = []
        while not self.accept(closing):
            args.append(self.expr())
            if not self.accept(","):
                self.expect(closing)
                break
        return args

    def member_call(self, target: Expr, name: str, args: list[Expr]) -> Expr:
        if isinstance(target, Ident) and target.name in _NAMESPACES:
            if target.name == "cel" and name == "bind" and len(args) == 3 and isinstance(args[0], Ident):
                # ext.Bindings: cel.bind(v, init, body), a comprehension over [] that binds v
                return Comprehension("#unused", None, ListExpr([]), args[0].name, args[1],
                                     Literal("bool", False), Ident(args[0].name), args[2])
            return Call(f"{target.name}.{name}", None, args)
        if expanded := _expand_macro(target, name, args):
            return expanded
        return Call(name, target, args)

    def primary(self) -> Expr:
        kind, token, value = self.take()
        if kind == "string":
            return Literal(token, value)
        if kind == "number":
            return _number(token)
        if kind == "ident":
            return self.identifier(token)
        if kind == "op" and token == ".":  # a leading dot: the root container
            return self.identifier(self.take()[1])
        if kind == "op" and token == "(":
            expr = self.expr()
            self.expect(")")
            return expr
        if kind == "op" and token == "[":
            return ListExpr(self.arguments("]"))
        if kind == "op" and token == "{":
            entries: list[tuple[Expr, Expr]] = []
            while not self.accept("}"):
                key = self.expr()
                self.expect(":")
                entries.append((key, self.expr()))
                if not self.accept(","):
                    self.expect("}")
                    break
            return MapExpr(entries)
        raise CostParseError(f"unexpected {token!r}")

    def identifier(self, name: str) -> Expr:
        if name in ("true", "false"):
            return Literal("bool", name == "true")
        if name == "null":
            return Literal("null", None)
        if self.accept("("):
            args = self.arguments(")")
            if name == "has" and len(args) == 1 and isinstance(args[0], Select):
                return Select(args[0].operand, args[0].field, test_only=True)
            return Call(name, None, args)
        if self.peek()[1] == "{" and name[:1].isupper():  # a message: Name{field: value, …}
            self.take()
            values: list[Expr] = []
            while not self.accept("}"):
                self.take()
                self.expect(":")
                values.append(self.expr())
                if not self.accept(","):
                    self.expect("}")
                    break
            return StructExpr(name, values)
        return Ident(name)


def _number(text: str) -> Literal:
    unsigned = text[-1] in "uU"
    digits = text.rstrip("uU")
    if digits[:2].lower() == "0x":
        return Literal("uint" if unsigned else "int", int(digits, 16))
    if not unsigned and any(c in digits for c in ".eE"):
        return Literal("double", float(digits))
    return Literal("uint" if unsigned else "int", int(digits))


def _expand_macro(target: Expr, name: str, args: list[Expr]) -> Comprehension | None:
    """cel-go's receiver macros (``parser/macro.go``), their two-variable forms and ``transformList``,
    ``transformMap``, ``transformMapEntry`` (``ext/comprehensions.go``), and ``sortBy`` (``ext/lists.go``)."""
    arities = _MACROS.get(name, ())
    if len(args) not in arities or not isinstance(args[0], Ident):
        return None
    first, second = args[0].name, None
    body = args[-1]
    accu = Ident(_ACCUMULATOR)
    if name == "sortBy":
        # cel.bind(@__sortBy_input__, target, @__sortBy_input__.@sortByAssociatedKeys(@__sortBy_input__.map(e, key)))
        keys = _expand_macro(Ident(_SORT_BY_INPUT), "map", args)
        call = Call("@sortByAssociatedKeys", Ident(_SORT_BY_INPUT), [keys])  # type: ignore[list-item]
        return Comprehension("#unused", None, ListExpr([]), _SORT_BY_INPUT, target, Literal("bool", False),
                             Ident(_SORT_BY_INPUT), call)
    if name in ("map", "filter"):
        element: Expr = body if name == "map" else Ident(first)
        step: Expr = Call("_+_", None, [accu, ListExpr([element])])
        if name == "filter" or len(args) == 3:
            step = Call("_?_:_", None, [args[1], step, accu])
        return Comprehension(first, None, target, _ACCUMULATOR, ListExpr([]), Literal("bool", True), step, accu)
    if len(args) >= 3:
        if not isinstance(args[1], Ident):
            return None
        second = args[1].name
    if name.startswith("transform"):
        if name == "transformList":
            step = Call("_+_", None, [accu, ListExpr([body])])
        elif name == "transformMap":
            step = Call("cel.@mapInsert", None, [accu, Ident(first), body])
        else:
            step = Call("cel.@mapInsert", None, [accu, body])
        if len(args) == 4:
            step = Call("_?_:_", None, [args[2], step, accu])
        init: Expr = ListExpr([]) if name == "transformList" else MapExpr([])
        return Comprehension(first, second, target, _ACCUMULATOR, init, Literal("bool", True), step, accu)
    if name == "all":
        condition: Expr = Call("@not_strictly_false", None, [accu])
        return Comprehension(first, second, target, _ACCUMULATOR, Literal("bool", True), condition,
                             Call("_&&_", None, [accu, body]), accu)
    if name == "exists":
        condition = Call("@not_strictly_false", None, [Call("!_", None, [accu])])
        return Comprehension(first, second, target, _ACCUMULATOR, Literal("bool", False), condition,
                             Call("_||_", None, [accu, body]), accu)
    step = Call("_?_:_", None, [body, Call("_+_", None, [accu, Literal("int", 1)]), accu])
    return Comprehension(first, second, target, _ACCUMULATOR, Literal("int", 0), Literal("bool", True), step,
                         Call("_==_", None, [accu, Literal("int", 1)]))


_MACROS: Final[dict[str, tuple[int, ...]]] = {
    "all": (2, 3), "exists": (2, 3), "exists_one": (2, 3), "existsOne": (3,), "map": (2, 3), "filter": (2,),
    "transformList": (3, 4), "transformMap": (3, 4), "transformMapEntry": (3, 4), "sortBy": (2,),
}
"""Receiver macros and their argument counts: one iteration variable, or two (``ext.TwoVarComprehensions``)."""
_SORT_BY_INPUT: Final = "@__sortBy_input__"


# --- types, as far as the costs depend on them -------------------------------------------------

_Type: TypeAlias = tuple[object, ...]
"""A CEL type: ``("int",)``, ``("list", elem)``, ``("map", key, value)``, ``("object", name)``, ``("dyn",)``…"""

_DYN: Final[_Type] = ("dyn",)
_BOOL: Final[_Type] = ("bool",)
_INT: Final[_Type] = ("int",)
_UINT: Final[_Type] = ("uint",)
_DOUBLE: Final[_Type] = ("double",)
_STRING: Final[_Type] = ("string",)
_BYTES: Final[_Type] = ("bytes",)
_QUANTITY: Final[_Type] = ("object", "kubernetes.Quantity")
_SEMVER: Final[_Type] = ("object", "kubernetes.Semver")
_URL: Final[_Type] = ("object", "kubernetes.URL")
_IP: Final[_Type] = ("opaque", "net.IP")
_CIDR: Final[_Type] = ("opaque", "net.IPNet")
_DEVICE: Final[_Type] = ("object", "kubernetes.DRADevice")
_LIST_OF_STRINGS: Final[_Type] = ("list", _STRING)
_SCALARS: Final = frozenset({"bool", "double", "duration", "int", "timestamp", "uint"})
"""cel-go ``isScalar``: types of a fixed size (1)."""

_DEVICE_FIELDS: Final[dict[str, _Type]] = {
    "driver": _STRING,
    "allowMultipleAllocations": _BOOL,
    "attributes": ("map", _STRING, ("map", _STRING, _DYN)),
    "capacity": ("map", _STRING, ("map", _STRING, _QUANTITY)),
}

_RESULTS: Final[dict[str, _Type]] = {
    **dict.fromkeys(("size", "int", "indexOf", "lastIndexOf", "compareTo", "sign", "asInteger", "major", "minor",
                     "patch", "family", "prefixLength", "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear",
                     "getFullYear", "getHours", "getMilliseconds", "getMinutes", "getMonth", "getSeconds"), _INT),
    **dict.fromkeys(("contains", "startsWith", "endsWith", "matches", "bool", "isSorted", "includes", "sets.contains",
                     "sets.equivalent", "sets.intersects", "isQuantity", "isSemver", "isGreaterThan", "isLessThan",
                     "isInteger", "isURL", "isIP", "isCIDR", "isUnspecified", "isLoopback", "isLinkLocalMulticast",
                     "isLinkLocalUnicast", "isGlobalUnicast", "containsIP", "containsCIDR", "ip.isCanonical",
                     "_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_", "@in", "_&&_", "_||_", "!_",
                     "@not_strictly_false"), _BOOL),
    **dict.fromkeys(("string", "charAt", "lowerAscii", "upperAscii", "replace", "substring", "trim", "join",
                     "strings.quote", "format", "find", "getScheme", "getHost", "getHostname", "getPort",
                     "getEscapedPath"), _STRING),
    **dict.fromkeys(("split", "findAll"), _LIST_OF_STRINGS),
    **dict.fromkeys(("quantity", "add", "sub"), _QUANTITY),
    "uint": _UINT, "double": _DOUBLE, "asApproximateFloat": _DOUBLE, "bytes": _BYTES, "type": ("type",),
    "timestamp": ("timestamp",), "duration": ("duration",), "semver": _SEMVER, "url": _URL, "ip": _IP,
    "cidr": _CIDR, "masked": _CIDR, "getQuery": ("map", _STRING, _LIST_OF_STRINGS), "asList": ("list", _DYN),
    "lists.range": ("list", _INT),
}
"""Result types of the environment's functions (the operators and those of :data:`_ARITHMETIC` aside)."""

_ARITHMETIC: Final = frozenset({"_+_", "_-_", "_*_", "_/_", "_%_", "-_"})


def _may_be(t: _Type, kind: str) -> bool:
    return t[0] == kind or t[0] == "dyn"


# --- sizes DRA declares for the device variable ----------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Decl:
    """A node of the ``kubernetes.DRADevice`` declaration: ``MaxElements`` and what it holds."""

    max_elements: int
    fields: tuple[tuple[str, _Decl], ...] = ()
    key: _Decl | None = None
    elem: _Decl | None = None


_ATTRIBUTE: Final = _Decl(_MAX_ATTRIBUTE_VALUE)
_DEVICE_DECL: Final = _Decl(0, fields=(
    ("driver", _Decl(_MAX_DRIVER)),
    ("allowMultipleAllocations", _Decl(1)),
    ("attributes", _Decl(_MAX_ATTRIBUTES, key=_Decl(_MAX_DOMAIN),
                         elem=_Decl(_MAX_ATTRIBUTES, key=_Decl(_MAX_ID), elem=_ATTRIBUTE))),
    ("capacity", _Decl(_MAX_ATTRIBUTES, key=_Decl(_MAX_DOMAIN),
                       elem=_Decl(_MAX_ATTRIBUTES, key=_Decl(_MAX_ID), elem=_Decl(0)))),
))


def _declared_size(path: tuple[str, ...]) -> Estimate | None:
    """DRA's ``sizeEstimator.EstimateSize`` (compile.go): walk the declaration along a field path."""
    if not path or path[0] != "device":
        return None
    node = _DEVICE_DECL
    for name in path[1:]:
        step: _Decl | None
        if name in ("@items", "@values"):
            step = node.elem
        elif name == "@keys":
            step = node.key
        else:
            step = dict(node.fields).get(name)
            if step is None and node.elem is _ATTRIBUTE:  # any name in an attribute map
                step = _ATTRIBUTE
        if step is None:
            return None
        node = step
    return 0, node.max_elements


# --- the estimate ---------------------------------------------------------------------------------


def estimate_cost(expression: str) -> Estimate:
    """``(min, max)`` estimated cost of ``expression`` in the DRA environment, as cel-go's
    ``checker.Cost`` with Kubernetes' estimators gives it (``CompilationResult.MaxCost`` is ``max``).

    Raises :class:`CostParseError` for text outside CEL's grammar.
    """
    return _Coster().cost(parse(expression))


@dataclass(slots=True)
class _Local:
    path: tuple[str, ...]
    size: Estimate | None
    entry: _Entry | None
    type: _Type


@dataclass(frozen=True, slots=True)
class _Entry:
    """cel-go ``entrySizeEstimate``: the kind of a built container and the sizes of its keys and values."""

    container: str  # list | map
    key: Estimate
    value: Estimate

    def union(self, other: _Entry | None) -> _Entry | None:
        if other is None:
            return None
        return _Entry(self.container, _union(self.key, other.key), _union(self.value, other.value))


@dataclass
class _Coster:
    """cel-go's ``coster`` (checker/cost.go) with the types it reads from the checked AST inferred here."""

    paths: dict[int, tuple[str, ...]] = field(default_factory=dict)
    sizes: dict[int, Estimate] = field(default_factory=dict)
    entries: dict[int, _Entry] = field(default_factory=dict)
    types: dict[int, _Type] = field(default_factory=dict)
    locals: dict[str, list[_Local]] = field(default_factory=dict)

    def cost(self, e: Expr) -> Estimate:
        if isinstance(e, Literal):
            self.types[id(e)] = (e.kind,)
            return _ZERO
        if isinstance(e, Ident):
            return self.ident(e)
        if isinstance(e, Select):
            return self.select(e)
        if isinstance(e, Call):
            return self.call(e)
        if isinstance(e, ListExpr):
            return self.create_list(e)
        if isinstance(e, MapExpr):
            return self.create_map(e)
        if isinstance(e, StructExpr):
            total = _ZERO
            for value in e.values:
                total = _add(total, self.cost(value))
            self.types[id(e)] = ("object", e.name)
            return _add(total, (_STRUCT_CREATE, _STRUCT_CREATE))
        if _is_bind(e):
            return self.bind(e)
        return self.comprehension(e)

    # -- nodes

    def ident(self, e: Ident) -> Estimate:
        local = self.peek(e.name)
        if local is not None:
            self.paths[id(e)] = local.path
            self.types[id(e)] = local.type
        else:
            self.paths[id(e)] = (e.name,)
            self.types[id(e)] = _DEVICE if e.name == "device" else _DYN
        return _ONE

    def select(self, e: Select) -> Estimate:
        if e.test_only:
            self.types[id(e)] = _BOOL
            return _add(_ONE, self.cost(e.operand))  # PresenceTestHasCost(true), cel-go's default
        total = self.cost(e.operand)
        operand = self.type(e.operand)
        if operand[0] in ("map", "object"):
            total = _add(total, _ONE)
        self.paths[id(e)] = (*self.path(e.operand), e.field)
        if operand[0] == "map":
            self.types[id(e)] = operand[2]  # type: ignore[assignment]
        elif operand == _DEVICE:
            self.types[id(e)] = _DEVICE_FIELDS.get(e.field, _DYN)
        else:
            self.types[id(e)] = _DYN
        return total

    def create_list(self, e: ListExpr) -> Estimate:
        total = _ZERO
        item: Estimate = (_U64, 0) if e.elements else (0, 0)
        for element in e.elements:
            total = _add(total, self.cost(element))
            item = _union(item, self.size_or_unknown(element))
        self.entries[id(e)] = _Entry("list", _ONE, item)
        self.types[id(e)] = ("list", _common({self.type(x) for x in e.elements}))
        return _add(total, (_LIST_CREATE, _LIST_CREATE))

    def create_map(self, e: MapExpr) -> Estimate:
        total = _ZERO
        key: Estimate = (_U64, 0) if e.entries else (0, 0)
        value: Estimate = key
        for k, v in e.entries:
            total = _add(_add(total, self.cost(k)), self.cost(v))
            key = _union(key, self.size_or_unknown(k))
            value = _union(value, self.size_or_unknown(v))
        self.entries[id(e)] = _Entry("map", key, value)
        self.types[id(e)] = ("map", _common({self.type(k) for k, _ in e.entries}),
                             _common({self.type(v) for _, v in e.entries}))
        return _add(total, (_MAP_CREATE, _MAP_CREATE))

    def comprehension(self, e: Comprehension) -> Estimate:
        total = _add(self.cost(e.iter_range), self.cost(e.accu_init))
        self.push_local(e.accu_var, e.accu_init)
        if e.iter_var2 is not None:
            self.push_iter(e.iter_var, e.iter_range, "key")
            self.push_iter(e.iter_var2, e.iter_range, "value")
        else:
            self.push_iter(e.iter_var, e.iter_range, "single")
        loop = self.cost(e.loop_condition)
        step = self.cost(e.loop_step)
        self.pop(e.iter_var)
        if e.iter_var2 is not None:
            self.pop(e.iter_var2)
        total = _add(total, self.cost(e.result))
        self.pop(e.accu_var)
        count = self.size_or_unknown(e.iter_range)
        total = _add(total, _mul(count, _add(step, loop)))
        if isinstance(e.accu_init, Literal):
            self.set_size(e, self.compute_size(e.accu_init))
        elif isinstance(e.accu_init, (ListExpr, MapExpr)):
            self.sizes[id(e)] = count
            if (step_entry := self.entry(e.loop_step)) is not None:
                self.entries[id(e)] = step_entry
        self.types[id(e)] = self.accumulated_type(e) or self.type(e.result)
        return total

    def accumulated_type(self, e: Comprehension) -> _Type | None:
        """``list(T)`` for a comprehension that appends ``[x]`` of type T to an empty list (``map``, ``filter``,
        ``transformList``): cel-go's checker binds the empty list's element type to T (a type parameter)."""
        step = e.loop_step
        if isinstance(step, Call) and step.function == "_?_:_":
            step = step.args[1]
        if (isinstance(e.accu_init, ListExpr) and not e.accu_init.elements and isinstance(step, Call)
                and step.function == "_+_" and isinstance(step.args[1], ListExpr) and len(step.args[1].elements) == 1):
            return ("list", self.type(step.args[1].elements[0]))
        return None

    def bind(self, e: Comprehension) -> Estimate:
        # binds are lazy: the cost of the empty range stays (cel-go costBind)
        total = _add(self.cost(e.iter_range), self.cost(e.accu_init))
        self.push_local(e.accu_var, e.accu_init)
        total = _add(total, self.cost(e.result))
        self.pop(e.accu_var)
        self.copy_sizes(e, e.result)
        self.types[id(e)] = self.type(e.result)
        return total

    def call(self, e: Call) -> Estimate:
        if e.function == "dyn" and e.target is None and len(e.args) == 1:
            cost = self.cost(e.args[0])
            self.copy_sizes(e, e.args[0])
            self.types[id(e)] = _DYN
            return _add(_ONE, cost)
        arg_costs = [self.cost(arg) for arg in e.args]
        total = _ZERO
        if e.target is not None:
            total = self.cost(e.target)
        overloads = self.overloads(e)
        types = {t for _, t in overloads}
        self.types[id(e)] = types.pop() if len(types) == 1 else _DYN
        function_cost: Estimate = (_U64, 0)
        result_size: Estimate | None = None
        for overload, _ in overloads:
            cost, size = self.function_cost(e, overload, arg_costs)
            function_cost = _union(function_cost, cost)
            if size is not None:
                result_size = size if result_size is None else _union(result_size, size)
            if overload in ("index_list", "index_map"):
                entry = self.entry(e.args[0])
                result_size = entry.value if entry is not None else None
                self.paths[id(e)] = (*self.path(e.args[0]), "@items" if overload == "index_list" else "@values")
            if result_size is None:
                result_size = self.compute_size(e)
        self.set_size(e, result_size)
        return _add(total, function_cost)

    # -- overloads and their costs

    def overloads(self, e: Call) -> list[tuple[str, _Type]]:
        """The overloads cel-go's checker would keep for this call (several for ``dyn`` operands),
        each with its result type; the name is cel-go's overload id where a cost depends on it."""
        fn, args = e.function, [self.type(a) for a in e.args]
        target = self.type(e.target) if e.target is not None else None
        found: list[tuple[str, _Type]] = []
        if fn in ("_<_", "_<=_", "_>_", "_>=_"):
            for kind in ("string", "bytes"):
                if _may_be(args[0], kind) and _may_be(args[1], kind):
                    found.append((f"compare_{kind}", _BOOL))
            if not {args[0][0], args[1][0]} & {"string", "bytes"}:
                found.append(("compare", _BOOL))
        elif fn == "_+_":
            for kind in ("string", "bytes", "list"):
                if _may_be(args[0], kind) and _may_be(args[1], kind):
                    result = args[0] if args[0][0] != "dyn" else args[1]
                    found.append((f"add_{kind}", result if result[0] != "dyn" else (kind, _DYN)[:1 + (kind == "list")]))
            if not {args[0][0], args[1][0]} & {"string", "bytes", "list"}:
                found.append(("add", args[0] if args[0][0] != "dyn" else args[1]))
        elif fn == "@in":
            if _may_be(args[1], "list"):
                found.append(("in_list", _BOOL))
            if _may_be(args[1], "map"):
                found.append(("in_map", _BOOL))
        elif fn == "_[_]":
            if _may_be(args[0], "list"):
                found.append(("index_list", args[0][1] if args[0][0] == "list" else _DYN))  # type: ignore[arg-type]
            if _may_be(args[0], "map"):
                found.append(("index_map", args[0][2] if args[0][0] == "map" else _DYN))  # type: ignore[arg-type]
        elif fn in ("_==_", "_!=_"):
            found.append(("equals", _BOOL))
        elif fn in ("_&&_", "_||_"):
            found.append(("logical", _BOOL))
        elif fn == "_?_:_":
            found.append(("conditional", args[1] if args[1] == args[2] else _DYN))
        elif fn in _ARITHMETIC:
            found.append(("", args[0] if args[0][0] != "dyn" or len(args) == 1 else args[1]))
        elif fn == "bytes" and args and _may_be(args[0], "string"):
            found.append(("string_to_bytes", _BYTES))
        elif fn == "string" and args and _may_be(args[0], "bytes"):
            found.append(("bytes_to_string", _STRING))
        elif fn == "ip" and target is not None:
            found.append(("cidr_ip", _IP))
        elif fn in ("containsIP", "containsCIDR") and args:
            other = "ip" if fn == "containsIP" else "cidr"
            if _may_be(args[0], "string"):
                found.append((f"cidr_contains_{other}_string", _BOOL))
            if args[0][0] != "string":
                found.append((f"cidr_contains_{other}_{other}", _BOOL))
        elif fn in ("sort", "distinct", "reverse", "slice", "@sortByAssociatedKeys") and target is not None:
            found.append(("", target if target[0] == "list" else ("list", _DYN)))  # ext/lists.go: list(T) -> list(T)
        elif fn == "flatten" and target is not None:
            nested: _Type = target[1] if target[0] == "list" else _DYN  # type: ignore[assignment]
            found.append(("", nested if nested[0] == "list" and not args else ("list", _DYN)))
        elif fn in ("sum", "min", "max") and target is not None and target[0] == "list":
            found.append(("", target[1]))  # type: ignore[arg-type]
        if not found:
            member = {"matches": "matches_string", "contains": "contains_string", "startsWith": "starts_with",
                      "endsWith": "ends_with", "format": "string_format"}
            tag = member.get(fn, "") if target is not None else ("strings_quote" if fn == "strings.quote" else "")
            found.append((tag, _RESULTS.get(fn, _DYN)))
        return found

    def function_cost(self, e: Call, overload: str, arg_costs: list[Estimate]) -> tuple[Estimate, Estimate | None]:
        """cel-go ``functionCost``: the overload estimators (sets), Kubernetes' ``EstimateCallCost``, then
        cel-go's own size-dependent costs, else 1; the arguments' costs added (the target's by the caller)."""
        arg_sum = _ZERO
        for cost in arg_costs:
            arg_sum = _add(arg_sum, cost)
        estimated = self.library_cost(e, overload)
        if estimated is not None:
            return _add(estimated[0], arg_sum), estimated[1]
        target, args = e.target, e.args
        size = self.size_or_unknown
        if overload == "string_format" and target is not None and args:
            return _add(_factor(size(target), _STRING_TRAVERSAL), arg_sum), _add(size(target), size(args[0]))
        if overload == "string_to_bytes" and len(args) == 1:
            low, high = size(args[0])
            return _add(_factor((low, high), _STRING_TRAVERSAL), arg_sum), (low, min(high * 4, _U64))
        if overload == "bytes_to_string" and len(args) == 1:
            low, high = size(args[0])
            return _add(_factor((low, high), _STRING_TRAVERSAL), arg_sum), (low // 4, high)
        if overload == "strings_quote" and len(args) == 1:
            low, high = size(args[0])
            return _add(_factor((low, high), _STRING_TRAVERSAL), arg_sum), (min(low + 2, _U64), min(high * 2 + 2, _U64))
        if overload in ("starts_with", "ends_with") and len(args) == 1:
            return _add(_factor(size(args[0]), _STRING_TRAVERSAL), arg_sum), None
        if overload == "in_list":
            return _add(_factor(size(args[1]), 1), arg_sum), None
        if overload == "matches_string" and target is not None and len(args) == 1:
            text = _factor(_add(size(target), _ONE), _STRING_TRAVERSAL)
            return _add(_mul(text, _factor(size(args[0]), _REGEX_LENGTH)), arg_sum), None
        if overload == "contains_string" and target is not None and len(args) == 1:
            text, part = _factor(size(target), _STRING_TRAVERSAL), _factor(size(args[0]), _STRING_TRAVERSAL)
            return _add(_mul(text, part), arg_sum), None
        if overload == "logical":
            left, right = arg_costs
            return (left[0], _add(left, right)[1]), None
        if overload == "conditional":
            result = _union(size(args[1]), size(args[2]))
            entry = self.entry(args[1])
            if entry is not None and (joined := entry.union(self.entry(args[2]))) is not None:
                self.entries[id(e)] = joined
            return _add(arg_costs[0], _union(arg_costs[1], arg_costs[2])), result
        if overload in ("add_string", "add_bytes", "add_list") and len(args) == 2:
            result = _add(size(args[0]), size(args[1]))
            entry = self.entry(args[0])
            if entry is not None and (joined := entry.union(self.entry(args[1]))) is not None:
                self.entries[id(e)] = joined
            if overload == "add_list":
                return _add(_ONE, arg_sum), result
            return _add(_factor(result, _STRING_TRAVERSAL), arg_sum), result
        if overload in ("compare_string", "compare_bytes", "equals"):
            smallest = min(size(args[0])[1], size(args[1])[1])
            return _add(_factor((1 if smallest > 0 else 0, smallest), _STRING_TRAVERSAL), arg_sum), None
        return _add(_ONE, arg_sum), None

    def library_cost(self, e: Call, overload: str) -> tuple[Estimate, Estimate | None] | None:
        """Kubernetes' ``CostEstimator.EstimateCallCost`` (library/cost.go), cel-go's sets extension
        (ext/sets.go) and DRA's ``includes``/``asList``: the call's own cost and result size, or None."""
        fn, target, args = e.function, e.target, e.args
        size = self.size_or_unknown
        if (listed := self.list_extension_cost(e)) is not None:
            return listed
        if fn in ("sets.contains", "sets.equivalent", "sets.intersects") and len(args) == 2:
            factor = 2 if fn == "sets.equivalent" else 1  # equivalence is two containment checks
            return _add(_factor(_mul(size(args[0]), size(args[1])), factor), _ONE), None
        if fn == "includes" and target is not None:
            return (_INCLUDES_COST, _INCLUDES_COST), None
        if fn == "asList" and target is not None:
            return _ONE, size(target)
        if fn in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf") and target is not None:
            container = self.type(target)
            if container[0] in ("list", "map"):
                element_cost = _ONE
                element = container[1]
                if element[0] in ("string", "bytes"):  # type: ignore[index]
                    path = self.path(target)
                    element_size = (_declared_size((*path, "@items")) if path else None) or _UNKNOWN
                    element_cost = _add(element_cost, _factor(element_size, _STRING_TRAVERSAL))
                return _mul(size(target), element_cost), None
            return _factor(size(target), _STRING_TRAVERSAL), None
        if fn == "url" and len(args) == 1:
            return _factor(size(args[0]), _STRING_TRAVERSAL), size(args[0])
        if fn in ("lowerAscii", "upperAscii", "substring", "trim") and target is not None:
            return _factor(size(target), _STRING_TRAVERSAL), size(target)
        if fn == "replace" and target is not None and len(args) >= 2:
            return _factor(size(target), 2 * _STRING_TRAVERSAL), _replaced_size(
                size(target), size(args[0]), size(args[1]))
        if fn == "split" and target is not None:
            most = size(target)[1]
            if len(args) > 1 and isinstance(args[1], Literal) and args[1].kind == "int":
                most = args[1].value % 2**64  # type: ignore[operator]  # Go's uint64(int64)
            return _factor(size(target), 2 * _STRING_TRAVERSAL), (0, most)
        if fn == "join" and target is not None:
            return self.join_cost(target, args)
        if fn in ("find", "findAll") and target is not None and args:
            text = size(target)
            matched = _mul(_factor(_add(text, _ONE), _STRING_TRAVERSAL), _factor(size(args[0]), _REGEX_LENGTH))
            return matched, (0, text[1])
        # The parsing functions are global: library/cost.go tests ``target != nil``, which holds for them
        # too in the cel-go Kubernetes builds with (a pointer to an empty node; cost_test.go pins
        # ip('192.168.0.1') at 2 and ip('2001:db8:3333:4444:5555:6666:7777:8888') at 4).
        if fn in ("cidr", "isIP", "isCIDR", "quantity", "isQuantity", "semver", "isSemver") and args:
            return _factor(size(args[0]), _STRING_TRAVERSAL), None
        if fn == "ip":
            if args and overload != "cidr_ip":
                return _factor(size(args[0]), _STRING_TRAVERSAL), None
            return _ONE, None
        if fn == "ip.isCanonical" and args:
            return _factor(size(args[0]), 2 * _STRING_TRAVERSAL), None
        if fn in ("containsIP", "containsCIDR") and target is not None and args:
            address = (4, 16)  # the bytes of an IPv4 or IPv6 address
            cost = _factor(_add(address, address), _STRING_TRAVERSAL)
            if fn == "containsCIDR":
                cost = _add(_add(cost, _factor(address, _STRING_TRAVERSAL)), _ONE)
            if overload.endswith("_string"):
                cost = _add(cost, _factor(size(args[0]), _STRING_TRAVERSAL))
            return cost, None
        if fn in _NOMINAL:
            return _ONE, None
        if fn == "_==_" and len(args) == 2:
            left, right = self.type(args[0]), self.type(args[1])
            if left == right and left in (_IP, _CIDR, _QUANTITY, _SEMVER):
                return _ONE, None
            if left == right == _URL:
                computed = self.compute_size(args[1])
                most = computed[1] if computed is not None else 1  # cel's cost.go reads the rhs twice
                return _factor((1, most), _STRING_TRAVERSAL), None
        return None

    def list_extension_cost(self, e: Call) -> tuple[Estimate, Estimate | None] | None:
        """cel-go's list extension at version 3 (ext/lists.go ``estimateList…``): the result list's size
        times a factor, plus 1 for the call and 10 for the list made; the result's size is what was
        multiplied (n² for ``distinct``, ``sort`` and ``sortBy``'s ``@sortByAssociatedKeys``, as upstream)."""
        fn, target, args = e.function, e.target, e.args
        size = self.size_or_unknown
        if fn == "lists.range" and target is None and len(args) == 1:
            count = _int_literal(args[0], _U64)
            return _allocating_list((count, count), 1)
        if target is None:
            return None
        if fn == "slice" and len(args) == 2:
            count = (_int_literal(args[1], size(target)[1]) - _int_literal(args[0], 0)) % 2**64  # Go's uint64
            return _allocating_list((count, count), 1)
        if fn == "flatten" and len(args) <= 1:
            return _allocating_list(size(target), float(_int_literal(args[0], _U64)) if args else 1)
        if fn == "reverse" and not args:
            return _allocating_list(size(target), 1)
        if fn == "distinct" and not args:
            return _allocating_list(_mul(size(target), size(target)), 2)
        if (fn, len(args)) in (("sort", 0), ("@sortByAssociatedKeys", 1)):
            keys = args[0] if args else target  # sortBy is sized by its keys
            squared = _mul(size(keys), size(keys))
            element = self.type(keys)
            element = element[1] if element[0] == "list" else _DYN  # type: ignore[assignment]
            # the overload of each comparable key type the checker keeps: strings and bytes cost 0.1 more
            factors = [2 + _STRING_TRAVERSAL] if element[0] in ("string", "bytes") else [2.0]
            if element[0] == "dyn":
                factors.append(2 + _STRING_TRAVERSAL)
            cost, result = _allocating_list(squared, factors[0])
            for factor in factors[1:]:
                cost = _union(cost, _allocating_list(squared, factor)[0])
            return cost, result
        return None

    def join_cost(self, target: Expr, args: list[Expr]) -> tuple[Estimate, Estimate | None]:
        """``join`` (library/cost.go): the result's length, traversed once."""
        items = self.size_or_unknown(target)
        container = self.type(target)
        result = _ZERO
        if container[0] in ("list", "map"):
            path = self.path(target)
            element = (_declared_size((*path, "@items")) if path else None) or _UNKNOWN
            result = _mul(items, element)
        if args:
            separators = (max(items[0] - 1, 0), max(items[1] - 1, 0))
            result = _add(result, _mul(self.size_or_unknown(args[0]), separators))
        return _factor(result, _STRING_TRAVERSAL), result

    # -- sizes, paths and local variables

    def type(self, e: Expr) -> _Type:
        return self.types.get(id(e), _DYN)

    def path(self, e: Expr) -> tuple[str, ...]:
        if isinstance(e, Ident) and (local := self.peek(e.name)) is not None:
            return local.path
        return self.paths.get(id(e), ())

    def compute_size(self, e: Expr) -> Estimate | None:
        """cel-go ``computeSize``: computed, literal, declared (DRA), scalar, then local variable sizes."""
        if (known := self.sizes.get(id(e))) is not None:
            return known
        if isinstance(e, Literal):
            if e.kind in ("string", "bytes"):
                return e.value, e.value  # type: ignore[return-value]
            return _ONE
        if isinstance(e, ListExpr):
            return len(e.elements), len(e.elements)
        if isinstance(e, MapExpr):
            return len(e.entries), len(e.entries)
        if (declared := _declared_size(self.path(e))) is not None:
            self.sizes[id(e)] = declared
            return declared
        if self.type(e)[0] in _SCALARS:
            return _ONE
        if isinstance(e, Ident) and (local := self.peek(e.name)) is not None:
            return local.size
        return None

    def size_or_unknown(self, e: Expr) -> Estimate:
        size = self.compute_size(e)
        return _UNKNOWN if size is None else size

    def set_size(self, e: Expr, size: Estimate | None) -> None:
        if size is not None:
            self.sizes[id(e)] = size

    def entry(self, e: Expr) -> _Entry | None:
        if (known := self.entries.get(id(e))) is not None:
            return known
        if isinstance(e, Ident) and (local := self.peek(e.name)) is not None:
            return local.entry
        return None

    def copy_sizes(self, destination: Expr, source: Expr) -> None:
        self.set_size(destination, self.compute_size(source))
        if (entry := self.entry(source)) is not None:
            self.entries[id(destination)] = entry

    def peek(self, name: str) -> _Local | None:
        stack = self.locals.get(name)
        return stack[-1] if stack else None

    def pop(self, name: str) -> None:
        self.locals[name].pop()

    def push_local(self, name: str, e: Expr) -> None:
        local = _Local(self.path(e), self.compute_size(e), self.entry(e), self.type(e))
        self.locals.setdefault(name, []).append(local)

    def push_iter(self, name: str, iter_range: Expr, role: str) -> None:
        """cel-go ``pushIterSingle`` / ``pushIterKey`` / ``pushIterValue``."""
        entry = self.entry(iter_range)
        range_type = self.type(iter_range)
        container = entry.container if entry is not None else range_type[0]
        is_list = container == "list"
        if role == "value" or (role == "single" and is_list):
            size = entry.value if entry is not None else None
            subpath = "@items" if is_list else "@values"
            element = range_type[1] if range_type[0] == "list" else range_type[2] if range_type[0] == "map" else _DYN
        else:
            size = entry.key if entry is not None else None
            subpath = "@indices" if is_list and role == "key" else "@keys"
            element = _INT if is_list else range_type[1] if range_type[0] == "map" else _DYN
        local = _Local((*self.path(iter_range), subpath), size, None, element)  # type: ignore[arg-type]
        self.locals.setdefault(name, []).append(local)


_NOMINAL: Final = frozenset({
    "masked", "prefixLength", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast",
    "isGlobalUnicast", "format.named", "sign", "asInteger", "isInteger", "asApproximateFloat", "isGreaterThan",
    "isLessThan", "compareTo", "add", "sub", "major", "minor", "patch", "getScheme", "getHostname", "getHost",
    "getPort", "getEscapedPath", "getQuery",
})
"""Functions Kubernetes' estimator costs 1 (library/cost.go: IP/CIDR accessors, quantity, semver, URL)."""


def _int_literal(e: Expr, default: int) -> int:
    """cel-go ext/lists.go ``nodeAsIntValue``: an int literal's value (0 if negative), else ``default``."""
    if isinstance(e, Literal) and e.kind == "int" and isinstance(e.value, int):
        return max(e.value, 0)
    return default


def _allocating_list(size: Estimate, factor: float) -> tuple[Estimate, Estimate]:
    """cel-go ext/lists.go ``estimateAllocatingListCall``: ``size × factor`` + 1 (the call) + 10 (the list)."""
    return _add(_add(_factor(size, factor), _ONE), (_LIST_CREATE, _LIST_CREATE)), size


def _is_bind(e: Comprehension) -> bool:
    """cel-go ``isBind``: an empty range, a false loop condition and an accumulator of its own."""
    return (isinstance(e.iter_range, ListExpr) and not e.iter_range.elements
            and isinstance(e.loop_condition, Literal) and e.loop_condition.value is False
            and e.accu_var != _ACCUMULATOR)


def _common(types: set[_Type]) -> _Type:
    return types.pop() if len(types) == 1 else _DYN


def _replaced_size(text: Estimate, old: Estimate, new: Estimate) -> Estimate:
    """The result size of ``replace`` (library/cost.go): most replacements of the shortest ``old`` by the
    longest ``new``, fewest of the longest ``old`` by the shortest ``new``."""
    if old[0] == 0:
        most_count, most_kept = (text[1] + 1 if text[1] < _U64 else text[1]), text[1]
    elif new[1] <= old[0]:
        most_count, most_kept = 0, text[1]
    else:
        most_count, most_kept = math.ceil(text[1] / old[0]), 0
    if old[1] == 0:
        least_count, least_kept = (text[0] + 1 if text[0] < _U64 else text[0]), text[0]
    elif old[1] <= new[0]:
        least_count, least_kept = 0, text[0]
    else:
        least_count, least_kept = math.ceil(text[0] / old[1]), 0
    return _add(_mul((least_count, most_count), new), (least_kept, most_kept))


def limit_error(expression: str) -> str | None:
    """Why the API server would refuse ``expression`` for its cost, else None.

    ``too complex, exceeds cost limit`` (validation.go ``validateCELSelector``) when the estimated
    maximum exceeds :data:`COST_LIMIT`, followed by the estimate; ``cost estimation failed: …``
    (compile.go's wording) for text this module cannot parse.
    """
    try:
        _, most = estimate_cost(expression)
    except (CostParseError, RecursionError) as exc:
        return f"cost estimation failed: {exc or type(exc).__name__}"
    if most > COST_LIMIT:
        return f"{LIMIT_MESSAGE} (estimated cost {most:,}, limit {COST_LIMIT:,})"
    return None
