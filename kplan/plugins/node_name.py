"""NodeName: a pod that names its node (spec.nodeName) fits only that node."""
from __future__ import annotations

from typing import Mapping

import numpy as np

from kplan.api.objects import Pod
from kplan.cluster.state import ClusterState
from kplan.framework.interfaces import CycleState, Handle, plugin_args
from kplan.framework.status import Code, NodeStatus

NAME = "NodeName"
ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    """Rejects every node but the one a pod's spec.nodeName names.

    Upstream has no PreFilter here in released versions; master gained one (PR #140000) that
    narrows to spec.nodeName only for pods whose in-place resize is deferred, behind the alpha
    InPlacePodVerticalScalingSchedulerPreemption gate, which kplan does not model.
    """

    name = NAME

    def __init__(self, args: Mapping | None = None, handle: Handle | None = None):
        plugin_args(args, {}, NAME)
        self.handle = handle

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> NodeStatus:
        wanted = pod.node_name
        if not wanted:
            return NodeStatus.passing(cluster.n)
        rejected = np.ones(cluster.n, dtype=bool)
        if wanted in cluster.index:
            rejected[cluster.index[wanted]] = False

        def explain(i: int) -> list[str]:
            return [f"the pod requests node {wanted!r}"] if rejected[i] else []

        return NodeStatus.reject_where(rejected, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON, explain)
