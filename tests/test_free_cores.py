"""Parallel loops run on the cores other processes leave free, and give the same bits.

On a busy machine a parallel loop waits for its slowest thread, and a thread without a
core waits a scheduler time slice for one: :func:`run_parallel` runs a call on
:func:`free_cores` threads only. These tests check the rule, the reading of the
machine's load, that numba's thread setting is restored after each call, and that a
kernel's outputs are the same bits on every number of threads the rule can choose.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numba
import numpy as np
import pytest

import newtonad as nad
from newtonad.ad import transforms as tf
from newtonad.ad.engine import numba_engine, numba_threads
from newtonad.ad.engine.options import LoweringOptions

pytestmark = pytest.mark.usefixtures("module_kernel_cache")

#: Parallel loops from 256 iterations on two threads, whatever the machine.
SMALL_GATE = LoweringOptions(parallel_min_iterations=256, parallel_threads=2, cheap_launch=True)


@pytest.fixture
def fresh_reading(monkeypatch):
    """Every call of others_running reads the machine again."""
    monkeypatch.setattr(numba_threads, "_load_reading", [0.0, 0])
    monkeypatch.setattr(numba_threads, "LOAD_PERIOD", 0.0)


@pytest.mark.parametrize("cores, others, wanted, expected", [
    (2, 0, 2, 2), (2, 1, 2, 1), (2, 5, 2, 1), (2, 0, 1, 1),
    (8, 3, 8, 5), (8, 3, 4, 4), (8, 7, 8, 1), (64, 0, 2, 2)])
def test_free_cores_takes_off_the_cores_others_use(monkeypatch, cores, others, wanted,
                                                   expected):
    monkeypatch.setattr(numba_threads.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(numba_threads, "others_running", lambda: others)
    assert numba_threads.free_cores(wanted) == expected


@pytest.mark.skipif(not os.path.exists("/proc/loadavg"), reason="reads Linux's /proc")
def test_others_running_sees_a_busy_process(fresh_reading):
    """A process spinning on the CPU is seen within a second (the count is a snapshot of
    the run queue, so poll); this process's own threads are never counted."""
    before = numba_threads.others_running()
    assert before >= 0
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        deadline = time.monotonic() + 5.0
        seen = 0
        while time.monotonic() < deadline and seen < 1:
            time.sleep(0.05)
            seen = numba_threads.others_running()
        assert seen >= 1
    finally:
        busy.kill()
        busy.wait()


def test_a_reading_is_kept_for_its_period(monkeypatch):
    reads = []
    monkeypatch.setattr(numba_threads, "_load_reading", [0.0, 0])
    monkeypatch.setattr(numba_threads, "_running_here", lambda: reads.append(1) or 1)
    monkeypatch.setattr(numba_threads, "LOAD_PERIOD", 60.0)
    first = numba_threads.others_running()
    assert [numba_threads.others_running() for _ in range(5)] == [first] * 5
    assert len(reads) <= 1  # 0 where /proc is missing


@numba.njit(parallel=True)
def _threads_inside(x):
    total = 0.0
    for i in numba.prange(x.size):
        total += x[i]
    return numba.get_num_threads(), total


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two threads")
def test_a_call_runs_on_the_free_cores_and_restores_the_setting(monkeypatch):
    numba_threads.use_layer()
    x = np.ones(1000)
    wanted = numba.get_num_threads()
    assert numba_threads.run_parallel(_threads_inside, x)[0] >= 1  # compiled
    monkeypatch.setattr(numba_threads, "free_cores", lambda w: 1)
    assert numba_threads.run_parallel(_threads_inside, x) == (1, 1000.0)
    assert numba.get_num_threads() == wanted
    monkeypatch.setattr(numba_threads, "free_cores", lambda w: w)
    assert numba_threads.run_parallel(_threads_inside, x) == (wanted, 1000.0)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two threads")
def test_a_kernel_gives_the_same_bits_on_a_busy_and_a_quiet_machine(monkeypatch):
    """The runner of a kernel with parallel loops, with the machine seen as quiet (two
    threads) and as busy (one): sums over chunks in a fixed order, so the same bits."""
    def f(x):
        return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2) + np.sum(np.cos(x))

    x = np.random.default_rng(5).normal(size=4099)
    program = tf.value_and_grad_program(nad.trace(f, x))
    run = numba_engine.compile_program(program, SMALL_GATE)
    assert "prange" in run.source
    results = {}
    for others in (0, 99, 0, 99):
        monkeypatch.setattr(numba_threads, "others_running", lambda o=others: o)
        got = run(x)
        previous = results.setdefault(others, got)
        assert all(np.array_equal(a, b) for a, b in zip(previous, got))
    assert all(np.array_equal(a, b) for a, b in zip(results[0], results[99]))
