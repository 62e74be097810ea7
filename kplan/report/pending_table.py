"""Human output of `kplan pending`: a row per pod, then for each pod that would not schedule its
message beside the recorded one, its rejected nodes, the nearest nodes and hints."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from rich.console import Console
from rich.text import Text

from kplan.report.table import claim_line, kubectl_table, release_line, render_nearest


def human_duration(seconds: float) -> str:
    """kubectl's duration.HumanDuration, as its AGE column prints it."""
    if seconds < -1:
        return "<invalid>"
    s = max(int(seconds), 0)
    minutes, hours = s // 60, s // 3600
    if s < 120:
        return f"{s}s"
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = hours // 24 % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def _age(created: str | None, now: datetime | None) -> str:
    if not created or now is None:
        return "<unknown>"
    from kplan.api.node_metric import parse_time
    try:
        return human_duration((now - parse_time(created)).total_seconds())
    except ValueError:
        return "<unknown>"


def _agreement(entry: dict[str, Any]) -> str:
    agrees = entry["agreesWithRecorded"]
    return "-" if agrees is None else "agrees" if agrees else "differs"


def _first_reason(entry: dict[str, Any]) -> str:
    p = entry["placement"]
    if entry["gated"]:
        return "gates: " + ", ".join(entry["gates"])
    if p["outcome"] == "Scheduled":
        return p["node"]
    if p["outcome"] == "NeedsPreemption":
        return f"{p['node']} (evicting {len(p['preemption']['victims'])})"
    groups = p.get("rejected") or []
    if not groups:
        return p["message"]
    return f"{groups[0]['nodes']} {'; '.join(groups[0]['reasons'])}"


def render_pending(report: dict[str, Any], console: Console, *, now: datetime | None = None,
                   wide: bool = False) -> None:
    """Prints the summary table (with `wide`, the profile and whether kplan agrees with the recorded
    message too), then the detail of every pod that would not schedule now."""
    pods = report["pods"]
    if pods:
        extra = ("profile", "recorded") if wide else ()
        table = kubectl_table("pod", "priority", "age", "outcome", "node or first reason", *extra, names=("pod",))
        for e in pods:
            outcome = "SchedulingGated" if e["gated"] else e["placement"]["outcome"]
            more = (e["placement"]["profile"], _agreement(e)) if wide else ()
            table.add_row(e["pod"], str(e["priority"]), _age(e["created"], now), outcome, _first_reason(e), *more)
        console.print(table)
    else:
        console.print(nothing_pending(report))
    others = report["otherScheduler"]
    if others:
        names = ", ".join(f"{o['pod']} ({o['schedulerName']})" for o in others)
        console.print(Text(f"Not for this scheduler (kube-scheduler ignores them): {names}", style="dim"))
    for e in pods:
        if e["gated"] or e["placement"]["outcome"] == "Scheduled":
            continue
        console.print()
        _render_detail(e, console)
    s = report["summary"]
    console.print()
    console.print(Text(f"{s['pending']} pending: {s['scheduled']} would schedule, {s['needsPreemption']} need "
                       f"preemption, {s['unschedulable']} unschedulable, {s['gated']} gated, "
                       f"{s['otherScheduler']} for another scheduler.", style="bold"))
    if report.get("kubeVersion"):
        console.print(Text(release_line(report), style="dim"))


def nothing_pending(report: dict[str, Any]) -> str:
    """Says no pod is pending here, and, for one namespace, how many are in the others (as quota status
    says it): "No pending pods in namespace default; 50 in other namespaces (-A lists them)"."""
    for_this = " for this scheduler" if report["otherScheduler"] else ""
    namespace = report.get("namespace")
    if namespace is None:
        return f"No pending pods{for_this}."
    elsewhere = report.get("pendingInOtherNamespaces") or 0
    more = f"; {elsewhere} in other namespaces (-A lists them)" if elsewhere else "."
    return f"No pending pods{for_this} in namespace {namespace}{more}"


def _render_detail(entry: dict[str, Any], console: Console) -> None:
    p = entry["placement"]
    console.print(Text.assemble(("Pod ", "bold"), (entry["pod"], "bold cyan"), ": ",
                                (p["outcome"], "bold red" if p["outcome"] == "Unschedulable" else "bold yellow")))
    console.print(Text.assemble(("  now:      ", "bold"), p["message"] or f"nominated {p['node']}"))
    for claim in p.get("volumes", ()):
        console.print(Text.assemble(("  volume:   ", "bold"), claim_line(claim)))
    recorded = entry["recorded"]
    if recorded:
        when = f" ({recorded['time']})" if recorded["time"] else ""
        console.print(Text.assemble(("  recorded: ", "bold"), f"{recorded['reason']}{when}: {recorded['message']}"))
        if entry["agreesWithRecorded"] is True:
            console.print(Text("  kplan agrees with the message the cluster recorded.", style="green"))
        elif entry["agreesWithRecorded"] is False:
            console.print(Text(f"  differs from the recorded message: {entry['why']}.", style="yellow"))
    preemption = p.get("preemption")
    if preemption:
        console.print(f"  preemption by {preemption['plugin']} on {preemption['node']}, evicting: "
                      f"{', '.join(preemption['victims'])}", highlight=False)
    groups = p.get("rejected") or []
    if groups:
        table = kubectl_table("nodes", "plugin", "reason", "examples")
        for g in groups:
            more = g["nodes"] - len(g["examples"])
            examples = ", ".join(g["examples"]) + (f", ... (+{more})" if more > 0 else "")
            table.add_row(str(g["nodes"]), g["plugin"] or "-", "; ".join(g["reasons"]), examples)
        console.print()
        console.print(table)
    render_nearest(entry["nearest"], entry["hints"], console)
