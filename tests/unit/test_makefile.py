"""The Makefile: ``make run`` installs the runtime only (from requirements.lock, with its hashes), ``make test``
the dev extras beside it, each notices what the other already installed; ``make help`` lists the targets from
their ``##`` comments; ``make clean`` removes what the installs leave; a ``.venv`` made by another Python is
refused with the advice to run ``make clean``.

The install plans are read with ``make -n`` (print, do not run) on a copy of the Makefile, pyproject.toml and
the lock in a temporary directory, with the venv and its stamps faked as files, so nothing is installed; the
venv check runs for real against a fake ``.venv/bin/python``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV = "python3 -m venv .venv"
RUNTIME = "pip install --quiet --require-hashes -r requirements.lock"
DEV = "pip install --quiet -e '.[dev]'"
PYTHON_VERSION = "{}.{}".format(*sys.version_info[:2])

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def tree(tmp_path: Path, *stamps: str, stale: bool = False) -> Path:
    """A checkout with ``.venv/bin/python`` (unless no stamp is given: a fresh clone) and ``stamps``
    newer than pyproject.toml and the lock (older with ``stale``: they changed since)."""
    for name in ("Makefile", "pyproject.toml", "requirements.lock"):
        shutil.copy(ROOT / name, tmp_path / name)
        os.utime(tmp_path / name, (1_000_000, 1_000_000))
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
        pytest.param((), False, "test", {"venv", "runtime", "dev"}, id="fresh-clone-test-adds-the-dev-extras"),
        pytest.param((".installed-runtime",), False, "test", {"dev"}, id="test-after-run-adds-the-dev-extras"),
        pytest.param((".installed-runtime",), False, "run", set(), id="run-after-run-installs-nothing"),
        pytest.param((".installed-runtime", ".installed-dev"), False, "run", set(),
                     id="run-after-test-installs-nothing"),
        pytest.param((".installed-runtime", ".installed-dev"), False, "lint", set(),
                     id="lint-after-test-installs-nothing"),
        pytest.param((".installed-runtime", ".installed-dev"), True, "run", {"runtime"},
                     id="changed-pyproject-or-lock-reinstalls-for-run"),
        pytest.param((".installed-runtime", ".installed-dev"), True, "test", {"runtime", "dev"},
                     id="changed-pyproject-or-lock-reinstalls-for-test"),
    ],
)
def test_each_target_installs_what_it_needs_once(tmp_path: Path, stamps: tuple[str, ...], stale: bool, target: str,
                                                 steps: set[str]) -> None:
    assert planned(tree(tmp_path, *stamps, stale=stale), target) == steps


def test_the_runtime_is_installed_from_the_lock_and_the_package_without_resolving_again(tmp_path: Path) -> None:
    out = subprocess.run(["make", "-n", "-C", str(tree(tmp_path)), "run", "PYTHON=python3"], capture_output=True,
                         text=True, check=True).stdout
    assert out.index(RUNTIME) < out.index("pip install --quiet --no-deps -e .")


def make(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "--no-print-directory", "-C", str(where), *args, f"PYTHON={sys.executable}"],
                          capture_output=True, text=True, check=False)


def commented_targets() -> dict[str, str]:
    text = (ROOT / "Makefile").read_text()
    return dict(re.findall(r"^([a-z][a-z-]*):[^\n]*?## (.+)$", text, re.MULTILINE))


@pytest.mark.parametrize("args", [pytest.param(["help"], id="make-help"), pytest.param([], id="bare-make")])
def test_help_lists_every_target_with_its_comment(tmp_path: Path, args: list[str]) -> None:
    done = make(tree(tmp_path), *args)
    assert done.returncode == 0, done.stderr
    listed = dict(re.findall(r"^  make (\S+) +(.+)$", done.stdout, re.MULTILINE))
    assert listed == commented_targets()
    assert {"help", "run", "test", "lint", "chaos", "bench", "manifests", "lock", "clean"} <= set(listed)
    assert not (tmp_path / ".venv").exists()  # help installs nothing


def test_every_public_target_has_a_help_comment() -> None:
    phony = re.search(r"^\.PHONY: (.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert phony is not None
    assert set(phony.group(1).split()) - set(commented_targets()) == {"venv-check"}  # internal


def test_clean_removes_the_venv_the_build_metadata_and_the_caches(tmp_path: Path) -> None:
    where = tree(tmp_path, ".installed-runtime")
    made = [".venv", "gang_scheduler.egg-info", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis"]
    for name in made[1:]:
        (where / name).mkdir()
    done = make(where, "clean")
    assert done.returncode == 0, done.stderr
    assert [name for name in made if (where / name).exists()] == []
    assert (where / "Makefile").exists() and (where / "requirements.lock").exists()


def fake_venv(where: Path, script: str | None) -> None:
    """``.venv/bin/python`` as a shell script (``None``: a link to an interpreter that is gone)."""
    python = where / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    if script is None:
        python.symlink_to(where / "removed-python3.9")
    else:
        python.write_text(f"#!/bin/sh\n{script}\n")
        python.chmod(0o755)


@pytest.mark.parametrize(("script", "message"), [
    pytest.param('echo 3.9', f"error: .venv was made by Python 3.9, {sys.executable} is Python {PYTHON_VERSION}: "
                 "run `make clean`", id="older-python"),
    pytest.param(None, "error: .venv has no working Python (its interpreter is gone): run `make clean`",
                 id="interpreter-removed"),
])
@pytest.mark.parametrize("target", ["run", "test"])
def test_a_venv_of_another_python_is_refused_with_the_fix(tmp_path: Path, script: str | None, message: str,
                                                          target: str) -> None:
    where = tree(tmp_path)
    fake_venv(where, script)
    done = make(where, target)
    assert done.returncode != 0
    assert message in done.stderr.splitlines()
    assert "pip install" not in done.stdout  # nothing was installed into it


def test_a_venv_of_this_python_passes_the_check(tmp_path: Path) -> None:
    where = tree(tmp_path)
    fake_venv(where, f"echo {PYTHON_VERSION}")
    done = make(where, "venv-check")
    assert (done.returncode, done.stderr) == (0, "")
