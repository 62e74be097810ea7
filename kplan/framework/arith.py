"""Array arithmetic: integer division as Go does it (int64 division truncates toward zero), and
dropping one position of an array."""
from __future__ import annotations

import numpy as np


def go_div(a, b):
    """Divides int64 arrays (or ints) truncating toward zero, as Go's `/` on integers."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def without(values: np.ndarray, pos: int) -> np.ndarray:
    """Returns a copy of the array less the element at `pos` (cheaper than np.delete)."""
    return np.concatenate((values[:pos], values[pos + 1:]))
