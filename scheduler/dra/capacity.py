"""Consumable capacity (KEP-5075): how much of a device's capacity one allocation consumes.

A device published with ``allowMultipleAllocations: true`` is shared by several allocations, each consuming
part of its ``capacity``; a request states what it needs in ``capacity.requests``. The rules, as the
resource.k8s.io/v1 API reference (``CapacityRequirements``, ``CapacityRequestPolicy``,
``CapacityRequestPolicyRange``) and kube-scheduler's structured allocator (``consumable_capacity.go``,
``calculateConsumedCapacity``, ``violatesPolicy``, ``resolveCapacityName``, v1.37) define them:

* every capacity of the device is consumed by every allocation of it: a capacity the request does not name
  consumes the policy's ``default``, or the whole capacity when the capacity has no ``requestPolicy``;
* a named capacity with no policy consumes exactly what is requested; with ``validRange`` a request below
  ``min`` is raised to ``min`` and, with ``step``, rounded up to ``min + n·step``; with ``validValues`` it is
  rounded up to the smallest valid value not below it;
* the consumed amount must then keep the policy — at most ``max`` and on a step of ``validRange``, or one
  of ``validValues`` (the ``default`` always does) — else the device cannot serve the request;
* a request naming a capacity the device does not have cannot be served by it; a short name is the
  driver's domain (``bandwidth`` and ``<driver>/bandwidth`` are one capacity);
* the sum consumed by all allocations of a device never exceeds each capacity's ``value``.

Amounts are exact (``Decimal``): step arithmetic on fractional quantities is exact, as with the
``DRAFractionalCapacityRange`` gate (without it Kubernetes rounds fractional bounds to integers first).
Pure: no state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

Amounts = tuple[tuple[str, Decimal], ...]
"""(capacity name as the device publishes it, amount) pairs, in the device's capacity order."""


@dataclass(frozen=True, slots=True)
class CapacityPolicy:
    """A capacity's ``requestPolicy``: ``default``; ``validRange`` (``minimum``, ``maximum``, ``step``) or
    ``validValues`` (ascending). Unset fields are None / empty."""

    default: Decimal | None = None
    minimum: Decimal | None = None
    maximum: Decimal | None = None
    step: Decimal | None = None
    valid_values: tuple[Decimal, ...] = ()

    @property
    def has_range(self) -> bool:
        """Whether ``validRange`` is set (``min`` is required in it)."""
        return self.minimum is not None

    def round_up(self, requested: Decimal) -> Decimal:
        """What a request of ``requested`` consumes before the policy check: raised to ``min`` and up to the
        next step of ``validRange``, or up to the next of ``validValues`` (unchanged above them all)."""
        if self.minimum is not None:
            if requested < self.minimum:
                return self.minimum
            if self.step is None or self.step <= 0:
                return requested
            steps, rest = divmod(requested - self.minimum, self.step)  # both >= 0: divmod floors
            return self.minimum + (steps + (1 if rest else 0)) * self.step
        for value in self.valid_values:
            if requested <= value:
                return value
        return requested

    def allows(self, amount: Decimal) -> bool:
        """Whether consuming ``amount`` keeps the policy: the ``default``, or within ``max`` and on a step of
        ``validRange``, or one of ``validValues``."""
        if self.default is not None and amount == self.default:
            return True
        if self.minimum is not None:
            if self.maximum is not None and amount > self.maximum:
                return False
            return self.step is None or self.step <= 0 or (amount - self.minimum) % self.step == 0
        if self.valid_values:
            return amount in self.valid_values
        return True


@dataclass(frozen=True, slots=True)
class Capacity:
    """One capacity of a device: ``name`` as published (the key ``consumedCapacity`` uses), ``qualified``
    (with the driver's domain when the name has none), ``value``, and its ``policy`` (None: no requestPolicy)."""

    name: str
    qualified: str
    value: Decimal
    policy: CapacityPolicy | None = None


def consumed(requested: Decimal | None, capacity: Capacity) -> Decimal | None:
    """What one allocation consumes of ``capacity`` when the request asks for ``requested`` of it (None: the
    request does not name it), or None when the policy refuses the amount."""
    policy = capacity.policy
    if requested is None:
        amount = policy.default if policy is not None and policy.default is not None else capacity.value
    elif policy is None:
        return requested
    else:
        amount = policy.round_up(requested)
    if policy is not None and not policy.allows(amount):
        return None
    return amount


def qualify(driver: str, name: str) -> str:
    """A capacity name with its domain: a short name belongs to the driver's domain."""
    return name if "/" in name else f"{driver}/{name}"


def consumption(requests: Amounts, driver: str, capacities: Sequence[Capacity]) -> Amounts | None:
    """What one allocation of a device with ``capacities`` consumes for a request of ``requests`` ((name,
    amount) pairs, a name short or qualified), or None when the device cannot serve it: a requested capacity
    it lacks, an amount its policy refuses, or more than a capacity's whole value (raises nothing)."""
    wanted: dict[str, Decimal] = {}
    for name, amount in requests:
        key = qualify(driver, name)
        if key in wanted or not any(c.qualified == key for c in capacities):
            return None  # a capacity the device lacks (or named twice): this device cannot serve it
        wanted[key] = amount
    out = []
    for capacity in capacities:
        used = consumed(wanted.get(capacity.qualified), capacity)
        if used is None or used < 0 or used > capacity.value:
            return None
        out.append((capacity.name, used))
    return tuple(out)
