"""The nearest nodes of an unschedulable pod and the hints, as JSON-ready dicts."""
from __future__ import annotations

from typing import Any

from kplan.planning.nearest import RESOURCE, NearNode


def nearest_entry(near: NearNode) -> dict[str, Any]:
    """Builds one nearest node: its name, the plugins that reject it (profile order), every lack
    with its facts, and the resource shortfall (quantity strings; empty when resources are not
    what it lacks)."""
    shortfall: dict[str, str] = {}
    for lack in near.lacks:
        if lack.kind == RESOURCE:
            shortfall.update(lack.detail.get("shortfall") or {})
    return {
        "node": near.node,
        "plugins": near.plugins,
        "lacks": [{"plugin": lack.plugin, "kind": lack.kind, "text": lack.text, "detail": lack.detail}
                  for lack in near.lacks],
        "shortfall": shortfall,
    }


def nearest_section(near: list[NearNode], hints: list[str]) -> dict[str, Any]:
    """Builds the `nearestNodes` and `hints` fields of an unschedulable pod's report."""
    return {"nearestNodes": [nearest_entry(n) for n in near], "hints": list(hints)}
