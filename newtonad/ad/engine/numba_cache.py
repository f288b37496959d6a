"""Disk cache of generated kernels: real ``.py`` modules that numba can cache.

numba cannot cache functions made with ``exec`` (numba issue 3501), so each kernel's
source is written to ``<cache dir>/kernels/<name>.py`` and imported from there; numba's
``cache=True`` then keeps the machine code in ``__pycache__`` beside it. The module is
registered in ``sys.modules`` before it runs, because a cached kernel re-imports its
defining module by name when it is loaded.

The module name is a digest of the generated source (which spells out the program and
its shapes; constant arrays are kernel arguments, so programs that differ only in
their constants share one kernel) and the versions of numba, numpy and newtonad,
Python and the CPU, so a stale entry is never picked up. Files are written
to a temporary name and renamed into place (``os.replace``), so a reader sees either
nothing or a whole file and two processes may compile the same program at once. A
source file that does not match is rewritten; numba recompiles an index whose source
stamp does not match; a corrupt numba entry is deleted and compiled again.

Beside the kernels the cache keeps each program's *metadata*
(``newtonad_meta_<digest>.meta.npz``: the kernel's module name, calling convention,
constant arrays and arena sizes), named by a digest of the whole program (constants to
the last bit, ``Program.key``), the lowering options
(:class:`.options.LoweringOptions`), the environment above and the engine's own source
files, so metadata written by other engine code is never read. A warm start reads it
instead of planning and generating the kernel again. It is checked before use — the
archive's CRCs, its format, its specs against the program's, and the kernel source
against the digest in its module name — and anything that does not match is treated as
absent: the kernel is lowered and compiled again, never loaded wrong.

A cache directory that cannot be written (a read-only file system, a path through a
file) does not stop compilation: kernels then go to a private temporary directory,
removed when the process exits (:func:`effective_cache_dir`), and are not kept for later
processes.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import importlib.util
import json
import os
import platform
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import IO, Any, Callable

import numpy as np

from ..program import Program
from . import numba_threads

ENV_VAR = "NEWTONAD_CACHE_DIR"
CODEGEN_VERSION = "2"  # bump when generated code changes (2: loop IR, no dead temporaries)


def cache_dir() -> Path:
    """The kernel cache directory: ``$NEWTONAD_CACHE_DIR``, else the platform's user cache."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    if sys.platform == "win32":
        root = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
        return root / "newtonad" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "newtonad"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "newtonad"


@functools.lru_cache(maxsize=8)
def _usable(root: Path) -> Path:
    """``root`` if its kernel directory can be created and written, else a private
    temporary directory (removed at exit)."""
    try:
        kernels = root / "kernels"
        kernels.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=kernels, prefix=".probe", suffix=".tmp")
        os.close(fd)
        os.unlink(probe)
        return root
    except OSError:
        private = Path(tempfile.mkdtemp(prefix="newtonad-cache-"))
        atexit.register(shutil.rmtree, private, ignore_errors=True)
        return private


def effective_cache_dir() -> Path:
    """Where kernels are written and read: :func:`cache_dir`, or a private temporary
    directory for this process when that cannot be written (see the module docstring)."""
    return _usable(cache_dir())


@functools.lru_cache(maxsize=1)
def environment_tag() -> str:
    """Versions, CPU and threads (serial or parallel loops) that compiled code depends on."""
    import numba
    import numpy
    from llvmlite import binding

    from ... import __version__ as nad_version  # (importlib.metadata would cost ~10 ms)

    try:
        cpu = binding.get_host_cpu_name() + ":" + binding.get_host_cpu_features().flatten()
    except Exception:  # pragma: no cover
        cpu = platform.machine()
    return "|".join([CODEGEN_VERSION, numba.__version__, numpy.__version__, nad_version,
                     platform.python_version(), cpu, numba_threads.tag()])


@functools.lru_cache(maxsize=1)
def engine_fingerprint() -> str:
    """A digest of the engine's source files: a metadata entry written by other engine
    code (planning, code generation, this cache) is never read as current."""
    h = hashlib.blake2b(digest_size=16)
    h.update(CODEGEN_VERSION.encode())
    for f in sorted(Path(__file__).parent.glob("*.py")):
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _digest(*parts: str) -> str:
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def module_name(source: str) -> str:
    """The kernel module's name: a digest of the environment and the source, which fixes
    the compiled code (constants are arguments, so programs differing only in their
    constants share one kernel)."""
    return f"newtonad_kernel_{_digest(environment_tag(), source)}"


def _write_atomic(path: Path, write: Callable[[IO], None], mode: str = "w") -> None:
    """Write a file under a temporary name and rename it into place: readers see all or nothing."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def ensure_source(source: str) -> tuple[str, Path]:
    """Write ``source`` into the cache (unless an identical file is there already)."""
    directory = effective_cache_dir() / "kernels"
    directory.mkdir(parents=True, exist_ok=True)
    name = module_name(source)
    path = directory / f"{name}.py"
    try:
        current = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        current = None
    if current != source:
        _write_atomic(path, lambda f: f.write(source))
    return name, path


def import_module(name: str, path: Path) -> ModuleType:
    """Import the kernel module from ``path``, registered in ``sys.modules`` first."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def purge(name: str, path: Path, numba_dir: str | os.PathLike | None = None) -> None:
    """Delete numba's cache files of one module (after a corrupt entry).

    They are in ``__pycache__`` beside the source, or in ``numba_dir`` (the
    dispatcher's cache path, elsewhere when ``NUMBA_CACHE_DIR`` is set).
    """
    for pycache in {path.parent / "__pycache__", *([Path(numba_dir)] if numba_dir else [])}:
        if pycache.is_dir():
            for f in pycache.iterdir():
                if f.name.startswith(name + "."):
                    try:
                        f.unlink()
                    except OSError:
                        pass
    sys.modules.pop(name, None)


# ---- kernel metadata -------------------------------------------------------------------------

META_FORMAT = 2
KERNEL_DTYPES = ("float64", "int64", "bool")  # of kernel arguments, constants and arenas
Spec = tuple[tuple[int, ...], str]  # (shape, dtype name)


@dataclass
class CachedKernel:
    """A kernel as read back from the cache: what a runner needs, without lowering.

    It has the fields of :class:`.numba_codegen.Kernel` the engine uses.
    """

    source: str
    in_specs: list[Spec]
    out_specs: list[Spec]
    consts: list[np.ndarray]
    arenas: list[tuple[str, int]] = field(default_factory=list)  # (dtype, length)
    parallel: bool = False


def meta_path(program: Program, options: Any) -> Path:
    """Where the metadata of ``program``'s kernel lowered with ``options`` lives (for this
    environment and engine)."""
    digest = _digest(environment_tag(), engine_fingerprint(), options.key, program.key)
    return effective_cache_dir() / "kernels" / f"newtonad_meta_{digest}.meta.npz"


def _specs(specs: Any) -> list[Spec]:
    return [(tuple(int(d) for d in shape), str(dtype)) for shape, dtype in specs]


def _slot_specs(slots: Any) -> list[Spec]:
    return _specs((s.shape, s.dtype) for s in slots)


def write_meta(program: Program, options: Any, name: str, kernel: Any) -> None:
    """Record the metadata of ``program``'s ``kernel`` (module ``name``); best effort:
    an I/O error leaves the cache without it, and the next process lowers again."""
    header = {"format": META_FORMAT, "module": name,
              "in_specs": _specs(kernel.in_specs), "out_specs": _specs(kernel.out_specs),
              "arenas": [[str(d), int(n)] for d, n in kernel.arenas],
              "n_consts": len(kernel.consts), "parallel": bool(kernel.parallel)}
    try:
        path = meta_path(program, options)
        path.parent.mkdir(parents=True, exist_ok=True)
        consts = {f"c{n}": np.asarray(c) for n, c in enumerate(kernel.consts)}
        meta = np.array(json.dumps(header))
        _write_atomic(path, lambda f: np.savez(f, meta=meta, **consts), "wb")
    except OSError:
        pass


def read_meta(program: Program, options: Any) -> tuple[str, Path, CachedKernel] | None:
    """The cached kernel of ``program`` under ``options`` as ``(module name, source path, kernel)``.

    ``None`` when there is none, or when anything about it is off: unreadable or
    malformed metadata (the archive's checksums catch damaged bytes), specs other than
    the program's, a missing source file or one whose digest is not its module name.
    """
    in_specs, out_specs = _slot_specs(program.in_slots), _slot_specs(program.out_slots)
    try:
        path = meta_path(program, options)
        with np.load(path, allow_pickle=False) as data:
            header = json.loads(str(data["meta"]))
            if header.get("format") != META_FORMAT:
                return None
            consts = [np.require(data[f"c{n}"], requirements="C")  # (keeps 0-d arrays 0-d)
                      for n in range(int(header["n_consts"]))]
        name = str(header["module"])
        if not (name.startswith("newtonad_kernel_") and name.isidentifier()):
            return None
        if _specs(header["in_specs"]) != in_specs or _specs(header["out_specs"]) != out_specs:
            return None
        arenas = [(str(d), int(n)) for d, n in header["arenas"]]
        if (any(d not in KERNEL_DTYPES or n < 0 for d, n in arenas)
                or any(c.dtype.name not in KERNEL_DTYPES for c in consts)):
            return None
        source_path = path.parent / f"{name}.py"
        source = source_path.read_text(encoding="utf-8")
        if module_name(source) != name:
            return None
    except Exception:  # missing, truncated, garbage, wrong types: all mean "not cached"
        return None
    return name, source_path, CachedKernel(source, in_specs, out_specs, consts, arenas,
                                           bool(header["parallel"]))
