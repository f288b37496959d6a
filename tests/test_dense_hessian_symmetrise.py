"""The solvers' dense Hessian: symmetrised tile by tile, the same bits as (H + Hᵀ) / 2."""

from __future__ import annotations

import numpy as np
import pytest

from newtonad.solvers.problem import FlatProblem, _symmetrise

from .builders import AnalyticObjective


@pytest.mark.parametrize("n", [1, 2, 255, 256, 257, 600])
def test_symmetrise_gives_the_bits_of_the_formula(n):
    a = np.random.default_rng(n).standard_normal((n, n))
    expected = a + a.T
    expected *= 0.5
    assert np.array_equal(_symmetrise(a.copy()), expected)


def test_the_objectives_hessian_is_not_written():
    kept = np.array([[2.0, 1.0], [0.0, 4.0]])  # not symmetric: the objective keeps it
    obj = AnalyticObjective(lambda x: 0.0, lambda x: np.zeros(2), lambda x: (lambda v: v),
                            lambda x: kept)
    h = FlatProblem(obj, (2,)).hess(np.zeros(2))
    np.testing.assert_array_equal(h, [[2.0, 0.5], [0.5, 4.0]])
    np.testing.assert_array_equal(kept, [[2.0, 1.0], [0.0, 4.0]])
