"""The binding cycle's values: what the PreBind and Bind plugins share for one plan, and what they report.

kube-scheduler runs a *binding cycle* per pod after its scheduling cycle: PreBind plugins (volume binding,
DRA claim writes), then one Bind plugin (the ``pods/binding`` write), then PostBind; a failure at any point
runs Unreserve and forgets the pod (``pkg/scheduler/schedule_one.go`` ``bindingCycle``). Here a binding cycle
is per *plan* — the whole gang — so that no member is bound before every PreBind step of every member has
succeeded. :class:`BindingCycle` is its state (kube's ``CycleState`` of the binding half): written by each
plugin's ``pre_flight`` before any await, read by its ``pre_bind`` and ``rollback``. The plugins themselves
are the Protocols :class:`~scheduler.framework.interface.PreBindPlugin` and
:class:`~scheduler.framework.interface.BindPlugin`; ``scheduler.binding`` runs them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from scheduler.errors import ApiError
from scheduler.framework.cycle_state import StateKey
from scheduler.framework.plan import Plan
from scheduler.framework.snapshot import Snapshot
from scheduler.model.pod import Pod

T = TypeVar("T")

Precheck = Callable[[Pod, str], str | None]
"""Asked just before binding (pod, node): None to go ahead, else why the target no longer fits."""


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a plan's writes stopped: the object (``ns/name`` of a pod or claim), the message for the
    pods and logs, the HTTP status of the failed request (0: none, e.g. leadership lost), and the
    request's error where one failed (None: a check or a wait failed)."""

    key: str
    message: str
    status: int = 0
    error: ApiError | None = None


@dataclass(slots=True)
class BindResult:
    """What a binder did with a plan: ``bound`` (pod, node) pairs, the first ``failure`` if any, and what
    the cache must give back — ``forget`` pod keys whose assumption ends unbound, ``release`` claim keys
    whose held devices are free again (None: all of the plan's)."""

    bound: list[tuple[Pod, str]] = field(default_factory=list)
    failure: Failure | None = None
    forget: list[str] = field(default_factory=list)
    release: list[str] | None = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    """Device ids the next attempts must not be given (their binding failed: KEP-5007)."""

    @property
    def ok(self) -> bool:
        return self.failure is None


@dataclass(slots=True)
class BindOutcome:
    """What happened to a plan's members: pods bound, the first permanent failure (pod key, error), pods not
    attempted. Filled in as binds land, so a caller whose transaction raised still knows which members are
    bound (they must never be forgotten: the server has them)."""

    bound: list[tuple[Pod, str]] = field(default_factory=list)
    failed: tuple[str, ApiError] | None = None
    skipped: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failed is None and not self.skipped


@dataclass(frozen=True, slots=True)
class Undone:
    """What a PreBind plugin's ``rollback`` did: ``released`` — claim keys whose devices are free again (the
    cache gives them back); ``kept`` — claim keys whose writes could not be undone (their devices stay held);
    ``summary`` — a phrase for the plan's failure message (``"2 claim write(s) rolled back"``, "" for none);
    ``note`` — what was deliberately left in place, for the message ("" for nothing)."""

    released: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()
    summary: str = ""
    note: str = ""
    excluded: tuple[str, ...] = ()
    """Device ids whose binding failed: the next attempts are not given them."""


@dataclass(slots=True)
class BindingCycle:
    """One plan's binding cycle.

    ``plan``: what to bind. ``token``: the plan's token in the cache (the durable intent its Bindings carry names
    it; None writes no intent). ``snapshot``: the snapshot the plan was made on (None where a caller has only the
    plan). ``precheck``: the check just before each bind (None: none). ``outcome``: the members' outcome, filled in
    by the Bind plugin.
    ``waiting``: the conditions a PreBind plugin would still wait for where the writer cannot wait
    (``simulate``): one phrase each. ``data``: per-plugin values written by ``pre_flight`` or ``pre_bind``.
    """

    plan: Plan
    token: str | None = None
    snapshot: Snapshot | None = None
    precheck: Precheck | None = None
    outcome: BindOutcome = field(default_factory=BindOutcome)
    waiting: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    def write(self, key: StateKey[T], value: T) -> None:
        self.data[key.name] = value

    def read(self, key: StateKey[T], default: T) -> T:
        """The value a plugin stored under ``key``, or ``default`` when it stored none (nothing to do)."""
        value: T = self.data.get(key.name, default)
        return value

    @property
    def pods(self) -> list[str]:
        return [p.key for p, _ in self.plan.placements]

    @property
    def bound_keys(self) -> set[str]:
        return {p.key for p, _ in self.outcome.bound}
