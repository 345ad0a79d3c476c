"""The operator's registry run by kopf's own test runner (``kopf.testing.KopfRunner``: the ``kopf run``
command in a thread with its own event loop), against the emulator served from another thread.

This is the path kopf's CLI takes (login, discovery, watches, webhook server, managed webhook
configurations, startup and cleanup handlers, a clean exit), as opposed to ``kopf.operator()``
inside the test's loop in ``test_operator.py``. The test speaks to both over plain HTTP(S) from
the test thread: create a Job, see its PodGroup appear and owned, call the pod webhook.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import ssl
import threading
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from typing import Any

import kmock
import kopf
import pytest
from kopf.testing import KopfRunner

from scheduler.client.kube import PODS, KubeClient
from scheduler.operator.apis import Flavour, Served
from scheduler.operator.handlers import build_registry
from scheduler.operator.runner import OperatorOptions, configure
from tests.integration.apiserver import ApiServer
from tests.integration.conftest import RESOURCES, VERBS
from tests.integration.livekit import NS
from tests.integration.operatorkit import CONFIGURATION, OPERATOR_RESOURCES, job, job_pod, review


@contextlib.contextmanager
def emulator_thread() -> Iterator[str]:
    """The emulator on its own loop in a daemon thread; yields its base URL."""
    url: list[str] = []
    started, stop = threading.Event(), threading.Event()

    async def serve() -> None:
        async with ApiServer() as srv, kmock.Server(srv):
            for path, (kind, namespaced, subs) in {**RESOURCES, **OPERATOR_RESOURCES}.items():
                srv.resources[path] = kmock.ResourceInfo(kind=kind, singular=kind.lower(), namespaced=namespaced,
                                                         verbs=VERBS, subresources=subs)
            url.append(str(srv.url).rstrip("/"))
            started.set()
            while not stop.is_set():
                await asyncio.sleep(0.05)

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    assert started.wait(30), "emulator did not start"
    try:
        yield url[0]
    finally:
        stop.set()
        thread.join(30)


def http(method: str, url: str, body: Any = None, context: ssl.SSLContext | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30, context=context) as resp:
        return json.loads(resp.read())


def poll(check: Any, what: str, timeout_s: float = 60) -> Any:
    """Wall-clock polling is unavoidable here: kopf runs in another thread, outside any fake clock."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if value := check():
                return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def kopf_logging() -> Iterator[None]:
    """``kopf run`` configures logging for the whole process (root level INFO and a handler, the
    ``asyncio`` logger muted: kopf ``_core/actions/loggers.configure``); put it back for the tests after."""
    root, quiet = logging.getLogger(), logging.getLogger("asyncio")
    saved = (root.level, list(root.handlers), quiet.propagate, list(quiet.handlers))
    try:
        yield
    finally:
        root.setLevel(saved[0])
        root.handlers[:] = saved[1]
        quiet.propagate = saved[2]
        quiet.handlers[:] = saved[3]


@pytest.mark.timeout(120)
@pytest.mark.usefixtures("kopf_logging")
def test_kopf_runner_runs_the_operator_registry() -> None:
    with emulator_thread() as url:
        @contextlib.asynccontextmanager
        async def connect() -> AsyncIterator[KubeClient]:  # opened in kopf's loop by the startup handler
            kube = KubeClient.for_host(url)
            try:
                yield kube
            finally:
                await kube.close()

        registry = build_registry(connect, Served(Flavour.WORKLOAD, composite=True), "gang-scheduler")
        kopf.on.login(registry=registry)(lambda **_: kopf.ConnectionInfo(server=url))
        settings = kopf.OperatorSettings()
        settings.scanning.disabled = True
        configure(settings, OperatorOptions(webhook_addr="127.0.0.1", webhook_port=0, liveness=None))
        with KopfRunner(["run", "--all-namespaces", "--standalone"], registry=registry, settings=settings) as runner:
            managed = f"{url}/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/{CONFIGURATION}"
            hooks = poll(lambda: http("GET", managed)["webhooks"], "managed webhooks")
            created = http("POST", f"{url}/apis/batch/v1/namespaces/{NS}/jobs", job("train", 2))
            pg = poll(lambda: http("GET", f"{url}/apis/scheduling.k8s.io/v1beta1/namespaces/{NS}/podgroups/train"),
                      "the Job's PodGroup")
            pods = next(h for h in hooks if h["rules"] and h["rules"][0]["resources"] == ["pods"])["clientConfig"]
            context = ssl.create_default_context(cadata=base64.b64decode(pods["caBundle"]).decode())
            pod = job_pod(created)
            pod["metadata"]["labels"]["gang-scheduler.io/gang"] = "true"
            answer = http("POST", pods["url"], review(PODS, pod), context=context)
    assert runner.exit_code == 0 and runner.exception is None
    assert pg["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    assert pg["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
    ops = json.loads(base64.b64decode(answer["response"]["patch"]))
    assert {"op": "add", "path": "/spec/schedulingGroup", "value": {"podGroupName": "train"}} in ops
    assert {"op": "replace", "path": "/spec/schedulerName", "value": "gang-scheduler"} in ops
