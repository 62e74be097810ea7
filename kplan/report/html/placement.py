"""The placement section: per pod the outcome, the score heatmap of the feasible nodes, the
rejected nodes per plugin and reason, the FailedScheduling message and preemption's victims."""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence

HEATMAP_ROWS = 50  # ranked nodes drawn per pod; the others are summed up as score ranges
HEATMAP_MIN_ROWS = 10
HEATMAP_BUDGET = 2000  # ranked-node rows over all pods of a page: many pods draw fewer rows each
HOVER_NAMES = 40  # node names a rejection bar lists on hover
# Viridis in eleven steps (score 0-9, 10-19, ..., 100): sequential and colour-blind safe.
VIRIDIS = ("#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58",
           "#b5de2b", "#dde318", "#fde725")
DARK_STEPS = 6  # the first steps are dark: their numbers are written in white

OUTCOME_TONES = {"Scheduled": "ok", "NeedsPreemption": "warn", "Unschedulable": "bad", "SchedulingGated": "muted"}


def heat_steps() -> list[tuple[str, str]]:
    """Per step of ten points, the cell colour and its text colour (the stylesheet's s0..s10)."""
    return [(colour, "#fff" if step < DARK_STEPS else "#000") for step, colour in enumerate(VIRIDIS)]


def heat_step(score: int) -> int:
    return min(max(int(score), 0), 100) // 10


def heatmap_rows(pods: int) -> int:
    """Ranked nodes drawn per pod on a page that draws `pods` pods in full."""
    return max(HEATMAP_MIN_ROWS, min(HEATMAP_ROWS, HEATMAP_BUDGET // max(pods, 1)))


def placement_view(entry: dict[str, Any], anchor: str, feasible_count: int | None = None,
                   drawn: int = HEATMAP_ROWS) -> dict[str, Any]:
    """The model of one pod's placement, from its PlacementReport entry (full or grouped), its best
    `drawn` feasible nodes in the heatmap. An entry that lists only the best feasible nodes comes
    with the count of them all."""
    feasible = [n for n in entry.get("nodes", ()) if n.get("feasible")]
    weights = entry.get("weights") or {}
    plugins = [p for p in weights if any(p in n["scores"] for n in feasible)]
    rows = []
    for n in feasible[:drawn]:
        cells = [(score, heat_step(score)) if (score := n["scores"].get(p)) is not None else (None, None)
                 for p in plugins]
        rows.append({"name": n["name"], "rank": n["rank"], "total": n["totalScore"], "cells": cells,
                     "selected": n["name"] == entry.get("node")})
    return {"entry": entry, "anchor": anchor, "tone": OUTCOME_TONES.get(entry["outcome"], "muted"),
            "plugins": [{"name": p, "weight": weights[p]} for p in plugins], "heatmap": rows,
            "rest": score_ranges(feasible[drawn:], plugins),
            "feasible": len(feasible) if feasible_count is None else feasible_count,
            "rejected": rejection_bars(entry)}


def score_ranges(nodes: Sequence[dict[str, Any]], plugins: Sequence[str]) -> dict[str, Any] | None:
    """The feasible nodes not drawn, summed up: per plugin and for the total, the lowest and highest
    score among them (None when every feasible node is drawn)."""
    if not nodes:
        return None

    def span(values: list[int]) -> str:
        if not values:
            return "—"
        low, high = min(values), max(values)
        return str(low) if low == high else f"{low}–{high}"
    return {"count": len(nodes), "total": span([n["totalScore"] for n in nodes]),
            "plugins": [span([n["scores"][p] for n in nodes if p in n["scores"]]) for p in plugins]}


def rejection_bars(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """A bar per (plugin, reason), as the FailedScheduling message counts them: a node rejected for
    two reasons counts in both. Names on hover come from the node rows, or a grouped report's examples."""
    counts: dict[tuple[str, str], int] = defaultdict(int)
    names: dict[tuple[str, str], list[str]] = defaultdict(list)
    if "rejected" in entry:
        for group in entry["rejected"]:
            for reason in group["reasons"]:
                counts[(group["plugin"], reason)] += group["nodes"]
                names[(group["plugin"], reason)].extend(group["examples"])
    else:
        for n in entry.get("nodes", ()):
            if not n.get("feasible"):
                for reason in n["reasons"]:
                    counts[(n["plugin"], reason)] += 1
                    names[(n["plugin"], reason)].append(n["name"])
    top = max(counts.values(), default=1)
    bars = []
    for (plugin, reason), count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        shown = sorted(names[(plugin, reason)])[:HOVER_NAMES]
        more = count - len(shown)
        bars.append({"label": f"{plugin or 'PreFilterResult'}: {reason}", "count": count, "over": False,
                     "w": round(count / top * 100, 1),
                     "hover": ", ".join(shown) + (f" and {more} more" if more > 0 else "")})
    return bars


def pod_rows(entries: Sequence[dict[str, Any]], extra: Sequence[Sequence[str]] = (),
             detailed: int = 0) -> list[dict[str, Any]]:
    """The pods table: outcome, node and message per pod, the cells of any extra columns, and for
    the first `detailed` pods (those drawn in full) the anchor of their details."""
    return [{"entry": e, "anchor": f"pod-{k}" if k < detailed else "", "extra": extra[k] if extra else (),
             "tone": OUTCOME_TONES.get(e["outcome"], "muted")} for k, e in enumerate(entries)]
