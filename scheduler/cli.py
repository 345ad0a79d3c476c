"""Command line: ``gang-scheduler run | simulate | version``.

Exit codes: 0 — ran (whether or not everything fit); 2 — bad input, with what is wrong on
stderr: a snapshot file that cannot be read, is not YAML, or holds nothing the scheduler reads
(the file named); a bad setting (the flag or ``GANG_SCHEDULER_*`` variable named, with its
value); for ``run``, no usable cluster configuration (the kubeconfig paths and in-cluster
variables looked at named). Click's own usage errors exit 2 as well.

Every setting's flag is derived from its :class:`~scheduler.config.Settings` field (type, range,
help, default), so flags, variables and the Helm chart cannot drift apart.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import typing
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

import annotated_types
import click
import uvloop
from pydantic import ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import SettingsError

from scheduler import __version__
from scheduler.config import ENV_PREFIX, Settings
from scheduler.errors import ClusterConfigError, SnapshotError
from scheduler.offline.loader import load
from scheduler.offline.report import render_json, render_text
from scheduler.offline.simulate import example_path, simulate

Command = Callable[..., None]

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """gang-scheduler: all-or-nothing scheduling of Kubernetes PodGroup / CompositePodGroup gangs."""


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


def _click_type(name: str, info: FieldInfo) -> click.ParamType[Any]:
    """The click type of a scalar setting, from its annotation and ``ge``/``gt``/``le``/``lt`` constraints:
    ``int`` → ``IntRange``, ``float`` → ``FloatRange``, a ``Literal`` → ``Choice``, ``str`` → ``STRING``.

    Raises ``TypeError`` for an annotation not mapped here (a new kind of setting must be added).
    """
    annotation = info.annotation
    if typing.get_origin(annotation) is typing.Literal:
        return click.Choice([str(v) for v in typing.get_args(annotation)])
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    base = args[0] if len(args) == 1 else annotation  # ``str | None`` → ``str``
    if base is str:
        return click.STRING
    if base in (int, float):
        bound: dict[str, Any] = {}
        for item in info.metadata:
            if isinstance(item, annotated_types.Ge | annotated_types.Gt):
                bound.update(min=item.ge if isinstance(item, annotated_types.Ge) else item.gt,
                             min_open=isinstance(item, annotated_types.Gt))
            elif isinstance(item, annotated_types.Le | annotated_types.Lt):
                bound.update(max=item.le if isinstance(item, annotated_types.Le) else item.lt,
                             max_open=isinstance(item, annotated_types.Lt))
        if base is int:
            return click.IntRange(**bound) if bound else click.INT
        return click.FloatRange(**bound) if bound else click.FLOAT
    raise TypeError(f"setting {name}: no command-line type for {annotation!r}")


def _shown(value: Any) -> str:
    """A default as the help shows it, in the form the environment variable takes."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ",".join(value) or "none"
    return str(value)


def _settings_options(fields: Iterable[str]) -> Callable[[Command], Command]:
    """One typed ``--flag`` per setting, in ``fields`` order: help is the field's description, the
    variable ``GANG_SCHEDULER_<NAME>`` and the default. A ``bool`` is a ``--x/--no-x`` pair; a list
    is a repeatable flag whose values may be comma-separated; every flag defaults to unset, so
    the environment (then the field default) applies."""
    fields = list(fields)

    def decorate(func: Command) -> Command:
        for name in reversed(fields):
            info = Settings.model_fields[name]
            flag = name.replace("_", "-")
            default = info.get_default(call_default_factory=True)
            help_text = f"{info.description} [env {ENV_PREFIX}{name.upper()}; default: {_shown(default)}]"
            if info.annotation is bool:
                option = click.option(f"--{flag}/--no-{flag}", name, default=None, help=help_text)
            elif typing.get_origin(info.annotation) is list:
                option = click.option(f"--{flag}", name, multiple=True, metavar="NAME[,NAME...]", help=help_text)
            else:
                option = click.option(f"--{flag}", name, type=_click_type(name, info), default=None, help=help_text)
            func = option(func)
        return func

    return decorate


def _settings(flags: dict[str, Any]) -> Settings:
    """The settings: ``flags`` given on the command line over ``GANG_SCHEDULER_*`` variables over
    the defaults. Unset flags (``None``, an empty repeatable flag) are left to the environment.

    On a bad value prints one ``error: SOURCE='value': what is wrong`` line per problem (SOURCE:
    the ``--flag`` if given, else the variable) and exits 2; both commands use this.
    """
    given = {k: list(v) if isinstance(v, tuple) else v for k, v in flags.items() if v is not None and v != ()}
    try:
        return Settings.model_validate(given)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            if not err["loc"]:
                click.echo(f"error: {err['msg']}", err=True)
                continue
            name = str(err["loc"][0])
            source = f"--{name.replace('_', '-')}" if name in given else f"{ENV_PREFIX}{name.upper()}"
            value = err["input"]
            value = ",".join(value) if isinstance(value, list) and all(isinstance(v, str) for v in value) else value
            click.echo(f"error: {source}={value!r}: {err['msg']}", err=True)
    except SettingsError as exc:  # a variable pydantic-settings could not decode; the message names it
        click.echo(f"error: {exc}", err=True)
    sys.exit(2)


SIMULATE_FIELDS = ("scheduler_name", "scoring", "search_budget", "preemption")
"""The settings ``simulate`` reads; ``run`` takes every setting."""


@main.command(name="simulate")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True)
@_settings_options(SIMULATE_FIELDS)
def simulate_cmd(files: tuple[str, ...], output: str, **flags: Any) -> None:
    """Schedule a cluster snapshot offline and report the placements.

    FILES are YAML files (multi-document or `kubectl get -o yaml` lists) with Nodes, Pods,
    Namespaces, PodGroups, CompositePodGroups, Workloads, PriorityClasses, PodDisruptionBudgets,
    DRA objects (ResourceSlices, DeviceClasses, ResourceClaims, ResourceClaimTemplates) and storage
    objects (PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes); `-` reads one
    from standard input. Other kinds are skipped. With no FILE, a built-in example cluster is used.
    """
    settings = _settings(flags)
    paths = list(files) or [str(example_path())]
    try:
        objects = load(paths)  # a `-` reads sys.stdin
    except SnapshotError as exc:
        _fail(str(exc))
    sim = simulate(objects, settings.scheduler_name, settings.solver(), settings.preemption)
    click.echo(render_json(sim) if output == "json" else render_text(sim))


@main.command(name="run")
@_settings_options(Settings.model_fields)
@click.option("--log-level", type=click.Choice(LOG_LEVELS, case_sensitive=False), default="INFO",
              show_default=True, envvar="GANG_SCHEDULER_LOG_LEVEL", show_envvar=True, help="Python logging level.")
def run_cmd(log_level: str, **flags: Any) -> None:
    """Schedule a live cluster (kubeconfig or in-cluster service account)."""
    settings = _settings(flags)
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        uvloop.run(_run(settings))
    except ClusterConfigError as exc:
        _fail(f"no usable cluster configuration: {exc}")


async def _run(settings: Settings) -> None:
    """Connect, then schedule until SIGTERM/SIGINT. Raises :class:`ClusterConfigError` when no
    cluster configuration is usable (before anything starts)."""
    from scheduler.live.driver import Scheduler
    from scheduler.live.kube import SPARE_CONNECTIONS, WATCH_CONNECTIONS, KubeClient  # kept out of `simulate`

    kube = await KubeClient.connect(settings.kubeconfig, qps=settings.client_qps, burst=settings.client_burst,
                                    connections=WATCH_CONNECTIONS + settings.bind_concurrency + SPARE_CONNECTIONS)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await Scheduler(settings, kube).run(stop)
    finally:
        await kube.close()


@main.command()
def version() -> None:
    """Print the version."""
    click.echo(__version__)
