"""NodeResourcesLimitAware: resource-limit-aware scoring, scheduler-plugins KEP 217.

scheduler-plugins designed this plugin (kep/217-resource-limit-aware-scoring) but never
implemented it, so the KEP is the specification and the name is kplan's. It scores a node by
how far the pods' limits, the new pod's included, stay under its allocatable:

    raw_r = (allocatable_r - limit_r) * 100 / allocatable_r     (negative when over-subscribed)
    raw   = Σ raw_r * w_r / Σ w_r                              (resources and weights from args)

then min-max normalizes the raw scores of the scored nodes to 0..100. Unlike koordinator's
LimitAware it has no filter and no per-node limit-to-allocatable ratio: the node's allocatable
is the reference.

Choices the KEP leaves open: a pod's limit is Pod.max_limits (per container the limit, or the
request where no limit is set; init containers by max; plus overhead), the same sum
ClusterState.allocated_limits keeps for the node's pods. A BestEffort pod uses `defaultLimits`
for the resources it names and the node's allocatable otherwise (the KEP's two suggestions).
The weighted "sum" of the KEP is a weighted mean, as in LimitAware (same order after
normalization); a resource the node has none of is left out; if every raw score is equal, all
nodes score 0.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from kplan.api.objects import Pod
from kplan.api.resources import parse_resource_list
from kplan.api.quantity import InvalidQuantity
from kplan.cluster.state import ClusterState
from kplan.errors import InputError
from kplan.framework.arith import go_div
from kplan.framework.interfaces import MAX_NODE_SCORE, CycleState, Handle, plugin_args
from kplan.framework.status import Status
from kplan.plugins.limit_aware import min_max_normalize, parse_weights

NAME = "NodeResourcesLimitAware"
PRE_SCORE_KEY = "PreScore" + NAME
BEST_EFFORT = "BestEffort"

# `resources` is the KEP's spelling; `scoringResourceWeights` LimitAware's; `defaultLimits` is
# the configurable default limit the KEP suggests for BestEffort pods.
ARGS = {"resources": None, "scoringResourceWeights": None, "defaultLimits": None}


class NodeResourcesLimitAware:
    """Scores nodes by the share of allocatable the pods' limits would leave (KEP 217)."""

    name = NAME

    def __init__(self, args: Mapping | None = None, handle: Handle | None = None):
        a = plugin_args(args, ARGS, NAME)
        self.handle = handle
        self.weights = parse_weights(a, NAME)
        raw = a["defaultLimits"]
        if raw is not None and not isinstance(raw, Mapping):
            raise InputError(f"{NAME} args: defaultLimits must be a resource list (e.g. {{cpu: 1, memory: 1Gi}})")
        try:
            self.default_limits = parse_resource_list(raw, f"{NAME} args: defaultLimits: ")
        except InvalidQuantity as err:
            raise InputError(str(err)) from None

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState,
                  candidates: np.ndarray) -> Status | None:
        """Computes the pod's limit per scoring resource; None marks "the node's allocatable"."""
        best_effort = pod.qos_class == BEST_EFFORT
        limits = pod.max_limits
        state.write(PRE_SCORE_KEY, {
            name: (self.default_limits.get(name) if best_effort else limits.get(name, 0))
            for name in self.weights})
        return None

    def score(self, state: CycleState, pod: Pod, cluster: ClusterState, candidates: np.ndarray) -> np.ndarray:
        """Weighted mean over the scoring resources of (allocatable - limits) * 100 / allocatable."""
        pod_limits = state.get(PRE_SCORE_KEY)
        if pod_limits is None:
            self.pre_score(state, pod, cluster, candidates)
            pod_limits = state.read(PRE_SCORE_KEY)
        candidates = np.asarray(candidates, dtype=np.intp)
        total = np.zeros(len(candidates), dtype=np.int64)
        weight_sum = np.zeros(len(candidates), dtype=np.int64)
        for name, weight in self.weights.items():
            k = cluster.res_index.get(name)
            if k is None:
                continue
            allocatable = cluster.allocatable[candidates, k]
            pod_limit = pod_limits[name]
            limit = cluster.allocated_limits[candidates, k] + (allocatable if pod_limit is None else pod_limit)
            counted = allocatable > 0
            s = go_div((allocatable - limit) * MAX_NODE_SCORE, np.where(counted, allocatable, 1))
            total += np.where(counted, s * weight, 0)
            weight_sum += np.where(counted, weight, 0)
        return np.where(weight_sum == 0, 0, go_div(total, np.maximum(weight_sum, 1))).astype(np.int64)

    def normalize_score(self, state: CycleState, pod: Pod, scores: np.ndarray) -> np.ndarray:
        """Min-max normalizes the raw scores to 0..100 (all 0 when they are equal)."""
        return min_max_normalize(scores)
