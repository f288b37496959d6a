"""Tiered execution (the ``auto`` engine): NumPy at once, the numba kernel compiled by a
background worker process, an invisible switch.

The worker is shared by the tests of one pytest process; each test that waits for a
kernel compiles one small program (about a second in the worker). The kernel cache is
a fresh directory for this module.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import newtonad as nad
from newtonad.ad import engine
from newtonad.ad.engine import auto, background, compile_program
from newtonad.ad.transforms import value_and_grad_program

from .builders import Builder

pytestmark = pytest.mark.usefixtures("module_kernel_cache")

WAIT = 240.0  # seconds a test waits for a background compile at most (a loaded CI box)


@pytest.fixture(autouse=True)
def through_the_worker(monkeypatch):
    """These tests follow a program through the background worker or an in-process
    compile; an earlier test of the module may have left its kernel in the disk cache,
    which the tier would load instead (test_tier_disk_handover tests that path)."""
    monkeypatch.setattr(auto, "_on_disk", lambda program: False)


def rosen(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def _program(f, n):
    """The value-and-gradient program of f at size n (each test uses its own n, so its
    program is its own)."""
    return value_and_grad_program(nad.trace(f, np.ones(n)))


@pytest.fixture
def eager(monkeypatch):
    """Send every program to the background compiler at its first call, and hand it over
    at the next."""
    monkeypatch.setattr(auto, "SUBMIT_CALLS", 1)
    monkeypatch.setattr(auto, "SUBMIT_SECONDS", 0.0)
    monkeypatch.setattr(auto, "HANDOVER_CALLS", 1)
    monkeypatch.delenv("NEWTONAD_BACKGROUND", raising=False)


@pytest.fixture
def own_worker():
    """A background compiler of the test's own (its worker is ended before and after)."""
    background.shutdown()
    yield
    background.shutdown()


def _until_compiled(run, x):
    run(x)  # (eager: this call sends it to the worker, if no call did yet)
    assert background.wait(WAIT), "the background compile did not finish"
    while run.tier.state == "queued":  # NumPy until the hand-over call
        run(x)
    assert run.tier.state == "ready", run.tier.reason
    assert run.kernel is not None


def test_one_call_never_compiles(monkeypatch):
    """A program called once runs on NumPy: nothing is compiled, no worker is asked."""
    submitted = []
    monkeypatch.setattr(background, "submit", lambda tier: submitted.append(tier) or True)
    program = _program(rosen, 9)
    run = compile_program(program, "auto")
    x = np.linspace(-1, 1, 9)
    value, grad = run(x)
    ref = compile_program(program, "numpy")(x)
    assert value == ref[0] and np.array_equal(grad, ref[1])
    assert run.tier.state == "cold" and submitted == []
    assert getattr(run, "kernel", None) is None


def test_hot_program_switches_to_the_kernel_with_the_same_results(eager):
    program = _program(lambda x: np.sum(np.sin(x) * x[::-1]) + rosen(x), 12)
    run = compile_program(program, "auto")
    x = np.linspace(-1.1, 0.9, 12)
    ref = compile_program(program, "numpy")(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the switch is silent
        before = run(x)
        assert run.tier.state in ("queued", "ready")
        _until_compiled(run, x)
        after = run(x)
    for a, b, r in zip(before, after, ref):
        np.testing.assert_array_equal(a, r)  # the NumPy tier is the reference evaluator
        np.testing.assert_allclose(b, r, rtol=1e-13, atol=1e-13)
    # the switched runner is the numba engine's runner, not a wrapper around it
    numba_run = compile_program(program, "numba")
    assert run.__code__.co_code == numba_run.__code__.co_code


def test_a_span_counts_the_switches_it_makes_not_the_compiles_it_sees(eager, monkeypatch):
    """A kernel the worker finishes is a switch only at its program's hand-over call: a
    span of calls (a solve) counts its own switches, never a kernel finished meanwhile
    for a program that switches later (or never)."""
    monkeypatch.setattr(auto, "HANDOVER_CALLS", 10**9)  # compiled, never switched to
    unused = compile_program(_program(lambda x: np.sum(np.tanh(x) * x), 14), "auto")
    x = np.linspace(-1, 1, 14)
    before = engine.timings()
    unused(x)
    assert background.wait(WAIT), "the background compile did not finish"
    seen = engine.timings() - before
    assert seen.background_compiles == 1 and seen.switches == 0
    assert unused.tier.state == "queued"  # ready, waiting for a call that never comes

    monkeypatch.setattr(auto, "HANDOVER_CALLS", 1)
    used = compile_program(_program(lambda x: np.sum(np.arctan(x) * x), 15), "auto")
    x = np.linspace(-1, 1, 15)
    before = engine.timings()
    _until_compiled(used, x)
    span = engine.timings() - before
    assert span.switches == 1 and span.switched_compile_seconds > 0.0
    assert span.switched_compile_seconds <= span.background_seconds


def test_out_and_reused_outputs_behave_the_same_before_and_after_the_switch(eager,
                                                                             monkeypatch):
    monkeypatch.setattr(auto, "HANDOVER_CALLS", 50)  # the first pass runs on NumPy
    program = _program(lambda x: np.sum(np.cos(x) * x ** 3), 6)
    run = compile_program(program, "auto")
    reusing = run.reusing_outputs()
    x1, x2 = np.linspace(-1, 1, 6), np.linspace(0, 2, 6)
    out = (np.empty(()), np.empty(6))
    bad = (np.empty(()), np.empty(5))
    results = {}
    for tier in ("numpy", "numba"):
        if tier == "numba":
            _until_compiled(run, x1)
            reusing(x1)
        got = run(x2, out=out)
        assert got[0] is out[0] and got[1] is out[1]
        np.testing.assert_allclose(out[1], 3 * x2 ** 2 * np.cos(x2) - x2 ** 3 * np.sin(x2),
                                   rtol=1e-13)
        with pytest.raises(ValueError, match=r"out\[1\] must be a writeable C-contiguous"):
            run(x2, out=bad)
        a = run(x1)[1]
        assert a is not run(x1)[1]  # fresh arrays per call
        results[tier] = reusing(x1)[1], reusing(x2)[1]
        assert results[tier][0] is results[tier][1]  # the same arrays every call
    assert results["numpy"][0] is results["numba"][0]  # ... the same ones across the switch
    assert reusing.kernel is not None


def test_numpy_tier_returns_arrays_the_caller_owns():
    """An output that is an input, a constant or repeated is still a fresh array."""
    b = Builder()
    x = b.input((3,))
    c = b.const(np.array([1.0, 2.0, 3.0]))
    b.ret(x, c, x)
    run = compile_program(b.build(), "auto")
    xv = np.array([4.0, 5.0, 6.0])
    got = run(xv)
    assert all(o.flags.writeable and o.flags.c_contiguous for o in got)
    assert got[0] is not xv and got[2] is not xv and got[0] is not got[2]
    got[1][:] = 0.0
    np.testing.assert_array_equal(run(xv)[1], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="call the API again to trace it at the new shape"):
        run(np.ones(4))  # inputs are checked as the numba engine checks them


def test_numpy_and_numba_engines_are_unchanged(monkeypatch):
    submitted = []
    monkeypatch.setattr(background, "submit", lambda tier: submitted.append(tier) or True)
    program = _program(rosen, 5)
    x = np.linspace(0, 1, 5)
    reference = compile_program(program, "numpy")
    for _ in range(3):
        reference(x)
    assert not hasattr(reference, "tier") and submitted == []
    before = engine.timings()
    run = compile_program(program, "numba")  # synchronous: compiled when it returns
    assert run.dispatcher is not None
    assert (engine.timings() - before).compile_seconds > 0.0


def test_default_engine_is_auto_and_the_environment_still_chooses():
    code = "import newtonad; print(newtonad.settings.engine)"
    env = {k: v for k, v in os.environ.items() if k != "NEWTONAD_ENGINE"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120).stdout.strip()
    assert out == "auto"
    env["NEWTONAD_ENGINE"] = "numpy"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120).stdout.strip()
    assert out == "numpy"


def test_program_without_numba_lowering_stays_on_numpy_silently(eager):
    def f(x):
        return np.sum(np.linalg.solve(np.outer(x, x) + 3 * np.eye(3), x))

    program = _program(f, 3)
    run = compile_program(program, "auto")
    x = np.array([0.3, -0.2, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run(x)
        assert background.wait(WAIT)
        got = run(x)
    assert run.tier.state == "numpy"
    np.testing.assert_array_equal(got[1], compile_program(program, "numpy")(x)[1])


def test_a_worker_that_dies_leaves_the_program_on_numpy(eager, own_worker, monkeypatch):
    """The worker greets, then dies on its first request: no error, NumPy results, the
    worker reaped."""
    dying = ("import os; from newtonad.ad.engine import background as b; "
             "b._send(1, ('hello', 0.0, '')); b._recv(0); os._exit(3)")
    monkeypatch.setattr(background, "_BOOTSTRAP", dying)
    program = _program(rosen, 7)
    run = compile_program(program, "auto")
    x = np.linspace(-0.5, 0.5, 7)
    run(x)
    worker = None
    deadline = time.monotonic() + WAIT
    while run.tier.state == "queued" and time.monotonic() < deadline:
        worker = background.compiler().worker or worker
        time.sleep(0.01)
    assert run.tier.state == "numpy" and "died" in run.tier.reason
    got = run(x)
    np.testing.assert_array_equal(got[1], compile_program(program, "numpy")(x)[1])
    assert background.compiler().worker is None  # ended and reaped
    assert worker is None or worker.returncode is not None


def test_no_worker_at_all_compiles_in_process_when_hot(eager, own_worker, monkeypatch):
    monkeypatch.setattr(background, "_BOOTSTRAP", "import os; os._exit(1)")  # never greets
    program = _program(rosen, 8)
    run = compile_program(program, "auto")
    x = np.linspace(-0.5, 0.5, 8)
    run(x)
    assert background.wait(WAIT)
    assert run.tier.state == "in-process"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run(x)  # the hand-over call: compiled here, synchronously
        got = run(x)
    assert run.tier.state == "ready" and run.kernel is not None
    np.testing.assert_allclose(got[1], compile_program(program, "numpy")(x)[1], rtol=1e-13)


def test_an_unwritable_cache_directory_uses_a_private_one(eager, monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("NEWTONAD_CACHE_DIR", str(blocker / "cache"))
    program = _program(rosen, 10)
    run = compile_program(program, "auto")
    x = np.linspace(-0.5, 0.5, 10)
    run(x)
    _until_compiled(run, x)
    assert not str(run.path).startswith(str(blocker))


SCRIPT = r"""
import json, sys, time
import numpy as np
import newtonad as nad
from newtonad.ad.engine import auto, background
auto.SUBMIT_CALLS, auto.SUBMIT_SECONDS = 1, 0.0
n = int(sys.argv[1])
def f(x):  # a loop: a long program, seconds to compile
    s = 0.0
    for i in range(n - 1):
        s = s + 100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2
    return s
x = np.linspace(-1, 1, n)
start = time.perf_counter()
g = nad.grad(f)(x)
first = time.perf_counter() - start
c = background.compiler()
while c.worker is None:
    time.sleep(0.01)
print(json.dumps({"first": first, "worker": c.worker.pid}), flush=True)
"""


def test_exit_does_not_wait_for_a_compile_and_ends_the_worker(tmp_path):
    env = dict(os.environ, NEWTONAD_CACHE_DIR=str(tmp_path), NEWTONAD_ENGINE="auto")
    env.pop("NEWTONAD_BACKGROUND", None)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(SCRIPT), "120"], env=env,
                          capture_output=True, text=True, timeout=120)
    wall = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert proc.stderr == ""
    with pytest.raises(ProcessLookupError):  # terminated and reaped by its parent
        os.kill(report["worker"], 0)
    assert wall < 60.0  # compiling the loop's gradient takes longer than the script


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_gets_its_own_worker_and_leaves_the_parents_alone(eager, tmp_path):
    failure = tmp_path / "child-failure.txt"  # what went wrong in the child, if anything
    x = np.linspace(-0.5, 0.5, 15)
    parent_run = compile_program(_program(rosen, 15), "auto")
    _until_compiled(parent_run, x)  # the parent's worker is running
    parent_worker = background.compiler().worker
    pid = os.fork()
    if pid == 0:  # the child: compile a program of its own, check it, end its worker
        status = 1
        try:
            import signal

            signal.alarm(int(WAIT))
            run = compile_program(_program(rosen, 16), "auto")
            xc = np.linspace(-0.5, 0.5, 16)
            run(xc)
            assert background.compiler().worker is not parent_worker
            _until_compiled(run, xc)
            got = run(xc)[1]
            ref = compile_program(run.program, "numpy")(xc)[1]
            status = 0 if np.allclose(got, ref, rtol=1e-13, atol=0) else 2
            background.shutdown()
        except BaseException:
            import traceback

            failure.write_text(traceback.format_exc())
        finally:
            os._exit(status)
    _, code = os.waitpid(pid, 0)
    why = failure.read_text() if failure.exists() else ""
    assert os.WIFEXITED(code) and os.WEXITSTATUS(code) == 0, why
    assert parent_worker.poll() is None  # the child did not end the parent's worker
    later = compile_program(_program(rosen, 17), "auto")
    _until_compiled(later, np.linspace(-0.5, 0.5, 17))


DISABLED = r"""
import warnings, numpy as np, newtonad as nad
warnings.simplefilter("error")
from newtonad.ad.engine import auto, background, compile_program
from newtonad.ad.transforms import value_and_grad_program
auto.SUBMIT_CALLS, auto.SUBMIT_SECONDS = 1, 0.0
p = value_and_grad_program(nad.trace(lambda x: np.sum(np.sin(x) * x), np.ones(5)))
run = compile_program(p, "auto")
x = np.linspace(0, 1, 5)
run(x); background.wait(120); run(x)
assert run.tier.state == "numpy", run.tier.state
assert np.allclose(run(x)[1], np.sin(x) + x * np.cos(x), rtol=1e-14, atol=0)
print("ok")
"""


def test_numba_disabled_leaves_programs_on_numpy_silently(tmp_path):
    env = dict(os.environ, NUMBA_DISABLE_JIT="1", NEWTONAD_CACHE_DIR=str(tmp_path))
    env.pop("NEWTONAD_BACKGROUND", None)
    proc = subprocess.run([sys.executable, "-c", DISABLED], env=env, capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
    assert proc.stderr == ""


def test_numpy_tier_is_as_silent_as_the_kernel_about_infinities():
    program = _program(lambda x: np.sum(np.log(x) + 1.0 / x), 4)
    run = compile_program(program, "auto")
    x = np.array([0.0, 1.0, 2.0, -1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value, grad = run(x)  # log(0), 1/0, log(-1): no RuntimeWarning
    assert np.isnan(value) and np.isnan(grad[0]) and grad[1] == 0.0 and grad[2] == 0.25


def test_a_program_the_compiler_let_go_compiles_here_at_its_hand_over(eager, own_worker,
                                                                      monkeypatch):
    """A program queued when the background compiler shuts down (or in a forked child,
    whose copy of the queue nobody serves) is compiled in this process at its hand-over
    call, instead of waiting there for a kernel that will never come."""
    monkeypatch.setattr(background.Compiler, "_manage", lambda self: None)  # never served
    monkeypatch.setattr(auto, "WAIT_SECONDS", 60.0)
    run = compile_program(_program(rosen, 19), "auto")
    x = np.linspace(-0.5, 0.5, 19)
    run(x)  # sent to the compiler
    assert run.tier.state == "queued" and background.tracking(run.tier)
    background.shutdown()
    assert not background.tracking(run.tier)
    got = run(x)  # the hand-over call
    assert run.tier.state == "ready" and "let it go" in run.tier.reason
    np.testing.assert_allclose(got[1], compile_program(run.program, "numpy")(x)[1], rtol=1e-13)
