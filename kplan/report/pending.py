"""The PendingReport: the cluster's pending pods, what kube-scheduler would do with each now, and
how that compares with what the cluster last recorded."""
from __future__ import annotations

from typing import Any, Sequence

from kplan.api.objects import Pod
from kplan.cluster.state import ClusterState
from kplan.framework.runtime import NEEDS_PREEMPTION, SCHEDULED, SCHEDULING_GATED, UNSCHEDULABLE, CycleResult
from kplan.planning.pending import Recorded, missing_devices, missing_storage
from kplan.planning.nearest.lack import NearNode
from kplan.report.model import placement
from kplan.report.nearest import nearest_entry
from kplan.report.units import API_VERSION

TOP = 1  # ranked nodes kept per pod (the chosen one): a report on thousands of pods stays small


def pending_entry(result: CycleResult, cluster: ClusterState, recorded: Recorded | None,
                  nearest: Sequence[NearNode] = (), hints: Sequence[str] = ()) -> dict[str, Any]:
    """One pod of the report; call before the pod is assumed onto its node."""
    pod = result.pod
    entry = placement(result, cluster, top=TOP, grouped=True)
    agrees = None
    if recorded is not None and recorded.reason == "Unschedulable":
        agrees = result.outcome != SCHEDULED and recorded.message == result.message
    return {
        "pod": pod.key,
        "priority": pod.priority or 0,
        "created": (pod.raw.get("metadata") or {}).get("creationTimestamp"),
        "gated": result.outcome == SCHEDULING_GATED,
        "gates": list(pod.scheduling_gates),
        "recorded": None if recorded is None else {"reason": recorded.reason, "message": recorded.message,
                                                   "time": recorded.time},
        "placement": entry,
        "agreesWithRecorded": agrees,
        "why": _why_they_differ(result, cluster, recorded, agrees),
        "nearest": [nearest_entry(near) for near in nearest],
        "hints": list(hints),
    }


def _why_they_differ(result: CycleResult, cluster: ClusterState, recorded: Recorded | None,
                     agrees: bool | None) -> str:
    """Says plainly why kplan's answer differs from the one the cluster recorded."""
    if agrees is not False or recorded is None:
        return ""
    missing = missing_storage(result.pod, cluster.volumes)
    if missing:
        return (f"the snapshot lacks what the scheduler saw for this pod: {', '.join(missing)} (take the snapshot "
                "with the storage objects: kplan snapshot reads them)")
    missing = missing_devices(result.pod, cluster.devices)
    if missing:
        return (f"the snapshot lacks what the scheduler saw for this pod: {', '.join(missing)} (take the snapshot "
                "with the resource.k8s.io objects: kplan snapshot reads them)")
    since = f" since {recorded.time}" if recorded.time else ""
    if result.outcome == SCHEDULED:
        return f"the cluster changed{since}: the pod would now be scheduled"
    return f"the cluster changed{since} (nodes, pods or their requests are not what the scheduler saw then)"


def other_scheduler_entry(pod: Pod) -> dict[str, Any]:
    return {"pod": pod.key, "schedulerName": pod.scheduler_name}


def pending_report(entries: list[dict[str, Any]], others: Sequence[Pod], **extra: Any) -> dict[str, Any]:
    """Wraps the pods into the PendingReport object with its summary."""
    outcomes = [e["placement"]["outcome"] for e in entries]
    summary = {"pending": len(entries) + len(others),
               "scheduled": outcomes.count(SCHEDULED),
               "needsPreemption": outcomes.count(NEEDS_PREEMPTION),
               "unschedulable": outcomes.count(UNSCHEDULABLE),
               "gated": outcomes.count(SCHEDULING_GATED),
               "otherScheduler": len(others),
               "agreeWithRecorded": sum(e["agreesWithRecorded"] is True for e in entries),
               "disagreeWithRecorded": sum(e["agreesWithRecorded"] is False for e in entries)}
    return {"apiVersion": API_VERSION, "kind": "PendingReport", **extra, "summary": summary,
            "pods": entries, "otherScheduler": [other_scheduler_entry(p) for p in others]}
