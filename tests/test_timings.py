"""Honest timings: compile time is counted by the engine and left out of solve times.

``newtonad.ad.engine.timings()`` counts the seconds spent compiling on the caller's
path (also a kernel compiled lazily inside a solve) and in the background compiler;
the CLI's runs subtract the first and report both.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import newtonad as nad
from newtonad import problems
from newtonad.ad import engine
from newtonad.ad.transforms import value_and_grad_program
from newtonad.cli import runs, solve

pytestmark = pytest.mark.usefixtures("module_kernel_cache")


def test_only_compiling_engines_count_compile_time():
    program = value_and_grad_program(nad.trace(lambda x: np.sum(np.tanh(x) * x), np.ones(13)))
    before = engine.timings()
    engine.compile_program(program, "numpy")(np.ones(13))
    engine.compile_program(program, "auto")(np.ones(13))  # one call: nothing compiled
    assert (engine.timings() - before).compile_seconds == 0.0
    start = time.perf_counter()
    engine.compile_program(program, "numba")
    wall = time.perf_counter() - start
    spent = (engine.timings() - before).compile_seconds
    assert 0.0 < spent <= wall


def test_compile_clock_leaves_out_a_compile_inside_the_block():
    def f(x):
        return np.sum(np.cosh(x) - x ** 2)

    with runs.CompileClock() as clock:
        time.sleep(0.05)
        nad.grad(f, engine="numba")(np.ones(17))  # compiles here, on this path
    assert clock.compile_seconds > 0.0
    assert clock.seconds == pytest.approx(clock.wall - clock.compile_seconds)
    assert 0.05 <= clock.seconds < clock.wall


def _problem():
    return problems.get("chained-rosenbrock", n=24)


def test_a_kernel_compiled_in_the_first_iteration_is_compile_time():
    """No warm-up: the numba engine compiles inside the solve, and the run's time leaves
    it out (before, it was counted as solving)."""
    problem = _problem()
    start = time.perf_counter()
    run = runs.solve(problem, "trust-ncg", engine="numba")
    wall = time.perf_counter() - start
    assert run.solved
    assert run.compile_time > 0.0
    assert run.time + run.compile_time <= wall
    assert run.time < wall - run.compile_time + 0.05  # only the solve's own bookkeeping left


def test_prepare_tells_tracing_from_compiling():
    def f(x):
        return np.sum(np.log1p(x ** 2) + 0.5 * x)

    prep = runs.prepare(f, np.linspace(-1, 1, 11), engine="numba")
    assert prep.compile_seconds > 0.0 and prep.trace_seconds > 0.0
    assert prep.seconds == pytest.approx(prep.compile_seconds + prep.trace_seconds)
    assert runs.warm_up(f, np.linspace(-1, 1, 11), engine="numpy") > 0.0


def test_solve_report_shows_compile_time_apart(capsys):
    from newtonad.cli import main

    code = main(["solve", "chained-rosenbrock", "--n", "26", "--engine", "numba"])
    out = capsys.readouterr().out
    assert code == 0
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}
    assert lines["time"].rstrip().endswith("s solving")
    assert "before the solve" in lines["tracing"]
    assert "excluded from its time" in lines["compiling"]


def test_timing_lines_name_background_compiles():
    run = runs.Run("p", 2, 0.0, "trust-ncg", time=2.0, background_compiles=3,
                   background_time=4.5)
    lines = dict(solve.timing_lines(run, runs.Prep(seconds=0.1, compile_seconds=0.0)))
    assert "compiling" not in lines  # nothing compiled on the solver's path
    assert lines["background"].startswith("3 kernels compiled in 4.500 s")
