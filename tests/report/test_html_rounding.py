"""The node section's bars round column by column in numpy, and must write the very numbers
Python's round writes (the NodeReport's ratios are rounded by Python)."""
import random

import numpy as np
import pytest

from kplan.report.html.nodes import python_round


def _near_half_way(digits: int, rng: random.Random) -> float:
    """A value within a few ulps of (k + 0.5) / 10**digits: where scaling and rounding can differ."""
    value = (rng.randrange(0, 2_000_000) + 0.5) / 10**digits
    for _ in range(rng.randrange(0, 4)):
        value = np.nextafter(value, np.inf if rng.random() < 0.5 else -np.inf)
    return float(value)


@pytest.mark.parametrize("digits", [1, 4])
def test_python_round_writes_what_python_writes(digits):
    rng = random.Random(digits)
    values = [rng.randrange(0, 10**9) / rng.randrange(1, 10**9) for _ in range(20_000)]  # ratios a / b
    values += [_near_half_way(digits, rng) for _ in range(20_000)]
    values += [rng.uniform(0, 150) for _ in range(20_000)]  # a bar's geometry
    values += [rng.uniform(1e3, 1e16) for _ in range(20_000)]  # over-commit on a node with next to nothing
    values += [0.25, 0.35, 1.45, 2.675, 0.00005, 0.00015, 149.95, -0.05]
    rounded = python_round(np.array(values), digits).tolist()
    assert rounded == [round(v, digits) for v in values]
    assert [repr(v) for v in rounded] == [repr(round(v, digits)) for v in values]


def test_python_round_keeps_nan():
    out = python_round(np.array([np.nan, 0.12345]), 4)
    assert np.isnan(out[0]) and out[1] == 0.1235
