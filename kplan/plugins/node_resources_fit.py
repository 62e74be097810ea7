"""NodeResourcesFit: does the pod fit in what the node has left, and how full would the node be.

Filter follows upstream's fitsRequest (noderesources/fit.go): the pod count, then cpu, memory,
ephemeral-storage, then every scalar resource (extended, hugepages) the pod asks for; every
shortage is a reason, and a node whose whole allocatable is too small for a request is
UnschedulableAndUnresolvable (preemption cannot help there). Score is the configured
scoringStrategy: LeastAllocated (default), MostAllocated or RequestedToCapacityRatio.

Not simulated: extended resources backed by DRA device classes (the DRAExtendedResource
delegation); kplan loads no DeviceClasses, so every extended resource is checked here.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

import numpy as np

from kplan.api.objects import Pod
from kplan.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, format_amount
from kplan.cluster.state import ClusterState
from kplan.errors import InputError
from kplan.framework import versions
from kplan.framework.interfaces import MAX_NODE_SCORE, CycleState, Handle, plugin_args
from kplan.framework.resource_scoring import (
    MAX_CUSTOM_PRIORITY_SCORE, ResourceSpec, broken_linear, is_extended_resource, is_scalar_resource,
    parse_resource_specs, pod_request_list, resource_usage, scaled_utilization, usage_columns, weighted_mean,
)
from kplan.framework.status import Code, NodeStatus, Status

NAME = "NodeResourcesFit"

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

TOO_MANY_PODS = "Too many pods"
PRE_FILTER_KEY = "PreFilter" + NAME
PRE_SCORE_KEY = "PreScore" + NAME

# NodeResourcesFitArgs fields and their v1 defaults (pkg/scheduler/apis/config/v1/defaults.go).
ARGS = {"ignoredResources": None, "ignoredResourceGroups": None, "scoringStrategy": None}
MAX_UTILIZATION = 100

_LABEL_NAME = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                         r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def insufficient_reason(resource: str) -> str:
    """Returns upstream's reason for a resource the node lacks ("Insufficient cpu")."""
    return f"Insufficient {resource}"


def _string_list(value: Any, field: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{NAME} args: {field} must be a list of strings")
    return list(value)


def _parse_shape(raw: Any, where: str) -> tuple[tuple[int, int], ...]:
    """Validates a RequestedToCapacityRatio shape (validateFunctionShape) and scales its scores."""
    if not isinstance(raw, (list, tuple)) or not raw:
        raise InputError(f"{where}: Required value: at least one point must be specified")
    points = []
    for i, point in enumerate(raw):
        if not isinstance(point, Mapping):
            raise InputError(f"{where}[{i}]: must be a mapping with utilization and score")
        unknown = sorted(set(point) - {"utilization", "score"})
        if unknown:
            raise InputError(f"{where}[{i}]: unknown field(s) {', '.join(unknown)}")
        u, s = point.get("utilization", 0), point.get("score", 0)
        for field, v in (("utilization", u), ("score", s)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise InputError(f"{where}[{i}].{field}: must be an integer, got {v!r}")
        points.append((u, s))
    for i in range(1, len(points)):
        if points[i - 1][0] >= points[i][0]:
            raise InputError(f"{where}[{i}].utilization: Invalid value: {points[i][0]}: "
                             "values must be sorted in increasing order")
    for i, (u, s) in enumerate(points):
        if not 0 <= u <= MAX_UTILIZATION:
            raise InputError(f"{where}[{i}].utilization: Invalid value: {u}: not in valid range [0, 100]")
        if not 0 <= s <= MAX_CUSTOM_PRIORITY_SCORE:
            raise InputError(f"{where}[{i}].score: Invalid value: {s}: "
                             f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]")
    # The shape's scores are on 0..MaxCustomPriorityScore; the scheduler's range is 0..MaxNodeScore.
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    return tuple((u, s * scale) for u, s in points)


def _least_allocated(requested: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
    """leastRequestedScore: the free share of each resource on 0..100 (0 when over capacity)."""
    free = np.where(requested > allocatable, 0, allocatable - requested)
    return np.where(requested > allocatable, 0, scaled_utilization(free, allocatable, MAX_NODE_SCORE))


# Allocatable amounts up to this cannot overflow (allocatable - requested) * MaxNodeScore.
_DIRECT_MAX = np.iinfo(np.int64).max // MAX_NODE_SCORE


def _least_allocated_columns(columns: list[tuple[np.ndarray, np.ndarray]], pod_requests: np.ndarray,
                             weights: list[int]) -> np.ndarray | None:
    """leastRequestedScore's weighted mean, resource by resource over usage_columns (every resource
    counts on every node); None where a product could overflow (scaled_utilization's path then)."""
    if any(allocatable.max() > _DIRECT_MAX for allocatable, _ in columns):
        return None
    total = np.zeros(len(columns[0][0]), dtype=np.int64)
    for (allocatable, allocated), request, weight in zip(columns, pod_requests.tolist(), weights):
        total += np.maximum(allocatable - (allocated + request), 0) * MAX_NODE_SCORE // allocatable * weight
    return total // sum(weights)


def _most_allocated(requested: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
    """mostRequestedScore: the used share of each resource on 0..100, capped at capacity."""
    return scaled_utilization(np.minimum(requested, allocatable), allocatable, MAX_NODE_SCORE)


def requested_to_capacity_ratio(shape: tuple[tuple[int, int], ...], requested: np.ndarray,
                                allocatable: np.ndarray, weights: list[int], scored: np.ndarray) -> np.ndarray:
    """Maps each resource's utilization through the (scaled) shape; averages the positive ones, rounded.

    buildRequestedToCapacityRatioScorerFunction: a resource over capacity counts as 100%
    utilized; resources scoring 0 are left out of the weighted mean, which math.Round rounds.
    """
    over = requested > allocatable
    utilization = np.where(over, MAX_UTILIZATION, scaled_utilization(requested, allocatable, MAX_UTILIZATION))
    resource_scores = broken_linear(shape, utilization)
    counted = scored & (resource_scores > 0)
    w = np.where(counted, np.asarray(weights, dtype=np.int64)[None, :], 0)
    total = (np.where(counted, resource_scores, 0) * w).sum(axis=1)
    weight_sum = w.sum(axis=1)
    # Half away from zero, exact in integers for these non-negative values.
    rounded = (2 * total + weight_sum) // np.maximum(2 * weight_sum, 1)
    return np.where(weight_sum == 0, 0, rounded).astype(np.int64)


class NodeResourcesFit:
    """Rejects nodes without room for the pod's requests and scores nodes by how allocated they are."""

    name = NAME

    def __init__(self, args: Mapping | None = None, handle: Handle | None = None):
        a = plugin_args(args, ARGS, NAME)
        self.handle = handle
        self._columns_hit: tuple | None = None  # (request vector, resource count, columns, reasons)
        self.ignored_resources = frozenset(_string_list(a["ignoredResources"], "ignoredResources"))
        for name in sorted(self.ignored_resources):
            if not _LABEL_NAME.match(name):
                raise InputError(f"{NAME} args: ignoredResources: Invalid value: {name!r}: not a qualified name")
        self.ignored_groups = frozenset(_string_list(a["ignoredResourceGroups"], "ignoredResourceGroups"))
        for group in sorted(self.ignored_groups):
            if "/" in group:
                raise InputError(f"{NAME} args: ignoredResourceGroups: Invalid value: {group!r}: "
                                 "resource group name can't contain '/'")
            if not _LABEL_NAME.match(group):
                raise InputError(f"{NAME} args: ignoredResourceGroups: Invalid value: {group!r}: "
                                 "not a qualified name")
        strategy = a["scoringStrategy"]
        if strategy is None:
            strategy = {"type": LEAST_ALLOCATED}
        if not isinstance(strategy, Mapping):
            raise InputError(f"{NAME} args: scoringStrategy must be a mapping")
        unknown = sorted(set(strategy) - {"type", "resources", "requestedToCapacityRatio"})
        if unknown:
            raise InputError(f"{NAME} args: scoringStrategy: unknown field(s) {', '.join(unknown)}")
        self.strategy = strategy.get("type")
        if self.strategy not in STRATEGIES:
            raise InputError(f"{NAME} args: scoringStrategy.type: Unsupported value: {self.strategy!r}: "
                             f"supported values: {', '.join(repr(s) for s in STRATEGIES)}")
        self.resources: tuple[ResourceSpec, ...] = parse_resource_specs(
            strategy.get("resources"), f"{NAME} args: scoringStrategy.resources")
        self.shape: tuple[tuple[int, int], ...] = ()
        rtcr = strategy.get("requestedToCapacityRatio")
        if rtcr is not None:
            if not isinstance(rtcr, Mapping) or set(rtcr) - {"shape"}:
                raise InputError(f"{NAME} args: scoringStrategy.requestedToCapacityRatio must be {{shape: [...]}}")
            self.shape = _parse_shape(rtcr.get("shape"), f"{NAME} args: scoringStrategy.shape")
        elif self.strategy == REQUESTED_TO_CAPACITY_RATIO:
            raise InputError(f"{NAME} args: scoringStrategy.requestedToCapacityRatio.shape is required "
                             f"for {REQUESTED_TO_CAPACITY_RATIO}")

    # -- filter -------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> Status | None:
        """Computes the pod's request vector once for Filter (preFilterState)."""
        state.write(PRE_FILTER_KEY, cluster.vector(pod.requests))
        return None

    def _checked(self, name: str) -> bool:
        """Tells whether Filter checks a requested resource (not an ignored extended resource)."""
        if is_extended_resource(name):
            return name not in self.ignored_resources and name.split("/", 1)[0] not in self.ignored_groups
        return True

    def _checked_columns(self, request: np.ndarray, resources: list[str]) -> tuple[list[int], list[str]]:
        """Returns the resource columns Filter compares (requested and not ignored) and the reasons
        (too many pods first); kept for the last request vector, which replicas and a preemption's
        repeated checks share (the table caches it, read-only)."""
        hit = self._columns_hit
        if hit is not None and hit[0] is request and hit[1] == len(resources):
            return hit[2], hit[3]
        columns = [k for k, name in enumerate(resources)
                   if request[k] > 0 and (name in (CPU, MEMORY, EPHEMERAL_STORAGE)
                                          or (is_scalar_resource(name) and self._checked(name)))]
        reasons = [TOO_MANY_PODS] + [insufficient_reason(resources[k]) for k in columns]
        self._columns_hit = (request, len(resources), columns, reasons)
        return columns, reasons

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> NodeStatus:
        """Rejects every node short of a requested resource or of room for one more pod."""
        request = state.read(PRE_FILTER_KEY)
        if len(request) < len(cluster.resources):
            request = np.pad(request, (0, len(cluster.resources) - len(request)))
        n = cluster.n
        columns, reasons = self._checked_columns(request, cluster.resources)
        # Free amounts of the compared resources only, column by column (1-D arrays are cheap).
        free = {k: cluster.allocatable[:, k] - cluster.requested[:, k] for k in columns}
        short = np.zeros((n, len(reasons)), dtype=bool)
        short[:, 0] = cluster.pod_count + 1 > cluster.allowed_pods
        unresolvable = np.zeros(n, dtype=bool)
        for j, k in enumerate(columns, start=1):
            short[:, j] = request[k] > free[k]
            unresolvable |= short[:, j] & (request[k] > cluster.allocatable[:, k])
        if not versions.has(self.handle.kube_version if self.handle else None, versions.FIT_UNRESOLVABLE):
            unresolvable[:] = False
        codes = np.where(unresolvable, np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), np.int8(Code.UNSCHEDULABLE))
        names = cluster.resources  # new columns are only ever appended: k keeps naming the same one
        # The numbers as they are now: `free` holds new arrays, the pod counts change in place.
        allocatable, pod_count, allowed = cluster.allocatable, cluster.pod_count.copy(), cluster.allowed_pods

        def explain(i: int) -> list[str]:
            lines = []
            if short[i, 0]:
                lines.append(f"pods: requested 1, used {int(pod_count[i])}, allocatable {int(allowed[i])}")
            for j, k in enumerate(columns, start=1):
                if not short[i, j]:
                    continue
                name = names[k]
                used = allocatable[i, k] - free[k][i]
                line = (f"{name}: requested {format_amount(name, request[k])}, used {format_amount(name, used)}, "
                        f"allocatable {format_amount(name, allocatable[i, k])}")
                if request[k] > allocatable[i, k]:
                    line += " (more than the node's whole allocatable)"
                lines.append(line)
            return lines

        return NodeStatus.from_reasons(short, reasons, codes, explain)

    # -- score --------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState,
                  candidates: np.ndarray) -> Status | None:
        """Computes the pod's (non-zero) request for each scoring resource (preScoreState)."""
        state.write(PRE_SCORE_KEY, pod_request_list(pod, self.resources, use_requested=False))
        return None

    def score(self, state: CycleState, pod: Pod, cluster: ClusterState, candidates: np.ndarray) -> np.ndarray:
        """Scores each candidate with the configured strategy over the scoring resources."""
        pod_requests = state.get(PRE_SCORE_KEY)
        if pod_requests is None:
            pod_requests = pod_request_list(pod, self.resources, use_requested=False)
        weights = [s.weight for s in self.resources]
        if self.strategy == LEAST_ALLOCATED:
            columns = usage_columns(cluster, candidates, self.resources, use_requested=False)
            scores = _least_allocated_columns(columns, pod_requests, weights) if columns is not None else None
            if scores is not None:
                return scores
        usage = resource_usage(cluster, candidates, self.resources, pod_requests, use_requested=False)
        scored = usage.scored
        if self.strategy == LEAST_ALLOCATED:
            return weighted_mean(_least_allocated(usage.requested, usage.allocatable), weights, scored)
        if self.strategy == MOST_ALLOCATED:
            return weighted_mean(_most_allocated(usage.requested, usage.allocatable), weights, scored)
        return requested_to_capacity_ratio(self.shape, usage.requested, usage.allocatable, weights, scored)
