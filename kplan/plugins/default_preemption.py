"""DefaultPreemption: kube-scheduler's PostFilter that nominates a node by evicting lower-priority pods."""
from __future__ import annotations

from typing import Mapping, Sequence

from kplan.api.objects import Pod, PodDisruptionBudget
from kplan.cluster.state import ClusterState
from kplan.errors import InputError
from kplan.framework.interfaces import CycleState, Handle, PostFilterResult, plugin_args
from kplan.framework.node_filters import Diagnosis, priority
from kplan.framework.preemption import (
    PREEMPT_NEVER, Evaluator, VictimsMemo, default_victims, disruption_budgets, nominated_node_name,
    terminating_by_preemption,
)
from kplan.framework.status import Code, Status

NAME = "DefaultPreemption"
PREFIX = "preemption: "
DEFAULT_ARGS = {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100}


class DefaultPreemption:
    """Finds the node where evicting the fewest, least important lower-priority pods lets the pod fit.

    Candidates are the nodes whose filter status was Unschedulable (never UnschedulableAndUnresolvable);
    on each, every lower-priority pod is removed, the filters re-run, and pods are reprieved from
    the most important down (PodDisruptionBudget-violating pods first).
    """

    name = NAME

    def __init__(self, args: Mapping | None = None, handle: Handle | None = None):
        self.args = plugin_args(args, DEFAULT_ARGS, NAME)
        self.handle = handle or Handle()
        self.memo = VictimsMemo()
        pct, absolute = self.args["minCandidateNodesPercentage"], self.args["minCandidateNodesAbsolute"]
        if not isinstance(pct, int) or not isinstance(absolute, int):
            raise InputError(f"{NAME} args: minCandidateNodesPercentage and minCandidateNodesAbsolute must be integers")
        if pct < 0 or pct > 100:
            raise InputError(f"{NAME} args: minCandidateNodesPercentage: Invalid value: {pct}: not in valid range [0, 100]")
        if absolute < 0:
            raise InputError(f"{NAME} args: minCandidateNodesAbsolute: Invalid value: {absolute}: not in valid range [0, inf)")
        if pct == 0 and absolute == 0:
            raise InputError(f"{NAME} args: minCandidateNodesPercentage and minCandidateNodesAbsolute "
                             "cannot be zero at the same time")

    def post_filter(self, state: CycleState, pod: Pod, cluster: ClusterState, diagnosis: Diagnosis) -> PostFilterResult:
        pdbs = disruption_budgets(self.handle)
        self.memo.budgets(pdbs)
        result = Evaluator(self, pdbs).preempt(state, pod, cluster, diagnosis)
        if result.status.message:
            result.status = Status(result.status.code, (PREFIX + result.status.message,), NAME)
        return result

    # -- preemption.Interface ---------------------------------------------------------------------

    def calculate_num_candidates(self, n: int) -> int:
        """At least minCandidateNodesAbsolute, or minCandidateNodesPercentage of n, at most n."""
        count = n * self.args["minCandidateNodesPercentage"] // 100
        return min(max(count, self.args["minCandidateNodesAbsolute"]), n)

    def offset_and_num_candidates(self, n: int) -> tuple[int, int]:
        """Upstream starts at a random offset; kplan starts at the first node."""
        return 0, self.calculate_num_candidates(n)

    def pod_eligible_to_preempt_others(self, state: CycleState, pod: Pod, cluster: ClusterState,
                                       nominated_code: int | None) -> tuple[bool, str]:
        if pod.preemption_policy == PREEMPT_NEVER:
            return False, "not eligible due to preemptionPolicy=Never."
        if nominated_code is not None:
            if nominated_code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            i = cluster.index[nominated_node_name(pod)]
            for p in cluster.pods_by_node[i]:
                if priority(p) < priority(pod) and terminating_by_preemption(p):
                    return False, "not eligible due to a terminating pod on the nominated node."
        return True, ""

    def select_victims_on_node(self, state: CycleState, pod: Pod, cluster: ClusterState, i: int,
                               pdbs: Sequence[PodDisruptionBudget], diagnosis: Diagnosis):
        key = self.memo.key(pod, cluster, i, diagnosis)
        answer = self.memo.get(i, key)
        if answer is None:
            mine = priority(pod)
            answer = default_victims(state, pod, cluster, i, pdbs, diagnosis, lambda p: priority(p) < mine)
            self.memo.put(i, key, answer)
        return answer
