"""Integer arithmetic as Go does it: int64 division truncates toward zero."""
from __future__ import annotations

import numpy as np


def go_div(a, b):
    """Divides int64 arrays (or ints) truncating toward zero, as Go's `/` on integers."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)
