"""The nodes section: requests and limits against allocatable per node, before -> after a run.

Built straight from the node table's arrays (one pass per column), so drawing 5,000 nodes costs
little next to the run itself; the ratios are those of the NodeReport (ratios.ratio, 4 digits).
"""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np
from markupsafe import Markup, escape

from kplan.api.resources import CPU, MEMORY
from kplan.cluster.state import ClusterState
from kplan.planning.check import ZONE_LABEL
from kplan.report.node_columns import (
    NO_GROUP, group_names, kubectl_status, label_header, taint_entry, taints_text,
)
from kplan.report.html.page import percent
from kplan.report.ratios import DIGITS, NodeTotals, csi_volumes_of, device_counts, ratio
from kplan.report.units import column_unit

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
    status: str  # as `kubectl get nodes` prints it
    zone: str
    taints: str  # key=value:Effect, comma-separated ("" for none)
    pods: int
    podsAfter: int
    bars: list[Bar]
    allocatable: list[str]  # readable, one unit per resource over the table ("15.8 cores", "62.5Gi")
    csi: str  # attached CSI volumes over each driver's limit, "ebs.csi.aws.com 25/25" ("" for none)
    labels: list[str]  # the values of the label columns ("" where the node has none)


def node_section(cluster: ClusterState, before: NodeTotals | None = None, rows: np.ndarray | None = None, *,
                 label_columns: Sequence[str] = (), group_by: str = ZONE_LABEL) -> dict[str, Any]:
    """Returns the section's model: per node its state and the ratios (before and, after a run, after)
    with their bar geometry, the same summed per value of `group_by` (the zone by default), and a
    histogram of the request ratios."""
    rows = np.arange(cluster.n) if rows is None else np.asarray(rows, dtype=np.intp)
    now = NodeTotals.of(cluster)
    base = before.padded(len(cluster.resources)) if before is not None else now
    cols = [cluster.res_index[r] for r in RESOURCES]
    zone_names = group_names(cluster, rows, ZONE_LABEL)
    alloc = cluster.allocatable[np.ix_(rows, cols)]
    amounts = {"req": base.requested[np.ix_(rows, cols)], "lim": base.limits[np.ix_(rows, cols)]}
    if before is not None:
        amounts["reqAfter"] = now.requested[np.ix_(rows, cols)]
        amounts["limAfter"] = now.limits[np.ix_(rows, cols)]
    ratios = {key: ratio(value, alloc) for key, value in amounts.items()}
    pods, pods_after = base.pod_count[rows], now.pod_count[rows]
    names, nodes_of = cluster.names, cluster.nodes
    bars = drawn_bars(ratios)
    units = [column_unit(r, alloc[:, j].tolist(), cores=True) for j, r in enumerate(RESOURCES)]
    allocs = [[unit(v) for v in alloc[:, j].tolist()] for j, unit in enumerate(units)]
    csi = cluster.volumes.csi_volumes() if cluster.volumes is not None else {}
    nodes = [NodeRow(names[i], kubectl_status(nodes_of[i]), zone_names[m],
                     taints_text([taint_entry(t) for t in nodes_of[i].taints]), count, count_after,
                     [per_resource[m] for per_resource in bars],
                     [per_resource[m] for per_resource in allocs], _csi_text(csi_volumes_of(csi, i)),
                     [nodes_of[i].labels.get(key, "") for key in label_columns])
             for m, (i, count, count_after) in enumerate(zip(rows.tolist(), pods.tolist(), pods_after.tolist()))]
    groups = zone_names if group_by == ZONE_LABEL else group_names(cluster, rows, group_by)
    with_csi, with_taints = any(n.csi for n in nodes), any(n.taints for n in nodes)
    return {"after": before is not None, "resources": list(RESOURCES),
            "rows": [_row_html(n, before is not None, with_taints, with_csi) for n in nodes],
            "csi": with_csi, "taints": with_taints,
            "labelColumns": [{"key": key, "header": label_header(key)} for key in label_columns],
            "zones": sorted(set(zone_names), key=lambda z: (z == NO_GROUP, z)),
            "groupBy": group_by, "groupHeader": "Zone" if group_by == ZONE_LABEL else group_by,
            "groups": _group_rows(groups, alloc, amounts, pods, pods_after, before is not None),
            "histogram": _histogram(ratios["reqAfter" if before is not None else "req"]),
            "devices": _device_rows(cluster, rows)}


def _row_html(n: NodeRow, after: bool, with_taints: bool, with_csi: bool) -> str:
    """One node's row of the per-node table. Written here rather than in the template: a page has a
    row per node, and a template loop over 5,000 of them costs more than the rest of the page."""
    name, zone = escape(n.name), escape(n.zone)
    status = "" if n.status == "Ready" else (" warn" if n.status.startswith("Ready") else " bad")
    cells = [f'<tr data-node="{name}" data-zone="{zone}"><td>{name}</td><td class="status{status}">'
             f'{n.status.replace(",", ",<wbr>")}</td><td>{zone}</td>']
    if with_taints:
        cells.append(f'<td class="taints">{escape(n.taints)}</td>')
    moved = f"{n.pods}→" if after and n.podsAfter != n.pods else ""
    cells.append(f'<td class="num" data-v="{n.podsAfter}">{moved}{n.podsAfter}</td>')
    for resource, b, allocatable in zip(RESOURCES, n.bars, n.allocatable):
        cells.append(_bar_cell(resource, b, after) + f'<td class="num">{allocatable}</td>')
    if with_csi:
        cells.append(f"<td>{escape(n.csi)}</td>")
    cells.extend(f"<td>{escape(value)}</td>" for value in n.labels)
    cells.append("</tr>")
    return "".join(cells)


def _bar_cell(resource: str, b: Bar, after: bool) -> str:
    """A resource's cell of a node's row: its bar and its ratios."""
    return (f'<td data-resource="{resource}" data-v="{"" if b.reqAfter is None else b.reqAfter}" '
            f'data-limit="{"" if b.limAfter is None else b.limAfter}">{_usage(b, after)}</td>')


def _usage(b: Bar, after: bool) -> str:
    """The bar (requests, what the run added, the limit outline, the over-commit, the 100% mark) and
    the ratios as text ("45%→52% / 80%"), for node and group rows alike."""
    added = f'<rect class="added" x="{b.w}" width="{b.added}" height="10"/>' if b.added else ""
    over = f'<rect class="over" x="100" y="7" width="{b.over}" height="3"/>' if b.over else ""
    requests = f"{percent(b.req)}→{percent(b.reqAfter)}" if after and b.reqAfter != b.req else percent(b.reqAfter)
    limits = f"{percent(b.lim)}→{percent(b.limAfter)}" if after and b.limAfter != b.lim else percent(b.limAfter)
    return (f'<svg class="bar" viewBox="0 0 150 10" preserveAspectRatio="none" aria-hidden="true">'
            f'<rect class="track" width="150" height="10"/><rect class="req" width="{b.w}" height="10"/>{added}{over}'
            f'<rect class="lim" x="0.6" y="0.6" width="{b.limW - 1.2 if b.limW > 1.2 else 0}" height="8.8"/>'
            f'<line class="mark" x1="100" x2="100" y1="-2" y2="12"/></svg>{requests} / {limits}')


def _device_rows(cluster: ClusterState, rows: np.ndarray) -> list[dict[str, Any]]:
    """DRA devices per node and driver, as the run leaves them: allocated, free and total."""
    out = []
    for driver, (total, used) in device_counts(cluster).items():
        for i in rows[total[rows] > 0].tolist():
            out.append({"node": cluster.names[i], "driver": driver, "allocated": int(used[i]),
                        "free": int(total[i] - used[i]), "total": int(total[i])})
    return sorted(out, key=lambda r: (r["node"], r["driver"]))


def _csi_text(volumes: dict[str, dict[str, int | None]]) -> str:
    return ", ".join(f"{d} {v['attached']}/{v['limit'] if v['limit'] is not None else '-'}"
                     for d, v in sorted(volumes.items()))


def drawn_bars(ratios: dict[str, np.ndarray]) -> list[list[Bar]]:
    """Per resource (column), a bar per row on a 0-150 track: requests (and what a run added, with
    `reqAfter`), the limit outline, the over-commit. NaN (no allocatable) draws nothing. The ratios
    are rounded as the NodeReport rounds them (Python's round: see python_round), and the geometry
    is computed from them column-wise."""
    keys = ("req", "reqAfter", "lim", "limAfter") if "reqAfter" in ratios else ("req", "req", "lim", "lim")
    out = []
    for j in range(ratios["req"].shape[1]):
        rounded = {key: python_round(ratios[key][:, j], DIGITS) for key in set(keys)}
        numbers = [_with_none(rounded[key]) for key in keys]
        req, req_after, lim, lim_after = (np.clip(np.nan_to_num(rounded[key], nan=0.0), 0.0, SCALE) * 100
                                          for key in keys)
        top = np.maximum.reduce([req, req_after, lim, lim_after])
        geometry = [_tenths(req), _tenths(np.maximum(python_round(req_after, 1) - python_round(req, 1), 0.0)),
                    _tenths(lim_after), _tenths(np.maximum(python_round(top, 1) - 100.0, 0.0))]
        out.append([Bar(*row) for row in zip(*numbers, *geometry)])
    return out


def python_round(values: np.ndarray, digits: int) -> np.ndarray:
    """round(v, digits) of each value as Python rounds it (the decimal nearest the value's exact
    binary value). numpy's round scales, rounds and divides back, which gives the same float except
    where the scaled value lies within its rounding error (a few units in the last place) of a
    half-way point: those few are rounded by Python."""
    values = np.asarray(values, dtype=np.float64)
    out = np.round(values, digits)
    scaled = values * 10.0 ** digits
    near_half = np.abs(scaled - np.floor(scaled) - 0.5) < 1e-6 + np.abs(scaled) * 1e-15
    for k in np.flatnonzero(near_half).tolist():
        out[k] = round(float(values[k]), digits)
    return out


def _tenths(values: np.ndarray) -> list[float]:
    return python_round(values, 1).tolist()


def _with_none(values: np.ndarray) -> list[float | None]:
    """The values as a list, None for NaN."""
    out = values.tolist()
    for k in np.flatnonzero(np.isnan(values)).tolist():
        out[k] = None
    return out


def _group_rows(group_names: list[str], alloc: np.ndarray, amounts: dict[str, np.ndarray], pods: np.ndarray,
                pods_after: np.ndarray, after: bool) -> list[dict[str, Any]]:
    """Per group (by name, nodes without the label last): node and pod counts, the allocatable and the
    requests and limits summed (readable, one unit per resource), and their ratios as bars (`usage`:
    drawn as the node rows draw them)."""
    if not group_names:
        return []
    groups, which = np.unique(np.array(group_names, dtype=object), return_inverse=True)

    def per_group(values: np.ndarray) -> np.ndarray:
        sums = np.zeros((len(groups), *values.shape[1:]), dtype=values.dtype)
        np.add.at(sums, which, values)
        return sums
    total = per_group(alloc)
    summed = {key: per_group(value) for key, value in amounts.items()}
    bars = drawn_bars({key: ratio(value, total) for key, value in summed.items()})
    req, lim = summed.get("reqAfter", summed["req"]), summed.get("limAfter", summed["lim"])
    texts = []
    for j, r in enumerate(RESOURCES):
        unit = column_unit(r, [*total[:, j].tolist(), *req[:, j].tolist(), *lim[:, j].tolist()], cores=True)
        texts.append([(unit(int(a)), unit(int(q)), unit(int(li)))
                      for a, q, li in zip(total[:, j].tolist(), req[:, j].tolist(), lim[:, j].tolist())])
    nodes, counts, counts_after = (per_group(v).tolist() for v in (np.ones(len(which), np.int64), pods, pods_after))
    order = sorted(range(len(groups)), key=lambda g: (groups[g] == NO_GROUP, groups[g]))
    return [{"zone": groups[g], "nodes": nodes[g], "pods": counts[g], "podsAfter": counts_after[g],
             "bars": [per_resource[g] for per_resource in bars],
             "usage": [Markup(_usage(per_resource[g], after)) for per_resource in bars],
             "amounts": [{"allocatable": t[g][0], "requests": t[g][1], "limits": t[g][2]} for t in texts]}
            for g in order]


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
