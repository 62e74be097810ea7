"""The NodeUsageReport of `kplan nodes --usage`, from what kplan.planning.usage measured."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from kplan.planning.usage import NodeUsage
from kplan.report.units import API_VERSION, quantity


def _amounts(names: Sequence[str], row: np.ndarray) -> dict[str, str]:
    return {r: quantity(r, int(v)) for r, v in zip(names, row.tolist())}


def _percents(names: Sequence[str], row: np.ndarray) -> dict[str, int]:
    return {r: int(v) for r, v in zip(names, row.tolist())}


def node_usage_report(usage: NodeUsage) -> dict[str, Any]:
    """Returns a NodeUsageReport: per node, what LoadAwareScheduling measures and estimates.

    For each node: `metric` (whether a NodeMetric exists), `metricAge` (seconds since its
    updateTime, None without one), `stale` (expired after nodeMetricExpirationSeconds),
    `allocatable` (raw-allocatable applied), `measured` (status.nodeMetric.nodeUsage),
    `estimated` (usage the filter counts for the pods already there: the measured or aggregated
    usage plus the part of not-yet-reported pods' estimates above their reported usage),
    `thresholds` (percent per resource after the node's usage-thresholds annotation, 0 = off),
    `thresholdKind` ("usage", "aggregated usage" or "prod usage"), `usagePercent` (rounded as the
    filter rounds). With a pod: `podEstimate`, `estimatedIfPlaced`, `usagePercentIfPlaced`, and
    `rejection` (the filter's reason if the pod were placed there, else None).
    """
    plugin, view, pod = usage.plugin, usage.view, usage.pod
    t = view.table
    names = plugin.resources
    rows = []
    for i in usage.positions:
        metric = t.metric[i]
        age = metric.age(plugin.now) if metric is not None else None
        has_info = bool(t.info[i])
        row: dict[str, Any] = {
            "name": usage.cluster.names[i],
            "metric": metric is not None,
            "metricAge": None if age is None else round(age, 3),
            "stale": bool(t.has_metric[i] and view.stale[i]),
            "allocatable": _amounts(names, t.alloc[i]),
            "measured": _amounts(names, t.node_usage[i]) if has_info else None,
            "estimated": _amounts(names, view.before[i]) if has_info else None,
            "thresholds": {r: int(v) for r, v in zip(names, view.thresholds[i].tolist()) if v},
            "thresholdKind": ("prod usage" if view.use_prod[i] else
                              "aggregated usage" if view.use_agg[i] else "usage"),
            "usagePercent": _percents(names, usage.percent_before[i]) if has_info else None,
        }
        if pod is not None:
            reasons = usage.status.reasons_of(i)
            row["podEstimate"] = _amounts(names, view.incoming)
            row["estimatedIfPlaced"] = _amounts(names, view.after[i]) if has_info else None
            row["usagePercentIfPlaced"] = _percents(names, usage.percent_after[i]) if has_info else None
            row["rejection"] = reasons[0] if reasons else None
        rows.append(row)
    return {"apiVersion": API_VERSION, "kind": "NodeUsageReport", "now": plugin.now.isoformat(),
            "nodeMetricExpirationSeconds": plugin.args.expiration_seconds,
            "pod": pod.key if pod is not None else None, "nodes": rows}
