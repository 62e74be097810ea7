"""What the --add-node FILE:auto search adds to a report: nodesNeeded, its summary line (the count found,
or why there is none) and the counts tried (kplan.planning.auto_nodes)."""
from __future__ import annotations

from typing import Any, Sequence

from kplan.planning.auto_nodes import (
    Answer, EvictionRefused, NoCount, NotEnough, PodRefused, Template,
)


def nodes_needed_fields(answer: Answer, templates: Sequence[Template]) -> dict[str, Any]:
    counts = answer.counts
    return {"nodesNeeded": None if counts is None else {t.name: n for t, n in zip(templates, counts)},
            "nodesNeededSummary": (needs_line(counts, templates) if counts is not None
                                   else why_no_count(answer.why_none, templates)),
            "nodeCountsTried": answer.tried}


def needs_line(counts: Sequence[int], templates: Sequence[Template]) -> str:
    """`needs 3 × node-c-large`."""
    parts = [f"{n} × {t.name}" for t, n in zip(templates, counts) if n > 0]
    return "needs " + (" + ".join(parts) if parts else f"0 × {templates[0].name} (every pod fits already)")


def why_no_count(why: NoCount, templates: Sequence[Template]) -> str:
    """The sentence that says why no count of copies lets every pod fit (the last case: NotVerified)."""
    names = " or ".join(t.name for t in templates)
    if isinstance(why, PodRefused):
        return f"no copy of {names} can hold pod {why.pod}: " + "; ".join(
            f"{template}: " + "; ".join(f"{lack.text} ({lack.plugin})" for lack in lacks)
            for template, lacks in why.lacks.items())
    if isinstance(why, EvictionRefused):
        return f"no copy of {names} helps: drained pod {why.pod}: eviction refused: {why.reason}"
    if isinstance(why, NotEnough):
        every = " + ".join(f"{why.max_nodes} × {t.name}" for t in templates)
        return f"even {every} are not enough: {why.failure}"
    return f"the run at {needs_line(why.counts, templates)} did not verify: {why.failure}"
