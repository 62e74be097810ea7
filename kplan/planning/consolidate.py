"""`kplan consolidate`: which nodes could go, one after another, and what stops the others.

The plan follows cluster-autoscaler's scale-down (release 1.34):

- Candidates (core/scaledown/eligibility): nodes whose requested cpu and memory are both under
  the threshold of allocatable (utilization.Calculate: the higher of the two ratios, pods deleted
  longer ago than their grace period not counted; a node without cpu or memory allocatable counts
  0, as the autoscaler's failed calculation leaves it). A node offering nvidia.com/gpu is a GPU
  node (utils/gpu NodeHasGpu): its utilization is its GPUs' alone, against the GPU threshold
  (--scale-down-gpu-utilization-threshold). Candidates are visited least utilized first (ties by
  name).
  A candidate annotated `cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"`, or
  Karpenter's `karpenter.sh/do-not-disrupt: "true"`, is blocked as it is.
- Each candidate's pods go through the drainability rules (kplan.planning.drainability); every
  pod a rule blocks is named, and such a node is not simulated further.
- Otherwise the node is drained as simulator/cluster.go's findPlaceFor does it since the autoscaler
  kept a tainted ghost of the node (kubernetes/autoscaler#9288, in the 1.34 patch releases): the
  node stays in the table with the ToBeDeletedByClusterAutoscaler:NoSchedule taint and without its
  pods, which are placed elsewhere with the full scheduling cycle, first and in priority order, by
  the planner `--drain` uses. If one fits nowhere the node is blocked (NoPlaceToMovePods: its
  FailedScheduling message, the nearest nodes and the hints, over the nodes that stay; the pods
  after it are not tried, as TrySchedulePods breaks on the first failure) and the table is put back
  as it was. If all fit they stay where they went, and the node leaves the table
  with its DaemonSet and static pods: later candidates cannot use it, and a pod moved onto a later
  candidate has to move again (never counted twice).
- PodDisruptionBudgets are counted over the whole plan (core/scaledown/pdb's RemainingPdbTracker):
  each moved pod takes one disruption from every budget that selects it, so two nodes holding one
  pod each of a budget that allows one disruption cannot both go.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from kplan.api.objects import Pod, Taint
from kplan.api.resources import CPU, MEMORY
from kplan.api.selector_syntax import selector_mask
from kplan.cluster.pod_index import PodIndex
from kplan.cluster.state import ClusterState
from kplan.framework.runtime import Framework
from kplan.planning.check import NO_ZONE, ZONE_LABEL
from kplan.planning.disruption_budgets import Budgets
from kplan.planning.drainability import (
    AUTOSCALER, BLOCKED, DO_NOT_DISRUPT, MOVE, Verdict, drainability, is_long_terminating,
)
from kplan.planning.node_changes import ChangeReport, eviction_order, replace_evicted, unbound
from kplan.planning.pending import nearest_and_hints
from kplan.planning.place import as_release_sees
from kplan.plugins.registry import REGISTRY
from kplan.sources.snapshot import bulk_allocation

DEFAULT_THRESHOLD = 0.5  # --scale-down-utilization-threshold
DEFAULT_GPU_THRESHOLD = 0.5  # --scale-down-gpu-utilization-threshold
GPU = "nvidia.com/gpu"  # gpu.ResourceNvidiaGPU
SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
TO_BE_DELETED = Taint("ToBeDeletedByClusterAutoscaler", "", "NoSchedule")
# Node pool labels of the managed offerings and of Karpenter, tried in this order when none is given.
POOL_LABELS = ("karpenter.sh/nodepool", "cloud.google.com/gke-nodepool", "eks.amazonaws.com/nodegroup",
               "kubernetes.azure.com/agentpool")
NO_POOL = "<none>"
RESOURCES = (CPU, MEMORY)
ELIGIBILITY = f"{AUTOSCALER} core/scaledown/eligibility"
FIND_PLACE = f"{AUTOSCALER} simulator/cluster.go (findPlaceFor)"


@dataclass
class Options:
    threshold: float = DEFAULT_THRESHOLD
    gpu_threshold: float = DEFAULT_GPU_THRESHOLD
    max_nodes: int | None = None  # stop once this many nodes can go
    selector: str | None = None  # only nodes matching this -l selector are candidates
    pool_label: str | None = None
    now: datetime | None = None


@dataclass(frozen=True)
class Blocker:
    """What keeps a node: the pod (None for the node itself), the rule that blocks it with its reason,
    message and source, and the budget it would exceed (PodDisruptionBudget rule); for a pod that fits
    nowhere, the nearest nodes, the hints and how many pods after it were not tried."""

    pod: str | None
    rule: str
    reason: str
    message: str
    source: str
    pdb: str | None = None
    nearest: list | None = None
    hints: list[str] | None = None
    pods_not_tried: int | None = None


@dataclass(frozen=True)
class Move:
    """A pod of a removable node and the node it went to; `again` when an earlier step had moved it there."""

    pod: str
    to: str
    again: bool


@dataclass(frozen=True)
class Leaving:
    """A pod that goes with its node (a DaemonSet or static pod) and the rule that says so."""

    pod: str
    rule: str


@dataclass
class Step:
    """One candidate visited: removable (with where its pods went) or blocked (with its blockers). Its
    utilization is unrounded: the report rounds it."""

    node: str
    utilization: dict[str, float]
    zone: str
    pool: str
    allocatable: dict[str, int]
    moves: list[Move] = field(default_factory=list)
    leaving: list[Leaving] = field(default_factory=list)
    blockers: list[Blocker] = field(default_factory=list)
    in_sequence: list[str] = field(default_factory=list)  # budgets its evictions exceed at once

    @property
    def removable(self) -> bool:
        return not self.blockers


def utilization(cluster: ClusterState, now: datetime) -> dict[str, np.ndarray]:
    """Per resource (cpu, memory, and nvidia.com/gpu where nodes offer it), requests over allocatable
    per node (utilization.Calculate); 0 where the node has none of it."""
    requested = cluster.requested.copy()
    index = PodIndex.of(cluster)
    for slot in np.flatnonzero(index.terminating[:index.size] & index.alive[:index.size]).tolist():
        pod = index.pods[slot]
        if is_long_terminating(pod, now):
            requested[index.node[slot]] -= cluster.vector(pod.requests)
    out = {}
    for r in (*RESOURCES, GPU):
        k = cluster.res_index.get(r)
        if k is None:
            continue
        alloc = cluster.allocatable[:, k].astype(np.float64)
        out[r] = np.divide(requested[:, k], alloc, out=np.zeros(cluster.n), where=alloc > 0)
    missing = np.zeros(cluster.n, dtype=bool)
    for r in RESOURCES:
        missing |= cluster.allocatable[:, cluster.res_index[r]] <= 0
    for r in RESOURCES:
        out[r][missing] = 0.0  # Calculate fails on the node: the autoscaler goes on with utilization 0
    return out


def gpu_nodes(cluster: ClusterState) -> np.ndarray:
    """(N,) the nodes offering nvidia.com/gpu (NodeHasGpu, without a cloud provider's GPU label)."""
    k = cluster.res_index.get(GPU)
    return cluster.allocatable[:, k] > 0 if k is not None else np.zeros(cluster.n, dtype=bool)


def pool_label(cluster: ClusterState, given: str | None) -> str | None:
    """The label naming node pools: the one given, else the first well-known one a node carries."""
    if given:
        return given
    return next((key for key in POOL_LABELS if cluster.label_column(key).present.any()), None)


def _label(node, key: str | None, missing: str) -> str:
    return node.labels.get(key, missing) if key else missing


def _node_blocker(node) -> Blocker | None:
    """A blocker on the node itself: the autoscaler's scale-down-disabled or Karpenter's do-not-disrupt."""
    if node.annotations.get(SCALE_DOWN_DISABLED) == "true":
        return Blocker(None, "ScaleDownDisabled", "ScaleDownDisabledAnnotation",
                       f"the node is annotated {SCALE_DOWN_DISABLED}: \"true\"", ELIGIBILITY)
    if node.annotations.get(DO_NOT_DISRUPT) == "true":
        return Blocker(None, "DoNotDisrupt", "DoNotDisrupt",
                       f"disruption is blocked through the \"{DO_NOT_DISRUPT}\" annotation",
                       f"Karpenter: {DO_NOT_DISRUPT} on a node blocks its consolidation")
    return None


def _rule_blocker(pod: Pod, verdict: Verdict) -> Blocker:
    return Blocker(pod.key, verdict.rule, verdict.reason, verdict.message, verdict.source,
                   verdict.budget.key if verdict.budget is not None else None)


class Consolidation:
    """The plan's state: the planner (its table loses the nodes that go), the budgets left, the steps."""

    def __init__(self, planner, options: Options):
        self.planner = planner
        self.options = options
        self.now = options.now or planner.handle.now
        self.budgets = Budgets.of(planner.snapshot)
        self.pool_label = pool_label(planner.cluster, options.pool_label)
        self.steps: list[Step] = []
        self.moved: set[str] = set()  # pods moved so far, by key
        self.counts: dict[str, int] = {}
        self.before: dict[str, float | None] = {}  # cluster_ratios before the plan

    def run(self) -> None:
        """Visits the candidates in order until --max-nodes of them can go."""
        candidates = self.candidates()
        for name, used in candidates:
            if self.options.max_nodes is not None and sum(s.removable for s in self.steps) >= self.options.max_nodes:
                break
            self.steps.append(self.visit(name, used))
        self.counts["notVisited"] = len(candidates) - len(self.steps)

    def candidates(self) -> list[tuple[str, dict[str, float]]]:
        """The nodes under the threshold (of the -l selector), least utilized first, with their utilization."""
        cluster = self.planner.cluster
        used = utilization(cluster, self.now)
        gpu = gpu_nodes(cluster)
        highest = np.where(gpu, used.get(GPU, 0.0), np.maximum(used[CPU], used[MEMORY]))
        threshold = np.where(gpu, self.options.gpu_threshold, self.options.threshold)
        selected = selector_mask(self.options.selector, cluster)
        rows = np.flatnonzero(selected & (highest < threshold)).tolist()
        rows.sort(key=lambda i: (highest[i], cluster.names[i]))
        self.counts.update(nodes=cluster.n, selected=int(selected.sum()), candidates=len(rows))
        return [(cluster.names[i], {r: float(used[r][i]) for r in (*RESOURCES, GPU)
                                    if r in used and (r != GPU or gpu[i])}) for i in rows]

    def visit(self, name: str, used: dict[str, float]) -> Step:
        cluster = self.planner.cluster
        i = cluster.index[name]
        node = cluster.nodes[i]
        step = Step(name, used, _label(node, ZONE_LABEL, NO_ZONE), _label(node, self.pool_label, NO_POOL),
                    {r: int(cluster.allocatable[i, cluster.res_index[r]]) for r in RESOURCES})
        blocker = _node_blocker(node)
        if blocker is not None:
            step.blockers.append(blocker)
            return step
        movable: list[Pod] = []
        for pod in cluster.pods_by_node[i]:
            verdict = drainability(pod, self.budgets, self.now)
            if verdict.outcome == BLOCKED:
                step.blockers.append(_rule_blocker(pod, verdict))
            elif verdict.outcome == MOVE:
                movable.append(pod)
            else:
                step.leaving.append(Leaving(pod.key, verdict.rule))
        if not step.blockers:
            self._drain(step, i, movable)
        return step

    def _drain(self, step: Step, i: int, movable: list[Pod]) -> None:
        """Moves the node's pods elsewhere with the node tainted; keeps the moves, or puts the table back."""
        cluster = self.planner.cluster
        taints = cluster.taint_sets[int(cluster.taint_set_ids[i])]
        cluster.set_taints(i, (*taints, TO_BE_DELETED))
        for pod in movable:
            cluster.forget(pod, i)
        self.planner.restart()
        evictions = ChangeReport(drained=[step.node])
        for pod in eviction_order(movable):
            copy = unbound(pod)
            evictions.evicted.append(copy)
            evictions.evicted_from[copy.key] = step.node
        replace_evicted(self.planner, evictions, stop_at_failure=True)
        for k, pod in enumerate(evictions.evicted):
            if pod.key in evictions.unplaced:
                step.blockers.append(self._fits_nowhere(pod, evictions.unplaced[pod.key], i,
                                                        len(evictions.evicted) - k - 1))
        if step.blockers:
            self._undo(evictions, i, movable, taints)
            return
        step.moves = [Move(key, node, key in self.moved) for key, node in evictions.replaced.items()]
        self.moved.update(evictions.replaced)
        step.in_sequence = self._in_sequence(movable)
        self.budgets.spend(movable)
        self.planner.remove_nodes([step.node])

    def _fits_nowhere(self, pod: Pod, message: str, i: int, not_tried: int) -> Blocker:
        """A pod no other node takes: its FailedScheduling message, and the nearest nodes (NearNodes) and
        hints over the nodes that stay (the candidate left out), read with a framework of their own;
        `not_tried`: the pods after it, which the drain did not try."""
        planner = self.planner
        seen = as_release_sees(pod, planner.handle.kube_version)
        view = planner.cluster.without([i])
        framework = Framework(planner.framework_for(seen).profile, REGISTRY, planner.handle)
        nearest, hints = nearest_and_hints(framework, seen, view)
        # They point back at the view: all are freed now, not by a collection.
        view.volumes = view.devices = None
        return Blocker(pod.key, "", "NoPlaceToMovePods", message, FIND_PLACE, nearest=nearest, hints=hints,
                       pods_not_tried=not_tried)

    def _undo(self, evictions: ChangeReport, i: int, movable: list[Pod], taints: tuple[Taint, ...]) -> None:
        """Takes the placed pods off again and puts the node back with its pods and taints."""
        cluster = self.planner.cluster
        for key, node in evictions.replaced.items():
            j = cluster.index[node]
            placed = next(p for p in reversed(cluster.pods_by_node[j]) if p.key == key)
            cluster.forget(placed, j)
        for pod in movable:
            cluster.assume(pod, i)
        cluster.set_taints(i, taints)
        self.planner.restart()

    def _in_sequence(self, movable: list[Pod]) -> list[str]:
        """Budgets with fewer disruptions left than the node's pods they select: cluster-autoscaler
        removes the node (RemainingPdbTracker.CanRemovePods: not in parallel, the removal is risky);
        the evictions then wait for one another."""
        wanted = Counter(b.key for pod in movable for b in self.budgets.matching(pod))
        return sorted(key for key, n in wanted.items() if self.budgets.remaining[key] < n)


def cluster_ratios(cluster: ClusterState) -> dict[str, float | None]:
    """The cluster's requested over allocatable, per resource (None without allocatable)."""
    out: dict[str, float | None] = {}
    for r in RESOURCES:
        k = cluster.res_index[r]
        alloc = int(cluster.allocatable[:, k].sum())
        out[r] = int(cluster.requested[:, k].sum()) / alloc if alloc else None
    return out


def consolidate(planner, options: Options) -> Consolidation:
    """Plans the scale-down on the planner's table (which it changes) and returns the plan
    (kplan.report.consolidate writes the ConsolidationReport)."""
    before = cluster_ratios(planner.cluster)
    plan = Consolidation(planner, options)
    with bulk_allocation():  # each table without a node is a copy: no collector passes over them
        plan.run()
    plan.before = before
    return plan
