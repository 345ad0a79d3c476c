"""Layering (style guide §5): the solver and the group trees stay pure.

``scheduler.solver``, ``scheduler.groups`` and ``scheduler.model`` may not import a Kubernetes
client, kopf, prometheus-client, or the stateful layers (cache, binder, simulate, cli).
Checked on the source with ``ast``, so an import inside a function counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import scheduler

PURE = ("solver", "groups", "model")
FORBIDDEN = ("kubernetes_asyncio", "kopf", "prometheus_client", "scheduler.cache.cluster", "scheduler.live.binder",
             "scheduler.offline.simulate", "scheduler.cli", "scheduler.offline.report", "scheduler.offline.loader")
ROOT = Path(scheduler.__file__).parent


def imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("package", PURE)
def test_pure_packages_import_no_client_and_no_stateful_layer(package: str) -> None:
    files = sorted((ROOT / package).rglob("*.py"))
    assert files
    bad = {f"{f.relative_to(ROOT)}: {name}" for f in files for name in imports(f)
           if any(name == x or name.startswith(x + ".") for x in FORBIDDEN)}
    assert bad == set()


def test_checker_sees_a_forbidden_import(tmp_path: Path) -> None:
    sample = tmp_path / "x.py"
    sample.write_text("def f():\n    from kubernetes_asyncio import client\n")
    assert "kubernetes_asyncio" in imports(sample)
