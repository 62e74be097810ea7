"""InterPodAffinity: the pod's affinity terms no pod in a node's domain matches, the pods in the
domain its anti-affinity terms match, and the existing pods whose anti-affinity rejects it there."""
from __future__ import annotations

from typing import Any

import numpy as np

from kplan.cluster.pod_index import REQUIRED_ANTI_AFFINITY, PodIndex
from kplan.cluster.state import ClusterState
from kplan.framework.status import NodeStatus
from kplan.planning.nearest.lack import (
    EXISTING_ANTI_AFFINITY, MAX_DETAIL_PODS, POD_AFFINITY, POD_ANTI_AFFINITY, Lack, from_reasons, named,
)
from kplan.planning.nearest.verdicts import Verdicts
from kplan.plugins import inter_pod_affinity

POD_TERMS = inter_pod_affinity.NAME


def _domain(cluster: ClusterState, key: str, i: int) -> str | None:
    col = cluster.label_column(key)
    return col.values[col.codes[i]] if col.codes[i] >= 0 else None


def _same_domain(cluster: ClusterState, key: str, nodes: np.ndarray, i: int) -> np.ndarray:
    codes = cluster.label_column(key).codes
    return (codes[nodes] == codes[i]) & (codes[i] >= 0)


def _in_domain(v: Verdicts, mask: np.ndarray, key: str, i: int) -> list[str]:
    """The pods of a (size,) mask over the pod index on nodes in node i's domain of key, sorted."""
    index = PodIndex.of(v.cluster)
    slots = np.flatnonzero(mask)
    slots = slots[_same_domain(v.cluster, key, index.node[slots], i)]
    return sorted(index.pods[s].key for s in slots.tolist())



def lacks(v: Verdicts, plugin_name: str, i: int, status: NodeStatus) -> list[Lack]:
    pre = v.state[inter_pod_affinity.PRE_FILTER_STATE_KEY]
    affinity, anti, affinity_counts, anti_counts = pre.affinity, pre.anti, pre.affinity_counts, pre.anti_counts
    self_match = pre.self_match
    cluster = v.cluster
    index = PodIndex.of(cluster)
    plugin = v.framework.plugins.get(POD_TERMS)
    namespaces = inter_pod_affinity._namespace_labels(getattr(plugin, "handle", None))
    out = []
    row = np.array([i])
    if affinity:
        first_of_kind = not affinity_counts.any_positive() and self_match
        missing = []
        for t in affinity:
            value = _domain(cluster, t.topology_key, i)
            if value is None:
                missing.append({"topologyKey": t.topology_key, "selector": str(t.selector), "missingLabel": True})
            elif not first_of_kind and not affinity_counts.at(t.topology_key, row)[0]:
                missing.append({"topologyKey": t.topology_key, "selector": str(t.selector), "domain": value})
        if missing:
            texts = [f"node has no label {m['topologyKey']}" if m.get("missingLabel") else
                     f"no pod matching {m['selector']} in {m['topologyKey']}={m['domain']}" for m in missing]
            out.append(Lack(POD_TERMS, POD_AFFINITY, "; ".join(texts), {"terms": missing}))
    conflicts, keys = [], []
    for k, t in enumerate(anti):
        value = _domain(cluster, t.topology_key, i)
        if value is None or not anti_counts.at(t.topology_key, row)[0]:
            continue
        pods = v.cached(("anti", k, value),
                        lambda t=t: _in_domain(v, index.term_mask(t, namespaces), t.topology_key, i))
        keys += pods
        conflicts.append({"topologyKey": t.topology_key, "domain": value, "selector": str(t.selector),
                          "count": len(pods), "pods": pods[:MAX_DETAIL_PODS]})
    if conflicts:
        keys = sorted(set(keys))
        where = ", ".join(f"{c['topologyKey']}={c['domain']}" for c in conflicts)
        out.append(Lack(POD_TERMS, POD_ANTI_AFFINITY, f"anti-affinity with {named(keys)} ({where})",
                        {"conflicts": conflicts}))
    holders = _existing_anti_affinity(v, index, namespaces, i)
    if holders:
        keys = sorted({h["pod"] for h in holders})
        pods = f"pod{'s' if len(keys) > 1 else ''} {named(keys)}"
        out.append(Lack(POD_TERMS, EXISTING_ANTI_AFFINITY, f"anti-affinity of existing {pods} rejects this pod here",
                        {"conflicts": holders[:MAX_DETAIL_PODS], "count": len(holders)}))
    return out or from_reasons(v, plugin_name, i, status)


def _existing_anti_affinity(v: Verdicts, index: PodIndex, namespaces, i: int) -> list[dict[str, Any]]:
    """The existing pods in node i's domains whose required anti-affinity term matches the pod."""
    table = index.tables()[REQUIRED_ANTI_AFFINITY]
    if not table.terms:
        return []
    pod = v.pod

    def build():
        own = namespaces.get(pod.namespace)
        matched = np.array([t.matches(pod.labels, pod.namespace, own) for t in table.terms], dtype=bool)
        slots, ids = table.arrays()
        keep = matched[ids] & index.alive[slots]
        return slots[keep], ids[keep]
    slots, ids = v.cached("existing", build)
    out = []
    for key in sorted({table.terms[tid].topology_key for tid in np.unique(ids).tolist()}):
        value = _domain(v.cluster, key, i)
        if value is None:
            continue

        def holders(key=key) -> list[str]:
            of_key = np.array([t.topology_key == key for t in table.terms], dtype=bool)
            mine = slots[of_key[ids]]
            return sorted({index.pods[s].key for s in mine[_same_domain(v.cluster, key, index.node[mine], i)].tolist()})
        pods = v.cached(("existing", key, value), holders)
        out += [{"pod": pod, "topologyKey": key, "domain": value} for pod in pods]
    return sorted(out, key=lambda h: (h["pod"], h["topologyKey"]))
