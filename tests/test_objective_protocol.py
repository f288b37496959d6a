"""The declared objective interface (``newtonad.objective_protocol``) and the settings.

Every objective the solvers see declares :class:`Capabilities` and has the members of
:class:`ObjectiveProtocol`; hand-written objects and plain callables go through the one
adapter; the dense Hessian from blocks of products is right for every block size; the
solvers ask no objective what it has (no ``hasattr`` / ``getattr`` in ``solvers/``);
``newtonad.settings.override`` changes the default engine for a block only.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import rosen, rosen_der, rosen_hess

import newtonad as nad
from newtonad.objective_protocol import (
    CallableObjective,
    Capabilities,
    ObjectiveProtocol,
    SparseHessianObjective,
    as_objective,
    dense_hessian,
    is_objective,
)
from newtonad.solvers.derivatives import CombinedObjective, DirectObjective
from newtonad.solvers.problem import FlatProblem

from .builders import rosen_start, rosenbrock
from .helpers import assert_close

SOLVERS = Path(nad.__file__).resolve().parent / "solvers"
#: solver modules another session owns, whose probes are replaced there (the
#: replacement is ``problem.capabilities.sparse_hess`` in preconditioners.py and
#: ``np.ndim(value)`` in auglag.py); this set only shrinks
PENDING_PROBES: set[str] = set()


def chained_rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _members(protocol: type) -> set[str]:
    return {name for name in vars(protocol) if not name.startswith("_")}


REQUIRED = _members(ObjectiveProtocol)
SPARSE = _members(SparseHessianObjective)


def _declared(obj):
    assert isinstance(obj.capabilities, Capabilities), type(obj).__name__
    missing = {name for name in REQUIRED if not callable(getattr(obj, name, None))
               and name != "capabilities"}
    assert not missing, (type(obj).__name__, missing)
    has_sparse = all(callable(getattr(obj, name, None)) for name in SPARSE)
    assert has_sparse == obj.capabilities.sparse_hess, type(obj).__name__


def test_the_protocol_names_what_the_solvers_read():
    assert REQUIRED == {"capabilities", "fun", "jac", "value_and_grad", "hessp",
                        "linearize_hessp", "hess", "counters"}
    assert SPARSE == {"sparse_hess", "hess_sparsity"}


def test_objective_and_its_fallback_implement_the_protocol():
    obj = nad.Objective(chained_rosenbrock, engine="numpy")
    _declared(obj)
    assert as_objective(obj) is obj

    def untraceable(x):
        return float(x[0]) ** 2 + float(x[1]) ** 2

    fallback = nad.Objective(untraceable, engine="numpy")
    with pytest.warns(nad.TraceFallbackWarning):
        fallback.fun(np.array([1.0, 2.0]))
    assert type(fallback).__name__ == "UntracedObjective"
    _declared(fallback)
    x = np.array([1.0, 2.0])
    # differences of a differenced gradient: about the square root of its error
    assert_close(fallback.hess(x), 2 * np.eye(2), 1e-3, 1e-3)
    assert set(fallback.counters()) == {"nfev", "njev", "nhev"}


def test_objectives_minimize_builds_declare_what_they_give():
    combined = CombinedObjective(rosen, (), rosen_der, None, None,
                                 lambda f: nad.Objective(f, engine="numpy"))
    _declared(combined)
    assert set(combined.counters()) == {"nfev", "njev", "nhev", "nhvp"}
    direct = DirectObjective(rosen, ())
    assert direct.capabilities == Capabilities(gradient=False)
    assert direct.counters() == {"nfev": 0}


def test_finite_sum_declares_products_and_no_sparse_hessian():
    from newtonad.finite_sum import FiniteSum

    caps = FiniteSum.capabilities
    assert caps.products and caps.linearized_products and caps.hess
    assert not caps.sparse_hess
    assert not any(callable(getattr(FiniteSum, name, None)) for name in SPARSE)
    assert all(callable(getattr(FiniteSum, name, None)) for name in REQUIRED
               if name != "capabilities")


def test_adapter_of_plain_callables_derives_the_rest():
    x = rosen_start(6)
    obj = CallableObjective(rosen, rosen_der, hessp=lambda x, p: rosen_hess(x) @ p)
    assert obj.capabilities == Capabilities(products=True)
    f, g = obj.value_and_grad(x)
    assert f == rosen(x) and np.array_equal(g, rosen_der(x))
    # the dense Hessian from products with identity columns is the analytic one
    assert_close(obj.hess(x), rosen_hess(x), 1e-12, 1e-12)
    only_matrix = CallableObjective(rosen, rosen_der, hess=rosen_hess)
    assert only_matrix.capabilities.hess and not only_matrix.capabilities.products
    with pytest.raises(NotImplementedError):
        only_matrix.hessp(x, x)
    with pytest.raises(TypeError, match="hessp"):
        CallableObjective(rosen, rosen_der)


def test_adapter_of_a_hand_written_object_reads_its_methods_once():
    hand = rosenbrock()
    assert is_objective(hand) and not is_objective(rosen)
    adapted = as_objective(hand)
    _declared(adapted)
    caps = adapted.capabilities
    assert caps.value_and_grad and caps.linearized_products and caps.products and caps.hess
    assert not caps.reuse_output and not caps.sparse_hess
    x = rosen_start(5)
    adapted.value_and_grad(x)
    adapted.hessp(x, x)
    assert adapted.counters() == {"nfev": 1, "njev": 1, "nhev": 1}  # the object's own
    with pytest.raises(TypeError, match="not an objective"):
        as_objective(object())


def test_dense_hessian_from_blocks_of_every_size():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((12, 12))
    h = a + a.T
    shape = (3, 4)

    def products(V):
        assert V.shape[:2] == shape
        return (h @ V.reshape(12, -1)).reshape(V.shape)

    for block_elements in (1, 12, 13, 50, 144, 10**6):  # 1 column up to all 12
        assert np.array_equal(dense_hessian(products, shape, block_elements), h)


@pytest.mark.parametrize("method", ["trust-exact", "trust-ncg"])
def test_an_object_with_products_only_solves_as_before(method):
    """A hand-written object without ``hess``: trust-exact builds its Hessian from
    products (counted as products by the object), trust-ncg uses them directly."""

    class ProductsOnly:
        def __init__(self):
            self.nhev = 0

        def fun(self, x):
            return rosen(x)

        def jac(self, x):
            return rosen_der(x)

        def hessp(self, x, p):
            self.nhev += 1 if p.ndim == 1 else p.shape[1]
            return rosen_hess(x) @ p

    obj = ProductsOnly()
    res = nad.minimize(obj, rosen_start(4), method=method, options={"gtol": 1e-8})
    assert res.success, res.message
    assert_close(res.x, np.ones(4), 1e-6, 1e-6)
    assert res.nhvp == obj.nhev > 0


def test_flat_problem_reads_capabilities_not_attributes():
    obj = nad.Objective(chained_rosenbrock, engine="numpy", sparse=True)
    problem = FlatProblem(obj, (4,))
    assert problem.objective is obj
    assert problem.capabilities.sparse_requested and problem.capabilities.reuse_output
    assert problem.sparse_factor_cache is None and problem.sparse_ordering is None
    x = rosen_start(4)
    assert_close(problem.sparse_hess(x).toarray(), rosen_hess(x), 1e-12, 1e-12)


def test_no_solver_asks_an_objective_what_it_has():
    probes = {}
    for path in sorted(SOLVERS.glob("*.py")):
        found = [i + 1 for i, line in enumerate(path.read_text().splitlines())
                 if re.search(r"\b(hasattr|getattr)\(", line)]
        if found:
            probes[path.name] = found
    assert set(probes) <= PENDING_PROBES, probes


def test_settings_override_changes_the_engine_for_a_block_only():
    before = nad.settings.engine
    with nad.settings.override(engine="numpy") as settings:
        assert settings is nad.settings and nad.settings.engine == "numpy"
        assert nad.Objective(chained_rosenbrock).engine == "numpy"
        with nad.settings.override(engine="numba"):
            assert nad.settings.engine == "numba"
        assert nad.settings.engine == "numpy"
    assert nad.settings.engine == before
    with pytest.raises(RuntimeError, match="inside"), nad.settings.override(engine="numpy"):
        raise RuntimeError("inside the block")
    assert nad.settings.engine == before
    with pytest.raises(AttributeError, match="unknown setting"):
        with nad.settings.override(engin="numpy"):
            pass
    with pytest.raises(TypeError, match="engine"):
        nad.settings.engine = None
    assert nad.settings.engine == before


def test_the_default_engine_is_read_at_each_call(monkeypatch):
    """``grad(f)`` made outside the block runs on the engine in force when it is called."""
    from newtonad._programs import run_derived

    seen = []

    def spy(*args, **kwargs):
        seen.append(args[4])  # run_derived(traced, kind, k, make, engine, x, args)
        return run_derived(*args, **kwargs)

    import newtonad.api

    monkeypatch.setattr(newtonad.api, "run_derived", spy)
    g = nad.grad(chained_rosenbrock)
    with nad.settings.override(engine="numpy"):
        assert_close(g(rosen_start(3)), rosen_der(rosen_start(3)), 1e-12, 1e-12)
    assert "numpy" in seen
