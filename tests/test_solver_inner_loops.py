"""The inner loops' fused iteration kernels and their pooled workspace."""

import math

import numpy as np
import pytest

import newtonad as nad
from newtonad.solvers import linalg, scratch
from newtonad.solvers.newton_cg import truncated_cg

from .helpers import assert_close

SIZES = [50, 3 * linalg.SERIAL_FROM]  # BLAS calls, and the compiled kernels


def _vectors(n, k, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(n) for _ in range(k)]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("first", [False, True])
def test_truncated_cg_step_is_one_cg_iteration(n, first):
    d, z, r, g = _vectors(n, 4)
    bd = d * np.linspace(1.0, 2.0, n)  # H d for a positive diagonal H
    rr = 2.5
    z0 = np.zeros(n) if first else z.copy()
    r0 = g.copy() if first else r.copy()
    d0 = d.copy()
    curv, rr_new, r1 = linalg.truncated_cg_step(d, bd, z, r, g, rr, first)
    alpha = rr / float(d0 @ bd)
    r_new = r0 + alpha * bd
    assert curv == pytest.approx(float(d0 @ bd), rel=1e-12)
    assert_close(z, z0 + alpha * d0, 1e-13, 1e-13)
    assert_close(r, r_new, 1e-13, 1e-13)
    assert rr_new == pytest.approx(float(r_new @ r_new), rel=1e-12)
    assert r1 == pytest.approx(float(np.abs(r_new).sum()), rel=1e-12)
    assert_close(d, rr_new / rr * d0 - r_new, 1e-12, 1e-12)


@pytest.mark.parametrize("n", SIZES)
def test_truncated_cg_step_stops_at_non_positive_or_nonfinite_curvature(n):
    d, z, r, g = _vectors(n, 4, seed=1)
    for bd in (-d, np.full(n, np.nan), np.full(n, np.inf) * np.sign(d)):
        before = [a.copy() for a in (d, z, r)]
        curv, rr_new, _ = linalg.truncated_cg_step(d, bd, z, r, g, 1.0, False)
        assert not (0.0 < curv < math.inf) and math.isnan(rr_new)
        for a, b in zip((d, z, r), before):
            assert np.array_equal(a, b)  # nothing updated


@pytest.mark.parametrize("n", SIZES)
def test_steihaug_step_outcomes(n):
    d, z, r, g = _vectors(n, 4, seed=2)
    bd = d * 3.0
    rr, zz, zd, dd = 4.0, 0.0, 0.0, float(d @ d)
    curv = float(d @ bd)
    alpha = rr / curv
    end_sq = alpha * alpha * dd
    # leaves the ball: nothing updated
    d_next = np.empty(n)
    out = linalg.steihaug_step(d, bd, z, r, g, d_next, rr, zz, zd, dd, 0.5 * end_sq, 0.0, True)
    assert out[0] == linalg.OUTSIDE and out[2] == pytest.approx(alpha, rel=1e-12)
    assert out[3] == pytest.approx(end_sq, rel=1e-12)
    # inside, from z = 0, r = g: the next direction into d_next
    out = linalg.steihaug_step(d, bd, z, r, g, d_next, rr, zz, zd, dd, 2 * end_sq, 0.0, True)
    r_new = g + alpha * bd
    assert out[0] == linalg.CONTINUE
    assert_close(z, alpha * d, 1e-13, 1e-13)
    assert_close(r, r_new, 1e-13, 1e-13)
    assert out[4] == pytest.approx(float(r_new @ r_new), rel=1e-12)
    assert_close(d_next, out[4] / rr * d - r_new, 1e-12, 1e-12)
    # converged: no new direction
    d_next[:] = 7.0
    out = linalg.steihaug_step(d, bd, z, r, g, d_next, rr, zz, zd, dd, 1e300, 1e300, False)
    assert out[0] == linalg.CONVERGED and (d_next == 7.0).all()
    # negative curvature and nan
    for bad in (-bd, bd * np.nan):
        out = linalg.steihaug_step(d, bd=bad, z=z, r=r, g=g, d_next=d_next, rr=rr, zz=zz,
                                   zd=zd, dd=dd, r2=1e300, tol2=0.0, first=False)
        assert out[0] == linalg.NOT_POSITIVE


@pytest.mark.parametrize("k", range(1, 14))
def test_combine_rows_of_large_vectors_adds_row_by_row_bit_for_bit(k):
    """Four rows per pass, the sums in the order of axpys from 0 row by row: the same bits
    as that sequence (and h @ Q to rounding)."""
    n = linalg.SERIAL_FROM + 5
    rng = np.random.default_rng(k)
    Q = rng.standard_normal((k, n))
    h = rng.standard_normal(k)
    rows = scratch.Rows(k, n)
    for j in range(k):
        rows[j][:] = Q[j]
    sequence = h[0] * Q[0]
    for j in range(1, k):
        sequence += h[j] * Q[j]
    out = linalg.combine_rows(h, rows, np.full(n, np.nan))
    assert np.array_equal(out, sequence)
    assert_close(out, h @ Q, 1e-12, 1e-12)


@pytest.mark.parametrize("n", SIZES)
def test_lanczos_step_line_dots_combine_rows_along(n):
    q, w, q_prev, z, d = _vectors(n, 5, seed=3)
    w0 = w.copy()
    delta, ww = linalg.lanczos_step(q, w, q_prev, 0.7)
    assert delta == pytest.approx(float(q @ w0), rel=1e-12)
    expected = w0 - delta * q - 0.7 * q_prev
    assert_close(w, expected, 1e-13, 1e-13)
    assert ww == pytest.approx(float(expected @ expected), rel=1e-12)
    w = w0.copy()
    delta, ww = linalg.lanczos_step(q, w, None, 0.0)
    assert_close(w, w0 - delta * q, 1e-13, 1e-13)
    zz, zd, dd = linalg.line_dots(z, d)
    assert (zz, zd, dd) == pytest.approx((z @ z, z @ d, d @ d), rel=1e-12)
    rows = np.stack([q, q_prev, z, d])
    h = np.array([0.5, -1.0, 2.0])
    out = linalg.combine_rows(h, rows, np.empty(n))
    assert_close(out, h @ rows[:3], 1e-13, 1e-13)
    vectors = scratch.Rows(5, n)
    for j in range(4):
        vectors[j][:] = rows[j]
    assert_close(linalg.combine_rows(h, vectors, np.empty(n)), h @ rows[:3], 1e-13, 1e-13)
    assert_close(linalg.along(z, -0.3, d, np.empty(n)), z - 0.3 * d, 1e-15, 1e-15)


@pytest.mark.parametrize("n", SIZES)
def test_truncated_cg_solves_spd_system_with_and_without_workspace(n):
    rng = np.random.default_rng(4)
    diag = rng.uniform(1.0, 10.0, n)
    g = rng.standard_normal(n)
    for workspace in (None, scratch.Workspace()):
        step = truncated_cg(lambda v: diag * v, g, float(np.linalg.norm(g)), 1e-10, 200,
                            workspace=workspace)
        assert not step.negative_curvature
        assert np.abs(diag * step.p + g).sum() <= 1e-10 * np.abs(g).sum() * (1 + 1e-9)
    # already converged: the zero step, whatever the workspace held
    ws = scratch.Workspace()
    ws.vector("cg-z", n)[:] = np.nan
    step = truncated_cg(lambda v: diag * v, g, float(np.linalg.norm(g)), 2.0, 200, workspace=ws)
    assert step.iterations == 0 and not step.p.any()


def test_runs_reuse_their_vectors():
    """A second run of the same size gets the first run's vectors back (warm pages)."""
    n = 2 * linalg.SERIAL_FROM
    obj = nad.Objective(lambda x: np.sum((x - 1.0) ** 2 * np.linspace(1.0, 3.0, x.size)),
                        engine="numpy")
    x0 = np.zeros(n)
    scratch.release()  # start from an empty pool
    res = nad.minimize(obj, x0, method="trust-ncg", options={"maxiter": 5})
    assert res.nit == 5 and res.fun < obj.fun(x0)
    assert scratch._pool, "the run's workspace was not kept"
    kept = scratch._pool[-1]
    z = kept.vector("steihaug-z", n)
    res2 = nad.minimize(obj, x0, method="trust-ncg", options={"maxiter": 5})
    assert_close(res2.x, res.x, 0.0, 0.0)
    assert scratch._pool[-1] is kept and kept.vector("steihaug-z", n) is z


def test_workspace_holding_too_much_is_not_kept():
    scratch.release()
    big = scratch.Workspace()
    big.vector("v", scratch.KEEP_BYTES // 8 + 1)
    scratch.give_back(big)
    assert not scratch._pool
    rows = scratch.Workspace()
    path = rows.rows("path", 10_000, 1_000)  # vectors made as they are used
    path[2]
    assert rows.touched_bytes == 3 * 1_000 * 8
    assert rows.rows("path", 10_000, 1_000) is path
    scratch.give_back(rows)
    assert scratch._pool == [rows]
    assert scratch.borrow() is rows and not scratch._pool
    scratch.give_back(rows)
    scratch.release()
    assert not scratch._pool


@pytest.mark.parametrize("n", SIZES)
def test_first_cg_iteration_equals_the_one_from_zero_and_a_copy_bit_for_bit(n):
    """The first iteration writes z = alpha d and r = g + alpha H d without zeroing z or
    copying g first, and gets the very numbers cg_update gets from z = 0, r = g."""
    d, bd, g = _vectors(n, 3, seed=5)
    z, r = np.full(n, np.nan), np.full(n, np.nan)  # whatever a reused buffer held
    rr = 2.5
    curv, rr_new, r1 = linalg.truncated_cg_step(d.copy(), bd, z, r, g, rr, first=True)
    z0, r0 = np.zeros(n), g.copy()
    expected = linalg.cg_update(rr / curv, d, bd, z0, r0, l1=True)
    assert (rr_new, r1) == expected
    assert np.array_equal(z, z0) and np.array_equal(r, r0)


def test_one_by_one_trust_region_subproblem_matches_the_general_path(monkeypatch):
    """GLTR's first Lanczos step often ends a subproblem: the 1 x 1 case runs on floats
    (no array factorisation) and gives what the array path (LAPACK; c as an array takes
    it) gives, to rounding: an optimised LAPACK may fuse operations the float path rounds
    twice, so the two agree to a few ε of h and of |λ| + |t| (κ = 1 for one row), not
    necessarily to the bit."""
    from newtonad.solvers import tridiagonal
    from newtonad.solvers.tridiagonal import solve_tridiagonal_trs

    general_shift = tridiagonal._solve_shifted
    rng = np.random.default_rng(6)
    for _ in range(400):
        t = float(rng.choice([-1.0, 1.0, 1.0]) * 10.0 ** rng.uniform(-3, 3))
        t = 0.0 if rng.uniform() < 0.05 else t  # singular
        c = float(rng.choice([-1.0, 1.0]) * 10.0 ** rng.uniform(-3, 3))
        radius = float(10.0 ** rng.uniform(-3, 3))
        lam0 = float(rng.choice([0.0, 10.0 ** rng.uniform(-3, 3)]))
        monkeypatch.setattr(tridiagonal, "_solve_shifted", None)  # the float path only
        fast = solve_tridiagonal_trs(np.array([t]), np.empty(0), c, radius, lam0)
        monkeypatch.setattr(tridiagonal, "_solve_shifted", general_shift)
        general = solve_tridiagonal_trs(np.array([t]), np.empty(0), np.array([c]), radius, lam0)
        eps = np.finfo(float).eps
        assert np.allclose(fast.h, general.h, rtol=16 * eps, atol=0.0)
        assert abs(fast.lam - general.lam) <= 16 * eps * (abs(general.lam) + abs(t))
        assert fast.hits_boundary == general.hits_boundary
    # the hard case (c = 0 with t < 0) and nan: the general path, its own errors
    sol = solve_tridiagonal_trs(np.array([-2.0]), np.empty(0), 0.0, 0.5)
    assert sol.hits_boundary and abs(sol.h[0]) == pytest.approx(0.5) and sol.lam == 2.0
    with pytest.raises(ValueError, match="finite"):
        solve_tridiagonal_trs(np.array([np.nan]), np.empty(0), 1.0, 0.5)
