"""The auto engine's in-process path (no background worker): NumPy first, numba at the
hand-over call; same results either way. The background path: tests/test_tiered.py."""

from __future__ import annotations

import numpy as np
import pytest

import newtonad as nad
from newtonad.ad.engine import auto, compile_program
from newtonad.ad.transforms import value_and_grad_program


@pytest.fixture(autouse=True)
def compiled_here(monkeypatch):
    """These tests follow the in-process compile; a kernel another test left in the disk
    cache would be loaded instead (test_tier_disk_handover tests that path)."""
    monkeypatch.setattr(auto, "_on_disk", lambda program: False)


def test_auto_engine_moves_a_hot_program_to_numba(monkeypatch):
    monkeypatch.setenv("NEWTONAD_BACKGROUND", "0")  # compile in this process when hot
    monkeypatch.setattr(auto, "SUBMIT_SECONDS", 0.0)
    program = value_and_grad_program(nad.trace(lambda x: np.sum(np.sin(x) * x[::-1]), np.ones(7)))
    tiers = []
    real_compile = auto.compile_program

    def spy(p, engine):
        tiers.append(engine)
        return real_compile(p, engine)

    monkeypatch.setattr(auto, "compile_program", spy)
    monkeypatch.setattr(auto, "HANDOVER_CALLS", 3)
    run = compile_program(program, "auto")
    x = np.linspace(-1, 1, 7)
    first = run(x)
    assert tiers == []  # cold: the reference evaluator, no compile
    for _ in range(3):  # the second call sends it; the third and fourth still run NumPy
        run(x)
    assert tiers == [] and run.tier.state == "in-process" and run.tier.handover == 5
    hot = run(x)  # the hand-over call compiles, in this process
    assert tiers == ["numba"] and run.tier.state == "ready"
    hot = run(x)
    for a, b in zip(first, hot):
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-14)
    assert tiers == ["numba"]  # compiled once


def test_default_engine_is_auto_and_chosen_per_call():
    import os

    assert nad.settings.engine == os.environ.get("NEWTONAD_ENGINE", "auto")
    x = np.array([0.3, 0.7])
    for engine in ("numpy", "auto"):
        assert np.allclose(nad.grad(lambda x: np.sum(x ** 3), engine=engine)(x), 3 * x ** 2)


def test_auto_reusing_outputs_sibling(monkeypatch):
    monkeypatch.setenv("NEWTONAD_BACKGROUND", "0")
    monkeypatch.setattr(auto, "SUBMIT_SECONDS", 0.0)
    program = value_and_grad_program(nad.trace(lambda x: np.sum(x ** 3), np.ones(4)))
    run = compile_program(program, "auto")
    reusing = run.reusing_outputs()
    x1, x2 = np.linspace(-1, 1, 4), np.linspace(0, 2, 4)
    monkeypatch.setattr(auto, "HANDOVER_CALLS", 1)
    reusing(x1)
    a = reusing(x1)[1]  # sent to be compiled at this call, on NumPy
    b = reusing(x2)[1]  # the hand-over call: compiled, writing into the same arrays
    assert reusing.kernel is not None
    assert a is b  # the compiled tier writes into the same arrays
    np.testing.assert_allclose(b, 3 * x2 ** 2, rtol=1e-14)
    fresh = run(x1)[1]
    assert fresh is not run(x1)[1]  # the original runner still returns fresh arrays


def test_when_a_program_switches_is_counted_in_calls_never_timed(monkeypatch):
    """The tier's decisions read no clock: the call that sends a program to be compiled
    and its hand-over call follow from the cost models alone, so every run makes them at
    the same calls (and gives the same bits)."""
    import math

    from newtonad.ad.engine import tier_costs

    class NoClock:
        def perf_counter(self):
            raise AssertionError("the auto engine read the clock")

    monkeypatch.setenv("NEWTONAD_BACKGROUND", "0")  # compiled here, at the hand-over call
    monkeypatch.setattr(auto, "time", NoClock())
    monkeypatch.setattr(tier_costs, "COMPILE_BASE_SECONDS", 0.2)  # fewer calls to make
    program = value_and_grad_program(nad.trace(lambda x: np.sum(np.exp(x) * x), np.ones(300)))
    cost = tier_costs.numpy_seconds(program)
    sent = max(auto.SUBMIT_CALLS, math.ceil(auto.SUBMIT_SECONDS / cost - 1e-9))
    handover = sent + max(1, math.ceil(tier_costs.compile_seconds(program) / cost))
    run = compile_program(program, "auto")
    x = np.linspace(-1, 1, 300)
    for call in range(1, handover):
        run(x)
        assert run.tier.state == ("cold" if call < sent else "in-process"), call
    assert run.tier.handover == handover
    got = run(x)  # the hand-over call
    assert run.tier.state == "ready"
    np.testing.assert_allclose(got[1], np.exp(x) * (1 + x), rtol=1e-14)
