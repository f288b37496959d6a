"""Shortcuts of the derivation passes give what the passes they skip give.

* ``fold_scalings`` writes only the steps it folds, and gives what recording every step
  again gives; a program it would record unchanged it returns as it is;
* the pullback made on live values (the jvp rules run on them, the tangents taped) is,
  to rounding, the transpose of the recorded unknown half of partial evaluation, and
  no longer;
* a second trace of the same code re-rolls nothing (the re-rolled program is kept).
"""

from __future__ import annotations

import collections

import numpy as np
import pytest

import newtonad as nad
import newtonad._programs as programs
from benchmarks.pipeline_report import make_burgers, make_recurrence, make_rk4_fit
from newtonad.ad import remat, reroll
from newtonad.ad import transforms as tf
from newtonad.ad.engine import numpy_eval
from newtonad.ad.program import Slot
from newtonad.ad.rebuild import build
from newtonad.ad.trace import trace_function
from newtonad.ad.var import Var

FUNCTIONS = {
    "rk4": lambda: make_rk4_fit(8),
    "burgers": lambda: make_burgers(6, grid=5),
    "recurrence": lambda: make_recurrence(blocks=3, stages=4, width=2),
    "scalings": lambda: (lambda x: -np.sum(-(x * 3.0) / 2.0 * x) + np.sum(2.0 * x * x[0]),
                         np.linspace(0.5, 1.5, 4)),
    "matrix": lambda: (lambda x: np.sum((np.arange(12.0).reshape(3, 4) @ x - 1.0) ** 2)
                       + np.sum(np.tanh(x)[::2] / (x[1:3].sum() + 2.0)), np.ones(4)),
    "constant": lambda: (lambda x: np.sum(x * 0.0) + 3.0, np.ones(3)),
}


def _same(p, q) -> bool:
    return (p.slots, p.steps, p.inputs, p.outputs) == (q.slots, q.steps, q.inputs, q.outputs) \
        and str(p) == str(q)


def _jvps(name):
    f, x = FUNCTIONS[name]()
    traced = trace_function(f, [Slot(x.shape)])
    program = traced.program
    for base in (program, tf.value_and_grad_program(program)):
        for k in (None, 3):
            known = [True] * len(base.inputs) + [False]
            yield base, known, tf.jvp_program(base, k)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_fold_scalings_without_its_pass_records_what_the_pass_records(name):
    for base, known, jp in _jvps(name):
        kind = remat.slot_kinds(jp, known)
        readers = collections.Counter(i for s in jp.steps for i in s.inputs)
        readers.update(jp.outputs)
        for keep in (None, [0, len(base.outputs)]):
            fast = tf.fold_scalings(jp, known, keep)
            outputs = jp.outputs if keep is None else [jp.outputs[j] for j in keep]
            assert _same(fast, tf._fold_scalings_recorded(jp, kind, readers, outputs))


def test_fold_scalings_finds_the_chains_it_folds():
    # -(x' * 3 / 2) is one scaling of x' by -1.5 once folded: one multiplication by a
    # known factor instead of three steps
    p = trace_function(lambda x: np.sum(-(x * 3.0) / 2.0 * x), [Slot((4,))]).program
    known = [True, False]
    jp = tf.jvp_program(p, None)
    folded = tf.fold_scalings(jp, known)
    assert len(folded.steps) < len(jp.steps)
    x, v = np.linspace(0.5, 1.5, 4), np.cos(np.arange(4.0))
    run = lambda q: numpy_eval.compile_program(q)(x, v)  # noqa: E731
    for a, b in zip(run(folded), run(jp)):
        np.testing.assert_allclose(a, b, rtol=1e-15)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_live_pullback_is_the_recorded_pullback(name):
    """The pullback made on live values (the jvp rules run on them, the tangents taped,
    folded and transposed) against the three passes it skips, each recorded as a
    program: the jvp program folded, its unknown half, that half's transpose. The two
    sum cotangents in different orders, so values agree to rounding; the live one is
    no longer."""
    f, x = FUNCTIONS[name]()
    traced = trace_function(f, [Slot(x.shape)])
    program = traced.program
    captured = [np.asarray(v.value) for v in traced.closed]  # the values f read outside x
    rng = np.random.default_rng(0)
    for k in (None, 3):
        known = [True] * len(program.inputs) + [False]
        jp = tf.fold_scalings(tf.jvp_program(program, k), known)
        split = tf._split(jp, known, 1, remat=False)
        linear = tf._unknown_half(jp, split, 1)
        pullback = tf.transpose_program(linear, [False] * (len(linear.inputs) - 1) + [True])
        for given in ("tracer", "one"):
            xs = tf._tracers(program.in_slots)
            if given == "one" and k is None:
                ws = [Var(np.ones(()), const=True)]
            else:
                ws = tf._tracers([tf.frame_slot(program.out_slots[0], k)])
            outs = tf._known_half(jp, split, xs, 1, tf._simplified_step)
            recorded = outs[:1] + tf._simplified(pullback, [*xs, *outs[1:], *ws])
            roots = xs if given == "one" and k is None else [*xs, *ws]
            live = build(roots, tf._pulled(program, k, (0,), xs, ws))
            reference = build(roots, recorded)
            assert len(live.steps) <= len(reference.steps)
            point = [x * (1.0 + 0.01 * rng.standard_normal(x.shape)), *captured] + \
                [rng.standard_normal(r.shape) for r in roots[len(xs):]]
            for a, b in zip(numpy_eval.compile_program(live)(*point),
                            numpy_eval.compile_program(reference)(*point)):
                assert np.all(np.isfinite(b))
                np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13 * np.max(np.abs(b)))


def test_live_pullback_is_the_adjoint_of_the_jvp():
    """<J v, w> = <v, J^T w> for the Jacobian of a vector-valued program, the vjp made by
    the live pullback and the jvp by the jvp program."""
    f = lambda x: np.tanh(x[::-1] * x) / (2.0 + np.cos(x)) - 3.0 * x ** 3  # noqa: E731
    x = np.linspace(-0.7, 0.9, 6)
    program = trace_function(f, [Slot(x.shape)]).program
    rng = np.random.default_rng(1)
    v, w = rng.standard_normal(6), rng.standard_normal(6)
    jv = numpy_eval.compile_program(tf.jvp_program(program, None))(x, v)[1]
    jtw = numpy_eval.compile_program(tf.vjp_program(program, None))(x, w)[1]
    assert np.dot(jv, w) == pytest.approx(np.dot(v, jtw), rel=1e-14)


def test_a_program_without_scaling_chains_is_not_folded_again():
    # the tangent x' * exp(x) is one scaling, written as fold_scalings writes it
    p = trace_function(lambda x: np.sum(np.exp(x)), [Slot((3,))]).program
    jp = tf.jvp_program(p, None)
    assert tf.fold_scalings(jp, [True, False]) is jp


def test_second_trace_of_the_same_code_re_rolls_nothing(monkeypatch):
    calls = []
    real = reroll.reroll
    monkeypatch.setattr(reroll, "reroll", lambda p: calls.append(p) or real(p))
    programs.rerolled.cache_clear()
    f, x = make_rk4_fit(20)
    g, _ = make_rk4_fit(20)  # the same code and data, another function object
    first = nad.Objective(f, engine="numpy").value_and_grad(x)
    second = nad.Objective(g, engine="numpy").value_and_grad(x)
    assert len(calls) == 1
    assert first[0] == second[0] and np.array_equal(first[1], second[1])
