"""Session-wide guard: no test writes anything a real API server would refuse.

Every emulator (``tests/integration/apiserver.py`` and the servers built on it: the 1.36 and 1.25 clusters, the
lagging one, the chaos suite's) records each write its validation refuses in
:data:`~tests.integration.apiserver.REFUSALS`, answering it as a real kube-apiserver would (422 ``Invalid`` /
400 ``BadRequest``). A refusal the test did not ask for (``ApiServer.expect_refusals`` /
``ApiServer.expecting_refusal``, or the marker ``refusals_expected`` on a test that asserts every refusal it
provokes itself) fails that test at teardown, with the server's messages; and the session fails
when any happened at all, also under pytest-xdist (each worker sends its count to the controller).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.apiserver import REFUSALS, Refusal

_UNEXPECTED = pytest.StashKey[list[str]]()


def _describe(refusals: list[Refusal]) -> str:
    return "\n".join(f"  {r}" for r in refusals)


@pytest.fixture(autouse=True)
def _no_unexpected_refusals(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the test if an emulator refused one of its writes it did not expect to be refused."""
    before = len(REFUSALS)
    yield
    if request.node.get_closest_marker("refusals_expected"):
        return  # the test provokes refusals and asserts each itself
    unexpected = [r for r in REFUSALS[before:] if not r.expected]
    if unexpected:
        request.config.stash.setdefault(_UNEXPECTED, []).extend(f"{request.node.nodeid}: {r}" for r in unexpected)
        pytest.fail(f"the emulated API server refused {len(unexpected)} write(s) a real server refuses too:\n"
                    f"{_describe(unexpected)}", pytrace=False)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    unexpected = session.config.stash.get(_UNEXPECTED, [])
    workeroutput: dict[str, Any] | None = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller judges
        workeroutput["unexpected_refusals"] = unexpected
        return
    if unexpected:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist controller: collect each worker's unexpected refusals."""
    found = (getattr(node, "workeroutput", None) or {}).get("unexpected_refusals", [])
    node.config.stash.setdefault(_UNEXPECTED, []).extend(found)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    unexpected = config.stash.get(_UNEXPECTED, [])
    if unexpected:
        terminalreporter.section("writes the emulated API server refused")
        for line in unexpected:
            terminalreporter.write_line(line)
