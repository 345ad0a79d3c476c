"""``gang-scheduler operator`` before it starts: its flags and the one-line exits 2 (bad flag
values, no cluster configuration, no group API served); and its exit 3 when the served group API changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from scheduler import cli
from scheduler.operator.runner import GroupApiChanged
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
    assert result.stderr == "error: GANG_SCHEDULER_CLIENT_BURST '0': must be greater than or equal to 1\n"


def test_no_cluster_configuration_exits_2(tmp_path: Path) -> None:
    result = operator([], tmp_path)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: no usable cluster configuration: no kubeconfig at ")


def test_a_change_of_the_served_group_api_exits_3_saying_what(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The operator stopped because the cluster serves another group API (``scheduler.operator.runner``): exit 3, not
    an error's 2, with the line saying what changed, so its Deployment starts it again."""
    async def changed(settings: object, options: object) -> None:
        raise GroupApiChanged("the cluster now serves scheduling.k8s.io/v1beta1, where the operator was started for "
                              "scheduling.k8s.io/v1alpha2: stopped, to start again for it")

    monkeypatch.setattr(cli, "_operate", changed)
    result = operator([], tmp_path)
    assert (result.exit_code, result.stdout) == (3, "")
    assert result.stderr == ("operator: the cluster now serves scheduling.k8s.io/v1beta1, where the operator was "
                             "started for scheduling.k8s.io/v1alpha2: stopped, to start again for it\n")
