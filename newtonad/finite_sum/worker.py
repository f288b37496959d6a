"""The worker side of :class:`~newtonad.finite_sum.FiniteSum`: one state per term, per chunk.

A worker keeps, for each ``FiniteSum`` it serves, the term (unpickled once, so its
traced and compiled programs are reused: newtonad caches them per function object and
chunk shape) and one :class:`~newtonad.objective.Objective` per chunk of rows it holds.
That Objective binds the chunk as data and remembers the current point, so the
linearisation of the chunk's term at ``w`` stays on the worker and every Hessian-vector
product there costs only the linear pass.

Two ways in, both summing over the chunks a worker holds:

* tasks through the scheduler (:func:`value_and_grad_group`, :func:`hvp_group`), which
  receive the chunks as dependencies: the scheduler runs them where the chunks live and
  recomputes lost chunks from their graph;
* out-of-band calls straight to a worker (:func:`value_and_grad_here`,
  :func:`hvp_here`), which reuse the Objectives made by the tasks and answer ``None``
  when the worker lacks one (a restarted worker): the client then takes the task path.

Results are pickled here, so the client counts exactly the bytes each partial costs.
"""

from __future__ import annotations

import pickle
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Sequence

import numpy as np

__all__ = ["TermSpec", "Partial", "value_and_grad_group", "hvp_group", "value_and_grad_here",
           "hvp_here", "forget_term", "add_partials"]


@dataclass(frozen=True)
class TermSpec:
    """What a worker needs to evaluate a term: a name unique to one FiniteSum, the term
    ``term(w, *block)`` and the engine that runs its derived programs."""

    name: str
    term: Callable
    engine: str | None


@dataclass
class Partial:
    """A partial sum over some chunks: value, vector (gradient or H p), and which chunk
    keys each worker summed (so the client can address those workers directly next)."""

    value: float
    vector: np.ndarray
    where: list[tuple[str, list[Hashable]]] = field(default_factory=list)


class _TermState:
    """One term on one worker process: the term object and an Objective per chunk."""

    def __init__(self, spec: TermSpec) -> None:
        self.term = spec.term
        self.engine = spec.engine
        self.objectives: dict[Hashable, Any] = {}  # chunk key -> Objective on that chunk
        self.blocks: dict[Hashable, tuple] = {}  # chunk key -> the arrays it binds
        self.points: dict[Hashable, tuple[int, np.ndarray]] = {}  # chunk key -> (id, w)
        # one round at a time per process: a worker with several threads, or the
        # out-of-band calls beside a task, must not trace or compile the term twice at once
        self.lock = threading.RLock()

    def objective(self, key: Hashable, block: tuple) -> Any:
        """The chunk's Objective; a new one when the chunk's arrays were recomputed."""
        known = self.blocks.get(key)
        if known is None or len(known) != len(block) or any(
                a is not b for a, b in zip(known, block)):
            from newtonad.objective import Objective

            self.objectives[key] = Objective(self.term, args=block, engine=self.engine)
            self.blocks[key] = block
            self.points.pop(key, None)
        return self.objectives[key]


#: FiniteSum name -> its state in this process (workers of one process share it: the
#: chunk keys they hold differ)
_TERMS: dict[str, _TermState] = {}
_LOCK = threading.Lock()


def _state(spec: TermSpec) -> _TermState:
    with _LOCK:
        state = _TERMS.get(spec.name)
        if state is None:
            state = _TERMS[spec.name] = _TermState(spec)
        return state


def _address() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except ValueError:  # not on a worker (a synchronous scheduler in tests)
        return ""


def _as_block(block: Any) -> tuple:
    return tuple(block) if isinstance(block, (tuple, list)) else (block,)


def value_and_grad_group(spec: TermSpec, point_id: int, w: np.ndarray,
                         keys: Sequence[Hashable], *blocks: Any) -> bytes:
    """Task: the sum of ``term(w, *block)`` and its gradient over the given chunks.

    Parameters
    ----------
    spec : TermSpec
        The term; only the first copy a worker receives is kept.
    point_id : int
        The client's number for ``w``; the hvp calls name the point by it.
    w : ndarray
        The parameters.
    keys : sequence
        One key per block (the chunk's dask key).
    *blocks : tuple of ndarray
        The chunks' arrays, one tuple per chunk (dependencies resolved by Dask).

    Returns
    -------
    bytes
        A pickled :class:`Partial`.
    """
    state = _state(spec)
    value, grad = 0.0, np.zeros_like(w)
    with state.lock:
        for key, block in zip(keys, blocks):
            f, g = state.objective(key, _as_block(block)).value_and_grad(w)
            state.points[key] = (point_id, w)
            value += f
            grad += g
    return pickle.dumps(Partial(value, grad, [(_address(), list(keys))]), protocol=5)


def hvp_group(spec: TermSpec, point_id: int, w: np.ndarray, p: np.ndarray,
              keys: Sequence[Hashable], *blocks: Any) -> bytes:
    """Task: the sum of the chunks' Hessian products ``H_c(w) p`` (p a vector or a frame).

    The chunk's Objective is made (or moved to ``w``) first when this worker has not
    evaluated it at ``w``, e.g. after the worker that had it was lost.
    """
    state = _state(spec)
    out = np.zeros(p.shape)
    with state.lock:
        for key, block in zip(keys, blocks):
            obj = state.objective(key, _as_block(block))
            if state.points.get(key, (None,))[0] != point_id:
                obj.value_and_grad(w)
                state.points[key] = (point_id, w)
            out += obj.hessp(w, p)
    return pickle.dumps(Partial(0.0, out, [(_address(), list(keys))]), protocol=5)


def value_and_grad_here(name: str, point_id: int, w: np.ndarray,
                        keys: Sequence[Hashable]) -> bytes | None:
    """Out-of-band: as :func:`value_and_grad_group` on the chunks this worker already
    has Objectives for; ``None`` if it lacks one (the client then sends tasks)."""
    state = _TERMS.get(name)
    if state is None or any(key not in state.objectives for key in keys):
        return None
    value, grad = 0.0, np.zeros_like(w)
    with state.lock:
        for key in keys:
            f, g = state.objectives[key].value_and_grad(w)
            state.points[key] = (point_id, w)
            value += f
            grad += g
    return pickle.dumps(Partial(value, grad), protocol=5)


def hvp_here(name: str, point_id: int, shape: tuple, direction: bytes) -> tuple | None:
    """Out-of-band: the sum of ``H_c(w) p`` over the chunks this worker holds at the point
    ``point_id``, from the linearisations kept here.

    ``p`` arrives as raw float64 bytes of ``shape`` and the product leaves the same way,
    so a round moves little more than the vectors. Returns ``(chunks summed, bytes,
    seconds of compute)``,
    or ``None`` if this worker has no chunk at that point; the client checks that the
    counts add up to every chunk (a chunk at that point lives on exactly one worker:
    each round evaluates each chunk once).
    """
    state = _TERMS.get(name)
    if state is None:
        return None
    start = time.perf_counter()
    p = np.frombuffer(direction, dtype=np.float64).reshape(shape)
    out, count = np.zeros(shape), 0
    with state.lock:
        for key, (point, w) in list(state.points.items()):
            if point == point_id:
                out += state.objectives[key].hessp(w, p)
                count += 1
    return (count, out.tobytes(), time.perf_counter() - start) if count else None


def add_partials(*partials: bytes) -> bytes:
    """Task: one pickled partial summing several (a node of the reduction tree)."""
    parts = [pickle.loads(b) for b in partials]
    total = Partial(sum(p.value for p in parts), np.sum([p.vector for p in parts], axis=0),
                    [w for p in parts for w in p.where])
    return pickle.dumps(total, protocol=5)


def forget_term(name: str) -> bool:
    """Drop a term's state from this worker process (called by ``FiniteSum.close``)."""
    with _LOCK:
        return _TERMS.pop(name, None) is not None
