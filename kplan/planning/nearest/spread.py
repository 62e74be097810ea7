"""PodTopologySpread: the skew placing the pod on a node would make per constraint, nodes without a
constraint's topology label, and the smallest maxSkew that would let nodes in."""
from __future__ import annotations

from typing import Any

import numpy as np

from kplan.framework.status import NodeStatus
from kplan.planning.nearest.lack import TOPOLOGY_SPREAD, Lack, by_count, from_reasons, nodes_phrase
from kplan.planning.nearest.verdicts import Verdicts
from kplan.plugins import pod_topology_spread

SPREAD = pod_topology_spread.NAME


def spread_skews(v: Verdicts) -> list[tuple[Any, np.ndarray, np.ndarray]]:
    """Per DoNotSchedule constraint of the PreFilter state: (the spread, whether each node carries
    its topology key, the skew placing the pod on each node would make), as Filter computes it."""
    def build():
        out = []
        state = v.state.get(pod_topology_spread.PRE_FILTER_STATE_KEY)
        for s in state.spreads if state is not None else ():
            col = v.cluster.label_column(s.constraint.topology_key)
            present = col.present
            match = s.counts[np.where(present, col.codes, 0)] if len(s.counts) else np.zeros(v.cluster.n, np.int64)
            out.append((s, present, np.where(present, match, 0) + s.self_match - s.min_match))
        return out
    return v.cached("skews", build)


def lacks(v: Verdicts, plugin: str, i: int, status: NodeStatus) -> list[Lack]:
    texts, constraints = [], []
    for s, present, skew in spread_skews(v):
        c = s.constraint
        if not present[i]:
            texts.append(f"no {c.topology_key} label")
            constraints.append({"topologyKey": c.topology_key, "missingLabel": True, "maxSkew": c.max_skew})
            continue
        if skew[i] <= c.max_skew:
            continue
        col = v.cluster.label_column(c.topology_key)
        code = int(col.codes[i])
        texts.append(f"{c.topology_key}: skew {int(skew[i])} > maxSkew {c.max_skew}")
        constraints.append({"topologyKey": c.topology_key, "domain": col.values[code],
                            "matching": int(s.counts[code]), "minMatching": int(s.min_match),
                            "skew": int(skew[i]), "maxSkew": c.max_skew, "minDomains": c.min_domains,
                            "selector": str(c.selector)})
    if not texts:
        return from_reasons(v, plugin, i, status)
    return [Lack(SPREAD, TOPOLOGY_SPREAD, "; ".join(texts), {"constraints": constraints})]


def raise_max_skew(v: Verdicts) -> list[str]:
    """Nodes PodTopologySpread alone rejects, for one constraint only: those missing its topology
    label, and the smallest maxSkew that would let the nearest of them in."""
    only = v.alone(SPREAD)
    if not only.any():
        return []
    skews = spread_skews(v)
    failing = [~present | (skew > s.constraint.max_skew) for s, present, skew in skews]
    one = np.sum(failing, axis=0) == 1
    out = []
    for (s, present, skew), fails in zip(skews, failing):
        c = s.constraint
        mine = only & one & fails
        missing = np.flatnonzero(mine & ~present)
        if len(missing):
            out.append((len(missing), f"{nodes_phrase(len(missing), missing, v.cluster)} would fit with a "
                                      f"{c.topology_key} label (topology spread needs it)"))
        over = mine & present
        if over.any():
            least = int(skew[over].min())
            nodes = np.flatnonzero(over & (skew == least))
            out.append((len(nodes), f"{nodes_phrase(len(nodes), nodes, v.cluster)} would fit with maxSkew {least} on "
                                    f"{c.topology_key} (now {c.max_skew})"))
    return by_count(out)
