"""Progress bars of the command line, drawn by tqdm.

A bar counts work items (the demo's runs, the bench's measurements) or, with no
known total, iterations; tqdm shows the count, the elapsed time, the rate and, when
the total is known, the time remaining. A postfix says what is running now (the
problem, the method, its current iteration and f).

The bar is drawn on standard error only when both standard output and standard
error are terminals, so piped or captured output stays clean, and only after
``delay`` seconds, so quick commands never flicker. A ticker redraws it while one
long step (a compilation, a dense Hessian) blocks the caller. When the bar is off,
a *heartbeat* can print the same meter as a line of its own every so many seconds:
a long job in a log still shows that it is alive and where it is.
"""

from __future__ import annotations

import io
import sys
import threading
from typing import Any, Optional, TextIO

from tqdm import tqdm  # type: ignore[import-untyped]  # no inline types

__all__ = ["Progress", "interactive"]


def interactive(stream: Optional[TextIO] = None) -> bool:
    """Whether a progress display should be drawn (stdout and ``stream`` are terminals)."""
    stream = sys.stderr if stream is None else stream
    try:
        return bool(sys.stdout.isatty() and stream.isatty())
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


class _Discard(io.TextIOBase):
    """Where an undrawn bar writes: tqdm keeps its counters, nothing is shown."""

    def write(self, text: str) -> int:
        return len(text)


class Progress:
    """A tqdm bar (``total`` known) or counter (``total=None``) with a status postfix.

    Parameters
    ----------
    total : int, optional
        Number of work items; ``None`` counts without a total (no time remaining).
    desc : str
        Text before the meter (``"demo"``, ``"trust-ncg"``).
    unit : str
        What is counted: ``"run"``, ``"it"`` (iterations), ...
    stream : file, optional
        Where to draw (default ``sys.stderr``).
    enabled : bool, optional
        Force the bar on or off; by default it is on when :func:`interactive`.
    delay : float
        Seconds of silence before the first drawing.
    heartbeat : float, optional
        When the bar is off, print its meter (with a newline) to ``stream`` every
        ``heartbeat`` seconds; ``None`` (the default) prints nothing.

    Notes
    -----
    Print results through :meth:`write`, which clears the bar, prints and redraws,
    so result lines and the bar never share a line.

    Examples
    --------
    >>> with Progress(3, desc="demo", unit="run", enabled=False) as bar:
    ...     for name in ["a", "b", "c"]:
    ...         bar.advance(note=name)
    >>> bar.done
    3
    """

    _TICK = 0.5  # seconds between redraws while the caller is blocked

    def __init__(self, total: Optional[int] = None, *, desc: str = "", unit: str = "it",
                 stream: Optional[TextIO] = None, enabled: Optional[bool] = None,
                 delay: float = 1.0, heartbeat: Optional[float] = None) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.enabled = interactive(self.stream) if enabled is None else bool(enabled)
        self.heartbeat = heartbeat
        self.delay = delay
        self.note = ""
        # an undrawn bar still keeps the counters and the meter the heartbeat prints;
        # in a log, plain ASCII
        self.bar: Any = tqdm(total=total, desc=desc or None, unit=unit,
                             file=self.stream if self.enabled else _Discard(),
                             delay=delay, leave=False, dynamic_ncols=True,
                             ascii=None if self.enabled else True, mininterval=0.2)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    # ---- state ---------------------------------------------------------------------------
    @property
    def done(self) -> int:
        """Items counted so far."""
        return int(self.bar.n)

    def elapsed(self) -> float:
        """Seconds since the bar was created."""
        return float(self.bar.format_dict["elapsed"])

    def advance(self, n: int = 1, note: Optional[str] = None) -> None:
        """Count ``n`` more items done (and set the note)."""
        if note is not None:
            self.update(note)
        self.bar.update(n)

    def update(self, note: Optional[str] = None) -> None:
        """Set the note, what is running now (shown after the meter, at the next redraw)."""
        if note is not None and note != self.note:
            self.note = note
            self.bar.set_postfix_str(note, refresh=False)

    def line(self) -> str:
        """The meter as text: count, elapsed, rate (and remaining), then the note."""
        return str(self.bar)

    # ---- drawing -------------------------------------------------------------------------
    def _beat(self) -> None:
        assert self.heartbeat is not None
        while not self._stop.wait(self.heartbeat):
            with self._lock:
                if self._stop.is_set():
                    return
                if not self.note:  # nothing said yet (the run is just starting): no bare meter
                    continue
                self.stream.write(self.line() + "\n")
                self.stream.flush()

    def _tick(self) -> None:
        if not self.enabled:
            self._beat()
            return
        if self._stop.wait(self.delay):  # a quick command: never drawn
            return
        while not self._stop.wait(self._TICK):
            with self._lock:
                self.bar.refresh()

    def write(self, text: str, file: Optional[TextIO] = None) -> None:
        """Print ``text`` (a line or several) above the bar."""
        out = sys.stdout if file is None else file
        with self._lock:
            if self.enabled:
                tqdm.write(text, file=out)
            else:
                print(text, file=out)
            out.flush()

    def close(self) -> None:
        """Stop the ticker and clear the bar."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            self.bar.close()

    def __enter__(self) -> "Progress":
        running = self.enabled or self.heartbeat is not None
        if running and self._thread is None:
            self._thread = threading.Thread(target=self._tick, name="newtonad-progress",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
