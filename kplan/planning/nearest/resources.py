"""NodeResourcesFit: how much of each resource a node is short of, requests no node can hold, and
how much room freed would let nodes in."""
from __future__ import annotations

from typing import Any

import numpy as np

from kplan.api.resources import PODS, format_amount, readable_amount
from kplan.framework.status import NodeStatus
from kplan.planning.nearest.lack import RESOURCE, Lack, by_count, joined
from kplan.planning.nearest.verdicts import Verdicts
from kplan.plugins import node_resources_fit

FIT = node_resources_fit.NAME


def lacks(v: Verdicts, plugin: str, i: int, status: NodeStatus) -> list[Lack]:
    cluster = v.cluster
    shortfall, request, used, allocatable = {}, {}, {}, {}
    parts, notes, beyond = [], [], []
    if v.pods_short[i]:
        shortfall[PODS] = str(int(v.pods_short[i]))
        count, allowed = int(cluster.pod_count[i]), int(cluster.allowed_pods[i])
        request[PODS], used[PODS], allocatable[PODS] = "1", str(count), str(allowed)
        notes.append(f"no room for another pod ({count}/{allowed} pods)")
    for k in np.flatnonzero(v.shortfall[i] > 0).tolist():
        name = cluster.resources[k]
        wanted, alloc = int(v.request[k]), int(cluster.allocatable[i, k])
        shortfall[name] = format_amount(name, int(v.shortfall[i, k]))
        request[name] = format_amount(name, wanted)
        used[name] = format_amount(name, int(cluster.requested[i, k]))
        allocatable[name] = format_amount(name, alloc)
        if wanted > alloc:  # no room freed on this node can hold it
            beyond.append(name)
            notes.append(f"{name} request {readable_amount(name, wanted)} exceeds its allocatable "
                         f"{readable_amount(name, alloc)}")
        else:
            parts.append(f"{readable_amount(name, int(v.shortfall[i, k]))} {name}")
    text = "; ".join(([f"{joined(parts)} short"] if parts else []) + notes)
    detail: dict[str, Any] = {"shortfall": shortfall, "request": request, "used": used, "allocatable": allocatable}
    if beyond:
        detail["beyondAllocatable"] = beyond
    return [Lack(FIT, RESOURCE, text, detail)]


def too_big(v: Verdicts) -> list[str]:
    """Requests larger than every node's allocatable."""
    if v.request is None or not v.cluster.n:
        return []
    out = []
    fit = v.statuses[FIT]
    checked = set(fit.reasons)
    for k, name in enumerate(v.cluster.resources):
        wanted = int(v.request[k])
        if wanted <= 0 or node_resources_fit.insufficient_reason(name) not in checked:
            continue
        largest = int(v.cluster.allocatable[:, k].max())
        if wanted > largest:
            out.append(f"no node has {readable_amount(name, wanted)} allocatable {name} (the largest has "
                       f"{readable_amount(name, largest)}): resize the request or add a node")
    return out



def free_room(v: Verdicts) -> list[str]:
    """Nodes NodeResourcesFit alone rejects, grouped by what they are short of: how much more free
    room makes the nearest fit, and how much makes every one of them fit."""
    cluster = v.cluster
    only = v.alone(FIT)
    if not only.any():
        return []
    only &= ~v.beyond  # freeing room cannot help there
    if not only.any():
        return []
    short = np.column_stack([v.pods_short > 0, v.shortfall > 0])[only]
    rows = np.flatnonzero(only)
    names = [PODS, *cluster.resources]
    amounts = np.column_stack([v.pods_short, v.shortfall])
    patterns, inverse = np.unique(short, axis=0, return_inverse=True)
    out = []
    for p, pattern in enumerate(patterns):
        nodes = rows[inverse.reshape(-1) == p]
        columns = np.flatnonzero(pattern).tolist()
        nearest = nodes[np.lexsort((cluster.name_array[nodes], v.relative[nodes]))[0]]
        most = amounts[nodes].max(axis=0)

        def room(row) -> str:
            parts = [f"{readable_amount(names[c], int(row[c]))} more {names[c]}" for c in columns if c > 0]
            if pattern[0]:
                parts.append(f"room for {int(row[0])} more pod{'s' if row[0] > 1 else ''}")
            return joined(parts)

        if len(nodes) == 1:
            text = f"{cluster.names[int(nearest)]} would fit with {room(amounts[nearest])} free"
        elif (amounts[nodes] == amounts[nearest]).all():
            text = f"{len(nodes)} nodes would fit with {room(most)} free"
        else:
            text = (f"{len(nodes)} nodes would fit with {room(most)} free; the nearest, "
                    f"{cluster.names[int(nearest)]}, with {room(amounts[nearest])}")
        out.append((len(nodes), text))
    return by_count(out)

