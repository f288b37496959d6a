"""newtonad's run-time settings: one object, ``newtonad.settings``, read by every module that
needs a default (today the engine), and changed for a block with
:meth:`~newtonad.Settings.override`."""

from __future__ import annotations

import contextlib
import os
from typing import Any, Iterator

__all__ = ["Settings", "settings"]

#: the engine when ``NEWTONAD_ENGINE`` is not set: NumPy at once, the numba kernel
#: (compiled in a background process) once it is ready; "numba" (compiled before the
#: first call returns, kept in the disk cache) and "numpy" (the reference evaluator,
#: never compiles) are opt-ins
DEFAULT_ENGINE = "auto"


class Settings:
    """The run-time settings of newtonad (the one instance is ``newtonad.settings``).

    Attributes
    ----------
    engine : str
        The engine that runs derived programs when a function is given none
        (``engine=None``): ``"auto"``, ``"numba"`` or ``"numpy"``. Read from the
        ``NEWTONAD_ENGINE`` environment variable at import (default ``"auto"``); every
        call with ``engine=None`` reads it then, and an ``Objective`` when it is made.

    Examples
    --------
    >>> import numpy as np, newtonad as nad
    >>> with nad.settings.override(engine="numpy"):
    ...     nad.settings.engine
    ...     float(nad.grad(lambda x: np.sum(x ** 2))(np.ones(2))[0])
    'numpy'
    2.0
    """

    def __init__(self) -> None:
        self._engine = os.environ.get("NEWTONAD_ENGINE", DEFAULT_ENGINE)

    @property
    def engine(self) -> str:
        """The default engine (see the class).

        Returns
        -------
        str
            The engine's name.

        Examples
        --------
        >>> import newtonad as nad
        >>> with nad.settings.override(engine="numba"):
        ...     nad.settings.engine
        'numba'
        """
        return self._engine

    @engine.setter
    def engine(self, name: str) -> None:
        if not (isinstance(name, str) and name):
            raise TypeError(f"settings.engine must be an engine's name, such as 'auto', "
                            f"'numba' or 'numpy'; got {name!r}")
        self._engine = name

    @contextlib.contextmanager
    def override(self, **changes: Any) -> Iterator[Settings]:
        """Change settings for a ``with`` block; the old values come back after it.

        Parameters
        ----------
        **changes
            New values by name (``engine="numpy"``).

        Yields
        ------
        Settings
            This object, changed.

        Raises
        ------
        AttributeError
            For a name that is not a setting.

        Notes
        -----
        The settings are the process's: a change made here is seen by every thread
        while the block runs (meant for tests and scripts, not for concurrent code).

        Examples
        --------
        >>> import numpy as np, newtonad as nad
        >>> with nad.settings.override(engine="numpy"):
        ...     obj = nad.Objective(lambda x: np.sum(x ** 2))
        >>> obj.engine
        'numpy'
        """
        unknown = sorted(set(changes) - {"engine"})
        if unknown:
            raise AttributeError(f"unknown setting(s) {', '.join(unknown)}; the settings "
                                 "are: engine")
        saved = {name: getattr(self, name) for name in changes}
        try:
            for name, value in changes.items():
                setattr(self, name, value)
            yield self
        finally:
            for name, value in saved.items():
                setattr(self, name, value)

    def __repr__(self) -> str:
        return f"Settings(engine={self.engine!r})"


#: the settings every module reads
settings = Settings()
settings.__doc__ = """The settings every module of newtonad reads (one :class:`~newtonad.Settings`).

Examples
--------
>>> import newtonad as nad
>>> nad.settings.engine in ("auto", "numba", "numpy")
True
"""
