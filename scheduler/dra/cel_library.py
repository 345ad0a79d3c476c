"""Kubernetes CEL libraries a DRA selector may use, as Python callbacks, and the registry of them all.

Kubernetes v1.37 compiles device selectors in its base CEL environment
(``k8s.io/apiserver/pkg/cel/environment/base.go``, stored expressions:
``k8s.io/dynamic-resource-allocation/cel/compile.go``). Besides the IP, CIDR and URL libraries
(:mod:`scheduler.dra.cel_net`), this module provides:

* ``library/regex.go``: ``s.find(re)`` (the first match, or ``""``) and ``s.findAll(re[, n])`` (at most ``n``
  matches when ``n >= 0``) with Go's RE2 syntax and Go's rule for empty matches. Patterns are compiled
  with Google's RE2 (``google-re2``), so a lookaround or a backreference is refused as in Go;
* cel-go's list extension at version 3 (``ext/lists.go``, in the base environment since 1.34):
  ``lists.range``, ``slice``, ``flatten``, ``distinct``, ``reverse``, ``sort`` (``sortBy`` is rewritten);
* Kubernetes' format library (``library/format.go``): :mod:`scheduler.dra.cel_format`, and the strings
  extension's ``"…".format([…])``: :mod:`scheduler.dra.cel_string_format`;
* the helpers of the two-variable comprehensions (cel-go ``ext/comprehensions.go``), which
  :mod:`scheduler.dra.cel` rewrites into one-variable macros.

Each function raises ``TypeError`` ("no such overload") for an argument of another type and ``ValueError``
with the upstream message; :mod:`scheduler.dra.cel` turns both into a ``CEL runtime error``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Final

import re2

from scheduler.dra import cel_format, cel_net, cel_string_format
from scheduler.dra.cel_values import no_overload, same, type_name

# --- regex (library/regex.go) ------------------------------------------------------------------

_RE2_OPTIONS: Final = re2.Options()
_RE2_OPTIONS.log_errors = False  # a refused pattern is reported to the caller, not logged by RE2 too


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> Any:
    """``pattern`` compiled as Go's ``regexp.Compile`` would accept it (RE2 syntax, leftmost-first, UTF-8),
    as an ``re2`` pattern (the package has no type stubs), or Go's error text (``error parsing regexp: …``)
    for a pattern RE2 refuses: a lookaround (``(?=``), a backreference (``\\1``), a repetition above 1000,
    and ``\\C``, which C++ RE2 accepts and Go refuses."""
    if "\\C" in pattern.replace("\\\\", ""):
        return "error parsing regexp: invalid escape sequence: `\\C`"
    try:
        return re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as exc:
        detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        code, _, argument = detail.partition(": ")
        return f"error parsing regexp: {_GO_ERROR_CODES.get(code, code)}: `{argument}`"


def regex_error(pattern: str) -> str | None:
    """Go's error for a pattern it refuses, else None (Kubernetes refuses a literal ``find``/``findAll`` pattern
    when the program is made: regex.go ``FindRegexOptimization``)."""
    compiled = _regex(pattern)
    return compiled if isinstance(compiled, str) else None


def compile_regex(pattern: str) -> Any:
    """``pattern`` compiled (:func:`_regex`); ``ValueError`` ``Illegal regex: …`` (regex.go) if Go refuses it."""
    compiled = _regex(pattern)
    if isinstance(compiled, str):
        raise ValueError(f"Illegal regex: {compiled}")
    return compiled


_GO_ERROR_CODES: Final = {
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid repetition size": "invalid repeat count",
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    "bad repetition operator": "invalid nested repetition operator",
    "no argument for repetition operator": "missing argument to repetition operator",
    "trailing \\": "trailing backslash at end of expression",
    "invalid named capture group": "invalid named capture",
}
"""C++ RE2's error texts by Go's ``regexp/syntax`` ErrorCode text, where they differ; the others are the same."""


def find(text: object, pattern: object) -> str:
    """``text.find(pattern)``: the leftmost match, or ``""`` (Go ``Regexp.FindString``)."""
    if not isinstance(text, str) or not isinstance(pattern, str):
        raise no_overload("find", text, pattern)
    match = compile_regex(pattern).search(text)
    return match.group() if match else ""


def find_all(text: object, pattern: object, limit: object = -1) -> list[str]:
    """``text.findAll(pattern[, limit])``: successive non-overlapping matches, at most ``limit`` if it is
    ``>= 0`` (Go ``Regexp.FindAllString``: an empty match right after the previous match is skipped)."""
    if not isinstance(text, str) or not isinstance(pattern, str) or type(limit) is not int:
        raise no_overload("findAll", text, pattern, limit)
    regex = compile_regex(pattern)
    wanted = len(text) + 1 if limit < 0 else limit
    found: list[str] = []
    position, previous_end = 0, -1
    while len(found) < wanted and position <= len(text):
        match = regex.search(text, position)
        if match is None:
            break
        start, end = match.span()
        accept = True
        if end == position:  # an empty match: step over one character
            accept = start != previous_end
            position += 1
        else:
            position = end
        previous_end = end
        if accept:
            found.append(text[start:end])
    return found


# --- cel-go's list extension at version 3 (ext.Lists, Kubernetes' base environment since 1.34) ----------


def _as_list(value: object, function: str, *arguments: object) -> list[object]:
    if isinstance(value, list):
        return value
    raise no_overload(function, value, *arguments)


def lists_range(count: object) -> list[int]:
    """``lists.range(n)``: ``[0, 1, …, n-1]``."""
    if type(count) is not int:
        raise no_overload("lists.range", count)
    return list(range(count))


def list_slice(target: object, start: object, end: object) -> list[object]:
    """``list.slice(start, end)``: the elements ``start`` to ``end - 1``, with ext/lists.go's errors."""
    items = _as_list(target, "slice", start, end)
    if type(start) is not int or type(end) is not int:
        raise no_overload("slice", target, start, end)
    if start < 0 or end < 0:
        raise ValueError(f"cannot slice({start}, {end}), negative indexes not supported")
    if start > end:
        raise ValueError(f"cannot slice({start}, {end}), start index must be less than or equal to end index")
    if len(items) < end:
        raise ValueError(f"cannot slice({start}, {end}), list is length {len(items)}")
    return items[start:end]


def flatten(target: object, depth: object = 1) -> list[object]:
    """``list.flatten([depth])``: nested lists spliced in, ``depth`` levels deep (1 by default)."""
    items = _as_list(target, "flatten")
    if type(depth) is not int:
        raise no_overload("flatten", target, depth)
    if depth < 0:
        raise ValueError("level must be non-negative")
    flat: list[object] = []
    for item in items:
        flat.extend(flatten(item, depth - 1) if isinstance(item, list) and depth > 0 else [item])
    return flat


def distinct(target: object) -> list[object]:
    """``list.distinct()``: the first of each set of equal elements, in order."""
    unique: list[object] = []
    for item in _as_list(target, "distinct"):
        if not any(same(item, seen) for seen in unique):
            unique.append(item)
    return unique


def reverse(target: object) -> list[object]:
    """``list.reverse()`` (strings' ``reverse`` is version 3 of the strings extension, not Kubernetes')."""
    return _as_list(target, "reverse")[::-1]


def _sort_keys(keys: list[object]) -> None:
    """ext/lists.go ``sortList``: every key of the first key's type, and that type ordered."""
    if keys and not isinstance(keys[0], bool | int | float | str | bytes):
        raise ValueError("list elements must be comparable")
    if any(type(key) is not type(keys[0]) for key in keys):
        raise ValueError("list elements must have the same type")


def sort(target: object) -> list[object]:
    """``list.sort()``: ascending, the elements all of one comparable type."""
    items = _as_list(target, "sort")
    _sort_keys(items)
    return sorted(items)  # type: ignore[type-var]


def sort_by_keys(pairs: object) -> list[object]:
    """What ``list.sortBy(e, key)`` is rewritten to: ``[[element, key], …]`` ordered by key (ext/lists.go
    ``sortByMacro`` and ``@sortByAssociatedKeys``)."""
    items = _as_list(pairs, "sortBy")
    _sort_keys([pair[1] for pair in items])  # type: ignore[index]
    return [pair[0] for pair in sorted(items, key=lambda pair: pair[1])]  # type: ignore[index]


# --- two-variable comprehensions (cel-go ext.TwoVarComprehensions) --------------------------------

TWO_VARIABLE_MACROS: Final = frozenset({"all", "exists", "existsOne", "exists_one", "transformList", "transformMap",
                                        "transformMapEntry"})
"""The receiver macros cel-go's ``ext/comprehensions.go`` adds with two iteration variables (index or key, and
value); :mod:`scheduler.dra.cel` rewrites them into one-variable macros over :func:`entries`."""


def entries(target: object) -> list[list[object]]:
    """``[[index, value], …]`` of a list or ``[[key, value], …]`` of a map, for a two-variable comprehension."""
    if isinstance(target, list):
        return [[i, value] for i, value in enumerate(target)]
    if isinstance(target, dict):
        return [[key, value] for key, value in target.items()]
    raise TypeError(f"cannot range over {type_name(target)}")


def to_map(pairs: object) -> dict[object, object]:
    """The map of ``[[key, value], …]`` (``transformMap``: one entry per key of the range)."""
    if not isinstance(pairs, list):
        raise no_overload("transformMap", pairs)
    return {pair[0]: pair[1] for pair in pairs}


def merge_maps(maps: object) -> dict[object, object]:
    """The union of the maps ``transformMapEntry`` made, refusing a key twice as cel-go's ``mapInsert``."""
    if not isinstance(maps, list):
        raise no_overload("transformMapEntry", maps)
    merged: dict[object, object] = {}
    for entry in maps:
        if not isinstance(entry, dict):
            raise no_overload("transformMapEntry", entry)
        for key, value in entry.items():
            if key in merged:
                raise ValueError(f"insert failed: key {key} already exists")
            merged[key] = value
    return merged


HELPERS: Final[dict[str, Callable[..., Any]]] = {"_entries": entries, "_to_map": to_map, "_merge_maps": merge_maps,
                                                  "_sort_by_keys": sort_by_keys}
"""Callbacks only the rewritten text calls; their names start with ``_``, which no declared function does, so a
selector that names one itself is refused by the static check."""


FUNCTIONS: Final[dict[str, Callable[..., Any]]] = {
    # library/regex.go
    "find": find,
    "findAll": find_all,
    # library/ip.go
    "ip": cel_net.ip,
    "isIP": cel_net.is_ip,
    "ip.isCanonical": cel_net.ip_is_canonical,
    "family": cel_net.family,
    "isUnspecified": cel_net.is_unspecified,
    "isLoopback": cel_net.is_loopback,
    "isLinkLocalMulticast": cel_net.is_link_local_multicast,
    "isLinkLocalUnicast": cel_net.is_link_local_unicast,
    "isGlobalUnicast": cel_net.is_global_unicast,
    # library/cidr.go
    "cidr": cel_net.cidr,
    "isCIDR": cel_net.is_cidr,
    "containsIP": cel_net.contains_ip,
    "containsCIDR": cel_net.contains_cidr,
    "masked": cel_net.masked,
    "prefixLength": cel_net.prefix_length,
    # string(ip), string(cidr)
    "string": cel_net.to_string,
    # library/urls.go
    "url": cel_net.url,
    "isURL": cel_net.is_url,
    "getScheme": cel_net.get_scheme,
    "getHost": cel_net.get_host,
    "getHostname": cel_net.get_hostname,
    "getPort": cel_net.get_port,
    "getEscapedPath": cel_net.get_escaped_path,
    "getQuery": cel_net.get_query,
    # cel-go ext/lists.go, version 3
    "lists.range": lists_range,
    "slice": list_slice,
    "flatten": flatten,
    "distinct": distinct,
    "reverse": reverse,
    "sort": sort,
    # library/format.go
    **cel_format.FUNCTIONS,
    # cel-go ext/strings.go at version 2: "…".format([…]) (ext/formatting.go)
    "format": cel_string_format.string_format,
}
"""The callbacks of this module by CEL name; ``x.f(a)`` is called as ``f(x, a)``. ``ip`` serves both
``ip(string)`` and ``cidr.ip()``."""
