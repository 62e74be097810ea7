"""The rejected nodes nearest to fitting, and what one node lacks, plugin by plugin in profile order."""
from __future__ import annotations

from typing import Callable

import numpy as np

from kplan.api.node_selectors import NAME_FIELD
from kplan.api.objects import Pod
from kplan.cluster.state import ClusterState
from kplan.framework.status import CODE_NAMES, NodeStatus
from kplan.planning.nearest import host_ports, node_labels, pod_terms, resources, spread, taints
from kplan.planning.nearest.lack import DEVICES, NODE_NAME, Lack, NearNode, from_reasons, kind_of
from kplan.planning.nearest.verdicts import Verdicts, analyze
from kplan.plugins import (
    dynamic_resources, node_name, node_volume_limits, volume_binding, volume_restrictions, volume_zone,
)


def nearest_nodes(framework, pod: Pod, cluster: ClusterState, limit: int | None = 3, *,
                  verdicts: Verdicts | None = None) -> list[NearNode]:
    """Returns the rejected nodes nearest to fitting with what each lacks, nearest first (see
    Verdicts.ranking); `limit` 0 or None returns every such node. Nodes outside a PreFilterResult
    (a DaemonSet pod's other nodes) are no way for the pod: they are left out. Pass the `verdicts`
    of an earlier `analyze` to reuse them."""
    v = verdicts if verdicts is not None else analyze(framework, pod, cluster)
    outside = np.zeros(cluster.n, dtype=bool)
    for mask in v.outside.values():
        outside |= mask
    rows = [i for i in v.ranking().tolist() if not outside[i]]
    if limit:
        rows = rows[:limit]
    return [NearNode(cluster.names[i], lacks_of(v, i)) for i in rows]


def lacks_of(v: Verdicts, i: int) -> list[Lack]:
    """Returns everything node i lacks, plugin by plugin in profile order."""
    out: list[Lack] = []
    for k, name in enumerate(v.plugins):
        if not v.rejected[i, k]:
            continue
        pod_wide = next((s for s in v.pod_rejections if s.plugin == name), None)
        if pod_wide is not None:
            out.append(Lack(name, kind_of(name), pod_wide.message,
                            {"preFilter": True, "reasons": list(pod_wide.reasons), "code": CODE_NAMES[pod_wide.code]}))
            continue
        status = v.statuses.get(name)
        lacks = _LACKS.get(name, from_reasons)(v, name, i, status) if status is not None and status.code[i] else []
        if name in v.outside and v.outside[name][i]:
            if lacks:
                for lack in lacks:
                    lack.detail["outsidePreFilterResult"] = True
            else:
                lacks = [_outside(v, i, name)]
        out.extend(lacks)
    return out



def _outside(v: Verdicts, i: int, plugin: str) -> Lack:
    text = (f"not among the nodes the pod's required node affinity names ({NAME_FIELD})"
            if plugin == node_labels.AFFINITY else f"outside the nodes {plugin}'s PreFilter kept")
    return Lack(plugin, kind_of(plugin), text, {"outsidePreFilterResult": True})


def _explained(v: Verdicts, plugin: str, i: int, status: NodeStatus) -> list[Lack]:
    """A plugin whose explanation is the readable line (the volume plugins: which claim, which
    volume, which zone or limit): the explanation, with the reasons in the detail."""
    lines = list(status.explain(i)) if status.explain is not None else []
    reasons = status.reasons_of(i)
    return [Lack(plugin, kind_of(plugin), "; ".join(lines or reasons) or "rejected",
                 {"reasons": reasons, "details": lines})]



def _node_name(v: Verdicts, plugin: str, i: int, status: NodeStatus) -> list[Lack]:
    wanted = v.pod.node_name
    return [Lack(node_name.NAME, NODE_NAME, f"the pod asks for node {wanted}", {"nodeName": wanted})]


def _devices(v: Verdicts, plugin: str, i: int, status: NodeStatus) -> list[Lack]:
    """DynamicResources: per claim request, the devices that match here and how many are free."""
    lines = list(status.explain(i)) if status.explain is not None else []
    return [Lack(plugin, DEVICES, "; ".join(lines) or "; ".join(status.reasons_of(i)),
                 {"reasons": status.reasons_of(i), "details": lines})]


# What a node lacks, per plugin with an analysis of its own; the others: their reasons (from_reasons).
_LACKS: dict[str, Callable[[Verdicts, str, int, NodeStatus], list[Lack]]] = {
    resources.FIT: resources.lacks, taints.TAINTS: taints.lacks, node_labels.AFFINITY: node_labels.lacks,
    spread.SPREAD: spread.lacks, pod_terms.POD_TERMS: pod_terms.lacks, host_ports.PORTS: host_ports.lacks,
    taints.CORDON: taints.cordoned_lacks, node_name.NAME: _node_name, dynamic_resources.NAME: _devices,
    **{p.NAME: _explained for p in (volume_restrictions, node_volume_limits, volume_binding, volume_zone)},
}
