"""Node load as LoadAwareScheduling sees it: measured usage, estimates, thresholds, metric age.

`node_usage` is the data behind `kplan nodes --usage`: a pure function of the snapshot, the
node table, the plugin args, an optional incoming pod and the time; kplan.report.usage writes it. Numbers are
the plugin's own (the same matrices its Filter and Score read), so the table agrees with `place`.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Mapping, Sequence

import numpy as np

from kplan.api.objects import Pod
from kplan.cluster.state import ClusterState
from kplan.framework.config import Profile
from kplan.framework.interfaces import CycleState, Handle
from kplan.plugins.load_aware_scheduling import NAME, LoadAwareScheduling, usage_percent


def load_aware_args(profiles: Sequence[Profile], profile: str | None = None) -> Mapping | None:
    """Returns the LoadAwareScheduling args of the chosen profile (else the first one that configures them)."""
    chosen = [p for p in profiles if p.scheduler_name == profile] if profile else list(profiles)
    for p in chosen:
        if NAME in p.plugin_config:
            return p.plugin_config[NAME]
    return None


@dataclass
class NodeUsage:
    """What LoadAwareScheduling measures and estimates on some nodes (kplan.report.usage writes the
    NodeUsageReport): the plugin with its view of the table, the nodes' positions, the usage percent
    before and after the pod, and the pod's filter status (None without a pod)."""

    plugin: LoadAwareScheduling
    view: Any
    cluster: ClusterState
    positions: Sequence[int]
    percent_before: np.ndarray
    percent_after: np.ndarray
    pod: Pod | None = None
    status: Any = None


def node_usage(snapshot: Any, cluster: ClusterState, now: datetime, args: Mapping | None = None,
               pod: Pod | None = None, nodes: Sequence[str] | None = None) -> NodeUsage:
    """Runs LoadAwareScheduling's view (and, with `pod`, its PreFilter and Filter) over the nodes
    named (all by default), as its Filter and Score read the table."""
    plugin = LoadAwareScheduling(args, Handle(snapshot=snapshot, now=now))
    view = plugin.view(pod, cluster)
    positions = range(cluster.n) if nodes is None else [cluster.index[n] for n in nodes]
    status = None
    if pod is not None:
        state = CycleState()
        plugin.pre_filter(state, pod, cluster)
        status = plugin.filter(state, pod, cluster)
    return NodeUsage(plugin, view, cluster, positions, usage_percent(view.before, view.table.alloc),
                     usage_percent(view.after, view.table.alloc), pod, status)
