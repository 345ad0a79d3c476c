"""Command line: ``gang-scheduler run | simulate | version``.

Exit codes: 0 — ran (whether or not everything fit); 2 — bad input (a snapshot file cannot be
read, is not YAML, or holds nothing the scheduler reads), with the file named on stderr.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Callable
from typing import Any

import click
import uvloop
from pydantic import ValidationError

from scheduler import __version__
from scheduler.config import Settings
from scheduler.errors import SnapshotError
from scheduler.offline.loader import load
from scheduler.offline.report import render_json, render_text
from scheduler.offline.simulate import example_path, simulate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """gang-scheduler: all-or-nothing scheduling of Kubernetes PodGroup / CompositePodGroup gangs."""


@main.command(name="simulate")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--scheduler-name", default=None, help="spec.schedulerName we own [env GANG_SCHEDULER_SCHEDULER_NAME].")
@click.option("--scoring", type=click.Choice(["pack", "spread"]), default=None,
              help="Node scoring [env GANG_SCHEDULER_SCORING; default pack].")
@click.option("--search-budget", type=click.IntRange(min=1), default=None,
              help="Most subtree placements tried per root [default 256].")
def simulate_cmd(files: tuple[str, ...], output: str, scheduler_name: str | None, scoring: str | None,
                 search_budget: int | None) -> None:
    """Schedule a cluster snapshot offline and report the placements.

    FILES are YAML files (multi-document or `kubectl get -o yaml` lists) with Nodes, Pods,
    PodGroups, CompositePodGroups, Workloads and PriorityClasses. With no FILE, a built-in
    example cluster is used.
    """
    overrides: dict[str, Any] = {"scheduler_name": scheduler_name, "scoring": scoring, "search_budget": search_budget}
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        settings = Settings.model_validate(given)
    except ValidationError as exc:  # a bad GANG_SCHEDULER_* variable (flags are checked by click)
        prefix = Settings.model_config.get("env_prefix", "")
        for err in exc.errors():
            if not err["loc"]:  # pydantic-settings could not even parse the variable; its message names the field
                click.echo(f"error: {err['msg']}", err=True)
                continue
            name = str(err["loc"][0])
            source = f"--{name.replace('_', '-')}" if name in given else f"{prefix}{name.upper()}"
            click.echo(f"error: {source}={err['input']!r}: {err['msg']}", err=True)
        sys.exit(2)
    paths = list(files) or [str(example_path())]
    try:
        objects = load(paths)
    except SnapshotError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    sim = simulate(objects, settings.scheduler_name, settings.solver())
    click.echo(render_json(sim) if output == "json" else render_text(sim))


RUN_FIELDS = [name for name in Settings.model_fields if name not in ("scoring", "search_budget", "scheduler_name")]


def _settings_options(fields: list[str]) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """One ``--flag`` per setting (help = the setting's description; env ``GANG_SCHEDULER_<NAME>``)."""

    def decorate(func: Callable[..., None]) -> Callable[..., None]:
        for name in reversed(fields):
            info = Settings.model_fields[name]
            flag = name.replace("_", "-")
            default = info.get_default(call_default_factory=True)
            help_text = f"{info.description} [env GANG_SCHEDULER_{name.upper()}; default {default!r}]"
            if info.annotation is bool:
                func = click.option(f"--{flag}/--no-{flag}", name, default=None, help=help_text)(func)
            elif name == "namespaces":
                func = click.option(f"--{flag}", name, multiple=True, help=help_text)(func)
            else:
                func = click.option(f"--{flag}", name, default=None, help=help_text)(func)
        return func

    return decorate


@main.command(name="run")
@click.option("--scheduler-name", default=None, help="spec.schedulerName we own [env GANG_SCHEDULER_SCHEDULER_NAME].")
@click.option("--scoring", type=click.Choice(["pack", "spread"]), default=None, help="Node scoring [default pack].")
@click.option("--search-budget", type=click.IntRange(min=1), default=None, help="Most subtree placements per root.")
@click.option("--log-level", default="INFO", show_default=True, help="Python logging level.")
@_settings_options(RUN_FIELDS)
def run_cmd(log_level: str, **flags: Any) -> None:
    """Schedule a live cluster (kubeconfig or in-cluster service account)."""
    values = {k: v for k, v in flags.items() if v is not None and v != ()}
    if "namespaces" in values:
        values["namespaces"] = list(values["namespaces"])
    try:
        settings = Settings.model_validate(values)
    except ValidationError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    uvloop.run(_run(settings))


async def _run(settings: Settings) -> None:
    from scheduler.live.driver import Scheduler
    from scheduler.live.kube import KubeClient  # the live path's imports stay out of `simulate`

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    kube = await KubeClient.connect(settings.kubeconfig, qps=settings.client_qps, burst=settings.client_burst)
    try:
        await Scheduler(settings, kube).run(stop)
    finally:
        await kube.close()


@main.command()
def version() -> None:
    """Print the version."""
    click.echo(__version__)
