"""Disk cache of generated kernels: real ``.py`` modules that numba can cache.

numba cannot cache functions made with ``exec`` (numba issue 3501), so each kernel's
source is written to ``<cache dir>/kernels/<name>.py`` and imported from there; numba's
``cache=True`` then keeps the machine code in ``__pycache__`` beside it. The module is
registered in ``sys.modules`` before it runs, because a cached kernel re-imports its
defining module by name when it is loaded.

The module name is a digest of the generated source (which spells out the program,
its constants and shapes), the program's key, and the versions of numba, numpy and
newtonad, Python and the CPU, so a stale entry is never picked up. Files are written
to a temporary name and renamed into place (``os.replace``), so a reader sees either
nothing or a whole file and two processes may compile the same program at once. A
source file that does not match is rewritten; numba recompiles an index whose source
stamp does not match; a corrupt numba entry is deleted and compiled again.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import platform
import sys
import tempfile
from pathlib import Path
from types import ModuleType

ENV_VAR = "NEWTONAD_CACHE_DIR"
CODEGEN_VERSION = "1"  # bump when generated code changes meaning


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


@functools.lru_cache(maxsize=1)
def environment_tag() -> str:
    """Versions and CPU that compiled code depends on."""
    import numba
    import numpy
    from llvmlite import binding

    try:
        from importlib.metadata import version

        nad_version = version("newtonad")
    except Exception:  # pragma: no cover - not installed
        nad_version = "unknown"
    try:
        cpu = binding.get_host_cpu_name() + ":" + binding.get_host_cpu_features().flatten()
    except Exception:  # pragma: no cover
        cpu = platform.machine()
    return "|".join([CODEGEN_VERSION, numba.__version__, numpy.__version__, nad_version,
                     platform.python_version(), cpu])


def module_name(source: str, program_key: str) -> str:
    h = hashlib.blake2b(digest_size=16)
    for part in (environment_tag(), program_key, source):
        h.update(part.encode())
        h.update(b"\0")
    return f"newtonad_kernel_{h.hexdigest()}"


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def ensure_source(source: str, program_key: str) -> tuple[str, Path]:
    """Write ``source`` into the cache (unless an identical file is there already)."""
    directory = cache_dir() / "kernels"
    directory.mkdir(parents=True, exist_ok=True)
    name = module_name(source, program_key)
    path = directory / f"{name}.py"
    try:
        current = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        current = None
    if current != source:
        _write_atomic(path, source)
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


def purge(name: str, path: Path) -> None:
    """Delete numba's cache files of one module (after a corrupt entry)."""
    pycache = path.parent / "__pycache__"
    if pycache.is_dir():
        for f in pycache.iterdir():
            if f.name.startswith(name + "."):
                try:
                    f.unlink()
                except OSError:
                    pass
    sys.modules.pop(name, None)


def cached_files(name: str, path: Path) -> list[Path]:
    """numba's index and data files of one module (for tests and tools)."""
    pycache = path.parent / "__pycache__"
    return sorted(f for f in pycache.glob(name + ".*") if f.suffix in (".nbi", ".nbc"))
