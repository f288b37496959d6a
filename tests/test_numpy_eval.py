"""The NumPy evaluator's short cuts give the bits of running each step's ``impl`` plainly.

Scalar arithmetic runs on Python's operators and steps of one or two inputs are called
without an argument list; both must be invisible in the results: the outputs are
compared bit for bit (and by dtype) with a step-by-step run of the primitives' own
``impl``, on scalar programs with signed zeros, infinities, NaN and overflow. A NaN is
compared as a NaN: which operand's NaN an operation passes on (its sign and payload)
is the processor's choice, and NumPy's vector loops may order the operands otherwise.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from newtonad.ad import transforms as tf
from newtonad.ad.engine import numpy_eval
from newtonad.ad.program import Program, Slot
from newtonad.ad.trace import trace_function


def _plain(program: Program, *args):
    """Each step's ``impl`` on its inputs, in order: the evaluator's definition."""
    env = dict(zip(program.inputs, args))
    for step in program.steps:
        env[step.output] = step.primitive.impl(*[env[i] for i in step.inputs], **step.kwargs)
    return tuple(np.asarray(env[i]) for i in program.outputs)


def _scalar_mix(x):
    a, b, c = x[0], x[1], x[2]
    s = a * b - c
    for _ in range(5):
        s = -(s * a) + b * c - s / (c + 2.5)
        a, b = b - s, a + 1e3 * s
    return s * s + np.exp(-a * a) + np.sum(x * x)


POINTS = [np.array([0.5, -1.25, 0.2]), np.array([-0.0, 0.0, -0.0]),
          np.array([np.inf, 1.0, -2.0]), np.array([np.nan, 3.0, 1.0]),
          np.array([1e200, -1e200, 1e-300])]


@pytest.mark.parametrize("point", range(len(POINTS)))
def test_scalar_operators_and_direct_calls_give_the_impls_bits(point):
    x = POINTS[point]
    program = trace_function(_scalar_mix, [Slot((3,))]).program
    v = np.array([1.0, -0.5, 0.25])
    derived = [(program, (x,)), (tf.value_and_grad_program(program), (x,)),
               (tf.hvp_program(program, None), (x, v)),
               (tf.hvp_program(program, 3), (x, np.stack([v, -v, v * v], -1)))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # inf - inf, overflow: on purpose
        for p, args in derived:
            fast = numpy_eval.compile_program(p)(*args)
            plain = _plain(p, *args)
            assert len(fast) == len(plain)
            for a, b in zip(fast, plain):
                assert a.dtype == b.dtype and a.shape == b.shape
                assert np.array_equal(a, b, equal_nan=True)
                numbers = ~np.isnan(a)
                assert np.array_equal(np.signbit(a[numbers]), np.signbit(b[numbers]))


def test_scalar_steps_of_a_long_program_use_the_operators():
    program = trace_function(_scalar_mix, [Slot((3,))]).program
    hvp = tf.hvp_program(program, None)
    slots = hvp.slots
    scalar = [s for s in hvp.steps if s.primitive.name in ("add", "sub", "mul", "neg")
              and slots[s.output] == Slot(())
              and all(slots[i] == Slot(()) for i in s.inputs)]
    assert scalar, "the program has scalar arithmetic to run on operators"
    called = dict(zip(hvp.steps, numpy_eval.compile_program(hvp).impls))
    impls = {called[s] for s in scalar}
    assert not impls & {s.primitive.impl for s in scalar}
    # division and array steps keep their ufuncs
    for s in hvp.steps:
        if s.primitive.name == "div" or any(slots[i].shape for i in s.inputs):
            assert called[s] is s.primitive.impl
