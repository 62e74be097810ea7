"""Node load as LoadAwareScheduling sees it: measured usage, estimates, thresholds, metric age.

`node_usage` is the data behind `kplan nodes --usage`: a pure function of the snapshot, the
node table, the plugin args, an optional incoming pod and the time, with no printing. Numbers are
the plugin's own (the same matrices its Filter and Score read), so the table agrees with `place`.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any, Mapping, Sequence

import numpy as np

from kplan.api.objects import Pod
from kplan.cluster.state import ClusterState
from kplan.framework.config import Profile
from kplan.framework.interfaces import CycleState, Handle
from kplan.plugins.load_aware_scheduling import NAME, LoadAwareScheduling, usage_percent
from kplan.report.units import API_VERSION, quantity


def load_aware_args(profiles: Sequence[Profile], profile: str | None = None) -> Mapping | None:
    """Returns the LoadAwareScheduling args of the chosen profile (else the first one that configures them)."""
    chosen = [p for p in profiles if p.scheduler_name == profile] if profile else list(profiles)
    for p in chosen:
        if NAME in p.plugin_config:
            return p.plugin_config[NAME]
    return None


def _amounts(names: Sequence[str], row: np.ndarray, keep: np.ndarray | None = None) -> dict[str, str]:
    return {r: quantity(r, int(v)) for k, (r, v) in enumerate(zip(names, row.tolist()))
            if keep is None or keep[k]}


def node_usage(snapshot: Any, cluster: ClusterState, now: datetime, args: Mapping | None = None,
               pod: Pod | None = None, nodes: Sequence[str] | None = None) -> dict[str, Any]:
    """Returns a NodeUsageReport: per node, what LoadAwareScheduling measures and estimates.

    For each node: `metric` (whether a NodeMetric exists), `metricAge` (seconds since its
    updateTime, None without one), `stale` (expired after nodeMetricExpirationSeconds),
    `allocatable` (raw-allocatable applied), `measured` (status.nodeMetric.nodeUsage),
    `estimated` (usage the filter counts for the pods already there: the measured or aggregated
    usage plus the part of not-yet-reported pods' estimates above their reported usage),
    `thresholds` (percent per resource after the node's usage-thresholds annotation, 0 = off),
    `thresholdKind` ("usage", "aggregated usage" or "prod usage"), `usagePercent` (rounded as the
    filter rounds). With `pod`: `podEstimate`, `estimatedIfPlaced`, `usagePercentIfPlaced`, and
    `rejection` (the filter's reason if the pod were placed there, else None).
    """
    plugin = LoadAwareScheduling(args, Handle(snapshot=snapshot, now=now))
    view = plugin.view(pod, cluster)
    t = view.table
    names = plugin.resources
    positions = range(cluster.n) if nodes is None else [cluster.index[n] for n in nodes]
    status = None
    if pod is not None:
        state = CycleState()
        plugin.pre_filter(state, pod, cluster)
        status = plugin.filter(state, pod, cluster)
    pct_before = usage_percent(view.before, t.alloc)
    pct_after = usage_percent(view.after, t.alloc)
    rows = []
    for i in positions:
        metric = t.metric[i]
        age = metric.age(plugin.now) if metric is not None else None
        has_info = bool(t.info[i])
        row: dict[str, Any] = {
            "name": cluster.names[i],
            "metric": metric is not None,
            "metricAge": None if age is None else round(age, 3),
            "stale": bool(t.has_metric[i] and view.stale[i]),
            "allocatable": _amounts(names, t.alloc[i]),
            "measured": _amounts(names, t.node_usage[i]) if has_info else None,
            "estimated": _amounts(names, view.before[i]) if has_info else None,
            "thresholds": {r: int(v) for r, v in zip(names, view.thresholds[i].tolist()) if v},
            "thresholdKind": ("prod usage" if view.use_prod[i] else
                              "aggregated usage" if view.use_agg[i] else "usage"),
            "usagePercent": ({r: int(v) for r, v in zip(names, pct_before[i].tolist())} if has_info else None),
        }
        if pod is not None:
            reasons = status.reasons_of(i)
            row["podEstimate"] = _amounts(names, view.incoming)
            row["estimatedIfPlaced"] = _amounts(names, view.after[i]) if has_info else None
            row["usagePercentIfPlaced"] = ({r: int(v) for r, v in zip(names, pct_after[i].tolist())}
                                           if has_info else None)
            row["rejection"] = reasons[0] if reasons else None
        rows.append(row)
    return {"apiVersion": API_VERSION, "kind": "NodeUsageReport", "now": plugin.now.isoformat(),
            "nodeMetricExpirationSeconds": plugin.args.expiration_seconds,
            "pod": pod.key if pod is not None else None, "nodes": rows}
