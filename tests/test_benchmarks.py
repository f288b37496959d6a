"""Every asv benchmark in benchmarks/ imports and runs once, on tiny sizes.

A benchmark class may set ``tiny_params`` (same layout as ``params``); without it
each parameter keeps its first value. ``setup_cache``, ``setup`` and ``teardown``
run as asv runs them; a ``setup`` raising ``NotImplementedError`` skips that
parameter combination, as in asv. ``timeraw_`` benchmarks run their code in a
fresh interpreter. Modules that need an optional third-party package which is not
installed (JAX, torch, ...) are skipped; any other import error fails.
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import math
import numbers
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH_DIR = ROOT / "benchmarks"
PREFIXES = ("time_", "timeraw_", "track_", "mem_", "peakmem_")

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _module_names() -> list[str]:
    if not (BENCH_DIR / "__init__.py").exists():
        return []
    return sorted(p.stem for p in BENCH_DIR.glob("*.py") if p.stem != "__init__")


def _import(name: str):
    try:
        return importlib.import_module(f"benchmarks.{name}")
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top in ("newtonad", "benchmarks", ""):
            raise
        pytest.skip(f"benchmarks/{name}.py needs {top}, which is not installed")


def _is_benchmark(name: str) -> bool:
    return name.startswith(PREFIXES)


def _targets(module) -> list[tuple[object, str]]:
    """(owner, method name) for every benchmark: classes' methods and module functions."""
    found = []
    for attr, obj in vars(module).items():
        if attr.startswith("_"):
            continue
        if inspect.isclass(obj) and obj.__module__ == module.__name__:
            found += [(obj, m) for m in sorted(dir(obj)) if _is_benchmark(m)]
        elif inspect.isfunction(obj) and _is_benchmark(attr):
            found.append((module, attr))
    return found


def _param_lists(owner) -> list[list]:
    params = getattr(owner, "tiny_params", None)
    if params is None:
        full = getattr(owner, "params", [])
        if full and not isinstance(full[0], (list, tuple)):
            full = [full]
        params = [list(values)[:1] for values in full]
    if params and not isinstance(params[0], (list, tuple)):
        params = [params]
    return [list(values) for values in params]


def _run_timeraw(code) -> None:
    setup = ""
    if isinstance(code, tuple):
        code, setup = code
    program = textwrap.dedent(setup) + "\n" + textwrap.dedent(code)
    compile(program, "<timeraw>", "exec")
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]


def _check_result(name: str, value) -> None:
    if name.startswith("track_"):
        assert isinstance(value, numbers.Real) and math.isfinite(value), \
            f"{name} returned {value!r}, not a finite number"


def _cases() -> list:
    cases = []
    for mod_name in _module_names():
        cases.append(pytest.param(mod_name, id=mod_name))
    return cases


@pytest.mark.parametrize("mod_name", _cases())
def test_module_runs_once(mod_name, monkeypatch):
    module = _import(mod_name)
    targets = _targets(module)
    if not targets:
        return  # a helper module (compare script, hand-written kernels): importing suffices
    ran = 0
    by_owner: dict[object, list[str]] = {}
    for owner, name in targets:
        by_owner.setdefault(owner, []).append(name)
    for owner, names in by_owner.items():
        if owner is module:  # module-level benchmark functions
            for name in names:
                result = getattr(module, name)()
                if name.startswith("timeraw_"):
                    _run_timeraw(result)
                _check_result(name, result)
                ran += 1
            continue
        params = _param_lists(owner)
        monkeypatch.setattr(owner, "params", params, raising=False)
        instance = owner()
        cache = []
        if hasattr(instance, "setup_cache"):
            cache = [instance.setup_cache()]
        for combo in itertools.product(*params):
            for name in names:
                bench = owner()
                try:
                    if hasattr(bench, "setup"):
                        bench.setup(*cache, *combo)
                except NotImplementedError:
                    continue
                try:
                    result = getattr(bench, name)(*cache, *combo)
                    if name.startswith("timeraw_"):
                        _run_timeraw(result)
                    _check_result(f"{owner.__name__}.{name}{combo}", result)
                finally:
                    if hasattr(bench, "teardown"):
                        bench.teardown(*cache, *combo)
                ran += 1
    assert ran, f"benchmarks/{mod_name}.py: every benchmark was skipped by its setup"


def test_every_module_is_listed():
    """The suites this project's issue asks for are present."""
    names = _module_names()
    for required in ("bench_frames", "bench_solvers"):
        assert required in names
