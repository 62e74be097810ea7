"""NodeResourcesBalancedAllocation: favors nodes whose resources stay evenly used.

A node's balance is 100 * (1 - std) of the requested/allocatable fractions of the scoring
resources (each capped at 1; the std of two fractions is half their difference). Since
Kubernetes v1.36 (kubernetes PR #135573) the plugin scores the *change* of that balance the pod
causes: 50 + (50 + balance_with_pod - balance_without_pod) / 2, so no change scores 75 and the
range is 50..100. Up to v1.35 it scored the balance with the pod placed. Pods that request none
of the scoring resources are skipped in PreScore (since v1.33, kubernetes PR #130260).
"""
from __future__ import annotations

import math

from typing import Mapping, NamedTuple

import numpy as np

from kplan.api.objects import Pod
from kplan.cluster.state import ClusterState
from kplan.errors import InputError
from kplan.framework import versions
from kplan.framework.arith import go_div
from kplan.framework.interfaces import MAX_NODE_SCORE, CycleState, Handle, plugin_args
from kplan.framework.resource_scoring import (
    ResourceSpec, parse_resource_specs, pod_request_list, resource_usage, usage_columns,
)
from kplan.framework.status import Status

NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_KEY = "PreScore" + NAME

# NodeResourcesBalancedAllocationArgs; an empty list defaults to cpu and memory, weight 1.
ARGS = {"resources": None}


class Semantics(NamedTuple):
    """What the plugin does in a given Kubernetes release."""

    score_balance_change: bool  # score the change of balance, not the balance after placement
    skip_best_effort: bool  # PreScore skips pods that request none of the resources


def semantics(kube_version: versions.Version | None) -> Semantics:
    """Returns the plugin's behaviour for a release (None = the newest)."""
    return Semantics(versions.has(kube_version, versions.BALANCE_CHANGE),
                     versions.has(kube_version, versions.BALANCED_SKIPS_BEST_EFFORT))


def _balance_row(requested: list[int], allocatable: list[int]) -> int:
    """balance_scores for one row, with the same float64 operations in the same order."""
    fractions = [min(float(q) / float(a), 1.0) for q, a in zip(requested, allocatable) if a != 0]
    count = len(fractions)
    total = 0.0
    for f in fractions:
        total = total + f
    mean = total / float(max(count, 1))
    squares = 0.0
    for f in fractions:
        d = f - mean
        squares = squares + d * d
    if count == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif count > 2:
        std = math.sqrt(squares / float(count))
    else:
        std = 0.0
    return int(math.trunc((1.0 - std) * float(MAX_NODE_SCORE)))


def balance_scores(requested: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
    """Returns int64((1 - std) * MaxNodeScore) per row over the resources with allocatable > 0.

    Mirrors upstream's float64 arithmetic step by step (accumulating in resource order) so the
    truncated scores match bit for bit: fractions capped at 1; with two fractions the std is
    |f0 - f1| / 2, with more the population std, with fewer 0.
    """
    requested = np.asarray(requested, dtype=np.int64)
    allocatable = np.asarray(allocatable, dtype=np.int64)
    rows, k = allocatable.shape
    if rows == 1:  # one row (a placement's update): the same float64 steps on Python floats
        return np.array([_balance_row(requested[0].tolist(), allocatable[0].tolist())], dtype=np.int64)
    valid = allocatable != 0
    fractions = np.where(valid, requested.astype(np.float64) / np.where(valid, allocatable, 1).astype(np.float64),
                         0.0)
    fractions = np.minimum(fractions, 1.0)
    if k == 2 and valid.all():  # the default cpu and memory on every node: the two-fraction case alone
        return _two_fraction_score(fractions[:, 0], fractions[:, 1])
    count = valid.sum(axis=1)
    total = np.zeros(rows, dtype=np.float64)
    first = np.zeros(rows, dtype=np.float64)
    second = np.zeros(rows, dtype=np.float64)
    seen = np.zeros(rows, dtype=np.int64)
    for j in range(k):
        v = valid[:, j]
        total = np.where(v, total + fractions[:, j], total)
        first = np.where(v & (seen == 0), fractions[:, j], first)
        second = np.where(v & (seen == 1), fractions[:, j], second)
        seen += v
    mean = total / np.maximum(count, 1).astype(np.float64)
    squares = np.zeros(rows, dtype=np.float64)
    for j in range(k):
        d = fractions[:, j] - mean
        squares = np.where(valid[:, j], squares + d * d, squares)
    std = np.where(count == 2, np.abs((first - second) / 2),
                   np.where(count > 2, np.sqrt(squares / np.maximum(count, 1).astype(np.float64)), 0.0))
    return np.trunc((1.0 - std) * float(MAX_NODE_SCORE)).astype(np.int64)


def _two_fraction_scores(columns: list[tuple[np.ndarray, np.ndarray]], amounts: list[np.ndarray]) -> np.ndarray:
    """balance_scores' two-fraction case over two resources' 1-D columns (usage_columns): the same
    float64 steps, without building a (C, 2) matrix."""
    (a0, _), (a1, _) = columns
    return _two_fraction_score(np.minimum(amounts[0].astype(np.float64) / a0.astype(np.float64), 1.0),
                               np.minimum(amounts[1].astype(np.float64) / a1.astype(np.float64), 1.0))


def _two_fraction_score(f0: np.ndarray, f1: np.ndarray) -> np.ndarray:
    """int64((1 - std) * MaxNodeScore) where the std of two fractions is |f0 - f1| / 2."""
    return np.trunc((1.0 - np.abs((f0 - f1) / 2)) * float(MAX_NODE_SCORE)).astype(np.int64)


def balance_change_scores(requested: np.ndarray, allocated: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
    """Scores the change of balance (v1.36+): MaxNodeScore/2 + (MaxNodeScore/2 + with - without) / 2."""
    return _balance_change(balance_scores(requested, allocatable), balance_scores(allocated, allocatable))


def _balance_change(with_pod: np.ndarray, without_pod: np.ndarray) -> np.ndarray:
    half = MAX_NODE_SCORE // 2
    return (half + go_div(half + with_pod - without_pod, 2)).astype(np.int64)


class NodeResourcesBalancedAllocation:
    """Scores nodes by how evenly the pod leaves (or, before v1.36, makes) their resources used."""

    name = NAME

    def __init__(self, args: Mapping | None = None, handle: Handle | None = None, *,
                 kube_version: versions.Version | None = None):
        a = plugin_args(args, ARGS, NAME)
        self.handle = handle
        self.resources: tuple[ResourceSpec, ...] = parse_resource_specs(
            a["resources"], f"{NAME} args: resources", weight_must_be_one=True)
        names = [s.name for s in self.resources]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise InputError(f"{NAME} args: resources: Duplicate value: {', '.join(map(repr, duplicates))}")
        version = kube_version if kube_version is not None else (handle.kube_version if handle else None)
        self.semantics = semantics(version)

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState,
                  candidates: np.ndarray) -> Status | None:
        """Computes the pod's requests; skips the plugin for pods that request none of the resources."""
        requests = pod_request_list(pod, self.resources, use_requested=True)
        if self.semantics.skip_best_effort and not requests.any():
            return Status.skip()
        state.write(PRE_SCORE_KEY, requests)
        return None

    def score(self, state: CycleState, pod: Pod, cluster: ClusterState, candidates: np.ndarray) -> np.ndarray:
        """Scores each candidate's balance (change) over the scoring resources."""
        requests = state.get(PRE_SCORE_KEY)
        if requests is None:
            requests = pod_request_list(pod, self.resources, use_requested=True)
            if self.semantics.skip_best_effort and not requests.any():
                return np.zeros(len(candidates), dtype=np.int64)
        columns = usage_columns(cluster, candidates, self.resources, use_requested=True)
        if columns is not None and len(columns) == 2:
            with_pod = _two_fraction_scores(columns, [allocated + r for (_, allocated), r in
                                                      zip(columns, requests.tolist())])
            if not self.semantics.score_balance_change:
                return with_pod
            without_pod = _two_fraction_scores(columns, [allocated for _, allocated in columns])
            return _balance_change(with_pod, without_pod)
        usage = resource_usage(cluster, candidates, self.resources, requests, use_requested=True)
        if self.semantics.score_balance_change:
            return balance_change_scores(usage.requested, usage.allocated, usage.allocatable)
        return balance_scores(usage.requested, usage.allocatable)
