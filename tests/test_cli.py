"""The command line: subcommands in-process through ``main``, one subprocess smoke test."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import time

import numpy as np
import pytest

import newtonad
from newtonad.__main__ import main
from newtonad.cli import build_parser, methods, progress
from newtonad.cli.table import Column, Table, fmt_time


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ---- top level ----------------------------------------------------------------------------

def test_version(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert out.strip() == f"newtonad {newtonad.__version__}"


def test_help_lists_commands(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for command in ("demo", "solve", "bench", "problems"):
        assert command in out


def test_no_command_prints_help_and_exits_2(capsys):
    code, out, err = run(capsys)
    assert code == 2  # argparse's status for a missing subcommand
    assert out == ""
    assert err.startswith("usage: newtonad") and "cache" in err


@pytest.mark.parametrize("argv, prefix", [
    (["solve", "rosenbrock", "--bogus"], "newtonad: error: unrecognized arguments: --bogus"),
    (["solve"], "newtonad solve: error: the following arguments are required: PROBLEM"),
    (["solve", "rosenbrock", "--n", "two"], "newtonad solve: error: argument --n"),
    (["frobnicate"], "newtonad: error: argument COMMAND: invalid choice"),
    (["solve", "rosenbrock", "--engine", "bogus"],
     "newtonad solve: error: argument --engine: invalid choice: 'bogus' (choose from 'auto', "),
    (["solve", "rosenbrock", "--tol", "-1"], "newtonad solve: error: argument --tol: must be"),
    (["solve", "rosenbrock", "--tol", "0"], "newtonad solve: error: argument --tol: must be"),
    (["solve", "rosenbrock", "--tol", "nan"], "newtonad solve: error: argument --tol: must be"),
    (["solve", "rosenbrock", "--tol", "tiny"], "newtonad solve: error: argument --tol: expected"),
    (["solve", "rosenbrock", "--maxiter", "0"], "newtonad solve: error: argument --maxiter"),
    (["solve", "rosenbrock", "--disp-every", "0"], "newtonad solve: error: argument --disp-every"),
    (["solve", "chained-rosenbrock", "--n", "0"], "newtonad solve: error: argument --n: must be"),
    (["demo", "--engine", "bogus"], "newtonad demo: error: argument --engine: invalid choice"),
    (["demo", "--n", "-3"], "newtonad demo: error: argument --n: must be a positive integer"),
    (["bench", "--engine", "bogus"], "newtonad bench: error: argument --engine: invalid choice"),
    (["bench", "--n", "0"], "newtonad bench: error: argument --n: must be a positive integer"),
    (["problems", "--format", "html"], "newtonad problems: error: argument --format"),
    (["cache", "--purge"], "newtonad: error: unrecognized arguments: --purge"),
])
def test_bad_arguments_are_one_line_errors(capsys, argv, prefix):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith(prefix), err


@pytest.mark.parametrize("command", ["demo", "solve", "bench", "problems", "cache"])
def test_help_is_plain_text(capsys, command):
    code, out, _ = run(capsys, command, "--help")
    assert code == 0
    assert f"usage: newtonad {command}" in out
    assert not re.search(r":(mod|func|class|meth|data):|``", out), out


# ---- solve --------------------------------------------------------------------------------

def test_solve_native(capsys):
    code, out, err = run(capsys, "solve", "rosenbrock")
    assert code == 0, err
    assert "method trust-ncg (newtonad.minimize" in out
    assert "success" in out
    assert "\r" not in err  # no progress display when output is captured


@pytest.mark.parametrize("method", ["newton-cg", "trust-krylov", "trust-exact",
                                    "scipy:trust-ncg", "bfgs"])
def test_solve_methods(capsys, method):
    code, out, err = run(capsys, "solve", "beale", "--method", method)
    assert code == 0, out + err
    assert "f - f*" in out


def test_solve_disp_prints_iteration_table(capsys):
    code, out, _ = run(capsys, "solve", "rosenbrock", "--disp")
    assert code == 0
    assert "iter" in out and "|g|" in out


def test_solve_scalable_size(capsys):
    code, out, _ = run(capsys, "solve", "chained-rosenbrock", "--n", "20", "-m", "trust-krylov")
    assert code == 0
    assert "n = 20" in out


def test_solve_maxiter_reports_failure(capsys):
    code, out, _ = run(capsys, "solve", "rosenbrock", "--maxiter", "2")
    assert code == 1
    assert "failure" in out


def _iteration_rows(out):
    """The iteration numbers of the rows of a --disp table."""
    table = out.split("  iter ")[1].split("Optimization")[0]
    return [int(line.split()[0]) for line in table.splitlines()[1:] if line.strip()]


def test_solve_disp_every_k_shows_every_kth_and_the_last(capsys):
    code, out, _ = run(capsys, "solve", "rosenbrock", "--disp-every", "4", "--engine", "numpy")
    assert code == 0
    nit = int(re.search(r"iterations +(\d+)", out).group(1))
    rows = _iteration_rows(out)
    assert nit % 4 != 0  # so the last row is one the stride alone would drop
    assert rows == list(range(0, nit, 4)) + [nit]
    hidden = nit + 1 - len(rows)
    assert f"({hidden} iteration rows not shown; --disp-every 1 shows all)" in out


def test_solve_disp_default_stride_on_a_long_run(capsys):
    code, out, _ = run(capsys, "solve", "chained-rosenbrock", "--n", "200", "-m", "trust-ncg",
                       "--disp", "--engine", "numpy")
    assert code == 0
    nit = int(re.search(r"iterations +(\d+)", out).group(1))
    assert 300 < nit < 1000 and nit % 10 != 0
    assert _iteration_rows(out) == list(range(200)) + list(range(200, nit, 10)) + [nit]


def test_disp_default_stride_thins_long_runs():
    from newtonad.cli.disp import IterationTable
    from newtonad.solvers.monitor import IterationRecord

    lines = []
    table = IterationTable(lines.append)
    for k in range(1234):
        table(IterationRecord(k, 1.0, 1.0, 1.0, 0, 0.0, "radius"))
    table.finish()
    shown = [int(line.split()[0]) for line in lines[1:]]
    assert lines[0].split()[0] == "iter"
    assert shown[:200] == list(range(200))  # short runs: every iteration
    assert shown[200:] == list(range(200, 1000, 10)) + [1000, 1100, 1200, 1233]
    assert table.hidden == 1234 - len(shown)


def test_solve_warns_up_front_when_the_method_is_costly(capsys, monkeypatch):
    from newtonad.cli import cost

    assert cost.cost_warning("trust-krylov", 10**6) is None
    assert "200 MB" in cost.cost_warning("scipy:trust-exact", 5000)
    assert "dense" in cost.cost_warning("bfgs", 20000)
    monkeypatch.setattr(cost, "DENSE_HESSIAN_N_NUMPY", 10)  # as if n = 12 were large
    code, out, err = run(capsys, "solve", "chained-rosenbrock", "--n", "12", "-m",
                         "trust-exact", "--engine", "numpy")
    assert code == 0
    assert err.startswith("newtonad: warning: trust-exact at n = 12 builds a dense 12 x 12 ")
    assert err.count("\n") == 1 and "trust-krylov" in err


def test_solve_shows_progress_when_not_a_terminal(capsys, monkeypatch):
    from newtonad.cli import solve

    monkeypatch.setattr(solve, "HEARTBEAT", 0.002)
    code, out, err = run(capsys, "solve", "chained-rosenbrock", "--n", "50", "-m",
                         "newton-cg", "--engine", "numpy")
    assert code == 0
    beats = err.splitlines()  # tqdm's meter: "newton-cg: 12it [00:01, 9.50it/s, f = ...]"
    assert beats and all(line.startswith("newton-cg: ") for line in beats)
    assert any("tracing" in line or "f = " in line for line in beats)
    assert "\r" not in err and "success" in out


@pytest.mark.parametrize("argv, fragment", [
    (["solve", "rosenbrok"], "did you mean 'rosenbrock'"),
    (["solve", "no-such-problem"], "unknown problem"),
    (["solve", "rosenbrock", "--method", "trust-foo"], "unknown method 'trust-foo'"),
    (["solve", "rosenbrock", "--n", "3"], "fixed size"),
    (["demo", "--methods", "bfgs"], "demo compares the native methods"),
    (["demo", "--problems", "nope"], "unknown problem 'nope'"),
    (["bench", "--modes", "sideways"], "unknown mode"),
])
def test_usage_errors_exit_2_with_one_line(capsys, argv, fragment):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("newtonad: error:")
    assert fragment in err


def test_method_lists_come_from_the_solvers_package():
    from newtonad.solvers import options, scipy_bridge

    assert methods.NATIVE_METHODS is options.NATIVE_METHODS
    assert methods.SCIPY_METHODS is scipy_bridge.SCIPY_METHODS
    assert methods.load_minimize() is newtonad.minimize
    assert not hasattr(methods, "_SCIPY_FALLBACK") and not hasattr(methods, "scipy_methods")
    assert methods.resolve_method("Scipy:Trust-NCG") == "scipy:trust-ncg"
    for name in options.NATIVE_METHODS + tuple(scipy_bridge.SCIPY_METHODS):
        assert methods.resolve_method(name) == name


# ---- demo ---------------------------------------------------------------------------------

def test_demo_table(capsys):
    code, out, err = run(capsys, "demo", "--problems", "rosenbrock", "beale")
    assert code == 0, err
    lines = out.splitlines()
    assert "newtonad.minimize" in out and "scipy + newtonad derivatives" in out
    for method in methods.COMPARED_METHODS:
        assert sum(method in line for line in lines) >= 3  # two problems + summary
    assert "rosenbrock" in out and "beale" in out
    assert "8/8" not in out  # per method: 2/2 problems
    summary = out.split("outer iterations no more")[0]
    assert summary.count("2/2") == 8  # every method and solver solves both
    assert "outer iterations no more than scipy's same-named method: newton-cg" in out


def test_demo_fits_120_columns_unless_wide(capsys):
    argv = ["demo", "--problems", "discrete-integral-equation", "rosenbrock"]
    code, out, _ = run(capsys, *argv)
    assert code == 0
    assert max(map(len, out.splitlines())) <= 120
    assert " f* " not in out.splitlines()[3] and "time" not in out.splitlines()[3]
    code, wide, _ = run(capsys, *argv, "--wide")
    assert code == 0
    header = wide.splitlines()[3]
    assert " f* " in header and header.count("time") == 2
    assert max(map(len, wide.splitlines())) > 120


def test_demo_counts_agree_with_the_table(capsys):
    # minimal-surface has no known f*: the summary once counted it as a run of the
    # iteration comparison (x/2) but not of the solved column (y/1)
    code, out, _ = run(capsys, "demo", "--problems", "minimal-surface", "rosenbrock",
                       "--methods", "trust-ncg", "newton-cg")
    assert code == 0
    fractions = re.findall(r"\b(\d+)/(\d+)\b", out.split("total")[0])
    assert len(fractions) == 4 + 2  # solved per method and solver, compared per method
    assert {den for _, den in fractions} == {"2"}
    # the solved column counts exactly the rows without a * mark
    rows = [line for line in out.splitlines()
            if re.search(r"(newton-cg|trust-ncg) +\S*e[+-]", line)]
    marks = {m: sum(line.split()[-8].endswith("*") for line in rows if m in line)
             for m in ("trust-ncg", "newton-cg")}
    for m in marks:
        solved = re.search(rf"^{m} +newtonad.minimize +(\d+)/2", out, re.M).group(1)
        assert int(solved) == 2 - marks[m]


def test_demo_solved_when_fstar_unknown():
    from newtonad.cli.demo import counts_as_solved
    from newtonad.cli.runs import Run

    run_ = Run("p", 3, None, "trust-ncg", fun=1.0, success=True)
    assert run_.solved is None and counts_as_solved(run_)
    assert not counts_as_solved(Run("p", 3, None, "trust-ncg", fun=1.0, success=False))
    assert not counts_as_solved(Run("p", 3, 0.0, "trust-ncg", fun=1.0, success=True))
    assert not counts_as_solved(Run("p", 3, None, "trust-ncg", success=True, error="E: x"))


def test_demo_markdown_native_only(capsys):
    code, out, _ = run(capsys, "demo", "--problems", "rosenbrock", "--methods", "trust-ncg",
                       "--no-scipy", "--format", "markdown")
    assert code == 0
    assert "| problem | n | f* | method | newtonad f | newtonad nit |" in out
    assert "| scipy" not in out


def test_demo_scalable_size(capsys):
    code, out, _ = run(capsys, "demo", "--problems", "extended-rosenbrock", "--n", "7",
                       "--methods", "trust-ncg", "--no-scipy")
    assert code == 0
    assert re.search(r"extended-rosenbrock +8 ", out)  # 7 rounded up to even


def test_demo_reports_solver_errors(capsys, monkeypatch):
    from newtonad.cli import runs

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(runs, "load_minimize", lambda: broken)
    code, out, _ = run(capsys, "demo", "--problems", "beale", "--methods", "trust-ncg",
                       "--no-scipy")
    assert code == 1
    assert "RuntimeError: boom" in out


def test_demo_least_squares_row_on_problems_with_residuals(capsys):
    from newtonad import problems

    code, out, _ = run(capsys, "demo", "--problems", "bard", "rosenbrock", "--methods",
                       "trust-ncg", "least-squares")
    assert code == 0
    assert max(map(len, out.splitlines())) <= 120
    table = out.split("f: final value")[0]
    rows = [line for line in table.splitlines() if "least-squares" in line]
    assert len(rows) == 1  # bard is a sum of squares of residuals, rosenbrock is not here
    bard = table.splitlines().index(rows[0])
    assert table.splitlines()[bard - 1].startswith("bard")
    cells = rows[0].split()
    fstar = problems.get("bard").fstar
    assert abs(float(cells[1]) - fstar) <= 1e-5 * max(1.0, fstar)  # solved, no * mark
    # least-squares, then f nit nfev per solver (no nhev): finite differences cost evaluations
    assert len(cells) == 7 and int(cells[6]) > int(cells[3])
    assert re.search(r"^least-squares +newtonad.least_squares +1/1 ", out, re.M)
    assert re.search(r"^least-squares +scipy, jac='2-point' +1/1 ", out, re.M)
    assert "jac='2-point'" in out.split("f: final value")[1]


def test_demo_least_squares_alone_skips_problems_without_residuals(capsys):
    code, out, _ = run(capsys, "demo", "--problems", "rosenbrock", "--methods", "least-squares")
    assert code == 0
    assert "rosenbrock" not in out.split("f: final")[0]
    assert not re.search(r"^ *least-squares +(newtonad|scipy|\d)", out, re.M)  # no row, no summary


def test_demo_least_squares_counts_every_residual_evaluation():
    """scipy's trf leaves its finite-difference evaluations out of nfev; the demo does not."""
    import types

    from newtonad import problems
    from newtonad.cli.runs import solve_least_squares

    bard = problems.get("bard")
    calls = []

    def residuals(x):
        calls.append(1)
        return bard.residuals(x)

    problem = types.SimpleNamespace(name="bard", n=bard.n, fstar=bard.fstar, x0=bard.x0,
                                    residuals=residuals)
    result = solve_least_squares(problem, "scipy:least-squares")
    assert result.error is None and result.nfev == len(calls)
    assert result.fun == pytest.approx(float(np.sum(bard.residuals(result.x) ** 2)), rel=1e-12)
    native = solve_least_squares(problem, "least-squares", engine="numpy")
    assert native.fun == pytest.approx(bard.fstar, rel=1e-5) and native.nhev == 0
    np.testing.assert_allclose(native.x, result.x, rtol=1e-4)


# ---- bench and problems -------------------------------------------------------------------

def test_bench_table_json_and_plot(capsys, tmp_path):
    """The table, the JSON and the plot. On the NumPy evaluator: the command's own logic
    does not depend on the engine, and numba compiling 15 kernels (7 frame widths, 2 modes,
    value and gradient) cost this test 50 s. The same workloads (``frame_runner``,
    ``value_and_grad_runner``) run on numba in tests/test_benchmarks.py (bench_frames)."""
    pytest.importorskip("matplotlib")
    data, png = tmp_path / "b.json", tmp_path / "b.png"
    code, out, _ = run(capsys, "bench", "--quick", "--n", "50", "--modes", "jvp", "hvp",
                       "--engine", "numpy", "--json", str(data), "--plot", str(png))
    assert code == 0
    assert "engine 'numpy'" in out
    assert "n = 50" in out and "k=64" in out and "value+gradient" in out
    saved = json.loads(data.read_text())
    assert saved["engine"] == "numpy"
    records = saved["results"]
    assert {r["mode"] for r in records} == {"jvp", "hvp", "value-and-grad"}
    assert all(r["per_column"] > 0 for r in records)
    assert png.stat().st_size > 1000


def test_bench_times_compiled_kernels_unless_told():
    assert build_parser().parse_args(["bench"]).engine == "numba"


def test_bench_plot_without_matplotlib(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, out, err = run(capsys, "bench", "--quick", "--plot", "x.png")
    assert code == 2
    assert "needs matplotlib" in err
    assert out == ""  # fails before measuring


def test_problems_list(capsys):
    code, out, _ = run(capsys, "problems")
    assert code == 0
    assert "chained-rosenbrock" in out and "MGH" in out


def _fake_cache(root):
    kernels = root / "kernels"
    (kernels / "__pycache__").mkdir(parents=True)
    (kernels / "newtonad_kernel_0a1b.py").write_text("x = 1\n")
    (kernels / "newtonad_meta_0a1b.meta.npz").write_bytes(b"\0" * 100)
    (kernels / "__pycache__" / "newtonad_kernel_0a1b.f-1.py311.nbi").write_bytes(b"\0" * 900)
    (root / "unrelated.txt").write_text("not ours")
    return kernels


def test_cache_shows_location_and_size(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("NEWTONAD_CACHE_DIR", str(tmp_path))
    code, out, _ = run(capsys, "cache")
    assert code == 0
    assert f"kernel cache: {tmp_path / 'kernels'} (not created yet)" in out
    _fake_cache(tmp_path)
    code, out, _ = run(capsys, "cache")
    assert code == 0
    assert f"kernel cache: {tmp_path / 'kernels'}\n" in out
    assert "1 kernels, 3 files, 1.01 kB" in out  # 6 + 100 + 900 bytes


def test_cache_clear_deletes_the_kernels_only(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("NEWTONAD_CACHE_DIR", str(tmp_path))
    kernels = _fake_cache(tmp_path)
    code, out, _ = run(capsys, "cache", "--clear")
    assert code == 0
    assert out.startswith(f"cleared {kernels}: 1 kernels, 3 files")
    assert not kernels.exists() and (tmp_path / "unrelated.txt").exists()
    code, out, _ = run(capsys, "cache")
    assert "0 kernels, 0 files, 0 B" in out


def test_cache_uses_the_engines_directory(monkeypatch, tmp_path):
    from newtonad.ad.engine import numba_cache
    from newtonad.cli import cache

    monkeypatch.setenv("NEWTONAD_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert cache.kernels_dir() == numba_cache.cache_dir() / "kernels"


# ---- building blocks ----------------------------------------------------------------------

class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_draws_only_when_enabled():
    quiet = io.StringIO()
    with progress.Progress(3, stream=quiet, delay=0.0) as bar:  # not a terminal: disabled
        bar.advance(note="x")
    assert quiet.getvalue() == ""

    beats = io.StringIO()  # off, with a heartbeat: whole lines now and then
    with progress.Progress(heartbeat=0.01, stream=beats) as bar:
        bar.update("solving wood")
        time.sleep(0.1)
    assert beats.getvalue().count("solving wood]\n") >= 2 and "\r" not in beats.getvalue()

    term = _Terminal()
    with progress.Progress(4, desc="demo", unit="run", stream=term, enabled=True,
                           delay=0.0) as bar:
        bar.advance(2, note="solving wood")
        bar.bar.refresh()  # tqdm draws at most every mininterval: now
        line = bar.line()
        assert "2/4" in line and "solving wood" in line and "run/s" in line
        assert "<" in line  # elapsed<remaining: the total is known
        bar.write("a result line", file=io.StringIO())
    assert "2/4" in term.getvalue()


def test_table_and_time_format():
    table = Table([Column("a", 3, "<", group="g"), Column("b", 4, group="g")])
    assert table.header()[0].strip() == "g"
    assert table.row(["x", 12]) == "x      12"
    with pytest.raises(ValueError):
        table.row(["only one"])
    assert fmt_time(2.5e-6) == "2.5 us" and fmt_time(1.5) == "1.5 s"


# ---- a real process -----------------------------------------------------------------------

def test_subprocess_bad_engine_is_one_line_not_a_traceback():
    proc = subprocess.run([sys.executable, "-m", "newtonad", "solve", "rosenbrock", "--engine",
                           "bogus"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_subprocess_smoke():
    proc = subprocess.run([sys.executable, "-m", "newtonad", "solve", "rosenbrock", "-m",
                           "trust-exact"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "success" in proc.stdout
    assert proc.stderr == ""


@pytest.mark.parametrize("module", ["args", "cost", "disp", "methods", "progress", "table"])
def test_docstring_examples_run(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(f"newtonad.cli.{module}"))
    assert result.attempted > 0 and result.failed == 0


def test_problems_list_shows_the_bounded_problems(capsys):
    code, out, _ = run(capsys, "problems")
    assert code == 0
    torsion = next(line for line in out.splitlines() if line.startswith("torsion"))
    assert " yes " in torsion and "bounds" in out


def test_solve_passes_a_bounded_problem_s_bounds_to_the_method(capsys):
    code, out, _ = run(capsys, "solve", "torsion", "--n", "400", "-m", "tron")
    assert code == 0 and "success" in out
    # without -m: newtonad.minimize's choice with bounds, scipy's (L-BFGS-B)
    code, out, _ = run(capsys, "solve", "hs038")
    assert code == 0 and "method l-bfgs-b" in out
