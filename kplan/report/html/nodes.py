"""The nodes section: requests and limits against allocatable per node, before -> after a run.

Built straight from the node table's arrays (one pass per column), so drawing 5,000 nodes costs
little next to the run itself; the ratios are those of the NodeReport (ratios.ratio, 4 digits).
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from kplan.api.resources import CPU, MEMORY
from kplan.cluster.state import ClusterState
from kplan.planning.check import NO_ZONE, ZONE_LABEL
from kplan.report.ratios import DIGITS, NodeTotals, ratio
from kplan.report.units import quantity

RESOURCES = (CPU, MEMORY)
SCALE = 1.5  # a bar's track runs from 0 to 150% of allocatable; the 100% mark sits at two thirds
BUCKETS = 11  # histogram: 0-10%, ..., 90-100%, over 100%


class Bar(NamedTuple):
    """A resource's ratios (None: the node has none of it) and their geometry on a 0-150 track.
    A tuple: templates read its fields thousands of times."""

    req: float | None
    reqAfter: float | None
    lim: float | None
    limAfter: float | None
    w: float  # requests before
    added: float  # requests the run added
    limW: float  # limits after
    over: float  # beyond 100% of allocatable


class NodeRow(NamedTuple):
    name: str
    zone: str
    pods: int
    podsAfter: int
    bars: list[Bar]
    allocatable: list[str]


def node_section(cluster: ClusterState, before: NodeTotals | None = None,
                 rows: np.ndarray | None = None) -> dict[str, Any]:
    """Returns the section's model: per node and per zone the ratios (before and, after a run, after)
    with their bar geometry, and a histogram of the request ratios."""
    rows = np.arange(cluster.n) if rows is None else np.asarray(rows, dtype=np.intp)
    now = NodeTotals.of(cluster)
    base = before.padded(len(cluster.resources)) if before is not None else now
    cols = [cluster.res_index[r] for r in RESOURCES]
    zone_names = _zones(cluster, rows)
    alloc = cluster.allocatable[np.ix_(rows, cols)]
    amounts = {"req": base.requested[np.ix_(rows, cols)], "lim": base.limits[np.ix_(rows, cols)]}
    if before is not None:
        amounts["reqAfter"] = now.requested[np.ix_(rows, cols)]
        amounts["limAfter"] = now.limits[np.ix_(rows, cols)]
    ratios = {key: ratio(value, alloc) for key, value in amounts.items()}
    pods = base.pod_count[rows].tolist()
    pods_after = now.pod_count[rows].tolist()
    nodes = []
    names = cluster.names
    bars = [_bars(ratios, j) for j in range(len(RESOURCES))]
    allocs = [[quantity(r, int(v)) for v in alloc[:, j].tolist()] for j, r in enumerate(RESOURCES)]
    for m, i in enumerate(rows.tolist()):
        nodes.append(NodeRow(names[i], zone_names[m], pods[m], pods_after[m],
                             [bars[j][m] for j in range(len(RESOURCES))],
                             [allocs[j][m] for j in range(len(RESOURCES))]))
    return {"after": before is not None, "resources": list(RESOURCES), "nodes": nodes,
            "zones": _zone_rows(zone_names, alloc, amounts, pods, pods_after, before is not None),
            "histogram": _histogram(ratios["reqAfter" if before is not None else "req"])}


def _zones(cluster: ClusterState, rows: np.ndarray) -> list[str]:
    column = cluster.label_column(ZONE_LABEL)
    codes = column.codes[rows].tolist()
    return [column.values[c] if c >= 0 else NO_ZONE for c in codes]


def _bars(ratios: dict[str, np.ndarray], j: int) -> list[Bar]:
    """One resource's bar per node: request (and what the run added), limit outline, over-commit."""
    req = ratios["req"][:, j].tolist()
    lim = ratios["lim"][:, j].tolist()
    req_after = ratios["reqAfter"][:, j].tolist() if "reqAfter" in ratios else req
    lim_after = ratios["limAfter"][:, j].tolist() if "limAfter" in ratios else lim
    return [bar(*values) for values in zip(req, req_after, lim, lim_after)]


def bar(req: float, req_after: float, lim: float, lim_after: float) -> Bar:
    """A bar's geometry on a 0-150 track (NaN, no allocatable, draws nothing) and its numbers,
    rounded as the NodeReport rounds them."""
    req, req_after, lim, lim_after = (_num(v) for v in (req, req_after, lim, lim_after))

    def x(value: float | None) -> float:
        return 0.0 if value is None else round(min(max(value, 0.0), SCALE) * 100, 1)
    top = max(x(req_after), x(lim_after), x(req), x(lim))
    return Bar(req, req_after, lim, lim_after, x(req), round(max(x(req_after) - x(req), 0.0), 1), x(lim_after),
               round(max(top - 100.0, 0.0), 1))


def _num(value: float) -> float | None:
    return None if value != value else round(value, DIGITS)


def _zone_rows(zone_names: list[str], alloc: np.ndarray, amounts: dict[str, np.ndarray], pods: list[int],
               pods_after: list[int], after: bool) -> list[dict[str, Any]]:
    """Per zone: node and pod counts and the zone's summed requests and limits over its allocatable."""
    names, which = np.unique(np.array(zone_names, dtype=object), return_inverse=True) if zone_names else ([], [])
    out = []
    for g, zone in enumerate(list(names)):
        mask = which == g
        total = alloc[mask].sum(axis=0)
        sums = {key: ratio(value[mask].sum(axis=0), total) for key, value in amounts.items()}
        bars = []
        for j in range(len(RESOURCES)):
            req, lim = float(sums["req"][j]), float(sums["lim"][j])
            bars.append(bar(req, float(sums["reqAfter"][j]) if after else req,
                            lim, float(sums["limAfter"][j]) if after else lim))
        out.append({"zone": zone, "nodes": int(mask.sum()), "pods": int(np.array(pods)[mask].sum()),
                    "podsAfter": int(np.array(pods_after)[mask].sum()), "bars": bars})
    return out


def _histogram(requests: np.ndarray) -> list[dict[str, Any]]:
    """Per resource, how many nodes have their requests in each tenth of allocatable (last: over 100%)."""
    out = []
    for j, resource in enumerate(RESOURCES):
        values = requests[:, j]
        values = values[~np.isnan(values)]
        # Tenths of allocatable; exactly 100% is still the last tenth, anything beyond it is over.
        bucket = np.where(values > 1.0, BUCKETS - 1, np.minimum((values * 10).astype(np.int64), BUCKETS - 2))
        counts = np.bincount(bucket, minlength=BUCKETS).tolist()
        labels = [f"{k * 10}–{k * 10 + 10}%" for k in range(BUCKETS - 1)] + ["over 100%"]
        top = max(counts) or 1
        out.append({"resource": resource, "rows": [
            {"label": label, "count": c, "w": round(c / top * 100, 1), "over": k == BUCKETS - 1,
             "hover": f"{c} node(s) with {resource} requests at {label} of allocatable"}
            for k, (label, c) in enumerate(zip(labels, counts))]})
    return out
