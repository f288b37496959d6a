"""Sphinx directive ``.. runblock::``: run Python during the build, show source and output.

Every block of a page runs in one namespace per page, in page order, each time
the docs are built (pages holding blocks are always re-read), so the output on
the page is what the code prints today. Matplotlib figures a block leaves open
are saved and shown under it. An exception in a block is a build warning (an
error under ``sphinx -W``) that shows the traceback.

Options
-------
``:hide-source:``
    Show only the output (and figures).
``:hide-output:``
    Show only the source (and figures).
``:figwidth:``
    Width of the figures (default ``100%``).

A second directive, ``.. runcommand:: newtonad ARGS``, runs the command line
in-process (``newtonad.cli.main``) and shows ``$ newtonad ARGS`` with what it
printed; an exit status other than ``:returncode:`` (default 0) is a warning.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import traceback
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

_NAMESPACES: dict[str, dict[str, Any]] = {}
FIGURE_DIR = Path("_build") / "generated"  # relative to the source directory


def _open_figures() -> list[int]:
    import sys

    plt = sys.modules.get("matplotlib.pyplot")
    return list(plt.get_fignums()) if plt is not None else []


class RunBlock(SphinxDirective):
    """Execute the content as Python; render source, printed output and figures."""

    has_content = True
    option_spec = {"hide-source": directives.flag, "hide-output": directives.flag,
                   "figwidth": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        docname = self.env.docname
        self.env.runblock_docs = getattr(self.env, "runblock_docs", set()) | {docname}
        namespace = _NAMESPACES.setdefault(docname, {"__name__": f"docs.{docname}"})
        code = "\n".join(self.content)
        before = set(_open_figures())
        out = io.StringIO()
        failed = False
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, f"<{docname}.rst, line {self.lineno}>", "exec"), namespace)
        except Exception:  # noqa: BLE001  (reported as a build warning)
            failed = True
            out.write(traceback.format_exc())
            logger.warning("runblock raised:\n%s", traceback.format_exc(),
                           location=(docname, self.lineno))
        result: list[nodes.Node] = []
        if "hide-source" not in self.options:
            source = nodes.literal_block(code, code, language="python")
            source["classes"].append("runblock-source")
            result.append(source)
        text = out.getvalue().rstrip("\n")
        if text and ("hide-output" not in self.options or failed):
            output = nodes.literal_block(text, text, language="none")
            output["classes"].append("runblock-output")
            result.append(output)
        result += self._figures(docname, before)
        return result

    def _figures(self, docname: str, before: set[int]) -> list[nodes.Node]:
        import matplotlib.pyplot as plt

        new = [n for n in _open_figures() if n not in before]
        images = []
        folder = Path(self.env.srcdir) / FIGURE_DIR
        folder.mkdir(parents=True, exist_ok=True)
        stem = re.sub(r"[^\w]+", "-", docname)
        for i, num in enumerate(new):
            name = f"{stem}-{self.lineno}-{i}.png"
            fig = plt.figure(num)
            fig.savefig(folder / name, dpi=110, bbox_inches="tight")
            plt.close(fig)
            image = nodes.image(uri=f"/{(FIGURE_DIR / name).as_posix()}",
                                width=self.options.get("figwidth", "100%"),
                                alt=f"figure drawn by the code above ({name})")
            images.append(image)
        return images


class RunCommand(SphinxDirective):
    """Run ``newtonad ARGS`` in-process and show the console session."""

    required_arguments = 1
    final_argument_whitespace = True
    option_spec = {"returncode": directives.nonnegative_int}

    def run(self) -> list[nodes.Node]:
        from newtonad.cli import main

        self.env.runblock_docs = getattr(self.env, "runblock_docs", set()) | {self.env.docname}
        argv = shlex.split(self.arguments[0])
        if not argv or argv[0] != "newtonad":
            raise self.error("runcommand runs the newtonad command: newtonad ARGS")
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = main(argv[1:])
        expected = self.options.get("returncode", 0)
        if code != expected:
            logger.warning("`%s` exited with %s, not %s:\n%s", self.arguments[0], code,
                           expected, out.getvalue(), location=(self.env.docname, self.lineno))
        text = f"$ {self.arguments[0]}\n{out.getvalue().rstrip()}"
        block = nodes.literal_block(text, text, language="console")
        block["classes"].append("runblock-output")
        return [block]


def _reset(app: Any, docname: str, source: list[str]) -> None:
    """A page starts from a fresh namespace each time it is read."""
    _NAMESPACES.pop(docname, None)


def _always_reread(app: Any, env: Any, added: set, changed: set, removed: set) -> list[str]:
    """Pages with blocks are re-read on every build, so their output is never stale."""
    return sorted(getattr(env, "runblock_docs", set()) - removed)


def _purge(app: Any, env: Any, docname: str) -> None:
    docs = getattr(env, "runblock_docs", set())
    docs.discard(docname)


def setup(app: Any) -> dict[str, Any]:
    """Register the directive and its events."""
    import matplotlib

    matplotlib.use("Agg")
    app.add_directive("runblock", RunBlock)
    app.add_directive("runcommand", RunCommand)
    app.connect("source-read", _reset)
    app.connect("env-get-outdated", _always_reread)
    app.connect("env-purge-doc", _purge)
    return {"version": "1.0", "parallel_read_safe": False, "parallel_write_safe": True}
