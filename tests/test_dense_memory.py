"""Dense Hessians and Jacobians that cannot fit in memory are refused before allocating.

The memory available is mocked small (``available_memory``) so small matrices stand in for
the 298 GiB ones that would get the process killed; nothing large is ever allocated.
"""

from __future__ import annotations

import numpy as np
import pytest

import newtonad as nad
from newtonad import _programs
from newtonad._programs import DenseTooLarge, available_memory, check_dense

N = 300  # a 300 x 300 float64 matrix: 0.72 MB


def f(x):
    return np.sum(x ** 4) + np.sum(x[1:] * x[:-1])


def g(x):
    return np.sin(x[1:]) * x[:-1]


@pytest.fixture
def small_memory(monkeypatch):
    """Half a megabyte available; the check is made at every size."""
    monkeypatch.setattr(_programs, "available_memory", lambda: 1 << 19)
    monkeypatch.setattr(_programs, "CHECK_FROM_BYTES", 0)


def refused(call, what, *alternatives):
    with pytest.raises(DenseTooLarge, match=rf"^{what}: a dense .* needs 0\.0 GiB") as info:
        call()
    message = str(info.value)
    assert "GiB of memory available" in message
    for alternative in alternatives:
        assert alternative in message
    assert isinstance(info.value, MemoryError)


def test_hessian_and_jacobian_are_refused(small_memory):
    x = np.linspace(-1.0, 1.0, N)
    refused(lambda: nad.hessian(f)(x), "nad.hessian", "sparse=True", "nad.hvp")
    refused(lambda: nad.jacobian(g)(x), "nad.jacobian", "sparse=True", "nad.jvp", "nad.vjp")


def test_the_objective_s_dense_hessian_is_refused(small_memory):
    x = np.linspace(-1.0, 1.0, N)
    obj = nad.Objective(f, engine="numpy")
    refused(lambda: obj.hess(x), "Objective.hess", "sparse=True", "hessp")
    assert obj.nhev == 0  # refused before any product


def test_sparse_and_product_forms_are_not_refused(small_memory):
    x = np.linspace(-1.0, 1.0, N)
    H = nad.hessian(f, sparse=True)(x)
    v = np.cos(np.arange(N))
    np.testing.assert_allclose(H @ v, nad.hvp(f, x, v), rtol=1e-13, atol=1e-13)
    sparse_obj = nad.Objective(f, engine="numpy", sparse=True)
    np.testing.assert_allclose(sparse_obj.hess(x) @ v, H @ v, rtol=1e-13, atol=1e-13)


def test_trust_exact_is_refused_before_its_first_hessian(small_memory):
    x0 = np.linspace(-1.0, 1.0, N)
    obj = nad.Objective(f, engine="numpy")
    with pytest.raises(DenseTooLarge, match="trust-exact.*trust-krylov"):
        nad.minimize(obj, x0, method="trust-exact")
    assert obj.nhev == 0


def test_what_fits_is_made_as_before(monkeypatch):
    # enough memory for the matrix: the same Hessian as from products
    monkeypatch.setattr(_programs, "available_memory", lambda: 8 * N * N * 3)
    monkeypatch.setattr(_programs, "CHECK_FROM_BYTES", 0)
    x = np.linspace(-1.0, 1.0, N)
    H = nad.hessian(f)(x)
    e = np.zeros(N)
    e[7] = 1.0
    np.testing.assert_allclose(H[:, 7], nad.hvp(f, x, e), rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(nad.Objective(f).hess(x), H, rtol=1e-14, atol=1e-14)


def test_the_size_in_the_message_is_the_matrix_s():
    # 200 000 variables: 298 GiB for the Hessian alone, more than any machine here has
    with pytest.raises(DenseTooLarge, match=r"200000 x 200000 float64 matrix needs 298\.0 GiB"):
        check_dense(200_000, 200_000, "nad.hessian", "")


def test_available_memory_is_a_positive_number_of_bytes():
    free = available_memory()
    assert isinstance(free, int) and free > 0
    with open("/proc/meminfo") as meminfo:
        total = next(int(line.split()[1]) * 1024 for line in meminfo
                     if line.startswith("MemTotal:"))
    assert free <= total
