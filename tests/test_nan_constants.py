"""A NaN constant in a traced function: equal traces give equal programs."""

import math

import numpy as np

import newtonad as nad
from newtonad.ad.trace import const_params


def make_function():
    def with_nan(x):
        return np.sum(x ** 2 + np.float64("nan") * 0.0)

    return with_nan


def test_two_traces_of_the_same_code_with_a_nan_constant_are_equal_programs():
    # two function objects, so two traces (one function's trace is cached)
    first = nad.trace(make_function(), np.ones(3))
    second = nad.trace(make_function(), np.ones(3))
    assert first == second and hash(first) == hash(second)
    assert len({first, second}) == 1  # so caches keyed by programs hit


def test_nan_constants_keep_their_bits():
    # one shared object per bit pattern, never a NaN of another sign or payload
    negative = -np.float64("nan")
    value = const_params(np.asarray(negative))["value"]
    assert math.isnan(value) and math.copysign(1.0, value) == -1.0
    assert const_params(np.asarray(negative))["value"] is value
    assert const_params(np.asarray(np.float64("nan")))["value"] is not value
