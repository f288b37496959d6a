"""Draw a newtonad Program's computation graph with matplotlib, from ``Program.to_dot()``.

The Graphviz source that ``Program.to_dot`` writes is parsed (nodes with their
labels and shapes, edges), laid out in layers — each slot one layer right of the
latest slot it is computed from, as Graphviz's ``rankdir=LR`` would — and drawn
with matplotlib, so the docs need no Graphviz binary. ``backward=True`` draws the
backpropagation graph: the same layout, every edge reversed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

__all__ = ["Graph", "parse_dot", "layout", "draw_program", "draw_dot"]

_NODE = re.compile(r'^\s*(\w+)\s*\[label="((?:[^"\\]|\\.)*)"(.*)\];\s*$')
_EDGE = re.compile(r"^\s*(\w+)\s*->\s*(\w+)\s*;\s*$")


@dataclass
class Node:
    """A node of the graph: its label lines, whether it is a root (input) and an output."""

    name: str
    label: str
    root: bool = False
    output: bool = False


@dataclass
class Graph:
    """Nodes in file order and directed edges ``(tail, head)``."""

    nodes: dict[str, Node] = field(default_factory=dict)
    edges: list[tuple[str, str]] = field(default_factory=list)


def parse_dot(dot: str) -> Graph:
    """Parse the subset of the DOT language that ``Program.to_dot`` writes.

    Raises
    ------
    ValueError
        For a line that is neither a node, an edge nor graph boilerplate.
    """
    graph = Graph()
    for line in dot.splitlines():
        text = line.strip()
        if not text or text.startswith(("digraph", "rankdir", "node ", "edge ", "}")):
            continue
        m = _NODE.match(line)
        if m:
            name, label, attrs = m.groups()
            graph.nodes[name] = Node(name, label.replace("\\n", "\n"),
                                     root="doublecircle" in attrs, output="bold" in attrs)
            continue
        m = _EDGE.match(line)
        if m:
            graph.edges.append((m.group(1), m.group(2)))
            continue
        raise ValueError(f"unexpected line in Program.to_dot output: {line!r}")
    return graph


def layout(graph: Graph) -> dict[str, tuple[float, float]]:
    """Layered positions ``{node: (x, y)}`` for a graph whose edges point forward.

    x is the length of the longest path from a root; within a layer, nodes are
    ordered by the mean height of their predecessors (a few barycentre sweeps).
    """
    preds: dict[str, list[str]] = {n: [] for n in graph.nodes}
    for a, b in graph.edges:
        preds[b].append(a)
    succs: dict[str, list[str]] = {n: [] for n in graph.nodes}
    for a, b in graph.edges:
        succs[a].append(b)
    layer: dict[str, int] = {}
    for name in graph.nodes:  # file order is a topological order
        layer[name] = 1 + max((layer[p] for p in preds[name] if p in layer), default=-1)
    for name, node in graph.nodes.items():  # constants sit just before their first reader
        if not node.root and not preds[name] and succs[name]:
            layer[name] = max(0, min(layer[s] for s in succs[name]) - 1)
    layers: dict[int, list[str]] = {}
    for name, x in layer.items():
        layers.setdefault(x, []).append(name)
    y: dict[str, float] = {}
    for x in sorted(layers):
        for i, name in enumerate(layers[x]):
            y[name] = i - (len(layers[x]) - 1) / 2
    for _ in range(4):
        for x in sorted(layers)[1:]:
            def centre(name: str) -> float:
                ps = preds[name]
                return sum(y[p] for p in ps) / len(ps) if ps else y[name]
            layers[x].sort(key=centre)
            for i, name in enumerate(layers[x]):
                y[name] = i - (len(layers[x]) - 1) / 2
    return {name: (float(layer[name]), -y[name]) for name in graph.nodes}


def draw_dot(dot: str, positions_from: Optional[str] = None, ax: Any = None,
             title: Optional[str] = None) -> Any:
    """Draw DOT source from ``Program.to_dot``; lay it out by ``positions_from`` if given.

    Returns the matplotlib Axes.
    """
    import matplotlib.pyplot as plt

    graph = parse_dot(dot)
    pos = layout(parse_dot(positions_from) if positions_from else graph)
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    if ax is None:
        width = 1.9 * (max(xs) - min(xs) + 1) + 0.4
        height = 0.95 * (max(ys) - min(ys) + 1) + 0.5
        _, ax = plt.subplots(figsize=(width, height))
    boxes = {}
    for name, node in graph.nodes.items():
        x, y = pos[name]
        style = dict(boxstyle="round,pad=0.35" if node.root else "square,pad=0.3",
                     facecolor="#dbe9f6" if node.root else "white",
                     edgecolor="black", linewidth=2.2 if node.output else 0.9)
        boxes[name] = ax.text(x, y, node.label, ha="center", va="center", family="monospace",
                              fontsize=8, bbox=style, zorder=1)
    for a, b in graph.edges:
        span = abs(pos[a][0] - pos[b][0])
        # drawn after the boxes (higher zorder), so the boxes' patches are placed by then
        ax.annotate("", xy=pos[b], xytext=pos[a], zorder=2,
                    arrowprops=dict(arrowstyle="-|>", color="#444444", lw=0.9,
                                    shrinkA=0, shrinkB=0,
                                    patchA=boxes[a].get_bbox_patch(),
                                    patchB=boxes[b].get_bbox_patch(),
                                    connectionstyle=f"arc3,rad={0.25 if span > 1 else 0.0}"))
    ax.set_xlim(min(xs) - 0.6, max(xs) + 0.6)
    ax.set_ylim(min(ys) - 0.6, max(ys) + 0.6)
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=10)
    return ax


def draw_program(program: Any, backward: bool = False, ax: Any = None,
                 title: Optional[str] = None) -> Any:
    """Draw ``program``'s computation graph, or with ``backward`` its backpropagation graph.

    Both use the layout of the computation graph, so they can be compared node
    by node: roots (inputs) are shaded, outputs have a bold border.
    """
    return draw_dot(program.to_dot(backward=backward), positions_from=program.to_dot(), ax=ax,
                    title=title)
