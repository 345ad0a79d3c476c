"""The binding cycle's runner: PreBind plugins in order, the Bind plugin only after all of them, rollback in
reverse for the members not bound, and the result the cache settles by — with recording plugins and the
recording writer, so the order and the messages are checked exactly."""

from __future__ import annotations

import pytest

from scheduler.binding.transaction import BindingPlugins, BindingRunner
from scheduler.cache.cluster import ClusterCache
from scheduler.errors import NotFound
from scheduler.framework.binding_cycle import BindingCycle, BindResult, Failure, Undone
from scheduler.framework.interface import ApiWriter
from scheduler.framework.plan import Plan
from scheduler.model import Pod
from scheduler.model.kinds import NODE, POD
from scheduler.model.scheduling import GroupKey
from scheduler.offline.recorder import CacheWriter
from tests.unit.solver.builders import node, pod

NS = "ml"


class Step:
    """A PreBind plugin that records what it is asked and fails when told to."""

    def __init__(self, name: str, log: list[str], *, fail: bool = False, skip: bool = False,
                 undone: Undone | None = None) -> None:
        self.name = name
        self.log = log
        self.fail = fail
        self.skip = skip
        self.undone = undone or Undone()

    def pre_flight(self, cycle: BindingCycle) -> bool:
        self.log.append(f"{self.name}.pre_flight")
        return not self.skip

    async def pre_bind(self, cycle: BindingCycle, writer: ApiWriter) -> Failure | None:
        self.log.append(f"{self.name}.pre_bind")
        return Failure(f"{NS}/{self.name}", f"{self.name} refused", 403) if self.fail else None

    async def rollback(self, cycle: BindingCycle, writer: ApiWriter) -> Undone:
        self.log.append(f"{self.name}.rollback bound={sorted(cycle.bound_keys)}")
        return self.undone


class Binds:
    """A Bind plugin binding through the writer, refusing the members named in ``refuse``."""

    name = "Binds"

    def __init__(self, log: list[str], refuse: frozenset[str] = frozenset()) -> None:
        self.log = log
        self.refuse = refuse

    async def bind(self, cycle: BindingCycle, writer: ApiWriter) -> None:
        self.log.append("bind")
        for p, n in cycle.plan.placements:
            if p.metadata.name in self.refuse:
                cycle.outcome.failed = (p.key, NotFound(404, "NotFound", "pod gone"))
                return
            await writer.bind(p, n)
            cycle.outcome.bound.append((p, n))


def setup(names: tuple[str, ...] = ("g-0", "g-1")) -> tuple[ClusterCache, Plan, list[Pod]]:
    cache = ClusterCache("gang-scheduler")
    cache.load_one(NODE.name, node("n1"))
    pods = [pod(n, namespace=NS, group="g") for n in names]
    for p in pods:
        cache.load_one(POD.name, p)
    return cache, Plan(GroupKey("PodGroup", NS, "g"), tuple((p, "n1") for p in pods), frozenset()), pods


async def run(plugins: BindingPlugins, cache: ClusterCache, plan: Plan) -> tuple[BindingCycle, BindResult]:
    runner = BindingRunner(plugins)
    cycle = runner.start(BindingCycle(plan))
    return cycle, await runner.run(cycle, CacheWriter(cache))


async def test_every_prebind_runs_in_order_before_the_binds_and_nothing_is_rolled_back_on_success() -> None:
    log: list[str] = []
    cache, plan, _ = setup()
    plugins = BindingPlugins((Step("a", log), Step("skipped", log, skip=True), Step("b", log)), Binds(log))
    _cycle, result = await run(plugins, cache, plan)
    assert log == ["a.pre_flight", "skipped.pre_flight", "b.pre_flight", "a.pre_bind", "b.pre_bind", "bind"]
    assert result.ok and [p.key for p, _ in result.bound] == ["ml/g-0", "ml/g-1"]
    assert {k: p.spec.node_name for k, p in cache.pods.items()} == {"ml/g-0": "n1", "ml/g-1": "n1"}


async def test_a_prebind_failure_binds_nobody_and_rolls_back_the_started_plugins_in_reverse() -> None:
    log: list[str] = []
    cache, plan, _ = setup()
    claims = Undone(released=("ml/gpu",), kept=("ml/nic",), summary="1 claim write(s) rolled back")
    plugins = BindingPlugins((Step("a", log, undone=claims), Step("b", log, fail=True,
                                                                 undone=Undone(note="left in place: x")),
                              Step("c", log)), Binds(log))
    cycle, result = await run(plugins, cache, plan)
    assert log[3:] == ["a.pre_bind", "b.pre_bind", "b.rollback bound=[]", "a.rollback bound=[]"]
    assert result.failure is not None
    assert result.failure.message == ("b refused; no member bound, 1 claim write(s) rolled back, the group "
                                      "requeued; left in place: x (could not roll back ml/nic)")
    assert (result.forget, result.release) == (["ml/g-0", "ml/g-1"], ["ml/gpu"])
    assert cycle.outcome.skipped == ["ml/g-0", "ml/g-1"] and cycle.outcome.failed is not None
    assert not any(p.spec.node_name for p in cache.pods.values())


async def test_a_failure_before_any_claim_was_written_releases_all_of_the_plans_devices() -> None:
    log: list[str] = []
    cache, plan, _ = setup()
    _cycle, result = await run(BindingPlugins((Step("intent", log, fail=True),), Binds(log)), cache, plan)
    assert result.release is None and "bind" not in log


@pytest.mark.parametrize("refuse", [pytest.param(frozenset({"g-1"}), id="second-member-gone"),
                                    pytest.param(frozenset({"g-0"}), id="first-member-gone")])
async def test_a_failed_bind_keeps_the_bound_members_and_rolls_back_for_the_rest(refuse: frozenset[str]) -> None:
    log: list[str] = []
    cache, plan, _ = setup()
    plugins = BindingPlugins((Step("a", log, undone=Undone(released=("ml/gpu-g-1",))),), Binds(log, refuse))
    _cycle, result = await run(plugins, cache, plan)
    bound = [] if "g-0" in refuse else ["ml/g-0"]
    assert log[-1] == f"a.rollback bound={bound}"
    assert [p.key for p, _ in result.bound] == bound
    assert result.forget == [k for k in ("ml/g-0", "ml/g-1") if k not in bound]
    assert result.release == ["ml/gpu-g-1"]
    assert result.failure is not None and result.failure.message == (
        f"binding {result.forget[0]} failed: 404 NotFound: pod gone; {len(bound)}/2 members bound, the rest "
        "forgotten and the group requeued")
