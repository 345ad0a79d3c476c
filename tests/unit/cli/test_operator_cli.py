"""``gang-scheduler operator`` before it starts: its flags and the one-line exits 2 (bad flag
values, no cluster configuration, no group API served)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from scheduler import cli
from tests.unit.cli.test_run import clean_env


def operator(args: list[str], home: Path, **env: str | None) -> Result:
    return CliRunner().invoke(cli.main, ["operator", *args], env=clean_env(home, **env))


@pytest.mark.parametrize(("args", "message"), [
    (["--webhook-service", "just-a-name"], "error: --webhook-service 'just-a-name': expected NAMESPACE/NAME:PORT\n"),
    (["--webhook-service", "ns/svc:99999"], "error: --webhook-service 'ns/svc:99999': expected NAMESPACE/NAME:PORT\n"),
    (["--cert-file", "/c.pem"], "error: --cert-file and --key-file go together\n"),
])
def test_bad_flags_exit_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    result = operator(args, tmp_path)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", message)


def test_a_bad_setting_variable_is_named(tmp_path: Path) -> None:
    result = operator([], tmp_path, GANG_SCHEDULER_CLIENT_BURST="0")
    assert result.exit_code == 2
    assert result.stderr == "error: GANG_SCHEDULER_CLIENT_BURST '0': Input should be greater than or equal to 1\n"


def test_no_cluster_configuration_exits_2(tmp_path: Path) -> None:
    result = operator([], tmp_path)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: no usable cluster configuration: no kubeconfig at ")
