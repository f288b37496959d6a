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
