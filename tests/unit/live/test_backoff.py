"""Backoff: the wait before a failed API write is tried again."""

from __future__ import annotations

import random

import pytest

from scheduler.errors import ApiError
from scheduler.live.backoff import Backoff

UNAVAILABLE = ApiError(503, "ServiceUnavailable", "try again")


def throttled(seconds: float) -> ApiError:
    return ApiError(429, "TooManyRequests", "too many requests", retry_after_s=seconds)


def test_the_delay_doubles_per_failed_attempt_up_to_the_cap() -> None:
    backoff = Backoff(1.0, 20.0)
    assert [backoff.delay_s(n) for n in range(1, 8)] == [1.0, 2.0, 4.0, 8.0, 16.0, 20.0, 20.0]
    assert backoff.delay_s(10_000) == 20.0  # no overflow after many failures
    assert Backoff(30.0, 20.0).delay_s(1) == 20.0  # the cap holds from the first attempt


@pytest.mark.parametrize("attempt", [1, 2, 3, 6])
def test_the_wait_is_the_delay_times_a_factor_in_half_to_one_and_a_half(attempt: int) -> None:
    backoff = Backoff(1.0, 20.0, random.Random(7))
    waits = [backoff.wait_s(attempt, UNAVAILABLE) for _ in range(500)]
    delay = backoff.delay_s(attempt)
    assert all(0.5 * delay <= w < 1.5 * delay for w in waits)
    assert min(waits) < 0.6 * delay and max(waits) > 1.4 * delay  # jittered across the whole range


def test_retry_after_is_waited_when_longer_than_the_backoff_and_capped() -> None:
    backoff = Backoff(1.0, 20.0, random.Random(7))
    assert backoff.wait_s(1, throttled(7)) == 7.0
    assert backoff.wait_s(1, throttled(300)) == 20.0  # at most the cap
    assert 10.0 <= backoff.wait_s(6, throttled(1)) < 30.0  # the jittered backoff (20 s), when longer than asked
