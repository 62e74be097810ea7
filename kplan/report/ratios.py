"""Requests and limits over allocatable per node: the `ratios` objects of the JSON contract.

`kplan place` adds `ratios` to each ranked node (before -> after the pod lands there) and
`kplan nodes` reports every node's allocatable, requests, limits, their ratios, the configured
limit-to-allocatable ratio (koordinator LimitAware's node annotation or args) and the headroom
under it. Limits are ClusterState.allocated_limits: per container its limit, or its request
where it sets no limit (as LimitAware counts them). Everything is computed over node arrays.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from kplan.api.objects import Pod
from kplan.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY
from kplan.cluster.state import ClusterState
from kplan.framework.resource_scoring import is_scalar_resource
from kplan.planning.check import ZONE_LABEL
from kplan.plugins.limit_aware import ANNOTATION, LimitCapacity
from kplan.report.node_columns import NO_GROUP, group_names, kubectl_status, taint_entry
from kplan.report.units import API_VERSION, quantity

QOS_CLASSES = ("Guaranteed", "Burstable", "BestEffort")
DIGITS = 4


def ratio(amount: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
    """Returns amount / allocatable as floats; NaN where allocatable is 0."""
    amount = np.asarray(amount, dtype=np.float64)
    allocatable = np.asarray(allocatable, dtype=np.float64)
    return np.divide(amount, allocatable, out=np.full(amount.shape, np.nan), where=allocatable > 0)


def _num(x: float) -> float | None:
    return None if np.isnan(x) else round(float(x), DIGITS)


# -- kplan place ------------------------------------------------------------------------------------

def placement_ratios(cluster: ClusterState, nodes: np.ndarray, pod: Pod) -> list[dict[str, Any]]:
    """Returns, per node, {resource: {request, requestAfter, limit, limitAfter}} if the pod landed there.

    Resources: cpu, memory and each extended resource the pod asks for. Call before the pod is
    assumed onto its node; ratios are null where the node has none of the resource.
    """
    nodes = np.asarray(nodes, dtype=np.intp)
    requests, limits = pod.requests, pod.max_limits
    extra = sorted(r for r in (*requests, *limits) if is_scalar_resource(r) and r in cluster.res_index)
    keys = ("request", "requestAfter", "limit", "limitAfter")
    resources = list(dict.fromkeys((CPU, MEMORY, *extra)))
    if len(nodes) <= FEW_NODES:
        return [_node_ratios(cluster, i, resources, requests, limits) for i in nodes.tolist()]
    amounts, allocatable = [], []
    for r in resources:
        k = cluster.res_index[r]
        req, lim = cluster.requested[nodes, k], cluster.allocated_limits[nodes, k]
        amounts += [req, req + requests.get(r, 0), lim, lim + limits.get(r, 0)]
        allocatable += [cluster.allocatable[nodes, k]] * len(keys)
    # Every ratio of every node in one division and one rounding: a report on thousands of pods asks often.
    values = _nums(ratio(np.array(amounts), np.array(allocatable)))
    per_resource = [(r, [dict(zip(keys, v)) for v in zip(*values[len(keys) * j:len(keys) * (j + 1)])])
                    for j, r in enumerate(resources)]
    return [{r: rows[m] for r, rows in per_resource} for m in range(len(nodes))]


FEW_NODES = 8  # up to this many nodes, Python floats: numpy's cost per call would outweigh the arithmetic


def _node_ratios(cluster: ClusterState, i: int, resources: Sequence[str], requests: Mapping[str, int],
                 limits: Mapping[str, int]) -> dict[str, Any]:
    """placement_ratios of one node, each ratio computed as the array path computes it."""
    out = {}
    for r in resources:
        k = cluster.res_index[r]
        req, lim, allocatable = (int(cluster.requested[i, k]), int(cluster.allocated_limits[i, k]),
                                 int(cluster.allocatable[i, k]))
        out[r] = {"request": rounded_ratio(req, allocatable),
                  "requestAfter": rounded_ratio(req + requests.get(r, 0), allocatable),
                  "limit": rounded_ratio(lim, allocatable),
                  "limitAfter": rounded_ratio(lim + limits.get(r, 0), allocatable)}
    return out


_SCALE = 10.0 ** DIGITS


def rounded_ratio(amount: int, allocatable: int) -> float | None:
    """One ratio as ratio() and _nums compute it over arrays: a float64 division, then numpy's
    rounding to DIGITS (scaled, rounded half to even, scaled back); None without allocatable."""
    if allocatable <= 0:
        return None
    return round(float(amount) / float(allocatable) * _SCALE) / _SCALE


def _nums(values: np.ndarray) -> list[list[float | None]]:
    """Rounds rows of ratios for the report; NaN (no allocatable) becomes None."""
    return [[None if v != v else v for v in row] for row in np.round(values, DIGITS).tolist()]


# -- kplan nodes ------------------------------------------------------------------------------------

@dataclass
class NodeTotals:
    """Snapshot of the per-node amounts the node report compares (copied, so a later placement
    does not change them)."""

    requested: np.ndarray
    limits: np.ndarray
    pod_count: np.ndarray

    @classmethod
    def of(cls, cluster: ClusterState) -> "NodeTotals":
        return cls(cluster.requested.copy(), cluster.allocated_limits.copy(), cluster.pod_count.copy())

    def padded(self, width: int) -> "NodeTotals":
        """Returns the totals with zero columns for resources the table gained since (ensure_resources)."""
        pad = ((0, 0), (0, width - self.requested.shape[1]))
        return NodeTotals(np.pad(self.requested, pad), np.pad(self.limits, pad), self.pod_count)


def report_resources(cluster: ClusterState, capacity: LimitCapacity, rows: np.ndarray) -> list[str]:
    """Returns cpu, memory, the extended resources some selected node offers, and
    ephemeral-storage when a node's limit-to-allocatable ratio names it."""
    out = [CPU, MEMORY]
    k = cluster.res_index[EPHEMERAL_STORAGE]
    if len(rows) and capacity.configured[rows, k].any():
        out.append(EPHEMERAL_STORAGE)
    for r in cluster.resources:
        if is_scalar_resource(r) and len(rows) and (cluster.allocatable[rows, cluster.res_index[r]] > 0).any():
            out.append(r)
    return out


def qos_counts(cluster: ClusterState) -> np.ndarray:
    """Returns (N, 3) counts of Guaranteed, Burstable and BestEffort pods per node."""
    out = np.zeros((cluster.n, len(QOS_CLASSES)), dtype=np.int64)
    code = {q: j for j, q in enumerate(QOS_CLASSES)}
    rows, cols = [], []
    by_container: dict[Any, int] = {}  # a one-container pod's class depends on that (shared) container only
    for i, pods in enumerate(cluster.pods_by_node):
        for p in pods:
            single = p._single_container
            if single is None:
                q = code[p.qos_class]
            elif (q := by_container.get(single)) is None:
                q = by_container[single] = code[p.qos_class]
            rows.append(i)
            cols.append(q)
    if rows:
        np.add.at(out, (np.array(rows, dtype=np.intp), np.array(cols, dtype=np.intp)), 1)
    return out


def _map(resources: Sequence[str], values: np.ndarray) -> dict[str, str]:
    return {r: quantity(r, int(v)) for r, v in zip(resources, values)}


def node_report(cluster: ClusterState, capacity: LimitCapacity, rows: np.ndarray, *,
                before: NodeTotals | None = None, placed: Sequence[dict[str, Any]] = (),
                label_columns: Sequence[str] = (), group_by: str | None = None) -> dict[str, Any]:
    """Builds the NodeReport for the nodes at `rows` (in that order).

    With `before` (the amounts before some pods were placed), each resource's ratios describe
    the state before and add requestAfter / limitAfter / headroomAfter for the state now. Each node
    has its status as `kubectl get nodes` prints it, its taints and zone, and the values of the
    `label_columns` keys; `group_by` (a label key) adds the totals per value of that label.
    """
    rows = np.asarray(rows, dtype=np.intp)
    resources = report_resources(cluster, capacity, rows)
    cols = np.array([cluster.res_index[r] for r in resources], dtype=np.intp)
    now = NodeTotals.of(cluster)
    base = before.padded(len(cluster.resources)) if before is not None else now
    alloc = cluster.allocatable[np.ix_(rows, cols)]
    req, lim = base.requested[np.ix_(rows, cols)], base.limits[np.ix_(rows, cols)]
    configured = capacity.configured[np.ix_(rows, cols)]
    cap = capacity.capacity[np.ix_(rows, cols)]
    percent = capacity.percent[np.ix_(rows, cols)]
    req_ratio, lim_ratio = ratio(req, alloc), ratio(lim, alloc)
    if before is not None:
        req_after, lim_after = now.requested[np.ix_(rows, cols)], now.limits[np.ix_(rows, cols)]
        req_ratio_after, lim_ratio_after = ratio(req_after, alloc), ratio(lim_after, alloc)
    qos = qos_counts(cluster)[rows]
    pods = base.pod_count[rows]
    csi = cluster.volumes.csi_volumes() if cluster.volumes is not None else {}
    devices = device_counts(cluster)
    nodes = []
    for m, i in enumerate(rows.tolist()):
        ratios: dict[str, Any] = {}
        for j, r in enumerate(resources):
            entry: dict[str, Any] = {
                "request": _num(req_ratio[m, j]), "limit": _num(lim_ratio[m, j]),
                "limitToAllocatable": round(percent[m, j] / 100, DIGITS) if configured[m, j] else None,
                "limitCapacity": quantity(r, int(cap[m, j])) if configured[m, j] else None,
                "headroom": quantity(r, int(cap[m, j] - lim[m, j])) if configured[m, j] else None,
                "overSubscribed": bool(lim[m, j] > alloc[m, j]),
                "overLimitCapacity": bool(configured[m, j] and lim[m, j] > cap[m, j]),
            }
            if before is not None:
                entry["requestAfter"] = _num(req_ratio_after[m, j])
                entry["limitAfter"] = _num(lim_ratio_after[m, j])
                entry["headroomAfter"] = (quantity(r, int(cap[m, j] - lim_after[m, j]))
                                          if configured[m, j] else None)
            ratios[r] = entry
        node: dict[str, Any] = {
            "name": cluster.names[i], "status": kubectl_status(cluster.nodes[i]),
            "taints": [taint_entry(t) for t in cluster.nodes[i].taints],
            "zone": cluster.nodes[i].labels.get(ZONE_LABEL), "pods": int(pods[m]),
            "qos": dict(zip(QOS_CLASSES, (int(x) for x in qos[m]))),
            "allocatable": _map(resources, alloc[m]), "requests": _map(resources, req[m]),
            "limits": _map(resources, lim[m]), "ratios": ratios,
            "warnings": ([f"invalid {ANNOTATION} annotation: {capacity.invalid[i]}"]
                         if i in capacity.invalid else []),
        }
        if label_columns:
            node["labels"] = {key: cluster.nodes[i].labels.get(key) for key in label_columns}
        volumes = csi_volumes_of(csi, i)
        if volumes:
            node["csiVolumes"] = volumes
        if devices:
            node["devices"] = {driver: _devices(total[i], used[i]) for driver, (total, used) in devices.items()
                               if total[i]}
        if before is not None:
            node["podsAfter"] = int(now.pod_count[i])
            node["requestsAfter"] = _map(resources, req_after[m])
            node["limitsAfter"] = _map(resources, lim_after[m])
        nodes.append(node)
    after = (req_after, lim_after, now.pod_count[rows]) if before is not None else None
    totals = _totals(resources, alloc, req, lim, qos, pods, after)
    if devices:
        totals["devices"] = {driver: _devices(total[rows].sum(), used[rows].sum())
                             for driver, (total, used) in devices.items()}
    report: dict[str, Any] = {"apiVersion": API_VERSION, "kind": "NodeReport", "resources": resources,
                              "nodes": nodes, "totals": totals}
    if group_by is not None:
        report["groupBy"] = group_by
        report["groups"] = _groups(cluster, rows, group_by, resources, alloc, req, lim, qos, pods, after)
    if before is not None:
        report["placed"] = list(placed)
    return report


def _groups(cluster, rows, key, resources, alloc, req, lim, qos, pods, after) -> list[dict[str, Any]]:
    """The totals of each value of the label over the rows, by name (nodes without it last)."""
    names = np.array(group_names(cluster, rows, key), dtype=object)
    out = []
    for name in sorted(set(names.tolist()), key=lambda g: (g == NO_GROUP, g)):
        members = names == name
        part = None if after is None else tuple(a[members] for a in after)
        out.append({"name": name, **_totals(resources, alloc[members], req[members], lim[members], qos[members],
                                            pods[members], part)})
    return out


def csi_volumes_of(csi: dict[str, tuple[np.ndarray, np.ndarray]], i: int) -> dict[str, dict[str, int | None]]:
    """Node i's CSI volumes per driver: attached, and the driver's limit there (None: no limit)."""
    out = {}
    for driver, (attached, limits) in csi.items():
        count, limit = int(attached[i]), int(limits[i])
        if count or limit >= 0:
            out[driver] = {"attached": count, "limit": limit if limit >= 0 else None}
    return out


def device_counts(cluster: ClusterState) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per DRA driver, each node's devices and those claims hold ({} without ResourceSlices)."""
    devices = cluster.devices
    return devices.devices_by_driver() if devices is not None and devices.slices else {}


def _devices(total: int, used: int) -> dict[str, int]:
    return {"total": int(total), "allocated": int(used), "free": int(total - used)}


def _totals(resources, alloc, req, lim, qos, pods, after=None) -> dict[str, Any]:
    """Sums over some nodes; `after` (their requests, limits and pod counts after a run) adds the sums
    and the ratios after it."""
    a, q, li = alloc.sum(axis=0), req.sum(axis=0), lim.sum(axis=0)
    totals: dict[str, Any] = {
        "nodes": int(alloc.shape[0]), "pods": int(pods.sum()),
        "qos": dict(zip(QOS_CLASSES, (int(x) for x in qos.sum(axis=0)))),
        "allocatable": _map(resources, a), "requests": _map(resources, q), "limits": _map(resources, li),
        "ratios": {r: {"request": _num(ratio(q[j], a[j])), "limit": _num(ratio(li[j], a[j]))}
                   for j, r in enumerate(resources)},
    }
    if after is not None:
        q_after, li_after = after[0].sum(axis=0), after[1].sum(axis=0)
        totals["podsAfter"] = int(after[2].sum())
        totals["requestsAfter"], totals["limitsAfter"] = _map(resources, q_after), _map(resources, li_after)
        for j, r in enumerate(resources):
            totals["ratios"][r]["requestAfter"] = _num(ratio(q_after[j], a[j]))
            totals["ratios"][r]["limitAfter"] = _num(ratio(li_after[j], a[j]))
    return totals


def placed_pods(entries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Summarizes placement entries for the node report's `placed` list."""
    return [{"pod": e["pod"], "outcome": e["outcome"], "node": e["node"]} for e in entries]


def sort_rows(cluster: ClusterState, capacity: LimitCapacity, rows: np.ndarray, key: str) -> np.ndarray:
    """Orders node positions by a `kplan nodes --sort` key: name ascending; ratios and pods highest first;
    headroom (the smallest share of limit capacity left over cpu and memory) lowest first.
    Ties keep name order."""
    rows = np.asarray(rows, dtype=np.intp)
    rows = rows[np.argsort(cluster.name_array[rows], kind="stable")]
    if key == "name" or not len(rows):
        return rows
    cpu, mem = cluster.res_index[CPU], cluster.res_index[MEMORY]
    alloc = cluster.allocatable[rows]
    if key == "pods":
        value = -cluster.pod_count[rows].astype(np.float64)
    elif key == "headroom":
        left = ratio(capacity.capacity[rows] - cluster.allocated_limits[rows], capacity.capacity[rows])
        left = np.where(capacity.configured[rows], left, np.inf)[:, [cpu, mem]]
        value = np.nanmin(np.where(np.isnan(left), np.inf, left), axis=1)
    else:
        amounts = cluster.requested if "request" in key else cluster.allocated_limits
        r = ratio(amounts[rows], alloc)
        if key.startswith("cpu-"):
            value = r[:, cpu]
        elif key.startswith("memory-"):
            value = r[:, mem]
        else:
            value = np.fmax(r[:, cpu], r[:, mem])
        value = -np.where(np.isnan(value), -np.inf, value)
    return rows[np.argsort(value, kind="stable")]
