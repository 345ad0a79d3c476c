"""``gang-scheduler run`` before it schedules: settings from flags and variables, typed flags, and the
one-line exit 2 when no cluster configuration is usable.

The scheduler itself is never started here: tests that need parsed settings replace ``cli._run``
(our own seam between the command and the live loop) with a recorder.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.shell_completion import ShellComplete
from click.testing import CliRunner, Result
from hypothesis import given
from hypothesis import strategies as st

from scheduler import cli
from scheduler.config import ENV_PREFIX, Settings, own_namespace

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
                     f"error: GANG_SCHEDULER_NAMESPACES 'ml,Research': 'Research' {NAMESPACE_RULE}\n",
                     id="bad-namespace-in-variable"),
        pytest.param(["--namespaces", "ml research"], {},
                     f"error: --namespaces 'ml research': 'ml research' {NAMESPACE_RULE}\n",
                     id="space-separated-namespaces-flag"),
        pytest.param([], {"GANG_SCHEDULER_NAMESPACES": '["ml", 7]'},
                     "error: GANG_SCHEDULER_NAMESPACES '[\"ml\", 7]': a JSON value must be a list of strings\n",
                     id="json-list-of-non-strings"),
        pytest.param([], {"GANG_SCHEDULER_BACKOFF_MAX_S": "abc"},
                     "error: GANG_SCHEDULER_BACKOFF_MAX_S 'abc': must be a valid number, unable to parse "
                     "string as a number\n", id="float-variable-not-a-number"),
        pytest.param([], {"GANG_SCHEDULER_BIND_CONCURRENCY": "0"},
                     "error: GANG_SCHEDULER_BIND_CONCURRENCY '0': must be greater than or equal to 1\n",
                     id="int-variable-out-of-range"),
        pytest.param([], {"GANG_SCHEDULER_LEADER_ELECT": "maybe", "GANG_SCHEDULER_SCORING": "tight"},
                     "error: GANG_SCHEDULER_SCORING 'tight': must be 'pack' or 'spread'\n"
                     "error: GANG_SCHEDULER_LEADER_ELECT 'maybe': must be a valid boolean, unable to "
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
    ("args", "env", "stderr"),
    [
        pytest.param(["--bind-address", "notaport"], {},
                     "error: --bind-address 'notaport': expected HOST:PORT (e.g. 0.0.0.0:10251)", id="no-port"),
        pytest.param(["--bind-address", "0.0.0.0:99999"], {},
                     "error: --bind-address '0.0.0.0:99999': the port '99999' is not a number from 0 to 65535",
                     id="port-out-of-range"),
        pytest.param(["--bind-address", "0.0.0.0:http"], {},
                     "error: --bind-address '0.0.0.0:http': the port 'http' is not a number from 0 to 65535",
                     id="port-not-a-number"),
        pytest.param(["--bind-address", "::1:8080"], {},
                     "error: --bind-address '::1:8080': expected HOST:PORT, an IPv6 host in brackets ([::]:10251)",
                     id="ipv6-without-brackets"),
        pytest.param([], {"GANG_SCHEDULER_BIND_ADDRESS": "localhost"},
                     "error: GANG_SCHEDULER_BIND_ADDRESS 'localhost': expected HOST:PORT (e.g. 0.0.0.0:10251)",
                     id="variable-gets-the-same-check"),
        pytest.param(["--lease-duration-s", "5", "--renew-deadline-s", "10"], {},
                     "error: --renew-deadline-s '10': must be shorter than the lease duration (5 s)",
                     id="renew-deadline-not-below-lease"),
        pytest.param(["--renew-deadline-s", "15"], {},
                     "error: --renew-deadline-s '15': must be shorter than the lease duration (15 s)",
                     id="renew-deadline-equal-to-lease"),
        pytest.param([], {"GANG_SCHEDULER_RETRY_PERIOD_S": "10"},
                     "error: GANG_SCHEDULER_RETRY_PERIOD_S '10': must be shorter than the renew deadline (10 s)",
                     id="retry-period-not-below-renew-deadline"),
        pytest.param(["--backoff-initial-s", "5", "--backoff-max-s", "2"], {},
                     "error: --backoff-max-s '2': must not be below the first backoff (5 s)",
                     id="backoff-cap-below-first-backoff"),
        pytest.param(["--backoff-initial-s", "100"], {},
                     "error: --backoff-max-s 60.0 (the default): must not be below the first backoff (100 s)",
                     id="a-default-refused-by-a-flag-is-named-as-the-default"),
        pytest.param(["--lease-duration-s", "5"], {},
                     "error: --renew-deadline-s 10.0 (the default): must be shorter than the lease duration (5 s)",
                     id="lease-shorter-than-the-default-renew-deadline"),
        pytest.param(["--bind-concurrency", "0"], {},
                     "error: --bind-concurrency '0': must be greater than or equal to 1",
                     id="flag-checked-as-its-variable"),
        pytest.param(["--client-qps", "fast"], {},
                     "error: --client-qps 'fast': must be a valid number, unable to parse string as a number",
                     id="flag-not-a-number"),
        pytest.param(["--scoring", "tight"], {}, "error: --scoring 'tight': must be 'pack' or 'spread'",
                     id="flag-not-a-choice"),
        pytest.param(["--scheduler-name", "Gang_Scheduler"], {},
                     "error: --scheduler-name 'Gang_Scheduler': not a DNS subdomain name (lowercase letters, digits, "
                     "'-' and '.'; at most 253 characters)", id="scheduler-name-the-api-server-refuses"),
        pytest.param(["--lease-namespace", "Kube"], {},
                     "error: --lease-namespace 'Kube': not a namespace name (lowercase letters, digits, '-'; at most "
                     "63 characters)", id="lease-namespace-not-a-namespace"),
        pytest.param(["--log-level", "loud"], {},
                     "error: --log-level 'loud': expected one of DEBUG, INFO, WARNING, ERROR, CRITICAL",
                     id="unknown-log-level"),
        pytest.param([], {"GANG_SCHEDULER_LOG_LEVEL": "loud"},
                     "error: GANG_SCHEDULER_LOG_LEVEL 'loud': expected one of DEBUG, INFO, WARNING, ERROR, CRITICAL",
                     id="unknown-log-level-variable"),
        pytest.param(["--bogus"], {}, "error: No such option '--bogus'.", id="unknown-option"),
        pytest.param(["--bind-address"], {}, "error: Option '--bind-address' requires an argument.",
                     id="missing-value"),
        pytest.param(["extra"], {}, "error: Got unexpected extra argument (extra)", id="extra-argument"),
    ],
)
def test_every_setting_error_is_one_line_exit_2(home: Path, recorded: list[Settings], args: list[str],
                                                env: dict[str, str], stderr: str) -> None:
    """``error: SOURCE 'VALUE': what is wrong`` for a bad value, from a flag or its variable alike; Click's own
    usage errors one ``error:`` line too, with no usage block; nothing is started."""
    result = run(args, clean_env(home, **env))
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", stderr + "\n")
    assert recorded == []


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(["--no-leader-elect", "--lease-duration-s", "5", "--renew-deadline-s", "10"],
                     {"lease_duration_s": 5.0, "renew_deadline_s": 10.0}, id="lease-timing-unchecked-without-election"),
        pytest.param(["--bind-address", "[::]:9443"], {"bind_host_port": ("::", 9443)}, id="ipv6-in-brackets"),
        pytest.param(["--bind-address", ":10251"], {"bind_host_port": ("0.0.0.0", 10251)},
                     id="empty-host-every-address"),
        pytest.param(["--bind-address", "127.0.0.1:0"], {"bind_host_port": ("127.0.0.1", 0)}, id="port-0-a-free-one"),
        pytest.param(["--backoff-initial-s", "2", "--backoff-max-s", "2"], {"backoff_max_s": 2.0},
                     id="backoff-cap-equal-to-first"),
    ],
)
def test_values_at_the_edges_of_the_rules_are_taken(home: Path, recorded: list[Settings], args: list[str],
                                                    expected: dict[str, Any]) -> None:
    result = run(args, clean_env(home))
    assert (result.exit_code, result.stderr) == (0, ""), result.output
    (settings,) = recorded
    assert {name: getattr(settings, name) for name in expected} == expected


def test_a_bad_setting_in_a_real_process_is_one_line_and_fast(home: Path) -> None:
    """The console script itself: one line, exit 2, and the settings are checked before numpy, the models or a
    Kubernetes client are imported (checked through ``sys.modules``: the speed follows from what is not loaded)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    done = subprocess.run([str(CLI), "run", "--bind-address", "notaport"], env={**env, "HOME": str(home)},
                          capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "error: --bind-address 'notaport': expected HOST:PORT (e.g. 0.0.0.0:10251)\n"


def option(command: click.Command, name: str) -> click.Option:
    (found,) = [p for p in command.params if isinstance(p, click.Option) and p.name == name]
    return found


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        pytest.param("leader_elect", "flag", id="bool-is-an-on-off-flag"),
        pytest.param("namespaces", "multiple", id="list-is-repeatable"),
        pytest.param("scoring", "value", id="literal-is-checked-by-the-field"),
        pytest.param("search_budget", "value", id="number-is-checked-by-the-field"),
        pytest.param("kubeconfig", "value", id="optional-string"),
    ],
)
def test_settings_flags_follow_their_annotation(name: str, kind: str) -> None:
    param = option(cli.run_cmd, name)
    shape = {"flag": param.is_flag and param.secondary_opts == [f"--no-{name.replace('_', '-')}"],
             "multiple": param.multiple, "value": isinstance(param.type, cli.SettingValue)}
    assert shape[kind]


def test_run_help_names_each_value_and_its_range() -> None:
    out = CliRunner().invoke(cli.main, ["run", "--help"], terminal_width=400).stdout
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip().startswith("--")}
    metavars = {flag: lines[flag].split()[1] for flag in ("--search-budget", "--client-qps", "--scoring",
                                                          "--kubeconfig")}
    assert metavars == {"--search-budget": "INTEGER", "--client-qps": "FLOAT", "--scoring": "[pack|spread]",
                        "--kubeconfig": "TEXT"}
    assert "[>= 1; env GANG_SCHEDULER_SEARCH_BUDGET; default: 256]" in lines["--search-budget"]
    assert "[> 0; env GANG_SCHEDULER_BACKOFF_INITIAL_S; default: 1.0]" in lines["--backoff-initial-s"]
    assert "default: empty]" in lines["--lease-namespace"]


HEAVY = ("numpy", "kubernetes_asyncio", "kopf", "aiohttp", "prometheus_client", "yaml", "uvloop", "scheduler.model",
         "scheduler.framework", "scheduler.offline", "scheduler.live")

LOADED = """
import sys
from scheduler.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("loaded:", *sorted(sys.modules), file=sys.stderr)
"""


def heavy_modules_loaded(args: list[str]) -> list[str]:
    """The modules of :data:`HEAVY` a fresh interpreter has loaded after ``gang-scheduler ARGS``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    done = subprocess.run([sys.executable, "-c", LOADED, *args], capture_output=True, text=True, timeout=120,
                          check=False, env=env)
    marker, *loaded = done.stderr.splitlines()[-1].split()
    assert marker == "loaded:", done.stderr
    return [m for m in loaded if m.startswith(HEAVY)]


@pytest.mark.parametrize("args", [pytest.param(["version"], id="version"), pytest.param(["--help"], id="help"),
                                  pytest.param(["run", "--help"], id="run-help"),
                                  pytest.param(["simulate", "--help"], id="simulate-help"),
                                  pytest.param(["run", "--bind-address", "notaport"], id="setting-error"),
                                  pytest.param(["run", "--bogus"], id="usage-error")])
def test_quick_answers_import_nothing_heavy(args: list[str]) -> None:
    """``version``, ``--help`` and setting errors load Click and the settings only: none of numpy, the models, the
    framework or a Kubernetes client (each command imports what it runs). Checked in a fresh interpreter through
    ``sys.modules`` — no clock involved."""
    assert heavy_modules_loaded(args) == []


@pytest.mark.parametrize("args", [pytest.param(["version"], id="version"), pytest.param(["--help"], id="help")])
def test_answers_without_settings_load_no_pydantic(args: list[str]) -> None:
    """What needs no setting (the version, the list of commands) loads Click alone: the settings' flags are made
    from the pydantic model only when a command's parameters are read (its help, parsing its arguments)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    done = subprocess.run([sys.executable, "-c", LOADED, *args], capture_output=True, text=True, timeout=120,
                          check=False, env=env)
    marker, *loaded = done.stderr.splitlines()[-1].split()
    assert marker == "loaded:", done.stderr
    assert "click" in loaded
    assert [m for m in loaded if m.startswith(("pydantic", "pydantic_settings", "asyncio", "scheduler.config"))] == []


def test_the_heavy_modules_are_what_simulate_loads() -> None:
    """The other side of :func:`test_quick_answers_import_nothing_heavy`: the check sees them when they are loaded."""
    loaded = {m.split(".")[0] for m in heavy_modules_loaded(["simulate", "-o", "json"])}
    assert {"numpy", "yaml", "scheduler"} <= loaded


LIVE_ONLY = ("kubernetes_asyncio", "aiohttp", "kopf", "uvloop", "prometheus_client", "cel", "scheduler.live",
             "scheduler.client", "scheduler.operator.runner")
"""What ``simulate`` of a file without DRA objects never runs: the Kubernetes client, the operator, the event loop
the live commands use, the metrics and the CEL library (only DRA device selectors are CEL)."""


def test_simulate_of_a_file_loads_no_client_no_operator_and_no_cel() -> None:
    """``simulate FILE`` pays for what it runs: the models, the solver and the reader, not the live path's client,
    the operator or CEL (the built-in example has no DRA object). Checked through ``sys.modules``, as above."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    done = subprocess.run([sys.executable, "-c", LOADED, "simulate"], capture_output=True, text=True, timeout=120,
                          check=False, env=env)
    marker, *loaded = done.stderr.splitlines()[-1].split()
    assert marker == "loaded:", done.stderr
    assert "Groups: 4/5 scheduled" in done.stdout
    assert "scheduler.offline.simulate" in loaded
    assert [m for m in loaded if m == LIVE_ONLY or m.startswith(LIVE_ONLY)] == []


@pytest.mark.parametrize(("content", "expected"), [pytest.param("ml-platform\n", "ml-platform", id="in-a-pod"),
                                                   pytest.param(None, "default", id="outside-a-cluster"),
                                                   pytest.param("", "default", id="empty-file")])
def test_an_empty_lease_namespace_is_the_namespace_the_scheduler_runs_in(tmp_path: Path, content: str | None,
                                                                         expected: str) -> None:
    """One rule for the chart, the plain manifests and a bare ``run``: the Lease lives where the scheduler runs
    (its pod's namespace, from the service account's namespace file), ``default`` outside a cluster."""
    path = tmp_path / "namespace"
    if content is not None:
        path.write_text(content)
    assert Settings.model_fields["lease_namespace"].default == ""
    assert own_namespace(str(path)) == expected


@pytest.mark.parametrize(("args", "incomplete", "offered"), [
    pytest.param(["run", "--scoring"], "", ["pack", "spread"], id="a-setting-choice"),
    pytest.param(["simulate", "--output"], "j", ["json"], id="an-option-choice"),
    pytest.param(["run", "--log-level"], "w", ["warning"], id="log-level-any-case"),
])
def test_shell_completion_offers_the_choices(args: list[str], incomplete: str, offered: list[str]) -> None:
    """The values are checked by the settings, not by Click's types, and completion still offers them."""
    complete = ShellComplete(cli.main, {}, "gang-scheduler", "_GANG_SCHEDULER_COMPLETE")
    assert [item.value for item in complete.get_completions(args, incomplete)] == offered


@given(st.floats(min_value=0, max_value=4e9, allow_nan=False), st.floats(min_value=0, max_value=4e9, allow_nan=False))
def test_log_timestamps_reusing_a_second_match_logging_s_own(first: float, second: float) -> None:
    ours = cli._SecondFormatter("%(asctime)s %(message)s")
    stock = logging.Formatter("%(asctime)s %(message)s")
    for created in (first, second, first, first + 0.5):
        record = logging.LogRecord("x", logging.INFO, __file__, 1, "m", None, None)
        record.created, record.msecs = created, (created - int(created)) * 1000
        assert ours.format(record) == stock.format(record)
