"""Placing pods in order, each seeing the ones before it placed."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from kplan.api.objects import Node, Pod
from kplan.api.storage import claims_to_create
from kplan.cluster.pod_index import PodIndex
from kplan.cluster.state import ClusterState
from kplan.cluster.devices import DeviceState
from kplan.cluster.volumes import VolumeState
from kplan.errors import InputError
from kplan.framework import versions
from kplan.framework.config import Profile, default_profile
from kplan.framework.interfaces import Handle
from kplan.framework.preemption import disruption_budgets, nominated_node_name
from kplan.framework.replicas import ReplicaScheduler
from kplan.framework.runtime import NEEDS_PREEMPTION, SCHEDULED, CycleResult, Framework
from kplan.planning.disruption_budgets import after_preemption
from kplan.planning.victims import Eviction, evictions
from kplan.plugins.registry import REGISTRY
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
    view = _release_view(version)
    return pod if view is None else view(pod)


def _release_view(version: versions.Version) -> Callable[[Pod], Pod] | None:
    """as_release_sees for one release, its switches read once (it runs for every snapshot pod);
    None for a release that reads every field kplan reads: it sees the pods as they are."""
    pod_level = versions.has(version, versions.POD_LEVEL_RESOURCES)
    resize = versions.has(version, versions.POD_LEVEL_RESIZE)
    return None if pod_level and resize else partial(_as_seen_without, pod_level, resize)


def _as_seen_without(pod_level: bool, resize: bool, pod: Pod) -> Pod:
    raw, pod_level_status = pod.raw, ("resources", "allocatedResources")
    if not pod_level and pod.spec.get("resources"):
        raw = {**raw, "spec": {k: v for k, v in pod.spec.items() if k != "resources"}}
    status = raw.get("status") or {}
    if not resize and any(k in status for k in pod_level_status):
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
    from kplan.sources.manifests import iter_workloads
    return [pod for w in iter_workloads(paths) for pod in w.pods(nodes)]


def release_cluster(snapshot: Snapshot, version: versions.Version) -> ClusterState:
    """The node table with the snapshot's pods counted as that release's scheduler counts them, and
    the snapshot's storage and DRA objects beside it."""
    view = _release_view(version)
    cluster = ClusterState(snapshot.nodes, snapshot.pods if view is None else map(view, snapshot.pods))
    cluster.volumes = VolumeState(snapshot.storage, cluster)
    cluster.devices = DeviceState(snapshot.devices, cluster)
    return cluster


def pending_pods(snapshot: Snapshot) -> list[Pod]:
    """The snapshot's pods waiting for a node: unbound, phase Pending (or not yet reported), not
    being deleted."""
    return [p for p in snapshot.pods if not p.node_name and p.phase in ("", "Pending") and not p.terminating]


def nominated_pods(pods: Sequence[Pod], cluster: ClusterState, scheduler_names: set[str],
                   version: versions.Version) -> dict[str, list[Pod]]:
    """The pod nominator as the snapshot leaves it: pending pods of this scheduler's profiles that
    hold a nominated node (status.nominatedNodeName) in the table, by node name."""
    nominated: dict[str, list[Pod]] = {}
    for pod in pods:
        node = nominated_node_name(pod)
        if node in cluster.index and pod.scheduler_name in scheduler_names:
            nominated.setdefault(node, []).append(as_release_sees(pod, version))
    return nominated


@dataclass
class Planner:
    """Holds the node table and one Framework per profile for a run of what-if questions."""

    snapshot: Snapshot
    profiles: Sequence[Profile] = field(default_factory=lambda: [default_profile()])
    profile_override: str | None = None
    handle: Handle = field(default_factory=Handle)
    kube_version: str | None = None
    now: datetime | None = None  # --now: the time time-dependent state is read at (default: now)
    # A node table built by another Planner over the same snapshot and release, before it placed
    # anything: copied instead of built again (kplan compare's variants that differ in profile only).
    base_cluster: ClusterState | None = None
    # The pods the run's preemptions evicted, in order (kplan.planning.victims): never placed again.
    evictions: list[Eviction] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self.handle.snapshot = self.snapshot
        self.handle.kube_version, self.release_source = resolve_release(self.kube_version, self.snapshot)
        self.handle.now = self.now or self.handle.now or datetime.now(timezone.utc)
        version = self.handle.kube_version
        if self.base_cluster is not None:
            self.cluster = self.base_cluster.clone()
        else:
            with bulk_allocation():
                self.cluster = release_cluster(self.snapshot, version)
                # Part of the load, as kube-scheduler's cache keeps pods' labels and affinity terms
                # from the start: the first cycle of every default profile reads them.
                PodIndex.of(self.cluster)
        self.frameworks = {p.scheduler_name: Framework(p, REGISTRY, self.handle) for p in self.profiles}
        self.handle.nominated = nominated_pods(pending_pods(self.snapshot), self.cluster, set(self.frameworks), version)
        self._replicas: dict[str, ReplicaScheduler] = {}
        if self.profile_override and self.profile_override not in self.frameworks:
            raise InputError(f"--profile {self.profile_override!r}: no such profile "
                             f"(profiles: {', '.join(self.frameworks)})")

    def release_fields(self) -> dict[str, Any]:
        """The report fields naming the release answered as: kubeVersion, kubeVersionSource and, when
        inferred from the kubelets, kubeletVersion (the newest kubelet's version as its node reports it);
        and `forbidden` when the snapshot lacks lists its reader was refused."""
        fields: dict[str, Any] = {"kubeVersion": versions.format_version(self.handle.kube_version),
                                  "kubeVersionSource": self.release_source}
        if self.release_source == versions.FROM_KUBELET:
            fields["kubeletVersion"] = self.snapshot.newest_kubelet
        return {**fields, **self.snapshot.forbidden_fields()}

    def framework_for(self, pod: Pod) -> Framework:
        name = self.profile_override or pod.scheduler_name
        fw = self.frameworks.get(name)
        if fw is None:
            raise InputError(f"pod {pod.key} asks for schedulerName {name!r}, which no profile has "
                             f"(profiles: {', '.join(self.frameworks)}; use --profile to choose one)", pod.source)
        return fw

    def place_each(self, pods: Iterable[Pod], independent: bool = False, rank: bool = True) -> Iterator[CycleResult]:
        """Schedules the pods in order, each seeing the ones before it placed.

        Each result is handed out before a scheduled pod is assumed onto its node, so a report built
        from it sees the table as the scheduler saw it; the pod is assumed, and leaves the pod
        nominator, when the next one is asked for (a pod needing preemption is already on its
        nominated node, its victims evicted; they join `evictions` and the PodDisruptionBudgets count
        them gone then). `independent` places each pod alone against the table as it is: nothing is
        assumed, reserved or evicted. Without `rank` only the selected node is ranked (for reports that
        show no runner-up).
        """
        for pod in pods:
            pod = self._as_met(pod)
            self._invalidate()
            result = self.framework_for(pod).schedule(pod, self.cluster, assume=False, reserve=not independent,
                                                      apply_preemption=not independent, rank=rank, report=True)
            yield result
            if independent:
                continue
            if result.outcome == SCHEDULED:
                self.cluster.assume(pod, result.node)
            if result.outcome in (SCHEDULED, NEEDS_PREEMPTION):
                self._leaves_nominator(pod)
            self._victims_gone(result)

    def _as_met(self, pod: Pod) -> Pod:
        """The pod as kube-scheduler meets it: its priority resolved, read as the release reads it, with
        the volume claims its controllers create and the resource claims the resourceclaim controller
        makes from its claim templates."""
        self.snapshot.resolve_priority(pod)
        pod = as_release_sees(pod, self.handle.kube_version)
        self.create_claims(pod)
        if pod.spec.get("resourceClaims"):
            pod = self.cluster.devices.pod_with_claims(pod)
        return pod

    def place(self, pod: Pod) -> CycleResult:
        """Schedules one pod (see place_each) and assumes it onto its node when it was scheduled."""
        (result,) = self.place_each([pod])
        return result

    def unbind(self, key: str) -> tuple[Pod, str]:
        """Takes the snapshot's pod `key` (ns/name) off its node, as if it were recreated unbound, and
        returns it ready to be placed anew, with the node it runs on ("" for a pending pod)."""
        pod = self.snapshot.pod(key)
        if pod is None:
            raise InputError(f"pod {key!r}: no such pod in the snapshot (and no such file)")
        node = pod.node_name
        self._take_off(pod)
        spec = {k: v for k, v in pod.spec.items() if k != "nodeName"}
        unbound = Pod({**pod.raw, "spec": spec, "status": {"phase": "Pending"}}, pod.source)
        unbound.priority, unbound.preemption_policy = pod.priority, pod.preemption_policy
        return unbound, node

    def _take_off(self, pod: Pod, node: str = "") -> None:
        """Takes a pod off its node (`node`, for one this run placed; a pending one out of the
        nominator) and releases its claims."""
        i = self.cluster.index.get(node or pod.node_name)
        if i is not None:
            bound = next((p for p in self.cluster.pods_by_node[i] if p.key == pod.key), None)
            if bound is not None:
                self.cluster.forget(bound, i)
        self.cluster.devices.release(pod)  # recreated: its claims released, new ones from its templates
        self._leaves_nominator(pod)

    def delete(self, pods: Iterable[Pod], placed: Mapping[str, str] | None = None) -> None:
        """Deletes pods, as a controller scaling down does: off their nodes (`placed`: pod key -> node
        for pods this run placed), out of the nominator, their resource claims released; the fast
        path's caches start again."""
        for pod in pods:
            self._take_off(pod, (placed or {}).get(pod.key, ""))
        self._invalidate()

    def admit(self, pod: Pod) -> tuple[Pod, str | None, list[str]]:
        """A pod from a manifest as kube-scheduler would meet it, with notes saying what was done: a
        pod of the snapshot under the same name is replaced (taken off its node first: the node it
        ran on is returned), and spec.nodeName is dropped, since the scheduler never schedules a
        bound pod."""
        notes: list[str] = []
        runs_on = None
        if self.snapshot.pod(pod.key) is not None:
            _, runs_on = self.unbind(pod.key)
            notes.append(f"It replaces the snapshot's pod {pod.key}" +
                         (f", taken off {runs_on} first." if runs_on else ", pending there."))
        if pod.node_name:
            notes.append(f"Its spec.nodeName binds it to {pod.node_name}: kube-scheduler never schedules a bound "
                         "pod, so kplan placed it as if unbound.")
            spec = {k: v for k, v in pod.spec.items() if k != "nodeName"}
            unbound = Pod({**pod.raw, "spec": spec}, pod.source)
            unbound.priority, unbound.preemption_policy = pod.priority, pod.preemption_policy
            pod = unbound
        return pod, runs_on or None, notes

    def _leaves_nominator(self, pod: Pod) -> None:
        for node, pods in list(self.handle.nominated.items()):
            kept = [p for p in pods if p.key != pod.key]
            if len(kept) != len(pods):
                self.cluster.generation += 1  # a node's nominated pods are read by every cycle
                if kept:
                    self.handle.nominated[node] = kept
                else:
                    del self.handle.nominated[node]

    def schedule(self, pod: Pod, apply_preemption: bool = False) -> CycleResult:
        """Schedules one pod without building a report (the fast path of check, capacity, drain):
        the selected node only, no ranking; a scheduled pod is assumed onto its node."""
        pod = self._as_met(pod)
        fw = self.framework_for(pod)
        replicas = self._replicas.get(fw.profile.scheduler_name)
        if replicas is None:
            replicas = self._replicas[fw.profile.scheduler_name] = ReplicaScheduler(fw, self.cluster)
        result = replicas.schedule(pod, apply_preemption)
        if result.outcome != SCHEDULED:
            self._invalidate()  # preemption may have evicted pods
        if apply_preemption:
            self._victims_gone(result)
        return result

    def _victims_gone(self, result: CycleResult) -> None:
        """After a cycle whose preemption evicted victims (the pod then on its nominated node, or refused there
        by a Reserve plugin): they join the run's `evictions`, and the PodDisruptionBudgets are as the
        disruption controller then rewrites them, which the run's later preemptions read."""
        gone = evictions(result, self.cluster)
        if not gone:
            return
        self.evictions += gone
        pdbs = disruption_budgets(self.handle)
        if pdbs:
            self.handle.pdbs = after_preemption(pdbs, [e.victim for e in gone])

    def schedule_alone(self, pod: Pod) -> CycleResult:
        """Schedules a pod no replica of its spec follows (a drain's evicted pod) as `schedule` does,
        without the fast path, whose cache of the template only later replicas would read."""
        pod = self._as_met(pod)
        self._invalidate()  # the table changes behind the fast path's back
        return self.framework_for(pod).schedule(pod, self.cluster, assume=True, apply_preemption=False, rank=False)

    def preview(self, pod: Pod) -> CycleResult:
        """Schedules one pod with the full report and changes nothing: no pod assumed, no victim
        evicted, no volume bound. A report drawn beside a run of the fast path (schedule) shows it.
        (The pod's claims are created as its controllers would: the run creates them anyway.)"""
        pod = self._as_met(pod)
        return self.framework_for(pod).schedule(pod, self.cluster, assume=False, apply_preemption=False,
                                                reserve=False)

    def create_claims(self, pod: Pod) -> None:
        """Creates the claims a manifest pod's controllers create before it is scheduled (a
        StatefulSet's, its ephemeral volumes'); a claim the cluster holds already is used as it is."""
        for raw in claims_to_create(pod):
            self.cluster.volumes.create_claim(raw, pod.source)

    def _invalidate(self) -> None:
        for replicas in self._replicas.values():
            replicas.invalidate()

    def restart(self) -> None:
        """Starts the frameworks afresh after the node table changed under them (a node's taints, nodes
        taken out): their plugins' caches hold node positions and what was read of the nodes."""
        self.frameworks = {name: Framework(fw.profile, REGISTRY, self.handle) for name, fw in self.frameworks.items()}
        self._replicas = {}

    def remove_nodes(self, names: Sequence[str]) -> None:
        """Takes nodes out of the table with the pods still on them, as if they left the cluster."""
        old = self.cluster
        self.cluster = old.without([old.index[name] for name in names])
        # They point back at the old table: all are freed now, not by a collection.
        old.volumes = old.devices = None
        for name in names:
            self.handle.nominated.pop(name, None)
        self.restart()

    def check_nodes(self, names: Sequence[str]) -> None:
        """Fails on node names the snapshot does not have."""
        unknown = [n for n in names if n not in self.cluster.index]
        if unknown:
            raise InputError(f"--explain: no node named {unknown[0]!r} in the snapshot")
