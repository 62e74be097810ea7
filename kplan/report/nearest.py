"""The nearest nodes of an unschedulable pod, as JSON-ready dicts."""
from __future__ import annotations

from typing import Any

from kplan.planning.nearest.lack import RESOURCE, NearNode


def nearest_entry(near: NearNode) -> dict[str, Any]:
    """Builds one nearest node: its name, the first plugin that rejects it (the one kube-scheduler
    reports) and all of them (profile order), every lack with its facts, and the resource shortfall
    (quantity strings; empty when resources are not what it lacks)."""
    shortfall: dict[str, str] = {}
    for lack in near.lacks:
        if lack.kind == RESOURCE:
            shortfall.update(lack.detail.get("shortfall") or {})
    return {
        "node": near.node,
        "plugin": near.plugins[0] if near.plugins else "",
        "plugins": near.plugins,
        "lacks": [{"plugin": lack.plugin, "kind": lack.kind, "text": lack.text, "detail": lack.detail}
                  for lack in near.lacks],
        "shortfall": shortfall,
    }


def what_would_make_it_fit_fields(planner, result) -> dict[str, Any]:
    """For an unschedulable pod: {"nearest": [nearest_entry, ...], "hints": [...]}, from the analysis
    `kplan pending` runs (planning.pending.what_would_make_it_fit); {} for any other outcome."""
    from kplan.framework.runtime import UNSCHEDULABLE
    from kplan.planning.pending import what_would_make_it_fit
    if result.outcome != UNSCHEDULABLE:
        return {}
    nearest, hints = what_would_make_it_fit(planner, result)
    return {"nearest": [nearest_entry(near) for near in nearest], "hints": list(hints)}


def nearest_line(near: dict[str, Any]) -> str:
    """One nearest node on a line, for logs and CI: "node-a1: 300m cpu short (NodeResourcesFit)"."""
    return f"{near['node']}: " + "; ".join(f"{lack['text']} ({lack['plugin']})" for lack in near["lacks"])
