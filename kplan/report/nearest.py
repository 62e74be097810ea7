"""The nearest nodes of an unschedulable pod, as JSON-ready dicts."""
from __future__ import annotations

from typing import Any

from kplan.planning.nearest import RESOURCE, NearNode


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
