"""What scale-down does with each pod of a node it considers removing: move it, leave it, or stop.

cluster-autoscaler's drainability rules, release 1.34 (simulator/drainability/rules: rules.Default
with the default NodeDeleteOptions, --skip-nodes-with-system-pods, --skip-nodes-with-local-storage
and --skip-nodes-with-custom-controller-pods all true), tried in its order; the first rule with an
outcome decides the pod:

    Mirror           static pod: neither moved nor in the way            (skip)
    LongTerminating  deleted longer ago than its grace period + 30s      (moved)
    DaemonSet        DaemonSet pod: goes with the node                   (stays)
    SafeToEvict      annotated safe-to-evict "true"                      (moved)
    Replicated       no controller, or one that is not a ReplicaSet, StatefulSet, Job or
                     ReplicationController                               NotReplicated
    System           kube-system pod no PodDisruptionBudget selects      UnmovableKubeSystemPod
    NotSafeToEvict   annotated safe-to-evict "false"                     NotSafeToEvictAnnotation
    LocalStorage     hostPath or a disk-backed emptyDir not listed in safe-to-evict-local-volumes
                                                                         LocalStorageRequested
    PDB              a PodDisruptionBudget of the pod has no disruption left        NotEnoughPdb

The ReplicaCount rule, which looks the controller up (and its replicas against
--min-replica-count, default 0), needs the controllers' replicas, which snapshots do not keep: it
is not applied. Karpenter's own rule, its `karpenter.sh/do-not-disrupt: "true"` annotation on a
pod, is tried after the DaemonSet rule (rule DoNotDisrupt).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from kplan.api.node_metric import parse_time
from kplan.api.objects import Pod
from kplan.planning.disruption_budgets import Budget, Budgets

AUTOSCALER = "cluster-autoscaler 1.34"
RULES = "simulator/drainability/rules"
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
SAFE_TO_EVICT_LOCAL_VOLUMES = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"
DAEMONSET_POD = "cluster-autoscaler.kubernetes.io/daemonset-pod"
MIRROR = "kubernetes.io/config.mirror"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
REPLICATED_KINDS = ("ReplicationController", "Job", "ReplicaSet", "StatefulSet")
SYSTEM_NAMESPACE = "kube-system"
LONG_TERMINATING_EXTRA = timedelta(seconds=30)  # drain.PodLongTerminatingExtraThreshold
DEFAULT_GRACE_SECONDS = 30  # v1.DefaultTerminationGracePeriodSeconds

SKIP, STAYS, MOVE, BLOCKED = "skip", "stays", "move", "blocked"


@dataclass(frozen=True)
class Verdict:
    """A rule's outcome for one pod; a blocked pod carries the upstream reason and message."""

    outcome: str  # SKIP, STAYS, MOVE or BLOCKED
    rule: str  # the rule that decided, as upstream names it ("" when none did: the pod moves)
    reason: str = ""  # drain.BlockingPodReason (NotReplicated, ...) or Karpenter's DoNotDisrupt
    message: str = ""
    source: str = ""  # where the rule lives upstream
    budget: Budget | None = None  # NotEnoughPdb: the budget with no disruption left


def _rule(name: str) -> str:
    return f"{AUTOSCALER} {RULES}/{name.lower()}"


def is_daemonset_pod(pod: Pod) -> bool:
    """pod_util.IsDaemonSetPod: controlled by a DaemonSet, or annotated as one for the autoscaler."""
    return pod.owner_kind == "DaemonSet" or pod.annotations.get(DAEMONSET_POD) == "true"


def is_mirror_pod(pod: Pod) -> bool:
    return MIRROR in pod.annotations


def is_long_terminating(pod: Pod, now: datetime) -> bool:
    """drain.IsPodLongTerminating: deleted longer ago than its grace period and 30 seconds more."""
    deleted = (pod.raw.get("metadata") or {}).get("deletionTimestamp")
    if not deleted:
        return False
    try:
        since = parse_time(deleted)
    except ValueError:
        return False
    grace = pod.spec.get("terminationGracePeriodSeconds")
    grace = grace if isinstance(grace, int) and not isinstance(grace, bool) else DEFAULT_GRACE_SECONDS
    return since + timedelta(seconds=grace) + LONG_TERMINATING_EXTRA < now


def has_blocking_local_storage(pod: Pod) -> bool:
    """drain.HasBlockingLocalStorage: a hostPath or non-memory emptyDir volume not listed as safe to evict."""
    safe = set((pod.annotations.get(SAFE_TO_EVICT_LOCAL_VOLUMES) or "").split(","))
    for volume in pod.spec.get("volumes") or ():
        if not isinstance(volume, dict) or volume.get("name") in safe:
            continue
        empty_dir = volume.get("emptyDir")
        if "hostPath" in volume or (empty_dir is not None and (empty_dir or {}).get("medium") != "Memory"):
            return True
    return False


def drainability(pod: Pod, budgets: Budgets, now: datetime) -> Verdict:
    """The first rule's outcome for the pod (the budgets as they are left at this step of the plan)."""
    if is_mirror_pod(pod):
        return Verdict(SKIP, "Mirror")
    if is_long_terminating(pod, now):
        return Verdict(MOVE, "LongTerminating")
    if is_daemonset_pod(pod):
        return Verdict(STAYS, "DaemonSet")
    if pod.annotations.get(DO_NOT_DISRUPT) == "true":
        return Verdict(BLOCKED, "DoNotDisrupt", "DoNotDisrupt",
                       f'pod {pod.key} has the "{DO_NOT_DISRUPT}: true" annotation',
                       f"Karpenter: {DO_NOT_DISRUPT} on a pod blocks consolidation of its node")
    if pod.annotations.get(SAFE_TO_EVICT) == "true":
        return Verdict(MOVE, "SafeToEvict")
    if pod.owner_kind not in REPLICATED_KINDS:
        return Verdict(BLOCKED, "Replicated", "NotReplicated", f"{pod.key} is not replicated", _rule("Replicated"))
    if pod.namespace == SYSTEM_NAMESPACE and not budgets.matching(pod):
        return Verdict(BLOCKED, "System", "UnmovableKubeSystemPod",
                       f"non-daemonset, non-mirrored, non-pdb-assigned kube-system pod present: {pod.name}",
                       _rule("System"))
    if pod.annotations.get(SAFE_TO_EVICT) == "false":
        return Verdict(BLOCKED, "NotSafeToEvict", "NotSafeToEvictAnnotation",
                       f"pod annotated as not safe to evict present: {pod.name}", _rule("NotSafeToEvict"))
    if has_blocking_local_storage(pod):
        return Verdict(BLOCKED, "LocalStorage", "LocalStorageRequested",
                       f"pod with local storage present: {pod.name}", _rule("LocalStorage"))
    short = budgets.short(pod)
    if short is not None:
        return Verdict(BLOCKED, "PDB", "NotEnoughPdb", f"not enough pod disruption budget to move {pod.key}",
                       _rule("PDB"), short)
    return Verdict(MOVE, "")
