"""Human output: kubectl-style tables rendered with Rich, from the report dicts only."""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

from rich.console import Console
from rich.table import Table
from rich.text import Text

FEW_NAMES = 3


def kubectl_table(*headers: str) -> Table:
    """Returns a borderless table with UPPERCASE headers and kubectl's 3-space gaps."""
    table = Table(box=None, pad_edge=False, show_edge=False, padding=(0, 3, 0, 0), header_style="bold")
    for h in headers:
        table.add_column(h.upper(), overflow="fold")
    return table


def percent(ratio: float) -> str:
    return f"{ratio * 100:.0f}%"


def render_placements(report: dict[str, Any], console: Console, *, wide: bool = False, top: int = 10) -> None:
    """Prints each placement: the pod, its outcome, ranked nodes and rejected nodes by reason."""
    for k, entry in enumerate(report["placements"]):
        if k:
            console.print()
        _render_pod(entry, console)
        _render_outcome(entry, console)
        _render_ranked(entry, console, wide=wide, top=top)
        _render_rejected(entry, console, wide=wide)
        for explained in entry.get("explain", ()):
            render_explain(explained, console)
        if entry["notSimulated"]:
            console.print(Text(f"Not simulated: {', '.join(entry['notSimulated'])}", style="dim"))
    if report.get("kubeVersion"):
        console.print(Text(f"Answered as kube-scheduler {report['kubeVersion']} would.", style="dim"))


def _render_pod(entry: dict[str, Any], console: Console) -> None:
    info = entry["podInfo"]
    requests = ", ".join(f"{r}={q}" for r, q in info["requests"].items()) or "none"
    limits = ", ".join(f"{r}={q}" for r, q in info["limits"].items()) or "none"
    console.print(Text.assemble(("Pod ", "bold"), (entry["pod"], "bold cyan"),
                                f"   profile {entry['profile']}   QoS {info['qosClass']}   "
                                f"priority {info['priority']}"))
    console.print(f"  requests: {requests}   limits: {limits}", highlight=False)


def _render_outcome(entry: dict[str, Any], console: Console) -> None:
    outcome = entry["outcome"]
    if outcome == "Scheduled":
        line = Text.assemble(("Scheduled", "bold green"), " on ", (entry["node"], "bold"))
        if entry.get("tie"):
            line.append(f"   (tied with {', '.join(n for n in entry['tie'] if n != entry['node'])}; "
                        "kube-scheduler picks one of them at random, kplan the first by name)", style="yellow")
        console.print(line)
    else:
        console.print(Text.assemble((outcome, "bold red"), ": ", entry["message"]))


def _render_ranked(entry: dict[str, Any], console: Console, *, wide: bool, top: int) -> None:
    ranked = [n for n in entry["nodes"] if n["feasible"]]
    if not ranked:
        return
    plugins = list(entry["weights"]) if wide else []
    table = kubectl_table("rank", "node", "score", "cpu req", "mem req", *plugins)
    shown = ranked if top <= 0 else ranked[:top]
    for n in shown:
        after = n["requestedAfter"]
        scores = [str(n["scores"].get(p, "-")) for p in plugins]
        table.add_row(str(n["rank"]), n["name"], str(n["totalScore"]), percent(after["cpu"]),
                      percent(after["memory"]), *scores)
    console.print()
    console.print(table)
    if len(ranked) > len(shown):
        console.print(Text(f"... and {len(ranked) - len(shown)} more feasible node(s) (--top 0 shows all)",
                           style="dim"))


def _render_rejected(entry: dict[str, Any], console: Console, *, wide: bool) -> None:
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for n in entry["nodes"]:
        if not n["feasible"]:
            groups[(n["plugin"], "; ".join(n["reasons"]))].append(n["name"])
    if not groups:
        return
    table = kubectl_table("nodes", "plugin", "reason", "examples" if not wide else "node names")
    for (plugin, reason), names in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0])):
        table.add_row(str(len(names)), plugin or "-", reason, _names(names, wide))
    console.print()
    console.print(table)


def _names(names: Iterable[str], wide: bool) -> str:
    names = list(names)
    if wide or len(names) <= FEW_NAMES:
        return ", ".join(names)
    return ", ".join(names[:FEW_NAMES]) + f", ... (+{len(names) - FEW_NAMES})"


def render_explain(explained: dict[str, Any], console: Console) -> None:
    """Prints why one node was rejected or how it scored, plugin by plugin."""
    console.print()
    head = Text.assemble(("Explain ", "bold"), (explained["node"], "bold"), ": ")
    if explained["feasible"]:
        head.append(f"feasible, rank {explained['rank']}, total score {explained['totalScore']}", style="green")
    else:
        head.append(f"rejected by {explained['plugin'] or 'PreFilter'}: {'; '.join(explained['reasons'])}",
                    style="red")
    console.print(head)
    table = kubectl_table("point", "plugin", "result", "details")
    for step in explained["steps"]:
        if step["point"] == "Score":
            table.add_row("Score", step["plugin"], f"{step['score']} x {step['weight']} = {step['weighted']}",
                          f"raw {step['raw']}")
        else:
            details = "; ".join(step.get("reasons", []) + step.get("details", []))
            table.add_row(step["point"], step["plugin"], step["result"], details)
    console.print(table)
