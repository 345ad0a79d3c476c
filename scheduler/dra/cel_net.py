"""Kubernetes' IP, CIDR and URL CEL libraries, on ports of Go's ``net/netip`` and ``net/url``.

Kubernetes v1.37 compiles device selectors in its base CEL environment
(``k8s.io/apiserver/pkg/cel/environment/base.go``), which holds these libraries of
``k8s.io/apiserver/pkg/cel/library``, each a thin layer over Go's standard library:

* ``ip.go``: ``ip(s)``, ``isIP(s)``, ``ip.isCanonical(s)``, ``family()``, ``isUnspecified()``,
  ``isLoopback()``, ``isLinkLocalMulticast()``, ``isLinkLocalUnicast()``, ``isGlobalUnicast()`` and
  ``string(ip)``. Parsing follows Go's ``netip.ParseAddr`` (no leading zeros, no zones, no IPv4-mapped
  IPv6) and its error texts, which Kubernetes passes on;
* ``cidr.go``: ``cidr(s)``, ``isCIDR(s)``, ``containsIP(ip or string)``, ``containsCIDR(cidr or string)``,
  ``ip()``, ``masked()``, ``prefixLength()`` and ``string(cidr)``, following ``netip.ParsePrefix``;
* ``urls.go``: ``url(s)`` (what Go's ``url.ParseRequestURI`` accepts: an absolute URI or an absolute path),
  ``isURL(s)``, ``getScheme()``, ``getHost()``, ``getHostname()``, ``getPort()``, ``getEscapedPath()``,
  ``getQuery()``, following ``net/url``.

Values are one-key maps (:mod:`scheduler.dra.cel_values`): ``{"__ip__": "<Go Addr.String()>"}``,
``{"__cidr__": "<Go Prefix.String()>"}``, ``{"__url__": "<Go URL.String()>"}``: one text per value, so ``==``
compares them as Kubernetes does (``ip('2001:DB8::1') == ip('2001:db8::1')``; a prefix keeps its host bits, so
``cidr('10.0.0.1/8') != cidr('10.0.0.1/8').masked()``). Each function raises ``TypeError`` ("no such
overload") for an argument of another type and ``ValueError`` with Kubernetes' message for text that does not
parse; :mod:`scheduler.dra.cel` turns both into a ``CEL runtime error``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Final

from scheduler.dra.cel_values import (
    CIDR_KEY,
    IP_KEY,
    URL_KEY,
    accepts,
    as_text,
    go_quote,
    no_overload,
    opaque_text,
    type_name,
)

# --- IP addresses (library/ip.go, Go net/netip) -------------------------------------------------


@dataclass(frozen=True)
class Address:
    """An IPv4 (``bits == 32``) or IPv6 (``bits == 128``) address as an integer, like Go's ``netip.Addr``."""

    value: int
    bits: int
    zone: str = ""

    def __str__(self) -> str:
        """Go's ``Addr.String()``: dotted decimal, or RFC 5952 IPv6 (``::`` for the longest run of two or
        more zero groups, the first if tied; lower-case hex)."""
        if self.bits == 32:
            return ".".join(str(self.value >> shift & 0xFF) for shift in (24, 16, 8, 0))
        groups = [self.value >> (112 - 16 * i) & 0xFFFF for i in range(8)]
        if self.value >> 32 == 0xFFFF:
            return "::ffff:" + str(Address(self.value & 0xFFFFFFFF, 32))
        best_start, best_length, i = -1, 1, 0
        while i < 8:
            j = i
            while j < 8 and groups[j] == 0:
                j += 1
            if j - i > best_length:
                best_start, best_length = i, j - i
            i = j + 1 if j == i else j
        hexes = [format(g, "x") for g in groups]
        if best_start < 0:
            text = ":".join(hexes)
        else:
            text = ":".join(hexes[:best_start]) + "::" + ":".join(hexes[best_start + best_length:])
        return text + (f"%{self.zone}" if self.zone else "")

    @property
    def is_4in6(self) -> bool:
        return self.bits == 128 and self.value >> 32 == 0xFFFF

    def octet(self, index: int) -> int:
        return self.value >> (self.bits - 8 * (index + 1)) & 0xFF

    def group(self, index: int) -> int:
        return self.value >> (112 - 16 * index) & 0xFFFF


class _ParseAddrError(ValueError):
    """Go's ``parseAddrError``: ``ParseAddr("in"): msg (at "rest")``."""

    def __init__(self, text: str, message: str, at: str = "") -> None:
        suffix = f" (at {go_quote(at)})" if at else ""
        super().__init__(f"ParseAddr({go_quote(text)}): {message}{suffix}")


def parse_addr(text: str) -> Address:
    """Go's ``netip.ParseAddr`` (Go 1.24): dotted-quad IPv4 without leading zeros, or IPv6 with an optional
    ``%zone``. Raises ``ValueError`` with Go's message."""
    for char in text:
        if char == ".":
            return Address(_parse_ipv4(text, text), 32)
        if char == ":":
            return _parse_ipv6(text)
        if char == "%":
            raise _ParseAddrError(text, "missing IPv6 address")
    raise _ParseAddrError(text, "unable to parse IP")


def _parse_ipv4(whole: str, text: str) -> int:
    """Go's ``parseIPv4Fields``: errors name ``whole`` (the full input), positions are in ``text``."""
    value = position = digits = 0
    fields = []
    for i, char in enumerate(text):
        if "0" <= char <= "9":
            if digits == 1 and value == 0:
                raise _ParseAddrError(whole, "IPv4 field has octet with leading zero")
            value = value * 10 + ord(char) - ord("0")
            digits += 1
            if value > 255:
                raise _ParseAddrError(whole, "IPv4 field has value >255")
        elif char == ".":
            if i == 0 or i == len(text) - 1 or text[i - 1] == ".":
                raise _ParseAddrError(whole, "IPv4 field must have at least one digit", text[i:])
            if position == 3:
                raise _ParseAddrError(whole, "IPv4 address too long")
            fields.append(value)
            position += 1
            value = digits = 0
        else:
            raise _ParseAddrError(whole, "unexpected character", text[i:])
    if position < 3:
        raise _ParseAddrError(whole, "IPv4 address too short")
    fields.append(value)
    return fields[0] << 24 | fields[1] << 16 | fields[2] << 8 | fields[3]


_HEX: Final = frozenset("0123456789abcdefABCDEF")


def _parse_ipv6(whole: str) -> Address:
    """Go's ``parseIPv6``."""
    text, zone = whole, ""
    if "%" in whole:
        text, _, zone = whole.partition("%")
        if not zone:
            raise _ParseAddrError(whole, "zone must be a non-empty string")
    address = [0] * 16
    ellipsis = -1
    rest = text
    if rest.startswith("::"):
        ellipsis, rest = 0, rest[2:]
        if not rest:
            return Address(0, 128, zone)
    i = 0
    while i < 16:
        offset, accumulated = 0, 0
        while offset < len(rest) and rest[offset] in _HEX:
            accumulated = accumulated << 4 | int(rest[offset], 16)
            if offset > 3:
                raise _ParseAddrError(whole, "each group must have 4 or less digits", rest)
            if accumulated > 0xFFFF:
                raise _ParseAddrError(whole, "IPv6 field has value >=2^16", rest)
            offset += 1
        if offset == 0:
            raise _ParseAddrError(whole, "each colon-separated field must have at least one digit", rest)
        if offset < len(rest) and rest[offset] == ".":
            if ellipsis < 0 and i != 12:
                raise _ParseAddrError(whole, "embedded IPv4 address must replace the final 2 fields of the address",
                                      rest)
            if i + 4 > 16:
                raise _ParseAddrError(whole, "too many hex fields to fit an embedded IPv4 at the end of the address",
                                      rest)
            v4 = _parse_ipv4(whole, rest)
            address[i:i + 4] = [v4 >> 24 & 0xFF, v4 >> 16 & 0xFF, v4 >> 8 & 0xFF, v4 & 0xFF]
            rest = ""
            i += 4
            break
        address[i], address[i + 1] = accumulated >> 8, accumulated & 0xFF
        i += 2
        rest = rest[offset:]
        if not rest:
            break
        if rest[0] != ":":
            raise _ParseAddrError(whole, "unexpected character, want colon", rest)
        if len(rest) == 1:
            raise _ParseAddrError(whole, "colon must be followed by more characters", rest)
        rest = rest[1:]
        if rest[0] == ":":
            if ellipsis >= 0:
                raise _ParseAddrError(whole, "multiple :: in address", rest)
            ellipsis, rest = i, rest[1:]
            if not rest:
                break
    if rest:
        raise _ParseAddrError(whole, "trailing garbage after address", rest)
    if i < 16:
        if ellipsis < 0:
            raise _ParseAddrError(whole, "address string too short")
        gap = 16 - i
        address = address[:ellipsis] + [0] * gap + address[ellipsis:i]
    elif ellipsis >= 0:
        raise _ParseAddrError(whole, "the :: must expand to at least one field of zeros")
    return Address(int.from_bytes(bytes(address), "big"), 128, zone)


@functools.lru_cache(maxsize=1024)
def parse_ip(text: str) -> Address:
    """``parseIPAddr`` of ip.go: ``netip.ParseAddr`` refusing zones and IPv4-mapped IPv6 addresses.
    Raises ``ValueError`` with Kubernetes' message."""
    try:
        address = parse_addr(text)
    except ValueError as exc:
        raise ValueError(f"IP Address {go_quote(text)} parse error during conversion from string: {exc}") from None
    if address.zone:
        raise ValueError(f"IP address {go_quote(text)} with zone value is not allowed")
    if address.is_4in6:
        raise ValueError(f"IPv4-mapped IPv6 address {go_quote(text)} is not allowed")
    return address


def _ip_value(address: Address) -> dict[str, str]:
    return {IP_KEY: str(address)}


def _as_address(value: object, function: str) -> Address:
    return _address(opaque_text(value, IP_KEY, function))


_address = functools.lru_cache(maxsize=1024)(parse_addr)


def ip(value: object) -> dict[str, str]:
    """``ip(string)`` → an address; ``cidr.ip()`` → the prefix's address, host bits kept (ip.go, cidr.go)."""
    if isinstance(value, str):
        return _ip_value(parse_ip(value))
    if isinstance(value, dict) and type_name(value) == "net.CIDR":
        return _ip_value(_as_prefix(value, "ip").address)
    raise no_overload("ip", value)


def is_ip(value: object) -> bool:
    """``isIP(string)``: whether ``ip()`` would accept it."""
    return accepts(parse_ip, value, "isIP")


def ip_is_canonical(value: object) -> bool:
    """``ip.isCanonical(string)``: whether the text is the address's one canonical form; an error if it is no
    address."""
    text = as_text(value, "ip.isCanonical")
    return str(parse_ip(text)) == text


def family(value: object) -> int:
    """``ip.family()``: 4 or 6."""
    return 4 if _as_address(value, "family").bits == 32 else 6


def is_unspecified(value: object) -> bool:
    """``ip.isUnspecified()``: ``0.0.0.0`` or ``::``."""
    return _as_address(value, "isUnspecified").value == 0


def _is_loopback(address: Address) -> bool:
    return address.octet(0) == 127 if address.bits == 32 else address.value == 1


def _is_multicast(address: Address) -> bool:
    return address.octet(0) & 0xF0 == 0xE0 if address.bits == 32 else address.octet(0) == 0xFF


def _is_link_local_unicast(address: Address) -> bool:
    if address.bits == 32:
        return address.octet(0) == 169 and address.octet(1) == 254
    return address.group(0) & 0xFFC0 == 0xFE80


def is_loopback(value: object) -> bool:
    """``ip.isLoopback()``: ``127.0.0.0/8`` or ``::1`` (Go ``Addr.IsLoopback``)."""
    return _is_loopback(_as_address(value, "isLoopback"))


def is_link_local_multicast(value: object) -> bool:
    """``ip.isLinkLocalMulticast()``: ``224.0.0.0/24`` or ``ff02::/16`` with any flags (``ffX2::``)."""
    address = _as_address(value, "isLinkLocalMulticast")
    if address.bits == 32:
        return address.value >> 8 == 0xE00000
    return address.group(0) & 0xFF0F == 0xFF02


def is_link_local_unicast(value: object) -> bool:
    """``ip.isLinkLocalUnicast()``: ``169.254.0.0/16`` or ``fe80::/10``."""
    return _is_link_local_unicast(_as_address(value, "isLinkLocalUnicast"))


def is_global_unicast(value: object) -> bool:
    """``ip.isGlobalUnicast()`` (Go ``Addr.IsGlobalUnicast``): not unspecified, not the IPv4 broadcast
    address, not loopback, multicast or link-local unicast (private ranges count as global)."""
    address = _as_address(value, "isGlobalUnicast")
    if address.bits == 32 and address.value in (0, 0xFFFFFFFF):
        return False
    return not (address.value == 0 or _is_loopback(address) or _is_multicast(address)
                or _is_link_local_unicast(address))


# --- CIDR prefixes (library/cidr.go, Go netip.ParsePrefix) ---------------------------------------


@dataclass(frozen=True)
class Prefix:
    """An address and a prefix length, host bits kept, like Go's ``netip.Prefix``."""

    address: Address
    length: int

    def __str__(self) -> str:
        return f"{self.address}/{self.length}"

    def masked(self) -> Prefix:
        """The prefix with its host bits cleared (Go ``Prefix.Masked``)."""
        host = self.address.bits - self.length
        return Prefix(Address(self.address.value >> host << host, self.address.bits), self.length)

    def contains(self, address: Address) -> bool:
        """Whether ``address`` is in the prefix: same family, same leading ``length`` bits."""
        host = self.address.bits - self.length
        return address.bits == self.address.bits and address.value >> host == self.address.value >> host


def parse_prefix(text: str) -> Prefix:
    """Go's ``netip.ParsePrefix`` (Go 1.24). Raises ``ValueError`` with Go's message."""
    slash = text.rfind("/")
    if slash < 0:
        raise ValueError(f"netip.ParsePrefix({go_quote(text)}): no '/'")
    try:
        address = parse_addr(text[:slash])
    except ValueError as exc:
        raise ValueError(f"netip.ParsePrefix({go_quote(text)}): {exc}") from None
    if address.zone:
        raise ValueError(f"netip.ParsePrefix({go_quote(text)}): IPv6 zones cannot be present in a prefix")
    bits = text[slash + 1:]
    if not bits.isascii() or not bits.isdigit() or (len(bits) > 1 and bits[0] == "0"):
        raise ValueError(f"netip.ParsePrefix({go_quote(text)}): bad bits after slash: {go_quote(bits)}")
    if int(bits) > address.bits:
        raise ValueError(f"netip.ParsePrefix({go_quote(text)}): prefix length out of range")
    return Prefix(address, int(bits))


_CIDR_ERROR: Final = "network address parse error during conversion from string"


@functools.lru_cache(maxsize=1024)
def parse_cidr(text: str) -> Prefix:
    """``parseCIDR`` of cidr.go: ``netip.ParsePrefix`` refusing IPv4-mapped IPv6 addresses. Raises
    ``ValueError`` with Kubernetes' message, whose prefix ``stringToCIDR`` repeats."""
    try:
        prefix = parse_prefix(text)
    except ValueError as exc:
        raise ValueError(f"{_CIDR_ERROR}: {_CIDR_ERROR}: {exc}") from None
    if prefix.address.is_4in6:
        raise ValueError(f"{_CIDR_ERROR}: IPv4-mapped IPv6 address {go_quote(text)} is not allowed")
    return prefix


def _cidr_value(prefix: Prefix) -> dict[str, str]:
    return {CIDR_KEY: str(prefix)}


def _as_prefix(value: object, function: str) -> Prefix:
    return _prefix(opaque_text(value, CIDR_KEY, function))


_prefix = functools.lru_cache(maxsize=1024)(parse_prefix)


def cidr(value: object) -> dict[str, str]:
    """``cidr(string)`` → a prefix, host bits kept."""
    return _cidr_value(parse_cidr(as_text(value, "cidr")))


def is_cidr(value: object) -> bool:
    """``isCIDR(string)``: whether ``cidr()`` would accept it."""
    return accepts(parse_cidr, value, "isCIDR")


def contains_ip(prefix: object, other: object) -> bool:
    """``cidr.containsIP(ip or string)``: an address of the other family is never contained."""
    network = _as_prefix(prefix, "containsIP")
    address = parse_ip(other) if isinstance(other, str) else _as_address(other, "containsIP")
    return network.contains(address)


def contains_cidr(prefix: object, other: object) -> bool:
    """``cidr.containsCIDR(cidr or string)``: ``other`` is at least as long and starts with the prefix."""
    network = _as_prefix(prefix, "containsCIDR")
    inner = parse_cidr(other) if isinstance(other, str) else _as_prefix(other, "containsCIDR")
    return network.length <= inner.length and network.contains(inner.address)


def masked(value: object) -> dict[str, str]:
    """``cidr.masked()``: the canonical prefix, host bits cleared."""
    return _cidr_value(_as_prefix(value, "masked").masked())


def prefix_length(value: object) -> int:
    """``cidr.prefixLength()``."""
    return _as_prefix(value, "prefixLength").length


def to_string(value: object) -> str:
    """``string(ip)`` / ``string(cidr)``: the canonical text. The library calls this only for values its own
    ``string()`` does not convert (maps), so any other map is no overload."""
    if isinstance(value, dict) and type_name(value) in ("net.IP", "net.CIDR"):
        return str(next(iter(value.values())))
    raise no_overload("string", value)



# --- URLs (library/urls.go, Go net/url) ------------------------------------------------------------

_PATH, _PATH_SEGMENT, _HOST, _ZONE, _USER_PASSWORD, _QUERY_COMPONENT, _FRAGMENT = range(1, 8)
_ALNUM: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def _should_escape(char: str, mode: int) -> bool:
    """Go ``net/url.shouldEscape`` for one byte (a character above U+007F always escapes)."""
    if char in _ALNUM:
        return False
    if mode in (_HOST, _ZONE) and char in "!$&'()*+,;=:[]<>\"":
        return False
    if char in "-_.~":
        return False
    if char in "$&+,/:;=?@":
        return {_PATH: char == "?", _PATH_SEGMENT: char in "/;,?", _USER_PASSWORD: char in "@/?:",
                _QUERY_COMPONENT: True, _FRAGMENT: False}.get(mode, True)
    return not (mode == _FRAGMENT and char in "!()*")


class _URLError(ValueError):
    """Go's ``url.Error``: ``parse "<url>": <reason>``."""

    def __init__(self, text: str, reason: str) -> None:
        super().__init__(f"parse {go_quote(text)}: {reason}")


def _unescape(text: str, mode: int) -> str:
    """Go ``net/url.unescape``: ``%XX`` decoded (``+`` is a space in a query), or ``ValueError`` with Go's
    reason for a bad escape or a character a host cannot hold."""
    i = 0
    while i < len(text):
        char = text[i]
        if char == "%":
            escape = text[i:i + 3]
            if len(escape) < 3 or escape[1] not in _HEX or escape[2] not in _HEX:
                raise ValueError(f"invalid URL escape {go_quote(text[i:i + 3])}")
            value = int(escape[1:], 16)
            if mode == _HOST and value < 0x80 and escape != "%25":
                raise ValueError(f"invalid URL escape {go_quote(escape)}")
            zone_refuses = value >= 0x80 or _should_escape(chr(value), _HOST)
            if mode == _ZONE and escape != "%25" and value != 0x20 and zone_refuses:
                raise ValueError(f"invalid URL escape {go_quote(escape)}")
            i += 3
        else:
            if mode in (_HOST, _ZONE) and char < "\x80" and _should_escape(char, mode):
                raise ValueError(f"invalid character {go_quote(char)} in host name")
            i += 1
    raw = text.encode()
    out = bytearray()
    i = 0
    while i < len(raw):
        byte = raw[i]
        if byte == 0x25:  # %
            out.append(int(raw[i + 1:i + 3], 16))
            i += 3
            continue
        out.append(0x20 if byte == 0x2B and mode == _QUERY_COMPONENT else byte)
        i += 1
    return out.decode(errors="replace")


def _escape(text: str, mode: int) -> str:
    """Go ``net/url.escape``: each byte that must be escaped as ``%XX`` (upper case)."""
    out = []
    for byte in text.encode():
        char = chr(byte)
        if char == " " and mode == _QUERY_COMPONENT:
            out.append("+")
        elif byte >= 0x80 or _should_escape(char, mode):
            out.append(f"%{byte:02X}")
        else:
            out.append(char)
    return "".join(out)


def _valid_optional_port(port: str) -> bool:
    return port == "" or (port[0] == ":" and all("0" <= c <= "9" for c in port[1:]))


@dataclass(frozen=True)
class URL:
    """The parts of a URL that Go's ``net/url.URL`` holds, as :func:`parse_url` sets them."""

    scheme: str = ""
    opaque: str = ""
    user: tuple[str, str | None] | None = None  # (username, password or None)
    host: str = ""
    path: str = ""
    raw_path: str = ""
    force_query: bool = False
    raw_query: str = ""
    fragment: str = ""
    raw_fragment: str = ""

    def escaped_path(self) -> str:
        """Go ``URL.EscapedPath``."""
        if self.raw_path and _valid_encoded(self.raw_path, _PATH):
            try:
                if _unescape(self.raw_path, _PATH) == self.path:
                    return self.raw_path
            except ValueError:
                pass
        return "*" if self.path == "*" else _escape(self.path, _PATH)

    def __str__(self) -> str:
        """Go ``URL.String``, which Kubernetes' ``==`` on URLs compares."""
        out = f"{self.scheme}:" if self.scheme else ""
        if self.opaque:
            out += self.opaque
        else:
            if self.scheme or self.host or self.user is not None:
                if self.host or self.path or self.user is not None:
                    out += "//"
                if self.user is not None:
                    name, password = self.user
                    out += _escape(name, _USER_PASSWORD)
                    out += f":{_escape(password, _USER_PASSWORD)}@" if password is not None else "@"
                if self.host:
                    out += _escape(self.host, _HOST)
            path = self.escaped_path()
            if path and path[0] != "/" and self.host:
                out += "/"
            if not out and ":" in path.partition("/")[0]:
                out += "./"
            out += path
        if self.force_query or self.raw_query:
            out += "?" + self.raw_query
        if self.fragment:
            fragment = self.raw_fragment
            if not (fragment and _valid_encoded(fragment, _FRAGMENT) and _unescape_or_none(fragment) == self.fragment):
                fragment = _escape(self.fragment, _FRAGMENT)
            out += "#" + fragment
        return out

    def split_host_port(self) -> tuple[str, str]:
        """Go ``splitHostPort``: the host without a valid ``:port`` and without IPv6 brackets, and the port."""
        host, port = self.host, ""
        colon = host.rfind(":")
        if colon != -1 and _valid_optional_port(host[colon:]):
            host, port = host[:colon], host[colon + 1:]
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        return host, port


def _unescape_or_none(text: str) -> str | None:
    try:
        return _unescape(text, _FRAGMENT)
    except ValueError:
        return None


def _valid_encoded(text: str, mode: int) -> bool:
    return all(c in "!$&'()*+,;=:@[]%" or not _should_escape(c, mode) for c in text)


def _go_scheme(text: str) -> tuple[str, str]:
    """Go ``getScheme``: ``(scheme, rest)``, or ``("", text)`` when ``text`` has none."""
    for i, char in enumerate(text):
        if char.isascii() and char.isalpha():
            continue
        if char.isascii() and (char.isdigit() or char in "+-."):
            if i == 0:
                return "", text
            continue
        if char == ":":
            if i == 0:
                raise ValueError("missing protocol scheme")
            return text[:i], text[i + 1:]
        return "", text
    return "", text


def _parse_host(host: str) -> str:
    """Go ``net/url.parseHost`` (Go 1.24): an IP literal in brackets must be IPv6, a port must be digits."""
    bracket = host.rfind("[")
    if bracket > 0:
        raise ValueError("invalid IP-literal")
    if bracket == 0:
        close = host.rfind("]")
        if close < 0:
            raise ValueError("missing ']' in host")
        colon_port = host[close + 1:]
        if not _valid_optional_port(colon_port):
            raise ValueError(f"invalid port {go_quote(colon_port)} after host")
        port = _unescape(colon_port, _HOST)
        name = host[1:close]
        zone = name.find("%25")
        if zone >= 0:
            unescaped = _unescape(name[:zone], _HOST) + _unescape(name[zone:], _ZONE)
        else:
            unescaped = _unescape(name, _HOST)
        try:
            address = parse_addr(unescaped)
        except ValueError as exc:
            raise ValueError(f"invalid host: {exc}") from None
        if address.bits == 32:
            raise ValueError("invalid IP-literal")
        return f"[{unescaped}]{port}"
    colon = host.rfind(":")
    if colon != -1 and not _valid_optional_port(host[colon:]):
        raise ValueError(f"invalid port {go_quote(host[colon:])} after host")
    return _unescape(host, _HOST)


_USERINFO: Final = _ALNUM | frozenset("-._:~!$&'()*+,;=%@")


def _parse(text: str, via_request: bool) -> URL:
    """Go ``net/url.parse``; raises ``ValueError`` with Go's reason."""
    if any(c < " " or c == "\x7f" for c in text):
        raise ValueError("net/url: invalid control character in URL")
    if text == "" and via_request:
        raise ValueError("empty url")
    if text == "*":
        return URL(path="*")
    scheme, rest = _go_scheme(text)
    scheme = scheme.lower()
    force_query, raw_query = False, ""
    if rest.endswith("?") and rest.count("?") == 1:
        force_query, rest = True, rest[:-1]
    else:
        rest, _, raw_query = rest.partition("?")
    if not rest.startswith("/"):
        if scheme:
            return URL(scheme=scheme, opaque=rest, force_query=force_query, raw_query=raw_query)
        if via_request:
            raise ValueError("invalid URI for request")
        if ":" in rest.partition("/")[0]:
            raise ValueError("first path segment in URL cannot contain colon")
    user: tuple[str, str | None] | None = None
    host = ""
    if (scheme or (not via_request and not rest.startswith("///"))) and rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        rest = slash + path
        at = authority.rfind("@")
        host = _parse_host(authority[at + 1:])
        if at >= 0:
            userinfo = authority[:at]
            if not all(c in _USERINFO for c in userinfo):
                raise ValueError("net/url: invalid userinfo")
            name, colon, password = userinfo.partition(":")
            user = (_unescape(name, _USER_PASSWORD), _unescape(password, _USER_PASSWORD) if colon else None)
    path = _unescape(rest, _PATH)
    raw_path = "" if _escape(path, _PATH) == rest else rest
    return URL(scheme, "", user, host, path, raw_path, force_query, raw_query)


@functools.lru_cache(maxsize=1024)
def parse_url(text: str) -> URL:
    """``url(string)`` of urls.go: Go's ``url.ParseRequestURI`` must accept the text (an absolute URI or an
    absolute path), then ``url.Parse`` gives the parts (with the fragment). Raises ``ValueError`` with
    Kubernetes' message (``URL parse error during conversion from string: parse "…": …``)."""
    try:
        _parse(text, via_request=True)
        without, hash_sign, fragment = text.partition("#")
        try:
            parsed = _parse(without, via_request=False)
        except ValueError as exc:
            raise _URLError(without, str(exc)) from None
        if hash_sign:
            unescaped = _unescape(fragment, _FRAGMENT)
            raw = "" if _escape(unescaped, _FRAGMENT) == fragment else fragment
            parsed = URL(**{**parsed.__dict__, "fragment": unescaped, "raw_fragment": raw})
    except _URLError as exc:
        raise ValueError(f"URL parse error during conversion from string: {exc}") from None
    except ValueError as exc:
        raise ValueError(f"URL parse error during conversion from string: {_URLError(text, str(exc))}") from None
    return parsed


def url(value: object) -> dict[str, str]:
    """``url(string)``: the URL, as the one-key map of its Go ``String()`` (what ``==`` compares)."""
    return {URL_KEY: str(parse_url(as_text(value, "url")))}


def is_url(value: object) -> bool:
    """``isURL(string)``: whether Go's ``url.ParseRequestURI`` accepts it."""
    return accepts(functools.partial(_parse, via_request=True), value, "isURL")


def request_uri_error(text: str) -> str | None:
    """Go's error for ``url.ParseRequestURI(text)`` (``parse "<text>": <reason>``), or None if it accepts the text:
    what the format library's ``uri`` format reports (format.go)."""
    try:
        _parse(text, via_request=True)
    except ValueError as exc:
        return str(_URLError(text, str(exc)))
    return None


def _as_url(value: object, function: str) -> URL:
    return parse_url(opaque_text(value, URL_KEY, function))


def get_scheme(value: object) -> str:
    """``url.getScheme()``: lower-cased, ``""`` for a path."""
    return _as_url(value, "getScheme").scheme


def get_host(value: object) -> str:
    """``url.getHost()``: host and port, IPv6 in brackets."""
    return _as_url(value, "getHost").host


def get_hostname(value: object) -> str:
    """``url.getHostname()``: the host without port or brackets."""
    return _as_url(value, "getHostname").split_host_port()[0]


def get_port(value: object) -> str:
    """``url.getPort()``: the port, ``""`` if none."""
    return _as_url(value, "getPort").split_host_port()[1]


def get_escaped_path(value: object) -> str:
    """``url.getEscapedPath()``: Go ``URL.EscapedPath``."""
    return _as_url(value, "getEscapedPath").escaped_path()


def get_query(value: object) -> dict[str, list[str]]:
    """``url.getQuery()``: Go ``URL.Query()``: unescaped keys to their values, malformed pairs dropped."""
    query: dict[str, list[str]] = {}
    for pair in _as_url(value, "getQuery").raw_query.split("&"):
        if not pair or ";" in pair:
            continue
        key, _, text = pair.partition("=")
        try:
            key, text = _unescape(key, _QUERY_COMPONENT), _unescape(text, _QUERY_COMPONENT)
        except ValueError:
            continue
        query.setdefault(key, []).append(text)
    return query
