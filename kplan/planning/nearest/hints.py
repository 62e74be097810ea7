"""Cluster-wide hints that follow from the verdicts on one pod."""
from __future__ import annotations

import numpy as np

from kplan.planning.nearest import host_ports, node_labels, resources, spread, taints
from kplan.planning.nearest.lack import by_count, nodes_phrase
from kplan.planning.nearest.nodes import lacks_of
from kplan.planning.nearest.verdicts import Verdicts
from kplan.planning.volume_hints import volume_hints
from kplan.plugins import node_volume_limits, volume_binding, volume_restrictions, volume_zone

VOLUME_PLUGINS = (volume_restrictions.NAME, node_volume_limits.NAME, volume_binding.NAME, volume_zone.NAME)


def hints(v: Verdicts) -> list[str]:
    """Cluster-wide hints that follow from the verdicts, in a fixed order: the pod rejected before
    any node, requests no node can hold, nodeSelector labels no node has; then, for the nodes one
    change away from fitting, what that change is (uncordon, tolerate a taint, free resources,
    label, free a host port, a larger maxSkew, or the one plugin in the way); else what the nearest
    node lacks."""
    out = [f"{s.plugin} rejects the pod before any node is considered: {s.message}" for s in v.pod_rejections]
    out += resources.too_big(v)
    out += node_labels.unlabelled(v)
    out += volume_hints(v, lambda i: "; ".join(lack.text for lack in lacks_of(v, i) if lack.plugin not in VOLUME_PLUGINS))
    out += (taints.uncordon(v) + taints.tolerate(v) + resources.free_room(v) + node_labels.label(v)
            + host_ports.free_ports(v) + spread.raise_max_skew(v) + _single_others(v))
    rows = v.ranking()
    if not out and len(rows) and not v.feasible.any():
        nearest = int(rows[0])
        out.append(f"the nearest node, {v.cluster.names[nearest]}, lacks: "
                   + "; ".join(f"{lack.text} ({lack.plugin})" for lack in lacks_of(v, nearest)))
    return out


def _single_others(v: Verdicts) -> list[str]:
    """Nodes one other plugin alone rejects: the plugin and its reasons there."""
    covered = {taints.CORDON, taints.TAINTS, resources.FIT, host_ports.PORTS, spread.SPREAD, node_volume_limits.NAME,
               volume_restrictions.NAME}
    if node_labels.labels_would_help(v):
        covered.add(node_labels.AFFINITY)
    pod_wide = {s.plugin for s in v.pod_rejections}
    out = []
    for k, name in enumerate(v.plugins):
        if name in covered or name in pod_wide:
            continue
        only = v.alone(name)
        if name in v.outside:
            only &= ~v.outside[name]  # nodes the pod never asked for (a DaemonSet pod's other nodes)
        if not only.any():
            continue
        nodes = np.flatnonzero(only)
        status = v.statuses.get(name)
        reasons = []
        if status is not None and status.reason_mask is not None:
            hit = status.reason_mask[only].any(axis=0)
            reasons = [r for r, h in zip(status.reasons, hit.tolist()) if h]
        why = f" ({'; '.join(reasons)})" if reasons else ""
        out.append((len(nodes), f"{nodes_phrase(len(nodes), nodes, v.cluster)} {'is' if len(nodes) == 1 else 'are'} "
                                f"rejected by {name} alone{why}"))
    return by_count(out)
