"""Names in a line of text: the first few, with how many more, all of them with -v."""
from __future__ import annotations

from typing import Sequence

EXAMPLES = 3  # names a line shows without -v


def some_names(names: Sequence[str], verbose: bool) -> str:
    """"a, b, c, … (5 more; -v lists all)", or every name when verbose or when there are few."""
    if verbose or len(names) <= EXAMPLES:
        return ", ".join(names)
    return f"{', '.join(names[:EXAMPLES])}, … ({len(names) - EXAMPLES} more; -v lists all)"
