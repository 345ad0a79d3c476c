"""Claim resolution kept across snapshots (:class:`~scheduler.dra.claims.PendingClaims`) against resolving from scratch.

:class:`~scheduler.dra.claims.PendingClaims` resolves again only the pods whose inputs were reported changed.
Here random sequences of changes — pods, claims, templates, PodGroups, DeviceClasses and namespaces added,
changed and deleted; claims going in and out of flight; the nodes' resources changing — are applied to live
dicts the way the cache applies watch events (a new object per change), each reported as the cache reports it,
and after any number of them its result must equal ``resolve_all`` over a fresh index. Both the live path and
``simulate``'s (templates synthesised: a claim one pod's resolution makes is read by the others) are covered;
and through the cache itself (:class:`~scheduler.cache.cluster.ClusterCache`, which makes those reports), a
snapshot's DRA view equals it too.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scheduler.cache.cluster import ClusterCache
from scheduler.dra.claims import ClaimIndex, PendingClaims, resolve_all
from scheduler.model import Pod, PodGroup, ResourceClaimTemplate
from scheduler.model.dra import DeviceClass, ResourceClaim
from scheduler.model.namespace import Namespace

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

NAMESPACES = ("a", "a", "a", "b")
CLAIMS = ("c0", "c1")
TEMPLATES = ("t0", "t1")
PODS = ("p0", "p1", "p2")
GROUPS = ("g0", "g1")
CLASSES = ("gpu", "nic")
EXTENDED = ("example.com/gpu", "example.com/nic")

REQUEST_KINDS = ("plain", "two", "bad-cel", "admin", "zero")
requests = st.sampled_from(("plain", "plain", "plain", "two", "admin", "admin", "bad-cel", "zero"))
"""Mostly valid requests, so most pods resolve to claims to allocate (and so their reads matter)."""
rarely = st.sampled_from((False, False, False, False, False, True))


def request(kind: str) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu", "count": 1}
    if kind == "two":
        exactly["count"] = 2
    elif kind == "bad-cel":
        exactly["selectors"] = [{"cel": {"expression": "device.nonsense("}}]
    elif kind == "admin":
        exactly["adminAccess"] = True
    elif kind == "zero":
        exactly["count"] = 0
    return {"name": "r", "exactly": exactly}


claim_state = st.fixed_dictionaries({
    "request": requests,
    "allocated": rarely,
    "deleting": rarely,
})


def make_claim(ns: str, name: str, state: dict[str, Any], rv: int) -> ResourceClaim:
    body: dict[str, Any] = {"metadata": {"name": name, "namespace": ns, "resourceVersion": str(rv)},
                            "spec": {"devices": {"requests": [request(state["request"])]}}}
    if state["deleting"]:
        body["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        body["metadata"]["finalizers"] = ["resource.kubernetes.io/delete-protection"]
    if state["allocated"]:
        body["status"] = {"allocation": {
            "devices": {"results": [{"request": "r", "driver": "d", "pool": "n0", "device": "gpu-0"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["n0"]}]}]}}}
    return ResourceClaim.model_validate(body)


def make_template(ns: str, name: str, kind: str) -> ResourceClaimTemplate:
    return ResourceClaimTemplate.model_validate({"metadata": {"name": name, "namespace": ns}, "spec": {
        "spec": {"devices": {"requests": [request(kind)]}}}})


entry: st.SearchStrategy[dict[str, str]] = st.one_of(
    st.builds(lambda e, c: {"name": e, "resourceClaimName": c}, st.sampled_from(("e0", "e1")), st.sampled_from(CLAIMS)),
    st.builds(lambda e, t: {"name": e, "resourceClaimTemplateName": t}, st.sampled_from(("e0", "e1")),
              st.sampled_from(TEMPLATES)),
)


def entry_name(e: dict[str, str]) -> str:
    return e["name"]


entries = st.lists(entry, max_size=2, unique_by=entry_name)
pod_state = st.fixed_dictionaries({
    "entries": entries,
    "statuses": st.dictionaries(st.sampled_from(("e0", "e1")), st.sampled_from(CLAIMS), max_size=2),
    "group": st.sampled_from((None, *GROUPS)),
    "extended": st.lists(st.sampled_from((*EXTENDED, "example.com/other")), max_size=2, unique=True),
    "bound": rarely,
})


def make_pod(ns: str, name: str, state: dict[str, Any]) -> Pod:
    spec: dict[str, Any] = {"schedulerName": "gang-scheduler", "resourceClaims": state["entries"], "containers": [
        {"name": "c", "resources": {"requests": {"cpu": "1", **{r: "1" for r in state["extended"]}}}}]}
    if state["group"]:
        spec["schedulingGroup"] = {"podGroupName": state["group"]}
    if state["bound"]:
        spec["nodeName"] = "n0"
    status = {"resourceClaimStatuses": [{"name": e, "resourceClaimName": c} for e, c in state["statuses"].items()]}
    return Pod.model_validate({"metadata": {"name": name, "namespace": ns}, "spec": spec, "status": status})


group_state = st.fixed_dictionaries({
    "entries": entries,
    "statuses": st.dictionaries(st.sampled_from(("e0", "e1")), st.sampled_from(CLAIMS), max_size=2),
})


def make_group(ns: str, name: str, state: dict[str, Any]) -> PodGroup:
    return PodGroup.model_validate({"metadata": {"name": name, "namespace": ns}, "spec": {
        "schedulingPolicy": {"gang": {"minCount": 1}}, "resourceClaims": state["entries"]},
        "status": {"resourceClaimStatuses": [{"name": e, "resourceClaimName": c}
                                             for e, c in state["statuses"].items()]}})


def make_class(name: str, extended: str | None, stamp: int) -> DeviceClass:
    spec: dict[str, Any] = {"extendedResourceName": extended} if extended else {}
    return DeviceClass.model_validate({"metadata": {"name": name, "creationTimestamp": f"2026-01-0{stamp}T00:00:00Z"},
                                       "spec": spec})


ns_name = st.sampled_from(NAMESPACES)


def or_deleted(state: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A new state of the object, or (one time in four) None: the object is deleted."""
    return st.one_of(state, state, state, st.none())


STEPS: dict[str, st.SearchStrategy[tuple[str, str, str, Any]]] = {
    "pod": st.tuples(st.just("pod"), ns_name, st.sampled_from(PODS), or_deleted(pod_state)),
    "claim": st.tuples(st.just("claim"), ns_name, st.sampled_from(CLAIMS), or_deleted(claim_state)),
    "template": st.tuples(st.just("template"), ns_name, st.sampled_from(TEMPLATES), or_deleted(requests)),
    "group": st.tuples(st.just("group"), ns_name, st.sampled_from(GROUPS), or_deleted(group_state)),
    "class": st.tuples(st.just("class"), st.just(""), st.sampled_from(CLASSES),
                       or_deleted(st.tuples(st.sampled_from((None, *EXTENDED)), st.integers(1, 3)))),
    "namespace": st.tuples(st.just("namespace"), st.just(""), ns_name, or_deleted(st.booleans())),
    "flight": st.tuples(st.just("flight"), ns_name, st.sampled_from((*CLAIMS, "p0-e0", "p1-e1", "g0-e0")),
                        st.booleans()),
}
step = st.sampled_from(("pod", "pod", "pod", "pod", "claim", "claim", "claim", "template", "group", "group",
                        "class", "namespace", "flight")).flatmap(STEPS.__getitem__)
"""One change; pods and claims change most often, as in a drain."""


VALID = {"request": "plain", "allocated": False, "deleting": False}
SEED: list[tuple[str, str, str, Any]] = [
    *(("claim", ns, name, VALID) for ns in ("a", "b") for name in CLAIMS),
    *(("template", ns, name, "plain") for ns in ("a", "b") for name in TEMPLATES),
    *(("group", ns, name, {"entries": [{"name": "e0", "resourceClaimTemplateName": "t0"}], "statuses": {"e0": "c1"}})
      for ns in ("a", "b") for name in GROUPS),
    ("namespace", "", "a", True),
    ("class", "", "gpu", ("example.com/gpu", 1)),
]
"""Where every sequence starts: claims, templates, PodGroups and a class that resolve, so that the random
changes after it move pods between every outcome (to allocate, shared, pinned, waiting) and back."""


class Live:
    """The cache's live dicts, changed the way watch events change them (a new object per change)."""

    def __init__(self) -> None:
        self.pods: dict[str, Pod] = {}
        self.claims: dict[str, ResourceClaim] = {}
        self.templates: dict[str, ResourceClaimTemplate] = {}
        self.groups: dict[str, PodGroup] = {}
        self.classes: dict[str, DeviceClass] = {}
        self.namespaces: dict[str, Namespace] = {}
        self.in_flight: set[str] = set()
        self.version = 0

    def apply(self, kind: str, ns: str, name: str, state: Any) -> None:
        self.version += 1
        key = f"{ns}/{name}"
        if kind == "pod":
            put(self.pods, key, None if state is None else make_pod(ns, name, state))
        elif kind == "claim":
            put(self.claims, key, None if state is None else make_claim(ns, name, state, self.version))
        elif kind == "template":
            put(self.templates, key, None if state is None else make_template(ns, name, state))
        elif kind == "group":
            put(self.groups, key, None if state is None else make_group(ns, name, state))
        elif kind == "class":
            put(self.classes, name, None if state is None else make_class(name, *state))
        elif kind == "namespace":
            labels = {"resource.kubernetes.io/admin-access": "true"} if state else {}
            put(self.namespaces, name, None if state is None else Namespace.model_validate(
                {"metadata": {"name": name, "labels": labels}}))
        elif kind == "flight":
            (self.in_flight.add if state else self.in_flight.discard)(key)

    def index(self, synthesize: bool, synthesized: dict[str, ResourceClaim]) -> ClaimIndex:
        return ClaimIndex(self.claims, self.templates, self.classes, self.groups, synthesize,
                          synthesized, frozenset(self.in_flight), namespaces=self.namespaces)


def put(objects: dict[str, Any], key: str, obj: Any) -> None:
    if obj is None:
        objects.pop(key, None)
    else:
        objects[key] = obj


def by_name(*claims: str) -> dict[str, Any]:
    return {"entries": [{"name": f"e{i}", "resourceClaimName": c} for i, c in enumerate(claims)], "statuses": {},
            "group": None, "extended": [], "bound": False}


ADMIN = {"request": "admin", "allocated": False, "deleting": False}


@SETTINGS
@given(synthesize=st.booleans(), steps=st.lists(step, min_size=8, max_size=40))
@example(synthesize=False, steps=[  # a claim named by two pods, then by one: shared, then the pod's own
    ("pod", "a", "p0", by_name("c0")), ("pod", "a", "p1", by_name("c0")), ("pod", "a", "p1", None)])
@example(synthesize=False, steps=[  # adminAccess allowed, then not (the namespace's label removed)
    ("claim", "a", "c0", ADMIN), ("pod", "a", "p0", by_name("c0")), ("namespace", "", "a", False)])
@example(synthesize=False, steps=[  # a claim in flight, then not
    ("pod", "a", "p0", by_name("c0")), ("flight", "a", "c0", True), ("flight", "a", "c0", False)])
@example(synthesize=True, steps=[  # a template-generated claim made from its template, then the template gone
    ("pod", "a", "p0", {"entries": [{"name": "e0", "resourceClaimTemplateName": "t0"}], "statuses": {},
                        "group": None, "extended": [], "bound": False}), ("template", "a", "t0", None)])
@example(synthesize=False, steps=[  # a PodGroup's claim: its status names another claim
    ("pod", "a", "p0", {"entries": [{"name": "e0", "resourceClaimTemplateName": "t0"}], "statuses": {},
                        "group": "g0", "extended": [], "bound": False}),
    ("group", "a", "g0", {"entries": [{"name": "e0", "resourceClaimTemplateName": "t0"}], "statuses": {"e0": "c0"}})])
@example(synthesize=False, steps=[  # an extended resource a class serves, then the class gone
    ("pod", "a", "p0", {"entries": [], "statuses": {}, "group": None, "extended": ["example.com/gpu"],
                        "bound": False}), ("class", "", CLASSES[0], None)])
def test_resolution_after_every_change_equals_resolving_from_scratch(
        synthesize: bool, steps: list[tuple[str, str, str, Any]]) -> None:
    live = Live()
    pending = PendingClaims()
    synthesized: dict[str, ResourceClaim] = {}  # kept across snapshots, as the cache keeps it
    for kind, ns, name, state in [*SEED, *steps]:
        live.apply(kind, ns, name, state)
        report(pending, live, kind, ns, name)
        got = pending.resolve(live.index(synthesize, synthesized))
        # From scratch, with the claims synthesised so far (the same ones the scheduler would reuse).
        want = resolve_all(live.index(synthesize, dict(synthesized)), list(live.pods.values()))
        assert got == want, (kind, ns, name, state)
        assert pending.pinned == dict(Counter(k for c in want.values() for k in c.pinned))


REPORTED = {"claim": "claim", "template": "template", "group": "podgroup", "namespace": "namespace",
            "flight": "flight"}
"""Step kind → what the cache reports it as (classes and node resources are not reported: the served extended
resources and node resources are compared on every resolve)."""


def report(pending: PendingClaims, live: Live, kind: str, ns: str, name: str) -> None:
    """Tell ``pending`` about one applied step, as :class:`~scheduler.cache.cluster.ClusterCache` does."""
    key = f"{ns}/{name}"
    if kind == "pod":
        pending.set_pod(key, live.pods.get(key))
    elif kind in REPORTED:
        pending.changed(REPORTED[kind], name if kind == "namespace" else key)


@SETTINGS
@given(steps=st.lists(st.tuples(step, st.booleans()), min_size=8, max_size=40))
@example(steps=[  # a claim named by two pods, then by one: shared, then the pod's own
    (("pod", "a", "p0", by_name("c0")), True), (("pod", "a", "p1", by_name("c0")), True),
    (("pod", "a", "p1", None), True)])
@example(steps=[  # a claim goes in flight: its pod waits
    (("pod", "a", "p0", by_name("c0")), True), (("flight", "a", "c0", True), True)])
@example(steps=[  # a claim in flight and out again between two snapshots: resolved again all the same
    (("pod", "a", "p0", by_name("c0")), True), (("flight", "a", "c0", True), False),
    (("claim", "a", "c0", VALID), False), (("flight", "a", "c0", False), True)])
@example(steps=[  # a pod named by a PodGroup's status, the group replaced
    (("pod", "a", "p0", {"entries": [{"name": "e0", "resourceClaimTemplateName": "t0"}], "statuses": {},
                         "group": "g0", "extended": [], "bound": False}), True),
    (("group", "a", "g0", {"entries": [{"name": "e0", "resourceClaimTemplateName": "t0"}], "statuses": {"e0": "c0"}}),
     True)])
@example(steps=[  # an allocated claim pins the pod, then is deleted
    (("claim", "a", "c0", {"request": "plain", "allocated": True, "deleting": False}), True),
    (("pod", "a", "p0", by_name("c0")), True), (("claim", "a", "c0", None), True)])
def test_incremental_resolution_equals_resolving_from_scratch(steps: list[tuple[tuple[str, str, str, Any], bool]]
                                                              ) -> None:
    live = Live()
    pending = PendingClaims()
    for (kind, ns, name, state), snapshot in [*((s, False) for s in SEED), *steps, (("pod", "a", "p0", None), True)]:
        live.apply(kind, ns, name, state)
        report(pending, live, kind, ns, name)
        if not snapshot:
            continue
        got = pending.resolve(live.index(False, {}))
        want = resolve_all(live.index(False, {}), list(live.pods.values()))
        assert got == want, (kind, ns, name, state)
        assert pending.pinned == dict(Counter(k for c in want.values() for k in c.pinned))
        assert set(pending.rows) == {k for k, p in live.pods.items() if not p.is_bound}


def test_only_the_pods_that_read_a_changed_object_are_resolved_again() -> None:
    live = Live()
    pending = PendingClaims()
    for ns, name, state in (("a", "c0", VALID), ("a", "c1", VALID)):
        live.apply("claim", ns, name, state)
    for pod, claim in (("p0", "c0"), ("p1", "c1")):
        live.apply("pod", "a", pod, by_name(claim))
        report(pending, live, "pod", "a", pod)
    first = pending.resolve(live.index(False, {}))
    live.apply("claim", "a", "c0", {"request": "two", "allocated": False, "deleting": False})
    report(pending, live, "claim", "a", "c0")
    assert pending.dirty == {"a/p0"}
    second = pending.resolve(live.index(False, {}))
    assert second["a/p1"] is first["a/p1"]
    assert second["a/p0"].allocate[0].spec.requests[0].options[0].count == 2
    assert pending.resolve(live.index(False, {})) is second  # nothing changed: the same mapping


CACHE_KINDS = {"pod": "Pod", "claim": "ResourceClaim", "template": "ResourceClaimTemplate", "group": "PodGroup",
               "class": "DeviceClass", "namespace": "Namespace"}


@SETTINGS
@given(steps=st.lists(st.tuples(step.filter(lambda s: s[0] != "flight"), st.booleans()),
                      min_size=8, max_size=30))
@example(steps=[  # adminAccess allowed, then not: the namespace's label removed
    (("claim", "a", "c0", ADMIN), False), (("pod", "a", "p0", by_name("c0")), True),
    (("namespace", "", "a", False), True)])
@example(steps=[  # a PodGroup's status names another claim
    (("pod", "a", "p0", {"entries": [{"name": "e0", "resourceClaimTemplateName": "t0"}], "statuses": {},
                         "group": "g0", "extended": [], "bound": False}), True),
    (("group", "a", "g0", {"entries": [{"name": "e0", "resourceClaimTemplateName": "t0"}], "statuses": {"e0": "c0"}}),
     True)])
def test_the_cache_reports_every_change_claim_resolution_reads(steps: list[tuple[tuple[str, str, str, Any], bool]]
                                                               ) -> None:
    """Through :class:`~scheduler.cache.cluster.ClusterCache` (objects added, replaced and deleted as the watch
    does): the claims of a snapshot's DRA view equal resolving every pending pod from scratch."""
    live = Live()
    cache = ClusterCache("gang-scheduler", dra=True)
    objects: dict[str, dict[str, Any]] = {"pod": live.pods, "claim": live.claims, "template": live.templates,
                                          "group": live.groups, "class": live.classes, "namespace": live.namespaces}
    for (kind, ns, name, state), snapshot in [*((s, False) for s in SEED), *steps, (("pod", "a", "p0", None), True)]:
        live.apply(kind, ns, name, state)
        key = name if kind in ("class", "namespace") else f"{ns}/{name}"
        obj = objects[kind].get(key)
        if obj is not None:
            cache.load_one(CACHE_KINDS[kind], obj)
        else:
            cache.delete_one(CACHE_KINDS[kind], key)
        if not snapshot:
            continue
        view = cache.snapshot().dra
        assert view is not None
        index = ClaimIndex(live.claims, live.templates, live.classes, live.groups,
                           namespaces=live.namespaces, in_flight=cache.devices.in_flight())
        assert view.pods == resolve_all(index, list(live.pods.values())), (kind, ns, name, state)
