"""Bad ``bounds`` through ``newtonad.minimize``: a clear error, or what scipy's
``minimize`` does with the same input (never a run from a point that is not finite)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.optimize as so
from numpy.testing import assert_allclose
from scipy.optimize import Bounds

import newtonad as nad


def _rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


X0 = np.array([-1.2, 1.0])
NAN_BOUNDS = [[(np.nan, 1.0), (0.0, 1.0)], Bounds([0.0, 0.0], [1.0, np.nan])]


@pytest.mark.parametrize("bounds", NAN_BOUNDS)
@pytest.mark.parametrize("method", ["L-BFGS-B", "TNC", None])
def test_nan_bound_is_no_bound_as_in_scipy(method, bounds):
    # scipy's L-BFGS-B and TNC read a nan bound as no bound; the start must not be
    # clipped to nan and refused as a non-finite objective (status 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = nad.minimize(_rosen, X0.copy(), method=method, bounds=bounds)
        theirs = so.minimize(so.rosen, X0.copy(), jac=so.rosen_der,
                             method=method or "L-BFGS-B", bounds=bounds)
    assert ours.status != 5 and np.isfinite(ours.x).all() and np.isfinite(ours.fun)
    assert ours.success == theirs.success
    assert_allclose(ours.x, theirs.x, atol=1e-3)
    assert_allclose(ours.x, [1.0, 1.0], atol=1e-3)  # the nan side constrains nothing


def test_nan_bound_under_trust_constr_raises_scipys_error():
    with pytest.raises(ValueError) as theirs:
        so.minimize(so.rosen, X0, jac=so.rosen_der, method="trust-constr",
                    bounds=NAN_BOUNDS[0])
    with pytest.raises(ValueError) as ours:
        nad.minimize(_rosen, X0, method="trust-constr", bounds=NAN_BOUNDS[0])
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("bounds", [[(np.inf, np.inf), (0.0, 1.0)],
                                    Bounds([0.0, -np.inf], [1.0, -np.inf])])
def test_tron_refuses_bounds_no_finite_point_satisfies(bounds):
    with pytest.raises(ValueError, match=r"\+inf or an upper bound of -inf"):
        nad.minimize(_rosen, X0, method="tron", bounds=bounds)
