"""The result model: placements as the JSON contract (apiVersion kplan/v1alpha1) describes them.

Renderers read these dicts only; everything scheduling decided is computed here, from the
cycle result and the node table as they were when the pod was scheduled.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence

import numpy as np

from kplan.api.node_selectors import describe_terms
from kplan.api.resources import CPU, MEMORY
from kplan.api.storage import uses_claims
from kplan.cluster.state import ClusterState
from kplan.cluster.volumes import ClaimFacts, claim_facts
from kplan.framework.runtime import NARROWED_OUT, NEEDS_PREEMPTION, SCHEDULED, SCHEDULING_GATED, CycleResult
from kplan.framework.selection import name_rank, rank_candidates
from kplan.framework.status import CODE_NAMES
from kplan.report.ratios import FEW_NODES, placement_ratios
from kplan.report.units import API_VERSION, quantity, resource_map

def placement(result: CycleResult, cluster: ClusterState, explain_nodes: Sequence[str] = (), *,
              top: int = 0, grouped: bool = False) -> dict[str, Any]:
    """Builds one entry of `placements` (with `explain` for the nodes asked about); call before the
    pod is assumed onto its node, as Planner.place_each hands out its results.

    `top` keeps only the best `top` feasible nodes (0: all). `grouped` lists the rejected nodes as
    `rejected` groups (plugin, reasons, count, a few names) instead of a row each in `nodes`: a
    report on many pods then stays small on a large cluster.
    """
    pod = result.pod
    entry: dict[str, Any] = {
        "pod": pod.key,
        "profile": result.profile,
        "outcome": result.outcome,
        "node": cluster.names[result.node] if result.node is not None else None,
        "message": result.message,
        "weights": dict(result.weights),
        "nodes": _feasible_nodes(result, cluster, top) + ([] if grouped else _rejected_nodes(result, cluster)),
        "preemption": None,
        "candidates": [],
        "podInfo": _pod_info(result),
        "notSimulated": list(result.not_simulated),
    }
    if len(result.candidates) > 1 and len(result.ranking):
        tied = result.tied_with_selected()
        if len(tied) > 1:
            entry["tie"] = sorted(cluster.names[int(result.candidates[j])] for j in tied)
    if grouped:
        entry["rejected"] = rejected_groups(result, cluster)
    if uses_claims(pod.spec) and cluster.volumes is not None:
        entry["volumes"] = [claim_entry(f) for f in claim_facts(pod, cluster.volumes)]
    if result.post_filter is not None:
        _preemption(entry, result)
    if explain_nodes:
        entry["explain"] = [explain(result, cluster, name) for name in explain_nodes]
    return entry


def claim_entry(facts: ClaimFacts) -> dict[str, Any]:
    """One claim of the pod: its state, class and binding mode, its volume and where it can be used."""
    entry: dict[str, Any] = {"claim": facts.claim, "status": facts.status}
    if facts.storage_class:
        entry["storageClass"] = facts.storage_class
    if facts.binding_mode:
        entry["bindingMode"] = facts.binding_mode
    if facts.volume:
        entry["volume"] = facts.volume
    if facts.zone:
        entry["zone"] = facts.zone
    if facts.node_affinity is not None:
        entry["nodeAffinity"] = describe_terms(facts.node_affinity)
    if facts.selected_node:
        entry["selectedNode"] = facts.selected_node
    return entry


def _preemption(entry: dict[str, Any], result: CycleResult) -> None:
    """Fills `preemption` (the nominated node, its victims, quota usage before -> after) and `candidates`."""
    pf = result.post_filter
    entry["postFilter"] = {"plugin": pf.status.plugin, "code": CODE_NAMES[pf.status.code], "message": pf.status.message,
                           "nominatedNode": entry["node"] if result.outcome == NEEDS_PREEMPTION else None}
    entry["candidates"] = [{"node": c.name, "victims": [v.key for v in c.victims],
                            "pdbViolations": c.pdb_violations} for c in pf.candidates]
    if result.outcome != NEEDS_PREEMPTION:
        return
    chosen = next((c for c in pf.candidates if c.node == pf.nominated), None)
    entry["preemption"] = {
        "node": entry["node"], "plugin": pf.plugin,
        "victims": [v.key for v in pf.victims],
        "victimPriorities": [v.priority or 0 for v in pf.victims],
        "pdbViolations": chosen.pdb_violations if chosen else 0,
        "quota": [{"namespace": q["namespace"], "name": q["name"],
                   "min": quota_map(q["min"]), "max": quota_map(q["max"]),
                   "before": quota_map(q["before"]), "after": quota_map(q["after"])} for q in pf.quota],
    }


def quota_map(amounts: dict[str, int]) -> dict[str, str]:
    """Formats an ElasticQuota resource map: cpu and memory always, other resources when non-zero.

    MaxInt64 (an unlimited max) is shown as "unlimited".
    """
    out = {}
    for r, v in sorted(amounts.items()):
        if v or r in (CPU, MEMORY):
            out[r] = "unlimited" if v >= 2**63 - 1 else quantity(r, v)
    return out


def _pod_info(result: CycleResult) -> dict[str, Any]:
    pod = result.pod
    return {"requests": resource_map(pod.requests), "limits": resource_map(pod.limits),
            "qosClass": pod.qos_class, "priority": pod.priority or 0}


def ranked_feasible_nodes(result: CycleResult, cluster: ClusterState, top: int) -> list[dict[str, Any]]:
    """The best `top` feasible nodes as entries of `nodes`, ranked as a full cycle ranks them, also for
    a result whose cycle ranked only the selected node (rank=False); call before the pod is assumed."""
    ranking = result.ranking
    if len(ranking) < len(result.candidates):
        ranking = rank_candidates(result.total, result.candidates, cluster)
    return _feasible_nodes(result, cluster, top, ranking)


def _feasible_nodes(result: CycleResult, cluster: ClusterState, top: int = 0,
                    ranking: np.ndarray | None = None) -> list[dict[str, Any]]:
    ranking = result.ranking if ranking is None else ranking
    if not len(ranking):
        return []
    ranking = ranking[:top] if top > 0 else ranking
    candidates = result.candidates[ranking]
    after = _request_ratios_after(result, cluster, candidates)
    ratios = placement_ratios(cluster, candidates, result.pod)
    rows = []
    for rank, (j, i) in enumerate(zip(ranking.tolist(), candidates.tolist()), start=1):
        rows.append({
            "name": cluster.names[i], "feasible": True, "rank": rank,
            "totalScore": int(result.total[j]),
            "scores": {name: int(s[j]) for name, s in result.scores.items()},
            "requestedAfter": {r: after[r][rank - 1] for r in after},
            "ratios": ratios[rank - 1],
        })
    return rows


def _request_ratios_after(result: CycleResult, cluster: ClusterState, nodes: np.ndarray) -> dict[str, list[float]]:
    """Returns requested/allocatable per node if the pod landed there, for cpu and memory."""
    if len(nodes) <= FEW_NODES:  # Python floats, the same division and rounding
        return {r: [_ratio_after(cluster, i, cluster.res_index[r], result.pod.requests.get(r, 0))
                    for i in nodes.tolist()] for r in (CPU, MEMORY)}
    out = {}
    for r in (CPU, MEMORY):
        k = cluster.res_index[r]
        alloc = cluster.allocatable[nodes, k]
        used = cluster.requested[nodes, k] + result.pod.requests.get(r, 0)
        ratio = np.divide(used, alloc, out=np.zeros(len(nodes)), where=alloc > 0)
        out[r] = [round(float(x), 4) for x in ratio]
    return out


def _ratio_after(cluster: ClusterState, i: int, k: int, request: int) -> float:
    allocatable = int(cluster.allocatable[i, k])
    if allocatable <= 0:
        return 0.0
    return round(float(int(cluster.requested[i, k]) + request) / float(allocatable), 4)


def _rejected_nodes(result: CycleResult, cluster: ClusterState) -> list[dict[str, Any]]:
    if result.outcome == SCHEDULING_GATED:
        return []  # PreEnqueue kept the pod out of the queue: no filter ran on any node
    feasible = np.zeros(cluster.n, dtype=bool)
    feasible[result.candidates] = True
    rows = []
    rejected = np.flatnonzero(~feasible)
    ratios = placement_ratios(cluster, rejected, result.pod)
    for m, i in enumerate(rejected.tolist()):
        plugin, reasons = result.reasons_of(i)
        rows.append({"name": cluster.names[i], "feasible": False, "plugin": plugin, "reasons": reasons,
                     "ratios": ratios[m]})
    return rows


def rejected_groups(result: CycleResult, cluster: ClusterState, examples: int = 3) -> list[dict[str, Any]]:
    """The rejected nodes grouped by the plugin that rejected them and its reasons, largest group
    first: {"plugin", "reasons", "nodes": count, "examples": the first names by name}. Counted over
    the filter results' arrays, without a row per node."""
    if result.outcome == SCHEDULING_GATED:
        return []
    if result.prefilter_status is not None and result.prefilter_status.is_rejected:
        status = result.prefilter_status
        return [_group(status.plugin, tuple(status.reasons), np.arange(cluster.n), cluster, examples)]
    rows_by_key: dict[tuple[str, tuple[str, ...]], list[np.ndarray]] = defaultdict(list)
    for i, status in result.nominated_statuses.items():
        rows_by_key[(status.plugin, tuple(status.reasons))].append(np.array([i]))
    failed = result.failed_plugin.copy()
    failed[list(result.nominated_statuses)] = -1  # grouped above, with their own status
    rows_by_key[("", (result.narrowed_reason,))].append(np.flatnonzero(failed == NARROWED_OUT))
    for k, name in enumerate(result.filter_plugins):
        status = result.filter_statuses.get(name)
        if status is None or not status.code.any():  # a plugin that rejected no node costs nothing
            continue
        rows = np.flatnonzero(failed == k)
        if not len(rows):
            continue
        masks = status.reason_mask[rows] if status.reason_mask is not None else np.zeros((len(rows), 0), bool)
        if masks.shape[1] == 1:  # one reason: one group
            rows_by_key[(name, tuple(status.reasons))].append(rows)
            continue
        # Each node's set of reasons as one integer (bit k: reason k), grouped by value.
        patterns, which = np.unique(masks.astype(np.int64) @ (1 << np.arange(masks.shape[1], dtype=np.int64)),
                                    return_inverse=True)
        for g, pattern in enumerate(patterns.tolist()):
            reasons = tuple(r for k, r in enumerate(status.reasons) if pattern >> k & 1)
            rows_by_key[(name, reasons)].append(rows[which == g])
    groups = [_group(plugin, reasons, np.concatenate(parts), cluster, examples)
              for (plugin, reasons), parts in rows_by_key.items()]
    return sorted((g for g in groups if g["nodes"]), key=lambda g: (-g["nodes"], g["plugin"], g["reasons"]))


def _group(plugin: str, reasons: tuple[str, ...], rows: np.ndarray, cluster: ClusterState,
           examples: int) -> dict[str, Any]:
    ranks = name_rank(cluster)[rows]
    first = rows[np.argsort(ranks)[:examples]] if len(rows) <= 4 * examples else \
        rows[np.argpartition(ranks, examples)[:examples]]
    names = sorted(cluster.names[i] for i in first.tolist())
    return {"plugin": plugin, "reasons": list(reasons), "nodes": int(len(rows)), "examples": names}


def placement_report(entries: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """Wraps placements into the PlacementReport object with its summary."""
    summary = {"pods": len(entries),
               "scheduled": sum(e["outcome"] == SCHEDULED for e in entries),
               "needsPreemption": sum(e["outcome"] == NEEDS_PREEMPTION for e in entries),
               "unschedulable": sum(e["outcome"] not in (SCHEDULED, NEEDS_PREEMPTION) for e in entries)}
    return {"apiVersion": API_VERSION, "kind": "PlacementReport", **extra, "summary": summary,
            "placements": entries}


def explain(result: CycleResult, cluster: ClusterState, node: str) -> dict[str, Any]:
    """Explains, plugin by plugin, why a node was rejected or how it got its score."""
    i = cluster.index[node]
    plugin, reasons = result.reasons_of(i)
    steps: list[dict[str, Any]] = []
    if result.prefilter_status is not None:
        steps.append({"plugin": result.prefilter_status.plugin, "point": "PreFilter",
                      "result": "rejected", "reasons": list(result.prefilter_status.reasons)})
    for k, name in enumerate(result.filter_plugins):
        status = result.filter_statuses.get(name)
        if status is None:
            steps.append({"plugin": name, "point": "Filter", "result": "not run"})
            continue
        rejected = bool(status.code[i])
        step = {"plugin": name, "point": "Filter", "result": "rejected" if rejected else "passed",
                "reasons": status.reasons_of(i)}
        if status.explain is not None:
            step["details"] = status.explain(i)
        if result.failed_plugin is not None and 0 <= result.failed_plugin[i] < k:
            step["result"] = "not reached"
        steps.append(step)
    position = np.flatnonzero(result.candidates == i)
    if len(position):
        j = int(position[0])
        for name, scores in result.scores.items():
            weight = result.weights[name]
            steps.append({"plugin": name, "point": "Score", "raw": int(result.raw_scores[name][j]),
                          "score": int(scores[j]), "weight": weight, "weighted": int(scores[j]) * weight})
    rank = int(np.flatnonzero(result.ranking == position[0])[0]) + 1 if len(position) else None
    return {"node": node, "feasible": bool(len(position)), "rank": rank,
            "totalScore": int(result.total[position[0]]) if len(position) else None,
            "plugin": plugin, "reasons": reasons, "steps": steps}
