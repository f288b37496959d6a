"""asv: seconds per program step of every pipeline stage, against program size.

The pipeline should take linear time: tracing, the derivative transforms,
rematerialisation, the NumPy evaluator, planning and code generation must each cost
the same per step whatever the program's length, so each tracked curve here must be
flat in ``steps``. Programs are Rosenbrock written as a Python loop over scalar terms
(``benchmarks/pipeline_report.py``, which also prints the whole table in one run and
goes to 1e5 steps) and its variant over blocks of 8 entries. Sizes stop at 1e4 steps
so a full ``asv run`` stays quick; numba compilation is not timed here.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pipeline_report  # noqa: E402  (programs and stage timings are shared)

SIZES = [100, 1000, 10000]
KINDS = ["scalar", "vector"]


class PipelinePerStep:
    """Seconds per step of each stage (denominator: the traced program's steps, or the
    gradient program's for the engine stages)."""

    params = [KINDS, pipeline_report.STAGES, SIZES]
    param_names = ["kind", "stage", "steps"]
    tiny_params = [["scalar"], pipeline_report.STAGES, [100]]
    timeout = 1200

    def setup_cache(self):
        kinds, _, sizes = self.params  # every stage of each program, timed once
        return {(kind, n): pipeline_report.stage_times(kind, n) for kind in kinds for n in sizes}

    def track_seconds_per_step(self, results, kind, stage, steps):
        return pipeline_report.per_step(results[(kind, steps)], stage)

    track_seconds_per_step.unit = "seconds"
