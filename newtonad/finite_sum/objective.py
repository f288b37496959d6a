"""FiniteSum: a sum of terms over chunks of data held by Dask workers, as an objective.

``objective(w) = sum over row chunks c of term(w, *data_c) + regularizer(w)``.

The solvers see the objective protocol of :class:`newtonad.objective.Objective`
(``fun``, ``jac``, ``value_and_grad``, ``hessp``, ``linearize_hessp``, ``hess`` and the
counters), so ``newtonad.minimize(fs, w0, method=...)`` and ``scipy.optimize.minimize``
take a FiniteSum as they take an Objective. Only vectors of the parameters' size move:

* at a new ``w`` (``fun`` / ``jac`` / ``value_and_grad``) every worker receives ``w``
  once and returns one partial value and gradient summed over the chunks it holds;
* ``hessp`` at the same ``w`` sends the direction (or a frame of k directions, as one
  message) to each worker and receives one partial product per worker, computed from
  the linearisations of the chunks' terms kept on the workers.

The first round, and any round after a worker was lost, runs as Dask tasks that depend
on the chunks (the scheduler runs them where the chunks are, and recomputes lost chunks
from their graph), reduced in a tree (:mod:`.reduce`). Later rounds go straight to the
workers that ran those tasks, bypassing the scheduler; a worker that is gone or lacks a
chunk's state sends the round back to the task path.
"""

from __future__ import annotations

import asyncio
import pickle
import time
import uuid
import weakref
from typing import Any, Callable, Hashable

import numpy as np

from .._programs import as_frame, as_point
from ..objective_protocol import Capabilities, dense_hessian
from .cluster import resolve_client, shutdown
from .data import check_data, row_blocks
from .reduce import reduce_in_tree
from .worker import (
    Partial,
    TermSpec,
    add_partials,
    forget_term,
    hvp_group,
    hvp_here,
    value_and_grad_group,
    value_and_grad_here,
)

__all__ = ["FiniteSum", "FiniteSumTimeout", "FiniteSumWorkersLost"]

#: seconds to connect to a worker on the direct path before falling back to tasks
_CONNECT_TIMEOUT = 2.0
#: seconds a round waits while the cluster has no worker at all before it gives up
#: (a nanny restarts a killed worker within a few seconds; a cluster left with none
#: would otherwise hold the round until ``timeout``)
_NO_WORKERS_GRACE = 30.0
#: identity frames for ``hess`` go in blocks of at most this many columns
_HESS_BLOCK = 256


class FiniteSumTimeout(TimeoutError):
    """A round of work on the cluster did not finish within the FiniteSum's ``timeout``."""


class FiniteSumWorkersLost(RuntimeError):
    """A round of work found the cluster without any worker for ``_NO_WORKERS_GRACE`` s."""


class FiniteSum:
    """A finite-sum objective whose data stay on Dask workers.

    ``objective(w) = sum over row chunks c of term(w, *data_c) + regularizer(w)``.

    Parameters
    ----------
    term : callable
        ``term(w, X_c, y_c) -> scalar`` written in plain NumPy (one argument per array
        of ``data``), traced and differentiated by newtonad on each worker.
    data : array or tuple of arrays
        Dask or NumPy arrays with the same rows, chunked along rows only (the same row
        chunks in every array). NumPy arrays are chunked here by ``chunk_rows``. The
        chunks are persisted on the workers and never sent to the client.
    regularizer : callable, optional
        ``regularizer(w) -> scalar`` evaluated (with its derivatives) on the client.
    client : distributed.Client, str or None, optional
        A client (used as is, not closed by :meth:`close`), a scheduler address, or
        ``None``: the current client if there is one, else a ``LocalCluster`` of
        processes (one single-threaded worker per core) owned by this object and shut
        down by :meth:`close`, when the object is collected, or at exit.
    chunk_rows : int, optional
        Rows per chunk (NumPy data: the default makes two chunks per worker, at most
        64 MiB each; Dask data keep their chunks unless this is given).
    engine : str, optional
        The engine running the term's derived programs on the workers
        (default: newtonad's default engine on the workers).
    timeout : float or None, optional
        Seconds a round may take (a first round includes compiling the term on the
        workers) before :class:`FiniteSumTimeout` is raised; ``None``: no limit.
    split_every : int, optional
        Fan-in of the tree that reduces the workers' partial sums (default 8).
    cluster_options : dict, optional
        Keyword arguments for the ``LocalCluster`` started when ``client`` is None;
        given, a new cluster is started even if a current client exists.

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> def term(w, X, y):
    ...     return np.sum(np.logaddexp(0.0, -y * (X @ w)))
    >>> X = np.random.default_rng(0).normal(size=(1000, 3)); y = np.sign(X[:, 0])
    >>> with nad.FiniteSum(term, data=(X, y), regularizer=lambda w: 0.5 * w @ w) as fs:
    ...     res = nad.minimize(fs, np.zeros(3), method="newton-cg")  # doctest: +SKIP
    """

    def __init__(self, term: Callable, data: Any, regularizer: Callable | None = None,
                 client: Any = None, *, chunk_rows: int | None = None,
                 engine: str | None = None, timeout: float | None = 600.0,
                 split_every: int = 8, cluster_options: dict | None = None) -> None:
        if not callable(term):
            raise TypeError(f"term must be a callable term(w, *data_chunk) -> scalar, got "
                            f"{type(term).__name__}")
        if regularizer is not None and not callable(regularizer):
            raise TypeError(f"regularizer must be a callable regularizer(w) -> scalar or None, "
                            f"got {type(regularizer).__name__}")
        if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
            raise ValueError(f"timeout must be a positive number of seconds or None, "
                             f"got {timeout!r}")
        if not (isinstance(split_every, int) and split_every >= 2):
            raise ValueError(f"split_every must be an int >= 2, got {split_every!r}")
        check_data(data, chunk_rows, 1)  # bad data fails before any cluster starts
        self.term = term
        self.regularizer = regularizer
        self.timeout = timeout
        self.split_every = split_every
        self._spec = TermSpec(f"newtonad-finite-sum-{uuid.uuid4().hex}", term, engine)
        self._closed = False
        self.client, cluster, owned = resolve_client(client, cluster_options)
        self._cluster = cluster
        self._finalizer = (weakref.finalize(self, shutdown, self.client, cluster)
                           if owned else None)
        try:
            n_workers = max(1, len(self.client.scheduler_info()["workers"]))
            blocks = row_blocks(check_data(data, chunk_rows, n_workers))
            # persisted from their graph: a lost chunk is recomputed, not lost
            self._blocks = self.client.persist(blocks)
        except BaseException:
            self.close()
            raise
        from distributed import futures_of

        self._keys: list[Hashable] = [b.key for b in self._blocks]
        self._futures = [futures_of(b)[0] for b in self._blocks]
        self._reg = None
        if regularizer is not None:
            from newtonad.objective import Objective

            self._reg = Objective(regularizer, engine=engine)
        self._point: tuple[np.ndarray, int, float, np.ndarray] | None = None
        self._next_point = 0
        #: worker address -> chunk keys whose state it holds (from the last task round)
        self._layout: dict[str, list[Hashable]] | None = None
        self.nfev = self.njev = self.nhev = 0
        #: rounds run (direct and as tasks) and payload bytes sent to / received from
        #: workers (pickled parameters, directions and partial results)
        #: ``worker_seconds``: the longest worker's compute in each direct hessp round
        self.stats = {"rounds": 0, "task_rounds": 0, "bytes_sent": 0, "bytes_received": 0,
                      "worker_seconds": 0.0}
        self._functions = {f: pickle.dumps(f) for f in (value_and_grad_here, hvp_here)}

    # ---- properties ---------------------------------------------------------------
    #: the objective protocol's declaration: no sparse Hessian
    capabilities = Capabilities(value_and_grad=True, linearized_products=True, products=True,
                                hess=True)

    def counters(self) -> dict[str, int]:
        """Return the evaluations made: ``nfev``, ``njev`` and ``nhev`` (products).

        Returns
        -------
        dict of str to int
            Each counter by its name (the attributes of the same names).

        Examples
        --------
        >>> fs.counters()  # doctest: +SKIP
        {'nfev': 0, 'njev': 0, 'nhev': 0}
        """
        return {"nfev": self.nfev, "njev": self.njev, "nhev": self.nhev}

    @property
    def n_chunks(self) -> int:
        """Number of row chunks the data are split into.

        Returns
        -------
        int
            How many chunks (tasks) each round of work covers.

        Examples
        --------
        >>> fs = nad.FiniteSum(term, data=(X, y), chunk_rows=250)  # doctest: +SKIP
        >>> fs.n_chunks  # doctest: +SKIP
        4
        """
        return len(self._keys)

    @property
    def dashboard_link(self) -> str | None:
        """The address of the Dask dashboard, where the rounds can be watched.

        Returns
        -------
        str or None
            ``client.dashboard_link``; None when the cluster has no dashboard.

        Examples
        --------
        >>> print(fs.dashboard_link)  # doctest: +SKIP
        http://127.0.0.1:8787/status
        """
        return getattr(self.client, "dashboard_link", None)

    # ---- rounds -------------------------------------------------------------------
    def _live(self) -> None:
        if self._closed:
            raise RuntimeError("this FiniteSum is closed; make a new one to evaluate again")

    def _timed_out(self, what: str, waited: Any) -> FiniteSumTimeout:
        return FiniteSumTimeout(
            f"FiniteSum: {what} did not finish within timeout={self.timeout} s ({waited}); a "
            "slow term (the first round also compiles it on every worker), a busy cluster or "
            "lost workers? Raise the limit with FiniteSum(..., timeout=SECONDS), or "
            "timeout=None to wait without limit")

    def _groups(self) -> list[tuple[str | None, list[int]]]:
        """Chunk indices grouped by the worker holding them (None: being recomputed)."""
        who = self.client.who_has(self._futures)
        groups: dict[str, list[int]] = {}
        loose: list[tuple[str | None, list[int]]] = []
        for i, key in enumerate(self._keys):
            where = who.get(key) or who.get(str(key)) or ()
            if where:
                groups.setdefault(sorted(where)[0], []).append(i)
            else:
                loose.append((None, [i]))
        return [*groups.items(), *loose]

    def _task_round(self, what: str, task: Callable, *args: Any) -> Partial:
        """One round as tasks beside the chunks, reduced in a tree; remembers the layout."""

        futures = []
        sent = sum(a.nbytes for a in args if isinstance(a, np.ndarray))
        for worker, chunks in self._groups():
            keys = [self._keys[i] for i in chunks]
            where = {} if worker is None else {"workers": [worker], "allow_other_workers": True}
            futures.append(self.client.submit(
                task, self._spec, *args, keys, *(self._futures[i] for i in chunks),
                pure=False, **where))
            self.stats["bytes_sent"] += sent
        top = reduce_in_tree(self.client, futures, self.split_every)
        try:
            self._wait(top, what)
        except (TimeoutError, FiniteSumWorkersLost) as exc:
            pending = sum(not f.done() for f in top)
            self.client.cancel(futures + top)
            if isinstance(exc, FiniteSumWorkersLost):
                raise
            raise self._timed_out(what, f"{pending} of {len(top)} partial sums pending, as "
                                  "Dask tasks") from None
        results = self.client.gather(top)
        self.stats["bytes_received"] += sum(len(r) for r in results)
        self.stats["task_rounds"] += 1
        total: Partial = pickle.loads(add_partials(*results))
        layout: dict[str, list[Hashable]] = {}
        for worker, keys in total.where:
            layout.setdefault(worker, []).extend(keys)
        self._layout = layout if "" not in layout else None
        return total

    def _wait(self, futures: list, what: str) -> None:
        """Wait for ``futures`` up to ``timeout``, in slices of a second between which the
        cluster is asked whether it still has a worker: with none for
        ``_NO_WORKERS_GRACE`` seconds nothing can finish, so raise instead of waiting."""
        from distributed import wait

        start = time.monotonic()
        alone_since: float | None = None
        while True:
            left = None if self.timeout is None else self.timeout - (time.monotonic() - start)
            if left is not None and left <= 0:
                raise TimeoutError
            try:
                with self.client.as_current():  # wait() asks for the default client
                    wait(futures, timeout=1.0 if left is None else min(1.0, left))
                return
            except TimeoutError:
                pass
            now = time.monotonic()
            if self.client.scheduler_info().get("workers"):
                alone_since = None
                continue
            alone_since = now if alone_since is None else alone_since
            if now - alone_since >= _NO_WORKERS_GRACE:
                raise FiniteSumWorkersLost(
                    f"FiniteSum: {what} cannot finish: the cluster has had no worker for "
                    f"{now - alone_since:.0f} s (killed for memory? each worker holds its "
                    "chunks and their terms' linearisations). Give the workers more memory "
                    "(memory_limit) or add workers, then evaluate again; the chunks are "
                    "recomputed from their graph")

    async def _call_workers(self, function: Callable,
                            payloads: dict[str, bytes]) -> dict[str, Any]:
        """Run ``function`` on each worker out of band (no scheduler hop), in parallel."""
        fn = self._functions[function]
        no_kwargs = pickle.dumps({})

        async def call(address: str, payload: bytes) -> Any:
            from distributed.core import send_recv

            pool = self.client.rpc
            # a short connect timeout: a killed worker refuses at once, and Dask would
            # retry the refused connection for its whole connect timeout (30 s)
            comm = await pool.connect(address, timeout=_CONNECT_TIMEOUT)
            try:
                return await send_recv(comm=comm, op="run", function=fn, args=payload,
                                       kwargs=no_kwargs, wait=True)
            finally:
                pool.reuse(address, comm)

        calls = [call(a, p) for a, p in payloads.items()]
        try:
            replies = await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True),
                                             self.timeout)
        except asyncio.TimeoutError:
            raise self._timed_out(f"{function.__name__}", f"{len(calls)} workers, called "
                                  "directly") from None
        return dict(zip(payloads, replies))

    def _direct_round(self, function: Callable, args: Callable,
                      layout: dict[str, list[Hashable]] | None) -> list | None:
        """One round straight to the workers of the last task round: their results, or
        None when one is gone or lacks a chunk's state (then the task path runs)."""
        if layout is None:
            return None
        payloads = {a: pickle.dumps(args(keys), protocol=5) for a, keys in layout.items()}
        replies = self.client.sync(self._call_workers, function, payloads)
        overhead = len(self._functions[function]) + len(pickle.dumps({}))
        self.stats["bytes_sent"] += sum(len(p) + overhead for p in payloads.values())
        results = []
        for reply in replies.values():
            if isinstance(reply, BaseException) or not isinstance(reply, dict):
                return None  # the worker is gone (killed, restarted): use the task path
            if reply.get("status") == "error":
                from distributed.core import clean_exception

                _, exc, tb = clean_exception(**reply)
                assert exc is not None
                raise exc.with_traceback(tb)
            if reply["result"] is None:
                return None  # the worker lost a chunk's state
            self.stats["bytes_received"] += len(pickle.dumps(reply["result"], protocol=5))
            results.append(reply["result"])
        return results

    def _direct_products(self, point: int, p: np.ndarray) -> np.ndarray | None:
        """``H p`` summed from the workers' kept linearisations, or None to fall back."""
        layout = self._layout
        message = (self._spec.name, point, p.shape, p.tobytes())
        replies = self._direct_round(hvp_here, lambda keys: message, layout)
        if replies is None or sum(reply[0] for reply in replies) != len(self._keys):
            return None
        self.stats["worker_seconds"] += max(reply[2] for reply in replies)
        hv = np.zeros(p.shape)
        for _, product, _ in replies:
            hv += np.frombuffer(product, dtype=np.float64).reshape(p.shape)
        return hv

    # ---- value and gradient -----------------------------------------------------------
    def _evaluate(self, w: Any) -> tuple[np.ndarray, int, float, np.ndarray]:
        self._live()
        w = as_point(w, "w")
        at = self._point
        if at is not None and at[0].shape == w.shape and np.array_equal(at[0], w):
            return at
        w = np.array(w, dtype=np.float64)  # a private copy: the workers keep it too
        point = self._next_point = self._next_point + 1
        replies = self._direct_round(value_and_grad_here,
                                     lambda keys: (self._spec.name, point, w, keys), self._layout)
        if replies is not None:
            partial = pickle.loads(add_partials(*replies))
        else:
            partial = self._task_round("value_and_grad at a new w", value_and_grad_group,
                                       point, w)
        self.stats["rounds"] += 1
        value, grad = float(partial.value), partial.vector.reshape(w.shape)
        if self._reg is not None:
            reg_value, reg_grad = self._reg.value_and_grad(w)
            value, grad = value + reg_value, grad + reg_grad
        self.nfev += 1
        self.njev += 1
        self._point = (w, point, value, grad)
        return self._point

    def value_and_grad(self, w: Any) -> tuple[float, np.ndarray]:
        """Return ``(f(w), ∇f(w))`` from one round on the cluster (cached per point).

        Parameters
        ----------
        w : array_like
            The parameters: a finite float array of the shape the term expects.

        Returns
        -------
        value : float
            The sum of the terms over all chunks plus the regulariser.
        grad : ndarray
            Its gradient, shaped like ``w``.

        Raises
        ------
        FiniteSumTimeout
            When the round takes longer than ``timeout`` seconds.

        Examples
        --------
        >>> f, g = fs.value_and_grad(np.zeros(3))  # doctest: +SKIP
        """
        _, _, value, grad = self._evaluate(w)
        return value, grad.copy()

    def fun(self, w: Any) -> float:
        """Return ``f(w)``; the gradient comes in the same round and is kept.

        Parameters
        ----------
        w : array_like
            The parameters: a finite float array of the shape the term expects.

        Returns
        -------
        float
            The sum of the terms over all chunks plus the regulariser (nan or inf
            when a chunk's term is: a solver then rejects the point).

        Examples
        --------
        >>> fs.fun(np.zeros(3))  # doctest: +SKIP
        693.147...
        """
        return self._evaluate(w)[2]

    def jac(self, w: Any) -> np.ndarray:
        """Return ``∇f(w)``, shaped like ``w``; free after ``fun`` at the same ``w``.

        Parameters
        ----------
        w : array_like
            The parameters: a finite float array of the shape the term expects.

        Returns
        -------
        ndarray
            The gradient, shaped like ``w`` (a copy the caller may keep).

        Examples
        --------
        >>> g = fs.jac(np.zeros(3))  # doctest: +SKIP
        """
        return self._evaluate(w)[3].copy()

    # ---- second order -----------------------------------------------------------------
    def hessp(self, w: Any, p: Any) -> np.ndarray:
        """Return ``H(w) p`` for a direction ``p`` or a frame of k directions.

        Each worker applies the linearisations of its chunks' terms at ``w`` (kept on
        the worker) to ``p`` and returns one partial product.

        Parameters
        ----------
        w : array_like
            The point (evaluated first if it is new).
        p : array_like
            Shaped like ``w``, or a frame ``w.shape + (k,)`` sent as one message.

        Returns
        -------
        ndarray
            ``H(w) p``, shaped like ``p``.

        Examples
        --------
        >>> Hp = fs.hessp(np.zeros(3), np.eye(3))  # doctest: +SKIP
        """
        w, point, _, _ = self._evaluate(w)
        p, k = as_frame(p, w.shape, "p")
        p = np.ascontiguousarray(p, dtype=np.float64)
        hv = self._direct_products(point, p)
        if hv is None:
            hv = self._task_round("hessp", hvp_group, point, w, p).vector.reshape(p.shape)
        self.stats["rounds"] += 1
        if self._reg is not None:
            hv = hv + self._reg.hessp(w, p)
        self.nhev += 1 if k is None else k
        return hv

    def linearize_hessp(self, w: Any) -> Callable[[np.ndarray], np.ndarray]:
        """Return ``V -> H(w) V``; the workers keep their chunks' linearisations at ``w``.

        Parameters
        ----------
        w : array_like
            The point (evaluated first if it is new).

        Returns
        -------
        callable
            ``V -> H(w) V`` for ``V`` of ``w``'s shape or a frame ``w.shape + (k,)``.

        Examples
        --------
        >>> hessp_at_w = fs.linearize_hessp(np.zeros(3))  # doctest: +SKIP
        >>> hessp_at_w(np.eye(3))  # doctest: +SKIP
        """
        w = self._evaluate(w)[0]
        return lambda V: self.hessp(w, V)

    def hess(self, w: Any) -> np.ndarray:
        """Return the dense Hessian, from identity frames (a block of columns per round).

        Parameters
        ----------
        w : array_like
            The point.

        Returns
        -------
        ndarray
            ``H(w)``, of shape ``w.shape + w.shape``.

        Examples
        --------
        >>> H = fs.hess(np.zeros(3))  # doctest: +SKIP
        """
        w = self._evaluate(w)[0]
        out = dense_hessian(lambda V: self.hessp(w, V), w.shape,
                            block_elements=_HESS_BLOCK * w.size)
        return out.reshape(w.shape + w.shape)

    # ---- lifetime ---------------------------------------------------------------------
    def close(self) -> None:
        """Release the chunks and the workers' state; shut down an owned cluster.

        A client passed in stays open. Calling ``close`` again does nothing; any
        evaluation afterwards raises ``RuntimeError``.

        Examples
        --------
        >>> fs.close()  # doctest: +SKIP
        """
        if self._closed:
            return
        self._closed = True
        try:
            if self.client.status == "running":
                self.client.run(forget_term, self._spec.name)
        except Exception:  # noqa: BLE001 - workers already gone: nothing left to forget
            pass
        self._blocks = self._futures = []
        self._layout = None
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> "FiniteSum":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        name = getattr(self.term, "__name__", type(self.term).__name__)
        state = "closed" if self._closed else f"{len(self._keys)} chunks"
        return (f"FiniteSum({name}, {state}, nfev={self.nfev}, njev={self.njev}, "
                f"nhev={self.nhev})")
