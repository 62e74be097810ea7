"""The cluster's own pending pods, taken as kube-scheduler's queue would take them now.

The scheduler works on the pods it owns (schedulerName is one of its profiles) that wait for a
node: unbound, phase Pending, not being deleted. Its active queue pops them by PrioritySort:
higher priority first, then the earlier one (kplan uses the creation time, the queue its own
timestamp), and each pod's cycle sees the ones placed before it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from kplan.api.label_selectors import Selector
from kplan.api.objects import Pod
from kplan.errors import InputError
from kplan.framework.node_filters import priority
from kplan.planning.place import pending_pods
from kplan.sources.snapshot import Snapshot

@dataclass
class Recorded:
    """The pod's PodScheduled condition as the cluster last wrote it."""

    reason: str
    message: str
    time: str


@dataclass
class Selection:
    """The pending pods to work through, in queue order, and those another scheduler owns."""

    queue: list[Pod] = field(default_factory=list)
    other_scheduler: list[Pod] = field(default_factory=list)
    elsewhere: int = 0  # pending pods the selector picks in the other namespaces (-A lists them)


def select_pending(snapshot: Snapshot, scheduler_names: set[str], names: Sequence[str] = (),
                   namespace: str | None = "default", selector: Selector | None = None) -> Selection:
    """The snapshot's pending pods that `names` (ns/name, or name in `namespace`), the namespace
    (None: every namespace) and the label selector pick, split by who schedules them."""
    pods = pending_pods(snapshot)
    elsewhere = 0
    if names:
        wanted = [_key(name, namespace) for name in names]
        by_key = {p.key: p for p in pods}
        missing = [k for k in wanted if k not in by_key]
        if missing:
            raise InputError(f"pod {missing[0]!r} is not a pending pod of the snapshot (pending: unbound, "
                             "phase Pending, not being deleted)")
        pods = [by_key[k] for k in dict.fromkeys(wanted)]
    elif namespace is not None:
        elsewhere = sum(p.namespace != namespace and (selector is None or selector.matches(p.labels)) for p in pods)
        pods = [p for p in pods if p.namespace == namespace]
    if selector is not None:
        pods = [p for p in pods if selector.matches(p.labels)]
    mine = [p for p in pods if p.scheduler_name in scheduler_names]
    others = [p for p in pods if p.scheduler_name not in scheduler_names]
    return Selection(queue_order(mine), sorted(others, key=lambda p: p.key), elsewhere)


def _key(name: str, namespace: str | None) -> str:
    return name if "/" in name else f"{namespace or 'default'}/{name}"


def queue_order(pods: Sequence[Pod]) -> list[Pod]:
    """PrioritySort: higher priority first, then earlier creation; then by name, for the same bytes."""
    return sorted(pods, key=lambda p: (-priority(p), _created(p), p.key))


def _created(pod: Pod) -> str:
    # RFC 3339 UTC timestamps as the API server writes them order as strings; none sorts last.
    return (pod.raw.get("metadata") or {}).get("creationTimestamp") or "~"


def recorded_condition(pod: Pod) -> Recorded | None:
    """The PodScheduled condition the scheduler left on the pod when it could not place it."""
    for condition in (pod.raw.get("status") or {}).get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == "PodScheduled" \
                and condition.get("status") == "False":
            return Recorded(condition.get("reason") or "", condition.get("message") or "",
                            condition.get("lastTransitionTime") or "")
    return None


def missing_devices(pod: Pod, devices) -> list[str]:
    """The DRA objects the pod's resource claims lead to that the snapshot does not hold: its claims,
    the device classes of unallocated ones, and any ResourceSlice at all."""
    statuses = {s.get("name"): s.get("resourceClaimName") for s in
                (pod.raw.get("status") or {}).get("resourceClaimStatuses") or () if isinstance(s, Mapping)}
    missing = []
    for pod_claim in pod.spec.get("resourceClaims") or ():
        name = pod_claim.get("resourceClaimName") or statuses.get(pod_claim.get("name"))
        claim = devices.claim(pod.namespace, name) if name and devices is not None else None
        if name and claim is None:
            missing.append(f"ResourceClaim {pod.namespace}/{name}")
        elif claim is not None and claim.allocation is None:
            missing += [f"DeviceClass {r.exactly.device_class}" for r in claim.spec.requests
                        if r.exactly is not None and r.exactly.device_class not in devices.classes]
            if not devices.slices:
                missing.append("ResourceSlices")
    return list(dict.fromkeys(missing))


def missing_storage(pod: Pod, volumes) -> list[str]:
    """The storage objects the pod's volumes lead to that the snapshot does not hold: its claims, the
    volumes they are bound to, the classes of unbound ones (a dump without them misses what the
    scheduler saw)."""
    from kplan.api.storage import claim_names
    missing = []
    for name, _ in claim_names(pod.spec, pod.name):
        claim = volumes.claim(pod.namespace, name)
        if claim is None:
            missing.append(f"PersistentVolumeClaim {pod.namespace}/{name}")
        elif claim.volume_name and claim.volume_name not in volumes.volumes:
            missing.append(f"PersistentVolume {claim.volume_name}")
        elif not claim.volume_name and claim.storage_class and volumes.storage_class(claim.storage_class) is None:
            missing.append(f"StorageClass {claim.storage_class}")
    return missing


NEAREST = 3  # nearest nodes shown per unschedulable pod


def what_would_make_it_fit(planner, result) -> tuple[list, list[str]]:
    """For a pod no node accepts (and preemption cannot help): the nearest nodes with what each
    lacks, and the cluster-wide hints, over the table as the pod's cycle saw it. Nodes outside a
    PreFilterResult (a DaemonSet pod's other nodes) are no way for the pod: they are left out."""
    from kplan.framework.runtime import UNSCHEDULABLE
    if result.outcome != UNSCHEDULABLE:
        return [], []
    return nearest_and_hints(planner.framework_for(result.pod), result.pod, planner.cluster)


def nearest_and_hints(framework, pod, cluster) -> tuple[list, list[str]]:
    """The nearest nodes of a pod no node of the table accepts, with what each lacks, and the hints."""
    from kplan.planning.nearest.hints import hints
    from kplan.planning.nearest.nodes import nearest_nodes
    from kplan.planning.nearest.verdicts import analyze
    verdicts = analyze(framework, pod, cluster)
    return nearest_nodes(framework, pod, cluster, NEAREST, verdicts=verdicts), hints(verdicts)
