"""Scheduling outcomes as values: the ``Code`` set, a frozen ``Status`` and the reason aggregator.

Mirrors kube-scheduler's framework (``staging/src/k8s.io/kube-scheduler/framework/interface.go``):
a Filter returns None for success or a Status whose code tells the caller what to do —
``UNSCHEDULABLE`` (preemption may help), ``UNSCHEDULABLE_AND_UNRESOLVABLE`` (it cannot: a
taint, a selector, a cordon), ``ERROR`` (an internal fault). Callers branch on the code,
never on the message.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


class Code(enum.Enum):
    """kube-scheduler's result codes that this scheduler produces."""

    SUCCESS = "Success"
    ERROR = "Error"
    UNSCHEDULABLE = "Unschedulable"
    UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"


@dataclass(frozen=True, slots=True)
class Status:
    """A non-success Filter result: ``code``, short stable ``reasons`` and the ``plugin`` that said so."""

    code: Code
    reasons: tuple[str, ...]
    plugin: str


NO_NODE_AVAILABLE = "0/{total} nodes are available"
"""Prefix of the node histogram; ``framework/types.go`` ``NoNodeAvailableMsg`` (v1.37)."""


def node_histogram(total: int, reasons_per_node: Iterable[Iterable[str]]) -> str:
    """kube-scheduler's ``FitError.Error()``: ``0/N nodes are available: 3 Insufficient cpu, 2 ….``

    ``total``: nodes considered; ``reasons_per_node``: the reasons each rejected node gave
    (a node may give several, each counted). Count strings are sorted as text, as upstream does.
    """
    counts: Counter[str] = Counter()
    for reasons in reasons_per_node:
        counts.update(reasons)
    return format_histogram(total, counts)


def format_histogram(total: int, counts: Mapping[str, int]) -> str:
    """The same message from reason counts already summed over nodes (zero counts are left out)."""
    parts = sorted(f"{n} {reason}" for reason, n in counts.items() if n)
    head = NO_NODE_AVAILABLE.format(total=total)
    return f"{head}: {', '.join(parts)}." if parts else f"{head}."
