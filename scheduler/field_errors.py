"""A pydantic validation error in the API server's words: what ``simulate`` and ``run`` say of an object, and the
command line of a setting, that cannot be taken.

pydantic says ``Input should be a valid integer``, ``Field required``, ``Value error, invalid quantity …``; the API
server (apimachinery's ``field.Error``) says ``Required value``, ``must be …``, and a validator's own words. Pure:
one error's details in, one phrase out.
"""

from __future__ import annotations

from pydantic_core import ErrorDetails

OBJECT_TYPES = frozenset({"dict_type", "model_type", "model_attributes_type"})
"""pydantic's error types for a value that is not a JSON object where one is expected."""


def plain_message(error: ErrorDetails) -> str:
    """``error`` (one entry of ``ValidationError.errors()``) as the API server would word it: ``Required value`` for a
    field missing (``field.Required``), ``must be an object`` where an object is expected, ``must be a valid integer``
    for pydantic's ``Input should be a valid integer`` (``must have timezone info`` for ``Input should have …``), a
    validator's own message without pydantic's ``Value error, ``
    before it; any other message as pydantic gives it."""
    kind, message = error["type"], error["msg"]
    if kind == "missing":
        return "Required value"
    if kind in OBJECT_TYPES:
        return "must be an object"
    for prefix in ("Value error, ", "Assertion failed, "):
        if message.startswith(prefix):
            return message.removeprefix(prefix)
    if message.startswith("Input should "):
        return "must " + message.removeprefix("Input should ")
    return message
