"""Run a Python script under cProfile timed in the process's CPU time, and report the cyclic collector's CPU.

``python -m tests.bench.cpu_profile OUT SCRIPT [ARGS...]`` runs ``SCRIPT`` as ``__main__`` (``bench_e2e --profile
cprofile`` runs ``gang-scheduler run`` so) and writes its profile to ``OUT`` (``pstats``) when it ends, by exit or
exception. ``python -m cProfile`` times functions by the wall clock, which on a loaded machine charges a function
with the time its process waited for a core; ``time.process_time`` charges only the CPU the process used.

``PYTHONPATH`` comes first on the script's import path: ``python -m`` puts the working directory before it, which would
import the working directory's ``scheduler`` package rather than the one ``bench_e2e --against DIR`` points at.

At exit one line goes to standard error: the collections of each generation and their CPU seconds (``gc.callbacks``),
which no profiler attributes to a function.
"""

from __future__ import annotations

import cProfile
import gc
import os
import runpy
import sys
import time
from typing import Any


class CollectorClock:
    """Counts collections per generation and their CPU seconds, from ``gc.callbacks``."""

    def __init__(self) -> None:
        self.count = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.process_time()
        else:
            self.count[info["generation"]] += 1
            self.seconds[info["generation"]] += time.process_time() - self._start

    def line(self) -> str:
        return "collector: " + ", ".join(f"gen{g} {n} collections {s:.3f} s CPU"
                                         for g, (n, s) in enumerate(zip(self.count, self.seconds, strict=True)))


def main() -> None:
    out, script, *args = sys.argv[1:]
    sys.argv = [script, *args]
    sys.path[:0] = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    clock = CollectorClock()
    gc.callbacks.append(clock)
    profile = cProfile.Profile(time.process_time)
    try:
        profile.runcall(runpy.run_path, script, run_name="__main__")
    finally:
        profile.dump_stats(out)
        print(clock.line(), file=sys.stderr)


if __name__ == "__main__":
    main()
