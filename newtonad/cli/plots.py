"""Matplotlib figures of benchmark results (``newtonad bench --plot``, the docs)."""

from __future__ import annotations

from typing import Any, Iterable, Optional

from .errors import UsageError

__all__ = ["require_matplotlib", "plot_per_column"]

_STYLE = {"jvp": ("C0", "o"), "vjp": ("C1", "s"), "hvp": ("C2", "^"),
          "linearized-hvp": ("C3", "v")}


def require_matplotlib() -> Any:
    """``matplotlib.pyplot`` with the non-interactive Agg backend, or a UsageError."""
    try:
        import matplotlib
    except ImportError:
        raise UsageError("plotting needs matplotlib, newtonad's plot extra: "
                         "pip install 'newtonad[plot]' (or pip install matplotlib)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _null_locator() -> Any:
    from matplotlib.ticker import NullLocator

    return NullLocator()


def plot_per_column(measurements: Iterable[Any], path: Optional[str] = None,
                    title: str = "time per frame column") -> Any:
    """Seconds per column against k, one line per mode, one panel per n.

    Parameters
    ----------
    measurements : iterable
        Objects with ``mode``, ``n``, ``k`` and ``per_column`` (e.g.
        :class:`newtonad.cli.workloads.Measurement`); ``value-and-grad`` entries
        are drawn as a dashed reference line.
    path : str, optional
        Save the figure there (format from the suffix).
    title : str
        Figure title.

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = require_matplotlib()
    data = list(measurements)
    ns = sorted({m.n for m in data})
    fig, axes = plt.subplots(1, max(1, len(ns)), figsize=(4.8 * max(1, len(ns)), 3.8),
                             squeeze=False)
    for ax, n in zip(axes[0], ns):
        frames = [m for m in data if m.n == n and m.mode != "value-and-grad"]
        for mode in dict.fromkeys(m.mode for m in frames):
            pts = sorted((m.k, m.per_column) for m in frames if m.mode == mode)
            color, marker = _STYLE.get(mode, (None, "x"))
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=marker, color=color,
                    label=mode)
        for m in data:
            if m.n == n and m.mode == "value-and-grad":
                ax.axhline(m.seconds, color="0.5", linestyle="--", label="value+grad (per call)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ks = sorted({m.k for m in frames})
        if ks:  # label k = 1, 2, 4, ... rather than powers of two
            ax.set_xticks(ks, [str(k) for k in ks])
            ax.xaxis.set_minor_locator(_null_locator())
        ax.set_xlabel("k (frame columns)")
        ax.set_ylabel("seconds per column")
        ax.set_title(f"n = {n:,}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small", loc="best")
    fig.suptitle(title)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig
