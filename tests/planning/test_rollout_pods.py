"""The pods a rollout starts from (kplan.planning.rollout.Running)."""
from builders import pod
from kplan.api.objects import Pod
from kplan.planning.rollout import Running


def test_a_controller_s_pods_are_its_active_ones():
    # controller.IsPodActive: a pod that Succeeded or Failed, or is being deleted, is not one of the
    # controller's pods any more (the rollout neither counts nor deletes it).
    deleting = pod("deleting", node_name="n1", owner_kind="DaemonSet")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    pods = [Pod(p) for p in (pod("running", node_name="n1", owner_kind="DaemonSet"),
                             pod("pending", owner_kind="DaemonSet"),
                             pod("done", node_name="n1", owner_kind="DaemonSet", phase="Succeeded"),
                             pod("failed", node_name="n1", owner_kind="DaemonSet", phase="Failed"), deleting)]
    running = Running({}, pods)
    assert [p.name for p in running.owned("default", "DaemonSet", "owner")] == ["running", "pending"]
