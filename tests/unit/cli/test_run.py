"""``gang-scheduler run`` before it schedules: settings from flags and variables, typed flags, and the
one-line exit 2 when no cluster configuration is usable (issue 9, items 4 and 5).

The scheduler itself is never started here: tests that need parsed settings replace ``cli._run``
(our own seam between the command and the live loop) with a recorder.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from scheduler import cli
from scheduler.config import ENV_PREFIX, Settings

CLI = Path(sys.executable).parent / "gang-scheduler"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty home directory: no ``~/.kube/config``."""
    path = tmp_path / "home"
    path.mkdir()
    return path


def clean_env(home: Path, **extra: str | None) -> dict[str, str | None]:
    """The environment CliRunner applies: a temp HOME, no kubeconfig variable, not in a cluster, no
    GANG_SCHEDULER_* from the caller (None removes a variable)."""
    env: dict[str, str | None] = {"HOME": str(home), "KUBECONFIG": None, "KUBERNETES_SERVICE_HOST": None,
                                  "KUBERNETES_SERVICE_PORT": None}
    env.update({name: None for name in os.environ if name.startswith(ENV_PREFIX)})
    env.update(extra)
    return env


def run(args: list[str], env: dict[str, str | None]) -> Result:
    return CliRunner().invoke(cli.main, ["run", *args], env=env)


# --- item 4: no usable cluster configuration --------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "env", "files", "message"),
    [
        pytest.param([], {}, {}, "no kubeconfig at {home}/.kube/config ($KUBECONFIG unset), and not in a cluster "
                     "(KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT not set)", id="nothing-configured"),
        pytest.param(["--kubeconfig", "/nonexistent"], {}, {}, "kubeconfig /nonexistent: no such file",
                     id="explicit-flag-missing-file"),
        pytest.param([], {"GANG_SCHEDULER_KUBECONFIG": "/nonexistent"}, {}, "kubeconfig /nonexistent: no such file",
                     id="explicit-variable-missing-file"),
        pytest.param([], {"KUBECONFIG": "{home}/a:{home}/b"}, {},
                     "no kubeconfig at {home}/a, {home}/b (from $KUBECONFIG), and not in a cluster "
                     "(KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT not set)", id="kubeconfig-variable-paths"),
        pytest.param(["--kubeconfig", "{home}/empty"], {}, {"empty": "{}\n"},
                     "kubeconfig {home}/empty: Invalid kube-config file. Expected key current-context in {home}/empty",
                     id="kubeconfig-without-current-context"),
        pytest.param(["--kubeconfig", "{home}/bad"], {}, {"bad": "clusters: [\n"},
                     "kubeconfig {home}/bad: while parsing a flow node expected the node content, but found "
                     "'<stream end>' in \"{home}/bad\", line 2, column 1", id="kubeconfig-not-yaml"),
        pytest.param([], {}, {".kube/config": "{}\n"},
                     "kubeconfig {home}/.kube/config ($KUBECONFIG unset): Invalid kube-config file. Expected key "
                     "current-context in {home}/.kube/config, and not in a cluster (KUBERNETES_SERVICE_HOST / "
                     "KUBERNETES_SERVICE_PORT not set)", id="default-kubeconfig-unusable-and-not-in-a-cluster"),
        pytest.param([], {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, {},
                     "no kubeconfig at {home}/.kube/config ($KUBECONFIG unset), and not in a cluster "
                     "(KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT not set)", id="service-host-without-port"),
    ],
)
def test_no_usable_cluster_configuration_exits_2_with_one_line(home: Path, args: list[str], env: dict[str, str],
                                                               files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(text)
    variables = {name: value.format(home=home) for name, value in env.items()}
    result = run([a.format(home=home) for a in args], clean_env(home, **variables))
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr == f"error: no usable cluster configuration: {message.format(home=home)}\n"


@pytest.mark.parametrize("text", [pytest.param("- a list\n", id="a-list"), pytest.param("", id="empty"),
                                  pytest.param("just text\n", id="a-string")])
def test_a_kubeconfig_that_is_not_a_mapping_is_one_line_too(home: Path, text: str) -> None:
    (home / ".kube").mkdir()
    (home / ".kube" / "config").write_text(text)
    result = run([], clean_env(home))
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: no usable cluster configuration: kubeconfig {home}/.kube/config ($KUBECONFIG "
                           "unset): ")
    assert line.endswith(", and not in a cluster (KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT not set)")


def test_no_cluster_configuration_in_a_real_process_prints_no_traceback(home: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith((ENV_PREFIX, "KUBERNETES_SERVICE_")) and k != "KUBECONFIG"}
    done = subprocess.run([str(CLI), "run", "--kubeconfig", "/nonexistent"], env={**env, "HOME": str(home)},
                          capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "error: no usable cluster configuration: kubeconfig /nonexistent: no such file\n"


# --- item 5: settings from flags and variables -------------------------------------------------------


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Settings]]:
    """Settings ``run`` would start the scheduler with; the scheduler is not started."""
    seen: list[Settings] = []

    async def record(settings: Settings) -> None:
        seen.append(settings)

    monkeypatch.setattr(cli, "_run", record)
    yield seen


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        pytest.param([], {"GANG_SCHEDULER_NAMESPACES": "ml"}, {"namespaces": ["ml"]}, id="one-namespace-variable"),
        pytest.param([], {"GANG_SCHEDULER_NAMESPACES": "ml,research"}, {"namespaces": ["ml", "research"]},
                     id="comma-separated-variable"),
        pytest.param([], {"GANG_SCHEDULER_NAMESPACES": '["ml","research"]'}, {"namespaces": ["ml", "research"]},
                     id="json-list-variable-as-the-chart-renders-it"),
        pytest.param([], {"GANG_SCHEDULER_NAMESPACES": "[]"}, {"namespaces": []}, id="empty-json-list-variable"),
        pytest.param(["--namespaces", "ml,research"], {}, {"namespaces": ["ml", "research"]},
                     id="comma-separated-flag"),
        pytest.param(["--namespaces", "ml", "--namespaces", "research, infra"], {},
                     {"namespaces": ["ml", "research", "infra"]}, id="repeated-flag-each-comma-separated"),
        pytest.param(["--namespaces", "ml"], {"GANG_SCHEDULER_NAMESPACES": "research"}, {"namespaces": ["ml"]},
                     id="flag-overrides-variable"),
        pytest.param(["--search-budget", "5", "--backoff-initial-s", "0.5", "--no-leader-elect", "--scoring", "spread"],
                     {}, {"search_budget": 5, "backoff_initial_s": 0.5, "leader_elect": False, "scoring": "spread"},
                     id="typed-flags"),
        pytest.param([], {"GANG_SCHEDULER_LEADER_ELECT": "false", "GANG_SCHEDULER_CLIENT_QPS": "0"},
                     {"leader_elect": False, "client_qps": 0.0}, id="typed-variables"),
    ],
)
def test_settings_from_flags_and_variables(home: Path, recorded: list[Settings], args: list[str],
                                           env: dict[str, str], expected: dict[str, Any]) -> None:
    result = run(args, clean_env(home, **env))
    assert (result.exit_code, result.stderr) == (0, "")
    (settings,) = recorded
    assert {name: getattr(settings, name) for name in expected} == expected


NAMESPACE_RULE = "is not a namespace name (lowercase letters, digits and '-', at most 63 characters; separate " \
                 "names with commas)"


@pytest.mark.parametrize(
    ("args", "env", "stderr"),
    [
        pytest.param([], {"GANG_SCHEDULER_NAMESPACES": "ml,Research"},
                     f"error: GANG_SCHEDULER_NAMESPACES='ml,Research': 'Research' {NAMESPACE_RULE}\n",
                     id="bad-namespace-in-variable"),
        pytest.param(["--namespaces", "ml research"], {},
                     f"error: --namespaces='ml research': 'ml research' {NAMESPACE_RULE}\n",
                     id="space-separated-namespaces-flag"),
        pytest.param([], {"GANG_SCHEDULER_NAMESPACES": '["ml", 7]'},
                     "error: GANG_SCHEDULER_NAMESPACES='[\"ml\", 7]': a JSON value must be a list of strings\n",
                     id="json-list-of-non-strings"),
        pytest.param([], {"GANG_SCHEDULER_BACKOFF_MAX_S": "abc"},
                     "error: GANG_SCHEDULER_BACKOFF_MAX_S='abc': Input should be a valid number, unable to parse "
                     "string as a number\n", id="float-variable-not-a-number"),
        pytest.param([], {"GANG_SCHEDULER_BIND_CONCURRENCY": "0"},
                     "error: GANG_SCHEDULER_BIND_CONCURRENCY='0': Input should be greater than or equal to 1\n",
                     id="int-variable-out-of-range"),
        pytest.param([], {"GANG_SCHEDULER_LEADER_ELECT": "maybe", "GANG_SCHEDULER_SCORING": "tight"},
                     "error: GANG_SCHEDULER_SCORING='tight': Input should be 'pack' or 'spread'\n"
                     "error: GANG_SCHEDULER_LEADER_ELECT='maybe': Input should be a valid boolean, unable to "
                     "interpret input\n", id="every-bad-variable-is-named"),
    ],
)
def test_bad_settings_exit_2_naming_the_variable_or_flag_and_value(home: Path, recorded: list[Settings],
                                                                    args: list[str], env: dict[str, str],
                                                                    stderr: str) -> None:
    result = run(args, clean_env(home, **env))
    assert result.exit_code == 2
    assert result.stderr == stderr
    assert recorded == []


@pytest.mark.parametrize(
    ("args", "stderr_end"),
    [
        pytest.param(["--bind-concurrency", "0"], "Invalid value for '--bind-concurrency': 0 is not in the range x>=1.",
                     id="int-flag-below-its-minimum"),
        pytest.param(["--backoff-initial-s", "0"], "Invalid value for '--backoff-initial-s': 0.0 is not in the "
                     "range x>0.", id="float-flag-must-be-positive"),
        pytest.param(["--client-qps", "fast"], "Invalid value for '--client-qps': 'fast' is not a valid float range.",
                     id="float-flag-not-a-number"),
        pytest.param(["--log-level", "loud"], "Invalid value for '--log-level' (env var: 'GANG_SCHEDULER_LOG_LEVEL'): "
                     "'loud' is not one of 'debug', "
                     "'info', 'warning', 'error', 'critical'.", id="unknown-log-level"),
    ],
)
def test_flags_are_typed_by_click(home: Path, recorded: list[Settings], args: list[str], stderr_end: str) -> None:
    result = run(args, clean_env(home))
    assert result.exit_code == 2
    assert result.stderr.rstrip().endswith(f"Error: {stderr_end}")
    assert recorded == []


def test_the_log_level_is_a_variable_too(home: Path, recorded: list[Settings]) -> None:
    """Every setting is a flag and a GANG_SCHEDULER_ variable, ``--log-level`` included (a new user found it
    silently ignored)."""
    result = run([], clean_env(home, GANG_SCHEDULER_LOG_LEVEL="loud"))
    assert result.exit_code == 2
    assert result.stderr.rstrip().endswith("Error: Invalid value for '--log-level' (env var: "
                                           "'GANG_SCHEDULER_LOG_LEVEL'): 'loud' is not one of 'debug', 'info', "
                                           "'warning', 'error', 'critical'.")
    assert recorded == []


def option(command: click.Command, name: str) -> click.Option:
    (found,) = [p for p in command.params if isinstance(p, click.Option) and p.name == name]
    return found


@pytest.mark.parametrize("name", [n for n, i in Settings.model_fields.items() if i.annotation in (int, float)])
def test_every_numeric_setting_has_a_number_flag_with_the_fields_bounds(name: str) -> None:
    info = Settings.model_fields[name]
    param = option(cli.run_cmd, name)
    expected = click.IntRange if info.annotation is int else click.FloatRange
    assert isinstance(param.type, expected)
    (bound,) = info.metadata
    assert (param.type.min, param.type.min_open) == (getattr(bound, "ge", getattr(bound, "gt", None)),
                                                     hasattr(bound, "gt"))


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        pytest.param("leader_elect", "flag", id="bool-is-an-on-off-flag"),
        pytest.param("namespaces", "multiple", id="list-is-repeatable"),
        pytest.param("scoring", "choice", id="literal-is-a-choice"),
        pytest.param("kubeconfig", "string", id="optional-string"),
    ],
)
def test_other_settings_flags_follow_their_annotation(name: str, kind: str) -> None:
    param = option(cli.run_cmd, name)
    shape = {"flag": param.is_flag and param.secondary_opts == [f"--no-{name.replace('_', '-')}"],
             "multiple": param.multiple, "choice": isinstance(param.type, click.Choice),
             "string": param.type is click.STRING}
    assert shape[kind]


def test_run_help_shows_no_number_as_text() -> None:
    out = CliRunner().invoke(cli.main, ["run", "--help"], terminal_width=200).stdout
    numeric = [n.replace("_", "-") for n, i in Settings.model_fields.items() if i.annotation in (int, float)]
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip().startswith("--")}
    assert {flag: lines[f"--{flag}"].split()[1] for flag in numeric} == {
        flag: ("INTEGER" if Settings.model_fields[flag.replace("-", "_")].annotation is int else "FLOAT")
        for flag in numeric}
