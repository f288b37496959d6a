"""Which Dask client a FiniteSum talks to, and the LocalCluster it owns when it made one.

``client=None`` takes the current client (the one most recently made in this process)
and otherwise starts a ``LocalCluster`` of processes, one single-threaded worker per
core: Newton's rounds are short, so one process per core keeps each chunk's work on one
core with no GIL contention. What ``FiniteSum`` starts it shuts down on ``close()``, when
it is garbage-collected, or at interpreter exit (``weakref.finalize``).
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["resolve_client", "shutdown"]


def _default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def resolve_client(client: Any, cluster_options: dict | None) -> tuple[Any, Any, bool]:
    """``(client, cluster or None, owned)``: the client to use, and what we must close.

    Parameters
    ----------
    client : None, distributed.Client or str
        ``None``: the current client, else a new LocalCluster; a ``Client``: used as is
        (never closed by us); a string: a scheduler address to connect to.
    cluster_options : dict or None
        Keyword arguments for the ``LocalCluster`` we start (``n_workers``,
        ``memory_limit``, ``dashboard_address``, ...).
    """
    from distributed import Client, LocalCluster, default_client

    if isinstance(client, Client):
        return client, None, False
    if isinstance(client, str):
        return Client(client, set_as_default=False), None, True
    if client is not None:
        raise TypeError(f"client must be a dask.distributed.Client, a scheduler address "
                        f"string or None, got {type(client).__name__}")
    if cluster_options is None:
        try:
            return default_client(), None, False
        except ValueError:  # no client in this process: start our own
            pass
    options = {"n_workers": _default_workers(), "threads_per_worker": 1, "processes": True,
               "scheduler_port": 0, "dashboard_address": ":0"}
    options.update(cluster_options or {})
    cluster = LocalCluster(**options)
    return Client(cluster, set_as_default=False), cluster, True


def shutdown(client: Any, cluster: Any) -> None:
    """Close a client and cluster we own (a finaliser: no reference to the FiniteSum)."""
    for thing in (client, cluster):
        if thing is not None:
            try:
                thing.close()
            except Exception:  # noqa: BLE001 - at exit the loop may already be gone
                pass
