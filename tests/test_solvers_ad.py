"""End to end: plain-numpy objectives and constraints through the AD core into the solvers.

``test_solvers.py`` checks the solvers with hand-coded derivatives; this file
checks the seams — ``minimize`` wrapping a user function as
``newtonad.objective.Objective`` and the constraint hook
``scipy_bridge.constraint_derivatives`` reaching ``newtonad.api``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import NonlinearConstraint

from newtonad.solvers import minimize


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosen_grid(x, scale):
    """Chained Rosenbrock on a 2-D array, times a data argument."""
    v = x.ravel()
    return scale * np.sum(100.0 * (v[1:] - v[:-1] ** 2) ** 2 + (1.0 - v[:-1]) ** 2)


@pytest.mark.parametrize("method", ["newton-cg", "trust-ncg", "trust-krylov", "trust-exact"])
def test_plain_numpy_objective(method):
    x0 = np.tile([-1.2, 1.0], 10)
    res = minimize(rosen, x0, method=method)
    assert res.success, res.message
    assert res.fun < 1e-10 or method == "trust-exact"
    assert min(res.nfev, res.njev) >= 1 and res.nhev >= 1


def test_shaped_x0_and_args():
    res = minimize(rosen_grid, np.array([[-1.2, 1.0], [-1.2, 1.0]]), args=(2.0,),
                   method="trust-krylov")
    assert res.success and res.x.shape == (2, 2)
    assert res.fun < 1e-10 or res.fun == pytest.approx(2.0 * 3.701428610430, rel=1e-6)


def test_constraint_jacobian_from_ad():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = minimize(rosen, [-1.2, 1.0], method="SLSQP",
                       constraints={"type": "ineq", "fun": lambda x: 1.0 - x[0] - x[1]})
    assert res.success
    assert res.x.sum() == pytest.approx(1.0, abs=1e-8)


def test_trust_constr_lagrangian_hessian_from_ad():
    con = NonlinearConstraint(lambda x: x[0] ** 2 + x[1] ** 2, 0.0, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = minimize(rosen, np.array([-1.2, 1.0]), method="trust-constr", constraints=con)
    assert res.success
    assert (res.x ** 2).sum() == pytest.approx(1.0, abs=1e-5)
    assert_allclose(res.x, [0.7864, 0.6177], atol=1e-3)  # Rosenbrock on the unit disc
