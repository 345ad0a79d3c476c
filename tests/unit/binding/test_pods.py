"""DefaultBinder's reading of a refused bind (``scheduler.binding.pods``): a 409 is success only when the pod of that
name is this pod (its uid) and is on the plan's node."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.binding.pods import _bind
from scheduler.errors import Conflict
from scheduler.model import Pod


class Refusing:
    """The part of an ApiWriter a bind uses: every bind is a 409; ``get`` shows the pod now named so."""

    def __init__(self, current: dict[str, Any]) -> None:
        self.current = current

    async def bind(self, pod: Pod, node: str, annotations: Any = None, check: Any = None) -> None:
        raise Conflict(409, "Conflict", "Operation cannot be fulfilled: Precondition failed: UID in precondition")

    async def get(self, kind: Any, namespace: str, name: str) -> dict[str, Any]:
        return self.current


POD = Pod.model_validate({"metadata": {"name": "w-0", "namespace": "ml", "uid": "uid-1"},
                          "spec": {"containers": [{"name": "c"}]}})


@pytest.mark.parametrize(("uid", "node", "bound"), [
    pytest.param("uid-1", "n1", True, id="our-pod-on-our-node-an-earlier-attempt-landed"),
    pytest.param("uid-2", "n1", False, id="a-namesake-on-our-node-is-another-pod"),
    pytest.param("uid-1", "n2", False, id="our-pod-on-another-node"),
])
async def test_a_409_is_success_only_for_this_pod_on_this_node(uid: str, node: str, bound: bool) -> None:
    writer = Refusing({"metadata": {"name": "w-0", "namespace": "ml", "uid": uid}, "spec": {"nodeName": node}})
    if bound:
        await _bind(POD, "n1", writer, None)  # type: ignore[arg-type]
    else:
        with pytest.raises(Conflict):
            await _bind(POD, "n1", writer, None)  # type: ignore[arg-type]
