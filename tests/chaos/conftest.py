"""pytest wiring of the chaos suite: the figures are printed and saved at the end of the session.

Every test module sets ``pytestmark = pytest.mark.chaos``; ``make test`` deselects the marker
(``-m "not chaos"`` in the pytest options), ``make chaos`` runs ``pytest -m chaos tests/chaos``.
The ``chaos`` fixture opens a :class:`~tests.chaos.harness.Harness` and keeps its report;
:func:`pytest_terminal_summary` prints one line per variant, the details of every failed
assertion and a table, and writes ``.chaos-report.json``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.chaos.harness import Harness, open_harness
from tests.chaos.report import REPORT_PATH, VariantReport, table, write_json

LOG_ROOT = REPORT_PATH.parent / ".chaos-logs"
_REPORTS = pytest.StashKey[list[VariantReport]]()
INCOMPLETE = "the variant ran to its end"


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_REPORTS] = []


@pytest.fixture
def chaos(request: pytest.FixtureRequest) -> Callable[[str], contextlib.AbstractAsyncContextManager[Harness]]:
    """``async with chaos("variant") as h:`` — a harness whose report joins the session's summary."""
    reports = request.config.stash[_REPORTS]

    @contextlib.asynccontextmanager
    async def open_variant(variant: str) -> AsyncIterator[Harness]:
        async with open_harness(variant, LOG_ROOT) as h:
            try:
                yield h
            except BaseException as exc:
                if not h.judged:  # a timeout or a harness error before the verdict: the variant did not complete
                    h.report.failed.setdefault(INCOMPLETE, []).append(f"{type(exc).__name__}: {exc}"[:300])
                raise
            finally:
                reports.append(h.report)

    return open_variant


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    reports = config.stash.get(_REPORTS, [])
    if not reports:
        return
    write = terminalreporter.write_line
    terminalreporter.section("chaos suite")
    for report in reports:
        write(report.line())
    for report in reports:
        for line in report.details():
            write(line)
    write("")
    for line in table(reports).splitlines():
        write(line)
    write_json(reports)
    write(f"figures written to {REPORT_PATH.name}; scheduler logs under {LOG_ROOT.name}/")
