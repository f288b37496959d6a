"""scipy's own tests of ``minimize`` and ``least_squares``, run with newtonad's in their place.

The yardstick of "never worse than scipy": the tests that scipy 1.17 ships in its
installed wheel (``scipy/optimize/tests``) are run twice by pytest in a subprocess, once
as they are and once with ``scipy.optimize.minimize`` and ``scipy.optimize.least_squares``
replaced by ``newtonad.minimize`` and ``newtonad.least_squares``. Nothing of scipy's is
copied: a small pytest plugin, written to a temporary directory at run time, swaps the
two functions before the test modules are imported (so ``from scipy.optimize import
minimize`` and ``optimize.minimize(...)`` both reach the replacement) and records, per
test, whether it called one of them and how it ended.

Only tests that call one of the two functions (on scipy's run) and pass on scipy count.
The report gives those numbers, the pass rate on newtonad, and the failures grouped by
cause (a cause is read from the exception and the failing line of the test; see
:func:`cause`). ``--list`` prints every failing test id under its group.

Run::

    .venv/bin/python benchmarks/scipy_suite.py              # both sides, default files
    .venv/bin/python benchmarks/scipy_suite.py --reuse      # newtonad side only, scipy's
                                                            # results from the last run
    .venv/bin/python benchmarks/scipy_suite.py --files test_least_squares.py -k bounds

Results are kept as JSON lines in ``--out`` (default ``$TMPDIR/newtonad-scipy-suite``).
A test that runs longer than ``--timeout`` seconds (default 120) is stopped and counted
as failed ("timeout"). Both runs take several minutes on two cores.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: the test files of scipy.optimize whose tests call minimize or least_squares directly
FILES = ("test_optimize.py", "test_least_squares.py", "test_minimize_constrained.py",
         "test_cobyla.py", "test_cobyqa.py", "test_slsqp.py", "test_tnc.py",
         "test_trustregion.py", "test_lbfgsb_hessinv.py", "test_lbfgsb_setulb.py",
         "test_constraint_conversion.py", "test_constraints.py", "test_regression.py")

PLUGIN = textwrap.dedent('''
    """Swaps scipy.optimize.minimize / least_squares and records each test (harness)."""
    import functools, json, os, signal, traceback
    import scipy.optimize

    SIDE = os.environ["NAD_SUITE_SIDE"]
    OUT = os.environ["NAD_SUITE_OUT"]
    TIMEOUT = float(os.environ.get("NAD_SUITE_TIMEOUT", "120"))
    CALLED = set()
    RECORDS = {}

    def _install():
        originals = {"minimize": scipy.optimize.minimize,
                     "least_squares": scipy.optimize.least_squares}
        if SIDE == "newtonad":
            import newtonad, newtonad.solvers  # binds scipy's own functions first
            targets = {"minimize": newtonad.minimize,
                       "least_squares": newtonad.least_squares}
        else:
            targets = originals
        for name, target in targets.items():
            def make(name=name, target=target):
                @functools.wraps(target)
                def swapped(*args, **kwargs):
                    CALLED.add(name)
                    return target(*args, **kwargs)
                return swapped
            setattr(scipy.optimize, name, make())

    class _Timeout(Exception):
        pass

    def _alarm(signum, frame):
        raise _Timeout(f"test ran longer than {TIMEOUT} s")

    def pytest_configure(config):
        _install()

    def pytest_runtest_setup(item):
        CALLED.clear()

    import pytest

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(item):
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, TIMEOUT)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(item, call):
        outcome = yield
        report = outcome.get_result()
        rec = RECORDS.setdefault(item.nodeid, {"id": item.nodeid, "outcome": "passed",
                                               "called": []})
        if report.skipped:
            rec["outcome"] = "skipped"
        elif report.failed:
            rec["outcome"] = "failed"
            if call.excinfo is not None and "error" not in rec:
                exc = call.excinfo.value
                rec["error"] = type(exc).__name__
                rec["message"] = str(exc).strip()[:400]
                entries = traceback.extract_tb(call.excinfo.tb)
                here = [e for e in entries if e.filename == str(item.path)]
                rec["line"] = (here[-1].line or "") if here else ""
                rec["where"] = [f"{os.path.basename(e.filename)}:{e.lineno}"
                                for e in entries[-3:]]
        if call.when == "call":
            rec["called"] = sorted(CALLED)
        if call.when == "teardown" or report.skipped and call.when == "setup":
            with open(OUT, "a") as fh:
                fh.write(json.dumps(rec) + "\\n")
''')


def run_side(side: str, files: list[str], out: Path, keyword: str | None,
             timeout: float) -> Path:
    """Run the scipy tests on one ``side`` ("scipy" or "newtonad"); the JSON-lines path."""
    tests = Path(_scipy_tests())
    result = out / f"{side}.jsonl"
    result.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "_nad_suite_plugin.py").write_text(PLUGIN)
        env = dict(os.environ, NAD_SUITE_SIDE=side, NAD_SUITE_OUT=str(result),
                   NAD_SUITE_TIMEOUT=str(timeout),
                   PYTHONPATH=os.pathsep.join([tmp, str(ROOT)]))
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "_nad_suite_plugin", "-p",
               "no:cacheprovider", "-n", "0", "--tb=no", "-W", "ignore::DeprecationWarning",
               *[str(tests / f) for f in files]]
        if keyword:
            cmd += ["-k", keyword]
        proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
        tail = proc.stdout.strip().splitlines()[-1:] or proc.stderr.strip().splitlines()[-3:]
        print(f"[{side}] {' '.join(tail)}", file=sys.stderr)
    return result


def _scipy_tests() -> str:
    import scipy.optimize

    return str(Path(scipy.optimize.__file__).parent / "tests")


def load(path: Path) -> dict[str, dict]:
    """Per test id, the last record of one run."""
    records: dict[str, dict] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            records[rec["id"]] = rec
    return records


#: (group, pattern on "error: message | failing line") -- the first that matches wins
CAUSES = (
    ("timeout", r"^_Timeout"),
    ("tracing refused (TracerBoolError)", r"TracerBoolError|needs the value of a traced"),
    ("tracing failed in a library call", r"cannot trace|object arrays|dtype object|"
                                         r"Unsupported dtype|setting an array element"),
    ("counts differ (nfev / njev / nhev / nit)", r"\b(nfev|njev|nhev|nit|ncalls|count)"),
    ("warning expected / unexpected", r"warn|Warning"),
    ("signature / argument handling", r"unexpected keyword|positional argument|"
                                      r"got multiple values|signature"),
    ("raises expected", r"DID NOT RAISE|Failed: DID NOT"),
    ("different answer", r"Not equal to tolerance|Arrays are not|assert_allclose|"
                         r"AssertionError"),
)


def cause(rec: dict) -> str:
    """The group of a failure, from its exception, message and the test's failing line."""
    text = f"{rec.get('error', '')}: {rec.get('message', '')} | {rec.get('line', '')}"
    for group, pattern in CAUSES:
        if re.search(pattern, text):
            return group
    first = rec.get("message", "").splitlines()[0] if rec.get("message") else ""
    return f"{rec.get('error', 'failed')}: {re.sub(r'[0-9.e+-]{3,}', 'N', first)[:70]}"


def report(scipy_runs: dict[str, dict], nad_runs: dict[str, dict], show: bool) -> None:
    """Print the table: calling tests, passing on scipy, passing on newtonad, failures."""
    calling = {k: r for k, r in scipy_runs.items() if r["called"]}
    passing = {k for k, r in calling.items() if r["outcome"] == "passed"}
    ok = {k for k in passing if nad_runs.get(k, {}).get("outcome") == "passed"}
    missing = {k for k in passing if k not in nad_runs}
    print(f"tests run on scipy:                  {len(scipy_runs)}")
    print(f"  that call minimize/least_squares:  {len(calling)}")
    print(f"  of those, pass on scipy:           {len(passing)}")
    rate = 100.0 * len(ok) / max(len(passing), 1)
    print(f"  of those, pass on newtonad:        {len(ok)}  ({rate:.1f}%)")
    if missing:
        print(f"  not run on newtonad's side:        {len(missing)}")
    groups: dict[str, list[str]] = defaultdict(list)
    for k in sorted(passing - ok - missing):
        groups[cause(nad_runs[k])].append(k)
    print("\nfailures on newtonad by cause:")
    for group, ids in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(ids):4d}  {group}")
        if show:
            for k in ids:
                rec = nad_runs[k]
                message = (rec.get("message") or "").splitlines()
                print(f"          {k.split('::', 1)[-1]}")
                print(f"              {rec.get('error')}: {message[0][:110] if message else ''}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", nargs="*", default=list(FILES))
    parser.add_argument("-k", dest="keyword", default=None)
    parser.add_argument("--out", type=Path,
                        default=Path(tempfile.gettempdir()) / "newtonad-scipy-suite")
    parser.add_argument("--reuse", action="store_true",
                        help="keep scipy's results from the last run")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--list", action="store_true", help="list every failing test")
    ns = parser.parse_args(argv)
    ns.out.mkdir(parents=True, exist_ok=True)
    if not ns.report_only:
        if not (ns.reuse and (ns.out / "scipy.jsonl").exists()):
            run_side("scipy", ns.files, ns.out, ns.keyword, ns.timeout)
        run_side("newtonad", ns.files, ns.out, ns.keyword, ns.timeout)
    report(load(ns.out / "scipy.jsonl"), load(ns.out / "newtonad.jsonl"), ns.list)


if __name__ == "__main__":
    main()
