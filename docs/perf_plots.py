"""Performance figures and tables for the docs, from benchmark output.

Sources, each optional:

* the asv results of ``make bench`` (``.asv/results/<machine>/*.json``): time per
  frame column against k (``bench_frames``) and the solver suite
  (``bench_solvers``); the newest result file holding each suite is used;
* when no asv results exist, the same frame workloads measured on the spot with
  :mod:`newtonad.cli.workloads` (what ``newtonad bench`` runs);
* the JSON written by ``python benchmarks/compare.py --json docs/_data/compare.json``:
  newtonad against hand-fused numba, JAX, torch.func and autograd.

Run as a script to write the figures and print the tables::

    python docs/perf_plots.py --out /tmp/perf
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

from newtonad.cli.bench import render
from newtonad.cli.workloads import FRAME_MODES, KS, NS, Measurement, measure

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ASV_RESULTS = ROOT / ".asv" / "results"
COMPARE_JSON = HERE / "_data" / "compare.json"

_FRAME_CLASSES = {"ForwardFrame": "jvp", "ReverseFrame": "vjp", "HVPFrame": "hvp",
                  "LinearizedHVPFrame": "linearized-hvp"}


@dataclass
class Source:
    """Where numbers came from, for the caption."""

    kind: str  # "asv", "measured" or "missing"
    detail: str

    def __str__(self) -> str:
        return f"source: {self.kind} ({self.detail})"


# ---- asv -----------------------------------------------------------------------------------

def _asv_files(results_dir: Path) -> list[dict]:
    """Every asv result file under ``results_dir``, newest first."""
    docs = []
    for path in results_dir.glob("*/*.json"):
        if path.name == "machine.json":
            continue
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and "results" in data:
            data["_path"] = str(path)
            docs.append(data)
    return sorted(docs, key=lambda d: d.get("date", 0), reverse=True)


def _expand(entry: Any, columns: list[str]) -> list[tuple[tuple, Any]]:
    """``[(param combination, value)]`` of one asv result entry."""
    record = dict(zip(columns, entry)) if isinstance(entry, list) else {"result": entry}
    values = record.get("result")
    params = record.get("params") or []
    combos = list(itertools.product(*params)) if params else [()]
    if not isinstance(values, list):
        values = [values]
    return list(zip(combos, values))


def _describe(doc: dict) -> str:
    when = datetime.fromtimestamp(doc.get("date", 0) / 1000, tz=timezone.utc)
    return f"asv run of commit {str(doc.get('commit_hash', '?'))[:8]}, {when:%Y-%m-%d %H:%M} UTC"


def asv_frames(results_dir: Path = ASV_RESULTS) -> tuple[list[Measurement], Optional[str]]:
    """Frame measurements from the newest asv result file that has them."""
    for doc in _asv_files(results_dir):
        columns = doc.get("result_columns", ["result", "params"])
        out: list[Measurement] = []
        for name, entry in doc["results"].items():
            parts = name.split(".")
            if parts[0] != "bench_frames":
                continue
            if parts[1] in _FRAME_CLASSES and parts[2] == "track_seconds_per_column":
                for (k, n), value in _expand(entry, columns):
                    if isinstance(value, (int, float)):
                        out.append(Measurement(_FRAME_CLASSES[parts[1]], int(n), int(k),
                                               float(value) * int(k)))
            elif parts[1] == "ValueAndGrad" and parts[2] == "track_seconds":
                for (n,), value in _expand(entry, columns):
                    if isinstance(value, (int, float)):
                        out.append(Measurement("value-and-grad", int(n), 1, float(value)))
        if any(m.mode != "value-and-grad" for m in out):
            order = {mode: i for i, mode in enumerate((*FRAME_MODES, "value-and-grad"))}
            out.sort(key=lambda m: (m.n, order[m.mode], m.k))
            return out, _describe(doc)
    return [], None


def asv_solvers(results_dir: Path = ASV_RESULTS) -> tuple[list[dict], Optional[str]]:
    """Rows ``{method, problem, variant, nfev, nhev, nit, time, overhead}`` from asv."""
    for doc in _asv_files(results_dir):
        columns = doc.get("result_columns", ["result", "params"])
        rows: dict[tuple, dict] = {}
        for name, entry in doc["results"].items():
            parts = name.split(".")
            if parts[:2] != ["bench_solvers", "Solvers"] or not parts[2].startswith("track_"):
                continue
            field = parts[2][len("track_"):]
            for combo, value in _expand(entry, columns):
                combo = tuple(str(c).strip("'\"") for c in combo)
                rows.setdefault(combo, dict(zip(("method", "problem", "variant"), combo)))
                rows[combo][field] = value
        if rows:
            return list(rows.values()), _describe(doc)
    return [], None


# ---- measuring on the spot -----------------------------------------------------------------

def measure_frames(ns: tuple[int, ...] = NS, ks: tuple[int, ...] = KS, repeat: int = 3,
                   budget: float = 0.2) -> list[Measurement]:
    """The asv frame workloads, measured now (best of ``repeat`` calls)."""
    out = [measure(mode, n, k, repeat=repeat, budget=budget)
           for n in ns for mode in FRAME_MODES for k in ks]
    return out + [measure("value-and-grad", n, repeat=repeat, budget=budget) for n in ns]


def frame_measurements(results_dir: Path = ASV_RESULTS) -> tuple[list[Measurement], Source]:
    """asv results when there are any, else a measurement made now."""
    data, detail = asv_frames(results_dir)
    if data:
        return data, Source("asv", detail or "")
    import newtonad.api

    return measure_frames(), Source(
        "measured", f"no asv results found; measured while building the docs, engine "
                    f"{newtonad.api.DEFAULT_ENGINE!r}, best of 3 calls")


# ---- compare.py ----------------------------------------------------------------------------

def load_compare(path: Path = COMPARE_JSON) -> Optional[dict]:
    """The JSON of ``benchmarks/compare.py --json``, or None when absent or unreadable."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data else None


def compare_per_column(results: dict, problem: str) -> dict[str, list[tuple[int, float]]]:
    """``{system: [(k, seconds per column)]}`` of HVP frames on ``problem``."""
    out: dict[str, list[tuple[int, float]]] = {}
    for system, values in results.items():
        for key, value in values.items():
            m = re.fullmatch(rf"{re.escape(problem)}\|hvp k=(\d+)", key)
            if m and isinstance(value, (int, float)):
                k = int(m.group(1))
                out.setdefault(system, []).append((k, value / k))
    return {s: sorted(v) for s, v in out.items()}


def compare_problems(results: dict) -> list[str]:
    """Problems with HVP frames over more than one k, in first-seen order."""
    seen: dict[str, set] = {}
    for values in results.values():
        for key in values:
            problem, _, measure_ = key.partition("|")
            if measure_.startswith("hvp k="):
                seen.setdefault(problem, set()).add(measure_)
    return [p for p, ks in seen.items() if len(ks) > 1]


# ---- figures -------------------------------------------------------------------------------

def plot_frames(data: list[Measurement], title: str = "newtonad: time per frame column") -> Any:
    """Seconds per column against k, one panel per n (see ``newtonad bench --plot``)."""
    from newtonad.cli.plots import plot_per_column

    return plot_per_column(data, title=title)


def plot_compare(results: dict) -> Any:
    """HVP seconds per column against k per system, one panel per problem."""
    import matplotlib.pyplot as plt

    problems = compare_problems(results)
    fig, axes = plt.subplots(1, max(1, len(problems)), figsize=(4.2 * max(1, len(problems)), 3.6),
                             squeeze=False)
    for ax, problem in zip(axes[0], problems):
        for system, pts in compare_per_column(results, problem).items():
            style = "-" if system.startswith("newtonad") else "--"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", ms=3,
                    label=system)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(problem)
        ax.set_xlabel("k")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("HVP seconds per column")
    axes[0][-1].legend(fontsize="small")
    fig.tight_layout()
    return fig


def solver_table(rows: list[dict]) -> str:
    """A text table of the solver suite."""
    from newtonad.cli.table import Column, Table

    table = Table([Column("method", 18, "<"), Column("problem", 22, "<"),
                   Column("variant", 7, "<"), Column("nit", 5), Column("nfev", 5),
                   Column("nhev", 6), Column("time", 8), Column("overhead", 8)])

    def ms(v: Any) -> str:
        return f"{v * 1e3:.1f} ms" if isinstance(v, (int, float)) else "-"

    return table.render([[r["method"], r["problem"], r["variant"], r.get("nit"), r.get("nfev"),
                          r.get("nhev"), ms(r.get("time")), ms(r.get("overhead"))]
                         for r in rows])


# ---- script --------------------------------------------------------------------------------

def main(argv: Optional[list[str]] = None) -> int:
    """Write the figures to ``--out`` and print the tables."""
    import matplotlib

    matplotlib.use("Agg")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--asv", type=Path, default=ASV_RESULTS, help="asv results directory")
    ap.add_argument("--compare", type=Path, default=COMPARE_JSON, help="compare.py JSON")
    ap.add_argument("--out", type=Path, default=Path("."), help="where to write the PNGs")
    ns = ap.parse_args(argv)
    ns.out.mkdir(parents=True, exist_ok=True)
    data, source = frame_measurements(ns.asv)
    print(source)
    print(render(data))
    plot_frames(data).savefig(ns.out / "frames.png", dpi=110)
    rows, detail = asv_solvers(ns.asv)
    if rows:
        print(f"\nsolvers ({detail}):\n{solver_table(rows)}")
    results = load_compare(ns.compare)
    if results:
        plot_compare(results).savefig(ns.out / "compare.png", dpi=110)
        print(f"\nwrote {ns.out / 'compare.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
