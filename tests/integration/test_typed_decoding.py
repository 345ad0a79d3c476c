"""Pods and nodes decoded straight from the reply's bytes into models (``scheduler.client.decoding``), and the plain
way when that fails: a list page holding one object the model refuses is yielded as plain JSON (so the cache refuses
that object alone), a watch event likewise, and an in-stream ERROR still raises."""

from __future__ import annotations

import asyncio
import json
from typing import Any, cast

import kmock
import pytest

from scheduler.cache.cluster import ClusterCache, Refusal
from scheduler.client.decoding import TypedPage, continue_of, event_decoder, page_decoder
from scheduler.client.kube import PODS, Gone, KubeClient
from scheduler.live.informers import Informer
from scheduler.model.pod import Pod
from tests.bench.emulator import BenchApiServer
from tests.integration.apiserver import UNCHECKED_HEADER
from tests.integration.conftest import RESOURCES, VERBS
from tests.integration.livekit import NS, pod


def negative(name: str) -> dict[str, Any]:
    """A pod the model refuses (a negative cpu request), as a server that skipped validation would store it."""
    body = pod(name, None)
    body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "-1"}}
    return body


async def pages(kube: KubeClient) -> list[Any]:
    return [items async for items, _ in kube.list_pages(PODS, NS, model=Pod)]


async def test_a_list_page_is_models_unless_an_object_is_refused(k8s: Any, kube: KubeClient) -> None:
    await kube.create(PODS, NS, pod("a", None))
    (page,) = await pages(kube)
    assert isinstance(page, TypedPage) and [p.metadata.name for p in page] == ["a"]
    assert page == [Pod.model_validate(page.raw(i)) for i in range(len(page))] and page.raw(len(page)) is None
    unchecked = KubeClient.for_host(str(k8s.url))
    unchecked.api.default_headers[UNCHECKED_HEADER] = "stored past validation"
    try:
        await unchecked.create(PODS, NS, negative("bad"))
    finally:
        await unchecked.close()
    (page,) = await pages(kube)
    assert not isinstance(page, TypedPage) and sorted(p["metadata"]["name"] for p in page) == ["a", "bad"]
    cache = ClusterCache("gang-scheduler")
    refused: list[Refusal] = []
    cache.on_refused = refused.append
    relist = cache.relist("Pod")
    relist.add(page)
    relist.finish()
    assert sorted(cache.pods) == [f"{NS}/a"] and [r.name for r in refused] == ["bad"]


async def test_a_watch_event_is_a_model_unless_refused_and_an_error_still_raises(k8s: Any, kube: KubeClient) -> None:
    _, rv = await kube.list(PODS, NS)
    unchecked = KubeClient.for_host(str(k8s.url))
    unchecked.api.default_headers[UNCHECKED_HEADER] = "stored past validation"
    await kube.create(PODS, NS, pod("a", None))
    await unchecked.create(PODS, NS, negative("bad"))
    await unchecked.close()
    seen: list[Any] = []
    async with asyncio.timeout(10):
        async for event in kube.watch(PODS, rv, NS, model=Pod):
            seen.append(event)
            if len(seen) == 2:
                break
    good, bad = seen
    assert isinstance(good["object"], Pod) and good["object"].metadata.name == "a" and good["line"]
    assert isinstance(bad["object"], dict) and bad["object"]["metadata"]["name"] == "bad" and "line" not in bad
    k8s.compact()
    with pytest.raises(Gone):
        async with asyncio.timeout(10):
            async for _ in kube.watch(PODS, good["object"].metadata.resource_version, NS, model=Pod):
                pass


async def test_pages_are_asked_for_ahead_and_every_object_comes_once() -> None:
    """A paged list (the benchmark's emulator pages as the real server does, metadata first): the next page is
    asked for before this one is decoded, with the token read from the reply's head; every pod comes once, in
    order, and a token read wrongly is never used."""
    async with BenchApiServer(real=True) as srv, kmock.Server(srv) as http:
        for path, (kind, namespaced, subresources) in RESOURCES.items():
            srv.resources[path] = kmock.ResourceInfo(kind=kind, singular=kind.lower(), namespaced=namespaced,
                                                     verbs=VERBS, subresources=subresources)
        kube = KubeClient.for_host(str(http.url))
        try:
            for i in range(5):
                await kube.create(PODS, NS, pod(f"p{i}", None))
            listing = kube.list_pages(PODS, NS, limit=2, model=Pod)
            first, _ = await anext(listing)
            await asyncio.sleep(0.5)  # this page not consumed yet: the next one was asked for all the same
            assert isinstance(first, TypedPage) and first.metadata.continue_ not in srv.pages
            got = [first] + [items async for items, _ in listing]
            assert [[p.metadata.name for p in page] for page in got] == [["p0", "p1"], ["p2", "p3"], ["p4"]]
            assert all(isinstance(page, TypedPage) for page in got)
            assert continue_of(b'{"kind":"PodList","metadata":{"continue":"abc"},"items":[]}') == "abc"
            assert continue_of(b'{"items":[{"continue":"inside"}],"metadata":{}}') == ""  # items first: no guess
        finally:
            await kube.close()


def test_an_observer_that_raises_loses_no_object(caplog: pytest.LogCaptureFixture) -> None:
    """``Informer.see`` failing on an object (a bug in what checks it as sent) is logged; the object still goes to
    the cache, from a list page and from a watch event alike."""
    def see(obj: Any, raw: Any) -> None:
        raise RuntimeError(f"cannot check {obj.metadata.name}")

    informer = Informer(cast(KubeClient, None), PODS, ClusterCache("gang-scheduler"), lambda events: None,
                        model=Pod, see=see)
    body = {**pod("a", None), "metadata": {"name": "a", "namespace": NS, "uid": "u", "resourceVersion": "3"}}
    page = page_decoder(Pod)(json.dumps({"metadata": {}, "items": [body]}).encode())
    assert list(informer._page(page)) == list(page)
    line = json.dumps({"type": "ADDED", "object": body}).encode()
    event = {"type": "ADDED", "object": event_decoder(Pod)(line)[1], "line": line}
    assert list(informer._event(event)) == [event["object"]]
    assert caplog.text.count("cannot check a") == 2
