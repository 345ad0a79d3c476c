"""The operator process: kopf's settings for it, and :func:`run` (``gang-scheduler operator``).

kopf runs everything: the watches and handlers, the webhook server (:class:`~scheduler.operator.
certificates.ServiceWebhookServer`), and — with ``managed`` set — the
``MutatingWebhookConfiguration`` / ``ValidatingWebhookConfiguration`` named so, which it creates and
keeps up to date with the served resources, the handlers' rules and object selectors and the CA
bundle of its certificate (persistent webhooks stay in them when the operator stops, so opted-in
pods are refused, not scheduled one by one, while it is down). Its liveness endpoint serves
``/healthz`` with the probe results. Progress and diff-base annotations on the workloads use
:data:`PREFIX`, not kopf's default. ``standalone``: one replica, no peering.

The handlers are made for the group API discovery found at start. Discovery is asked again every
``discovery_interval_s``; when two answers in a row find another API (an upgrade serves ``v1beta1`` PodGroups where
``v1alpha2`` was, CompositePodGroups come or go, the workload API is switched off — one answer alone may be an API
server's passing 404), the operator stops with :class:`GroupApiChanged`, and the container is started again (the
Deployment's ``restartPolicy: Always``) with handlers for what is served now.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import kopf

from scheduler.client.kube import ApiError, KubeClient
from scheduler.operator.apis import NoGroupApi, Served, discover
from scheduler.operator.certificates import ServiceWebhookServer
from scheduler.operator.handlers import build_registry
from scheduler.operator.labels import WEBHOOK_CONFIGURATION

PREFIX = "operator.gang-scheduler.io"
"""kopf's annotation prefix; not ``gang-scheduler.io`` itself, as kopf leaves its own prefix's annotations
out of the diffs (a change of ``gang-scheduler.io/min-count`` would go unseen)."""
LoginFn = Callable[..., Any]


@dataclass(frozen=True)
class OperatorOptions:
    """How the operator runs. ``webhook_addr``/``webhook_port``: where the webhook server listens
    (HTTPS); ``webhook_host``: the name in its self-signed certificate and URL (default: the
    address); ``service``: ``(namespace, name, port)`` of the Service in front of it, reported to
    the API server instead of a URL; ``managed``: the name of the webhook configurations kopf
    manages (None: they are made by hand; a DNS subdomain of at least two segments,
    :data:`~scheduler.operator.labels.WEBHOOK_CONFIGURATION`); ``certfile``/``pkeyfile``: a certificate to use
    instead of a self-signed one (PEM; reloaded when the files change), ``cafile`` the CA that signed it (the
    bundle given to the API server; default: the certificate itself); ``liveness``: kopf's health endpoint URL
    (None: none)."""

    scheduler_name: str = "gang-scheduler"
    webhook_addr: str = "0.0.0.0"
    webhook_port: int = 9443
    webhook_host: str | None = None
    service: tuple[str, str, int] | None = None
    managed: str | None = WEBHOOK_CONFIGURATION
    certfile: str | None = None
    pkeyfile: str | None = None
    cafile: str | None = None
    liveness: str | None = "http://0.0.0.0:8080/healthz"
    discovery_interval_s: float = 30.0
    """How often the served group API is looked up again, seconds (the scheduler's ``--api-discovery-interval-s``)."""


class GroupApiChanged(Exception):
    """The cluster serves another group API than the one the operator's handlers were made for: it stopped, to be
    started again (see the module docstring)."""


def configure(settings: kopf.OperatorSettings, options: OperatorOptions) -> None:
    """kopf's settings for ``options`` (see the module docstring)."""
    settings.admission.server = ServiceWebhookServer(
        addr=options.webhook_addr, port=options.webhook_port, host=options.webhook_host, service=options.service,
        certfile=options.certfile, pkeyfile=options.pkeyfile, cafile=options.cafile,
        extra_sans=[f"{options.service[1]}.{options.service[0]}.svc"] if options.service else ())
    settings.admission.managed = options.managed
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=PREFIX)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=PREFIX)
    settings.posting.level = logging.WARNING


def login_as(kube: KubeClient) -> LoginFn:
    """A kopf login handler giving kopf the credentials ``kube`` uses — the ``--kubeconfig`` (or ``$KUBECONFIG``, or
    the in-cluster service account) it was configured from — so kopf watches the cluster our groups are written to.
    kopf's own logins read only ``$KUBECONFIG`` / ``~/.kube/config`` and the service account, so with the flag alone
    they find nothing (``LoginError: Ran out of valid credentials``) or another cluster.

    Read as kopf's ``login_via_async_client`` reads kubernetes-asyncio's default configuration: the server, TLS
    files, basic auth, and the ``BearerToken`` header, asked for again at each login so a refreshed token (exec
    plugin, rotated service-account token) is the one kopf re-logs in with after a 401."""
    async def login(settings: kopf.OperatorSettings, **_: Any) -> kopf.ConnectionInfo:
        cfg = kube.api.configuration
        header: Any = cfg.get_api_key_with_prefix("BearerToken")
        if inspect.isawaitable(header):  # kubernetes-asyncio ≥ 33.3: runs the refresh hook
            header = await header
        scheme, _space, token = str(header or "").rpartition(" ")
        return kopf.ConnectionInfo(
            server=str(cfg.host), ca_path=cfg.ssl_ca_cert, insecure=not cfg.verify_ssl,
            username=cfg.username or None, password=cfg.password or None, scheme=scheme or None,
            token=token or None, certificate_path=cfg.cert_file, private_key_path=cfg.key_file,
            proxy_url=cfg.proxy, trust_env=settings.networking.trust_env)
    return login


async def run(options: OperatorOptions, kube: KubeClient, stop: asyncio.Event, *,
              settings: kopf.OperatorSettings | None = None) -> None:
    """Discover the group API with ``kube`` (raises :class:`~scheduler.operator.apis.NoGroupApi` when
    none is served), then run kopf until ``stop`` is set. ``kube`` writes the groups, and kopf logs in
    with its credentials (:func:`login_as`). ``settings``: a starting point (tests), else defaults."""
    served = await discover(kube)
    registry = build_registry(lambda: contextlib.nullcontext(kube), served, options.scheduler_name)
    kopf.on.login(registry=registry)(login_as(kube))
    settings = settings or kopf.OperatorSettings()
    configure(settings, options)
    logging.getLogger(__name__).info("operator: writing PodGroups of %s", served.describe())
    follower = asyncio.create_task(_follow(kube, served, options.discovery_interval_s, stop),
                                   name="operator/discovery")
    try:
        await kopf.operator(registry=registry, settings=settings, clusterwide=True, standalone=True,
                            liveness_endpoint=options.liveness, stop_flag=stop)
    finally:
        follower.cancel()
        (changed,) = await asyncio.gather(follower, return_exceptions=True)  # kopf's own error goes first
    if isinstance(changed, str):
        raise GroupApiChanged(changed)


async def _follow(kube: KubeClient, served: Served, interval_s: float, stop: asyncio.Event) -> str | None:
    """Every ``interval_s`` seconds, discovery again (as the scheduler's ``Watches.rediscover``), until cancelled or
    ``stop`` is set; when two answers in a row find the same other than ``served``, sets ``stop`` and returns what
    changed. A discovery that fails, whatever it raises, is logged and asked again at the next interval; so is one
    that found another API once."""
    log = logging.getLogger(__name__)
    before: list[Served | None] = []  # the answer before this one, when it differed from ``served``
    while not stop.is_set():
        await asyncio.sleep(interval_s)
        try:
            now: Served | None = await discover(kube)
        except NoGroupApi:
            now = None
        except ApiError as exc:
            log.warning("operator: discovery failed: %s; asked again in %.0f s", exc, interval_s)
            continue
        except Exception:  # a bug must not stop the following for good
            log.exception("operator: discovery failed; asked again in %.0f s", interval_s)
            continue
        if stop.is_set():  # stopped meanwhile (SIGTERM): not a change
            return None
        if now == served:
            before = []
            continue
        what = now.describe() if now is not None else "no group API"
        if before != [now]:
            before = [now]
            log.info("operator: discovery finds %s, where the operator was started for %s: looking again in %.0f s",
                     what, served.describe(), interval_s)
            continue
        changed = (f"the cluster now serves {what}, where the operator was started for {served.describe()}: "
                   "stopped, to start again for it")
        log.warning("operator: %s", changed)
        stop.set()
        return changed
    return None
