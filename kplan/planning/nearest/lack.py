"""What a rejected node lacks: the Lack and NearNode callers receive, the kinds of lack, and the
wording the lacks and hints share."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kplan.cluster.state import ClusterState
from kplan.framework.status import NodeStatus
from kplan.plugins import (
    inter_pod_affinity, node_affinity, node_name, node_ports, node_resources_fit, node_unschedulable,
    pod_topology_spread, taint_toleration,
)

RESOURCE = "resource"
TAINT = "taint"
NODE_AFFINITY = "node-affinity"
NODE_SELECTOR = "node-selector"
TOPOLOGY_SPREAD = "topology-spread"
POD_AFFINITY = "pod-affinity"
POD_ANTI_AFFINITY = "pod-anti-affinity"
EXISTING_ANTI_AFFINITY = "existing-anti-affinity"
HOST_PORT = "host-port"
UNSCHEDULABLE = "unschedulable"
NODE_NAME = "node-name"
DEVICES = "devices"

_KINDS = {node_resources_fit.NAME: RESOURCE, taint_toleration.NAME: TAINT, node_affinity.NAME: NODE_AFFINITY,
          node_ports.NAME: HOST_PORT, pod_topology_spread.NAME: TOPOLOGY_SPREAD,
          inter_pod_affinity.NAME: POD_AFFINITY, node_unschedulable.NAME: UNSCHEDULABLE, node_name.NAME: NODE_NAME}

MAX_NAMED = 3  # pods or nodes a line names before "and N more"
MAX_DETAIL_PODS = 20  # pods a lack's detail lists (its count says how many there are)


@dataclass
class Lack:
    """One thing a node lacks, for one filter plugin (a plugin may have several kinds, as
    InterPodAffinity's anti-affinity and an existing pod's anti-affinity)."""

    plugin: str  # upstream plugin name, e.g. "NodeResourcesFit"
    kind: str  # RESOURCE, TAINT, ... or the plugin's name in kebab case for other plugins
    text: str  # one readable line: "300m cpu and 1.5Gi memory short"
    detail: dict[str, Any] = field(default_factory=dict)  # machine-readable facts (JSON values only)


@dataclass
class NearNode:
    """A rejected node and everything that rejects it, in profile order."""

    node: str
    lacks: list[Lack]

    @property
    def plugins(self) -> list[str]:
        """The plugins that reject the node, each once, in the order of its lacks."""
        return list(dict.fromkeys(lack.plugin for lack in self.lacks))


def kind_of(plugin: str) -> str:
    return _KINDS.get(plugin) or re.sub(r"(?<!^)(?=[A-Z])", "-", plugin).lower()


def from_reasons(v, plugin: str, i: int, status: NodeStatus) -> list[Lack]:
    """Any plugin without its own analysis: its reasons, and the numbers behind them when it
    explains itself."""
    reasons = status.reasons_of(i)
    detail: dict[str, Any] = {"reasons": reasons}
    if status.explain is not None:
        detail["details"] = list(status.explain(i))
    return [Lack(plugin, kind_of(plugin), "; ".join(reasons) or "rejected", detail)]


# -- wording ---------------------------------------------------------------------------------------


def joined(parts: list[str]) -> str:
    """"a", "a and b", "a, b and c"."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def named(keys: list[str]) -> str:
    """The first MAX_NAMED keys, and how many more."""
    shown = keys[:MAX_NAMED]
    more = len(keys) - len(shown)
    return joined(shown + [f"{more} more"]) if more else joined(shown)


def nodes_phrase(n: int, nodes: np.ndarray, cluster: ClusterState) -> str:
    """"node-b2" for one node, "3 nodes" for more."""
    return cluster.names[int(nodes[0])] if n == 1 else f"{n} nodes"


def by_count(groups: list[tuple[int, str]]) -> list[str]:
    """The texts of (node count, text) groups, the most nodes first."""
    return [text for _, text in sorted(groups, key=lambda g: (-g[0], g[1]))]
