"""Event names and timestamps of ``scheduler.live.status_writer``: valid for any pod name.

The oracle is the emulator's copy of the server's rule (``tests/integration/apivalidation.py``), written
independently of the code under test.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.live.status_writer import event_name, micro_time
from tests.integration import apivalidation as av

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
NS_2026 = 0x18A2B3C4D5E6F708  # a Unix time in nanoseconds, 16 hex digits like every instant from 2004 to 2115


@pytest.mark.parametrize("pod, expected", [
    ("fits-2", "fits-2.18a2b3c4d5e6f708"),
    ("a.b", "a.b.18a2b3c4d5e6f708"),
    ("x" * 236, "x" * 236 + ".18a2b3c4d5e6f708"),  # exactly 253 characters: still client-go's form
], ids=["plain", "dotted", "236-chars-fits-253"])
def test_event_name_is_pod_name_dot_hex_nanoseconds(pod: str, expected: str) -> None:
    assert event_name(pod, NS_2026) == expected


@pytest.mark.parametrize("length", [237, 253], ids=["237-chars", "253-chars"])
def test_event_name_over_253_characters_is_a_uuid(length: int) -> None:
    name = event_name("x" * length, NS_2026)

    assert UUID.fullmatch(name) and av.dns1123_subdomain(name) == []
    assert event_name("x" * length, NS_2026) != name  # random: two Events never share it


@given(st.from_regex(av.DNS1123_SUBDOMAIN_FMT, fullmatch=True).filter(lambda s: len(s) <= 253),
       st.integers(min_value=0, max_value=2**63 - 1))
def test_event_name_is_a_valid_name_for_every_valid_pod_name(pod: str, unix_ns: int) -> None:
    assert av.dns1123_subdomain(event_name(pod, unix_ns)) == []


@pytest.mark.parametrize("unix_ns, expected", [
    (0, "1970-01-01T00:00:00.000000Z"),
    (1_764_410_400_123_456_789, "2025-11-29T10:00:00.123456Z"),  # nanoseconds are cut, not rounded
], ids=["epoch", "microseconds-kept"])
def test_micro_time(unix_ns: int, expected: str) -> None:
    assert micro_time(unix_ns) == expected
    assert av.MICRO_TIME.fullmatch(expected)


@given(st.lists(st.integers(min_value=0, max_value=2**62), min_size=1, max_size=20))
def test_micro_time_reusing_a_second_matches_formatting_each_time(stamps: list[int]) -> None:
    for unix_ns in stamps:  # any order: a second formatted earlier, another in between, the same second again
        seconds, rest = divmod(unix_ns, 1_000_000_000)
        whole = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        assert micro_time(unix_ns) == f"{whole}.{rest // 1000:06d}Z"
