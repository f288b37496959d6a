"""Long straight-line programs that do not re-roll (recurrences): derivatives, the cache of
derived programs across functions and Objectives, and new frame widths without deriving.

The programs are the non-loop ones of ``benchmarks/pipeline_report.py`` (an RK4 fit of
Lotka-Volterra, explicit Burgers steps, a recurrence of vector states), at small sizes.
"""

from __future__ import annotations

import numpy as np
import pytest

import newtonad as nad
from benchmarks.pipeline_report import make_burgers, make_recurrence, make_rk4_fit
from newtonad.ad import transforms as tf
from newtonad.ad.program import Slot
from newtonad.ad.trace import trace_function

from .helpers import assert_close, central_jvp

SMALL = {"rk4": lambda: make_rk4_fit(12),
         "burgers": lambda: make_burgers(10, grid=6),
         "recurrence": lambda: make_recurrence(blocks=3, stages=6, width=3)}


def _derivations(kind: str | None = None) -> int:
    return sum(tf.DERIVATIONS.values()) if kind is None else tf.DERIVATIONS[kind]


@pytest.mark.parametrize("name", sorted(SMALL))
def test_gradient_against_central_differences(name):
    f, x = SMALL[name]()
    value, g = nad.value_and_grad(f, engine="numpy")(x)
    assert_close(value, f(x), 1e-12, 1e-12, "value")
    eye = np.eye(x.size)
    fd = np.array([central_jvp(f, x, eye[i]) for i in range(x.size)])
    assert_close(g, fd, 1e-6, 1e-7, "gradient")


@pytest.mark.parametrize("name", sorted(SMALL))
def test_hvp_against_hessian_columns(name):
    f, x = SMALL[name]()
    H = nad.hessian(f, engine="numpy")(x)
    assert_close(H, H.T, 1e-10, 1e-10, "symmetry")
    grad = nad.grad(f, engine="numpy")
    eye = np.eye(x.size)
    for i in range(min(x.size, 4)):  # Hessian columns: differences of the gradient
        assert_close(H[:, i], central_jvp(grad, x, eye[i], eps=1e-5), 1e-5, 1e-6, f"col {i}")
    rng = np.random.default_rng(0)
    V = rng.standard_normal((x.size, 3))
    assert_close(nad.hvp(f, x, V, engine="numpy"), H @ V, 1e-10, 1e-10, "H V frame")
    assert_close(nad.hvp(f, x, V[:, 0], engine="numpy"), H @ V[:, 0], 1e-10, 1e-10, "H v")


@pytest.mark.parametrize("name", sorted(SMALL))
def test_new_frame_width_is_not_derived_again(name):
    f, x = SMALL[name]()
    rng = np.random.default_rng(1)
    V = rng.standard_normal((x.size, 9))
    first = nad.hvp(f, x, V[:, :3], engine="numpy")
    before = _derivations("hvp")
    for k in (2, 5, 9):
        HV = nad.hvp(f, x, V[:, :k], engine="numpy")
        assert_close(HV[:, :2], first[:, :2], 1e-12, 1e-12, f"width {k}")
    assert _derivations("hvp") == before


@pytest.mark.parametrize("name", sorted(SMALL))
def test_resized_frames_equal_derived_frames(name):
    f, x = SMALL[name]()
    program = trace_function(f, [Slot(x.shape)]).program
    tf.clear_caches()
    for kind in ("hvp", "linearized_hvp"):
        for k in (2, 4, 7):
            resized = tf._framed(kind, program, k)
            assert resized == tf._DIRECT[kind](program, k), (kind, k)


def test_new_frame_width_of_a_stack_of_more_rows_than_the_smallest_template_width():
    # the transpose of a 70-row stack slices rows 0..69: a template width among them
    # would be resized where it is a row index, not a frame axis
    f, x = make_recurrence(blocks=70, stages=1, width=1)
    program = trace_function(f, [Slot(x.shape)]).program
    assert tf._template_width(program) > 70
    rng = np.random.default_rng(2)
    V = rng.standard_normal((x.size, 4))
    first = nad.hvp(f, x, V[:, :2], engine="numpy")
    before = _derivations("hvp")
    HV = nad.hvp(f, x, V, engine="numpy")
    assert _derivations("hvp") == before
    assert_close(HV[:, :2], first, 1e-12, 1e-12, "width 4 against width 2")
    for j in range(4):  # each column against the product with one direction
        assert_close(HV[:, j], nad.hvp(f, x, V[:, j], engine="numpy"), 1e-12, 1e-12, f"col {j}")
    assert tf._framed("hvp", program, 3) == tf._DIRECT["hvp"](program, 3)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_second_objective_derives_nothing(name):
    f, x = SMALL[name]()
    v = np.linspace(-1, 1, x.size)
    first = nad.Objective(f, engine="numpy")
    expected = first.value_and_grad(x), first.hessp(x, v)
    before = _derivations()
    again, _ = SMALL[name]()  # the same code and values, a new function object
    for g in (f, again):
        obj = nad.Objective(g, engine="numpy")
        (value, grad), hv = obj.value_and_grad(x), obj.hessp(x, v)
        assert value == expected[0][0]
        np.testing.assert_array_equal(grad, expected[0][1])
        np.testing.assert_array_equal(hv, expected[1])
    assert _derivations() == before


RATE = 0.5
STEPS = 5


def decay(x):
    """Euler steps of x' = -RATE * x**3, STEPS of them, read from globals."""
    for _ in range(STEPS):
        x = x - 0.1 * RATE * x ** 3
    return np.sum(x ** 2)


def _decay_reference(x, rate, steps):
    for _ in range(steps):
        x = x - 0.1 * rate * x ** 3
    return np.sum(x ** 2)


def test_changed_globals_give_the_new_answer():
    global RATE, STEPS
    x = np.array([0.3, -0.7, 1.1])
    try:
        for rate, steps in ((0.5, 5), (0.9, 5), (0.9, 8)):
            RATE, STEPS = rate, steps
            value, grad = nad.Objective(decay, engine="numpy").value_and_grad(x)
            assert value == pytest.approx(_decay_reference(x, rate, steps), rel=1e-13)
            fd = [central_jvp(_decay_reference, x, e, args=(rate, steps)) for e in np.eye(3)]
            assert_close(grad, fd, 1e-6, 1e-8, f"gradient at RATE={rate}, STEPS={steps}")
    finally:
        RATE, STEPS = 0.5, 5


@pytest.mark.parametrize("name", sorted(SMALL))
def test_a_resized_frame_program_is_the_program_derived_at_that_width(name):
    # rewidth checks resized steps by their shape rules (answers kept per params; elementwise
    # ones are broadcasting); what it gives must be what deriving at the new width records,
    # step for step
    f, x = SMALL[name]()
    program = trace_function(f, [Slot(x.shape)]).program
    width = tf._template_width(program)
    for kind in ("hvp", "linearized_hvp"):
        template = tf._derived(kind, program, width)
        for k in (2, 5):
            derived = tf._derived(kind, program, k)
            if kind == "hvp":
                assert tf.rewidth(template, width, k) == derived
            else:
                assert tuple(tf.rewidth(p, width, k) for p in template) == derived
