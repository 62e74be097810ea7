"""The ConsolidationReport of `kplan consolidate`, from the plan kplan.planning.consolidate made."""
from __future__ import annotations

from typing import Any, Sequence

from kplan.planning.consolidate import RESOURCES, Blocker, Consolidation, Step, cluster_ratios
from kplan.planning.drainability import AUTOSCALER
from kplan.report.nearest import nearest_entry
from kplan.report.ratios import DIGITS
from kplan.report.units import API_VERSION, quantity


def consolidation_report(plan: Consolidation) -> dict[str, Any]:
    """The ConsolidationReport (see the README's JSON contract)."""
    removable = [s for s in plan.steps if s.removable]
    blocked = [s for s in plan.steps if not s.removable]
    counts, options = plan.counts, plan.options
    summary = {"nodes": counts["nodes"], "selected": counts["selected"],
               "candidates": counts["candidates"], "visited": len(plan.steps), "removable": len(removable),
               "blocked": len(blocked), "notVisited": counts["notVisited"],
               "podsMoved": sum(len(s.moves) for s in removable)}
    return {"apiVersion": API_VERSION, "kind": "ConsolidationReport", **plan.planner.release_fields(),
            "rules": AUTOSCALER, "threshold": options.threshold,
            "gpuThreshold": options.gpu_threshold, "maxNodes": options.max_nodes,
            "selector": options.selector, "poolLabel": plan.pool_label, "summary": summary,
            "removable": [{"order": k, **_node_entry(s),
                           "moves": [{"pod": m.pod, "to": m.to, "again": m.again} for m in s.moves],
                           "leaving": [{"pod": p.pod, "rule": p.rule} for p in s.leaving],
                           "pdbsInSequence": s.in_sequence} for k, s in enumerate(removable, 1)],
            "blocked": [{**_node_entry(s), "blockers": [_blocker(b) for b in s.blockers]} for s in blocked],
            "saved": _saved(removable, plan.pool_label is not None),
            "ratios": {"before": _rounded(plan.before), "after": _rounded(cluster_ratios(plan.planner.cluster))}}


def _rounded(ratios: dict[str, float | None]) -> dict[str, float | None]:
    return {r: round(v, DIGITS) if v is not None else None for r, v in ratios.items()}


def _blocker(b: Blocker) -> dict[str, Any]:
    """A blocker as the report writes it: a budget's name where one blocks; a pod that fits nowhere has
    its nearest nodes as entries, the hints and the pods not tried after it."""
    entry: dict[str, Any] = {"pod": b.pod, "rule": b.rule, "reason": b.reason, "message": b.message,
                             "source": b.source}
    if b.pdb is not None:
        entry["pdb"] = b.pdb
    if b.nearest is not None:
        entry.update({"nearest": [nearest_entry(n) for n in b.nearest], "hints": list(b.hints or ()),
                      "podsNotTried": b.pods_not_tried})
    return entry


def _node_entry(step: Step) -> dict[str, Any]:
    return {"node": step.node, "zone": step.zone, "pool": step.pool, "utilization": _rounded(step.utilization),
            "allocatable": {r: quantity(r, v) for r, v in step.allocatable.items()}}


def _saved(removable: Sequence[Step], pools: bool) -> dict[str, Any]:
    """The allocatable of the nodes that go: in all, per zone and (with a pool label) per node pool."""
    def group(steps) -> dict[str, Any]:
        return {"nodes": len(steps), **{r: quantity(r, sum(s.allocatable[r] for s in steps)) for r in RESOURCES}}

    def per(attr: str) -> dict[str, Any]:
        keys = sorted({getattr(s, attr) for s in removable})
        return {key: group([s for s in removable if getattr(s, attr) == key]) for key in keys}

    return {**group(removable), "perZone": per("zone"), "perPool": per("pool") if pools else {}}
