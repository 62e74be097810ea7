"""NodeUnschedulable: keeps pods off cordoned nodes (spec.unschedulable) unless they tolerate it."""
from __future__ import annotations

from typing import Mapping

from kplan.api.objects import Pod, Taint
from kplan.cluster.state import ClusterState
from kplan.framework.interfaces import CycleState, Handle, plugin_args
from kplan.framework.status import Code, NodeStatus

NAME = "NodeUnschedulable"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
# The taint a toleration must cover for the pod to ignore spec.unschedulable (value is empty).
UNSCHEDULABLE_TAINT = Taint(TAINT_NODE_UNSCHEDULABLE, "", "NoSchedule")


class NodeUnschedulable:
    """Rejects unschedulable nodes for pods that do not tolerate node.kubernetes.io/unschedulable:NoSchedule."""

    name = NAME

    def __init__(self, args: Mapping | None = None, handle: Handle | None = None):
        plugin_args(args, {}, NAME)
        self.handle = handle

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> NodeStatus:
        if any(t.tolerates(UNSCHEDULABLE_TAINT) for t in pod.tolerations):
            return NodeStatus.passing(cluster.n)

        def explain(i: int) -> list[str]:
            if not cluster.unschedulable[i]:
                return []
            return [f"spec.unschedulable is true and the pod does not tolerate "
                    f"{TAINT_NODE_UNSCHEDULABLE}:NoSchedule"]

        return NodeStatus.reject_where(cluster.unschedulable.copy(), Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                       ERR_REASON_UNSCHEDULABLE, explain)
