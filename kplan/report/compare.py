"""The ComparisonReport of `kplan compare`: the variants' summaries and figures around the pods matched
across them (kplan.planning.compare)."""
from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

import numpy as np

from kplan.framework.runtime import NEEDS_PREEMPTION, SCHEDULED
from kplan.planning.check import NO_ZONE, ZONE_LABEL
from kplan.planning.compare import ComparedPod, Explanation, Placement, Run
from kplan.report.node_changes import node_changes_entry
from kplan.report.units import API_VERSION, quantity


def comparison_report(runs: Sequence[Run], pods: list[ComparedPod], allow_preemption: bool) -> dict[str, Any]:
    """The ComparisonReport of runs that placed `pods` (kplan.planning.compare.run_compare)."""
    variants = []
    for run in runs:
        ps = run.placements
        summary = {"pods": len(ps), "scheduled": sum(p.outcome == SCHEDULED for p in ps),
                   "needsPreemption": sum(p.outcome == NEEDS_PREEMPTION for p in ps),
                   "unschedulable": sum(p.outcome not in (SCHEDULED, NEEDS_PREEMPTION) for p in ps)}
        entry = {"name": run.variant.name, "flags": run.variant.flags, **run.planner.release_fields(),
                 "summary": summary, "metrics": metrics(run.planner.cluster, ps)}
        if run.changes is not None:
            entry["nodeChanges"] = node_changes_entry(run.changes)
        variants.append(entry)
    return {"apiVersion": API_VERSION, "kind": "ComparisonReport", "allowPreemption": allow_preemption,
            "variants": variants, "differing": sum(p.differs for p in pods), "pods": [_pod_entry(p) for p in pods]}


def _pod_entry(pod: ComparedPod) -> dict[str, Any]:
    """A pod of the report: its placement in every variant and, when one was explained, why."""
    entry: dict[str, Any] = {"pod": pod.pod, "workload": pod.workload,
                             "placements": {name: _placement_entry(p) for name, p in pod.placements.items()}}
    if pod.explanations:
        entry["explanations"] = [_explanation_entry(e) for e in pod.explanations]
    entry["differs"] = pod.differs
    return entry


def _placement_entry(p: Placement) -> dict[str, Any]:
    place: dict[str, Any] = {"outcome": p.outcome, "node": p.node}
    if p.message is not None:  # a pod not scheduled
        place.update({"plugin": p.plugin, "message": p.message})
    return place


def _explanation_entry(e: Explanation) -> dict[str, Any]:
    entry: dict[str, Any] = {"variant": e.variant, "against": e.against, "nodes": list(e.nodes),
                             "decidedBy": e.decided_by}
    if e.filtered is not None:
        entry["filtered"] = e.filtered
    else:
        entry["margins"] = e.margins
    return entry


def _stats(values: np.ndarray) -> dict[str, float]:
    if not len(values):
        return {"mean": 0.0, "stddev": 0.0, "max": 0.0}
    return {"mean": round(float(values.mean()), 4), "stddev": round(float(values.std()), 4),
            "max": round(float(values.max()), 4)}


def metrics(cluster, placements: Sequence[Placement]) -> dict[str, Any]:
    """The capacity planner's figures of one variant, after its placements (see the README)."""
    counts = cluster.pod_count
    cols = {r: cluster.res_index[r] for r in ("cpu", "memory")}
    per_node: dict[str, Any] = {}
    largest_free: dict[str, str] = {}
    for r, k in cols.items():
        alloc, req = cluster.allocatable[:, k], cluster.requested[:, k]
        has = alloc > 0
        per_node[r] = _stats(req[has] / alloc[has])
        free = np.maximum(alloc - req, 0)
        largest_free[r] = quantity(r, int(free.max()) if len(free) else 0)
    zones = cluster.label_column(ZONE_LABEL)
    zone_names = [zones.values[int(c)] if c >= 0 else NO_ZONE for c in zones.codes]
    all_zones = sorted(set(zone_names))
    per_zone: Counter = Counter()
    per_workload: dict[str, Counter] = {}
    for p in placements:
        if p.outcome == SCHEDULED or (p.outcome == NEEDS_PREEMPTION and p.applied):
            zone = zone_names[cluster.index[p.node]]
            per_zone[zone] += 1
            per_workload.setdefault(p.workload, Counter())[zone] += 1
    run_nodes = {p.node for p in placements if p.node is not None and (p.outcome == SCHEDULED or p.applied)}
    skew = {w: max(c[z] for z in all_zones) - min(c[z] for z in all_zones) for w, c in per_workload.items()}
    return {"nodes": cluster.n, "nodesUsed": int((counts > 0).sum()), "nodesEmpty": int((counts == 0).sum()),
            "nodesUsedByRun": len(run_nodes),
            "requestedRatio": per_node, "largestFree": largest_free,
            "zones": {z: per_zone[z] for z in all_zones}, "zoneSkew": dict(sorted(skew.items()))}
