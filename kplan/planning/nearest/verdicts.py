"""Every PreFilter and Filter plugin's verdict on every node for one pod.

`analyze` runs them without kube-scheduler's short-circuits (the framework stops at a node's first
failing Filter, and stops filtering once no node is left), so every plugin's verdict on every node
is known. The facts behind each verdict come from the plugins' own cycle state and results: the
request vector NodeResourcesFit compared, the topology counts PodTopologySpread and
InterPodAffinity computed in PreFilter, the pod's host ports NodePorts kept. Everything over all
nodes is numpy; Python work per node is done only for the nodes a caller asks about and per group
of nodes (a taint set, a topology constraint) for the hints.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from kplan.api.objects import Pod
from kplan.cluster.state import ClusterState
from kplan.errors import PluginError
from kplan.framework.interfaces import CycleState
from kplan.framework.runtime import run_pre_filter
from kplan.framework.status import Code, NodeStatus, Status
from kplan.plugins import node_resources_fit


@dataclass
class Verdicts:
    """Every PreFilter and Filter plugin's verdict on every node for one pod.

    `plugins` names the columns of `rejected` in profile order: plugins whose PreFilter rejected the
    pod outright (their column is all True), then the Filter plugins and the PreFilter plugins that
    narrowed the nodes (a node outside a PreFilterResult fails that plugin).
    """

    framework: Any
    pod: Pod
    cluster: ClusterState
    state: CycleState
    plugins: list[str]
    rejected: np.ndarray  # (N, P) bool
    statuses: dict[str, NodeStatus]  # Filter results, by plugin
    outside: dict[str, np.ndarray]  # plugin -> (N,) nodes outside its PreFilterResult
    pod_rejections: list[Status]  # PreFilter statuses rejecting the pod on every node
    request: np.ndarray | None  # (R,) NodeResourcesFit's request vector, None without the plugin
    shortfall: np.ndarray  # (N, R) int64: requested + request - allocatable where Fit found it short, else 0
    pods_short: np.ndarray  # (N,) int64: pods over the node's allowed count with this one, where short
    failing: np.ndarray  # (N,) int: how many plugins reject each node
    relative: np.ndarray  # (N,) float: the resource shortfalls relative to allocatable, summed
    _cache: dict[Any, Any] = field(default_factory=dict)

    @property
    def feasible(self) -> np.ndarray:
        return self.failing == 0

    def column(self, plugin: str) -> np.ndarray:
        """Returns the (N,) mask of nodes the plugin rejects (all False for a plugin not in the table)."""
        if plugin not in self.plugins:
            return np.zeros(self.cluster.n, dtype=bool)
        return self.rejected[:, self.plugins.index(plugin)]

    def alone(self, plugin: str) -> np.ndarray:
        """Returns the (N,) mask of nodes the plugin alone rejects."""
        return self.column(plugin) & (self.failing == 1)

    @property
    def beyond(self) -> np.ndarray:
        """(N,) nodes whose whole allocatable cannot hold one of the pod's requests (no room freed
        there helps): shortfall > requested means request > allocatable."""
        return ((self.shortfall > self.cluster.requested) & (self.shortfall > 0)).any(axis=1) | (
            self.pods_short > self.cluster.pod_count)

    def ranking(self) -> np.ndarray:
        """Returns the rejected nodes' positions, nearest first: fewest failing plugins, then the
        smallest resource shortfall relative to allocatable, then node name. Nodes too small for a
        request (or offering none of a requested resource) come after all others: nothing on them
        can be changed to make room."""
        def build() -> np.ndarray:
            rows = np.flatnonzero(self.failing > 0)
            by_name = rows[np.argsort(self.cluster.name_array[rows], kind="stable")]
            return by_name[np.lexsort((self.relative[by_name], self.failing[by_name], self.beyond[by_name]))]
        return self.cached("ranking", build)

    def cached(self, key: Any, build: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]


def analyze(framework, pod: Pod, cluster: ClusterState) -> Verdicts:
    """Runs every PreFilter and Filter plugin of the framework's profile over every node.

    As RunPreFilterPlugins and RunFilterPlugins, with one CycleState, but nothing stops early: a
    PreFilter that rejects the pod is recorded (its Filter, which would read state it may not have
    written, is not run) and the others still run; every Filter runs over every node. A PreFilter
    that skips skips its Filter, as upstream's does.
    """
    state = CycleState()
    n = cluster.n
    skipped: set[str] = set()
    pod_rejections: list[Status] = []
    outside: dict[str, np.ndarray] = {}
    for plugin in framework.points["preFilter"]:
        status = run_pre_filter(plugin, state, pod, cluster)
        if status.is_skip:
            skipped.add(plugin.name)
            continue
        if status.is_rejected:
            pod_rejections.append(status)
            skipped.add(plugin.name)
            continue
        if status.node_mask is not None:
            outside[plugin.name] = ~status.node_mask
    statuses: dict[str, NodeStatus] = {}
    for plugin in framework.points["filter"]:
        if plugin.name in skipped:
            continue
        status = plugin.filter(state, pod, cluster)
        if (status.code == Code.ERROR).any():
            raise status.error or PluginError(f"running Filter plugin {plugin.name!r}: {status.reasons}")
        statuses[plugin.name] = status

    pod_wide = [s.plugin for s in pod_rejections]
    filtered = [p.name for p in framework.points["filter"] if p.name in statuses or p.name in outside]
    plugins = list(dict.fromkeys([*pod_wide, *filtered, *outside]))
    rejected = np.zeros((n, len(plugins)), dtype=bool)
    for k, name in enumerate(plugins):
        if name in pod_wide:
            rejected[:, k] = True
            continue
        if name in statuses:
            rejected[:, k] |= statuses[name].rejected
        if name in outside:
            rejected[:, k] |= outside[name]
    request, shortfall, pods_short = _shortfalls(state, cluster, statuses.get(node_resources_fit.NAME))
    relative = _relative(cluster, shortfall, pods_short)
    return Verdicts(framework, pod, cluster, state, plugins, rejected, statuses, outside, pod_rejections, request,
                    shortfall, pods_short, rejected.sum(axis=1), relative)


def _shortfalls(state: CycleState, cluster: ClusterState,
                fit: NodeStatus | None) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """What NodeResourcesFit found short, per node and resource: requested + request - allocatable."""
    n, r = cluster.n, len(cluster.resources)
    shortfall = np.zeros((n, r), dtype=np.int64)
    pods_short = np.zeros(n, dtype=np.int64)
    if fit is None or fit.reason_mask is None:
        return None, shortfall, pods_short
    request = np.asarray(state[node_resources_fit.PRE_FILTER_KEY], dtype=np.int64)
    if len(request) < r:
        request = np.pad(request, (0, r - len(request)))
    column = {reason: j for j, reason in enumerate(fit.reasons)}
    for k, name in enumerate(cluster.resources):
        j = column.get(node_resources_fit.insufficient_reason(name))
        if j is not None:
            short = fit.reason_mask[:, j]
            shortfall[short, k] = cluster.requested[short, k] + request[k] - cluster.allocatable[short, k]
    j = column.get(node_resources_fit.TOO_MANY_PODS)
    if j is not None:
        short = fit.reason_mask[:, j]
        pods_short[short] = cluster.pod_count[short] + 1 - cluster.allowed_pods[short]
    return request, shortfall, pods_short


def _relative(cluster: ClusterState, shortfall: np.ndarray, pods_short: np.ndarray) -> np.ndarray:
    """Sums each node's shortfalls as shares of its allocatable (infinite where it has none)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = np.where(shortfall > 0, shortfall / cluster.allocatable, 0.0)
        pods = np.where(pods_short > 0, pods_short / cluster.allowed_pods, 0.0)
    return shares.sum(axis=1) + pods
