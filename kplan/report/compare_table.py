"""Human output of `kplan compare`, from its report dict only."""
from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from kplan.report.table import kubectl_table, percent


def _place(p: dict[str, Any]) -> str:
    if p["outcome"] == "Scheduled":
        return p["node"]
    return f"{p['outcome']}" + (f" ({p['plugin']})" if p.get("plugin") else "") + \
        (f" on {p['node']}" if p.get("node") else "")


def _decided(entry: dict[str, Any]) -> str:
    parts = []
    for e in entry.get("explanations", ()):
        plugin = e["decidedBy"] or "-"
        parts.append(f"{e['variant']}: {plugin}" + (f" (node filtered in {e['filtered']})" if e.get("filtered") else ""))
    return "; ".join(parts)


def render_compare(report: dict[str, Any], console: Console, *, wide: bool = False) -> None:
    """Pods whose placement differs (every pod when wide), then the figures of each variant."""
    names = [v["name"] for v in report["variants"]]
    pods = report["pods"] if wide else [p for p in report["pods"] if p["differs"]]
    if pods:
        table = kubectl_table("Pod", *names, "Decided by", names=("Pod",))
        for p in pods:
            table.add_row(p["pod"], *(_place(p["placements"][n]) for n in names), _decided(p))
        console.print(table)
    console.print(Text(f"{report['differing']} of {len(report['pods'])} pod(s) placed differently",
                       style="bold"))
    console.print()
    rows = [("Placed", lambda v: f"{v['summary']['scheduled']}/{v['summary']['pods']}"),
            ("Need preemption", lambda v: str(v["summary"]["needsPreemption"])),
            ("Unschedulable", lambda v: str(v["summary"]["unschedulable"])),
            ("Nodes used / empty", lambda v: f"{v['metrics']['nodesUsed']} / {v['metrics']['nodesEmpty']}"),
            ("Nodes the run used", lambda v: str(v["metrics"]["nodesUsedByRun"]))]
    for r in ("cpu", "memory"):
        rows.append((f"Requested {r} mean ± sd",
                     lambda v, r=r: f"{percent(v['metrics']['requestedRatio'][r]['mean'])} ± "
                                    f"{percent(v['metrics']['requestedRatio'][r]['stddev'])}"))
        rows.append((f"Requested {r} max", lambda v, r=r: percent(v["metrics"]["requestedRatio"][r]["max"])))
    rows.append(("Largest free cpu / memory",
                 lambda v: f"{v['metrics']['largestFree']['cpu']} / {v['metrics']['largestFree']['memory']}"))
    rows.append(("Pods per zone", lambda v: ", ".join(f"{z}={c}" for z, c in v["metrics"]["zones"].items()) or "-"))
    rows.append(("Largest zone skew", lambda v: ", ".join(
        f"{w.split('/', 1)[1]}={s}" for w, s in v["metrics"]["zoneSkew"].items()) or "-"))
    table = kubectl_table("", *names)
    for label, cell in rows:
        table.add_row(label, *(cell(v) for v in report["variants"]))
    console.print(table)
    for v in report["variants"]:
        console.print(Text(f"{v['name']}: {v['flags'] or '(no flags)'} (kube-scheduler {v['kubeVersion']})",
                           style="dim"))
