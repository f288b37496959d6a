"""Numerical checks shared by the AD tests (after autograd's ``check_grads``)."""

from __future__ import annotations

import numpy as np

import newtonad as nad

RNG_SEED = 20261129


def central_jvp(f, x, v, args=(), eps=1e-6):
    """Directional derivative by central differences (O(eps²) truncation error)."""
    x = np.asarray(x, dtype=float)
    fp = np.asarray(f(x + eps * v, *args), dtype=float)
    fm = np.asarray(f(x - eps * v, *args), dtype=float)
    return (fp - fm) / (2 * eps)


def assert_close(a, b, rtol=1e-6, atol=1e-7, what=""):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape, f"{what}: shapes {a.shape} vs {b.shape}"
    scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
    err = float(np.max(np.abs(a - b), initial=0.0))
    assert err <= atol + rtol * scale, f"{what}: max error {err:.3e} (scale {scale:.3e})"


def check_jvp(f, x, args=(), k=3, rtol=1e-5, atol=1e-6, seed=RNG_SEED):
    """Each column of a k-column jvp frame against central differences."""
    rng = np.random.default_rng(seed)
    V = rng.standard_normal(np.shape(x) + (k,))
    _, JV = nad.jvp(f, x, V, args)
    for j in range(k):
        assert_close(JV[..., j], central_jvp(f, x, V[..., j], args), rtol, atol, f"jvp column {j}")
    return V, JV


def check_vjp_vs_jvp(f, x, args=(), k=3, seed=RNG_SEED):
    """<W, J V> == <J^T W, V> for random frames: reverse agrees with forward.

    ``k`` is check_jvp's, so the jvp frame program is the one already compiled there."""
    rng = np.random.default_rng(seed + 1)
    V = rng.standard_normal(np.shape(x) + (k,))
    y, JV = nad.jvp(f, x, V, args)
    W = rng.standard_normal(np.shape(y) + (k,))
    _, JtW = nad.vjp(f, x, W, args)
    lhs = W.reshape(-1, k).T @ JV.reshape(-1, k)
    rhs = JtW.reshape(-1, k).T @ V.reshape(-1, k)
    assert_close(lhs, rhs, 1e-9, 1e-9, "vjp vs jvp")


def check_hvp(f, x, args=(), k=2, rtol=1e-4, atol=1e-5, seed=RNG_SEED):
    """H V against central differences of the gradient."""
    rng = np.random.default_rng(seed + 2)
    V = rng.standard_normal(np.shape(x) + (k,))
    HV = nad.hvp(f, x, V, args)
    g = nad.grad(f)
    for j in range(k):
        assert_close(HV[..., j], central_jvp(g, x, V[..., j], args, eps=1e-5), rtol, atol,
                     f"hvp column {j}")
    return HV


def check_grads(f, x, args=(), order=2):
    """autograd-style: forward and reverse against differences, to ``order``."""
    x = np.asarray(x, dtype=float)
    check_jvp(f, x, args)
    check_vjp_vs_jvp(f, x, args)
    if order >= 2 and np.shape(nad.trace(f, x, *args).out_slots[0].shape) == (0,):
        check_hvp(f, x, args)

