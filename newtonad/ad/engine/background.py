"""The background compiler: numba kernels built in a worker process, off the caller's path.

The ``auto`` engine (:mod:`.auto`) runs a program on the NumPy evaluator and hands it
here once it is worth compiling (:func:`submit`). One worker process, started on the
first reuse of a program (:func:`prewarm`), lowers and compiles one program at a time
with the numba engine and writes the kernel to the disk cache (:mod:`.numba_cache`); a
thread of this process (the *manager*) feeds the worker (the queued program with the
most NumPy time first), waits for it, and loads each finished kernel from the cache —
milliseconds, where compiling takes seconds — then hands the runner to the program's
tier, which switches to it on its next call. This process imports numba only then,
when a first kernel is ready: a solve that ends sooner never pays for it.

Why a process and not a thread: numba holds the GIL for most of a compile, so a
compiling thread takes turns with the caller's thread. Measured here (vectorised
Rosenbrock's value and gradient, n = 100, fresh processes, medians of three on a loaded
2-core machine): while a thread compiled the kernel (3-5 s), the caller made 17 000 NumPy
calls per second, against 30 000 without a compile; while the worker process compiled
it (hand-over included), 27 000.
Loading a finished kernel (numba's import, 0.3-0.8 s once per process, then 5-100 ms
per kernel) is still done by the manager thread, so it interleaves with the caller.

The worker is run with ``python -c`` (:func:`serve`), not by ``multiprocessing``: the
``spawn`` and ``forkserver`` start methods re-import the user's main script in the
child, and ``fork`` would copy a process that may hold numba's threads. It takes
requests on its standard input and answers on a private copy of its standard output
(its own ``sys.stdout`` goes to ``/dev/null``, so a stray print cannot corrupt the
protocol); it runs at a lower priority (``nice``), in a session of its own (a Ctrl-C
at the terminal is for the caller), and exits when its input closes or its parent
goes away.

Nothing here can fail a user's call. A program the worker cannot compile (a primitive
without numba lowering, a numba error) stays on NumPy; a worker that dies while
compiling a program leaves that program on NumPy and is restarted for the others
(up to :data:`MAX_CRASHES` times); when no worker can run at all (it cannot be started,
``NEWTONAD_BACKGROUND=0``), the tiers compile synchronously once hot, as the ``auto``
engine did before. At exit the worker is terminated (then killed, and always reaped),
so the interpreter never waits for a compile and leaves no zombie; a cache directory
that cannot be written is replaced by a private temporary one, shared with the worker
(see :func:`.numba_cache.effective_cache_dir`).
"""

from __future__ import annotations

import atexit
import io
import logging
import os
import pickle
import struct
import subprocess
import sys
import threading
import time
import weakref
from typing import Any, Protocol

from ..program import Program

#: Set to ``0`` to compile in the caller's process instead (synchronously, once hot).
ENV_VAR = "NEWTONAD_BACKGROUND"
#: A file to append the worker's standard error to (for debugging; default: discarded).
LOG_ENV = "NEWTONAD_BACKGROUND_LOG"
#: Worker deaths in one process after which background compilation is given up.
MAX_CRASHES = 2
#: Niceness added to the worker: it yields the CPU to the caller's work.
NICENESS = 5
#: Seconds the worker gets to exit after SIGTERM before it is killed.
TERMINATE_SECONDS = 1.0
#: Seconds the interpreter waits at exit for the manager thread to finish loading a kernel.
EXIT_JOIN_SECONDS = 10.0

_HEADER = struct.Struct("<Q")
_log = logging.getLogger("newtonad")
#: Held by the manager thread while it imports numba or loads a kernel, and by
#: ``os.fork`` (see the end of the module): a child forked meanwhile would inherit
#: numba's compiler lock, or a module's import lock, held by a thread it does not have.
_NUMBA_IN_USE = threading.Lock()
#: The worker imports the newtonad package its parent runs (its directory, in this
#: environment variable), wherever that is on the parent's ``sys.path``.
_PACKAGE_ENV = "NEWTONAD_WORKER_PACKAGE"
_BOOTSTRAP = ("import os, sys; root = os.path.dirname(os.environ['NEWTONAD_WORKER_PACKAGE']); "
              "sys.path.insert(0, root) if root not in sys.path else None; "
              "from newtonad.ad.engine.background import serve; serve()")


class Tier(Protocol):
    """What the background compiler needs of a program's tier (see :mod:`.auto`)."""

    program: Program
    work: float     # modelled NumPy seconds so far: the most to gain is compiled first
    waiting: bool   # a caller waits for this kernel at its hand-over call

    def ready(self, runner: Any, seconds: float) -> None: ...  # compiled in seconds: switch
    def stay_on_numpy(self, reason: str) -> None: ...  # this program is not compiled
    def compile_when_hot(self, reason: str) -> None: ...  # no background: compile in-process


# ---- wire format ------------------------------------------------------------------------------

def _primitive(name: str) -> Any:
    """The primitive called ``name`` in this process (the worker's side of pickling)."""
    from ..primitives import REGISTRY

    try:
        return REGISTRY[name]
    except KeyError:
        raise LookupError(f"primitive {name!r} is not registered in the worker") from None


def dumps_program(program: Program, options: Any = None) -> bytes:
    """``program`` and its lowering options (``None``: the worker's current ones) as
    bytes; primitives travel by name."""
    from ..primitives.core import Primitive

    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = {Primitive: lambda p: (_primitive, (p.name,))}
    pickler.dump((program.slots, program.steps, program.inputs, program.outputs, options))
    return buf.getvalue()


def loads_program(data: bytes) -> tuple[Program, Any]:
    """The inverse of :func:`dumps_program` (its hash is recomputed in this process)."""
    slots, steps, inputs, outputs, options = pickle.loads(data)
    return Program.checked_by_construction(slots, steps, inputs, outputs), options


def _send(fd: int, message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def _read_exactly(fd: int, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None  # the other end closed
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _recv(fd: int) -> Any | None:
    """The next message on ``fd``, or ``None`` when the other end is gone."""
    head = _read_exactly(fd, _HEADER.size)
    if head is None:
        return None
    body = _read_exactly(fd, _HEADER.unpack(head)[0])
    return None if body is None else pickle.loads(body)


# ---- the worker process -----------------------------------------------------------------------

def _exit_with_parent(parent: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(0)


def serve() -> None:
    """The worker's main loop: compile each program it is sent, answer with the outcome.

    Requests on file descriptor 0, answers on the process's original standard output;
    see the module docstring. Each answer is ``(status, seconds, detail, options)``:
    ``"ok"`` (the kernel is in the disk cache, lowered with ``options``: the request's,
    else this process's current ones), ``"numpy"`` (the numba engine would run the
    program with NumPy) or ``"error"``.
    """
    import warnings

    replies = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # nothing printed in here can reach the protocol
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    try:
        os.nice(NICENESS)
    except (AttributeError, OSError):  # pragma: no cover (not on every platform)
        pass
    warnings.simplefilter("ignore")  # the caller's process decides what to tell its user
    try:
        import numba  # noqa: F401  (the import is part of every compile: pay it before)

        import newtonad

        from . import numba_cache, numba_engine
        from .options import LoweringOptions
    except BaseException as exc:  # noqa: BLE001
        _send(replies, ("broken", 0.0, f"{type(exc).__name__}: {exc}"))
        return
    expected = os.environ.get(_PACKAGE_ENV)
    if expected and os.path.dirname(os.path.abspath(newtonad.__file__)) != expected:
        _send(replies, ("broken", 0.0, "another newtonad package was imported"))
        return
    _send(replies, ("hello", 0.0, str(os.getpid())))
    while True:
        request = _recv(0)
        if request is None:
            return
        start = time.perf_counter()
        options = None
        try:
            payload, cache_root = request
            os.environ[numba_cache.ENV_VAR] = cache_root  # where the caller will look
            program, options = loads_program(payload)
            options = options or LoweringOptions.current()
            # not through the in-memory cache: the kernel must be on disk where asked
            run = numba_engine.compile_uncached(program, options)
            status = "ok" if getattr(run, "dispatcher", None) is not None else "numpy"
            detail = ""
        except Exception as exc:  # noqa: BLE001  (reported, never raised)
            status, detail = "error", f"{type(exc).__name__}: {exc}"
        _send(replies, (status, time.perf_counter() - start, detail, options))


# ---- the caller's side ------------------------------------------------------------------------

class _Job:
    __slots__ = ("tier", "seq")

    def __init__(self, tier: Tier, seq: int):
        self.tier = weakref.ref(tier)  # a program nobody runs any more is not compiled
        self.seq = seq


def enabled() -> bool:
    """Whether programs may be compiled in a worker process (``NEWTONAD_BACKGROUND``)."""
    return os.environ.get(ENV_VAR, "1").strip().lower() not in ("0", "false", "no", "off")


class Compiler:
    """The worker process, its manager thread and the queue of programs to compile.

    One per process (:func:`compiler`); a forked child gets a fresh one.
    """

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.lock = threading.Condition()
        self.pending: list[_Job] = []
        self.in_flight = 0
        self.current: Tier | None = None  # the tier being compiled now
        self.closing = False
        self.usable = True  # False once no worker can run: tiers compile in-process
        self.crashes = 0
        self.compiled = 0
        self.worker: subprocess.Popen | None = None
        self.thread: threading.Thread | None = None
        self._seq = 0
        self._greeted = False
        self._want_worker = False

    # -- queue ---------------------------------------------------------------------------
    def submit(self, tier: Tier) -> bool:
        """Queue ``tier``'s program; ``False`` (nothing queued) when no worker can run."""
        with self.lock:
            if not self.usable or self.closing:
                return False
            self._seq += 1
            self.pending.append(_Job(tier, self._seq))
            self._start_thread()
            self.lock.notify_all()
        return True

    def prewarm(self) -> None:
        """Start the worker now (in the manager thread), before anything is queued: its
        start-up (Python, newtonad, numba: 1-2 s) then overlaps the caller's first calls."""
        with self.lock:
            if not self.usable or self.closing or self.worker is not None:
                return
            self._want_worker = True
            self._start_thread()
            self.lock.notify_all()

    def _start_thread(self) -> None:
        if self.thread is None:
            self.thread = threading.Thread(target=self._manage, name="newtonad-compiler",
                                           daemon=True)
            self.thread.start()

    def _next(self) -> Tier | None:
        """The live queued tier a caller waits for, else the one with the most modelled
        NumPy time (the most to gain)."""
        best, best_job = None, None
        for job in self.pending:
            tier = job.tier()
            if tier is not None and (best is None or (tier.waiting, tier.work)
                                     > (best.waiting, best.work)):
                best, best_job = tier, job
        self.pending = [j for j in self.pending if j is not best_job and j.tier() is not None]
        return best

    def wait(self, timeout: float | None = None) -> bool:
        """Block until every queued program is compiled and handed over (or given up).

        Returns ``False`` if ``timeout`` seconds passed first.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.lock:
            while (any(j.tier() is not None for j in self.pending) or self.in_flight) \
                    and not self.closing:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self.lock.wait(left if left is None else min(left, 0.1))
        return True

    # -- the manager thread --------------------------------------------------------------
    def _manage(self) -> None:
        while True:
            with self.lock:
                while not self.closing and not self.pending and not self._want_worker:
                    self.lock.wait()
                if self.closing:
                    return
                tier = self._next()
                if tier is None:  # a prewarm (or only dead jobs): start the worker
                    start, self._want_worker = self._want_worker, False
                else:
                    self.in_flight += 1
                    self.current = tier
            if tier is None:
                if start:
                    self._ensure_worker()
                continue
            try:
                self._compile(tier)
            except Exception as exc:  # noqa: BLE001  (this thread must never die on a user)
                tier.stay_on_numpy(f"background compiler: {type(exc).__name__}: {exc}")
            finally:
                del tier
                with self.lock:
                    self.in_flight -= 1
                    self.current = None
                    self.lock.notify_all()

    def _compile(self, tier: Tier) -> None:
        from . import kinds

        program = tier.program
        if not all(step.primitive in kinds.SUPPORTED for step in program.steps):
            tier.stay_on_numpy("a primitive has no numba lowering")
            return
        worker = self._ensure_worker()
        if worker is not None and not self._handshake(worker):
            worker = None
        if worker is None:
            tier.compile_when_hot("no background worker")
            return
        try:  # lowered with the worker's options: numba is not imported here before a
            payload = dumps_program(program, None)  # kernel is ready to be loaded
        except Exception as exc:  # noqa: BLE001  (unpicklable params: compile in-process)
            tier.compile_when_hot(f"program not sent to the worker ({type(exc).__name__})")
            return
        from .numba_cache import effective_cache_dir

        steps = len(program.steps)
        _log.debug("background compile of a %d-step program started", steps)
        reply = self._ask(worker, (payload, str(effective_cache_dir())))
        if reply is None:  # the worker died compiling this program: leave it alone
            if not self.closing:
                self._lost_worker(crashed=True)
                tier.stay_on_numpy("the background worker died compiling it")
                _log.info("the background worker died compiling a %d-step program; it "
                          "stays on NumPy", steps)
            return
        status, seconds, detail, options = reply
        from . import record

        record(background_seconds=seconds, background_compiles=1)
        if status != "ok":
            tier.stay_on_numpy(detail or "no numba kernel")
            _log.info("a %d-step program stays on NumPy: %s", steps, detail or "no numba kernel")
            return
        start = time.perf_counter()
        from .numba_engine import load_cached

        with _NUMBA_IN_USE:
            runner = load_cached(program, options)
        loaded = time.perf_counter() - start
        record(handover_seconds=loaded)
        if runner is None:  # not found where the worker wrote it (settings differ)
            tier.compile_when_hot("the worker's kernel was not found in the cache")
            _log.info("the kernel of a %d-step program was not in the cache where the worker "
                      "wrote it: it will be compiled in this process", steps)
            return
        self.compiled += 1
        _log.debug("background compile of a %d-step program finished: %.3f s in the worker "
                   "(compiled or read from the disk cache), loaded here in %.3f s", steps,
                   seconds, loaded)
        tier.ready(runner, seconds)

    def _ask(self, worker: subprocess.Popen, request: tuple) -> Any | None:
        try:
            _send(worker.stdin.fileno(), request)  # type: ignore[union-attr]
            return _recv(worker.stdout.fileno())  # type: ignore[union-attr]
        except (OSError, ValueError, pickle.UnpicklingError, EOFError):
            return None

    def _ensure_worker(self) -> subprocess.Popen | None:
        """The running worker, or a new one (started, not yet greeted); ``None`` if none
        can be started."""
        if self.worker is not None and self.worker.poll() is None:
            return self.worker
        if self.worker is not None:
            self._lost_worker(crashed=False)
        if not self.usable or self.closing:
            return None
        import newtonad

        from .numba_cache import effective_cache_dir

        package = os.path.dirname(os.path.abspath(newtonad.__file__))
        env = dict(os.environ, NEWTONAD_CACHE_DIR=str(effective_cache_dir()))
        env[_PACKAGE_ENV] = package
        log = os.environ.get(LOG_ENV)
        try:
            with open(log, "ab") if log else _devnull() as stderr:
                worker = subprocess.Popen(
                    [sys.executable, "-c", _BOOTSTRAP], stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, stderr=stderr, env=env, bufsize=0,
                    close_fds=True, start_new_session=os.name == "posix")
        except (OSError, ValueError):
            self._give_up()
            return None
        with self.lock:
            if self.closing:  # exit began while it started
                _stop(worker)
                return None
            self.worker = worker
            self._greeted = False
        return worker

    def _handshake(self, worker: subprocess.Popen) -> bool:
        """Wait for a new worker's greeting (it has imported newtonad and numba)."""
        if self._greeted:
            return True
        try:
            hello = _recv(worker.stdout.fileno())  # type: ignore[union-attr]
        except (OSError, ValueError, pickle.UnpicklingError, EOFError):
            hello = None
        if hello is not None and hello[0] == "hello":
            self._greeted = True
            return True
        with self.lock:
            if self.worker is worker:
                self.worker = None
        if not self.closing:
            _stop(worker)
            self._give_up()
        return False

    def _lost_worker(self, crashed: bool) -> None:
        with self.lock:
            worker, self.worker = self.worker, None
        if worker is not None:
            _stop(worker)
        if crashed:
            self.crashes += 1
            if self.crashes >= MAX_CRASHES:
                self._give_up()

    def _give_up(self) -> None:
        """No worker can run: every queued tier compiles in-process when hot."""
        with self.lock:
            self.usable = False
            jobs, self.pending = self.pending, []
        for job in jobs:
            tier = job.tier()
            if tier is not None:
                tier.compile_when_hot("no background worker")

    # -- exit ----------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the worker (terminate, then kill; always reaped) and the manager thread."""
        if os.getpid() != self.pid:  # a forked child's copy: the parent owns the worker
            return
        with self.lock:
            self.closing = True
            worker, self.worker = self.worker, None
            self.lock.notify_all()
        if worker is not None:
            _end(worker)  # the manager's read then ends: the pipe closes with the process
        thread = self.thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(EXIT_JOIN_SECONDS)  # at most one kernel load in progress
            if thread.is_alive():
                return  # still using the pipes: leave them to the exiting process
        if worker is not None:
            _close_pipes(worker)


def _end(worker: subprocess.Popen) -> None:
    """Terminate ``worker`` (kill it if it lingers) and reap it: no zombie, no wait on
    an unfinished compile."""
    try:
        if worker.poll() is None:
            worker.terminate()
            try:
                worker.wait(TERMINATE_SECONDS)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
    except OSError:
        pass


def _close_pipes(worker: subprocess.Popen) -> None:
    for stream in (worker.stdin, worker.stdout):
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass


def _stop(worker: subprocess.Popen) -> None:
    """End ``worker`` and close its pipes (only from the thread that reads them)."""
    _end(worker)
    _close_pipes(worker)


_COMPILER: Compiler | None = None
_COMPILER_LOCK = threading.Lock()


def compiler() -> Compiler:
    """This process's background compiler (made on first use)."""
    global _COMPILER
    if _COMPILER is None or _COMPILER.pid != os.getpid():
        with _COMPILER_LOCK:
            if _COMPILER is None or _COMPILER.pid != os.getpid():
                _COMPILER = Compiler()
    return _COMPILER


def submit(tier: Tier) -> bool:
    """Compile ``tier``'s program in the background; ``False`` if no worker can run.

    When the kernel is ready, ``tier.ready(runner, worker_seconds)`` is called from the
    manager thread; when it will not be, ``tier.stay_on_numpy(reason)`` or
    ``tier.compile_when_hot(reason)``.
    """
    if not enabled():
        return False
    return compiler().submit(tier)


def wait(timeout: float | None = None) -> bool:
    """Block until every submitted program is compiled and handed over (or given up).

    For benchmarks and tests that want the compiled tier; ``False`` on timeout.
    """
    current = _COMPILER
    if current is None or current.pid != os.getpid():
        return True
    return current.wait(timeout)


def tracking(tier: Tier) -> bool:
    """Whether this process's compiler still has ``tier`` queued or compiling (``False``
    after a shutdown, or in a forked child for its parent's programs)."""
    current = _COMPILER
    if current is None or current.pid != os.getpid():
        return False
    with current.lock:
        return current.current is tier or any(j.tier() is tier for j in current.pending)


def withdraw(tier: Tier) -> None:
    """Forget ``tier``'s queued program (its kernel was found elsewhere); one being
    compiled finishes, and its runner is then ignored."""
    current = _COMPILER
    if current is not None and current.pid == os.getpid():
        with current.lock:
            current.pending = [j for j in current.pending if j.tier() is not tier]
            current.lock.notify_all()


def numba_in_use() -> Any:
    """The lock held while numba loads a kernel here (a fork meanwhile would copy it held)."""
    return _NUMBA_IN_USE


def hurry() -> None:
    """A caller waits at a hand-over call: let the manager pick its program next."""
    current = _COMPILER
    if current is not None and current.pid == os.getpid():
        with current.lock:
            current.lock.notify_all()


def prewarm() -> None:
    """Start the background worker ahead of the first compile (see :meth:`Compiler.prewarm`);
    nothing when background compilation is off."""
    if enabled():
        compiler().prewarm()


def activity() -> int:
    """Programs queued or being compiled in the background now (0 without a compiler)."""
    current = _COMPILER
    if current is None or current.pid != os.getpid():
        return 0
    with current.lock:
        return current.in_flight + sum(1 for j in current.pending if j.tier() is not None)


def shutdown() -> None:
    """Stop this process's worker now (also done at exit); a later submission starts
    a new one."""
    global _COMPILER
    current = _COMPILER
    if current is not None and current.pid == os.getpid():
        current.close()
        _COMPILER = None


def _devnull() -> Any:
    return open(os.devnull, "wb")


def _forget_after_fork() -> None:
    """In a forked child: the parent's worker and threads are not ours (its pipes are
    closed; the worker itself is left to the parent)."""
    global _COMPILER, _COMPILER_LOCK
    _NUMBA_IN_USE.release()
    _COMPILER_LOCK = threading.Lock()
    parent = _COMPILER
    _COMPILER = None
    if parent is not None and parent.worker is not None:
        _close_pipes(parent.worker)
        parent.worker.returncode = 0  # not our child: never wait for it here


atexit.register(shutdown)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_NUMBA_IN_USE.acquire, after_in_parent=_NUMBA_IN_USE.release,
                        after_in_child=_forget_after_fork)

__all__ = ["ENV_VAR", "LOG_ENV", "Compiler", "activity", "compiler", "dumps_program", "enabled",
           "hurry", "loads_program", "numba_in_use", "tracking", "prewarm", "serve", "shutdown",
           "submit", "wait", "withdraw"]
