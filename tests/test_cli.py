"""The command line: subcommands in-process through ``main``, one subprocess smoke test."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys

import pytest

import newtonad
from newtonad.__main__ import main
from newtonad.cli import methods, progress
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


def test_no_command_prints_help(capsys):
    code, out, _ = run(capsys)
    assert code == 0
    assert "usage: newtonad" in out


@pytest.mark.parametrize("argv, prefix", [
    (["solve", "rosenbrock", "--bogus"], "newtonad: error: unrecognized arguments: --bogus"),
    (["solve"], "newtonad solve: error: the following arguments are required: PROBLEM"),
    (["solve", "rosenbrock", "--n", "two"], "newtonad solve: error: argument --n"),
    (["frobnicate"], "newtonad: error: argument COMMAND: invalid choice"),
])
def test_bad_arguments_are_one_line_errors(capsys, argv, prefix):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith(prefix)


# ---- solve --------------------------------------------------------------------------------

def test_solve_native(capsys):
    code, out, err = run(capsys, "solve", "rosenbrock")
    assert code == 0, err
    assert "method trust-ncg (newtonad.minimize)" in out
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


@pytest.mark.parametrize("argv, fragment", [
    (["solve", "rosenbrok"], "did you mean 'rosenbrock'"),
    (["solve", "no-such-problem"], "unknown problem"),
    (["solve", "rosenbrock", "--method", "trust-foo"], "unknown method 'trust-foo'"),
    (["solve", "rosenbrock", "--n", "3"], "fixed size"),
    (["solve", "chained-rosenbrock", "--n", "0"], "--n must be a positive integer"),
    (["solve", "rosenbrock", "--maxiter", "0"], "--maxiter must be positive"),
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


def test_native_method_without_solvers_is_usage_error(monkeypatch):
    from newtonad.cli.errors import UsageError

    with pytest.raises(UsageError, match="scipy:trust-ncg"):
        methods.resolve_method("trust-ncg", native_available=False)
    assert methods.resolve_method("Scipy:Trust-NCG") == "scipy:trust-ncg"


# ---- demo ---------------------------------------------------------------------------------

def test_demo_table(capsys):
    code, out, err = run(capsys, "demo", "--problems", "rosenbrock", "beale")
    assert code == 0, err
    lines = out.splitlines()
    assert "newtonad.minimize" in out and "scipy.optimize" in out
    for method in methods.NATIVE_METHODS:
        assert sum(method in line for line in lines) >= 3  # two problems + summary
    assert "rosenbrock" in out and "beale" in out
    assert "8/8" not in out  # per method: 2/2 problems
    summary = out.split("outer iterations no more")[0]
    assert summary.count("2/2") == 8  # every method and solver solves both
    assert "outer iterations no more than scipy's same-named method: newton-cg" in out


def test_demo_markdown_native_only(capsys):
    code, out, _ = run(capsys, "demo", "--problems", "rosenbrock", "--methods", "trust-ncg",
                       "--no-scipy", "--format", "markdown")
    assert code == 0
    assert "| problem | n | f* | method | newtonad f | newtonad nit |" in out
    assert "| scipy" not in out


def test_demo_falls_back_to_scipy(capsys, monkeypatch):
    monkeypatch.setattr("newtonad.cli.demo.load_minimize", lambda: None)
    monkeypatch.setattr("newtonad.cli.runs.load_minimize", lambda: None)
    code, out, _ = run(capsys, "demo", "--problems", "rosenbrock", "--methods", "trust-ncg")
    assert code == 0
    assert "scipy's methods only" in out
    assert "newtonad.minimize" not in out


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


# ---- bench and problems -------------------------------------------------------------------

def test_bench_table_json_and_plot(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    data, png = tmp_path / "b.json", tmp_path / "b.png"
    code, out, _ = run(capsys, "bench", "--quick", "--n", "50", "--modes", "jvp", "hvp",
                       "--json", str(data), "--plot", str(png))
    assert code == 0
    assert "n = 50" in out and "k=64" in out and "value+gradient" in out
    records = json.loads(data.read_text())["results"]
    assert {r["mode"] for r in records} == {"jvp", "hvp", "value-and-grad"}
    assert all(r["per_column"] > 0 for r in records)
    assert png.stat().st_size > 1000


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


# ---- building blocks ----------------------------------------------------------------------

class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_draws_only_when_enabled():
    quiet = io.StringIO()
    with progress.Progress(3, stream=quiet, delay=0.0) as bar:  # not a terminal: disabled
        bar.advance(note="x")
    assert quiet.getvalue() == ""

    term = _Terminal()
    with progress.Progress(4, stream=term, enabled=True, delay=0.0) as bar:
        bar.advance(2, note="solving wood")
        assert "2/4" in bar.line(80) and "solving wood" in bar.line(80)
        bar._draw()
        bar.write("a result line", file=io.StringIO())
    text = term.getvalue()
    assert "[############............] 2/4" in text
    assert text.endswith("\r")  # erased when done


def test_table_and_time_format():
    table = Table([Column("a", 3, "<", group="g"), Column("b", 4, group="g")])
    assert table.header()[0].strip() == "g"
    assert table.row(["x", 12]) == "x      12"
    with pytest.raises(ValueError):
        table.row(["only one"])
    assert fmt_time(2.5e-6) == "2.5 us" and fmt_time(1.5) == "1.5 s"


# ---- a real process -----------------------------------------------------------------------

def test_subprocess_smoke():
    proc = subprocess.run([sys.executable, "-m", "newtonad", "solve", "rosenbrock", "-m",
                           "trust-exact"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "success" in proc.stdout
    assert proc.stderr == ""
