"""The preemption evaluator shared by DefaultPreemption and CapacityScheduling's PostFilter.

Follows kube-scheduler's pkg/scheduler/framework/preemption (Evaluator.Preempt, findCandidates,
DryRunPreemption, SelectCandidate, pickOneNodeForPreemption). A preemption plugin supplies the
parts upstream's preemption.Interface leaves to it: `offset_and_num_candidates`,
`pod_eligible_to_preempt_others` and `select_victims_on_node`.

What-if removal of victims uses the real node table: ClusterState.forget/assume, plus the
PreFilterExtensions (`remove_pod`/`add_pod`, kplan.framework.node_filters) of plugins that keep
state about other pods; the node is restored exactly (same pods, same order) after each evaluation.
The framework runtime knows the evaluator only through the PostFilter plugins that use it. kplan is deterministic
where upstream is random: the dry run starts at the first potential node (upstream: a random
offset), and the last tie of pickOneNodeForPreemption goes to the first node by name.
"""
from __future__ import annotations

import math
from datetime import datetime
from functools import partial
from typing import Callable, Mapping, Protocol, Sequence

import numpy as np

from kplan.api.objects import Pod, PodDisruptionBudget
from kplan.cluster.state import ClusterState
from kplan.errors import PluginError
from kplan.framework.interfaces import Candidate, CycleState, Handle, PostFilterResult
from kplan.framework.node_filters import (
    Diagnosis, add_pod, clone_state, filters_with_nominated, node_local, priority, remove_pod, restoring_node,
)
from kplan.framework.status import Code, Status, fit_error

NOT_HELPFUL = "Preemption is not helpful for scheduling"
PREEMPT_NEVER = "Never"
MAX_INT32 = 2**31 - 1


class PreemptionInterface(Protocol):
    name: str

    def offset_and_num_candidates(self, n: int) -> tuple[int, int]: ...

    def pod_eligible_to_preempt_others(self, state: CycleState, pod: Pod, cluster: ClusterState,
                                       nominated_code: int | None) -> tuple[bool, str]: ...

    def select_victims_on_node(self, state: CycleState, pod: Pod, cluster: ClusterState, i: int,
                               pdbs: Sequence[PodDisruptionBudget],
                               diagnosis: Diagnosis) -> tuple[list[Pod], int, Status]: ...


# -- pods: priority, start time, importance ---------------------------------------------------------

def start_time(pod: Pod) -> float:
    """GetPodStartTime: status.startTime, else "now" (later than every recorded start)."""
    raw = (pod.raw.get("status") or {}).get("startTime")
    if not raw:
        return math.inf
    try:
        return datetime.fromisoformat(str(raw).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return math.inf


def importance_key(pod: Pod) -> tuple[int, float]:
    """Sort key putting more important pods first (util.MoreImportantPod)."""
    return -priority(pod), start_time(pod)


def terminating_by_preemption(pod: Pod) -> bool:
    """podTerminatingByPreemption: deleted, with a DisruptionTarget condition set by the scheduler."""
    if not pod.terminating:
        return False
    for cond in (pod.raw.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "DisruptionTarget":
            return cond.get("status") == "True" and cond.get("reason") == "PreemptionByScheduler"
    return False


def nominated_node_name(pod: Pod) -> str:
    return (pod.raw.get("status") or {}).get("nominatedNodeName") or ""


# -- PodDisruptionBudgets ---------------------------------------------------------------------------

def pdb_selects(pdb: PodDisruptionBudget, labels: Mapping[str, str]) -> bool:
    """Whether the budget covers a pod with these labels as the scheduler reads it: a nil or empty
    selector covers nothing here, nor one that does not parse (filterPodsWithPDBViolation skips it)."""
    selector = pdb.label_selector
    return not selector.empty and selector.matches(labels)


def disruption_budgets(handle: Handle) -> list[PodDisruptionBudget]:
    """The PodDisruptionBudgets as the scheduler's lister holds them: the snapshot's, with the disruptions
    that earlier evictions of the run spent (Handle.pdbs)."""
    if handle.pdbs is not None:
        return handle.pdbs
    return handle.snapshot.pdbs if handle.snapshot is not None else []


def split_by_pdb_violation(pods: Sequence[Pod], pdbs: Sequence[PodDisruptionBudget]) -> tuple[list[Pod], list[Pod]]:
    """filterPodsWithPDBViolation: (violating, non-violating), each keeping the input order."""
    allowed = [pdb.disruptions_allowed for pdb in pdbs]
    violating, fine = [], []
    for pod in pods:
        violated = False
        if pod.labels:
            for k, pdb in enumerate(pdbs):
                if pdb.namespace != pod.namespace or not pdb_selects(pdb, pod.labels):
                    continue
                if pod.name in ((pdb.raw.get("status") or {}).get("disruptedPods") or {}):
                    continue
                allowed[k] -= 1
                if allowed[k] < 0:
                    violated = True
        (violating if violated else fine).append(pod)
    return violating, fine


# -- the evaluator ----------------------------------------------------------------------------------

class Evaluator:
    """preemption.Evaluator: finds candidates, picks one, returns the nominated node and victims."""

    def __init__(self, plugin: PreemptionInterface, pdbs: Sequence[PodDisruptionBudget] = ()):
        self.plugin = plugin
        self.pdbs = list(pdbs)

    def preempt(self, state: CycleState, pod: Pod, cluster: ClusterState, diagnosis: Diagnosis) -> PostFilterResult:
        name = self.plugin.name
        nominated = nominated_node_name(pod)
        nominated_code = (int(diagnosis.codes[cluster.index[nominated]])
                          if nominated in cluster.index else None)
        eligible, msg = self.plugin.pod_eligible_to_preempt_others(state, pod, cluster, nominated_code)
        if not eligible:
            return PostFilterResult(Status(Code.UNSCHEDULABLE, (msg,)), plugin=name)
        if cluster.n == 0:
            raise PluginError(f"running PostFilter plugin {name!r}: no nodes available")
        potential = np.flatnonzero(diagnosis.codes == Code.UNSCHEDULABLE)
        statuses: dict[int, Status] = {}
        candidates: list[Candidate] = []
        if len(potential):
            offset, count = self.plugin.offset_and_num_candidates(len(potential))
            candidates, statuses = self.dry_run(state, pod, cluster, diagnosis, potential, offset, count)
        if not candidates:
            return PostFilterResult(Status(Code.UNSCHEDULABLE, (self.fit_error(cluster.n, statuses),)), plugin=name)
        best = select_candidate(candidates)
        return PostFilterResult(Status(), best.node, best.victims, candidates, name)

    def dry_run(self, state: CycleState, pod: Pod, cluster: ClusterState, diagnosis: Diagnosis,
                potential: np.ndarray, offset: int, count: int) -> tuple[list[Candidate], dict[int, Status]]:
        """DryRunPreemption, one node after the other; non-violating candidates come first.

        Like upstream's candidate lists, each kind keeps at most `count` candidates: once `count`
        PDB-violating ones are found, further violating nodes are dropped while the search goes on
        for a non-violating one.
        """
        fine: list[Candidate] = []
        violating: list[Candidate] = []
        statuses: dict[int, Status] = {}
        # Each node's what-if is undone at once: from copies of its row when no plugin reads other
        # nodes' pods, else pod by pod through the table (and the pod index).
        undone = cluster.scratch_row if node_local(diagnosis) else partial(restoring_node, cluster)
        for k in range(len(potential)):
            i = int(potential[(offset + k) % len(potential)])
            with undone(i):
                victims, n_violations, status = self.plugin.select_victims_on_node(
                    clone_state(state), pod, cluster, i, self.pdbs, diagnosis)
            if status.is_success and victims:
                kind = violating if n_violations else fine
                if len(kind) < count:
                    kind.append(Candidate(i, cluster.names[i], victims, n_violations))
                if fine and len(fine) + len(violating) >= count:
                    break
                continue
            if status.is_success:
                status = Status.error(f"expected at least one victim pod on node {cluster.names[i]!r}")
            if status.code == Code.ERROR:
                raise PluginError(f"running PostFilter plugin {self.plugin.name!r}: {status.message}")
            statuses[i] = status
        return fine + violating, statuses

    @staticmethod
    def fit_error(n: int, statuses: Mapping[int, Status]) -> str:
        """The FitError of a preemption that found no candidate; absent nodes were not helpful."""
        counts: dict[str, int] = {}
        for status in statuses.values():
            for reason in status.reasons:
                counts[reason] = counts.get(reason, 0) + 1
        if n > len(statuses):
            counts[NOT_HELPFUL] = counts.get(NOT_HELPFUL, 0) + n - len(statuses)
        return fit_error(n, histogram=counts)


def select_candidate(candidates: Sequence[Candidate]) -> Candidate:
    """SelectCandidate: the only one, or pickOneNodeForPreemption's choice."""
    if len(candidates) == 1:
        return candidates[0]
    return pick_one_node_for_preemption(candidates)


def earliest_start_of_most_important(victims: Sequence[Pod]) -> float:
    """GetEarliestPodStartTime: the earliest start among the highest-priority victims."""
    top = max(priority(p) for p in victims)
    return min(start_time(p) for p in victims if priority(p) == top)


def pick_one_node_for_preemption(candidates: Sequence[Candidate]) -> Candidate:
    """Applies upstream's criteria in order; a tie left at the end goes to the first node by name.

    1. fewest PDB violations; 2. lowest highest-victim priority (victims[0]); 3. smallest sum of
    (priority + MaxInt32 + 1); 4. fewest victims; 5. latest earliest start time among the
    highest-priority victims.
    """
    criteria = (
        lambda c: -c.pdb_violations,
        lambda c: -priority(c.victims[0]),
        lambda c: -sum(priority(p) + MAX_INT32 + 1 for p in c.victims),
        lambda c: -len(c.victims),
        lambda c: earliest_start_of_most_important(c.victims),
    )
    left = sorted(candidates, key=lambda c: c.name)
    for score in criteria:
        scores = [score(c) for c in left]
        best = max(scores)
        left = [c for c, s in zip(left, scores) if s == best]
        if len(left) == 1:
            break
    return left[0]


class VictimsMemo:
    """DefaultPreemption's answer on each node (SelectVictimsOnNode), kept for the next pod of the same
    template: replicas that preempt one after another ask every node again, and most nodes have not
    changed since.

    An answer is reused only where the dry run is node-local (node_local): it then reads the pod's spec
    and priority, the node's pods in their order, its row, the pods nominated to it and the
    PodDisruptionBudgets. The spec, the table and the pods are held and compared by identity, the
    budgets by the list the run's evictions replace when they spend one (`budgets`): a reused answer
    is the one a fresh dry run of that node would give.
    """

    def __init__(self) -> None:
        self._pdbs: Sequence[PodDisruptionBudget] | None = None
        self._answers: dict[int, tuple[tuple, tuple, tuple[list[Pod], int, Status]]] = {}

    def budgets(self, pdbs: Sequence[PodDisruptionBudget]) -> None:
        """Forgets every answer when the PodDisruptionBudgets are not the ones they were given with."""
        if pdbs is not self._pdbs:
            self._pdbs, self._answers = pdbs, {}

    @staticmethod
    def key(pod: Pod, cluster: ClusterState, i: int, diagnosis: Diagnosis) -> tuple[tuple, tuple] | None:
        """(values, objects) an answer on node i depends on; None where the dry run is not node-local."""
        if not node_local(diagnosis):
            return None
        nominated = diagnosis.framework.handle.nominated.get(cluster.names[i], ())
        itself = any(p.key == pod.key for p in nominated)  # not a pod it must leave room for
        return ((priority(pod), len(cluster.resources), len(cluster.pods_by_node[i]), len(nominated), itself),
                (pod.spec, cluster, *cluster.pods_by_node[i], *nominated))

    def get(self, i: int, key: tuple[tuple, tuple] | None) -> tuple[list[Pod], int, Status] | None:
        kept = self._answers.get(i) if key is not None else None
        if kept is None or kept[0] != key[0] or any(a is not b for a, b in zip(kept[1], key[1])):
            return None
        victims, violations, status = kept[2]
        return list(victims), violations, status

    def put(self, i: int, key: tuple[tuple, tuple] | None, answer: tuple[list[Pod], int, Status]) -> None:
        if key is not None:
            victims, violations, status = answer
            self._answers[i] = (key[0], key[1], (list(victims), violations, status))


def default_victims(state: CycleState, pod: Pod, cluster: ClusterState, i: int,
                    pdbs: Sequence[PodDisruptionBudget], diagnosis: Diagnosis,
                    eligible) -> tuple[list[Pod], int, Status]:
    """DefaultPreemption.SelectVictimsOnNode: remove every eligible pod, check the fit, reprieve.

    Reprieve goes from the most important pod down, PDB-violating pods first; a pod that no
    longer lets the preemptor fit when added back stays a victim.
    """
    potential = [p for p in list(cluster.pods_by_node[i]) if eligible(p)]
    for p in potential:
        remove_pod(state, pod, p, cluster, i, diagnosis)
    if not potential:
        return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("No preemption victims found for incoming pod",))
    status = filters_with_nominated(state, pod, cluster, i, diagnosis)
    if not status.is_success:
        return [], 0, status
    victims, n_violating = reprieve(state, pod, cluster, i, potential, pdbs, diagnosis)
    # Victims from both groups are re-sorted so they stay ordered by importance.
    victims.sort(key=importance_key)
    return victims, n_violating, Status()


def reprieve(state: CycleState, pod: Pod, cluster: ClusterState, i: int, potential: list[Pod],
             pdbs: Sequence[PodDisruptionBudget], diagnosis: Diagnosis,
             still_victim: Callable[[], bool] = lambda: False) -> tuple[list[Pod], int]:
    """Adds removed pods back, most important first and PDB violators before the rest.

    A pod stays a victim when the preemptor no longer fits with it back (counted as a PDB
    violation if it violates one), or when `still_victim()` — a plugin's own check, such as a
    quota bound — says it must go anyway. Returns the victims and the violation count.
    """
    potential.sort(key=importance_key)
    violating, fine = split_by_pdb_violation(potential, pdbs)
    victims: list[Pod] = []
    n_violating = 0
    for group, counts in ((violating, True), (fine, False)):
        for p in group:
            add_pod(state, pod, p, cluster, i, diagnosis)
            if not filters_with_nominated(state, pod, cluster, i, diagnosis).is_success:
                remove_pod(state, pod, p, cluster, i, diagnosis)
                victims.append(p)
                n_violating += counts
            elif still_victim():
                remove_pod(state, pod, p, cluster, i, diagnosis)
                victims.append(p)
    return victims, n_violating
