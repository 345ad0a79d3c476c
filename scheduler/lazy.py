"""Modules loaded on first use: :func:`lazy_module`.

A module whose import is costly and which only some runs need (the CEL library behind DRA device selectors
pulls in a command-line toolkit of its own when imported) is bound as a lazy module: nothing of it runs
until an attribute of it is read, so a run that never reads one never pays for it.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    """The module ``name`` (dotted, absolute), executed when one of its attributes is first read.

    An already imported module is returned as it is. Otherwise the module is found now (so a missing one
    raises :class:`ModuleNotFoundError` at once) and registered in ``sys.modules``, and its code runs on the
    first attribute access, by the standard library's :class:`importlib.util.LazyLoader` (the recipe of the
    ``importlib`` documentation, "Implementing lazy imports"). An error raised by the module's code is raised
    at that access.
    """
    if (module := sys.modules.get(name)) is not None:
        return module
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
