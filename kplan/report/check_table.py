"""Human output of `kplan check` and `kplan capacity`, from their report dicts only."""
from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from kplan.report.nearest import nearest_line
from kplan.report.table import claim_line, kubectl_table, release_line
from kplan.report.victims import NOT_REPLACED, render_victims, victims_line

FEW_NODES = 3


def _where(nodes: dict[str, int]) -> str:
    items = sorted(nodes.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(f"{n}×{c}" for n, c in items[:FEW_NODES])
    if len(items) > FEW_NODES:
        shown += f", +{len(items) - FEW_NODES} node(s)"
    return shown or "-"


def render_check(report: dict[str, Any], console: Console, *, wide: bool = False) -> None:
    """A row per workload: replicas placed / wanted, where (node counts), first failure reason; with
    --allow-preemption, the pods each workload's preemptions evict (every one of them with `wide`)."""
    table = kubectl_table("Workload", "Placed", "Where", "Result", names=("Workload",))
    for e in report["workloads"]:
        if e["passed"]:
            result = Text("ok", style="green")
        elif (e.get("rollout") or {}).get("stuck"):
            result = Text(e["rollout"]["stuck"]["summary"], style="red")
        else:
            f = e["firstFailure"]
            result = Text(f"{f['outcome']} ({f['plugin']}): {f['message']}", style="red")
        table.add_row(f"{e['kind']}/{e['namespace']}/{e['name']}", f"{e['placed']}/{e['wanted']}",
                      _where(e["nodes"]), result)
    console.print(table)
    for e in report["workloads"]:
        failure = e["firstFailure"] or {}
        lines = failure_lines(failure)
        if lines:
            console.print(Text(f"{e['kind']}/{e['namespace']}/{e['name']}, pod {failure['pod']}:", style="bold"))
            for line in lines:
                console.print(f"  {line}", highlight=False)
    for e in report["workloads"]:
        for line in _rollout_lines(e):
            console.print(line, highlight=False)
    _check_victims(report, console, wide)
    s = report["summary"]
    line = (f"{s['workloads']} workload(s), {s['pods']} pod(s): {s['scheduled']} scheduled, "
            f"{s['needsPreemption']} need preemption, {s['unschedulable']} unschedulable")
    console.print(Text(line, style="bold red" if s["failed"] else "bold green"))
    _nodes_needed(report, console)
    if report.get("kubeVersion"):
        console.print(Text(release_line(report), style="dim"))


def _rollout_lines(e: dict[str, Any]) -> list[Text]:
    """A rolled-out workload: how it rolled (the strategy's resolved numbers) and where it ended."""
    r = e.get("rollout")
    if r is None and e.get("hpa") is None:
        return []
    name = f"{e['kind']}/{e['namespace']}/{e['name']}"
    out = []
    if e.get("hpa"):
        h = e["hpa"]
        at = "maxReplicas" if h["atMax"] else f"minReplicas {h['minReplicas']} .. maxReplicas {h['maxReplicas']}"
        out.append(Text(f"{name}: {h['replicas']} replicas, as HorizontalPodAutoscaler {h['name']} sets them ({at})",
                        style="dim"))
    if r is None:
        return out
    knobs = ", ".join(f"{k} {r[k]}" for k in ("partition", "maxSurge", "maxUnavailable") if k in r)
    how = f"{r['strategy']}" + (f" ({knobs})" if knobs else "")
    steps = len(r["steps"])
    if r["stuck"] is None:
        out.append(Text(f"{name}: rollout done in {steps} step(s), {how}: {r['newPods']} new pod(s) replace "
                        f"{r['oldPods']} old", style="green"))
    else:
        s = r["stuck"]
        old_pending = s["oldPods"] - s["oldRunning"]
        out.append(Text(f"{name}: {how}: stuck after step {s['afterStep']} of the rollout: {s['oldRunning']} old "
                        f"and {s['newRunning']} new pod(s) run, {s['newPending']} new"
                        + (f" and {old_pending} old" if old_pending else "") + " pending", style="red"))
    return out


def failure_lines(failure: dict[str, Any]) -> list[str]:
    """What a CI reader sees beside a workload's first failure: the pod's claims, its nearest nodes
    with what each lacks ("nearest: node-a1: 300m cpu short (NodeResourcesFit)"), and the hints."""
    lines = [f"volume: {claim_line(c)}" for c in failure.get("volumes", ())]
    lines += [f"nearest: {nearest_line(near)}" for near in failure.get("nearest", ())]
    lines += [f"hint: {hint}" for hint in failure.get("hints", ())]
    return lines


def _check_victims(report: dict[str, Any], console: Console, wide: bool) -> None:
    """Per workload whose preemptions evicted pods: how many, of which priorities, what they held."""
    evicting = [e for e in report["workloads"] if (e.get("victims") or {}).get("pods")]
    for e in evicting:
        console.print(Text.assemble((f"{e['kind']}/{e['namespace']}/{e['name']}", "bold"),
                                    f" evicts {victims_line(e['victims'])}"))
        if wide:
            for v in e["victims"]["evicted"]:
                console.print(f"  evicts {v['pod']} on {v['node']} (priority {v['priority']}) for {v['preemptor']}",
                              highlight=False)
    if evicting:
        console.print(NOT_REPLACED, highlight=False)


def render_capacity(report: dict[str, Any], console: Console, *, wide: bool = False) -> None:
    """The replica count (free and by preemption), the per-zone and per-node split, the victims, what
    stopped it, and what preemption would add to a count that did not allow it."""
    console.print(Text(_capacity_headline(report), style="bold"))
    if report["perZone"]:
        zones = kubectl_table("Zone", "Replicas", names=("Zone",))
        for zone, c in report["perZone"].items():
            zones.add_row(zone, str(c))
        console.print()
        console.print(zones)
    if report["perNode"]:
        nodes = kubectl_table("Node", "Replicas", names=("Node",))
        for node, c in sorted(report["perNode"].items(), key=lambda kv: (-kv[1], kv[0])):
            nodes.add_row(node, str(c))
        console.print()
        console.print(nodes)
    if report.get("victims"):
        console.print()
        render_victims(report["victims"], console, wide=wide)
    console.print()
    console.print(Text(f"Stopped: {report['stopReason']}", style="yellow"))
    if report.get("hpa"):
        console.print(Text(report["hpa"]["summary"], style="bold"))
    more = report.get("withPreemption") or {}
    if more.get("more"):
        console.print(Text(_with_preemption_line(more), style="yellow"))
    _nodes_needed(report, console)
    if report.get("kubeVersion"):
        console.print(Text(release_line(report), style="dim"))


def _capacity_headline(report: dict[str, Any]) -> str:
    headline = f"{report['replicas']} more replica(s) of {report['pod']} fit"
    if report.get("allowPreemption"):
        headline += f": {report['replicasFree']} in free room, {report['replicasByPreemption']} only by preempting"
        freed = report["replicasByPreemption"] - report["preemptingReplicas"]
        if freed:
            headline += f" ({freed} of them in room that earlier evictions freed)"
    return headline


def _with_preemption_line(more: dict[str, Any]) -> str:
    """What preemption would add: "With preemption, at least 1 more fits: ns/rep-9 would evict …"."""
    count = f"{'' if more['exact'] else 'at least '}{more['more']} more"
    return (f"With preemption, {count} would fit: {more['replica']} would evict on {more['node']} "
            f"{victims_line(more['victims'])}" + ("" if more["exact"] else "; --allow-preemption counts them all."))


def _nodes_needed(report: dict[str, Any], console: Console) -> None:
    """With --add-node FILE:auto: `needs 3 × node-c-large`, or why no count was enough."""
    if "nodesNeeded" in report:
        style = "bold red" if report["nodesNeeded"] is None else "bold"
        console.print(Text(report["nodesNeededSummary"], style=style))
