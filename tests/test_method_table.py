"""The table of native methods (newtonad.solvers.methods) is the one place they are listed."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy.optimize import OptimizeWarning

import newtonad as nad
from newtonad.cli import methods as cli_methods
from newtonad.cli import runs
from newtonad.solvers import methods, options, scipy_bridge
from newtonad.solvers.problem import FlatProblem

from .builders import rosen_start, rosenbrock


def test_every_entry_runs_and_is_read_everywhere():
    assert methods.NATIVE_METHODS == tuple(methods.METHODS)
    assert options.NATIVE_METHODS is methods.NATIVE_METHODS
    for name, entry in methods.METHODS.items():
        assert callable(entry.runner())
        assert entry.ignored <= entry.accepted
        assert options.ACCEPTED_OPTIONS[name] == entry.accepted
        assert entry.needs <= {"gradient", "products", "hessian"}
        assert cli_methods.resolve_method(name.upper()) == name
        assert (name in cli_methods.COMPARED_METHODS) == entry.scipy_peer
        if entry.scipy_peer:
            assert name in scipy_bridge.SCIPY_METHODS
    assert methods.METHODS["tron"].bounds and not methods.METHODS["trust-ncg"].bounds


def test_docs_table_lists_every_method_and_its_options():
    text = methods.method_table_rst()
    assert text.startswith(".. list-table:: Native methods")
    rows = methods.method_rows()
    assert [row["method"] for row in rows] == list(methods.NATIVE_METHODS)
    for row, entry in zip(rows, methods.METHODS.values()):
        assert f"   * - {entry.name}\n" in text
        shown = set(row["options"].split(", "))
        assert shown == set(entry.accepted - entry.ignored)
    narrow = methods.method_table_rst(("method", "bounds"))
    assert narrow.count("     - ") == len(rows) + 1


def test_a_new_method_is_one_entry(monkeypatch):
    # an entry reusing the Steihaug module under another name, with its own option set
    toy = dataclasses.replace(methods.METHODS["trust-ncg"], name="toy-ncg",
                              accepted=frozenset({"gtol", "maxiter"}), ignored=frozenset(),
                              scipy_peer=False)
    monkeypatch.setitem(methods.METHODS, "toy-ncg", toy)
    res = nad.minimize(rosenbrock(), rosen_start(2), method="Toy-NCG",
                       options={"gtol": 1e-8})
    ref = nad.minimize(rosenbrock(), rosen_start(2), method="trust-ncg",
                       options={"gtol": 1e-8})
    assert res.success and res.nit == ref.nit
    np.testing.assert_array_equal(res.x, ref.x)
    with pytest.warns(OptimizeWarning, match="Unknown solver options: eta"):
        nad.minimize(rosenbrock(), rosen_start(2), method="toy-ncg", options={"eta": 0.1})


def test_the_cli_reads_the_table():
    from newtonad import problems

    p = problems.get("chained-rosenbrock", 10)
    assert runs.hessian_kind(p, "tron") is None
    assert runs.hessian_kind(p, "trust-exact") == "dense"
    assert runs.hessian_kind(p, "scipy:trust-exact") == "dense"
    assert runs._SCIPY_HESSP is scipy_bridge.HESSP_METHODS


def test_default_rule():
    assert methods.default_method() == methods.DEFAULT_METHOD == "trust-ncg"
    assert methods.default_method([(0, 1)]) == "L-BFGS-B"
    assert methods.default_method([(0, 1)], [{"type": "eq"}]) == "SLSQP"

    def f(x):
        return np.sum((x[1:] - x[:-1]) ** 2) + np.sum(x ** 4)

    n = methods.PRECONDITION_FROM
    big = FlatProblem(nad.Objective(f, engine="numpy"), (n,))
    x = np.ones(n)
    assert methods.refine_default(big, x, None) == ("newton-cg", {"preconditioner": "ichol"})
    # the caller's options decide: trust-ncg's own names, or any preconditioner
    assert methods.refine_default(big, x, {"initial_trust_radius": 2.0})[0] == "trust-ncg"
    assert methods.refine_default(big, x, {"preconditioner": None})[0] == "trust-ncg"
    small = FlatProblem(nad.Objective(f, engine="numpy"), (n - 1,))
    assert methods.refine_default(small, np.ones(n - 1), None)[0] == "trust-ncg"
    # an objective without sparse Hessians keeps trust-ncg
    assert methods.refine_default(FlatProblem(rosenbrock(), (n,)), x, None)[0] == "trust-ncg"
    # tron's own default preconditioner follows the same rule
    from newtonad.solvers.tron import default_preconditioner

    assert default_preconditioner(big, x) == "ichol"
    assert default_preconditioner(small, np.ones(n - 1)) is None
    assert default_preconditioner(FlatProblem(rosenbrock(), (n,)), x) is None
