"""Fixtures shared by the engine tests."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="module")
def module_kernel_cache(tmp_path_factory):
    """One fresh kernel cache for the module that asks for it (unless the caller chose one)."""
    old = os.environ.get("NEWTONAD_CACHE_DIR")
    if old is None:
        os.environ["NEWTONAD_CACHE_DIR"] = str(tmp_path_factory.mktemp("newtonad-cache"))
    yield
    if old is None:
        os.environ.pop("NEWTONAD_CACHE_DIR", None)


def pytest_configure(config):
    """``NEWTONAD_TEST_COMPILE_LOG=<path>``: log the kernels tests load (tests/compile_log.py)."""
    path = os.environ.get("NEWTONAD_TEST_COMPILE_LOG")
    if path:
        from . import compile_log

        compile_log.install(path)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    from . import compile_log

    compile_log.current_test["id"] = item.nodeid
