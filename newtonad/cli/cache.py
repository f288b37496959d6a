"""``newtonad cache``: where the compiled-kernel cache is, how big, and clearing it.

The numba engine writes each generated kernel as a Python module, numba's machine
code and the kernel's metadata under ``<cache dir>/kernels`` (see
:mod:`newtonad.ad.engine.numba_cache`; the directory is ``$NEWTONAD_CACHE_DIR`` or
the platform's user cache). ``--clear`` deletes that ``kernels`` directory and
nothing else: later runs compile their kernels again.
"""

from __future__ import annotations

import argparse
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import UsageError
from .table import fmt_bytes

__all__ = ["add_parser", "run", "CacheUsage", "usage", "clear", "kernels_dir"]

KERNEL_PREFIX = "newtonad_kernel_"


def add_parser(sub: Any) -> None:
    """Register ``cache`` on the subcommand parsers ``sub``."""
    p = sub.add_parser(
        "cache", help="show (or clear) the compiled-kernel cache",
        description="Show where the numba engine keeps its compiled kernels and how much "
                    "space they take. The directory is $NEWTONAD_CACHE_DIR, else the "
                    "platform's user cache. --clear deletes the kernels; later runs "
                    "compile them again.")
    p.add_argument("--clear", action="store_true",
                   help="delete the cached kernels (do not run it while another newtonad "
                        "process compiles)")
    p.set_defaults(handler=run)


@dataclass(frozen=True)
class CacheUsage:
    """What the kernel cache holds: its directory, kernel count, files and bytes."""

    directory: Path
    kernels: int
    files: int
    size: int


def kernels_dir() -> Path:
    """``<cache dir>/kernels``, where everything the numba engine caches lives."""
    from newtonad.ad.engine.numba_cache import cache_dir

    return cache_dir() / "kernels"


def usage() -> CacheUsage:
    """Count the kernels, files and bytes under :func:`kernels_dir` (zeros when absent)."""
    directory = kernels_dir()
    kernels = files = size = 0
    if directory.is_dir():
        for path in directory.rglob("*"):
            try:
                if not path.is_file():
                    continue
                size += path.stat().st_size
            except OSError:  # removed while we looked (another process)
                continue
            files += 1
            kernels += path.parent == directory and path.name.startswith(KERNEL_PREFIX) \
                and path.suffix == ".py"
    return CacheUsage(directory, kernels, files, size)


def clear() -> CacheUsage:
    """Delete :func:`kernels_dir`; return what it held."""
    before = usage()
    directory = before.directory
    if directory.exists():
        if directory.is_symlink() or not directory.is_dir():
            raise UsageError(f"{directory} is not a directory; remove it by hand")
        try:
            shutil.rmtree(directory)
        except OSError as exc:
            raise UsageError(f"cannot clear {directory}: {exc.strerror or exc}") from None
    return before


def run(args: argparse.Namespace) -> int:
    """Print the cache's location and size; clear it with ``--clear``."""
    if args.clear:
        gone = clear()
        print(f"cleared {gone.directory}: {gone.kernels} kernels, {gone.files} files, "
              f"{fmt_bytes(gone.size)}")
        return 0
    info = usage()
    state = "" if info.directory.is_dir() else " (not created yet)"
    print(f"kernel cache: {info.directory}{state}")
    print(f"  {info.kernels} kernels, {info.files} files, {fmt_bytes(info.size)}")
    print("  `newtonad cache --clear` deletes them; set NEWTONAD_CACHE_DIR to move the cache")
    return 0
