"""What can be checked of the Dockerfile without a container engine (none runs on our machines).

Parsed statically: the base images are official Python images pinned by tag and digest (one image for
both stages), the dependencies come from requirements.lock with their hashes, and the lock pins exactly the
runtime dependencies of the environment the tests run in; the runtime stage runs as a numeric non-root user,
installs nothing but the wheels built in the first stage (offline), removes pip, carries the OCI labels, and
its entrypoint is the console script of pyproject.toml running ``run``. The chart's pod securityContext agrees
with the image's user. Building and running the image is not verified here, nor that the digest is the
registry's current one for the tag.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from importlib import metadata

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from scheduler.cli import main as cli_main
from scheduler.config import Settings
from tests.chart.helmchart import ROOT, objects, render

DOCKERFILE = ROOT / "Dockerfile"
LOCK = ROOT / "requirements.lock"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


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
def test_base_images_are_official_slim_python_pinned_by_tag_and_digest(index: int) -> None:
    base = stages()[index].base
    match = re.fullmatch(r"python:(3\.\d+)(\.\d+)?-slim-[a-z]+@sha256:[0-9a-f]{64}", base)
    assert match, base
    assert base == stages()[0].base, "both stages build on one image"
    assert PYPROJECT["requires-python"] == ">=3.11" and tuple(map(int, match.group(1).split("."))) >= (3, 11)


def labels() -> dict[str, str]:
    pairs: dict[str, str] = {}
    for label in stages()[-1].args("LABEL"):
        for word in shlex.split(label):
            key, _, value = word.partition("=")
            pairs[key] = value
    return pairs


def test_the_image_carries_the_oci_labels_of_the_project_and_its_base() -> None:
    base = stages()[-1].base
    assert labels() == {
        "org.opencontainers.image.title": PYPROJECT["name"],
        "org.opencontainers.image.description": PYPROJECT["description"],
        "org.opencontainers.image.version": PYPROJECT["version"],
        "org.opencontainers.image.licenses": PYPROJECT["license"],
        "org.opencontainers.image.base.name": "docker.io/library/" + base.partition("@")[0],
        "org.opencontainers.image.base.digest": base.partition("@")[2],
    }


def test_the_build_stage_fetches_only_the_locked_versions_with_their_hashes() -> None:
    build = stages()[0]
    fetches = [run for run in build.args("RUN") if "pip" in run and "--no-deps" not in run]
    assert fetches == ["python -m pip wheel --require-hashes --wheel-dir /wheels -r requirements.lock"]
    assert "requirements.lock ./" in build.args("COPY")
    [own] = [run for run in build.args("RUN") if "--no-deps" in run]
    assert own == "python -m pip wheel --no-deps --wheel-dir /wheels ."


def pins() -> dict[str, tuple[str, list[str]]]:
    """requirements.lock as ``{name: (version, hashes)}``."""
    text = re.sub(r"\\\n", " ", LOCK.read_text())
    out: dict[str, tuple[str, list[str]]] = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            spec, *options = line.split()
            name, _, version = spec.partition("==")
            out[canonicalize_name(name)] = (version, [o.removeprefix("--hash=") for o in options])
    return out


def runtime_closure() -> dict[str, str]:
    """The installed version of every distribution gang-scheduler needs at run time (its dependencies without
    extras, and theirs), as this environment — the one the tests run in — has them."""
    found: dict[str, str] = {}
    todo = [Requirement(r) for r in PYPROJECT["dependencies"]]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in found or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue
        dist = metadata.distribution(name)
        found[name] = dist.version
        todo += [Requirement(r) for r in dist.requires or ()]
    return found


def test_the_lock_pins_the_tested_runtime_dependencies_with_hashes() -> None:
    """``make lock`` wrote it from this environment, and ``make test`` installed this environment from it: the
    image ships what the tests ran."""
    locked = pins()
    assert {name: version for name, (version, _) in locked.items()} == runtime_closure()
    assert [name for name, (_, hashes) in locked.items()
            if not hashes or not all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in hashes)] == []


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
    steps = [step.strip() for step in run.split("&&")]
    pip = shlex.split(steps[0].split("python -m pip install", 1)[1])
    assert "--no-index" in pip and "--find-links=/wheels" in pip
    assert [a for a in pip if not a.startswith("-")] == ["gang-scheduler"]
    assert steps[1] == "python -m pip uninstall --yes pip setuptools wheel", "pip is not left in the image"
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
    assert copied == allowed == {"requirements.lock", "pyproject.toml", "README.md", "scheduler"}
