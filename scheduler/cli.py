"""Command line: ``gang-scheduler simulate | version``.

Exit codes: 0 — ran (whether or not everything fit); 2 — bad input (a snapshot file cannot be
read, is not YAML, or holds nothing the scheduler reads), with the file named on stderr.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from scheduler import __version__
from scheduler.config import Settings
from scheduler.errors import SnapshotError
from scheduler.loader import load
from scheduler.report import render_json, render_text
from scheduler.simulate import example_path, simulate


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
    settings = Settings.model_validate({k: v for k, v in overrides.items() if v is not None})
    paths = list(files) or [str(example_path())]
    try:
        objects = load(paths)
    except SnapshotError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    sim = simulate(objects, settings.scheduler_name, settings.solver())
    click.echo(render_json(sim) if output == "json" else render_text(sim))


@main.command()
def version() -> None:
    """Print the version."""
    click.echo(__version__)
