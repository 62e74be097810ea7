"""Human output of `kplan consolidate`, from its ConsolidationReport only."""
from __future__ import annotations

from collections import Counter
from typing import Any

from rich.console import Console
from rich.text import Text

from kplan.planning.check import ZONE_LABEL
from kplan.report.table import kubectl_table, percent, release_line

FEW_NODES = 3


def _used(entry: dict[str, Any], resource: str) -> str:
    value = entry["utilization"].get(resource)
    return percent(value) if value is not None else "-"


def _destinations(moves: list[dict[str, Any]]) -> str:
    counts = Counter(m["to"] for m in moves)
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(f"{n}×{c}" if c > 1 else n for n, c in items[:FEW_NODES])
    if len(items) > FEW_NODES:
        shown += f", +{len(items) - FEW_NODES} node(s)"
    return shown or "-"


def _headline(report: dict[str, Any]) -> str:
    s = report["summary"]
    line = (f"{s['removable']} of {s['nodes']} node(s) can go; {s['candidates']} candidate(s) under "
            f"{percent(report['threshold'])} of allocatable")
    if report["selector"]:
        line += f" among the {s['selected']} matching {report['selector']}"
    line += f", {s['visited']} visited least utilized first: {s['removable']} removable, {s['blocked']} blocked"
    if s["notVisited"]:
        line += f", {s['notVisited']} not visited (--max-nodes {report['maxNodes']} reached)"
    return line


def render_consolidation(report: dict[str, Any], console: Console, wide: bool = False) -> None:
    """The nodes that can go in order and where their pods land, the blocked nodes with every blocker,
    what is saved per zone and pool, and the cluster's requested/allocatable before and after."""
    console.print(Text(_headline(report), style="bold"))
    if report["removable"]:
        console.print()
        table = kubectl_table("#", "Removable node", "Zone", "Pool", "Cpu req", "Mem req", "Pods moved", "To",
                              names=("Removable node",))
        for e in report["removable"]:
            table.add_row(str(e["order"]), e["node"], e["zone"], e["pool"], _used(e, "cpu"), _used(e, "memory"),
                          str(len(e["moves"])), _destinations(e["moves"]))
        console.print(table)
        for e in report["removable"]:
            if e["pdbsInSequence"]:
                console.print(Text(f"{e['node']}: its pods of {', '.join(e['pdbsInSequence'])} need more disruptions "
                                   "than are left at once: their evictions wait for one another", style="yellow"))
    if wide and report["removable"]:
        console.print()
        moves = kubectl_table("Pod", "From", "To", names=("Pod", "From", "To"))
        for e in report["removable"]:
            for m in e["moves"]:
                moves.add_row(m["pod"], e["node"], m["to"] + (" (moved again)" if m["again"] else ""))
        console.print(moves)
    if report["blocked"]:
        console.print()
        _render_blocked(report, console, wide)
    _render_saved(report, console)
    before, after = report["ratios"]["before"], report["ratios"]["after"]
    parts = [f"{r} {percent(before[r])} → {percent(after[r])}" for r in ("cpu", "memory")
             if before.get(r) is not None and after.get(r) is not None]
    if parts:
        console.print(Text("Requested / allocatable: " + ", ".join(parts)))
    console.print(Text(f"Scale-down as {report['rules']} decides it. {release_line(report)}", style="dim"))


def _render_blocked(report: dict[str, Any], console: Console, wide: bool) -> None:
    table = kubectl_table("Blocked node", "Cpu req", "Mem req", "Blocker", "Pod", "Why", names=("Blocked node", "Pod"))
    for e in report["blocked"]:
        for b in e["blockers"]:
            why = b["message"] + (f" (PodDisruptionBudget {b['pdb']})" if b.get("pdb") else "")
            table.add_row(e["node"], _used(e, "cpu"), _used(e, "memory"), b["reason"], b["pod"] or "-", why)
    console.print(table)
    if not wide:
        return
    for e in report["blocked"]:
        for b in e["blockers"]:
            if b["reason"] != "NoPlaceToMovePods":
                continue
            console.print(Text(f"{e['node']}: {b['pod']} fits nowhere else", style="bold"))
            for near in b["nearest"]:
                lacks = "; ".join(lack["text"] for lack in near["lacks"])
                console.print(Text(f"  nearest {near['node']}: {lacks}"))
            for hint in b["hints"]:
                console.print(Text(f"  hint: {hint}"))
            if b.get("podsNotTried"):
                console.print(Text(f"  {b['podsNotTried']} more pod(s) of the node not tried", style="dim"))


def _render_saved(report: dict[str, Any], console: Console) -> None:
    saved = report["saved"]
    if not saved["nodes"]:
        return
    console.print()
    table = kubectl_table("Saved", "Nodes", "Cpu", "Memory", names=("Saved",))
    for zone, g in saved["perZone"].items():
        table.add_row(f"{ZONE_LABEL}={zone}", str(g["nodes"]), g["cpu"], g["memory"])
    for pool, g in saved["perPool"].items():
        table.add_row(f"{report['poolLabel']}={pool}", str(g["nodes"]), g["cpu"], g["memory"])
    table.add_row("*", str(saved["nodes"]), saved["cpu"], saved["memory"])
    console.print(table)
