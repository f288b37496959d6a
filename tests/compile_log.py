"""A log of the numba kernels the tests load, to find duplicated compiles.

Enabled by ``NEWTONAD_TEST_COMPILE_LOG=<path>``: every kernel the engine loads in a test
process appends one JSON line to ``<path>.<worker>`` (``main`` without xdist) with the
test's node id, the kernel's module name (a digest of its source, so the same kernel in
two tests has one name), whether numba compiled it or read it from its cache, and the
seconds it took (wall, and CPU of the calling thread). Programs the auto engine sends to
its background worker are logged as ``background_<digest of the program>`` with the
worker's (wall) seconds, compiled or read from the cache; split kernels' chunks compiled
in child processes are not seen.
Summarise with ``python -m tests.compile_log <path>``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

ENV_VAR = "NEWTONAD_TEST_COMPILE_LOG"
current_test = {"id": "<collection>"}


def install(path: str) -> None:
    """Wrap the engine's ``load`` so each call writes one line to ``path.<worker>``."""
    from newtonad.ad.engine import numba_engine

    original = numba_engine.load
    log = Path(f"{path}.{os.environ.get('PYTEST_XDIST_WORKER', 'main')}")

    def load(kernel, name_path=None):
        start, cpu = time.perf_counter(), time.thread_time()
        fn, dispatcher, where = original(kernel, name_path)
        stats = dispatcher.stats
        record = {"test": current_test["id"], "module": Path(where).stem,
                  "compiled": sum(stats.cache_misses.values()) > 0,
                  "seconds": round(time.perf_counter() - start, 3),
                  "cpu": round(time.thread_time() - cpu, 3),
                  "parallel": bool(kernel.parallel), "lines": kernel.source.count("\n")}
        with log.open("a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
        return fn, dispatcher, where

    numba_engine.load = load

    from newtonad.ad.engine import background

    ask = background.Compiler._ask

    def ask_and_log(self, worker, request):
        start = time.perf_counter()
        reply = ask(self, worker, request)
        if reply is not None and isinstance(request[0], bytes):  # a program sent to compile
            digest = hashlib.blake2b(request[0], digest_size=16).hexdigest()
            record = {"test": current_test["id"], "module": f"background_{digest}",
                      "compiled": True, "seconds": round(time.perf_counter() - start, 3),
                      "cpu": round(reply[1], 3), "parallel": False, "lines": -1}
            with log.open("a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")
        return reply

    background.Compiler._ask = ask_and_log


def summarise(path: str) -> None:
    """Print compile (CPU) seconds per test file and the kernels compiled more than once."""
    records = []
    for f in Path(path).parent.glob(Path(path).name + ".*"):
        worker = f.suffix[1:]
        records += [dict(json.loads(line), worker=worker) for line in f.open(encoding="utf-8")]
    for r in records:  # CPU seconds: wall seconds on a loaded machine say little
        r["seconds"] = r.get("cpu", r["seconds"])
    compiled = [r for r in records if r["compiled"]]
    per_file: dict[str, list[float]] = defaultdict(list)
    for r in compiled:
        per_file[r["test"].split("::")[0]].append(r["seconds"])
    print(f"{len(records)} loads, {len(compiled)} compiles, "
          f"{sum(r['seconds'] for r in compiled):.0f} s compiling")
    for name, secs in sorted(per_file.items(), key=lambda kv: -sum(kv[1])):
        print(f"{sum(secs):8.1f} s {len(secs):4d} compiles  {name}")
    by_module: dict[str, list[dict]] = defaultdict(list)
    for r in compiled:
        by_module[r["module"]].append(r)
    dups = sorted((rs for rs in by_module.values() if len(rs) > 1),
                  key=lambda rs: -sum(r["seconds"] for r in rs[1:]))
    wasted = sum(r["seconds"] for rs in dups for r in rs[1:])
    print(f"\n{len(dups)} kernels compiled more than once, {wasted:.0f} s on the repeats")
    for rs in dups[:60]:
        print(f"{sum(r['seconds'] for r in rs[1:]):7.1f} s  x{len(rs)}  "
              + ", ".join(f"{r['worker']}:{r['test']}" for r in rs))


if __name__ == "__main__":
    summarise(sys.argv[1])
