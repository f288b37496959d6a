"""Rematerialisation: which known values a linear program loads, and which it recomputes.

Partial evaluation splits a program into a known part, run once per point,
and an unknown part, run for every tangent frame. The unknown part reads known values
("residuals"). Storing every value it reads is one choice; recomputing some of them
inside the unknown part from a few stored ones is another. In a fused loop nest a
stored residual costs a full memory stream on every application, while elementwise
arithmetic on values already in registers is nearly free – so trading loads for flops
pays, as long as the flops are cheap (JAX's ``checkpoint`` policies and the min-cut
partitioner of PyTorch's AOTAutograd make the same trade).

The policy (deterministic; it names no engine, only what a fused loop costs):

* **Recomputable** are the steps a fused loop evaluates per element: elementwise
  arithmetic, comparisons and selects, and the index-only steps (slice, broadcast,
  transpose, unit reshape). Everything else – reductions, einsum, gather and
  scatter, cumsum, concatenate, unslice, reshapes that move elements – is a
  *barrier*: its value is available to the unknown part only by being stored. So are
  the known inputs (``x`` and the data arguments).
* **Costs**, in bytes per application: storing a value costs its size in bytes (one
  load stream); recomputing a step costs its number of elements times a weight per
  primitive (its ``weight``, given where the primitive is defined): 0 for index-only
  steps, 1 for cheap arithmetic, 8 for division and square root, 128 for
  transcendental functions. The weights were
  measured in a fused numba loop on the development machine: a 2 MB stream costs
  about 0.37 ns per element, ``sqrt`` 0.47 ns, ``exp`` 6.5 ns, ``log`` and ``sin``
  more. Division and square root are priced above their raw cost because a stencil
  (slices of one array) makes a fused loop evaluate them once per shifted index: on
  the 512² minimal surface, recomputing everything from ``x`` alone made the linear
  pass 0.95× a full HVP, storing the two values made by sqrt and division 0.42–0.58×.
  A long chain of cheap steps adds up, so "how long a chain is worth recomputing" is
  a consequence of the costs, not a separate limit.
* **Choice**: the set of stored values that minimises stored bytes plus recomputed
  work, subject to every value the unknown part needs being stored or recomputable
  from stored values. This is a minimum s–t cut (each known slot a pair of nodes
  ``in → out`` whose edge, of capacity the storage cost, is cut when the value is
  stored; an edge ``source → in`` of capacity the recomputation cost, cut when it is
  recomputed; barriers and inputs tied to the source; needed values tied to the
  sink). Storing exactly the values read – what partial evaluation did before – is
  one of the cuts, so the choice never costs more than that by this measure. Of the
  minimum cuts the one with the smallest source side is taken (the nodes reachable
  from the source in the residual graph), which is unique: ties go to recomputation.
  scipy's compiled maximum flow finds it on large graphs (a pure-Python Dinic on small
  ones, which need not import scipy, and when capacities exceed 32 bits): the
  pipeline's cost per program step stays flat up to 1e5 steps.

Values that depend on no input (constants) are recomputed wherever they are needed,
as before, and are not part of the choice.

The costs describe a fusing engine. On an evaluator that runs one array operation per
step (the NumPy reference engine) every recomputed step makes a temporary array, so
there the trade loses at small frame widths; hot programs run on numba.
"""

from __future__ import annotations

from collections import deque
from typing import Iterable, Sequence

import numpy as np

from .program import Program, Slot, Step

_ITEMSIZE = {"float64": 8, "int64": 8, "bool": 1}


def _bytes(slot: Slot) -> int:
    return max(1, slot.size) * _ITEMSIZE.get(slot.dtype, 8)


def slot_kinds(program: Program, known: Sequence[bool]) -> dict[int, str]:
    """Each slot's kind: "known" (from known inputs), "unknown", or "const" (from none)."""
    kind: dict[int, str] = {}
    for i, is_known in zip(program.inputs, known):
        kind[i] = "known" if is_known else "unknown"
    for step in program.steps:
        out = "const"
        for i in step.inputs:  # a loop, not a set per step: this runs on every step of a pass
            k = kind[i]
            if k == "unknown":
                out = k
                break
            if k == "known":
                out = k
        kind[step.output] = out
    return kind


def recompute_cost(program: Program, step: Step) -> int | None:
    """Bytes-equivalent cost of recomputing ``step`` once; ``None`` for a barrier.

    The weight per element is the primitive's own (``Primitive.recompute_weight``).
    """
    weight = step.primitive.recompute_weight([program.slots[i] for i in step.inputs],
                                             program.slots[step.output])
    if weight is None:
        return None
    return weight * max(1, program.slots[step.output].size)


class _Flow:
    """A directed graph with integer capacities; Dinic's maximum flow."""

    def __init__(self, n: int):
        self.adj: list[list[int]] = [[] for _ in range(n)]
        self.head: list[int] = []
        self.cap: list[int] = []

    def edge(self, u: int, v: int, c: int) -> None:
        self.adj[u].append(len(self.head))
        self.head.append(v)
        self.cap.append(c)
        self.adj[v].append(len(self.head))
        self.head.append(u)
        self.cap.append(0)

    def _levels(self, s: int) -> list[int]:
        level = [-1] * len(self.adj)
        level[s] = 0
        queue = deque([s])
        while queue:
            u = queue.popleft()
            for e in self.adj[u]:
                v = self.head[e]
                if self.cap[e] > 0 and level[v] < 0:
                    level[v] = level[u] + 1
                    queue.append(v)
        return level

    def source_side(self, s: int, t: int) -> set[int]:
        """Run a maximum flow; return the nodes reachable from ``s`` in the residual graph."""
        while True:
            level = self._levels(s)
            if level[t] < 0:
                return {u for u, lv in enumerate(level) if lv >= 0}
            nxt = [0] * len(self.adj)
            while self._augment(s, t, level, nxt):
                pass

    def _augment(self, s: int, t: int, level: list[int], nxt: list[int]) -> int:
        """One augmenting path in the level graph (iterative DFS); its flow, or 0."""
        stack: list[int] = [s]
        path: list[int] = []
        while stack:
            u = stack[-1]
            if u == t:
                flow = min(self.cap[e] for e in path)
                for e in path:
                    self.cap[e] -= flow
                    self.cap[e ^ 1] += flow
                return flow
            adj = self.adj[u]
            while nxt[u] < len(adj):
                e = adj[nxt[u]]
                if self.cap[e] > 0 and level[self.head[e]] == level[u] + 1:
                    break
                nxt[u] += 1
            if nxt[u] < len(adj):
                e = adj[nxt[u]]
                stack.append(self.head[e])
                path.append(e)
            else:  # a dead end: never enter it again in this phase
                level[u] = -1
                stack.pop()
                if path:
                    path.pop()
                    nxt[stack[-1]] += 1
        return 0


#: scipy's maximum flow stores capacities and flows as 32-bit integers.
_INT32_MAX = 2**31 - 1
#: Graphs of fewer nodes take the pure-Python flow: about 20 us per program step there,
#: where importing scipy.sparse once costs 130-160 ms (``import newtonad`` and the first
#: gradient of a small program never pay it) and scipy's flow about 1 ms of set-up.
_COMPILED_FLOW_FROM_NODES = 4096


def _residual_reach(n: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray,
                    s: int, t: int) -> np.ndarray:
    """Nodes reachable from ``s`` in the residual graph of a maximum ``s``–``t`` flow.

    Every maximum flow leaves the same reachable set (the source side of the minimum
    cut with the smallest source side), so the algorithm that finds the flow does not
    matter. scipy's compiled Dinic finds it when the capacities fit its 32-bit
    integers; otherwise :class:`_Flow` (pure Python, the same algorithm) does.
    Returns a boolean mask over the ``n`` nodes.
    """
    if n < _COMPILED_FLOW_FROM_NODES or (caps.size and int(caps.max()) > _INT32_MAX):
        return _python_reach(n, tails, heads, caps, s, t)
    from scipy import sparse
    from scipy.sparse import csgraph

    capacity = sparse.csr_array((caps, (tails, heads)), shape=(n, n))  # sums parallel edges
    if capacity.nnz == 0 or int(capacity.data.max()) <= _INT32_MAX:
        reach = np.zeros(n, dtype=bool)
        capacity.data = capacity.data.astype(np.int32)
        flow = csgraph.maximum_flow(capacity, s, t, method="dinic").flow
        residual = (capacity - flow).tocsr()  # a reverse edge: capacity 0 minus a negative flow
        residual.data = (residual.data > 0).astype(np.int8)
        residual.eliminate_zeros()
        reach[csgraph.breadth_first_order(residual, s, return_predecessors=False)] = True
        return reach
    return _python_reach(n, tails, heads, caps, s, t)


def _python_reach(n: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray,
                  s: int, t: int) -> np.ndarray:
    """:func:`_residual_reach` by :class:`_Flow`."""
    graph = _Flow(n)
    for u, v, c in zip(tails.tolist(), heads.tolist(), caps.tolist()):
        graph.edge(u, v, c)
    reach = np.zeros(n, dtype=bool)
    reach[list(graph.source_side(s, t))] = True
    return reach


def choose(program: Program, kind: dict[int, str], needed: Iterable[int]
           ) -> tuple[list[int], set[int]]:
    """Which known slots to store and which to recompute (see the module docstring).

    ``kind`` maps every slot to ``"known"``, ``"unknown"`` or ``"const"``; ``needed``
    are the known slots the unknown part reads. Returns ``(stored, recomputed)``: the
    stored slots in program order (inputs first), and the known slots the unknown part
    evaluates itself.

    Infinite capacities (barriers, inputs, needed values) and finite ones above it are
    set to one more than the cost of storing exactly the needed values. That cut is
    finite, so no minimum cut crosses an edge of larger capacity: the minimum cuts, and
    the one chosen, are those of the unbounded graph, and the capacities stay small.
    """
    needed = list(dict.fromkeys(needed))
    known = [i for i in program.inputs if kind[i] == "known"]
    steps = [s for s in program.steps if kind[s.output] == "known"]
    known += [s.output for s in steps]
    node = {slot: n for n, slot in enumerate(known)}  # slot -> its "in" node 2n; "out": 2n + 1
    s, t = 2 * len(known), 2 * len(known) + 1
    INF = -1  # a placeholder, replaced by the bound below
    tails: list[int] = []
    heads: list[int] = []
    caps: list[int] = []

    def edge(u: int, v: int, c: int) -> None:
        tails.append(u)
        heads.append(v)
        caps.append(c)

    for i in program.inputs:
        if kind[i] == "known":
            edge(s, 2 * node[i], INF)
    for step in steps:
        n = 2 * node[step.output]
        for i in dict.fromkeys(step.inputs):
            if kind[i] == "known":
                edge(2 * node[i] + 1, n, INF)
        cost = recompute_cost(program, step)
        if cost is None:
            edge(s, n, INF)
        elif cost > 0:
            edge(s, n, cost)
    slots = program.slots
    for n, slot in enumerate(known):
        edge(2 * n, 2 * n + 1, _bytes(slots[slot]))
    for slot in needed:
        edge(2 * node[slot] + 1, t, INF)
    bound = 1 + sum(_bytes(slots[slot]) for slot in needed)
    cap = np.array(caps, dtype=np.int64)
    cap[(cap < 0) | (cap > bound)] = bound
    side = _residual_reach(2 * len(known) + 2, np.array(tails, dtype=np.int64),
                           np.array(heads, dtype=np.int64), cap, s, t)
    ins = side[0:2 * len(known):2].tolist()
    outs = side[1:2 * len(known):2].tolist()
    stored = [slot for slot, a, b in zip(known, ins, outs) if a and not b]
    recomputed = {slot for slot, a in zip(known, ins) if not a}
    return stored, recomputed


def cost(program: Program, stored: Iterable[int], recomputed: Iterable[int]) -> int:
    """The measure :func:`choose` minimises: stored bytes plus recomputed work."""
    producer = {s.output: s for s in program.steps}
    work = 0
    for i in recomputed:
        c = recompute_cost(program, producer[i])
        if c is None:
            raise ValueError(f"slot {i} is made by {producer[i].primitive}, a barrier: it "
                             "cannot be recomputed, only stored")
        work += c
    return sum(_bytes(program.slots[i]) for i in stored) + work


__all__ = ["choose", "cost", "recompute_cost", "slot_kinds"]
