"""One page per command: the header, the summary tiles and the command's sections."""
from __future__ import annotations

from typing import Any, Sequence

from kplan.report.html.header import planner_header
from kplan.report.html.nodes import node_section
from kplan.report.html.page import render, write_page  # noqa: F401  (write_page: the commands write through here)
from kplan.report.html.quota import quota_after
from kplan.report.html.placement import heatmap_rows, placement_view, pod_rows

DETAILED_PODS = 200  # pods whose scores and rejections are drawn; the table lists every pod

SUMMARY_TONES = {"scheduled": "ok", "placed": "ok", "notPlaced": "bad", "needsPreemption": "warn",
                 "unschedulable": "bad", "failed": "bad", "gated": "muted", "byPreemption": "warn", "evicted": "warn", "removable": "ok", "blocked": "warn"}


def run_parts(command: str, planner, sources: Sequence[str] | None, before, nodes: bool = True) -> dict[str, Any]:
    """What the page of a run that placed pods draws besides its report: the header, the nodes
    before -> after (`before`: NodeTotals taken before the run; None draws the table as it is now;
    no node section without `nodes`) and, with CapacityScheduling, the quotas after the run."""
    return {"head": planner_header(command, planner, sources),
            "nodes": node_section(planner.cluster, before) if nodes else None, "quota": quota_after(planner)}


def tiles(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The summary counts as tiles, labelled in words ("needsPreemption" -> "needs preemption")."""
    return [{"label": _words(key), "value": value, "tone": SUMMARY_TONES.get(key, "") if value else ""}
            for key, value in summary.items()]


def _words(key: str) -> str:
    return "".join(f" {c.lower()}" if c.isupper() else c for c in key)


def place_page(report: dict[str, Any], head: dict[str, Any], nodes: dict[str, Any],
               quota: dict[str, Any] | None = None) -> str:
    entries = report["placements"]
    drawn = heatmap_rows(min(len(entries), DETAILED_PODS))
    details = [placement_view(e, f"pod-{k}", drawn=drawn) for k, e in enumerate(entries[:DETAILED_PODS])]
    return render("place.html.j2", head=head, tiles=tiles(report["summary"]),
                  pods=pod_rows(entries, detailed=len(details)), details=details,
                  undrawn=len(entries) - len(details), nodes=nodes, quota=quota)


def nodes_page(report: dict[str, Any], head: dict[str, Any], nodes: dict[str, Any]) -> str:
    """`kplan nodes`: the node section, and with --after the pods placed first."""
    totals = report["totals"]
    counts = {"nodes": totals["nodes"], "pods": totals["pods"]}
    placed = report.get("placed") or []
    if placed:
        counts["placed"] = sum(p["outcome"] == "Scheduled" for p in placed)
        counts["notPlaced"] = len(placed) - counts["placed"]
    return render("nodes_page.html.j2", head=head, tiles=tiles(counts), pods=pod_rows(placed), nodes=nodes)


def pending_page(report: dict[str, Any], head: dict[str, Any], nodes: dict[str, Any] | None,
                 ranked: dict[str, tuple[list[dict[str, Any]], int]], quota: dict[str, Any] | None = None) -> str:
    """`kplan pending`: per pod, those that would not be placed first (not_placed_first), the answer now
    beside the recorded one, the nearest nodes and hints; the nodes after the queue was placed (None with
    --independent). `ranked` holds, by pod, its best feasible nodes and their count, which the report
    leaves out: for every pod drawn."""
    order = not_placed_first(report["pods"])
    pods = [report["pods"][k] for k in order]
    entries = [p["placement"] for p in pods]
    extra = [(str(k + 1), str(p["priority"]), _agreement(p["agreesWithRecorded"])) for k, p in zip(order, pods)]
    details = []
    for k, p in enumerate(pods[:DETAILED_PODS]):
        best, feasible = ranked[p["pod"]]
        details.append({"pod": p, "view": placement_view({**p["placement"], "nodes": best}, f"pod-{k}", feasible)})
    from kplan.report.pending_table import nothing_pending
    return render("pending.html.j2", head=head, tiles=tiles(report["summary"]), empty=nothing_pending(report),
                  pods=pod_rows(entries, extra, len(details)), extra_columns=("Queue", "Priority", "Recorded message"),
                  details=details, undrawn=len(pods) - len(details), others=report["otherScheduler"], nodes=nodes,
                  quota=quota)


NOT_PLACED = ("Unschedulable", "NeedsPreemption")


def not_placed_first(pods: list[dict[str, Any]]) -> list[int]:
    """The positions of the pending report's pods (in queue order), those that would not be placed
    (unschedulable, or only by preempting) first, each part in queue order: what a reader looks for."""
    return sorted(range(len(pods)), key=lambda k: pods[k]["placement"]["outcome"] not in NOT_PLACED)


def _agreement(agrees: bool | None) -> str:
    return {True: "agrees", False: "differs", None: "—"}[agrees]


NODE_BARS = 30  # nodes drawn per workload or capacity run; the rest are summed in one row


def check_page(report: dict[str, Any], head: dict[str, Any], previews: dict[str, dict[str, Any]],
               nodes: dict[str, Any] | None, quota: dict[str, Any] | None = None) -> str:
    """`kplan check`: per workload its pods' outcomes and nodes, the first pod's placement drawn in
    full (`previews`, by pod), and every pod in a table."""
    first_pods: dict[str, str] = {}
    for p in report["placements"]:
        first_pods.setdefault(p["workload"], p["pod"])
    workloads = []
    drawn = heatmap_rows(len(previews))
    for k, w in enumerate(report["workloads"]):
        key = f"{w['kind']}/{w['namespace']}/{w['name']}"
        preview = previews.get(first_pods.get(key, ""))
        workloads.append({"w": w, "key": key, "anchor": f"workload-{k}", "parts": _outcome_parts(w),
                          "nodes": count_rows(w["nodes"], "node"),
                          "victims": victim_rows(w["victims"]) if (w.get("victims") or {}).get("pods") else None,
                          "view": placement_view(preview, f"workload-{k}-first", drawn=drawn) if preview else None})
    return render("check.html.j2", head=head, tiles=tiles(report["summary"]), workloads=workloads,
                  pods=pod_rows(report["placements"]), nodes=nodes, quota=quota)


def _outcome_parts(w: dict[str, Any]) -> list[dict[str, Any]]:
    """A workload's pods as one stacked bar: placed, needing preemption, unschedulable."""
    total = max(w["wanted"], 1)
    parts, x = [], 0.0
    for key, tone in (("placed", "ok"), ("needsPreemption", "warn"), ("unschedulable", "bad")):
        width = round(w[key] / total * 100, 1)
        parts.append({"label": _words(key), "count": w[key], "x": x, "w": width, "tone": tone})
        x = round(x + width, 1)
    return parts


def count_rows(counts: dict[str, int], noun: str, shown: int = NODE_BARS) -> list[dict[str, Any]]:
    """Counts per name as bars, largest first (then by name); beyond `shown`, one row sums the rest."""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    top = max(counts.values(), default=1) or 1
    rows = [{"label": name, "count": c, "w": round(c / top * 100, 1), "over": False, "hover": f"{name}: {c}"}
            for name, c in ranked[:shown]]
    rest = ranked[shown:]
    if rest:
        total = sum(c for _, c in rest)
        names = ", ".join(name for name, _ in rest[:40]) + (" …" if len(rest) > 40 else "")
        rows.append({"label": f"{len(rest)} more {noun}s", "count": total, "w": 0.0, "over": False,
                     "hover": names})
    return rows


def capacity_page(report: dict[str, Any], head: dict[str, Any], nodes: dict[str, Any],
                  quota: dict[str, Any] | None = None) -> str:
    """`kplan capacity`: the replica count, why it stopped, the replicas per zone and per node, and the
    pods preemption evicted (or, without --allow-preemption, would evict for the next replica)."""
    counts = {"replicas": report["replicas"]}
    if report.get("allowPreemption"):
        counts.update(free=report["replicasFree"], byPreemption=report["replicasByPreemption"],
                      evicted=report["victims"]["pods"])
    if report.get("wanted") is not None:
        counts["wanted"] = report["wanted"]
    elif report.get("max") is not None:
        counts["max"] = report["max"]
    more = report.get("withPreemption") or {}
    return render("capacity.html.j2", head=head, tiles=tiles(counts), report=report,
                  zones=count_rows(report["perZone"], "zone"), per_node=count_rows(report["perNode"], "node"),
                  victims=victim_rows(report["victims"]) if report.get("victims") else None,
                  next_victims=victim_rows(more["victims"]) if more.get("more") else None, nodes=nodes, quota=quota)


def victim_rows(victims: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The evicted pods as bars: per priority, lowest priority first, and per namespace, most first."""
    from kplan.report.victims import priority_label
    groups = victims["perPriority"]
    top = max((g["pods"] for g in groups), default=1) or 1
    per_priority = [{"label": priority_label(g), "count": g["pods"], "w": round(g["pods"] / top * 100, 1),
                     "over": False, "hover": f"{priority_label(g)}: {g['pods']} pod(s), {g['cpu']} cpu, "
                                             f"{g['memory']} memory"} for g in groups]
    return {"perPriority": per_priority,
            "perNamespace": count_rows({g["namespace"]: g["pods"] for g in victims["perNamespace"]}, "namespace")}


def consolidate_page(report: dict[str, Any], head: dict[str, Any], nodes: dict[str, Any]) -> str:
    """`kplan consolidate`: the nodes that go in order with their pods' moves, the blocked nodes with every
    blocker (and for a pod that fits nowhere its nearest nodes and hints), the savings, the nodes left."""
    s = report["summary"]
    counts = {key: s[key] for key in ("nodes", "candidates", "removable", "blocked", "podsMoved")}
    saved = report["saved"]
    return render("consolidate.html.j2", head=head, tiles=tiles(counts), report=report, nodes=nodes,
                  zones=count_rows({k: g["nodes"] for k, g in saved["perZone"].items()}, "zone"),
                  pools=count_rows({k: g["nodes"] for k, g in saved["perPool"].items()}, "pool"))
