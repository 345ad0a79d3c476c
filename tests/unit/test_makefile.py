"""The Makefile's installs (issue 9, item 8): ``make run`` installs the runtime only, ``make test``
the dev extras, and each notices what the other already installed.

Runs ``make -n`` (print, do not run) on a copy of the Makefile and pyproject.toml in a temporary
directory, with the venv and its stamps faked as files, so nothing is installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV = "python3 -m venv .venv"
RUNTIME = "pip install --quiet -e ."
DEV = "pip install --quiet -e '.[dev]'"

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def tree(tmp_path: Path, *stamps: str, stale: bool = False) -> Path:
    """A checkout with ``.venv/bin/python`` (unless no stamp is given: a fresh clone) and ``stamps``
    newer than pyproject.toml (older with ``stale``: pyproject.toml changed since)."""
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    os.utime(tmp_path / "pyproject.toml", (1_000_000, 1_000_000))
    if stamps:
        (tmp_path / ".venv" / "bin").mkdir(parents=True)
        (tmp_path / ".venv" / "bin" / "python").write_text("")
    for stamp in stamps:
        (tmp_path / ".venv" / stamp).write_text("")
        when = 500_000 if stale else 2_000_000
        os.utime(tmp_path / ".venv" / stamp, (when, when))
    return tmp_path


def planned(where: Path, target: str) -> set[str]:
    """Which of the venv creation, the runtime install and the dev install ``make target`` would run."""
    out = subprocess.run(["make", "-n", "-C", str(where), target, "PYTHON=python3"], capture_output=True,
                         text=True, check=True).stdout
    return {name for name, command in (("venv", VENV), ("runtime", RUNTIME), ("dev", DEV)) if command in out}


@pytest.mark.parametrize(
    ("stamps", "stale", "target", "steps"),
    [
        pytest.param((), False, "run", {"venv", "runtime"}, id="fresh-clone-run-installs-the-runtime-only"),
        pytest.param((), False, "test", {"venv", "dev"}, id="fresh-clone-test-installs-the-dev-extras"),
        pytest.param((".installed-runtime",), False, "test", {"dev"}, id="test-after-run-adds-the-dev-extras"),
        pytest.param((".installed-runtime",), False, "run", set(), id="run-after-run-installs-nothing"),
        pytest.param((".installed-runtime", ".installed-dev"), False, "run", set(),
                     id="run-after-test-installs-nothing"),
        pytest.param((".installed-runtime", ".installed-dev"), False, "lint", set(),
                     id="lint-after-test-installs-nothing"),
        pytest.param((".installed-runtime", ".installed-dev"), True, "run", {"runtime"},
                     id="changed-pyproject-reinstalls-for-run"),
        pytest.param((".installed-runtime", ".installed-dev"), True, "test", {"dev"},
                     id="changed-pyproject-reinstalls-for-test"),
    ],
)
def test_each_target_installs_what_it_needs_once(tmp_path: Path, stamps: tuple[str, ...], stale: bool, target: str,
                                                 steps: set[str]) -> None:
    assert planned(tree(tmp_path, *stamps, stale=stale), target) == steps
