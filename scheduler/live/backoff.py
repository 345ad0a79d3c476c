"""The wait before a failed API write is tried again: jittered exponential backoff, or longer when the server asks.

The binder's writes (:class:`~scheduler.live.api_writer.KubeWriter`), the pod status queue
(:class:`~scheduler.live.status_queue.StatusQueue`) and the group conditions
(:class:`~scheduler.live.group_conditions.GroupConditions`) each retry a failed write after
:meth:`Backoff.wait_s`: ``initial_s`` doubling per failed attempt up to ``max_s``, times a random factor in
[0.5, 1.5) so that writes which failed together are not retried together, and at least what the reply's
``Retry-After`` asks, up to ``max_s`` (:meth:`~scheduler.errors.ApiError.retry_wait_s`; client-go waits what
``Retry-After`` says before retrying a 429 or 5xx, ``rest/request.go``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from scheduler.errors import ApiError


@dataclass
class Backoff:
    """Jittered exponential backoff (module docstring). ``initial_s``, ``max_s``: seconds; ``rng``: the source of
    the jitter (seeded in tests)."""

    initial_s: float
    max_s: float
    rng: random.Random = field(default_factory=random.Random)

    def delay_s(self, attempt: int) -> float:
        """The backoff after failed attempt ``attempt`` (1 for the first), before jitter: ``initial_s ·
        2^(attempt−1)``, at most ``max_s``."""
        return min(self.max_s, self.initial_s * 2.0 ** min(attempt - 1, 64))

    def wait_s(self, attempt: int, exc: ApiError) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1 for the first) failed with ``exc``:
        :meth:`delay_s` times a factor in [0.5, 1.5), or ``exc``'s ``Retry-After`` when that is longer, at most
        ``max_s``."""
        return exc.retry_wait_s(self.delay_s(attempt) * (0.5 + self.rng.random()), self.max_s)
