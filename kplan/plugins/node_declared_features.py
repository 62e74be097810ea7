"""NodeDeclaredFeatures: keeps a pod off nodes whose status.declaredFeatures lack a feature its spec
needs (KEP-5328). Beta and in the default profile since v1.36 (kubernetes#136042); in v1.35 its
feature gate is alpha and off, so the plugin does nothing there.

The features a pod needs are those v1.36's feature registry (k8s.io/component-helpers,
nodedeclaredfeatures/features) infers for scheduling. Of its features only two infer anything
from a pod being scheduled; the others (in-place resize of pod-level resources and of init
containers, WebSockets to the kubelet) concern updates of running pods.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from kplan.api.objects import Node, Pod
from kplan.cluster.state import ClusterState
from kplan.errors import InputError
from kplan.framework import versions
from kplan.framework.interfaces import CycleState, Handle, plugin_args
from kplan.framework.status import Code, NodeStatus, Status

NAME = "NodeDeclaredFeatures"
ERR_REASON_UNSATISFIED = "node(s) didn't match Pod's required features"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME

# Declared feature names, as kubelets list them in status.declaredFeatures.
RESTART_ALL_CONTAINERS = "RestartAllContainersOnContainerExits"
USER_NAMESPACES_HOST_NETWORK = "UserNamespacesHostNetworkSupport"


def required_features(pod: Pod) -> frozenset[str]:
    """Returns the declared features a pod needs of its node (InferForPodScheduling):
    RestartAllContainersOnContainerExits for a restart rule with the RestartAllContainers action
    on any container or init container, UserNamespacesHostNetworkSupport for host networking with
    hostUsers false."""
    spec = pod.spec
    needed = set()
    containers = (*(spec.get("containers") or ()), *(spec.get("initContainers") or ()))
    if any(rule.get("action") == "RestartAllContainers" for c in containers for rule in _restart_rules(pod, c)):
        needed.add(RESTART_ALL_CONTAINERS)
    if spec.get("hostNetwork") and spec.get("hostUsers") is False:
        needed.add(USER_NAMESPACES_HOST_NETWORK)
    return frozenset(needed)


def _restart_rules(pod: Pod, container: Mapping) -> list[Mapping]:
    rules = container.get("restartPolicyRules") or []
    if not isinstance(rules, list) or not all(isinstance(rule, Mapping) for rule in rules):
        raise InputError(f"pod {pod.key}: container {container.get('name')!r}: restartPolicyRules must be "
                         f"a list of rules ({{action, exitCodes}})", pod.source)
    return rules


def new(args: Mapping | None = None, handle: Handle | None = None):
    """Builds the plugin as the release would: before v1.36 it joins no extension point, so the
    default profile of those releases runs without it (their gate is off, and upstream adds the
    plugin to the default profile only when it is on)."""
    if versions.has(handle.kube_version if handle else None, versions.NODE_DECLARED_FEATURES):
        return NodeDeclaredFeatures(args, handle)
    return NotInRelease(args)


class NotInRelease:
    """NodeDeclaredFeatures in a release whose feature gate is off: it takes part in nothing."""

    name = NAME

    def __init__(self, args: Mapping | None = None):
        plugin_args(args, {}, NAME)


class NodeDeclaredFeatures:
    """Skips pods that need no declared feature; rejects, UnschedulableAndUnresolvable (no
    preemption can add a feature to a node), every node that does not declare them all."""

    name = NAME

    def __init__(self, args: Mapping | None = None, handle: Handle | None = None):
        plugin_args(args, {}, NAME)
        self.handle = handle
        # The table last filtered and its nodes' declared feature sets, interned: (table, set id
        # per node, the distinct sets). Nodes do not change within a table.
        self._declared: tuple[ClusterState, np.ndarray, list[frozenset[str]]] | None = None

    def pre_filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> Status | None:
        needed = required_features(pod)
        if not needed:
            return Status.skip()
        state.write(PRE_FILTER_STATE_KEY, needed)
        return None

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> NodeStatus:
        needed: frozenset[str] = state.read(PRE_FILTER_STATE_KEY)
        set_ids, declared = self._declared_sets(cluster)
        lacking = np.array([not needed <= features for features in declared], dtype=bool)[set_ids]

        def explain(i: int) -> list[str]:
            missing = needed - declared[set_ids[i]]
            return [f"the pod needs {', '.join(sorted(missing))}, which the node does not declare"] if missing else []

        return NodeStatus.reject_where(lacking, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNSATISFIED, explain)

    def _declared_sets(self, cluster: ClusterState) -> tuple[np.ndarray, list[frozenset[str]]]:
        if self._declared is None or self._declared[0] is not cluster:
            ids: dict[frozenset[str], int] = {}
            set_ids = np.array([ids.setdefault(_declared_features(node), len(ids)) for node in cluster.nodes],
                               dtype=np.intp)
            self._declared = (cluster, set_ids, list(ids))
        return self._declared[1], self._declared[2]


def _declared_features(node: Node) -> frozenset[str]:
    declared = (node.raw.get("status") or {}).get("declaredFeatures") or []
    if not isinstance(declared, list) or not all(isinstance(name, str) for name in declared):
        raise InputError(f"node {node.name}: status.declaredFeatures must be a list of feature names", node.source)
    return frozenset(declared)
