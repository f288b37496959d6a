"""The numba engine's disk cache, seen from fresh processes.

Each test starts Python processes with ``NEWTONAD_CACHE_DIR`` pointing at a temporary
directory; a process reports whether its kernel was compiled or loaded from disk
(numba's dispatcher statistics), whether it lowered the program (imported the code
generator) or took the kernel's metadata from the cache, and checks its result against
the numpy engine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = r"""
import json, os, sys, warnings
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
if os.environ.get("CHECK_NUMBA_COMPILES"):  # numba still compiles after a fast load
    import numba
    ok = ok and numba.njit(lambda a: np.sin(a).sum())(x) == np.sin(x).sum()
stats = run.dispatcher.stats
print(json.dumps({"ok": bool(ok), "hits": sum(stats.cache_hits.values()),
                  "misses": sum(stats.cache_misses.values()), "path": str(run.path),
                  "lowered": "newtonad.ad.engine.numba_codegen" in sys.modules,
                  "registries": "numba.np.linalg" in sys.modules}))
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
    assert first["misses"] == 1 and first["hits"] == 0 and first["lowered"]
    path = Path(first["path"])
    assert path.parent.parent == cache and path.suffix == ".py"
    assert list((cache / "kernels" / "__pycache__").glob(path.stem + "*.nbi"))


def test_second_process_loads_instead_of_compiling(warm_cache):
    cache, first = warm_cache
    second = run_process(cache)
    assert second["ok"]
    assert second["hits"] == 1 and second["misses"] == 0
    assert second["path"] == first["path"]
    # the kernel's metadata came from the cache: no planning, no code generation, and
    # numba's machine code was loaded without installing its compiler's registries
    assert not second["lowered"] and not second["registries"]


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


def test_corrupt_entries_in_numba_cache_dir_recompile(tmp_path):
    # with NUMBA_CACHE_DIR numba's files are not beside the source; they are purged too
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    first = run_process(tmp_path / "cache", env)
    files = [f for f in (tmp_path / "numba").rglob("*") if f.suffix in (".nbi", ".nbc")]
    assert first["ok"] and files
    for f in files:
        f.write_bytes(b"\x00garbage" * 3)
    again = run_process(tmp_path / "cache", env)
    assert again["ok"] and again["misses"] == 1
    assert run_process(tmp_path / "cache", env)["hits"] == 1


def _private_copy(cache: Path, tmp_path: Path) -> Path:
    import shutil

    copy = tmp_path / "cache"
    shutil.copytree(cache, copy)
    return copy


def _meta_file(cache: Path) -> Path:
    (meta,) = (cache / "kernels").glob("newtonad_meta_*.meta.npz")
    return meta


def _rewrite_meta(meta: Path, edit) -> None:
    import numpy as np

    with np.load(meta) as data:
        arrays = dict(data)
    header = json.loads(str(arrays.pop("meta")))
    edit(header, arrays)
    with open(meta, "wb") as f:
        np.savez(f, meta=np.array(json.dumps(header)), **arrays)


def _set(key, value):
    def edit(header, arrays):
        header[key] = value
    return edit


METADATA_DAMAGE = {
    "garbage": lambda meta: meta.write_bytes(b"\x00garbage" * 3),
    "truncated": lambda meta: meta.write_bytes(meta.read_bytes()[: meta.stat().st_size // 2]),
    "flipped byte": lambda meta: meta.write_bytes(
        (lambda b: b[:200] + bytes([b[200] ^ 0xFF]) + b[201:])(meta.read_bytes())),
    "other format": lambda meta: _rewrite_meta(meta, _set("format", 999)),
    "missing module": lambda meta: _rewrite_meta(meta, _set("module", "newtonad_kernel_gone")),
    "other specs": lambda meta: _rewrite_meta(meta, _set("in_specs", [[[12], "float64"]])),
    "missing constant": lambda meta: _rewrite_meta(
        meta, lambda header, arrays: arrays.pop(f"c{header['n_consts'] - 1}")),
    "unknown arena dtype": lambda meta: _rewrite_meta(meta, _set("arenas", [["float128", 8]])),
    "module outside the cache": lambda meta: _rewrite_meta(meta, _set("module", "../kernel")),
    "not an object": lambda meta: _rewrite_meta(
        meta, lambda header, arrays: header.update(arenas=7)),
}


@pytest.mark.parametrize("damage", sorted(METADATA_DAMAGE))
def test_stale_or_corrupt_metadata_is_not_used(warm_cache, tmp_path, damage):
    cache, first = warm_cache
    broken = _private_copy(cache, tmp_path)
    meta = _meta_file(broken)
    METADATA_DAMAGE[damage](meta)
    again = run_process(broken)
    assert again["ok"] and again["lowered"]  # lowered afresh, same results
    assert Path(again["path"]).name == Path(first["path"]).name
    third = run_process(broken)  # and the metadata is repaired
    assert third["ok"] and not third["lowered"] and third["hits"] == 1


def test_metadata_with_a_damaged_source_is_not_used(warm_cache, tmp_path):
    cache, first = warm_cache
    broken = _private_copy(cache, tmp_path)
    source = broken / "kernels" / Path(first["path"]).name
    source.write_text(source.read_text().replace("for ", "for  ", 1))  # valid, but not ours
    again = run_process(broken)
    assert again["ok"] and again["lowered"]  # the source is written again from the program
    third = run_process(broken)
    assert third["ok"] and not third["lowered"] and third["hits"] == 1


def test_metadata_without_numba_entry_compiles_the_cached_source(warm_cache, tmp_path):
    cache, first = warm_cache
    broken = _private_copy(cache, tmp_path)
    for f in (broken / "kernels" / "__pycache__").glob(Path(first["path"]).stem + "*"):
        f.unlink()
    again = run_process(broken)
    assert again["ok"] and not again["lowered"] and again["misses"] == 1
    assert run_process(broken)["hits"] == 1


def test_numba_public_load_path_and_compiling_after_a_fast_load(warm_cache):
    cache, _ = warm_cache
    public = run_process(cache, {"NEWTONAD_NUMBA_FAST_LOAD": "0"})
    assert public["ok"] and public["hits"] == 1 and public["registries"]
    fast = run_process(cache, {"CHECK_NUMBA_COMPILES": "1"})
    assert fast["ok"] and fast["hits"] == 1 and not fast["lowered"]


def test_programs_differing_only_in_constant_digits_get_their_own_metadata(tmp_path, monkeypatch):
    # printed programs show small constants to eight digits; keys and metadata see all bits
    import numpy as np

    import newtonad as nad
    from newtonad.ad.engine import numba_cache, numba_engine
    from newtonad.ad.engine.options import LoweringOptions

    monkeypatch.setenv("NEWTONAD_CACHE_DIR", str(tmp_path))
    x = np.ones(4)
    consts = [np.array([1.0, v, 3.0, 4.0]) for v in (2.00000000001, 2.00000000002)]
    # arrays made inside f are constants of its program (a captured array would be an input)
    programs = [nad.trace(lambda x, v=v: np.sum(x * np.array([1.0, v, 3.0, 4.0])), x)
                for v in (2.00000000001, 2.00000000002)]
    assert str(programs[0]) == str(programs[1])  # printed alike: eight digits
    assert programs[0] != programs[1] and programs[0].key != programs[1].key
    first = numba_engine.compile_program(programs[0])
    opts = LoweringOptions.current()
    assert numba_cache.read_meta(programs[0], opts) is not None
    assert numba_cache.read_meta(programs[1], opts) is None
    second = numba_engine.compile_program(programs[1])
    assert first(x)[0] == np.sum(consts[0]) and second(x)[0] == np.sum(consts[1])
    assert first.path == second.path  # one kernel, two sets of constants


def test_metadata_round_trip(tmp_path, monkeypatch):
    import numpy as np

    import newtonad as nad
    from newtonad.ad.engine import numba_cache
    from newtonad.ad.engine.options import LoweringOptions

    monkeypatch.setenv("NEWTONAD_CACHE_DIR", str(tmp_path))
    program = nad.trace(lambda x: np.sum(x ** 2), np.ones(3))
    consts = [np.array(2.5), np.array([True, False]), np.arange(6).reshape(2, 3),
              np.asfortranarray(np.ones((2, 2)))]
    name, path = numba_cache.ensure_source("def kernel():\n    pass\n")
    kernel = numba_cache.CachedKernel(path.read_text(), [((3,), "float64")], [((), "float64")],
                                      consts, [("float64", 24), ("int64", 8)])
    opts = LoweringOptions.current()
    assert numba_cache.read_meta(program, opts) is None
    numba_cache.write_meta(program, opts, name, kernel)
    got_name, got_path, got = numba_cache.read_meta(program, opts)
    assert (got_name, got_path) == (name, path) and got.source == kernel.source
    assert got.in_specs == kernel.in_specs and got.out_specs == kernel.out_specs
    assert got.arenas == kernel.arenas
    for a, b in zip(got.consts, consts, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype and a.flags.c_contiguous
        np.testing.assert_array_equal(a, b)
    # another program (other shapes) does not see it, nor does the same one in another cache
    assert numba_cache.read_meta(nad.trace(lambda x: np.sum(x ** 2), np.ones(4)), opts) is None
    # nor the same program under other lowering options
    assert numba_cache.read_meta(program, opts.replace(unroll=opts.unroll + 1)) is None
    monkeypatch.setenv("NEWTONAD_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert numba_cache.read_meta(program, opts) is None


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

    a = numba_cache.module_name("source a")
    assert a == numba_cache.module_name("source a")
    assert a != numba_cache.module_name("source b")
    tag = numba_cache.environment_tag()
    import numba
    import numpy

    assert numba.__version__ in tag and numpy.__version__ in tag
