"""Which of a snapshot's pods wait for kube-scheduler (kplan.planning.place.pending_pods)."""
from builders import node, pod
from kplan.planning.place import pending_pods
from kplan.sources.snapshot import Snapshot


def snapshot(*objects):
    s = Snapshot()
    for obj in objects:
        s.add(obj, "test", 1)
    return s.finish()


def test_pending_pods_are_unbound_unfinished_and_not_being_deleted():
    # The scheduler's informer lists pods with status.phase neither Succeeded nor Failed, queues the
    # unassigned ones, and skips a pod being deleted (skipPodSchedule).
    deleting = pod("deleting")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    no_phase = pod("no-phase")
    del no_phase["status"]
    s = snapshot(node("n1"), pod("waiting"), no_phase, pod("done", phase="Succeeded"),
                 pod("crashed", phase="Failed"), deleting, pod("bound", node_name="n1", phase="Pending"),
                 pod("running", node_name="n1"))
    assert [p.name for p in pending_pods(s)] == ["waiting", "no-phase"]
