"""A one-line progress display for work that runs longer than a second.

It draws on standard error with carriage returns, and only when both standard
output and standard error are terminals: piped or captured output stays clean.
Nothing is drawn during the first ``delay`` seconds, so quick commands never
flicker. A background ticker keeps the clock moving while one long step (a
compilation, a slow solve) blocks the caller. When the display is off (output is
piped or logged), a *heartbeat* can instead print the same line, as a line of its
own, every so many seconds: a long job then still shows that it is alive and
where it is.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from typing import Optional, TextIO

__all__ = ["Progress", "interactive"]


def interactive(stream: Optional[TextIO] = None) -> bool:
    """Whether a progress display should be drawn (stdout and ``stream`` are terminals)."""
    stream = sys.stderr if stream is None else stream
    try:
        return bool(sys.stdout.isatty() and stream.isatty())
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


class Progress:
    """A progress bar (when ``total`` is known) or a status line (when it is not).

    Parameters
    ----------
    total : int, optional
        Number of work items; ``None`` draws the note and the elapsed time only.
    stream : file, optional
        Where to draw (default ``sys.stderr``).
    enabled : bool, optional
        Force the display on or off; by default it is on when :func:`interactive`.
    delay : float
        Seconds of silence before the first drawing.
    heartbeat : float, optional
        When the display is off, print its line (with a newline) to ``stream``
        every ``heartbeat`` seconds; ``None`` (the default) prints nothing.

    Notes
    -----
    Print results through :meth:`write`, which erases the display, prints and
    redraws, so result lines and the display never share a line.

    Examples
    --------
    >>> with Progress(3, enabled=False) as bar:
    ...     for name in ["a", "b", "c"]:
    ...         bar.advance(note=name)
    """

    _TICK = 0.2  # seconds between redraws

    def __init__(self, total: Optional[int] = None, *, stream: Optional[TextIO] = None,
                 enabled: Optional[bool] = None, delay: float = 1.0,
                 heartbeat: Optional[float] = None) -> None:
        self.total = total
        self.stream = sys.stderr if stream is None else stream
        self.enabled = interactive(self.stream) if enabled is None else bool(enabled)
        self.delay = delay
        self.heartbeat = heartbeat
        self.done = 0
        self.note = ""
        self.start = time.perf_counter()
        self._drawn = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    # ---- state ---------------------------------------------------------------------------
    def elapsed(self) -> float:
        """Seconds since the display was created."""
        return time.perf_counter() - self.start

    def advance(self, n: int = 1, note: Optional[str] = None) -> None:
        """Count ``n`` more items done (and set the note)."""
        self.done += n
        if note is not None:
            self.note = note

    def update(self, note: Optional[str] = None) -> None:
        """Set the note: what is running now."""
        if note is not None:
            self.note = note

    # ---- drawing -------------------------------------------------------------------------
    def line(self, width: int = 80) -> str:
        """The text of the display, at most ``width - 1`` characters."""
        clock = f"{self.elapsed():6.1f}s"
        if self.total:
            frac = min(1.0, self.done / self.total)
            bar_width = 24
            filled = int(round(frac * bar_width))
            head = (f"[{'#' * filled}{'.' * (bar_width - filled)}] "
                    f"{self.done}/{self.total} {clock}")
        else:
            head = clock
        text = f"{head}  {self.note}" if self.note else head
        return text[:max(0, width - 1)]

    def _width(self) -> int:
        return shutil.get_terminal_size((80, 24)).columns

    def _draw(self) -> None:
        width = self._width()
        self.stream.write("\r" + self.line(width).ljust(width - 1))
        self.stream.flush()
        self._drawn = True

    def _erase(self) -> None:
        if self._drawn:
            self.stream.write("\r" + " " * (self._width() - 1) + "\r")
            self.stream.flush()
            self._drawn = False

    def _beat(self) -> None:
        assert self.heartbeat is not None
        while not self._stop.wait(self.heartbeat):
            with self._lock:
                if self._stop.is_set():
                    return
                if not self.note:  # nothing said yet (the run is just starting): no bare clock
                    continue
                self.stream.write(self.line(10**4) + "\n")
                self.stream.flush()

    def _tick(self) -> None:
        if not self.enabled:
            self._beat()
            return
        if self._stop.wait(self.delay):
            return
        while True:
            with self._lock:
                if self._stop.is_set():
                    return
                self._draw()
            if self._stop.wait(self._TICK):
                return

    def write(self, text: str, file: Optional[TextIO] = None) -> None:
        """Print ``text`` (a line or several) above the display."""
        out = sys.stdout if file is None else file
        with self._lock:
            self._erase()
            print(text, file=out)
            out.flush()

    def close(self) -> None:
        """Stop the ticker and erase the display."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            self._erase()

    def __enter__(self) -> "Progress":
        running = self.enabled or self.heartbeat is not None
        if running and self._thread is None:
            self._thread = threading.Thread(target=self._tick, name="newtonad-progress",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
