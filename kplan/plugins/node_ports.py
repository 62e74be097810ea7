"""NodePorts: a pod's host ports must not be bound already on the node."""
from __future__ import annotations

from typing import Mapping

import numpy as np

from kplan.api.objects import HostPort, Pod
from kplan.cluster.state import ClusterState
from kplan.framework.interfaces import CycleState, Handle, plugin_args
from kplan.framework.status import Code, NodeStatus, Status

NAME = "NodePorts"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
BIND_ALL = "0.0.0.0"


def _sanitize(port: HostPort) -> HostPort:
    """Defaults an empty host IP to 0.0.0.0 and an empty protocol to TCP (HostPortInfo.sanitize)."""
    return HostPort(port.ip or BIND_ALL, port.protocol or "TCP", port.port)


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

    def pre_filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> Status | None:
        ports = [_sanitize(p) for p in pod.host_ports]
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
            for used in used_ports:
                used = _sanitize(used)
                if (used.protocol, used.port) in keys and any(conflicts(w, used) for w in wanted):
                    rejected[i] = True
                    break

        def explain(i: int) -> list[str]:
            lines = []
            for other in cluster.pods_by_node[i]:
                for used in other.host_ports:
                    for w in wanted:
                        if conflicts(w, used):
                            lines.append(f"{w.protocol}/{w.ip}:{w.port} clashes with {used.protocol}/"
                                         f"{used.ip}:{used.port} of pod {other.key}")
            return lines

        return NodeStatus.reject_where(rejected, Code.UNSCHEDULABLE, ERR_REASON, explain)
