"""Performance figures and tables for the docs, from benchmark results saved in ``docs/_data``.

The docs build never times anything: it draws what these files hold, each with the
machine and the date it was measured on.

* ``frames.json``: time per frame column against k (the workloads of the asv suite's
  ``bench_frames`` and of ``newtonad bench``), written by ``record``;
* ``solvers.json``: the asv suite's ``bench_solvers.Solvers`` runs, written by ``record``;
* ``compare.json``: ``python benchmarks/compare.py --json docs/_data/compare.json``,
  newtonad against hand-fused numba, JAX, torch.func and autograd; its ``_meta`` entry
  says where and when it ran.

Record new results (a few minutes; run it on a quiet machine), then rebuild the docs::

    python docs/perf_plots.py record
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "_data"

#: engine of the recorded frames: compiled kernels, as a hot program runs in a solver
ENGINE = "numba"


# ---- where and when ------------------------------------------------------------------------

def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, Any]:
    """The machine, the software and the commit a recording runs on."""
    import numba
    import numpy as np

    import newtonad

    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return {"cpu": _cpu_model(), "cores": os.cpu_count(), "os": platform.platform(),
            "python": platform.python_version(), "numpy": np.__version__,
            "numba": numba.__version__, "numba threads": numba.config.NUMBA_NUM_THREADS,
            "newtonad": newtonad.__version__, "commit": commit,
            "load average at start": os.getloadavg()[0]}


def caption(meta: dict[str, Any]) -> str:
    """``<date>, <cpu> (<cores> cores)``: the line each figure and table carries."""
    m = meta.get("machine", {})
    where = m.get("cpu", "machine not recorded")
    if m.get("cores"):
        where += f" ({m['cores']} cores)"
    if m.get("numba threads"):
        where += f", numba on {m['numba threads']} thread{'s' if m['numba threads'] > 1 else ''}"
    if m.get("load average at start"):  # other jobs on a shared machine slow the numbers
        where += f", load average {m['load average at start']:.1f}"
    return f"measured {meta.get('date', 'on an unrecorded date')}, {where}"


# ---- saved results -------------------------------------------------------------------------

def load(name: str, folder: Path = DATA) -> dict[str, Any]:
    """The saved results ``docs/_data/<name>.json``."""
    path = folder / f"{name}.json"
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path} is missing: run `python docs/perf_plots.py record` "
            "(or benchmarks/compare.py --json for compare.json)") from None


def frames(saved: dict[str, Any]) -> list[Any]:
    """The saved frame measurements as :class:`newtonad.cli.workloads.Measurement`."""
    from newtonad.cli.workloads import Measurement

    return [Measurement(r["mode"], r["n"], r["k"], r["seconds"]) for r in saved["results"]]


def frame_tables(saved: dict[str, Any]) -> str:
    """Seconds per column, one table per n (``newtonad bench``'s layout), with the caption."""
    from newtonad.cli.bench import render

    return f"{caption(saved)}, engine {saved['engine']!r}\n\n{render(frames(saved))}"


def solver_table(saved: dict[str, Any]) -> str:
    """The solver suite as a text table, with the caption."""
    from newtonad.cli.table import Column, Table

    table = Table([Column("method", 18, "<"), Column("problem", 22, "<"),
                   Column("variant", 7, "<"), Column("nit", 5), Column("nfev", 5),
                   Column("nhev", 6), Column("time", 8), Column("overhead", 8)])

    def ms(v: Any) -> str:
        return f"{v * 1e3:.1f} ms" if isinstance(v, (int, float)) else "-"

    rows = [[r["method"], r["problem"], r["variant"], r.get("nit"), r.get("nfev"),
             r.get("nhev"), ms(r.get("time")), ms(r.get("overhead"))]
            for r in saved["results"]]
    return f"{caption(saved)}, engine {saved['engine']!r}\n\n{table.render(rows)}"


def compare_results(saved: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{system: {measure: value}}`` of a compare.py JSON (its ``_meta`` entry left out)."""
    return {k: v for k, v in saved.items() if not k.startswith("_")}


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

def plot_frames(saved: dict[str, Any]) -> Any:
    """Seconds per column against k, one panel per n; the caption in the title."""
    from newtonad.cli.plots import plot_per_column

    fig = plot_per_column(frames(saved), title=f"time per frame column, engine "
                                                f"{saved['engine']!r}\n{caption(saved)}")
    fig.set_size_inches(10, 4.2)
    fig.tight_layout()
    return fig


def plot_compare(saved: dict[str, Any], ncols: int = 3) -> Any:
    """HVP seconds per column against k per system, one panel per problem, ``ncols`` a row."""
    import matplotlib.pyplot as plt

    results = compare_results(saved)
    problems = compare_problems(results)
    nrows = max(1, -(-len(problems) // ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(10, 3.3 * nrows + 0.6), squeeze=False)
    flat = axes.ravel()
    for ax, problem in zip(flat, problems):
        for system, pts in compare_per_column(results, problem).items():
            style = "-" if system.startswith("newtonad") else "--"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", ms=3,
                    label=system)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(problem)
        ax.set_xlabel("k")
        ax.grid(True, which="both", alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel("HVP seconds per column")
    for ax in flat[len(problems):]:  # the legend goes in a spare panel when there is one
        ax.axis("off")
    handles, labels = flat[0].get_legend_handles_labels()
    spare = flat[len(problems)] if len(problems) < flat.size else None
    if spare is not None:
        spare.legend(handles, labels, loc="center", title="system")
    else:
        flat[-1].legend(fontsize="small")
    fig.suptitle(f"HVP frames per column\n{caption(saved.get('_meta', {}))}")
    fig.tight_layout()
    return fig


# ---- recording -----------------------------------------------------------------------------

def _stamp() -> dict[str, Any]:
    return {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": machine()}


def record_frames(repeat: int = 15, budget: float = 3.0) -> dict[str, Any]:
    """The frame workloads on the numba engine, best of ``repeat`` calls each."""
    from newtonad.cli.workloads import FRAME_MODES, KS, NS, measure

    stamp = _stamp()
    out = [measure(mode, n, k, engine=ENGINE, repeat=repeat, budget=budget)
           for n in NS for mode in FRAME_MODES for k in KS]
    out += [measure("value-and-grad", n, engine=ENGINE, repeat=repeat, budget=budget)
            for n in NS]
    return {**stamp, "engine": ENGINE, "command": "python docs/perf_plots.py record",
            "results": [m.to_dict() for m in out]}


def record_solvers() -> dict[str, Any]:
    """Every run of the asv suite's ``bench_solvers.Solvers``, once."""
    sys.path.insert(0, str(ROOT))
    from benchmarks import bench_solvers as bs

    stamp = _stamp()
    rows = []
    for name, (registry_name, n) in bs.PROBLEMS.items():
        from newtonad import problems

        problem = problems.get(registry_name, n=n) if n else problems.get(registry_name)
        bs._warm_up(problem)
        for method in bs.METHODS:
            for variant in bs.VARIANTS:
                delay = bs.DELAY if variant == "slow" else 0.0
                rows.append({"method": method, "problem": name, "variant": variant,
                             **bs.run_one(method, problem, delay)})
    return {**stamp, "engine": bs.ENGINE, "command": "python docs/perf_plots.py record",
            "results": rows}


def main(argv: Optional[list[str]] = None) -> int:
    """``record``: measure and write ``frames.json`` and ``solvers.json``; ``show``: print."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=("record", "show"))
    ap.add_argument("--only", choices=("frames", "solvers"), help="record one of the two")
    ap.add_argument("--data", type=Path, default=DATA, help="folder of the JSON files")
    ns = ap.parse_args(argv)
    if ns.action == "record":
        ns.data.mkdir(parents=True, exist_ok=True)
        for name, fn in (("frames", record_frames), ("solvers", record_solvers)):
            if ns.only in (None, name):
                (ns.data / f"{name}.json").write_text(json.dumps(fn(), indent=1) + "\n")
                print(f"wrote {ns.data / f'{name}.json'}")
    print(frame_tables(load("frames", ns.data)))
    print(solver_table(load("solvers", ns.data)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
