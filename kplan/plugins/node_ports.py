"""NodePorts: a pod's host ports must not be bound already on the node.

Sidecar (restartable init) containers' host ports count from 1.34 on (kubernetes#132040); older
releases see only the containers' ports, on the incoming pod and on the node alike.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Mapping

import numpy as np

from kplan.api.objects import HostPort, Pod
from kplan.cluster.state import ClusterState
from kplan.framework import versions
from kplan.framework.interfaces import CycleState, Handle, plugin_args
from kplan.framework.status import Code, NodeStatus, Status

NAME = "NodePorts"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
BIND_ALL = "0.0.0.0"


def _sanitize(port: HostPort) -> HostPort:
    """Defaults an empty host IP to 0.0.0.0 and an empty protocol to TCP (HostPortInfo.sanitize)."""
    return replace(port, ip=port.ip or BIND_ALL, protocol=port.protocol or "TCP")


def conflicts(wanted: HostPort, used: HostPort) -> bool:
    """Tells whether binding `wanted` clashes with a bound `used` port (HostPortInfo.CheckConflict).

    Same protocol and port, and either IP is 0.0.0.0 or both IPs are equal.
    """
    wanted, used = _sanitize(wanted), _sanitize(used)
    if wanted.port <= 0 or (wanted.protocol, wanted.port) != (used.protocol, used.port):
        return False
    return wanted.ip == BIND_ALL or used.ip in (BIND_ALL, wanted.ip)


class NodePorts:
    """Rejects nodes where a host port the pod asks for (ip, protocol, port) is already in use."""

    name = NAME

    def __init__(self, args: Mapping | None = None, handle: Handle | None = None):
        plugin_args(args, {}, NAME)
        self.handle = handle

    def _seen(self, ports: Iterable[HostPort]) -> list[HostPort]:
        """Returns the ports this release looks at: before 1.34, not those of sidecar containers."""
        if versions.has(self.handle.kube_version if self.handle else None, versions.SIDECAR_HOST_PORTS):
            return list(ports)
        return [p for p in ports if not p.sidecar]

    def pre_filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> Status | None:
        ports = [_sanitize(p) for p in self._seen(pod.host_ports)]
        if not ports:
            return Status.skip()
        state.write(PRE_FILTER_STATE_KEY, ports)
        return None

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> NodeStatus:
        wanted: list[HostPort] = state.read(PRE_FILTER_STATE_KEY)
        keys = {(p.protocol, p.port) for p in wanted}
        rejected = np.zeros(cluster.n, dtype=bool)
        # Only the (protocol, port) pairs the pod asks for can clash; nodes binding none are skipped.
        for i, used_ports in cluster.used_ports.items():
            for used in self._seen(used_ports):
                used = _sanitize(used)
                if (used.protocol, used.port) in keys and any(conflicts(w, used) for w in wanted):
                    rejected[i] = True
                    break

        def explain(i: int) -> list[str]:
            return [f"{w.protocol}/{w.ip}:{w.port} clashes with {used.protocol}/{used.ip}:{used.port} "
                    f"of pod {other.key}" for w, used, other in self.clashes(wanted, cluster, i)]

        return NodeStatus.reject_where(rejected, Code.UNSCHEDULABLE, ERR_REASON, explain)

    def clashes(self, wanted: list[HostPort], cluster: ClusterState, i: int) -> list[tuple[HostPort, HostPort, Pod]]:
        """Returns node i's clashes with the wanted ports (the PreFilter state): (wanted port, bound
        port, the pod binding it), in the node's pod order."""
        return [(w, used, other) for other in cluster.pods_by_node[i] for used in self._seen(other.host_ports)
                for w in wanted if conflicts(w, used)]
