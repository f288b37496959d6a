"""pytest plugin: save the source of every program the engine lowers during the tests."""
import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from settings_key import save, settings_tag  # noqa: E402

OUT = os.environ["CORPUS_OUT"]


def pytest_configure(config):
    from newtonad.ad.engine import numba_engine
    orig = numba_engine.lower

    def lower(program, *a, **kw):
        kernel = orig(program, *a, **kw)
        opts = a[0] if a else kw.get("options")
        tag, _ = settings_tag(opts)
        text = program.key if isinstance(program.key, str) else repr(program.key)
        key = hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
        save(OUT, f"test-{key}-{tag}", kernel.source)
        return kernel

    numba_engine.lower = lower
