"""cluster-autoscaler's drainability rules (kplan.planning.drainability), through the whole rule chain.

The local-storage cases are those of cluster-autoscaler's simulator/drainability/rules/localstorage
rule_test.go (a ReplicationController's pod with volume "scratch"); the others follow each rule's
source: the first rule with an outcome decides.
"""
from datetime import datetime, timezone

import pytest

from builders import pdb, pod
from kplan.api.objects import Pod, PodDisruptionBudget
from kplan.planning.disruption_budgets import Budgets
from kplan.planning.drainability import BLOCKED, MOVE, SKIP, STAYS, drainability

NOW = datetime(2020, 12, 18, 17, 0, 0, tzinfo=timezone.utc)
LOCAL = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"
SAFE = "cluster-autoscaler.kubernetes.io/safe-to-evict"


def bar(owner="ReplicationController", namespace="default", annotations=None, volumes=None, **kw):
    raw = pod("bar", namespace, node_name="node", owner_kind=owner, annotations=annotations, labels={"app": "bar"},
              spec={"volumes": volumes} if volumes is not None else None, **kw)
    return raw


def scratch(*names, medium=""):
    return [{"name": n, "emptyDir": {"medium": medium} if medium else {}} for n in names]


def deleted(raw, seconds_ago, grace=None):
    raw["metadata"]["deletionTimestamp"] = datetime.fromtimestamp(NOW.timestamp() - seconds_ago, timezone.utc) \
        .strftime("%Y-%m-%dT%H:%M:%SZ")
    if grace is not None:
        raw["spec"]["terminationGracePeriodSeconds"] = grace
    return raw


CASES = [
    # (id, pod, budgets' disruptionsAllowed for a PDB selecting app=bar (None: no PDB), outcome, rule, reason)
    ("emptyDir", bar(volumes=scratch("scratch")), None, BLOCKED, "LocalStorage", "LocalStorageRequested"),
    ("emptyDir-listed-safe", bar(annotations={LOCAL: "scratch"}, volumes=scratch("scratch")), None, MOVE, "", ""),
    ("emptyDir-empty-annotation", bar(annotations={LOCAL: ""}, volumes=scratch("scratch")), None,
     BLOCKED, "LocalStorage", "LocalStorageRequested"),
    ("emptyDir-non-matching", bar(annotations={LOCAL: "scratch-2"}, volumes=scratch("scratch-1")), None,
     BLOCKED, "LocalStorage", "LocalStorageRequested"),
    ("emptyDir-all-listed", bar(annotations={LOCAL: "scratch-1,scratch-2,scratch-3"},
                                volumes=scratch("scratch-1", "scratch-2", "scratch-3")), None, MOVE, "", ""),
    ("emptyDir-one-not-listed", bar(annotations={LOCAL: "scratch-1,scratch-2,scratch-5"},
                                    volumes=scratch("scratch-1", "scratch-2", "scratch-3")), None,
     BLOCKED, "LocalStorage", "LocalStorageRequested"),
    ("emptyDir-some-listed", bar(annotations={LOCAL: "scratch-1,scratch-2"},
                                 volumes=scratch("scratch-1", "scratch-2", "scratch-3")), None,
     BLOCKED, "LocalStorage", "LocalStorageRequested"),
    ("emptyDir-comma", bar(annotations={LOCAL: ","}, volumes=scratch("scratch-1", "scratch-2")), None,
     BLOCKED, "LocalStorage", "LocalStorageRequested"),
    ("emptyDir-in-memory", bar(volumes=scratch("scratch", medium="Memory")), None, MOVE, "", ""),
    ("hostPath", bar(volumes=[{"name": "logs", "hostPath": {"path": "/var/log"}}]), None,
     BLOCKED, "LocalStorage", "LocalStorageRequested"),
    ("safe-to-evict-without-controller", bar(owner="", annotations={SAFE: "true"}, volumes=scratch("scratch")), None,
     MOVE, "SafeToEvict", ""),
    ("long-terminating-no-grace", deleted(bar(owner="", volumes=scratch("scratch")), 60, grace=0), None,
     MOVE, "LongTerminating", ""),
    ("long-terminating-extended-grace", deleted(bar(owner="", volumes=scratch("scratch")), 720, grace=360), None,
     MOVE, "LongTerminating", ""),
    # Deleted 40s ago with the default 30s grace period: not yet 30s past it.
    ("terminating-recently", deleted(bar(owner=""), 40), None, BLOCKED, "Replicated", "NotReplicated"),
    ("mirror", bar(owner="", annotations={"kubernetes.io/config.mirror": "abc"}), None, SKIP, "Mirror", ""),
    ("daemonset", bar(owner="DaemonSet", volumes=scratch("scratch")), None, STAYS, "DaemonSet", ""),
    ("daemonset-annotation", bar(owner="", annotations={"cluster-autoscaler.kubernetes.io/daemonset-pod": "true"}),
     None, STAYS, "DaemonSet", ""),
    ("no-controller", bar(owner=""), None, BLOCKED, "Replicated", "NotReplicated"),
    ("custom-controller", bar(owner="Rollout"), None, BLOCKED, "Replicated", "NotReplicated"),
    ("job", bar(owner="Job"), None, MOVE, "", ""),
    ("statefulset", bar(owner="StatefulSet"), None, MOVE, "", ""),
    ("kube-system-without-pdb", bar(owner="ReplicaSet", namespace="kube-system"), None,
     BLOCKED, "System", "UnmovableKubeSystemPod"),
    ("kube-system-with-pdb", bar(owner="ReplicaSet", namespace="kube-system"), 1, MOVE, "", ""),
    ("kube-system-safe-to-evict", bar(owner="ReplicaSet", namespace="kube-system", annotations={SAFE: "true"}), None,
     MOVE, "SafeToEvict", ""),
    ("not-safe-to-evict", bar(annotations={SAFE: "false"}), None, BLOCKED, "NotSafeToEvict",
     "NotSafeToEvictAnnotation"),
    ("karpenter-do-not-disrupt", bar(annotations={"karpenter.sh/do-not-disrupt": "true", SAFE: "true"}), None,
     BLOCKED, "DoNotDisrupt", "DoNotDisrupt"),
    ("pdb-exhausted", bar(), 0, BLOCKED, "PDB", "NotEnoughPdb"),
    ("pdb-one-left", bar(), 1, MOVE, "", ""),
    # safe-to-evict "true" answers before the PDB rule is reached.
    ("safe-to-evict-before-pdb", bar(annotations={SAFE: "true"}), 0, MOVE, "SafeToEvict", ""),
]


@pytest.mark.parametrize("raw, allowed, outcome, rule, reason", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rules(raw, allowed, outcome, rule, reason):
    target = Pod(raw)
    pdbs = [] if allowed is None else [PodDisruptionBudget.from_raw(
        pdb("bar", target.namespace, match_labels={"app": "bar"}, status={"disruptionsAllowed": allowed}))]
    verdict = drainability(target, Budgets(pdbs, [target]), NOW)
    assert (verdict.outcome, verdict.rule, verdict.reason) == (outcome, rule, reason)


def test_blocked_messages_are_the_autoscalers():
    budgets = Budgets([], [])
    assert drainability(Pod(bar(owner="")), budgets, NOW).message == "default/bar is not replicated"
    assert drainability(Pod(bar(volumes=scratch("s"))), budgets, NOW).message == "pod with local storage present: bar"
