"""asv: time per Hessian-vector product inside the native solvers, on every problem.

Every problem of ``newtonad.problems`` at its largest size (``products_report.largest_size``:
n = 65536 for the scalable ones) and every native method run a few iterations on an
instrumented ``Objective`` that counts the products they ask for (see
``benchmarks/products_report.py``, which prints the same figures as a table). Tracked:

* ``track_seconds_per_product`` — the wall time inside the solver's inner loops (the
  products, getting the operator, the loops' vector work and set-up) divided by the
  products counted there (for trust-exact: inside ``hess`` / ``sparse_hess``, per
  column);
* ``track_seconds_in_products`` — of which inside the products themselves;
* ``track_apply_seconds`` — one linearised product alone (``linearize_hessp``'s apply);
* ``track_ratio`` — their ratio (the target: at most 1.5);
* ``track_products`` — the products counted.

Kernels are compiled in ``setup`` (a warm-up run), never in a tracked figure.
"""

from newtonad import problems

from .products_report import METHODS, measure

#: iterations per run: enough products to average, short enough for the whole grid
MAXITER = 3


class ProductsInSolvers:
    """One problem (at its largest size) and one native method."""

    params = [problems.names(), list(METHODS)]
    param_names = ["problem", "method"]
    tiny_params = [["rosenbrock"], ["trust-ncg"]]
    timeout = 900

    def setup(self, problem, method):
        self.row = measure(problem, method, MAXITER)
        if not self.row.products:  # converged at x0, or a path without products
            raise NotImplementedError(f"{method} asked {problem} for no products")

    def track_seconds_per_product(self, problem, method):
        return self.row.solver

    track_seconds_per_product.unit = "seconds"

    def track_seconds_in_products(self, problem, method):
        return self.row.in_products

    track_seconds_in_products.unit = "seconds"

    def track_apply_seconds(self, problem, method):
        return self.row.apply

    track_apply_seconds.unit = "seconds"

    def track_ratio(self, problem, method):
        return self.row.ratio

    track_ratio.unit = "ratio"

    def track_products(self, problem, method):
        return self.row.products

    track_products.unit = "products"
