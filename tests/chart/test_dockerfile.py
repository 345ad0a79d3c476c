"""What can be checked of the Dockerfile without a container engine (none runs on our machines).

Parsed statically: the base images are official Python images pinned by tag, the runtime stage
runs as a numeric non-root user, installs nothing but the wheels built from this repository
(offline), and its entrypoint is the console script of pyproject.toml running ``run``. The
chart's pod securityContext agrees with the image's user. Building and running the image is not
verified here.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from dataclasses import dataclass, field

import pytest

from scheduler.cli import main as cli_main
from scheduler.config import Settings
from tests.chart.helmchart import ROOT, objects, render

DOCKERFILE = ROOT / "Dockerfile"


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def args(self, keyword: str) -> list[str]:
        return [arg for kw, arg in self.instructions if kw == keyword]


def stages() -> list[Stage]:
    """The Dockerfile's stages: FROM, then (INSTRUCTION, arguments) with continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    result: list[Stage] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        keyword, _, rest = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            words = rest.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            result.append(Stage(words[0], name))
        else:
            assert result, f"{keyword} before FROM"
            result[-1].instructions.append((keyword, rest.strip()))
    return result


def test_multi_stage_build_then_runtime() -> None:
    build, runtime = stages()
    assert build.name == "build" and runtime.name is None
    assert any("pip wheel" in run and run.rstrip().endswith(".") for run in build.args("RUN")), \
        "the build stage makes a wheel of this repository"


@pytest.mark.parametrize("index", [0, 1], ids=["build", "runtime"])
def test_base_images_are_official_slim_python_pinned_by_tag(index: int) -> None:
    base = stages()[index].base
    image, _, tag = base.partition(":")
    assert image == "python", base
    assert tag and tag != "latest" and re.fullmatch(r"3\.\d+(\.\d+)?-slim-[a-z]+", tag), base
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires == ">=3.11" and tuple(map(int, tag.split("-")[0].split(".")[:2])) >= (3, 11)


def test_runtime_stage_runs_as_a_numeric_non_root_user() -> None:
    users = stages()[-1].args("USER")
    assert len(users) == 1
    uid, _, gid = users[0].partition(":")
    assert uid.isdigit() and int(uid) != 0, users
    assert not gid or (gid.isdigit() and int(gid) != 0), users
    pod = next(o for o in objects(render()) if o["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsUser"] == int(uid)
    assert pod["securityContext"]["runAsGroup"] == int(gid or uid)


def test_runtime_stage_installs_only_the_built_wheels_offline() -> None:
    runtime = stages()[-1]
    installs = [run for run in runtime.args("RUN") if "pip" in run]
    assert len(installs) == 1
    run = installs[0]
    assert "--mount=type=bind,from=build,source=/wheels,target=/wheels" in run
    pip = shlex.split(run.split("&&")[0].split("python -m pip install", 1)[1])
    assert "--no-index" in pip and "--find-links=/wheels" in pip
    assert [a for a in pip if not a.startswith("-")] == ["gang-scheduler"]
    assert not runtime.args("ADD"), "ADD can fetch URLs"
    for copy in runtime.args("COPY"):
        assert copy.startswith("--from=build"), copy


def test_no_bytecode_is_written_at_run_time() -> None:
    env = " ".join(stages()[-1].args("ENV"))
    assert "PYTHONDONTWRITEBYTECODE=1" in env
    assert "HOME=" in env  # kubernetes-asyncio needs a home directory at import, even a missing one


def test_entrypoint_is_the_console_script_running_run() -> None:
    [entrypoint] = stages()[-1].args("ENTRYPOINT")
    argv = json.loads(entrypoint)  # exec form: signals reach Python, which handles SIGTERM
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert argv == ["gang-scheduler", "run"]
    assert scripts[argv[0]] == "scheduler.cli:main"
    assert argv[1] in cli_main.commands


def test_exposed_port_is_the_default_bind_port() -> None:
    [port] = stages()[-1].args("EXPOSE")
    assert Settings.model_fields["bind_address"].default.endswith(f":{port}")


def test_dockerignore_keeps_the_context_to_what_the_build_copies() -> None:
    lines = [ln for ln in (ROOT / ".dockerignore").read_text().splitlines() if ln and not ln.startswith("#")]
    assert lines[0] == "*"
    allowed = {ln[1:].rstrip("/") for ln in lines if ln.startswith("!")}
    copied = set()
    for stage in stages():
        for copy in stage.args("COPY"):
            if not copy.startswith("--from"):
                copied |= set(copy.split()[:-1])
    assert copied == allowed == {"pyproject.toml", "README.md", "scheduler"}
