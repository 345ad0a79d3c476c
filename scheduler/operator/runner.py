"""The operator process: kopf's settings for it, and :func:`run` (``gang-scheduler operator``).

kopf runs everything: the watches and handlers, the webhook server (:class:`~scheduler.operator.
certificates.ServiceWebhookServer`), and — with ``managed`` set — the
``MutatingWebhookConfiguration`` / ``ValidatingWebhookConfiguration`` named so, which it creates and
keeps up to date with the served resources, the handlers' rules and object selectors and the CA
bundle of its certificate (persistent webhooks stay in them when the operator stops, so opted-in
pods are refused, not scheduled one by one, while it is down). Its liveness endpoint serves
``/healthz`` with the probe results. Progress and diff-base annotations on the workloads use
:data:`PREFIX`, not kopf's default. ``standalone``: one replica, no peering.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import kopf

from scheduler.live.kube import KubeClient
from scheduler.operator.apis import discover
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
    manages (None: they are made by hand; a DNS subdomain of at least two segments, :data:`WEBHOOK_CONFIGURATION`); ``certfile``/``pkeyfile``: a certificate to use instead of
    a self-signed one (PEM; reloaded when the files change), ``cafile`` the CA that signed it (the
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


def default_login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """kopf's own logins: the in-cluster service account, else the kubeconfig."""
    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)


async def run(options: OperatorOptions, kube: KubeClient, stop: asyncio.Event, *, login: LoginFn = default_login,
              settings: kopf.OperatorSettings | None = None) -> None:
    """Discover the group API with ``kube`` (raises :class:`~scheduler.operator.apis.NoGroupApi` when
    none is served), then run kopf until ``stop`` is set. ``kube`` writes the groups; kopf logs in
    with ``login`` (a ``kopf.on.login`` handler). ``settings``: a starting point (tests), else defaults."""
    served = await discover(kube)
    registry = build_registry(lambda: contextlib.nullcontext(kube), served, options.scheduler_name)
    kopf.on.login(registry=registry)(login)
    settings = settings or kopf.OperatorSettings()
    configure(settings, options)
    logging.getLogger(__name__).info("operator: writing %s groups", served.describe())
    await kopf.operator(registry=registry, settings=settings, clusterwide=True, standalone=True,
                        liveness_endpoint=options.liveness, stop_flag=stop)
