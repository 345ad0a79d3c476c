"""``field_path`` and ``describe``: how a model's validation error becomes one line naming the field."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from pydantic import ValidationError

from scheduler.model import Pod
from scheduler.model.base import describe, field_path, from_wire
from scheduler.model.quantity import QuantityError


@pytest.mark.parametrize(
    ("loc", "path"),
    [
        pytest.param(("spec", "containers", 0, "resources", "requests", "cpu"),
                     "spec.containers[0].resources.requests.cpu", id="list-index-in-brackets"),
        pytest.param(("spec", "tolerations", 2), "spec.tolerations[2]", id="index-at-the-end"),
        pytest.param(("items", 0, 1), "items[0][1]", id="nested-indices"),
        pytest.param(("value",), "value", id="one-name"),
        pytest.param((), "", id="no-location"),
    ],
)
def test_field_path_is_written_like_apimachinery_field_path(loc: tuple[int | str, ...], path: str) -> None:
    assert field_path(loc) == path


def errors_of(raw: dict[str, Any]) -> ValidationError:
    with pytest.raises(ValidationError) as err:
        Pod.model_validate(raw)
    return err.value


def test_describe_joins_the_first_three_errors_and_counts_the_rest() -> None:
    negative = {"requests": {"a.com/x": "-1", "b.com/x": "-1", "c.com/x": "-1", "d.com/x": "-1"}}
    exc = errors_of({"spec": {"containers": [{"name": "c", "resources": negative}]}})
    where = "spec.containers[0].resources.requests"
    assert describe(exc) == "; ".join([
        f'{where}.a.com/x: must be greater than or equal to 0 (got "-1")',
        f'{where}.b.com/x: must be greater than or equal to 0 (got "-1")',
        f'{where}.c.com/x: must be greater than or equal to 0 (got "-1")',
        "and 1 more",
    ])


def test_describe_truncates_a_long_value() -> None:
    exc = errors_of({"spec": {"priority": "9" * 100}})
    assert describe(exc) == f'spec.priority: must be a valid integer (got "{"9" * 59}…)'


def test_describe_leaves_out_a_value_that_is_an_object() -> None:
    exc = errors_of({"spec": {"containers": [{"name": "c", "resources": {"requests": []}}]}})
    assert describe(exc) == "spec.containers[0].resources.requests: must be an object"


def test_describe_of_another_error_is_its_first_line() -> None:
    assert describe(QuantityError("invalid quantity 'x': no\nmore")) == "invalid quantity 'x': no"


@pytest.mark.parametrize("as_bytes", [False, True])
def test_from_wire_reads_the_api_names_only(as_bytes: bool) -> None:
    raw = {"metadata": {"name": "p", "namespace": "ml"},
           "spec": {"node_name": "n0", "schedulerName": "gang-scheduler", "containers": [{"name": "c"}]}}
    pod = from_wire(Pod, json.dumps(raw).encode() if as_bytes else raw)
    assert (pod.spec.node_name, pod.spec.scheduler_name) == ("", "gang-scheduler")


def test_the_declared_pydantic_is_one_whose_validation_takes_by_name() -> None:
    """``from_wire`` passes ``by_alias``/``by_name`` to ``model_validate``, which pydantic takes from 2.11 on (a
    TypeError before): the requirement must not admit an older one."""
    pyproject = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())
    pydantic = next(Requirement(r) for r in pyproject["project"]["dependencies"] if Requirement(r).name == "pydantic")
    assert not pydantic.specifier.contains("2.10.6") and pydantic.specifier.contains("2.11.0")
