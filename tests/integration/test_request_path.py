"""The request path, against the emulator: what a bind costs in requests, and when the
environment (a proxy, ``~/.netrc``) is read.

* A bind answered 201 is the whole transaction for that pod: no GET follows.
* A bind answered 409 is decided by reading the pod once: bound to our node is success (an earlier
  attempt landed; the ``pods/binding`` subresource, ``BindingREST``), bound elsewhere is a permanent
  failure of the plan.
* aiohttp's ``trust_env`` (proxy variables and ``~/.netrc``, read in worker threads per request while its
  timeout runs) is never on: the proxy the environment names for the API server is read once, as
  client-go's ``http.ProxyFromEnvironment`` reads it, and ``NO_PROXY`` exempts the host.
"""

from __future__ import annotations

from pathlib import Path

import kmock
import pytest

from scheduler.client.kube import (
    NAMESPACES,
    NODES,
    PODS,
    PROXY_VARIABLES,
    USER_AGENT,
    ApiError,
    Conflict,
    KubeClient,
    proxy_from_env,
)
from scheduler.live.binder import Binder
from scheduler.model.pod import Pod
from tests.integration.apiserver import ApiServer
from tests.integration.livekit import NS, node, pod

POD_PATH = kmock.resource("", "v1", "pods")


def gets_of_pod(requests: list[kmock.Request], name: str) -> list[kmock.Request]:
    """GETs of pod ``name`` itself (not lists, not watches)."""
    return [r for r in requests if r.method == "GET" and r.resource == POD_PATH and r.name == name
            and not r.subresource]


def bindings(requests: list[kmock.Request]) -> list[kmock.Request]:
    return [r for r in requests if r.method == "POST" and r.subresource == "binding"]


async def created_pod(kube: KubeClient, name: str, node_name: str | None = None) -> Pod:
    return Pod.model_validate(await kube.create(PODS, NS, pod(name, None, node_name=node_name)))


async def test_a_bind_answered_201_is_followed_by_no_get(k8s: ApiServer, kube: KubeClient) -> None:
    await kube.create(NODES, None, node("n1"))
    members = [await created_pod(kube, f"p-{i}") for i in range(3)]

    outcome = await Binder(kube).bind_plan([(p, "n1") for p in members])

    assert outcome.ok and sorted(p.key for p, _ in outcome.bound) == [p.key for p in members]
    assert len(bindings(list(k8s))) == 3
    assert not [r for r in k8s if r.method == "GET" and r.resource == POD_PATH and r.name]  # nothing read back
    for p in members:
        assert k8s.objects[POD_PATH, NS, p.metadata.name]["spec"]["nodeName"] == "n1"


async def test_a_409_from_a_pod_already_on_our_node_is_decided_by_one_read_and_binds_the_gang(
        k8s: ApiServer, kube: KubeClient) -> None:
    await kube.create(NODES, None, node("n1"))
    landed = await created_pod(kube, "p-0")
    rest = [await created_pod(kube, f"p-{i}") for i in (1, 2)]
    # An earlier attempt of ours landed but its reply was lost: the server has p-0 on n1 already.
    await kube.bind(NS, "p-0", "n1")
    seen, errors = len(list(k8s)), len(k8s.errors)

    outcome = await Binder(kube).bind_plan([(landed, "n1"), *((p, "n1") for p in rest)])

    assert outcome.ok and outcome.failed is None and len(outcome.bound) == 3  # the gang is whole, not failed
    sent = list(k8s)[seen:]  # what the binder sent
    assert sorted(r.name for r in bindings(sent)) == ["p-0", "p-1", "p-2"]
    assert len(k8s.errors) == errors + 1 and len(gets_of_pod(sent, "p-0")) == 1  # the 409, decided by one read
    assert not gets_of_pod(sent, "p-1") and not gets_of_pod(sent, "p-2")  # the 201s: no read


async def test_a_409_from_a_pod_bound_elsewhere_fails_the_plan(k8s: ApiServer, kube: KubeClient) -> None:
    await kube.create(NODES, None, node("n1"))
    await kube.create(NODES, None, node("n2"))
    taken = await created_pod(kube, "p-0")
    await kube.bind(NS, "p-0", "n2")  # someone else bound it to another node

    outcome = await Binder(kube, concurrency=1).bind_plan([(taken, "n1"), (await created_pod(kube, "p-1"), "n1")])

    assert outcome.failed is not None and outcome.failed[0] == f"{NS}/p-0"
    assert isinstance(outcome.failed[1], Conflict)
    assert outcome.skipped == [f"{NS}/p-1"] and not outcome.bound  # the plan stops: nothing else is bound
    assert k8s.objects[POD_PATH, NS, "p-0"]["spec"]["nodeName"] == "n2"


@pytest.fixture
def no_proxy_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An environment without proxy variables, whose ``$NETRC`` has credentials for 127.0.0.1 (which aiohttp
    sends as basic auth whenever its session trusts the environment). Returns the netrc path."""
    for name in (*PROXY_VARIABLES, "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password secret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    return netrc


@pytest.mark.parametrize("env", [{}, {"HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1"}],
                         ids=["no-proxy-variable", "proxy-exempted-by-no-proxy"])
async def test_without_a_proxy_for_the_server_neither_netrc_nor_a_proxy_is_used(
        k8s: ApiServer, no_proxy_env: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for name, value in env.items():  # 127.0.0.1:9 is the discard port: nothing listens there
        monkeypatch.setenv(name, value)
    kube = KubeClient.for_host(str(k8s.url))
    try:
        await kube.list(NAMESPACES)
    finally:
        await kube.close()
    [request] = [r for r in k8s if r.method == "GET"]
    assert "Authorization" not in request.headers  # ~/.netrc is never read
    assert request.headers["User-Agent"] == USER_AGENT


async def test_a_user_agent_set_on_the_client_is_sent(k8s: ApiServer) -> None:
    kube = KubeClient.for_host(str(k8s.url))
    kube.api.user_agent = "someone-else"  # as the chaos harness tells its own requests apart
    try:
        await kube.list(NAMESPACES)
    finally:
        await kube.close()
    [request] = [r for r in k8s if r.method == "GET"]
    assert request.headers["User-Agent"] == "someone-else"


async def test_a_proxy_variable_routes_requests_through_the_proxy(k8s: ApiServer, no_proxy_env: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # the discard port: nothing listens
    kube = KubeClient.for_host(str(k8s.url))
    try:
        with pytest.raises(ApiError) as failed:
            await kube.list(NAMESPACES)
        assert failed.value.status == 0
        assert str(failed.value) == f"{failed.value.reason}: {failed.value.message}"  # no HTTP status to quote
    finally:
        await kube.close()
    assert not list(k8s)  # nothing reached the server directly: the proxy was honoured


@pytest.mark.parametrize(("env", "url", "proxy"), [
    ({}, "https://10.0.0.1:443", None),
    ({"HTTPS_PROXY": "http://proxy:3128"}, "https://10.0.0.1:443", "http://proxy:3128"),
    ({"https_proxy": "http://proxy:3128"}, "https://10.0.0.1:443", "http://proxy:3128"),
    ({"HTTP_PROXY": "http://proxy:3128"}, "https://10.0.0.1:443", None),  # an https server: only HTTPS_PROXY
    ({"HTTP_PROXY": "http://proxy:3128"}, "http://127.0.0.1:8080", "http://proxy:3128"),
    ({"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "10.0.0.1"}, "https://10.0.0.1:443", None),
    ({"HTTPS_PROXY": "http://proxy:3128", "no_proxy": ".cluster.local"},
     "https://kubernetes.default.svc.cluster.local", None),
    ({"ALL_PROXY": "http://proxy:3128"}, "https://10.0.0.1:443", None),  # ignored, as client-go ignores it
])
def test_the_environment_proxy_is_client_gos(no_proxy_env: Path, monkeypatch: pytest.MonkeyPatch,
                                             env: dict[str, str], url: str, proxy: str | None) -> None:
    """client-go's ``http.ProxyFromEnvironment``: the scheme's variable, unless ``NO_PROXY`` names the host."""
    monkeypatch.delenv("ALL_PROXY", raising=False)
    monkeypatch.delenv("all_proxy", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert proxy_from_env(url) == proxy



@pytest.mark.looptime
async def test_a_bind_waiting_for_the_rate_limiter_checks_its_target_again_before_it_is_sent(
        k8s: ApiServer, kube: KubeClient) -> None:
    """The check before a bind is asked again once the client's rate limiter lets the bind go: a node deleted while
    the bind waited for its turn is not bound to (the Binding is never sent)."""
    await kube.create(NODES, None, node("n1"))
    member = await created_pod(kube, "p-0")
    limited = KubeClient.for_host(str(k8s.url), qps=1, burst=1)
    try:
        await limited.list(NAMESPACES)  # the one token in the bucket: the bind waits a second for the next
        asked: list[str | None] = []

        def check() -> str | None:
            asked.append(None if not asked else "node n1 no longer exists")  # the node went while it waited
            return asked[-1]

        outcome = await Binder(limited).bind_plan([(member, "n1")], precheck=lambda pod, node: check())
    finally:
        await limited.close()
    assert asked == [None, "node n1 no longer exists"]  # before the wait, then after it
    assert outcome.failed is not None and outcome.failed[1].reason == "TargetChanged"
    assert bindings(list(k8s)) == []
