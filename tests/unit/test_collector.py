"""The collector's steady-state thresholds (:func:`scheduler.collector.collect_less_often`): bursts of short-lived
containers, as a pod's requests and cycle make, start no collection; cyclic garbage still does."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from scheduler.collector import STEADY_THRESHOLDS, collect_less_often


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of each collection started while the test runs; the thresholds restored after it."""
    started: list[int] = []

    def seen(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started.append(info["generation"])

    thresholds = gc.get_threshold()
    gc.collect()
    gc.callbacks.append(seen)
    try:
        yield started
    finally:
        gc.callbacks.remove(seen)
        gc.set_threshold(*thresholds)


def bursts(count: int, size: int) -> None:
    """``count`` bursts of ``size`` containers each, all dropped by reference counting."""
    for _ in range(count):
        burst = [[i] for i in range(size)]
        del burst


def test_bursts_of_short_lived_containers_start_collections_at_the_defaults_and_none_at_the_steady_thresholds(
        collections: list[int]) -> None:
    gc.set_threshold(700, 10, 10)
    bursts(50, 5_000)
    assert len(collections) >= 50
    collections.clear()
    collect_less_often()
    assert gc.get_threshold() == STEADY_THRESHOLDS
    bursts(50, 5_000)
    assert collections == []


def test_cyclic_garbage_still_starts_a_young_collection_at_the_steady_thresholds(collections: list[int]) -> None:
    collect_less_often()
    for _ in range(STEADY_THRESHOLDS[0]):
        cycle: list[Any] = []
        cycle.append(cycle)
    assert collections and collections[0] == 0
