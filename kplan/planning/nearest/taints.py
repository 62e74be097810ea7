"""TaintToleration and NodeUnschedulable: the taints a node has that the pod does not tolerate,
cordoned nodes, and the nodes that would fit if uncordoned or if the pod tolerated a taint."""
from __future__ import annotations

import numpy as np

from kplan.api.objects import Taint
from kplan.framework.status import NodeStatus
from kplan.planning.nearest.lack import TAINT, UNSCHEDULABLE, Lack, by_count, joined, named, nodes_phrase
from kplan.planning.nearest.verdicts import Verdicts
from kplan.plugins import node_unschedulable, taint_toleration

TAINTS = taint_toleration.NAME
CORDON = node_unschedulable.NAME


def _format_taint(t: Taint) -> str:
    return f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"


def untolerated_taints(v: Verdicts, taint_set: int) -> tuple[Taint, ...]:
    """The NoSchedule/NoExecute taints of one of the cluster's taint sets the pod does not tolerate
    (every one, where the plugin stops at the first)."""
    def build() -> tuple[Taint, ...]:
        tolerations = v.pod.tolerations
        return tuple(t for t in v.cluster.taint_sets[taint_set] if t.effect in taint_toleration.DO_NOT_SCHEDULE_EFFECTS
                     and not any(tol.tolerates(t) for tol in tolerations))
    return v.cached(("untolerated", taint_set), build)


def lacks(v: Verdicts, plugin: str, i: int, status: NodeStatus) -> list[Lack]:
    taints = untolerated_taints(v, int(v.cluster.taint_set_ids[i]))
    names = [_format_taint(t) for t in taints]
    text = (f"taint {names[0]} not tolerated" if len(names) == 1 else f"taints {joined(names)} not tolerated")
    return [Lack(TAINTS, TAINT, text,
                 {"taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in taints]})]


def cordoned_lacks(v: Verdicts, plugin: str, i: int, status: NodeStatus) -> list[Lack]:
    return [Lack(CORDON, UNSCHEDULABLE, "node is cordoned", {"unschedulable": True})]


def _list_nodes(v: Verdicts, nodes: np.ndarray) -> str:
    return named(sorted(v.cluster.names[i] for i in nodes.tolist()))


def uncordon(v: Verdicts) -> list[str]:
    """Cordoned nodes that would fit once uncordoned: rejected by NodeUnschedulable alone, or also by
    TaintToleration for the node.kubernetes.io/unschedulable taint alone (uncordoning lifts it)."""
    cordoned = v.column(CORDON)
    if not cordoned.any():
        return []
    cluster = v.cluster
    only_taint = np.array([untolerated_taints(v, s) == (node_unschedulable.UNSCHEDULABLE_TAINT,)
                           for s in range(len(cluster.taint_sets))], dtype=bool)
    taint = v.column(TAINTS)
    lifted = cordoned & ((v.failing == 1) | ((v.failing == 2) & taint & only_taint[cluster.taint_set_ids]))
    nodes = np.flatnonzero(lifted)
    if not len(nodes):
        return []
    if len(nodes) == 1:
        return [f"{cluster.names[int(nodes[0])]} would fit if uncordoned"]
    return [f"{len(nodes)} nodes would fit if uncordoned: {_list_nodes(v, nodes)}"]


def tolerate(v: Verdicts) -> list[str]:
    only = v.alone(TAINTS)
    if not only.any():
        return []
    cluster = v.cluster
    per_set = np.bincount(cluster.taint_set_ids[only], minlength=len(cluster.taint_sets))
    groups: dict[tuple[Taint, ...], list[int]] = {}
    for s in np.flatnonzero(per_set).tolist():
        groups.setdefault(untolerated_taints(v, s), []).append(s)
    out = []
    for taints, sets in groups.items():
        nodes = np.flatnonzero(only & np.isin(cluster.taint_set_ids, sets))
        names = joined([_format_taint(t) for t in taints])
        out.append((len(nodes), f"{nodes_phrase(len(nodes), nodes, cluster)} would fit if the pod tolerated {names}"))
    return by_count(out)

