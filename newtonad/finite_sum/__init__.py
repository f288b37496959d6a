"""Finite-sum objectives on a Dask cluster: ``FiniteSum(term, data=(X, y), ...)``.

``objective(w) = sum over row chunks c of term(w, X_c, y_c) + regularizer(w)``, with
each chunk's term evaluated and differentiated on the worker that holds the chunk.
Needs ``dask[distributed]`` (``pip install newtonad[dask]``); ``import newtonad`` does
not import Dask, and this package imports it only when it is first used.

Modules, one job each: :mod:`.objective` (the client-side object the solvers see),
:mod:`.worker` (the state each worker keeps per chunk), :mod:`.reduce` (the tree
reduction of partial sums), :mod:`.data` (checking and chunking the data),
:mod:`.cluster` (which client, and the LocalCluster owned by a FiniteSum).
"""

from __future__ import annotations

from typing import Any

__all__ = ["FiniteSum", "FiniteSumTimeout", "FiniteSumWorkersLost"]

_MISSING_MESSAGE = ("newtonad.FiniteSum needs dask.distributed, which is not installed: "
                    "pip install newtonad[dask]  (or pip install 'dask[distributed]')")


def _dask_missing() -> ImportError | None:
    try:
        import dask.array  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as exc:
        return exc
    return None


_missing = _dask_missing()
if _missing is None:
    from .objective import FiniteSum, FiniteSumTimeout, FiniteSumWorkersLost
else:
    class FiniteSumTimeout(TimeoutError):  # type: ignore[no-redef]
        """A round of work on the cluster did not finish within the FiniteSum's timeout."""

    class FiniteSumWorkersLost(RuntimeError):  # type: ignore[no-redef]
        """A round of work found the cluster without any worker."""

    class FiniteSum:  # type: ignore[no-redef]
        """Placeholder raising the ImportError that says how to install Dask."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise ImportError(_MISSING_MESSAGE) from _missing
