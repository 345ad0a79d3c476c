"""``namespace_list``: the ``namespaces`` setting from a variable, from flags, or from the chart's JSON."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_core import PydanticCustomError

from scheduler.config import namespace_list


@pytest.mark.parametrize(
    ("value", "names"),
    [
        pytest.param("ml", ["ml"], id="one-name"),
        pytest.param("ml,research", ["ml", "research"], id="comma-separated"),
        pytest.param(" ml , research ,", ["ml", "research"], id="spaces-and-a-trailing-comma"),
        pytest.param("", [], id="empty-means-all"),
        pytest.param(' ["ml", "research"] ', ["ml", "research"], id="json-list-as-the-chart-renders-it"),
        pytest.param("[]", [], id="empty-json-list"),
        pytest.param(["ml", "research,infra"], ["ml", "research", "infra"], id="several-flags-each-split"),
        pytest.param(("ml", "ml,research"), ["ml", "research"], id="repeats-kept-once-in-order"),
        pytest.param(["a" * 63], ["a" * 63], id="63-characters"),
    ],
)
def test_namespace_list(value: Any, names: list[str]) -> None:
    assert namespace_list(value) == names


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param("ml,Research", "'Research' is not a namespace name", id="uppercase"),
        pytest.param("ml research", "'ml research' is not a namespace name", id="space-separated"),
        pytest.param("-ml", "'-ml' is not a namespace name", id="leading-dash"),
        pytest.param("a" * 64, f"'{'a' * 64}' is not a namespace name", id="64-characters"),
        pytest.param('["ml"', "not a JSON list: ", id="broken-json"),
        pytest.param('{"ml": 1}', """'{"ml": 1}' is not a namespace name""", id="json-object-is-not-a-name"),
        pytest.param("[1, 2]", "a JSON value must be a list of strings", id="json-list-of-numbers"),
        pytest.param(7, "must be namespace names separated by commas", id="not-text"),
    ],
)
def test_bad_namespaces_are_refused_naming_the_entry(value: Any, message: str) -> None:
    with pytest.raises(PydanticCustomError) as err:
        namespace_list(value)
    assert err.value.message().startswith(message)
