"""The numba engine's disk cache, seen from fresh processes.

Each test starts Python processes with ``NEWTONAD_CACHE_DIR`` pointing at a temporary
directory; a process reports whether its kernel was compiled or loaded from disk
(numba's dispatcher statistics) and checks its result against the numpy engine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = r"""
import json, sys, warnings
import numpy as np
import newtonad as nad
from newtonad.ad import transforms as tf
from newtonad.ad.engine import compile_program
import newtonad.ad.engine.numba_engine as ne

warnings.simplefilter("error", ne.NumbaFallbackWarning)
f = lambda x: np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2) + np.sum(np.sin(x))
x = np.linspace(-1, 1, 11)
program = tf.value_and_grad_program(nad.trace(f, x))
run = compile_program(program, "numba")
got = run(x)
ref = compile_program(program, "numpy")(x)
ok = all(np.allclose(a, b, rtol=1e-12, atol=1e-12) for a, b in zip(got, ref))
stats = run.dispatcher.stats
print(json.dumps({"ok": bool(ok), "hits": sum(stats.cache_hits.values()),
                  "misses": sum(stats.cache_misses.values()), "path": str(run.path)}))
"""


def run_process(cache: Path, extra_env: dict | None = None) -> dict:
    env = dict(os.environ, NEWTONAD_CACHE_DIR=str(cache), **(extra_env or {}))
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory):
    cache = tmp_path_factory.mktemp("kernel-cache")
    first = run_process(cache)
    return cache, first


def test_first_process_compiles_into_the_given_directory(warm_cache):
    cache, first = warm_cache
    assert first["ok"]
    assert first["misses"] == 1 and first["hits"] == 0
    path = Path(first["path"])
    assert path.parent.parent == cache and path.suffix == ".py"
    assert list((cache / "kernels" / "__pycache__").glob(path.stem + "*.nbi"))


def test_second_process_loads_instead_of_compiling(warm_cache):
    cache, first = warm_cache
    second = run_process(cache)
    assert second["ok"]
    assert second["hits"] == 1 and second["misses"] == 0
    assert second["path"] == first["path"]


def test_corrupt_entries_recompile(warm_cache, tmp_path):
    cache, first = warm_cache
    path = Path(first["path"])
    # a private copy of the warm cache, then damage every file of the entry
    import shutil

    broken = tmp_path / "cache"
    shutil.copytree(cache, broken)
    kernels = broken / "kernels"
    for f in (kernels / "__pycache__").glob(path.stem + "*"):
        f.write_bytes(b"\x00garbage" * 3)
    (kernels / path.name).write_text("this is not the kernel")
    (kernels / (path.stem + "abc.tmp")).write_text("half-written")  # a crashed writer's leftover
    again = run_process(broken)
    assert again["ok"]
    assert again["misses"] == 1
    third = run_process(broken)  # and the repaired entry is used afterwards
    assert third["ok"] and third["hits"] == 1


def test_concurrent_processes_compiling_the_same_program(tmp_path):
    env = dict(os.environ, NEWTONAD_CACHE_DIR=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        assert json.loads(out.strip().splitlines()[-1])["ok"]
    assert run_process(tmp_path)["hits"] == 1


def test_cache_dir_defaults_to_the_user_cache(monkeypatch, tmp_path):
    from newtonad.ad.engine import numba_cache

    monkeypatch.delenv("NEWTONAD_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if sys.platform.startswith("linux"):
        assert numba_cache.cache_dir() == tmp_path / "newtonad"
    monkeypatch.setenv("NEWTONAD_CACHE_DIR", str(tmp_path / "mine"))
    assert numba_cache.cache_dir() == tmp_path / "mine"


def test_key_depends_on_versions_and_source():
    from newtonad.ad.engine import numba_cache

    a = numba_cache.module_name("source a", "key")
    assert a == numba_cache.module_name("source a", "key")
    assert a != numba_cache.module_name("source b", "key")
    assert a != numba_cache.module_name("source a", "other key")
    tag = numba_cache.environment_tag()
    import numba
    import numpy

    assert numba.__version__ in tag and numpy.__version__ in tag
