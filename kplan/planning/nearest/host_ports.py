"""NodePorts: the host ports in use on a node, and the nodes that would fit if they were free."""
from __future__ import annotations

import numpy as np

from kplan.framework.status import NodeStatus
from kplan.planning.nearest.lack import HOST_PORT, Lack, from_reasons, joined, nodes_phrase
from kplan.planning.nearest.verdicts import Verdicts
from kplan.plugins import node_ports

PORTS = node_ports.NAME


def lacks(v: Verdicts, plugin_name: str, i: int, status: NodeStatus) -> list[Lack]:
    plugin = v.framework.plugins[PORTS]
    wanted = v.state[node_ports.PRE_FILTER_STATE_KEY]
    clashes = plugin.clashes(wanted, v.cluster, i)
    if not clashes:
        return from_reasons(v, plugin_name, i, status)
    seen, texts, ports = set(), [], []
    for w, used, other in clashes:
        if (w.port, w.protocol, other.key) in seen:
            continue
        seen.add((w.port, w.protocol, other.key))
        texts.append(f"host port {w.port}/{w.protocol} in use by {other.key}")
        ports.append({"port": w.port, "protocol": w.protocol, "hostIP": w.ip, "boundIP": used.ip, "pod": other.key})
    return [Lack(PORTS, HOST_PORT, "; ".join(texts), {"ports": ports})]


def free_ports(v: Verdicts) -> list[str]:
    only = v.alone(PORTS)
    if not only.any():
        return []
    wanted = v.state[node_ports.PRE_FILTER_STATE_KEY]
    ports = sorted({f"{w.port}/{w.protocol}" for w in wanted})
    nodes = np.flatnonzero(only)
    return [f"{nodes_phrase(len(nodes), nodes, v.cluster)} would fit if host port{'s' if len(ports) > 1 else ''} "
            f"{joined(ports)} were free there"]
