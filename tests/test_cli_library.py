"""The command line does what the library does: method choice, Hessian path, counts,
least squares, warnings, suggestions, iteration records and logging."""

from __future__ import annotations

import logging
import re

import numpy as np
import pytest

from newtonad.__main__ import main
from newtonad._suggest import did_you_mean


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_did_you_mean_finds_the_close_method():
    assert did_you_mean("trust-krylv", ["trust-ncg", "trust-krylov"]) == \
        " (did you mean 'trust-krylov'?)"
    assert did_you_mean("Trust-NCG", ["trust-ncg"]) == " (did you mean 'trust-ncg'?)"
    assert did_you_mean("zzz", ["trust-ncg"]) == ""


def test_solve_suggests_a_misspelt_method(capsys):
    code, out, err = run(capsys, "solve", "rosenbrock", "-m", "trust-krylv")
    assert code == 2 and out == ""
    assert "did you mean 'trust-krylov'" in err


def test_solve_without_method_uses_minimizes_choice(capsys):
    from newtonad.solvers.minimize import choose_method

    code, out, _ = run(capsys, "solve", "rosenbrock", "--engine", "numpy")
    assert code == 0
    assert f"method {choose_method(None, None, ())} (newtonad.minimize, newtonad.minimize's " \
           "choice for method=None)" in out


@pytest.mark.parametrize("method", ["nelder-mead", "scipy:nelder-mead", "powell"])
def test_derivative_free_methods_count_no_gradients(capsys, method):
    code, out, _ = run(capsys, "solve", "rosenbrock", "-m", method, "--maxiter", "5000")
    assert code == 0
    line = re.search(r"evaluations +(.*)", out).group(1)
    assert re.fullmatch(r"\d+ values \(no gradients: the method is derivative-free\)", line)
    assert "no tracing" in out and "tracing   " not in out  # the function is called directly


def test_derivative_free_run_is_never_traced(monkeypatch):
    import newtonad as nad
    from newtonad import problems
    from newtonad.cli import runs

    def refuse(*args, **kwargs):
        raise AssertionError("a derivative-free run built an Objective")

    monkeypatch.setattr(nad, "Objective", refuse)
    result = runs.solve(problems.get("rosenbrock"), "nelder-mead")
    assert result.error is None and result.njev == 0 and result.nfev > 0


def test_trust_exact_follows_the_librarys_sparse_rule(monkeypatch):
    from newtonad import problems
    from newtonad.cli import runs
    from newtonad.solvers import sparse_exact

    small = problems.get("chained-rosenbrock", 50)
    assert runs.hessian_kind(small, "trust-exact") == "dense"
    assert runs.hessian_kind(small, "scipy:trust-exact") == "dense"
    assert runs.hessian_kind(small, "trust-krylov") is None
    # as if n = 50 were large: the library (and so the CLI) goes sparse, warm-up included
    monkeypatch.setattr(sparse_exact, "SPARSE_FROM", 10)
    assert runs.hessian_kind(small, "trust-exact") == "sparse"
    runs.prepare(small.fun, small.x0, engine="numpy", hessian="sparse")
    result = runs.solve(small, "trust-exact", engine="numpy", options={"maxiter": 3})
    assert result.error is None, result.error
    assert result.hessian == "sparse" and result.nhess >= 1


def test_solve_sparse_trust_exact_gives_no_dense_warning(capsys, monkeypatch):
    from newtonad.cli import cost
    from newtonad.solvers import sparse_exact

    monkeypatch.setattr(sparse_exact, "SPARSE_FROM", 10)
    monkeypatch.setattr(cost, "DENSE_HESSIAN_N_NUMPY", 10)
    monkeypatch.setattr(cost, "DENSE_HESSIAN_N", 10)
    code, out, err = run(capsys, "solve", "chained-rosenbrock", "--n", "50", "-m",
                         "trust-exact", "--engine", "numpy", "--maxiter", "3")
    assert "warning" not in err
    assert re.search(r"evaluations .*\(\d+ sparse Hessians?\)", out)


def test_solve_least_squares(capsys):
    code, out, err = run(capsys, "solve", "bard", "-m", "least-squares")
    assert code == 0, err
    assert "newtonad.least_squares" in out and "success" in out
    assert re.search(r"evaluations +\d+ residual vectors, \d+ Jacobians", out)


def test_solve_least_squares_refuses_a_problem_without_residuals(capsys):
    code, out, err = run(capsys, "solve", "rosenbrock", "-m", "least-squares")
    assert code == 2 and out == ""
    assert "not written from residuals" in err and "bard" in err


def test_demo_warns_up_front_about_long_runs(capsys, monkeypatch):
    from newtonad.cli import cost

    monkeypatch.setattr(cost, "DENSE_HESSIAN_N_NUMPY", 10)
    code, out, err = run(capsys, "demo", "--problems", "chained-rosenbrock", "--n", "12",
                         "--methods", "trust-exact", "trust-ncg", "--no-scipy")
    assert code == 0
    warning = " ".join(err.split())
    assert warning.startswith("newtonad: warning: trust-exact on chained-rosenbrock (n = 12)")
    assert "trust-ncg on" not in warning


def test_iteration_records_reach_watchers_without_disp(capsys):
    import newtonad as nad
    from newtonad.solvers.monitor import watch

    rows = []
    with watch(rows.append):
        res = nad.minimize(lambda x: np.sum((x - 1.0) ** 4), np.zeros(3), method="trust-ncg")
    assert capsys.readouterr().out == ""  # no disp: nothing printed
    assert [r.k for r in rows] == list(range(res.nit + 1))
    assert rows[-1].f == pytest.approx(res.fun) and rows[0].step_label == "radius"


def test_solve_disp_table_comes_from_records(capsys, monkeypatch):
    from newtonad.solvers import monitor

    # the solvers' own printing is not what the CLI shows
    monkeypatch.setattr(monitor.Monitor, "start_run", _start_without_header(monitor))
    code, out, _ = run(capsys, "solve", "rosenbrock", "--disp", "--engine", "numpy")
    assert code == 0
    assert re.search(r"^ +iter +f +\|g\| +radius", out, re.M)
    assert re.search(r"^ +0 +2\.42000000e\+01", out, re.M)


def _start_without_header(monitor):
    original = monitor.Monitor.start_run

    def start_run(self, *args, **kwargs):
        assert not self.disp  # the CLI asks for records, not printed rows
        return original(self, *args, **kwargs)

    return start_run


def test_verbose_flag_logs_and_leaves_the_logger_as_it_was(capsys):
    logger = logging.getLogger("newtonad")
    before = (logger.level, list(logger.handlers))
    code, out, err = run(capsys, "-v", "solve", "rosenbrock", "--engine", "numpy")
    assert code == 0
    assert "newtonad.cli: solve rosenbrock" in err and "stopped after" in err
    assert (logger.level, list(logger.handlers)) == before
    code, out, err = run(capsys, "solve", "rosenbrock", "--engine", "numpy")
    assert "newtonad.cli" not in err  # silent by default


def test_plot_without_matplotlib_names_the_extra(monkeypatch):
    import builtins

    from newtonad.cli import UsageError, plots

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.split(".")[0] == "matplotlib":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(UsageError, match=re.escape("pip install 'newtonad[plot]'")):
        plots.require_matplotlib()
