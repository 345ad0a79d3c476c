"""The figures of a chaos run: one :class:`VariantReport` per variant, a summary line each, a table, JSON.

The lines and the table are printed at the end of the pytest session (``conftest.py``) so they can
be quoted as they stand; :func:`write_json` puts the same figures in ``.chaos-report.json``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pytest

from tests.chaos.atrest import Check, Verdict

REPORT_PATH = Path(__file__).resolve().parents[2] / ".chaos-report.json"


@dataclass
class VariantReport:
    """What one variant did and found; every count is of this variant alone."""

    variant: str
    seed: int
    kills: int = 0
    kill_points: list[str] = field(default_factory=list)
    """Per kill: the write it followed (``bind #7 of victim-2``)."""
    kills_missed: int = 0
    """Kill switches armed that never fired (the writes they waited for did not come)."""
    restarts: int = 0
    half_at_kill: list[int] = field(default_factory=list)
    """Per kill: gangs with 0 < bound < minCount once the killed process was gone (earlier ones included)."""
    half_after_kills: list[str] = field(default_factory=list)
    """Distinct gangs found partial right after some kill."""
    faults: dict[str, dict[str, int]] = field(default_factory=dict)
    """Injected errors: request kind → status → count."""
    dropped_in_flight: int = 0
    watch_resets: int = 0
    compactions: int = 0
    watch_410s: int = 0
    half_seen: int = 0
    """Distinct gangs the sampler saw partial at some point (transient or not)."""
    half_longest_s: float = 0.0
    requests: dict[str, int] = field(default_factory=dict)
    at_rest: dict[str, int] = field(default_factory=dict)
    failed: dict[str, list[str]] = field(default_factory=dict)
    """Failed assertion → what it found (empty when the variant passed)."""
    notes: list[str] = field(default_factory=list)
    settle_s: float = 0.0
    duration_s: float = 0.0

    def record(self, verdict: Verdict, extra: dict[str, list[str]] | None = None) -> None:
        """Take the at-rest verdict (and the variant's own assertions, e.g. tracebacks) into the report."""
        self.at_rest = verdict.states()
        self.settle_s = round(verdict.waited_s, 1)
        self.notes += verdict.notes
        found = {check.value: items for check, items in verdict.found.items() if items}
        found.update({name: items for name, items in (extra or {}).items() if items})
        self.failed = found

    @property
    def passed(self) -> bool:
        return not self.failed

    def assert_passed(self) -> None:
        """Fail the test with the failed assertions and their findings (no traceback of the harness)."""
        if not self.passed:
            pytest.fail("\n".join([self.line(), *self.details()]), pytrace=False)

    def faults_total(self) -> int:
        return sum(n for by_code in self.faults.values() for n in by_code.values())

    def line(self) -> str:
        """One line that can be quoted: what was done, what was left, which assertions failed and how often."""
        faults = ", ".join(f"{kind} {sum(c.values())}" for kind, c in self.faults.items()) or "none"
        rest = ", ".join(f"{n} {state}" for state, n in self.at_rest.items()) or "no gangs"
        verdict = "PASS" if self.passed else "FAIL: " + "; ".join(
            f"{name} ×{len(items)}" for name, items in self.failed.items())
        return (f"chaos {self.variant} seed={self.seed}: kills={self.kills} (missed {self.kills_missed}) "
                f"restarts={self.restarts} half-after-kills={len(self.half_after_kills)} faults={self.faults_total()} "
                f"[{faults}] watch-resets={self.watch_resets} compactions={self.compactions} 410s={self.watch_410s} "
                f"half-seen={self.half_seen} (longest {self.half_longest_s:.1f} s) | at rest after "
                f"{self.settle_s:.1f} s: {rest} | {verdict} | {self.duration_s:.0f} s")

    def details(self) -> list[str]:
        """Each failed assertion with up to five of its findings."""
        out = []
        for name, items in self.failed.items():
            out.append(f"  {self.variant}: {name} ({len(items)})")
            out += [f"    - {item}" for item in items[:5]]
            if len(items) > 5:
                out.append(f"    … and {len(items) - 5} more")
        return out


COLUMNS = ("variant", "kills", "faults", "resets", "410s", "half after kill", "half seen", "full", "full w/o cond",
           "partial", "pending", "failed assertions")


def _row(r: VariantReport) -> tuple[str, ...]:
    failed = ", ".join(f"{_short(name)}×{len(v)}" for name, v in r.failed.items()) or "-"
    return (r.variant, str(r.kills), str(r.faults_total()), str(r.watch_resets), str(r.watch_410s),
            str(len(r.half_after_kills)), str(r.half_seen), str(r.at_rest.get("full", 0)),
            str(r.at_rest.get("full-without-condition", 0)), str(r.at_rest.get("partial", 0)),
            str(r.at_rest.get("pending", 0)), failed)


_SHORT = {Check.NO_PARTIAL_GANG.value: "partial", Check.INITIALLY_SCHEDULED.value: "no-condition",
          Check.NO_OVERCOMMIT.value: "overcommit", Check.NO_DEVICE_TWICE.value: "device-twice",
          Check.EXPECTED_BOUND.value: "not-bound"}


def _short(name: str) -> str:
    return _SHORT.get(name, name)


def table(reports: Sequence[VariantReport]) -> str:
    rows = [COLUMNS, *(_row(r) for r in reports)]
    total = ("total", *(str(sum(int(row[i]) for row in rows[1:])) for i in range(1, len(COLUMNS) - 1)),
             str(sum(not r.passed for r in reports)) + " variant(s) failed")
    rows.append(total)
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    return "\n".join(" | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows)


def write_json(reports: Sequence[VariantReport], path: Path = REPORT_PATH) -> None:
    path.write_text(json.dumps({"variants": [asdict(r) | {"passed": r.passed} for r in reports],
                                "passed": all(r.passed for r in reports)}, indent=2) + "\n")
