"""Command line: ``gang-scheduler run | simulate | operator | version``.

Exit codes: 0 — ran (whether or not everything fit); 2 — bad input, with what is wrong on
stderr: a snapshot file that cannot be read, is not YAML, or holds nothing the scheduler reads
(the file named); a bad setting (the flag or ``GANG_SCHEDULER_*`` variable named, with its
value); for ``run`` and ``simulate --from-cluster``, no usable cluster configuration (the kubeconfig
paths and in-cluster variables looked at named), and for the latter a list the API server refused; 3 — ``operator``
stopped because the cluster now serves another group API, to be started again for it (its Deployment restarts it;
the line on stderr says what changed).

Every error is one line, ``error: WHAT``, and a bad value says where it came from, what it was and
what is expected: ``error: --bind-address 'notaport': expected HOST:PORT (e.g. 0.0.0.0:10251)``.
Click's own usage errors (an unknown option, a missing value) are written the same way, exit 2,
without the usage block.

Every setting's flag is derived from its :class:`~scheduler.config.Settings` field (help, default,
the kind of value), and every value is checked by that field alone, so a flag and its variable get
the same check, and flags, variables and the Helm chart cannot drift apart.

Imports are lazy: this module loads Click only; a command's setting flags are made from the settings
model when its parameters are first read (:class:`SettingsCommand`), and each command imports what it
runs (``simulate`` the offline path, ``run`` the live one), so ``version`` and ``--help`` answer without
loading pydantic, and a command's ``--help`` or a setting error without loading numpy, the models or a
Kubernetes client.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
import typing
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NoReturn

import click
from click.core import ParameterSource

from scheduler import __version__
from scheduler.collector import paused_then_frozen
from scheduler.env import ENV_PREFIX, MAX_PORT
from scheduler.errors import ClusterConfigError, SnapshotError
from scheduler.operator.labels import WEBHOOK_CONFIGURATION

if TYPE_CHECKING:
    import asyncio

    from click.shell_completion import CompletionItem
    from pydantic.fields import FieldInfo

    from scheduler.config import Settings
    from scheduler.offline.loader import Objects

Command = Callable[..., None]

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class OneLineError(click.ClickException):
    """A usage error written as one ``error: …`` line (no usage block), exit 2."""

    exit_code = 2

    def show(self, file: typing.IO[Any] | None = None) -> None:
        click.echo(f"error: {self.format_message()}", file=file, err=True)


def _source(ctx: click.Context | None, param: click.Parameter | None) -> str:
    """How a parameter is named in an error: its variable if the value came from it, else its flag."""
    if param is None:
        return "value"
    if (ctx is not None and param.name is not None and isinstance(param, click.Option) and param.envvar
            and ctx.get_parameter_source(param.name) is ParameterSource.ENVIRONMENT):
        return str(param.envvar)
    return max(param.opts, key=len) if param.opts else (param.human_readable_name or "value")


@contextmanager
def _one_line() -> Iterator[None]:
    """Click's usage errors as :class:`OneLineError`: ``error: SOURCE 'VALUE': expected …`` for a bad value
    (the types here quote it: :class:`Checked`), Click's own message for the rest. The help that a bare
    ``gang-scheduler`` prints is left alone."""
    try:
        yield
    except click.exceptions.NoArgsIsHelpError:
        raise
    except click.BadParameter as exc:
        if isinstance(exc, click.MissingParameter) or exc.param is None:
            raise OneLineError(exc.format_message()) from exc
        raise OneLineError(f"{_source(exc.ctx, exc.param)} {exc.message}") from exc
    except click.UsageError as exc:
        raise OneLineError(exc.format_message()) from exc


class Main(click.Group):
    """The command group; every usage error, the group's or a command's, is one line (:func:`_one_line`)."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        with _one_line():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        with _one_line():
            return super().invoke(ctx)


class Checked(click.ParamType[Any]):
    """A Click type whose error quotes the value and says what is expected (``'xml': expected text or json``);
    the conversion itself is ``inner``'s (a :class:`click.Choice`, a :class:`click.IntRange`)."""

    def __init__(self, inner: click.ParamType[Any], expected: str) -> None:
        self.inner = inner
        self.expected = expected
        self.name = inner.name

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str | None:
        return self.inner.get_metavar(param, ctx)

    def shell_complete(self, ctx: click.Context, param: click.Parameter,
                       incomplete: str) -> list[CompletionItem]:
        return self.inner.shell_complete(ctx, param, incomplete)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return self.inner.convert(value, param, ctx)
        except click.BadParameter:
            self.fail(f"{value!r}: expected {self.expected}", param, ctx)


class SettingValue(click.ParamType[str]):
    """A setting's flag: the text as typed, left to the :class:`Settings` field to check (as its variable is);
    ``metavar`` is what the help shows (``INTEGER``, ``[pack|spread]``), ``choices`` what shell completion offers."""

    def __init__(self, metavar: str, choices: tuple[str, ...] = ()) -> None:
        self.name = metavar.lower()
        self.metavar = metavar
        self.choices = choices

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str | None:
        return self.metavar

    def shell_complete(self, ctx: click.Context, param: click.Parameter,
                       incomplete: str) -> list[CompletionItem]:
        from click.shell_completion import CompletionItem  # loaded by Click only when completing

        return [CompletionItem(c) for c in self.choices if c.startswith(incomplete)]


@click.group(cls=Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="gang-scheduler", message="%(version)s")
def main() -> None:
    """gang-scheduler: all-or-nothing scheduling of Kubernetes PodGroup / CompositePodGroup gangs."""


GROUP_API_CHANGED_EXIT = 3
"""``operator``'s exit status when it stopped for a change of the served group API (the module docstring)."""


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


def _metavar(name: str, info: FieldInfo) -> str:
    """What the help shows for a scalar setting's value: ``[pack|spread]`` for a ``Literal``, ``INTEGER``, ``FLOAT``,
    ``TEXT`` (``str | None`` is ``TEXT``).

    Raises ``TypeError`` for an annotation not mapped here (a new kind of setting must be added).
    """
    annotation = info.annotation
    if typing.get_origin(annotation) is typing.Literal:
        return "[" + "|".join(str(v) for v in typing.get_args(annotation)) + "]"
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    base = args[0] if len(args) == 1 else annotation  # ``str | None`` → ``str``
    names = {str: "TEXT", int: "INTEGER", float: "FLOAT"}
    if base in names:
        return names[base]
    raise TypeError(f"setting {name}: no command-line type for {annotation!r}")


def _bounds(info: FieldInfo) -> str:
    """A numeric setting's range as the help states it: ``>= 1``, ``> 0``; empty without one."""
    import annotated_types

    parts = []
    for item in info.metadata:
        for cls, attr, sign in ((annotated_types.Ge, "ge", ">="), (annotated_types.Gt, "gt", ">"),
                                (annotated_types.Le, "le", "<="), (annotated_types.Lt, "lt", "<")):
            if isinstance(item, cls):
                parts.append(f"{sign} {getattr(item, attr)}")
    return ", ".join(parts)


def _shown(value: Any) -> str:
    """A default as the help shows it, in the form the environment variable takes."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ",".join(value) or "none"
    return str(value) or "empty"


def _setting_option(name: str) -> click.Option:
    """The ``--flag`` of setting ``name``: help is the field's description, its range, the variable
    ``GANG_SCHEDULER_<NAME>`` and the default. A ``bool`` is a ``--x/--no-x`` pair; a list is a repeatable flag
    whose values may be comma-separated; any other value is passed as typed to the field (:class:`SettingValue`).
    The flag defaults to unset, so the environment (then the field default) applies."""
    from scheduler.config import Settings

    info = Settings.model_fields[name]
    flag = name.replace("_", "-")
    default = info.get_default(call_default_factory=True)
    bounds = _bounds(info)
    help_text = (f"{info.description} [{bounds + '; ' if bounds else ''}env {ENV_PREFIX}{name.upper()}; "
                 f"default: {_shown(default)}]")
    if info.annotation is bool:
        return click.Option([f"--{flag}/--no-{flag}", name], default=None, help=help_text)
    if typing.get_origin(info.annotation) is list:
        return click.Option([f"--{flag}", name], multiple=True, metavar="NAME[,NAME...]", help=help_text)
    choices = tuple(map(str, typing.get_args(info.annotation)))
    literal = typing.get_origin(info.annotation) is typing.Literal
    return click.Option([f"--{flag}", name], default=None, help=help_text,
                        type=SettingValue(_metavar(name, info), choices if literal else ()))


class _SettingsSlot(click.Option):
    """Where a :class:`SettingsCommand`'s setting flags go among its parameters, until they are made."""

    def __init__(self, param_decls: Sequence[str], fields: tuple[str, ...] | None) -> None:
        super().__init__(param_decls, hidden=True, expose_value=False)
        self.fields = fields

    def options(self) -> list[click.Option]:
        """One flag per setting, in ``fields`` order (``None``: every setting, in the model's order)."""
        if self.fields is None:
            from scheduler.config import Settings

            return [_setting_option(name) for name in Settings.model_fields]
        return [_setting_option(name) for name in self.fields]


class SettingsCommand(click.Command):
    """A command with setting flags (:func:`_settings_options`), made from the :class:`~scheduler.config.Settings`
    fields the first time its parameters are read — to parse its arguments, show its help or complete — so a
    command that does not run (``version``, the group's ``--help``) never loads pydantic."""

    _declared: list[click.Parameter]
    _made: bool

    @property
    def params(self) -> list[click.Parameter]:
        if not self._made:
            self._made = True
            self._declared[:] = [made for param in self._declared
                                 for made in (param.options() if isinstance(param, _SettingsSlot) else [param])]
        return self._declared

    @params.setter
    def params(self, value: list[click.Parameter]) -> None:
        self._declared, self._made = value, False


def _settings_options(fields: tuple[str, ...] | None) -> Callable[[Command], Command]:
    """One ``--flag`` per setting of ``fields`` (``None``: every setting), in that order, where the decorator
    stands among the command's options (:func:`_setting_option` says what each is); the command must be a
    :class:`SettingsCommand`, which makes them on first use."""

    return click.option("--settings-slot", cls=_SettingsSlot, fields=fields)


def _settings(flags: dict[str, Any]) -> Settings:
    """The settings: ``flags`` given on the command line over ``GANG_SCHEDULER_*`` variables over
    the defaults. Unset flags (``None``, an empty repeatable flag) are left to the environment.

    On a bad value prints one ``error: SOURCE 'value': what is wrong`` line per problem (SOURCE:
    the ``--flag`` if given, else the variable if set; a default another value refuses, ``--backoff-max-s`` below
    a ``--backoff-initial-s`` given, is named by its ``--flag`` — by its variable where the command has no such flag —
    and "(the default)") and exits 2; every command uses this. ``flags``: every option of the command.
    """
    from pydantic import ValidationError
    from pydantic_settings import SettingsError

    from scheduler.config import Settings
    from scheduler.field_errors import plain_message

    given = {k: list(v) if isinstance(v, tuple) else v for k, v in flags.items() if v is not None and v != ()}
    try:
        return Settings.model_validate(given)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            if not err["loc"]:
                click.echo(f"error: {plain_message(err)}", err=True)
                continue
            name = str(err["loc"][0])
            flag, variable = f"--{name.replace('_', '-')}", f"{ENV_PREFIX}{name.upper()}"
            from_env = any(k.upper() == variable for k in os.environ)  # pydantic-settings reads them in any case
            source = flag if name in given or (not from_env and name in flags) else variable
            value = err["input"]
            value = ",".join(value) if isinstance(value, list) and all(isinstance(v, str) for v in value) else value
            default = "" if name in given or from_env else " (the default)"
            click.echo(f"error: {source} {value!r}{default}: {plain_message(err)}", err=True)
    except SettingsError as exc:  # a variable pydantic-settings could not decode; the message names it
        click.echo(f"error: {exc}", err=True)
    sys.exit(2)


SIMULATE_FIELDS = ("scheduler_name", "scoring", "search_budget", "preemption", "kubeconfig")
"""The settings ``simulate`` reads (``kubeconfig``: with ``--from-cluster``); ``run`` takes every setting."""

CLUSTER = "<cluster>"
"""How ``simulate --from-cluster`` names the cluster's objects in load problems (as ``<stdin>`` for ``-``)."""


@main.command(name="simulate", cls=SettingsCommand)
@click.argument("files", nargs=-1)
@click.option("--output", "-o", type=Checked(click.Choice(["text", "json"]), "text or json"), default="text",
              show_default=True)
@click.option("--from-cluster", is_flag=True,
              help="Read the cluster's current state through the kubeconfig (read-only: the lists `run` makes) "
                   "instead of FILES.")
@click.option("--add", "adds", multiple=True, metavar="FILE",
              help="With --from-cluster: a file (YAML or JSON; `-`: standard input) of workload to schedule "
                   "as if created now. Repeatable.")
@_settings_options(SIMULATE_FIELDS)
def simulate_cmd(files: tuple[str, ...], output: str, from_cluster: bool, adds: tuple[str, ...],
                 **flags: Any) -> None:
    """Schedule a cluster snapshot offline and report the placements.

    FILES are YAML or JSON files (multi-document, `kubectl get -o yaml` / `-o json` lists,
    concatenated JSON) with Nodes, Pods, Namespaces, PodGroups, CompositePodGroups, Workloads,
    PriorityClasses, PodDisruptionBudgets, DRA objects (ResourceSlices, DeviceClasses,
    ResourceClaims, ResourceClaimTemplates) and storage objects (PersistentVolumeClaims,
    PersistentVolumes, StorageClasses, CSINodes), and Jobs, JobSets, Kubeflow PyTorchJobs and LeaderWorkerSets (one
    of ours without its pods is scheduled as the pods and groups the cluster would make of it); `-` reads one from
    standard input. Other kinds are skipped (one no v1.37 API group serves is warned about, with the closest kind),
    and so is a field the v1.37 schema does not have (warned about, with the closest field). With no FILE,
    a built-in example cluster is used. With --from-cluster, the cluster is the snapshot and each
    --add FILE adds to it (would this job fit now, where, and what would it preempt); nothing is
    written to the cluster.
    """
    settings = _settings(flags)
    if adds and not from_cluster:
        _fail("--add needs --from-cluster (snapshot files are arguments)")
    if flags.get("kubeconfig") is not None and not from_cluster:
        _fail("--kubeconfig needs --from-cluster (a snapshot file is read without a cluster)")
    if from_cluster and files:
        _fail("--from-cluster reads the cluster: give the workload to add with --add FILE")
    # The settings are checked first: a bad one is told at once. The collector stays off to the end: what the
    # run makes lives until the report is out, and the little cyclic garbage of its decisions (the binding
    # cycles' futures) goes with the process.
    with paused_then_frozen():
        from scheduler.offline.report import render_json, render_text
        from scheduler.offline.simulate import simulate

        objects = _snapshot(settings, files, from_cluster, adds)
        sim = simulate(objects, settings.scheduler_name, settings.solver(), settings.preemption)
        click.echo(render_json(sim) if output == "json" else render_text(sim))


def _snapshot(settings: Settings, files: tuple[str, ...], from_cluster: bool, adds: tuple[str, ...]) -> Objects:
    """The objects ``simulate`` schedules: the cluster's (``--from-cluster``, plus each ``--add`` file) or the
    files' (the built-in example when none); exits 2 (:func:`_fail`) on a :class:`SnapshotError` or an unusable
    cluster configuration."""
    from scheduler.offline.loader import load
    from scheduler.offline.simulate import example_path

    try:
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")  # an object with no creationTimestamp: as if made now
        if from_cluster:
            import uvloop

            logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
            objects = uvloop.run(_cluster_objects(settings))
            if adds:  # a `-` reads sys.stdin; created now, as the API server would stamp them
                load(adds, objects=objects, created=now)
        else:  # a hand-written workload beside a dump queues after the dump's older gangs, as with --add
            objects = load(list(files) or [str(example_path())], created=now)
    except SnapshotError as exc:
        _fail(str(exc))
    except ClusterConfigError as exc:
        _fail(f"no usable cluster configuration: {exc}")
    return objects


async def _cluster_objects(settings: Settings) -> Objects:
    """The cluster's objects, listed once as ``run`` lists them (:func:`~scheduler.client.discovery.listed_resources`:
    PodGroups only if the API serves them, else a warning). Only GET requests are made. Raises
    :class:`ClusterConfigError` (no usable configuration) or :class:`SnapshotError` (a list or the discovery
    failed: the API server's answer quoted)."""
    from scheduler.client.discovery import list_objects, listed_resources
    from scheduler.client.kube import ApiError, KubeClient  # the live path's imports stay out of files
    from scheduler.model.kinds import COMPOSITE_POD_GROUP
    from scheduler.offline.loader import Objects

    kube = await KubeClient.connect(settings.kubeconfig, qps=settings.client_qps, burst=settings.client_burst)
    objects = Objects()
    try:
        resources = await listed_resources(kube, settings.preemption)
        # the operator makes trees only where CompositePodGroups are served (desired(composite=...))
        objects.composite = any(r.kind == COMPOSITE_POD_GROUP.name for r in resources)
        async for raw in list_objects(kube, resources):
            objects.add(CLUSTER, raw)
    except ApiError as exc:
        raise SnapshotError(f"{CLUSTER}: cannot list the cluster: {exc}") from exc
    finally:
        await kube.close()
    return objects


_log_level_option = click.option(
    "--log-level", type=Checked(click.Choice(LOG_LEVELS, case_sensitive=False), "one of " + ", ".join(LOG_LEVELS)),
    default="INFO", envvar=f"{ENV_PREFIX}LOG_LEVEL",
    help=f"Python logging level. [env {ENV_PREFIX}LOG_LEVEL; default: info]")
"""``--log-level`` of the long-running commands (``run``, ``operator``)."""


def _log_to_stderr(level: str) -> None:
    """The long-running commands' logging: ``level`` and up, one timestamped line per record, on stderr.

    The line names no thread, process or source line, so records do not gather them (the Python logging
    HOWTO's "Optimization": ``logThreads``, ``logProcesses``, ``logMultiprocessing`` off, and no caller
    lookup, which walks the stack on every record): ``run`` logs a line per scheduling decision."""
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    logging._srcfile = None  # the HOWTO's documented switch for "no caller information"
    handler = logging.StreamHandler()
    handler.setFormatter(_SecondFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logging.basicConfig(level=level.upper(), handlers=[handler])


class _SecondFormatter(logging.Formatter):
    """``logging.Formatter`` whose ``asctime`` text is the standard one (``2026-11-29 10:00:00,123``, local
    time), with the whole second formatted once per second instead of once per record."""

    _second: tuple[int, str] = (-1, "")

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        if datefmt is not None or self.default_msec_format is None:
            return super().formatTime(record, datefmt)
        whole = int(record.created)
        if self._second[0] != whole:
            self._second = (whole, time.strftime(self.default_time_format, self.converter(record.created)))
        return self.default_msec_format % (self._second[1], record.msecs)


@main.command(name="run", cls=SettingsCommand)
@_settings_options(None)
@_log_level_option
def run_cmd(log_level: str, **flags: Any) -> None:
    """Schedule a live cluster (kubeconfig or in-cluster service account)."""
    settings = _settings(flags)
    import uvloop  # the settings are checked first: a bad one is told at once

    _log_to_stderr(log_level)
    try:
        uvloop.run(_run(settings))
    except ClusterConfigError as exc:
        _fail(f"no usable cluster configuration: {exc}")


async def _connected(settings: Settings, serve: Callable[[Any, asyncio.Event], Awaitable[None]]) -> None:
    """Connect, then ``serve(kube, stop)`` until SIGTERM/SIGINT sets ``stop``; the client is closed
    after. Raises :class:`ClusterConfigError` when no cluster configuration is usable (before
    anything starts)."""
    from scheduler.client.kube import KubeClient, connections_for  # kept out of `simulate`

    kube = await KubeClient.connect(settings.kubeconfig, qps=settings.client_qps, burst=settings.client_burst,
                                    connections=connections_for(settings.bind_concurrency))
    import asyncio

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await serve(kube, stop)
    finally:
        await kube.close()


async def _run(settings: Settings) -> None:
    """Schedule until SIGTERM/SIGINT (:func:`_connected`)."""
    from scheduler.live.driver import Scheduler

    await _connected(settings, lambda kube, stop: Scheduler(settings, kube).run(stop))


OPERATOR_FIELDS = ("scheduler_name", "kubeconfig", "client_qps", "client_burst", "api_discovery_interval_s")
"""The settings ``operator`` reads (the scheduler name it writes into pods, its client, how often it asks discovery
again)."""


def _service(value: str | None) -> tuple[str, str, int] | None:
    """``NAMESPACE/NAME:PORT`` → (namespace, name, port); exits 2 on another shape."""
    if not value:
        return None
    ns, _, rest = value.partition("/")
    name, _, port = rest.partition(":")
    if not (ns and name and port.isdigit() and 0 < int(port) <= MAX_PORT):
        _fail(f"--webhook-service {value!r}: expected NAMESPACE/NAME:PORT")
    return ns, name, int(port)


def _operator_option(flag: str, *, help: str, **kw: Any) -> Callable[[Command], Command]:
    """An operator flag and its ``GANG_SCHEDULER_OPERATOR_*`` variable, both in its help as the settings' are."""
    env = f"{ENV_PREFIX}OPERATOR_" + flag.removeprefix("--").replace("-", "_").upper()
    default = kw.get("default")
    shown = f"; default: {default}" if default not in (None, "") else ""
    return click.option(flag, envvar=env, help=f"{help} [env {env}{shown}]", **kw)


@main.command(name="operator", cls=SettingsCommand)
@_settings_options(OPERATOR_FIELDS)
@_operator_option("--webhook-port", type=Checked(click.IntRange(1, MAX_PORT), f"a port from 1 to {MAX_PORT}"),
                  default=9443, help=f"HTTPS port of the webhooks, 1 to {MAX_PORT}.")
@_operator_option("--webhook-host", default=None,
                  help="Host name in the self-signed certificate and the webhook URL (default: the address).")
@_operator_option("--webhook-service", default=None, metavar="NAMESPACE/NAME:PORT",
                  help="The Service in front of the webhooks, given to the API server instead of a URL.")
@_operator_option("--webhook-configuration", default=WEBHOOK_CONFIGURATION,
                  help="Name of the webhook configurations kopf creates and keeps up to date (a domain: kopf names "
                       "the webhooks <handler>.<this name>, and the API server wants three dot-separated segments); "
                       "empty: made by hand.")
@_operator_option("--cert-file", default=None, help="PEM certificate for the webhooks (default: self-signed).")
@_operator_option("--key-file", default=None, help="PEM private key of --cert-file.")
@_operator_option("--ca-file", default=None, help="PEM CA of --cert-file, given to the API server (default: the cert).")
@_operator_option("--liveness", default="http://0.0.0.0:8080/healthz", help="kopf's health endpoint; empty: none.")
@_log_level_option
def operator_cmd(webhook_port: int, webhook_host: str | None, webhook_service: str | None, webhook_configuration: str,
                 cert_file: str | None, key_file: str | None, ca_file: str | None, liveness: str, log_level: str,
                 **flags: Any) -> None:
    """Gangs for existing Jobs, JobSets, PyTorchJobs and LeaderWorkerSets (kopf): groups, webhooks."""
    settings = _settings(flags)
    if bool(cert_file) != bool(key_file):
        _fail("--cert-file and --key-file go together")
    import uvloop  # the settings are checked first: a bad one is told at once

    from scheduler.operator.apis import NoGroupApi
    from scheduler.operator.runner import GroupApiChanged, OperatorOptions

    options = OperatorOptions(
        scheduler_name=settings.scheduler_name, webhook_port=webhook_port, webhook_host=webhook_host or None,
        service=_service(webhook_service), managed=webhook_configuration or None, certfile=cert_file or None,
        pkeyfile=key_file or None, cafile=ca_file or None, liveness=liveness or None,
        discovery_interval_s=settings.api_discovery_interval_s)
    _log_to_stderr(log_level)
    try:
        uvloop.run(_operate(settings, options))
    except ClusterConfigError as exc:
        _fail(f"no usable cluster configuration: {exc}")
    except NoGroupApi as exc:
        _fail(str(exc))
    except GroupApiChanged as exc:
        click.echo(f"operator: {exc}", err=True)
        sys.exit(GROUP_API_CHANGED_EXIT)


async def _operate(settings: Settings, options: Any) -> None:
    """Run the operator until SIGTERM/SIGINT (:func:`_connected`)."""
    from scheduler.operator.runner import run

    await _connected(settings, lambda kube, stop: run(options, kube, stop))


@main.command()
def version() -> None:
    """Print the version."""
    click.echo(__version__)


if __name__ == "__main__":  # ``python -m scheduler.cli``, as the ``gang-scheduler`` command
    main()
