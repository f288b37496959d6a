"""The ``auto`` engine's hand-over from the disk cache, and the earlier hand-over of
programs whose NumPy calls are expensive.

A kernel already in the disk cache is loaded in the caller's process at the hand-over
call (no background worker, no wait); an expensive program hands over after a share of
its modelled compile time. Neither changes which call runs the kernel first for a given
program, so the results are the same whatever the cache holds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import newtonad as nad
from newtonad.ad.engine import auto, background, compile_program, tier_costs
from newtonad.ad.transforms import value_and_grad_program

pytestmark = pytest.mark.usefixtures("module_kernel_cache")


def rosen(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def _program(n: int):
    return value_and_grad_program(nad.trace(rosen, np.ones(n)))


def test_an_expensive_program_hands_over_after_a_share_of_its_compile_time(monkeypatch):
    monkeypatch.setattr(auto, "HANDOVER_CALLS", None)
    tier = auto.Tier(_program(23))
    compile_s = tier_costs.compile_seconds(tier.program)
    monkeypatch.setattr(auto, "EXPENSIVE_CALL_SECONDS", math.inf)  # cheap: the whole time
    assert tier._handover_calls() == math.ceil(compile_s / tier.cost)
    monkeypatch.setattr(auto, "EXPENSIVE_CALL_SECONDS", 0.0)  # expensive: the share
    monkeypatch.setattr(auto, "HANDOVER_SHARE", 0.25)
    assert tier._handover_calls() == max(1, math.ceil(0.25 * compile_s / tier.cost))


def test_a_kernel_on_disk_is_loaded_here_at_the_hand_over_call(monkeypatch):
    """No worker is asked; the switch comes at the same call as through the worker."""
    import numba  # noqa: F401  (the disk is asked only once numba is imported)

    program = _program(31)
    x = np.linspace(-1.0, 1.0, 31)
    compile_program(program, "numba")  # the kernel and its metadata on disk
    assert auto._on_disk(program)
    submitted = []
    monkeypatch.setattr(background, "submit", lambda tier: submitted.append(tier) or True)
    monkeypatch.setattr(auto, "SUBMIT_CALLS", 1)
    monkeypatch.setattr(auto, "SUBMIT_SECONDS", 0.0)
    monkeypatch.setattr(auto, "HANDOVER_CALLS", 2)
    run = compile_program(program, "auto")
    reference = compile_program(program, "numpy")(x)
    first = run(x)  # call 1: sent, found on disk
    assert run.tier.state == auto.CACHED and run.tier.handover == 3 and not submitted
    run(x)  # call 2: still NumPy
    assert run.tier.state == auto.CACHED
    third = run(x)  # call 3: the kernel
    assert run.tier.state == auto.READY and run.kernel is not None
    assert first[0] == reference[0] and np.array_equal(first[1], reference[1])
    np.testing.assert_allclose(third[1], reference[1], rtol=1e-12, atol=1e-12)
    assert not submitted


def test_a_missing_disk_entry_at_the_hand_over_compiles_here(monkeypatch):
    """The entry was there when the program was sent and is gone at its hand-over."""
    import numba  # noqa: F401

    program = _program(37)
    x = np.linspace(-1.0, 1.0, 37)
    compile_program(program, "numba")
    monkeypatch.setattr(auto, "SUBMIT_CALLS", 1)
    monkeypatch.setattr(auto, "SUBMIT_SECONDS", 0.0)
    monkeypatch.setattr(auto, "HANDOVER_CALLS", 1)
    run = compile_program(program, "auto")
    run(x)
    assert run.tier.state == auto.CACHED
    monkeypatch.setattr(auto.Tier, "_load_cached", lambda self: False)
    run(x)
    assert run.tier.state == auto.READY and run.kernel is not None
