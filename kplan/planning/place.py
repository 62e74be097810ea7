"""Placing pods in order, each seeing the ones before it placed."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Sequence

from kplan.api.objects import Node, Pod
from kplan.cluster.pod_index import PodIndex
from kplan.cluster.state import ClusterState
from kplan.errors import InputError
from kplan.framework import versions
from kplan.framework.config import Profile, default_profile
from kplan.framework.interfaces import Handle
from kplan.framework.runtime import SCHEDULED, CycleResult, Framework, ReplicaScheduler
from kplan.plugins.registry import REGISTRY
from kplan.report.model import explain, placement
from kplan.sources.snapshot import Snapshot, bulk_allocation


def resolve_release(option: str | None, snapshot: Snapshot) -> tuple[versions.Version, str]:
    """Returns the release to answer as and where it comes from (versions.FROM_*): --kube-version, else
    the snapshot's server version, else the one inferred from its nodes' kubelets, else the newest.

    A version with a patch (1.33.7) answers as that patch release, backports included; a minor alone
    (1.33) as its first release, 1.33.0.
    """
    if option:
        return versions.parse_version(option), versions.FROM_FLAG
    if snapshot.kube_version:
        return snapshot.kube_version, snapshot.kube_version_source or versions.FROM_SNAPSHOT
    return versions.NEWEST, versions.FROM_DEFAULT


def resolve_kube_version(option: str | None, snapshot: Snapshot) -> versions.Version:
    """The release of resolve_release, without where it comes from."""
    return resolve_release(option, snapshot)[0]


def as_release_sees(pod: Pod, version: versions.Version) -> Pod:
    """Returns the pod as that release's scheduler reads it: before pod-level resources were on by
    default, spec.resources is ignored and the containers' requests count; before in-place resize
    of pod-level resources was on by default, the pod-level status.resources and
    status.allocatedResources are ignored (and the API server drops them)."""
    raw, pod_level_status = pod.raw, ("resources", "allocatedResources")
    if not versions.has(version, versions.POD_LEVEL_RESOURCES) and pod.spec.get("resources"):
        raw = {**raw, "spec": {k: v for k, v in pod.spec.items() if k != "resources"}}
    status = raw.get("status") or {}
    if not versions.has(version, versions.POD_LEVEL_RESIZE) and any(k in status for k in pod_level_status):
        raw = {**raw, "status": {k: v for k, v in status.items() if k not in pod_level_status}}
    if raw is pod.raw:
        return pod
    seen = Pod(raw, pod.source)
    seen.priority, seen.preemption_policy = pod.priority, pod.preemption_policy
    return seen


def load_pods(paths: Sequence[str], nodes: Sequence[Node] | None = None) -> list[Pod]:
    """Reads the pods to place, in file order: Pods, and the pods of workloads (Deployment,
    ReplicaSet, StatefulSet, Job, CronJob, DaemonSet), named as their controllers would name them.

    A DaemonSet needs `nodes` (its pods depend on them). A file with neither is an input error.
    """
    from kplan.api.workloads import iter_workloads
    return [pod for w in iter_workloads(paths) for pod in w.pods(nodes)]


def release_cluster(snapshot: Snapshot, version: versions.Version) -> ClusterState:
    """The node table with the snapshot's pods counted as that release's scheduler counts them."""
    return ClusterState(snapshot.nodes, [as_release_sees(p, version) for p in snapshot.pods])


@dataclass
class Planner:
    """Holds the node table and one Framework per profile for a run of what-if questions."""

    snapshot: Snapshot
    profiles: Sequence[Profile] = field(default_factory=lambda: [default_profile()])
    profile_override: str | None = None
    handle: Handle = field(default_factory=Handle)
    kube_version: str | None = None
    now: datetime | None = None  # --now: the time time-dependent state is read at (default: now)

    def __post_init__(self) -> None:
        self.handle.snapshot = self.snapshot
        self.handle.kube_version, self.release_source = resolve_release(self.kube_version, self.snapshot)
        self.handle.now = self.now or self.handle.now or datetime.now(timezone.utc)
        version = self.handle.kube_version
        with bulk_allocation():
            self.cluster = release_cluster(self.snapshot, version)
            # Part of the load, as kube-scheduler's cache keeps pods' labels and affinity terms
            # from the start: the first cycle of every default profile reads them.
            PodIndex.of(self.cluster)
        self.frameworks = {p.scheduler_name: Framework(p, REGISTRY, self.handle) for p in self.profiles}
        self._replicas: dict[str, ReplicaScheduler] = {}
        if self.profile_override and self.profile_override not in self.frameworks:
            raise InputError(f"--profile {self.profile_override!r}: no such profile "
                             f"(profiles: {', '.join(self.frameworks)})")

    def release_fields(self) -> dict[str, str]:
        """The report fields naming the release answered as: kubeVersion, kubeVersionSource and, when
        inferred from the kubelets, kubeletVersion (the newest kubelet's version as its node reports it)."""
        fields = {"kubeVersion": versions.format_version(self.handle.kube_version),
                  "kubeVersionSource": self.release_source}
        if self.release_source == versions.FROM_KUBELET:
            fields["kubeletVersion"] = self.snapshot.newest_kubelet
        return fields

    def framework_for(self, pod: Pod) -> Framework:
        name = self.profile_override or pod.scheduler_name
        fw = self.frameworks.get(name)
        if fw is None:
            raise InputError(f"pod {pod.key} asks for schedulerName {name!r}, which no profile has "
                             f"(profiles: {', '.join(self.frameworks)}; use --profile to choose one)", pod.source)
        return fw

    def place(self, pod: Pod, explain_nodes: Sequence[str] = ()) -> tuple[CycleResult, dict[str, Any]]:
        """Schedules one pod, reports it, and assumes it onto its node when it was scheduled."""
        self.snapshot.resolve_priority(pod)
        pod = as_release_sees(pod, self.handle.kube_version)
        self._invalidate()
        result = self.framework_for(pod).schedule(pod, self.cluster, assume=False)
        entry = placement(result, self.cluster)
        explained = [explain(result, self.cluster, name) for name in explain_nodes]
        if explained:
            entry["explain"] = explained
        if result.outcome == SCHEDULED:
            self.cluster.assume(pod, result.node)
        return result, entry

    def schedule(self, pod: Pod, apply_preemption: bool = False) -> CycleResult:
        """Schedules one pod without building a report (the fast path of check, capacity, drain):
        the selected node only, no ranking; a scheduled pod is assumed onto its node."""
        self.snapshot.resolve_priority(pod)
        pod = as_release_sees(pod, self.handle.kube_version)
        fw = self.framework_for(pod)
        replicas = self._replicas.get(fw.profile.scheduler_name)
        if replicas is None:
            replicas = self._replicas[fw.profile.scheduler_name] = ReplicaScheduler(fw, self.cluster)
        result = replicas.schedule(pod, apply_preemption)
        if result.outcome != SCHEDULED:
            self._invalidate()  # preemption may have evicted pods
        return result

    def _invalidate(self) -> None:
        for replicas in self._replicas.values():
            replicas.invalidate()

    def check_nodes(self, names: Sequence[str]) -> None:
        """Fails on node names the snapshot does not have."""
        unknown = [n for n in names if n not in self.cluster.index]
        if unknown:
            raise InputError(f"--explain: no node named {unknown[0]!r} in the snapshot")
