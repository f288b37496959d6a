"""The minimum cut behind rematerialisation (newtonad.ad.remat): scipy's compiled flow and
the pure-Python fallback both give the smallest source side of the minimum cuts, and
bounding the infinite capacities changes no choice."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from newtonad.ad import remat
from newtonad.ad import transforms as tf
from newtonad.ad.program import Slot
from newtonad.ad.trace import trace_function


def _smallest_min_cut_side(n, edges, s, t):
    """Brute force: the intersection of the source sides of all minimum cuts (the set
    the residual graph of any maximum flow reaches from ``s``)."""
    others = [u for u in range(n) if u not in (s, t)]
    best, sides = None, []
    for r in range(len(others) + 1):
        for chosen in itertools.combinations(others, r):
            side = {s, *chosen}
            value = sum(c for u, v, c in edges if u in side and v not in side)
            if best is None or value < best:
                best, sides = value, [side]
            elif value == best:
                sides.append(side)
    return set.intersection(*sides)


def _random_graph(rng, n):
    edges = []
    for u in range(n):
        for v in range(n):
            if u != v and v != 0 and u != n - 1 and rng.random() < 0.35:
                edges.append((u, v, int(rng.integers(1, 6))))
    return edges


def _reach(n, edges, s, t):
    tails, heads, caps = (np.array(c, dtype=np.int64) for c in zip(*edges))
    return set(np.flatnonzero(remat._residual_reach(n, tails, heads, caps, s, t)).tolist())


@pytest.mark.parametrize("seed", range(40))
def test_residual_reach_is_the_smallest_source_side_of_the_minimum_cuts(seed, monkeypatch):
    monkeypatch.setattr(remat, "_COMPILED_FLOW_FROM_NODES", 0)  # scipy's flow at every size
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 9))
    edges = _random_graph(rng, n) or [(0, n - 1, 1)]
    expected = _smallest_min_cut_side(n, edges, 0, n - 1)
    assert _reach(n, edges, 0, n - 1) == expected  # scipy's flow
    # capacities beyond 32 bits take the Python flow; scaling keeps the minimum cuts
    big = [(u, v, c << 33) for u, v, c in edges]
    assert _reach(n, big, 0, n - 1) == expected
    monkeypatch.setattr(remat, "_COMPILED_FLOW_FROM_NODES", n + 1)  # the Python flow
    assert _reach(n, edges, 0, n - 1) == expected


def _rosen_loop(x):
    s = 0.0
    for i in range(len(x) - 1):
        s = s + 100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2
    return s


def _surface(u):
    return np.sum(np.sqrt(1 + (u[1:, :-1] - u[:-1, :-1]) ** 2 + (u[:-1, 1:] - u[:-1, :-1]) ** 2))


def _mixed(x):
    return np.sum(np.exp(x)) + np.sum(x) ** 2 * np.sum(x * x) + np.sum(np.tanh(x[1:] * x[:-1]))


def _choice_inputs(f, slot, k):
    program = trace_function(f, [slot]).program
    known = [True, False]
    jp = tf.jvp_program(tf.value_and_grad_program(program), k)
    kind = remat.slot_kinds(jp, known)
    needed = list(dict.fromkeys(i for s in jp.steps if kind[s.output] == "unknown"
                                for i in s.inputs if kind[i] == "known"))
    return jp, kind, needed


CASES = {"rosen_loop": (_rosen_loop, Slot((41,)), None),
         "surface": (_surface, Slot((9, 8)), 2),
         "mixed": (_mixed, Slot((6,)), 3)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_choose_is_the_same_with_the_python_flow(name, monkeypatch):
    jp, kind, needed = _choice_inputs(*CASES[name])
    monkeypatch.setattr(remat, "_COMPILED_FLOW_FROM_NODES", 0)  # scipy's flow at every size
    fast = remat.choose(jp, kind, needed)
    monkeypatch.setattr(remat, "_INT32_MAX", -1)  # every graph takes the Python fallback
    assert remat.choose(jp, kind, needed) == fast
    assert fast[1]  # something is recomputed: the cut is not the trivial one


def test_choose_on_arrays_whose_bytes_exceed_32_bits():
    """A 2**15 x 2**15 surface (abstract: nothing is allocated): bytes and recomputation
    costs beyond 2**31 are not truncated; the choice is closed and never costs more than
    storing what is read."""
    jp, kind, needed = _choice_inputs(_surface, Slot((2**15, 2**15)), 2)
    stored, recomputed = remat.choose(jp, kind, needed)
    producer = {s.output: s for s in jp.steps}
    assert set(needed) <= set(stored) | recomputed and not set(stored) & recomputed
    for i in recomputed:
        assert all(kind[j] == "const" or j in stored or j in recomputed
                   for j in producer[i].inputs)
    assert remat.cost(jp, stored, recomputed) <= remat.cost(jp, needed, ())
    # the same program at a small size makes the same choice (all costs scale alike)
    small = _choice_inputs(_surface, Slot((64, 64)), 2)
    assert [len(c) for c in remat.choose(*small)] == [len(stored), len(recomputed)]


def test_cost_of_recomputing_a_barrier_is_an_error():
    jp, kind, needed = _choice_inputs(_mixed, Slot((6,)), 3)
    barrier = next(s.output for s in jp.steps
                   if kind[s.output] == "known" and remat.recompute_cost(jp, s) is None)
    with pytest.raises(ValueError, match="a barrier: it cannot be recomputed"):
        remat.cost(jp, [], [barrier])
