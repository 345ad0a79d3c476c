"""Consumable capacity (KEP-5075): how a request policy rounds and checks what one allocation consumes.

Cases follow the API reference's rules for ``CapacityRequestPolicy`` / ``CapacityRequestPolicyRange`` and the
structured allocator's ``calculateConsumedCapacity`` / ``violatesPolicy`` (``consumable_capacity.go``, v1.37);
the range ``default 2, min 2, step 2, max 4`` is the one Kubernetes' allocator tests use.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from scheduler.dra.capacity import Capacity, CapacityPolicy, consumed, consumption

D = Decimal
DRIVER = "nic.example.com"
RANGE = CapacityPolicy(default=D(2), minimum=D(2), maximum=D(4), step=D(2))
VALUES = CapacityPolicy(default=D(1), valid_values=(D(1), D(5), D(10)))


def cap(value: str, policy: CapacityPolicy | None = None, name: str = "bandwidth") -> Capacity:
    return Capacity(name, name if "/" in name else f"{DRIVER}/{name}", D(value), policy)


@pytest.mark.parametrize(("requested", "policy", "expected"), [
    (None, None, D(10)),  # not requested, no policy: the whole capacity
    (D(3), None, D(3)),  # no policy: exactly what is asked
    (D(0), None, D(0)),
    (None, RANGE, D(2)),  # not requested: the policy's default
    (D(1), RANGE, D(2)),  # below min: raised to min
    (D(2), RANGE, D(2)),
    (D(3), RANGE, D(4)),  # up to the next step from min
    (D("2.5"), RANGE, D(4)),
    (D(4), RANGE, D(4)),
    (D(5), RANGE, None),  # rounds to 6, above max: the device cannot serve it
    (D(3), CapacityPolicy(default=D(1), minimum=D(1)), D(3)),  # no step: as asked
    (D("0.6"), CapacityPolicy(default=D("0.5"), minimum=D("0.5"), step=D("0.25")), D("0.75")),  # exact steps
    (None, VALUES, D(1)),
    (D(3), VALUES, D(5)),  # the smallest valid value not below the request
    (D(5), VALUES, D(5)),
    (D(10), VALUES, D(10)),
    (D(11), VALUES, None),  # above every valid value
])
def test_a_request_is_rounded_up_and_checked_by_the_policy(requested: Decimal | None, policy: CapacityPolicy | None,
                                                           expected: Decimal | None) -> None:
    assert consumed(requested, cap("10", policy)) == expected


def test_every_capacity_of_the_device_is_consumed_named_as_the_device_publishes_it() -> None:
    capacities = (cap("10", RANGE), cap("40", None, name=f"{DRIVER}/memory"), cap("8", VALUES, name="queues"))
    assert consumption((("bandwidth", D(3)),), DRIVER, capacities) == (
        ("bandwidth", D(4)), (f"{DRIVER}/memory", D("40")), ("queues", D(1)))
    # a short request name is the driver's domain, in either direction
    assert consumption(((f"{DRIVER}/bandwidth", D(1)), ("memory", D(7))), DRIVER, capacities) == (
        ("bandwidth", D(2)), (f"{DRIVER}/memory", D(7)), ("queues", D(1)))


@pytest.mark.parametrize("requests", [
    (("lanes", D(1)),),  # a capacity the device lacks
    (("other.example.com/bandwidth", D(1)),),  # another domain: only that exact name would match
    (("bandwidth", D(1)), (f"{DRIVER}/bandwidth", D(1))),  # one capacity named twice
    (("memory", D(11)),),  # more than the device has at all
    (("bandwidth", D(5)),),  # refused by its policy
])
def test_a_device_that_cannot_serve_the_request_is_refused(requests: tuple[tuple[str, Decimal], ...]) -> None:
    capacities = (cap("10", RANGE), cap("10", None, name="memory"))
    assert consumption(requests, DRIVER, capacities) is None


def test_a_device_without_capacity_serves_any_request_that_names_none() -> None:
    assert consumption((), DRIVER, ()) == ()
    assert consumption((("bandwidth", D(1)),), DRIVER, ()) is None
