"""PodDisruptionBudgets as evictions meet them: the disruptions each budget allows, spent eviction by eviction.

A budget's `disruptionsAllowed` is read from its status. A PDB without one (a manifest put beside
the dump, never seen by a controller) gets the status the disruption controller would write
(kubernetes pkg/controller/disruption: getExpectedPodCount, countHealthyPods, updatePdbStatus):

- the pods it selects: its namespace's pods matching spec.selector (metav1.LabelSelectorAsSelector:
  no selector selects nothing, an empty one every pod of the namespace);
- healthy: not being deleted and Ready;
- minAvailable N: desired N, expected the pods selected; minAvailable P% or maxUnavailable: expected
  is the scale of the pods' controllers (their replicas), desired P% of it, or it minus
  maxUnavailable, percentages rounded up. Snapshots do not keep the controllers' replicas: the
  selected pods that have a controller stand for it (a workload at rest runs its replicas). A pod
  whose controller has no scale (DaemonSet, Job) fails the controller's sync, and its failSafe
  leaves 0 disruptions; so does a value that is not an integer or a percentage;
- disruptionsAllowed = healthy - desired, 0 when negative or when nothing is expected.

`Budgets` keeps what is left of each budget as evictions spend it: `evict` answers as the eviction
API does (kubernetes pkg/registry/core/pod/storage/eviction.go), `short` and `spend` as
cluster-autoscaler's RemainingPdbTracker does (core/scaledown/pdb). `after_preemption` gives the
budgets as preemption reads them once its victims are gone.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Iterable, Mapping

from kplan.api.label_selectors import Selector
from kplan.api.objects import Pod, PodDisruptionBudget
from kplan.framework.preemption import pdb_selects

ALWAYS_ALLOW = "AlwaysAllow"  # spec.unhealthyPodEvictionPolicy: unready pods go without a disruption
NO_SCALE_KINDS = ("DaemonSet", "Job")  # controllers without a scale subresource: no expected count
# The eviction API's refusals (eviction.go), kept verbatim.
TOO_MANY_REQUESTS = "Cannot evict pod as it would violate the pod's disruption budget."
MORE_THAN_ONE = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."


def is_ready(pod: Pod) -> bool:
    """podutil.IsPodReady: the pod's Ready condition is True."""
    conditions = (pod.raw.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions if isinstance(c, Mapping))


@dataclass
class Budget:
    """One PDB: what it selects, and its status as read (or computed, `computed`)."""

    pdb: PodDisruptionBudget
    selector: Selector
    allowed: int
    current_healthy: int
    desired_healthy: int
    computed: bool  # the PDB had no status.disruptionsAllowed: computed as the disruption controller would
    stale: bool  # status.observedGeneration behind metadata.generation: the eviction API waits for it
    unhealthy_policy: str

    @property
    def key(self) -> str:
        return f"{self.pdb.namespace}/{self.pdb.name}"


def scaled(value, total: int) -> int | None:
    """intstr.GetScaledValueFromIntOrPercent rounding up; None for a value that is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit():
        return math.ceil(int(value[:-1]) * total / 100)
    return None


def _expected_scale(pods: list[Pod]) -> int | None:
    """getExpectedScale over the selected pods (None: a pod's controller has no scale: sync fails)."""
    managed = [p for p in pods if p.owner_kind]
    if any(p.owner_kind in NO_SCALE_KINDS for p in managed):
        return None
    return len(managed)


def computed_status(pdb: PodDisruptionBudget, selector: Selector, namespace_pods: Iterable[Pod]) -> tuple[int, int, int]:
    """(disruptionsAllowed, currentHealthy, desiredHealthy) as the disruption controller would write them."""
    pods = [p for p in namespace_pods if selector.matches(p.labels)]
    spec = pdb.raw.get("spec") or {}
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    expected, desired = 0, 0
    if max_unavailable is not None:
        scale = _expected_scale(pods)
        unavailable = None if scale is None else scaled(max_unavailable, scale)
        if unavailable is None:
            return 0, 0, 0  # failSafe
        expected, desired = scale, max(0, scale - unavailable)
    elif min_available is not None:
        if isinstance(min_available, int) and not isinstance(min_available, bool):
            expected, desired = len(pods), min_available
        else:
            scale = _expected_scale(pods)
            available = None if scale is None else scaled(min_available, scale)
            if available is None:
                return 0, 0, 0  # failSafe
            expected, desired = scale, available
    healthy = sum(1 for p in pods if not p.terminating and is_ready(p))
    allowed = healthy - desired
    return (0 if expected <= 0 or allowed <= 0 else allowed), healthy, desired


def budget_of(pdb: PodDisruptionBudget, namespace_pods: Iterable[Pod]) -> Budget:
    """The PDB with its status, computed when it has none."""
    selector = pdb.label_selector
    status = pdb.raw.get("status") or {}
    policy = (pdb.raw.get("spec") or {}).get("unhealthyPodEvictionPolicy") or ""
    if "disruptionsAllowed" in status:
        generation = (pdb.raw.get("metadata") or {}).get("generation")
        observed = status.get("observedGeneration")
        stale = isinstance(generation, int) and isinstance(observed, int) and observed < generation
        return Budget(pdb, selector, int(status.get("disruptionsAllowed") or 0), int(status.get("currentHealthy") or 0),
                      int(status.get("desiredHealthy") or 0), False, stale, policy)
    allowed, healthy, desired = computed_status(pdb, selector, namespace_pods)
    return Budget(pdb, selector, allowed, healthy, desired, True, False, policy)


class Budgets:
    """The snapshot's PodDisruptionBudgets, with the disruptions each has left as evictions spend them."""

    def __init__(self, pdbs: Iterable[PodDisruptionBudget], pods: Iterable[Pod]):
        pdbs = list(pdbs)
        by_namespace: dict[str, list[Pod]] = defaultdict(list)
        if any("disruptionsAllowed" not in (p.raw.get("status") or {}) for p in pdbs):
            for pod in pods:
                by_namespace[pod.namespace].append(pod)
        self.all = [budget_of(pdb, by_namespace.get(pdb.namespace, ())) for pdb in pdbs]
        self._by_namespace: dict[str, list[Budget]] = defaultdict(list)
        for b in self.all:
            self._by_namespace[b.pdb.namespace].append(b)
        self.remaining = {b.key: b.allowed for b in self.all}

    @classmethod
    def of(cls, snapshot) -> "Budgets":
        return cls(snapshot.pdbs, snapshot.pods)

    def matching(self, pod: Pod) -> list[Budget]:
        """The budgets that select the pod (RemainingPdbTracker.MatchingPdbs, getPodDisruptionBudgets)."""
        return [b for b in self._by_namespace.get(pod.namespace, ()) if b.selector.matches(pod.labels)]

    def spend(self, pods: Iterable[Pod]) -> None:
        """RemovePods: each pod takes one disruption from every budget that selects it."""
        for pod in pods:
            for b in self.matching(pod):
                self.remaining[b.key] -= 1

    def short(self, pod: Pod) -> Budget | None:
        """cluster-autoscaler's PDB drainability rule: the first budget of the pod with no disruption left."""
        return next((b for b in self.matching(pod) if self.remaining[b.key] < 1), None)

    def evict(self, pod: Pod) -> tuple[Budget | None, str]:
        """The eviction API's answer for the pod: (None, "") when it is evicted (a disruption spent where
        one is due), else the budget that refuses it (None when several select it) and the refusal."""
        if pod.phase in ("Succeeded", "Failed", "Pending") or pod.terminating:
            return None, ""  # canIgnorePDB
        budgets = self.matching(pod)
        if len(budgets) > 1:
            return None, f"{MORE_THAN_ONE} ({', '.join(b.key for b in budgets)})"
        if not budgets:
            return None, ""
        b = budgets[0]
        if not is_ready(pod) and (b.unhealthy_policy == ALWAYS_ALLOW
                                  or (b.current_healthy >= b.desired_healthy and b.desired_healthy > 0)):
            return None, ""  # an unhealthy pod goes without a disruption
        if b.stale:
            return b, (f"{TOO_MANY_REQUESTS} The disruption budget {b.pdb.name} is still being processed by "
                       "the server.")
        left = self.remaining[b.key]
        if left <= 0:
            why = ("pdb disruptions allowed is negative" if left < 0 else
                   f"The disruption budget {b.pdb.name} needs {b.desired_healthy} healthy pods and has "
                   f"{b.current_healthy} currently")
            return b, f"{TOO_MANY_REQUESTS} {why}"
        self.remaining[b.key] = left - 1
        return None, ""


def after_preemption(pdbs: list[PodDisruptionBudget], victims: Iterable[Pod]) -> list[PodDisruptionBudget]:
    """The PDBs with the status the disruption controller writes once preemption deleted `victims` (the
    scheduler deletes them without the eviction API, so no disruption is recorded): every PDB loses one
    currentHealthy, hence one disruptionsAllowed (never below 0), per healthy victim it selects that its
    status.disruptedPods does not list. PDBs are matched as the scheduler matches them (a PDB without
    selector selects nothing, so its status is never read). The list given is returned when no budget
    changed: preemption keeps what it worked out from the budgets while they stay the same list."""
    spent = [0] * len(pdbs)
    for pod in victims:
        if pod.terminating or not is_ready(pod):
            continue  # not counted healthy: its deletion leaves currentHealthy as it is
        for k, pdb in enumerate(pdbs):
            disrupted = (pdb.raw.get("status") or {}).get("disruptedPods") or {}
            if (pdb.namespace == pod.namespace and pod.name not in disrupted
                    and pdb_selects(pdb, pod.labels)):
                spent[k] += 1
    left = [max(0, pdb.disruptions_allowed - n) for pdb, n in zip(pdbs, spent)]
    if all(n == pdb.disruptions_allowed for pdb, n in zip(pdbs, left)):
        return pdbs
    return [pdb if n == pdb.disruptions_allowed else replace(pdb, disruptions_allowed=n) for pdb, n in zip(pdbs, left)]
