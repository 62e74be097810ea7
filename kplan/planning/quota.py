"""ElasticQuota what-ifs: the quotas as CapacityScheduling counts them, and how pods fare against them.

kplan.report.quota writes the QuotaStatus and QuotaCheck documents from these results.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Sequence

from kplan.api.elastic_quota import KIND, ElasticQuota, build_infos, load_quotas, quota_request
from kplan.api.objects import Pod
from kplan.framework.config import Profile, load_config
from kplan.framework.interfaces import CycleState
from kplan.framework.status import Status
from kplan.planning.place import Planner
from kplan.plugins.capacity_scheduling import NAME as CAPACITY_SCHEDULING, CapacityScheduling
from kplan.sources.snapshot import Snapshot

QUOTA_PROFILE = "capacityscheduler"


@dataclass
class QuotaUsage:
    """The ElasticQuotas of a snapshot (one per namespace, the first listed; the others `ignored`), what
    their namespaces use (`infos`, CapacityScheduling's ElasticQuotaInfos) and the nodes' total
    allocatable."""

    quotas: dict[str, ElasticQuota]
    ignored: list[ElasticQuota]
    infos: Any
    capacity: dict[str, int]


def quota_usage(snapshot: Snapshot, pods: Iterable[Pod] | None = None) -> QuotaUsage:
    """The quotas and what they use. `used` counts what the scheduler's cache counts: the requests of
    the pods bound to a node in the quota's namespace, not Succeeded or Failed. `pods` replaces the
    snapshot's pods on nodes (after a run: the node table's pods, placed ones included)."""
    quotas, ignored = load_quotas(snapshot.objects.get(KIND, []))
    infos = build_infos(quotas, pods if pods is not None else (p for p in snapshot.pods if p.occupies_node))
    capacity: dict[str, int] = {}
    for node in snapshot.nodes:
        for r, v in node.allocatable.items():
            capacity[r] = capacity.get(r, 0) + v
    return QuotaUsage(quotas, ignored, infos, capacity)


def quota_profile() -> Profile:
    """The profile of samples/quota/scheduler-config.yaml: CapacityScheduling instead of DefaultPreemption."""
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"schedulerName": QUOTA_PROFILE, "plugins": {
               "preFilter": {"enabled": [{"name": CAPACITY_SCHEDULING}]},
               "postFilter": {"enabled": [{"name": CAPACITY_SCHEDULING}], "disabled": [{"name": "*"}]},
               "reserve": {"enabled": [{"name": CAPACITY_SCHEDULING}]}}}]}
    return load_config(doc, "built-in quota profile")[0]


@dataclass
class QuotaVerdict:
    """One pod against its quota: the pod's quota request, its ElasticQuota and the quota's info as the
    pod found them (None outside any quota), CapacityScheduling's PreFilter status (None = passed),
    and the pod's placement result on `cluster`, the node table as the scheduler saw it (read it before
    asking for the next verdict)."""

    pod: Pod
    request: dict[str, int]
    quota: ElasticQuota | None
    info: Any
    pre_filter: Status | None
    result: Any
    cluster: Any

    @property
    def passed(self) -> bool:
        return self.pre_filter is None or self.pre_filter.is_success


def quota_check(snapshot: Snapshot, pods: Sequence[Pod], profiles: Sequence[Profile] | None = None,
                profile: str | None = None, kube_version: str | None = None) -> Iterator[QuotaVerdict]:
    """Checks each pod against its quota (CapacityScheduling PreFilter), then places it in order,
    yielding its verdict before the next pod is placed.

    A pod that only fits by preemption gets whose pods go; later pods see that preemption done.
    """
    profiles = list(profiles or [quota_profile()])
    planner = Planner(snapshot, profiles, profile or profiles[0].scheduler_name, kube_version=kube_version)
    quotas = load_quotas(snapshot.objects.get(KIND, []))[0]
    for pod in pods:
        snapshot.resolve_priority(pod)
        plugin = CapacityScheduling(None, planner.handle)
        info = plugin.infos(planner.cluster).get(pod.namespace)
        status = plugin.pre_filter(CycleState(), pod, planner.cluster)
        quota = quotas.get(pod.namespace) if info is not None else None
        for result in planner.place_each([pod]):  # handed out before the pod is assumed, as place's reports
            yield QuotaVerdict(pod, quota_request(pod), quota, info, status, result, planner.cluster)
