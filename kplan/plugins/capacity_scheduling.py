"""CapacityScheduling (scheduler-plugins): ElasticQuota min/max in PreFilter, quota-aware preemption."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from kplan.api.elastic_quota import (
    KIND, QuotaInfos, build_infos, load_quotas, quota_request,
)
from kplan.api.objects import Pod, PodDisruptionBudget
from kplan.cluster.state import ClusterState
from kplan.framework.interfaces import CycleState, Handle, PostFilterResult, plugin_args
from kplan.framework.node_filters import Diagnosis, filters_with_nominated, priority, remove_pod
from kplan.framework.preemption import (
    PREEMPT_NEVER, Evaluator, disruption_budgets, importance_key, nominated_node_name, reprieve,
)
from kplan.framework.status import Code, Status

NAME = "CapacityScheduling"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
SNAPSHOT_KEY = "ElasticQuotaSnapshot"
GLOBAL_QUOTA_MAX_EXCEEDED = "global quota max exceeded"


def signature(cluster: ClusterState) -> tuple[int, int]:
    """A cheap fingerprint of the pods on the node table: their count and their summed requests."""
    return int(cluster.pod_count.sum()), int(cluster.requested.sum())


@dataclass
class PreFilterState:
    """The pod's quota request, alone and with the nominated pods that count with it.

    kplan has no nominated pods (a snapshot holds pods bound or not), so both sums are the
    pod's own request.
    """

    pod_req: dict[str, int]
    nominated_in_eq_with_pod_req: dict[str, int]
    nominated_with_pod_req: dict[str, int]


class QuotaSnapshot:
    """ElasticQuotaSnapshotState: the cycle's copy of every quota, changed by AddPod/RemovePod."""

    def __init__(self, infos: QuotaInfos):
        self.infos = infos

    def clone(self) -> "QuotaSnapshot":
        return QuotaSnapshot(self.infos.clone())


class CapacityScheduling:
    """Rejects pods whose ElasticQuota would exceed its max, or the quotas' total min; preempts by quota.

    PreFilter: `used + request > max` of the pod's namespace, or `Σ used + request > Σ min` over
    all quotas, rejects (Unschedulable). PostFilter: a preemptor whose quota stays within its min
    may evict pods of quotas using more than their min, whatever their priority; otherwise only
    lower-priority pods of its own namespace; a pod in no quota only lower-priority pods in no
    quota. Reserve/Unreserve count the pod in its quota.
    """

    name = NAME

    def __init__(self, args: Mapping | None = None, handle: Handle | None = None):
        plugin_args(args, {"kubeConfigPath": ""}, NAME)  # kubeConfigPath: older releases, unused here
        self.handle = handle or Handle()
        self._infos: QuotaInfos | None = None
        self._synced: tuple[int, int] | None = None  # the node table's signature the cache matches

    def infos(self, cluster: ClusterState) -> QuotaInfos:
        """The plugin's cache (upstream's informer-fed ElasticQuotaInfos), from the snapshot's quotas
        and the pods on the node table; rebuilt when the table changed behind the plugin's back
        (a pod placed by another profile), kept up to date by Reserve otherwise."""
        if self._infos is None or self._synced != signature(cluster):
            raws = self.handle.snapshot.objects.get(KIND, []) if self.handle.snapshot is not None else []
            quotas, _ = load_quotas(raws)
            self._infos = build_infos(quotas, (p for pods in cluster.pods_by_node for p in pods))
            self._synced = signature(cluster)
        return self._infos

    # -- PreFilter and its extensions ----------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> Status | None:
        snapshot = QuotaSnapshot(self.infos(cluster).clone())
        req = quota_request(pod)
        state.write(SNAPSHOT_KEY, snapshot)
        eq = snapshot.infos.get(pod.namespace)
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(req, dict(req), dict(req)))
        if eq is None:
            return None
        if eq.used_over_max_with(req):
            return Status.unschedulable(f"Pod {pod.namespace}/{pod.name} is rejected in PreFilter because "
                                        f"ElasticQuota {eq.namespace} is more than Max")
        if snapshot.infos.aggregated_used_over_min_with(req):
            return Status.unschedulable(f"Pod {pod.namespace}/{pod.name} is rejected in PreFilter because "
                                        "total ElasticQuota used is more than min")
        return None

    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, cluster: ClusterState, i: int) -> Status | None:
        info = state.read(SNAPSHOT_KEY).infos.get(pod_to_add.namespace)
        if info is not None:
            info.add_pod(pod_to_add)
        return None

    def remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: Pod, cluster: ClusterState, i: int) -> Status | None:
        info = state.read(SNAPSHOT_KEY).infos.get(pod_to_remove.namespace)
        if info is not None:
            info.remove_pod(pod_to_remove)
        return None

    # -- Reserve ------------------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, cluster: ClusterState, node: int) -> Status | None:
        info = self.infos(cluster).get(pod.namespace)
        if info is not None:
            info.add_pod(pod)
        # The pod is assumed onto the node right after Reserve: expect the table to show it.
        count, requested = signature(cluster)
        self._synced = (count + 1, requested + int(cluster.vector(pod.requests).sum()))
        return None

    def unreserve(self, state: CycleState, pod: Pod, cluster: ClusterState, node: int) -> None:
        """Takes the pod out of its quota again. kplan assumes a pod only after Reserve, so the table
        never held it and matches the cache once more."""
        if self._infos is not None and pod.namespace in self._infos:
            self._infos[pod.namespace].remove_pod(pod)
        self._synced = signature(cluster)

    def pod_deleted(self, pod: Pod) -> None:
        """The pod informer's delete event (a preemption victim evicted)."""
        if self._infos is not None and pod.namespace in self._infos:
            self._infos[pod.namespace].remove_pod(pod)

    # -- PostFilter ---------------------------------------------------------------------------

    def post_filter(self, state: CycleState, pod: Pod, cluster: ClusterState, diagnosis: Diagnosis) -> PostFilterResult:
        pdbs = disruption_budgets(self.handle)
        return Evaluator(self, pdbs).preempt(state, pod, cluster, diagnosis)

    def offset_and_num_candidates(self, n: int) -> tuple[int, int]:
        return 0, n

    def pod_eligible_to_preempt_others(self, state: CycleState, pod: Pod, cluster: ClusterState,
                                       nominated_code: int | None) -> tuple[bool, str]:
        if pod.preemption_policy == PREEMPT_NEVER:
            return False, "not eligible due to preemptionPolicy=Never."
        pre = state.get(PRE_FILTER_STATE_KEY)
        if pre is None:
            return False, "not eligible due to failed to read from cycleState"
        if nominated_code is None:
            return True, ""
        if nominated_code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return True, ""
        snapshot = state.get(SNAPSHOT_KEY)
        if snapshot is None:
            return True, ""
        infos = snapshot.infos
        mine = priority(pod)
        pods = cluster.pods_by_node[cluster.index[nominated_node_name(pod)]]
        preemptor_eq = infos.get(pod.namespace)
        terminating = "not eligible due to a terminating pod on the nominated node."
        if preemptor_eq is not None:
            over_min = preemptor_eq.used_over_min_with(pre.nominated_in_eq_with_pod_req)
            for p in pods:
                if not p.terminating or p.namespace not in infos:
                    continue
                if p.namespace == pod.namespace and priority(p) < mine:
                    return False, terminating
                if p.namespace != pod.namespace and not over_min and infos[p.namespace].used_over_min():
                    return False, terminating
        else:
            for p in pods:
                if p.namespace not in infos and p.terminating and priority(p) < mine:
                    return False, terminating
        return True, ""

    def select_victims_on_node(self, state: CycleState, pod: Pod, cluster: ClusterState, i: int,
                               pdbs: Sequence[PodDisruptionBudget], diagnosis: Diagnosis):
        """The quota-aware SelectVictimsOnNode of capacity_scheduling.go."""
        snapshot = state.get(SNAPSHOT_KEY)
        pre = state.get(PRE_FILTER_STATE_KEY)
        if snapshot is None or pre is None:
            which = "elasticQuotaSnapshot" if snapshot is None else "preFilterState"
            return [], 0, Status(Code.UNSCHEDULABLE, (f"Failed to read {which} from cycleState",))
        infos = snapshot.infos
        mine = priority(pod)
        preemptor_eq = infos.get(pod.namespace)
        # Least important first; each removal updates the quota snapshot the next pod is judged by.
        pods = sorted(cluster.pods_by_node[i], key=importance_key, reverse=True)
        over_min = preemptor_eq is not None and preemptor_eq.used_over_min_with(pre.nominated_in_eq_with_pod_req)
        potential: list[Pod] = []
        for p in pods:
            eq = infos.get(p.namespace)
            if preemptor_eq is None:
                chosen = eq is None and priority(p) < mine
            elif eq is None:
                chosen = False
            elif over_min:
                chosen = p.namespace == pod.namespace and priority(p) < mine
            else:
                chosen = p.namespace != pod.namespace and eq.used_over_min()
            if chosen:
                potential.append(p)
                remove_pod(state, pod, p, cluster, i, diagnosis)
        if not potential:
            return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                 (f"No victims found on node {cluster.names[i]} for preemptor pod {pod.name}",))
        status = filters_with_nominated(state, pod, cluster, i, diagnosis)
        if not status.is_success:
            return [], 0, status
        if preemptor_eq is not None and (preemptor_eq.used_over_max_with(pre.pod_req)
                                         or infos.aggregated_used_over_min_with(pre.pod_req)):
            return [], 0, Status(Code.UNSCHEDULABLE, (GLOBAL_QUOTA_MAX_EXCEEDED,))
        def quota_still_exceeded() -> bool:
            return preemptor_eq is not None and (
                preemptor_eq.used_over_max_with(pre.nominated_in_eq_with_pod_req)
                or infos.aggregated_used_over_min_with(pre.nominated_with_pod_req))

        victims, n_violating = reprieve(state, pod, cluster, i, potential, pdbs, diagnosis, quota_still_exceeded)
        return victims, n_violating, Status()
