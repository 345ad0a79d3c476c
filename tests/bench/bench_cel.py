"""CEL selector benchmark: the two maintained Python CEL libraries on DRA device selectors.

Run with ``.venv/bin/python -m tests.bench.bench_cel [--devices N] [--repeat R] [--celpy-repeat R]``.
Not collected by pytest (the file is not named ``test_*.py``). Results: ``docs/benchmarks.md``,
section "CEL selectors".

* **rust** — ``common-expression-language`` (import ``cel``), through ``scheduler.dra.cel``: the
  selector as the scheduler runs it (quantity/semver callbacks, domain rewrite), plus the bare
  ``Program.execute`` on the same context, to show what our wrapper adds.
* **celpy** — ``cel-python`` (import ``celpy``), ``InterpretedRunner``, with the same environment
  built here: Quantity and semver as Python classes, ``compareTo``/``isGreaterThan``/``isLessThan``/
  ``quantity``/``semver`` as functions, and a domain map that returns ``{}`` for an unknown domain.
  Its ``CompiledRunner`` is not measured: it transpiles custom functions to
  ``<module>.<qualname>`` names that it cannot resolve (``SyntaxError`` for our lambdas,
  ``NameError`` otherwise), and it publishes ``base_activation`` in module globals.

Devices: every device of ``tests/data/resourceslices`` (56: H100, A100, MIG, vGPU, example
driver, dranet NICs, compute-domain and interconnect channels), repeated to ``--devices``; each
copy is its own ``DeviceView``, so converting it for CEL is paid per device, as in an inventory.
Timed separately: compile (per expression, uncached), conversion (per device, once), and
evaluation (per (expression, device) pair, every pair ``--repeat`` times). Both libraries must
give the same match / no match / error for every pair; differences are printed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import os
import platform
import statistics
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import cel

from scheduler.dra import cel as dra_cel
from scheduler.dra.cel import DeviceView, SelectorError, Version
from scheduler.model.quantity import parse as parse_quantity
from tests.unit.dra.example_devices import example_devices

SELECTORS: dict[str, str] = {
    "class gpu.nvidia.com": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
    "productName H100": (
        "device.driver == 'gpu.nvidia.com' && "
        "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'"
    ),
    "memory compareTo 40Gi": (
        "device.driver == 'gpu.nvidia.com' && "
        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"
    ),
    "memory isGreaterThan 80G": (
        "'memory' in device.capacity['gpu.nvidia.com'] && "
        "device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('80G'))"
    ),
    "driver == gpu.example.com": "device.driver == 'gpu.example.com'",
    "pcieRoot in / ==": (
        "'pcieRoot' in device.attributes['resource.kubernetes.io'] && "
        "device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0000:10'"
    ),
    "semver driverVersion": (
        "device.driver == 'gpu.nvidia.com' && 'driverVersion' in device.attributes['gpu.nvidia.com'] && "
        "device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('580.110.0'))"
    ),
    "class efa (dranet)": (
        'device.driver == "dra.net" && device.attributes["dra.net"].pciDevice == \'Elastic Fabric Adapter (EFA)\''
    ),
    "class mig 1g.5gb": (
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig' && "
        "device.attributes['gpu.nvidia.com'].profile == '1g.5gb'"
    ),
    "int index < 4": "device.driver == 'gpu.example.com' && device.attributes['gpu.example.com'].index < 4",
    "bool rdma": "device.driver == 'dra.net' && device.attributes['dra.net'].rdma",
    "class interconnect": (
        "device.driver == 'interconnect.example.com' && "
        "device.attributes['interconnect.example.com'].type == 'channel'"
    ),
}
"""Label → expression: the example DeviceClasses and request selectors in the style of the issue."""

Outcome = bool | str  # True / False, or "error"


# --- cel-python with the DRA environment -------------------------------------------------------


def celpy_backend() -> tuple[Callable[[str], Any], Callable[[DeviceView], Any], Callable[[Any, Any], Outcome]] | None:
    """(compile, convert, evaluate) for cel-python, or None when it is not installed."""
    try:
        import celpy
        from celpy import celtypes
    except ImportError:
        return None

    class Quantity:
        __slots__ = ("value",)

        def __init__(self, value: Decimal) -> None:
            self.value = value

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Quantity) and self.value == other.value

        def __hash__(self) -> int:
            return hash(self.value)

    class Semver:
        __slots__ = ("version",)

        def __init__(self, version: Version) -> None:
            self.version = version

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Semver) and self.version == other.version

        def __hash__(self) -> int:
            return hash(self.version)

    class DomainMap(celtypes.MapType):  # type: ignore[misc]
        """Kubernetes' ``newStringInterfaceMapWithDefault``: an unknown domain is an empty map."""

        def __getitem__(self, key: Any) -> Any:
            try:
                return super().__getitem__(key)
            except KeyError:
                return celtypes.MapType()

    def compare(a: Any, b: Any) -> int:
        if isinstance(a, Quantity) and isinstance(b, Quantity):
            return (a.value > b.value) - (a.value < b.value)
        if isinstance(a, Semver) and isinstance(b, Semver):
            return a.version.compare(b.version)
        raise TypeError(f"no such overload: {type(a).__name__}.compareTo({type(b).__name__})")

    functions = {
        "quantity": lambda text: Quantity(parse_quantity(str(text))),
        "semver": lambda text: Semver(Version.parse(str(text))),
        "compareTo": lambda a, b: celtypes.IntType(compare(a, b)),
        "isGreaterThan": lambda a, b: celtypes.BoolType(compare(a, b) == 1),
        "isLessThan": lambda a, b: celtypes.BoolType(compare(a, b) == -1),
    }
    env = celpy.Environment()

    def compile_(expression: str) -> Any:
        return env.program(env.compile(expression), functions=functions)

    def value(v: Any) -> Any:
        if isinstance(v, bool):
            return celtypes.BoolType(v)
        if isinstance(v, int):
            return celtypes.IntType(v)
        if isinstance(v, str):
            return celtypes.StringType(v)
        return Semver(v)

    def convert(view: DeviceView) -> Any:
        def domains(by_domain: dict[str, dict[str, Any]], leaf: Callable[[Any], Any]) -> Any:
            return DomainMap({
                celtypes.StringType(d): celtypes.MapType({celtypes.StringType(n): leaf(v) for n, v in names.items()})
                for d, names in by_domain.items()
            })

        return celtypes.MapType({
            celtypes.StringType("driver"): celtypes.StringType(view.driver),
            celtypes.StringType("attributes"): domains(view.attributes, value),
            celtypes.StringType("capacity"): domains(view.capacity, Quantity),
            celtypes.StringType("allowMultipleAllocations"): celtypes.BoolType(view.allow_multiple_allocations),
        })

    def evaluate(program: Any, device: Any) -> Outcome:
        try:
            result = program.evaluate({"device": device})
        except celpy.CELEvalError:
            return "error"
        return bool(result) if isinstance(result, celtypes.BoolType) else "error"

    return compile_, convert, evaluate


# --- the scheduler's path (common-expression-language) -----------------------------------------


def rust_evaluate(selector: dra_cel.Selector, view: DeviceView) -> Outcome:
    try:
        return selector.matches(view)
    except SelectorError:
        return "error"


# --- what each library supports by itself -----------------------------------------------------


def capabilities() -> list[tuple[str, str, str]]:
    """(feature, rust, celpy): small probes on the bare libraries, without our workarounds."""
    try:
        import celpy
        from celpy import celtypes
    except ImportError:
        celpy = None

    def rust(expression: str, variables: dict[str, Any], functions: dict[str, Any] | None = None) -> str:
        try:
            return repr(cel.compile(expression).execute(cel.Context(variables=variables, functions=functions)))
        except Exception as exc:  # a probe: any failure is the answer
            return type(exc).__name__

    def py(expression: str, variables: dict[str, Any], functions: dict[str, Any] | None = None) -> str:
        if celpy is None:
            return "not installed"
        try:
            env = celpy.Environment()
            program = env.program(env.compile(expression), functions=functions)
            return repr(program.evaluate({k: celpy.json_to_cel(v) if isinstance(v, dict | int | str) else v
                                          for k, v in variables.items()}))
        except Exception as exc:  # a probe: any failure is the answer
            return type(exc).__name__

    compare = {"compareTo": lambda a, b: (int(a) > int(b)) - (int(a) < int(b))}
    celpy_compare = {"compareTo": lambda a, b: celtypes.IntType((a > b) - (a < b))} if celpy else {}
    attrs = {"d": {"gpu.nvidia.com": {"type": "gpu", "index": 3}}}
    opaque = {"q": Version(1, 2, 3)}  # any class of ours (a Decimal would become a lossy double)
    probes = [
        ("receiver-style custom function `a.compareTo(b)`", "a.compareTo(b) == -1", {"a": 1, "b": 2},
         compare, celpy_compare),
        ("custom value type (a Python object as a value)", "q == q", opaque, None, None),
        ("map of maps `d['gpu.nvidia.com'].type`", "d['gpu.nvidia.com'].type == 'gpu'", attrs, None, None),
        ("missing key is an error", "d['gpu.nvidia.com'].nope == 'x'", attrs, None, None),
        ("`'k' in d[domain]`", "'nope' in d['gpu.nvidia.com']", attrs, None, None),
        ("unknown domain gives `{}` (needs a default map)", "'k' in d['other.io']", attrs, None, None),
        ("heterogeneous numbers `index == 3.0`", "d['gpu.nvidia.com'].index == 3.0", attrs, None, None),
        ("cross-type `==` on attributes is false", "d['gpu.nvidia.com'].type == 1", attrs, None, None),
        ("`cel.bind(g, d['gpu.nvidia.com'], g.index == 3)`", "cel.bind(g, d['gpu.nvidia.com'], g.index == 3)",
         attrs, None, None),
    ]
    return [(name, rust(e, v, rf), py(e, v, pf)) for name, e, v, rf, pf in probes]


# --- measurement -------------------------------------------------------------------------------


def per_call_us(fn: Callable[[], object], calls: int, rounds: int = 5) -> float:
    """Mean CPU µs per call (process time: user + system) over ``calls`` calls, best of ``rounds`` rounds
    (the VM is shared, so wall time would count other processes)."""
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(calls):
            fn()
        best = min(best, time.process_time() - start)
    return best / calls * 1e6


def devices(n: int) -> list[DeviceView]:
    """``n`` DeviceViews cycling through the example devices (fresh objects, nothing converted)."""
    base = list(example_devices().values())
    return [DeviceView(b.driver, b.attributes, b.capacity, b.allow_multiple_allocations)
            for b in (base[i % len(base)] for i in range(n))]


def evaluate_all(
    programs: dict[str, Any], views: list[Any], evaluate: Callable[[Any, Any], Outcome], repeat: int
) -> tuple[dict[str, float], dict[str, list[Outcome]]]:
    """µs per (expression, device) for each expression (best of ``repeat`` passes) and the outcomes."""
    us: dict[str, float] = {}
    outcomes: dict[str, list[Outcome]] = {}
    for label, program in programs.items():
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            result = [evaluate(program, v) for v in views]
            best = min(best, time.perf_counter() - start)
        us[label] = best / len(views) * 1e6
        outcomes[label] = result
    return us, outcomes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--devices", type=int, default=1000, help="devices per pass (default 1000)")
    parser.add_argument("--repeat", type=int, default=5, help="passes for the Rust library; best is kept")
    parser.add_argument("--celpy-repeat", type=int, default=1, help="passes for cel-python (slow)")
    parser.add_argument("--compiles", type=int, default=50, help="uncached compiles per expression")
    args = parser.parse_args(argv)

    print(f"CEL selector benchmark, {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC")
    print(f"{platform.platform()}; nproc {os.cpu_count()}; Python {platform.python_version()}")
    from importlib.metadata import PackageNotFoundError, version

    for dist in ("common-expression-language", "cel-python"):
        try:
            print(f"  {dist} {version(dist)}")
        except PackageNotFoundError:
            print(f"  {dist}: not installed")
    print(f"{len(SELECTORS)} selectors x {args.devices} devices; compile x{args.compiles}; "
          f"eval best of {args.repeat} (rust) / {args.celpy_repeat} (celpy) passes\n")

    print("Bare libraries (no scheduler.dra.cel workarounds):")
    for feature, rust_answer, celpy_answer in capabilities():
        print(f"  {feature:52} rust: {rust_answer:22} celpy: {celpy_answer}")
    print()

    uncached_compile = dra_cel._compile.__wrapped__
    rust_compile = {label: per_call_us(lambda e=e: uncached_compile(e), args.compiles)
                    for label, e in SELECTORS.items()}
    bare_compile = {label: per_call_us(lambda e=e: cel.compile(e), args.compiles) for label, e in SELECTORS.items()}
    selectors = {label: dra_cel.compile_selector(e) for label, e in SELECTORS.items()}

    views = devices(args.devices)
    gc.collect()
    start = time.perf_counter()
    contexts = [v._cel_context for v in views]
    rust_convert_us = (time.perf_counter() - start) / len(views) * 1e6
    rust_us, rust_out = evaluate_all(selectors, views, rust_evaluate, args.repeat)
    bare_us, _ = evaluate_all({k: s._program for k, s in selectors.items()}, contexts,
                              lambda p, c: p.execute(c), args.repeat)

    backend = celpy_backend()
    celpy_compile: dict[str, float] = {}
    celpy_us: dict[str, float] = {}
    celpy_out: dict[str, list[Outcome]] = {}
    celpy_convert_us = float("nan")
    if backend is not None:
        compile_, convert, evaluate = backend
        celpy_compile = {label: per_call_us(lambda e=e: compile_(e), max(1, args.compiles // 5), rounds=2)
                         for label, e in SELECTORS.items()}
        programs = {label: compile_(e) for label, e in SELECTORS.items()}
        gc.collect()
        start = time.perf_counter()
        converted = [convert(v) for v in views]
        celpy_convert_us = (time.perf_counter() - start) / len(views) * 1e6
        celpy_us, celpy_out = evaluate_all(programs, converted, evaluate, args.celpy_repeat)

    header = ("selector", "matches", "errors", "rust compile us", "bare compile us", "celpy compile us",
              "rust eval us", "bare eval us", "celpy eval us")
    rows = []
    for label in SELECTORS:
        out = rust_out[label]
        rows.append((label, str(out.count(True)), str(out.count("error")), f"{rust_compile[label]:.0f}",
                     f"{bare_compile[label]:.0f}", f"{celpy_compile.get(label, float('nan')):.0f}",
                     f"{rust_us[label]:.2f}", f"{bare_us[label]:.2f}", f"{celpy_us.get(label, float('nan')):.1f}"))
    rows.append(("mean", "", "", f"{statistics.mean(rust_compile.values()):.0f}",
                 f"{statistics.mean(bare_compile.values()):.0f}",
                 f"{statistics.mean(celpy_compile.values()) if celpy_compile else float('nan'):.0f}",
                 f"{statistics.mean(rust_us.values()):.2f}", f"{statistics.mean(bare_us.values()):.2f}",
                 f"{statistics.mean(celpy_us.values()) if celpy_us else float('nan'):.1f}"))
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |")

    pairs = len(SELECTORS) * len(views)
    print(f"\nconversion per device (once): rust {rust_convert_us:.1f} us, celpy {celpy_convert_us:.1f} us")
    print(f"all {pairs:,} pairs: rust {statistics.mean(rust_us.values()) * pairs / 1e6:.3f} s, "
          f"celpy {statistics.mean(celpy_us.values()) * pairs / 1e6 if celpy_us else float('nan'):.3f} s")
    if celpy_out:
        diffs = [(label, i, rust_out[label][i], celpy_out[label][i])
                 for label in SELECTORS for i in range(len(views)) if rust_out[label][i] != celpy_out[label][i]]
        print(f"outcome differences rust vs celpy: {len(diffs)} of {pairs:,} pairs")
        for label, i, a, b in diffs[:10]:
            print(f"  {label} / device #{i} ({views[i].driver}): rust {a}, celpy {b}")


if __name__ == "__main__":
    main()
