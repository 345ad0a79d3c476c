"""pydantic's validation errors in the API server's words."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError, field_validator

from scheduler.field_errors import plain_message


class Gang(BaseModel):
    min_count: int


class Policy(BaseModel):
    gang: Gang
    name: str

    @field_validator("name")
    @classmethod
    def _named(cls, value: str) -> str:
        if not value:
            raise ValueError("must not be empty")
        return value


@pytest.mark.parametrize(("data", "expected"), [
    ({"name": "x"}, ["Required value"]),
    ({"gang": "minCount 4", "name": "x"}, ["must be an object"]),
    ({"gang": {"min_count": "four"}, "name": "x"}, ["must be a valid integer, unable to parse string as an integer"]),
    ({"gang": {"min_count": 1}, "name": ""}, ["must not be empty"]),
], ids=["missing", "not-an-object", "not-an-integer", "validator-message"])
def test_pydantic_errors_read_as_the_api_server_would_say_them(data: dict[str, Any], expected: list[str]) -> None:
    with pytest.raises(ValidationError) as caught:
        Policy.model_validate(data)
    assert [plain_message(e) for e in caught.value.errors(include_url=False)] == expected
