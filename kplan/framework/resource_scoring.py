"""Helpers shared by the resource scoring plugins (NodeResourcesFit's strategies, BalancedAllocation).

They mirror upstream's resourceAllocationScorer (noderesources/resource_allocation.go): which
resources take part in a node's score, what counts as the node's allocated amount, and the
integer arithmetic of the scorers, all vectorized over the scored candidates.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from kplan.api.objects import Pod
from kplan.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY
from kplan.cluster.state import NON_ZERO_RESOURCES, ClusterState
from kplan.errors import InputError
from kplan.framework.arith import go_div

# config.MaxCustomPriorityScore: the top of a RequestedToCapacityRatio (and VolumeBinding) shape.
MAX_CUSTOM_PRIORITY_SCORE = 10
# Upstream's weight bounds for a scoring resource (validateResources).
MAX_RESOURCE_WEIGHT = 100

DEFAULT_RESOURCES: tuple[dict[str, Any], ...] = ({"name": CPU, "weight": 1}, {"name": MEMORY, "weight": 1})


def is_extended_resource(name: str) -> bool:
    """Tells an extended resource (domain-qualified, outside kubernetes.io) (v1helper.IsExtendedResourceName)."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def is_scalar_resource(name: str) -> bool:
    """Tells the resources the scheduler counts beyond cpu, memory and ephemeral-storage.

    schedutil.IsScalarResourceName: extended, hugepages-*, kubernetes.io/-prefixed and
    attachable-volumes-* resources; any other name is not counted at all.
    """
    return (is_extended_resource(name) or name.startswith("hugepages-") or "kubernetes.io/" in name
            or name.startswith("attachable-volumes-"))


@dataclass(frozen=True)
class ResourceSpec:
    """A scoring resource and its weight (config.ResourceSpec)."""

    name: str
    weight: int


def parse_resource_specs(raw: Any, where: str, *, weight_must_be_one: bool = False) -> tuple[ResourceSpec, ...]:
    """Parses a `resources` list as the v1 API defaults and validates it.

    An empty or missing list becomes cpu and memory with weight 1; a missing or zero weight
    becomes 1 (SetDefaults). Weights must then be in (0, 100], or exactly 1 where upstream
    demands it (BalancedAllocation), and names must be strings.
    """
    if raw is None or raw == []:
        raw = DEFAULT_RESOURCES
    if not isinstance(raw, (list, tuple)):
        raise InputError(f"{where}: must be a list of {{name, weight}}")
    specs = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise InputError(f"{where}[{i}]: must be a mapping with name and weight")
        unknown = sorted(set(item) - {"name", "weight"})
        if unknown:
            raise InputError(f"{where}[{i}]: unknown field(s) {', '.join(unknown)}")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise InputError(f"{where}[{i}].name: must be a non-empty string")
        weight = item.get("weight") or 0
        if isinstance(weight, bool) or not isinstance(weight, int):
            raise InputError(f"{where}[{i}].weight: must be an integer, got {weight!r}")
        if weight == 0:
            weight = 1
        if weight_must_be_one and weight != 1:
            raise InputError(f"{where}[{i}].weight: Invalid value: {weight}: must be 1")
        if not 0 < weight <= MAX_RESOURCE_WEIGHT:
            raise InputError(f"{where}[{i}].weight: Invalid value: {weight}: "
                             f"resource weight of {name} not in valid range (0, {MAX_RESOURCE_WEIGHT}]")
        specs.append(ResourceSpec(name, weight))
    return tuple(specs)


def pod_request_list(pod: Pod, specs: Sequence[ResourceSpec], *, use_requested: bool) -> np.ndarray:
    """Returns the pod's request for each scoring resource (calculatePodResourceRequestList).

    Without `use_requested`, containers that request no cpu or memory count the scheduler's
    defaults (100m, 200Mi), as NodeResourcesFit scores; BalancedAllocation uses the requests as is.
    """
    requests = pod.requests if use_requested else pod.non_zero_requests
    return np.array([requests.get(s.name, 0) for s in specs], dtype=np.int64)


@dataclass
class ResourceUsage:
    """The per-candidate numbers a resource scorer works on, shape (C, K) for K scoring resources.

    Where a resource takes no part in a node's score (the node has none of it, or it is an
    extended resource the pod does not request), all three are 0, as upstream leaves them.
    """

    allocatable: np.ndarray
    allocated: np.ndarray  # what the node's pods hold before this pod
    requested: np.ndarray  # allocated plus the pod's request

    @property
    def scored(self) -> np.ndarray:
        """(C, K) mask of the resources that take part in each candidate's score."""
        return self.allocatable != 0


def resource_usage(cluster: ClusterState, candidates: np.ndarray, specs: Sequence[ResourceSpec],
                   pod_requests: np.ndarray, *, use_requested: bool) -> ResourceUsage:
    """Returns allocatable, allocated and requested per candidate and scoring resource.

    Mirrors calculateResourceAllocatableRequest: cpu and memory use the node's non-zero
    requested amounts unless `use_requested`; ephemeral-storage and scalar resources always
    use the real requests; a scalar resource the pod does not request, or the node does not
    have, is left out of the score.
    """
    candidates = np.asarray(candidates, dtype=np.intp)
    c, k = len(candidates), len(specs)
    allocatable = np.zeros((c, k), dtype=np.int64)
    allocated = np.zeros((c, k), dtype=np.int64)
    for j, spec in enumerate(specs):
        name = spec.name
        col = cluster.res_index.get(name)
        if col is None:
            continue
        if name not in (CPU, MEMORY, EPHEMERAL_STORAGE) and (not is_scalar_resource(name) or pod_requests[j] == 0):
            continue
        allocatable[:, j] = cluster.allocatable[candidates, col]
        allocated[:, j] = _allocated(cluster, candidates, name, col, use_requested)
    scored = allocatable != 0
    allocated = np.where(scored, allocated, 0)
    requested = np.where(scored, allocated + pod_requests[None, :], 0)
    return ResourceUsage(allocatable, allocated, requested)


def usage_columns(cluster: ClusterState, candidates: np.ndarray, specs: Sequence[ResourceSpec],
                  *, use_requested: bool) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """resource_usage's allocatable and allocated amounts, one pair of 1-D arrays per scoring resource,
    when every resource is cpu, memory or ephemeral-storage and every candidate has some of each (all
    take part in every score); None otherwise. numpy works several times faster over such arrays than
    over the columns of a (C, K) matrix, and a cycle scores every feasible node."""
    candidates = np.asarray(candidates, dtype=np.intp)
    if not len(candidates):
        return None
    out = []
    for spec in specs:
        col = cluster.res_index.get(spec.name)
        if col is None or spec.name not in (CPU, MEMORY, EPHEMERAL_STORAGE):
            return None
        allocatable = cluster.allocatable[candidates, col]
        if allocatable.min() <= 0:
            return None
        out.append((allocatable, _allocated(cluster, candidates, spec.name, col, use_requested)))
    return out


def _allocated(cluster: ClusterState, candidates: np.ndarray, name: str, col: int, use_requested: bool) -> np.ndarray:
    """What the candidates' pods hold of a resource as the scorers count it: cpu and memory with the
    non-zero defaults unless `use_requested`, anything else as requested."""
    if name in NON_ZERO_RESOURCES and not use_requested:
        return cluster.non_zero_requested[candidates, NON_ZERO_RESOURCES.index(name)]
    return cluster.requested[candidates, col]


SMALL = 8  # arrays up to this size take the scalar path


def scaled_utilization(requested: np.ndarray, capacity: np.ndarray, top: int) -> np.ndarray:
    """Returns requested * top / capacity truncated, exact for any int64 inputs.

    As upstream's scaledUtilization: 0 where capacity or requested is not positive, `top`
    where requested reaches capacity; in between the quotient is computed by binary long
    division in uint64 (the remainder stays below capacity), so no product can overflow.
    """
    req = np.asarray(requested, dtype=np.int64)
    cap = np.asarray(capacity, dtype=np.int64)
    req, cap = np.broadcast_arrays(req, cap)
    if req.size <= SMALL:  # one row (a placement's update): exact integer arithmetic, no numpy loop
        flat = [top if c > 0 and q >= c else (q * top // c if c > 0 and q > 0 else 0)
                for q, c in zip(req.ravel().tolist(), cap.ravel().tolist())]
        return np.array(flat, dtype=np.int64).reshape(req.shape)
    inside = (cap > 0) & (req > 0) & (req < cap)
    if not req.size or int(req.max()) <= np.iinfo(np.int64).max // max(top, 1):
        # No product can overflow (any real node: 92 PB of memory would be needed): divide directly.
        quotient = np.where(inside, req, 0) * np.int64(top) // np.where(inside, cap, 1)
        return np.where((cap > 0) & (req >= cap), np.int64(top), quotient).astype(np.int64)
    r = np.where(inside, req, 0).astype(np.uint64)
    d = np.where(inside, cap, 1).astype(np.uint64)
    quotient = np.zeros(r.shape, dtype=np.int64)
    remainder = np.zeros(r.shape, dtype=np.uint64)
    for bit in bin(top)[2:]:
        quotient *= 2
        remainder *= np.uint64(2)
        over = remainder >= d
        quotient += over
        remainder = np.where(over, remainder - d, remainder)
        if bit == "1":
            remainder += r
            over = remainder >= d
            quotient += over
            remainder = np.where(over, remainder - d, remainder)
    out = np.where(inside, quotient, 0)
    return np.where((cap > 0) & (req >= cap), np.int64(top), out).astype(np.int64)


def weighted_mean(scores: np.ndarray, weights: Sequence[int], counted: np.ndarray) -> np.ndarray:
    """Returns sum(score*weight)/sum(weight) over the counted resources, Go-truncated; 0 if none."""
    weight_vector = np.asarray(weights, dtype=np.int64)
    if counted.all() and (weight_vector >= 0).all() and weight_vector.sum() > 0 and (scores >= 0).all():
        # Every resource counts on every node (the common case): one product, one division.
        return (scores.astype(np.int64) @ weight_vector) // int(weight_vector.sum())
    w = np.where(counted, weight_vector[None, :], 0)
    total = (np.where(counted, scores, 0) * w).sum(axis=1)
    weight_sum = w.sum(axis=1)
    return np.where(weight_sum == 0, 0, go_div(total, np.maximum(weight_sum, 1))).astype(np.int64)


def broken_linear(shape: Sequence[tuple[int, int]], p: np.ndarray) -> np.ndarray:
    """Evaluates helper.BuildBrokenLinearFunction's piecewise-linear function at p.

    `shape` is (utilization, score) points with increasing utilization: the first score below
    the first point, the last above the last, linear (Go-truncated) in between.
    """
    p = np.asarray(p, dtype=np.int64)
    out = np.full(p.shape, np.int64(shape[-1][1]))
    for i in range(len(shape) - 1, -1, -1):
        u, s = shape[i]
        if i == 0:
            value = np.full(p.shape, np.int64(s))
        else:
            u0, s0 = shape[i - 1]
            value = s0 + go_div((s - s0) * (p - u0), u - u0)
        out = np.where(p <= u, value, out)
    return out.astype(np.int64)
