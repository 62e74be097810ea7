"""Human output: kubectl-style tables rendered with Rich, from the report dicts only."""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable, Sequence

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from kplan.planning.check import NO_ZONE, ZONE_LABEL
from kplan.report.names import some_names
from kplan.report.node_columns import label_header, taints_text
from kplan.report.units import column_formatters, in_unit

FEW_NAMES = 3
GAP = 3  # kubectl's gap between columns


def _cell_text(cell: Any) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


class KubectlTable(Table):
    """A borderless table laid out as kubectl prints: each column as wide as its widest cell.

    When that is wider than the console (a terminal), the widest columns wrap first, between words
    only; a column of names (`no_wrap`) is never wrapped, and no word is broken. Piped output gets a
    console as wide as any line (kplan/cli/console.py), so there every row stays one line.
    """

    def _fit(self, max_width: int) -> list[int] | None:
        """Column widths (padding excluded) that fit max_width, or None when the natural ones do."""
        columns = self.columns
        natural, floor = [], []
        for column in columns:
            texts = [column.header if isinstance(column.header, str) else _cell_text(column.header),
                     *(_cell_text(c) for c in column.cells)]
            lines = [line for text in texts for line in text.splitlines() or [""]]
            natural.append(max(cell_len(line) for line in lines))
            if column.no_wrap:
                floor.append(natural[-1])
            else:
                floor.append(max((cell_len(word) for line in lines for word in line.split()), default=0))
        padding = GAP * (len(columns) - 1)
        excess = sum(natural) + padding - max_width
        if excess <= 0:
            return None
        widths = list(natural)
        while excess > 0:  # narrow the widest wrappable columns, level by level, down to their floors
            movable = [i for i, w in enumerate(widths) if w > floor[i]]
            if not movable:
                break
            top = max(widths[i] for i in movable)
            tops = [i for i in movable if widths[i] == top]
            lower = max((widths[i] for i in movable if widths[i] < top), default=0)
            step = min(top - lower, -(-excess // len(tops)))
            for i in tops:
                cut = min(step, widths[i] - floor[i], excess)
                widths[i] -= cut
                excess -= cut
        return widths

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widths = self._fit(options.max_width)
        if widths is None:
            yield from super().__rich_console__(console, options)
            return
        needed = sum(widths) + GAP * (len(widths) - 1)
        if needed > options.max_width:  # the names and words alone are wider: let the lines run long
            options = options.update_width(needed)
        for column, width in zip(self.columns, widths):
            column.width = width
        try:
            yield from super().__rich_console__(console, options)
        finally:
            for column in self.columns:
                column.width = None


def kubectl_table(*headers: str, names: Iterable[str] = ()) -> KubectlTable:
    """Returns a borderless table with UPPERCASE headers and kubectl's 3-space gaps; the columns of
    `names` (headers as given) hold names that are never wrapped."""
    whole = set(names)
    table = KubectlTable(box=None, pad_edge=False, show_edge=False, padding=(0, GAP, 0, 0), header_style="bold")
    for h in headers:
        table.add_column(h.upper(), overflow="fold", no_wrap=h in whole)
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
        render_nearest(entry.get("nearest", ()), entry.get("hints", ()), console)
        _render_preemption(entry, console)
        for explained in entry.get("explain", ()):
            render_explain(explained, console)
        if entry["notSimulated"]:
            console.print(Text(f"Not simulated: {', '.join(entry['notSimulated'])}", style="dim"))
    if report.get("kubeVersion"):
        console.print(Text(release_line(report), style="dim"))


def release_line(report: dict[str, Any]) -> str:
    """Names the release answered as, and how it was chosen when the kubelets' versions told it."""
    version = report["kubeVersion"]
    if report.get("kubeVersionSource") != "kubelet":
        return f"Answered as kube-scheduler {version} would."
    kubelet = report.get("kubeletVersion") or "?"
    known = kubelet.lstrip("v").split(".")[:2] == version.split(".")[:2]
    how = "inferred from kubelet versions" if known else "the nearest release kplan knows to the kubelet versions"
    return (f"Answered as kube-scheduler {version} would, {how} (newest {kubelet}; the snapshot records "
            "no server version); --kube-version overrides.")


def _render_pod(entry: dict[str, Any], console: Console) -> None:
    info = entry["podInfo"]
    requests = ", ".join(f"{r}={q}" for r, q in info["requests"].items()) or "none"
    limits = ", ".join(f"{r}={q}" for r, q in info["limits"].items()) or "none"
    console.print(Text.assemble(("Pod ", "bold"), (entry["pod"], "bold cyan"),
                                f"   profile {entry['profile']}   QoS {info['qosClass']}   "
                                f"priority {info['priority']}"))
    console.print(f"  requests: {requests}   limits: {limits}", highlight=False)
    for claim in entry.get("volumes", ()):
        console.print(f"  volume: {claim_line(claim)}", highlight=False)


def claim_line(claim: dict[str, Any]) -> str:
    """One claim of a pod: "claim data-0 bound to pv-7 in zone-a (zone in (zone-a)), class fast (WaitForFirstConsumer)"."""
    name = f"claim {claim['claim']}"
    if claim["status"] == "Missing":
        return f"{name} does not exist"
    if claim.get("volume"):
        where = f" in {claim['zone']}" if claim.get("zone") else ""
        affinity = f" ({claim['nodeAffinity']})" if claim.get("nodeAffinity") else ""
        verb = "bound to" if claim["status"] == "Bound" else "to bind"
        state = f"{verb} {claim['volume']}{where}{affinity}"
    elif claim.get("selectedNode"):
        state = f"to be provisioned on {claim['selectedNode']}"
    else:
        state = "unbound"
    cls = f", class {claim['storageClass']}" if claim.get("storageClass") else ", no class"
    mode = f" ({claim['bindingMode']})" if claim.get("bindingMode") else ""
    return f"{name} {state}{cls}{mode}"


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
    for note in entry.get("notes", ()):
        console.print(f"Note: {note}", style="dim")
    if "runsOn" in entry:
        console.print(_runs_on(entry), style="dim")


def _runs_on(entry: dict[str, Any]) -> str:
    """Compares a re-planned pod's node now with the one it runs on."""
    runs_on = entry["runsOn"]
    if runs_on is None:
        return "Re-planned: the pod runs on no node yet."
    if entry["outcome"] == "Scheduled" and entry["node"] == runs_on:
        return f"Re-planned: the pod runs on {runs_on}, where kube-scheduler would put it now."
    return f"Re-planned: the pod runs on {runs_on}; kube-scheduler would not put it there now."


def _render_preemption(entry: dict[str, Any], console: Console) -> None:
    """Prints the nominated node with its victims, every candidate node, and quota usage before -> after."""
    chosen = entry.get("preemption")
    if chosen:
        console.print()
        victims = ", ".join(chosen["victims"])
        console.print(Text.assemble(("Preemption", "bold yellow"), f" by {chosen['plugin']}: nominated node ",
                                    (chosen["node"], "bold"), f", evicting {len(chosen['victims'])} pod(s): {victims}"))
    if len(entry.get("candidates") or ()) > (1 if chosen else 0):
        table = kubectl_table("candidate node", "victims", "pdb violations", "pods", names=("candidate node",))
        for c in entry["candidates"]:
            mark = " (nominated)" if chosen and c["node"] == chosen["node"] else ""
            table.add_row(c["node"] + mark, str(len(c["victims"])), str(c["pdbViolations"]), ", ".join(c["victims"]))
        console.print()
        console.print(table)
    for q in (chosen or {}).get("quota", ()):
        table = kubectl_table("quota", "resource", "min", "max", "used before", "used after",
                              names=("quota", "resource"))
        columns = ("min", "max", "before", "after")
        unit = column_formatters((), [(r, v) for c in columns for r, v in q[c].items()])
        for r in sorted(set(q["before"]) | set(q["after"]) | set(q["min"])):
            table.add_row(f"{q['namespace']}/{q['name']}", r, *(in_unit(unit, r, q[c].get(r, "0")) for c in columns))
        console.print()
        console.print(table)


def _render_ranked(entry: dict[str, Any], console: Console, *, wide: bool, top: int) -> None:
    ranked = [n for n in entry["nodes"] if n["feasible"]]
    if not ranked:
        return
    plugins = list(entry["weights"]) if wide else []
    table = kubectl_table("rank", "node", "score", "cpu req", "mem req", "cpu lim", "mem lim", *plugins,
                          names=("node",))
    shown = ranked if top <= 0 else ranked[:top]
    for n in shown:
        after = n["requestedAfter"]
        scores = [str(n["scores"].get(p, "-")) for p in plugins]
        limits = [_limit_change(n.get("ratios", {}).get(r)) for r in ("cpu", "memory")]
        table.add_row(str(n["rank"]), n["name"], str(n["totalScore"]), percent(after["cpu"]),
                      percent(after["memory"]), *limits, *scores)
    console.print()
    console.print(table)
    if len(ranked) > len(shown):
        console.print(Text(f"... and {len(ranked) - len(shown)} more feasible node(s) (--top 0 shows all)",
                           style="dim"))


def _limit_change(r: dict[str, Any] | None) -> Text:
    """Renders a limit-to-allocatable ratio before -> after ("125%→175%"), red when it passes 100%."""
    if not r or r.get("limit") is None:
        return Text("-")
    after = r["limitAfter"]
    style = "red" if after > 1 else ""
    return Text(f"{percent(r['limit'])}\u2192{percent(after)}", style=style)


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


def render_nearest(nearest: Sequence[dict[str, Any]], hints: Sequence[str], console: Console) -> None:
    """What would make a pod fit: the nearest nodes, each with everything it lacks, then the hints."""
    if nearest:
        table = kubectl_table("nearest node", "plugin", "what it lacks", names=("nearest node",))
        for near in nearest:
            for k, lack in enumerate(near["lacks"]):
                table.add_row(near["node"] if k == 0 else "", lack["plugin"], lack["text"])
        console.print()
        console.print(table)
    for hint in hints:
        console.print(Text(f"  hint: {hint}", style="cyan"))


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


def render_quota_status(report: dict[str, Any], console: Console, *, verbose: bool = False) -> None:
    """Prints one row per ElasticQuota and resource, the cluster totals, then the warnings: one line
    per kind of warning, naming the first quotas it is about (every one with `verbose`)."""
    quotas = report["quotas"]
    if not quotas:
        where = f"in namespace {report['namespace']}" if report.get("namespace") else "in the snapshot"
        console.print(f"No ElasticQuota {where}" + (" (-A lists every namespace)" if report.get("namespace") else ""))
    else:
        columns = ("min", "max", "used", "borrowed", "lendable")
        with_status = any(q["statusUsed"] is not None for q in quotas)
        shown = [(r, q[c][r]) for q in quotas for c in columns for r in q[c]]
        shown += [(r, v) for q in quotas for r, v in (q["statusUsed"] or {}).items()]
        unit = column_formatters((), shown)
        table = kubectl_table("namespace", "name", "resource", *columns, "share",
                              *(["status.used"] if with_status else []), names=("namespace", "name", "resource"))
        for q in quotas:
            for r in q["used"]:
                share = q["share"][r]
                row = [q["namespace"], q["name"], r,
                       *(in_unit(unit, r, q[c][r]) for c in columns), percent(share) if share is not None else "-"]
                if with_status:
                    row.append(in_unit(unit, r, (q["statusUsed"] or {}).get(r)))
                borrowing = q["borrowed"][r] not in ("0", "0m")
                table.add_row(*row, style="yellow" if borrowing else None)
        console.print(table)
    cluster = report["cluster"]
    sums = ("capacity", "totalMin", "totalUsed")
    unit = column_formatters(cluster["capacity"], [(r, cluster[c][r]) for c in sums for r in cluster[c]])
    table = kubectl_table("cluster", "capacity", "total min", "total used", names=("cluster",))
    for r in cluster["capacity"]:  # readable units (88.2Gi), one per resource; exact in the JSON
        table.add_row(r, *(in_unit(unit, r, cluster[c][r]) for c in sums))
    console.print()
    console.print(table)
    over = [f"{q['namespace']}/{q['name']}" for q in quotas if q["overMin"]]
    if over:
        console.print(Text(f"Using more than their min (their pods may be preempted by quotas within min): "
                           f"{some_names(over, verbose)}", style="yellow"))
    for w in grouped_quota_warnings(report, verbose):
        console.print(Text(f"warning: {w}", style="yellow"))


def grouped_quota_warnings(report: dict[str, Any], verbose: bool) -> list[str]:
    """The report's warnings in order, those about single quotas grouped by what they say, where the
    first is: "… (20 quotas: team-00/q, team-01/q, team-02/q, … (17 more; -v lists all))"; a warning
    about one quota only reads as it is."""
    quotas_of: dict[str, list[str]] = {}
    text_of: dict[str, str] = {}
    for q in report["quotas"]:
        key = f"{q['namespace']}/{q['name']}"
        for w in q["warnings"]:
            quotas_of.setdefault(w, []).append(key)
            text_of[f"{key}: {w}"] = w
    out, done = [], set()
    for line in report["warnings"]:
        w = text_of.get(line)
        if w is None or len(quotas_of[w]) == 1:
            out.append(line)
        elif w not in done:
            done.add(w)
            keys = quotas_of[w]
            out.append(f"{w} ({len(keys)} quotas: {some_names(keys, verbose)})")
    return out


def render_quota_check(report: dict[str, Any], console: Console) -> None:
    """Prints, per pod, its quota verdict (PreFilter) and the placement, with any preemption."""
    for k, check in enumerate(report["checks"]):
        if k:
            console.print()
        request = ", ".join(f"{r}={v}" for r, v in check["request"].items()) or "none"
        console.print(Text.assemble(("Pod ", "bold"), (check["pod"], "bold cyan"), f"   requests {request}"))
        q = check["quota"]
        if q is None:
            console.print("  no ElasticQuota in its namespace: the quota checks pass")
        else:
            columns = ("used", "min", "max")
            unit = column_formatters((), [(r, q[c][r]) for c in columns for r in q[c]])
            table = kubectl_table("quota", "resource", *columns, names=("quota", "resource"))
            for r in q["used"]:
                table.add_row(f"{q['namespace']}/{q['name']}", r, *(in_unit(unit, r, q[c][r]) for c in columns))
            console.print(table)
        pre = check["preFilter"]
        console.print(Text.assemble(("Quota check: ", "bold"), ("passed", "bold green") if pre["passed"]
                                    else ("rejected", "bold red"), f" {pre['message']}" if pre["message"] else ""))
        entry = check["placement"]
        _render_outcome(entry, console)
        _render_preemption(entry, console)


# -- kplan nodes ------------------------------------------------------------------------------------

_NODE_RESOURCES_SHORT = {"cpu": "cpu", "memory": "mem", "ephemeral-storage": "storage"}


def node_units(report: dict[str, Any]) -> dict[str, Any]:
    """One unit per resource over every amount a node report shows (column_unit)."""
    amounts = []
    for row in [*report["nodes"], report["totals"], *report.get("groups", ())]:
        for field in ("allocatable", "requests", "limits", "requestsAfter", "limitsAfter"):
            amounts += list((row.get(field) or {}).items())
        for r, ratios in row["ratios"].items():
            amounts += [(r, ratios[k]) for k in ("headroom", "limitCapacity", "headroomAfter") if ratios.get(k)]
    return column_formatters(report["resources"], amounts)


def _ratio_cell(unit, resource: str, amount: str, ratio: float | None,
                after: tuple[str, float | None] | None) -> str:
    text = f"{in_unit(unit, resource, amount)} ({percent(ratio) if ratio is not None else '-'})"
    if after is not None and after[0] != amount:
        text += f" \u2192 {in_unit(unit, resource, after[0])} ({percent(after[1]) if after[1] is not None else '-'})"
    return text


def render_nodes(report: dict[str, Any], console: Console, *, wide: bool = False) -> None:
    """Prints the node report: status, zone and taints, allocatable, requests and limits with ratios,
    limit headroom, QoS mix, and any label columns; or, grouped (--group-by), the totals per group.

    Each resource is written in one unit over the table (column_unit). Limits above allocatable are
    yellow; limits above the configured limit capacity are red and marked "!". With placed pods
    (--after), changed cells show before -> after.
    """
    if "groups" in report:
        _render_groups(report, console, wide=wide)
    else:
        _render_node_rows(report, console, wide=wide)
    placed = report.get("placed")
    if placed:
        console.print()
        for p in placed:
            where = f"on {p['node']}" if p["node"] else ""
            console.print(Text.assemble((p["pod"], "bold cyan"), f": {p['outcome']} {where}".rstrip(),
                                        style="" if p["outcome"] == "Scheduled" else "red"))


def _shown_resources(report: dict[str, Any], wide: bool) -> list[str]:
    return report["resources"] if wide else [r for r in report["resources"] if r in ("cpu", "memory")]


def _render_node_rows(report: dict[str, Any], console: Console, *, wide: bool) -> None:
    resources = _shown_resources(report, wide)
    placed = report.get("placed")
    unit = node_units(report)
    labels = report.get("labelColumns", [])
    zone = ZONE_LABEL not in labels and any(node.get("zone") for node in report["nodes"])
    headers = ["node", "status", *(["zone"] if zone else []), "taints", "pods", "qos g/b/be"]
    for r in resources:
        short = _NODE_RESOURCES_SHORT.get(r, r)
        headers += [r, f"{short} req", f"{short} lim", f"{short} headroom"]
    csi = wide and any(node.get("csiVolumes") for node in report["nodes"])
    if csi:
        headers.append("csi volumes")
    drivers = list(report["totals"].get("devices") or ()) if wide else []
    headers += [f"{driver} free/total" for driver in drivers]
    table = kubectl_table(*headers, names=("node",))
    for key in labels:
        table.add_column(label_header(key).upper(), overflow="fold")
    for node in [*report["nodes"], None]:
        is_total = node is None
        row = report["totals"] if is_total else node
        if is_total:  # the * row sums amounts; status, zone and taints do not add up
            cells: list[Any] = ["*", "-", *(["-"] if zone else []), "-"]
        else:
            cells = [node["name"], _status_cell(node["status"]), *([node.get("zone") or NO_ZONE] if zone else []),
                     (taints_text(node["taints"]) or "<none>") if wide else str(len(node["taints"]))]
        cells += [_pods_cell(row, placed is not None), _qos_cell(row["qos"])]
        for r in resources:
            cells += _resource_cells(unit, r, row, after=placed is not None, total=is_total)
        if csi:
            cells.append("" if is_total else csi_cell(node.get("csiVolumes") or {}))
        for driver in drivers:
            counts = (row.get("devices") or {}).get(driver)
            cells.append(f"{counts['free']}/{counts['total']}" if counts else "-")
        cells += ["" if is_total else node["labels"].get(key) or "" for key in labels]
        table.add_row(*cells, style="bold" if is_total else "")
    console.print(table)


def _status_cell(status: str) -> Text:
    """kubectl's STATUS; red when not Ready, yellow when cordoned."""
    style = "" if status == "Ready" else "red" if not status.startswith("Ready") else "yellow"
    return Text(status, style=style)


def _pods_cell(row: dict[str, Any], after: bool) -> str:
    if not after or row.get("podsAfter", row["pods"]) == row["pods"]:
        return str(row["pods"])
    return f"{row['pods']} \u2192 {row['podsAfter']}"


def _qos_cell(qos: dict[str, int]) -> str:
    return f"{qos['Guaranteed']}/{qos['Burstable']}/{qos['BestEffort']}"


def _resource_cells(unit, r: str, row: dict[str, Any], *, after: bool, total: bool,
                    headroom: bool = True) -> list[Any]:
    """A resource's allocatable, requests and limits with their ratios (before -> after a run), and
    the limit headroom under the configured ratio."""
    ratios = row["ratios"][r]
    after_req = after_lim = None
    if after:
        after_req = (row["requestsAfter"][r], ratios.get("requestAfter"))
        after_lim = (row["limitsAfter"][r], ratios.get("limitAfter"))
    lim = Text(_ratio_cell(unit, r, row["limits"][r], ratios["limit"], after_lim))
    cells: list[Any] = [in_unit(unit, r, row["allocatable"][r]),
                        _ratio_cell(unit, r, row["requests"][r], ratios["request"], after_req), lim]
    if not total:
        if ratios.get("overLimitCapacity"):
            lim.append("!")
            lim.stylize("bold red")
        elif ratios.get("overSubscribed"):
            lim.stylize("yellow")
    if headroom:
        cells.append(_headroom_cell(unit, r, ratios, after) if not total else Text("-"))
    return cells


def _headroom_cell(unit, r: str, ratios: dict[str, Any], after: bool) -> Text:
    if ratios.get("headroom") is None:
        return Text("-")
    text = (f"{in_unit(unit, r, ratios['headroom'])} of {in_unit(unit, r, ratios['limitCapacity'])} "
            f"({percent(ratios['limitToAllocatable'])})")
    if after and ratios.get("headroomAfter") != ratios["headroom"]:
        text += f" \u2192 {in_unit(unit, r, ratios['headroomAfter'])}"
    negative = (ratios.get("headroomAfter") or ratios["headroom"]).startswith("-")
    return Text(text, style="red" if negative else "")


def _render_groups(report: dict[str, Any], console: Console, *, wide: bool) -> None:
    """--group-by: a row per value of the label with its nodes' totals, then the * row of them all."""
    resources = _shown_resources(report, wide)
    after = report.get("placed") is not None
    unit = node_units(report)
    headers = [label_header(report["groupBy"]), "nodes", "pods", "qos g/b/be"]
    for r in resources:
        short = _NODE_RESOURCES_SHORT.get(r, r)
        headers += [r, f"{short} req", f"{short} lim"]
    table = kubectl_table(*headers, names=(headers[0],))
    for group in [*report["groups"], None]:
        row = report["totals"] if group is None else group
        cells: list[Any] = ["*" if group is None else group["name"], str(row["nodes"]), _pods_cell(row, after),
                            _qos_cell(row["qos"])]
        for r in resources:
            cells += _resource_cells(unit, r, row, after=after, total=True, headroom=False)
        table.add_row(*cells, style="bold" if group is None else "")
    console.print(table)


def csi_cell(volumes: dict[str, dict[str, int | None]]) -> Text:
    """"ebs.csi.aws.com 25/25" per driver (attached / limit, "-" without one); red at the limit."""
    text = Text()
    for k, (driver, v) in enumerate(sorted(volumes.items())):
        if k:
            text.append(", ")
        limit = v["limit"]
        full = limit is not None and v["attached"] >= limit
        text.append(f"{driver} {v['attached']}/{limit if limit is not None else '-'}", style="red" if full else "")
    return text


def render_node_usage(report: dict[str, Any], console: Console) -> None:
    """Prints a NodeUsageReport (kplan/report/usage.py): load as LoadAwareScheduling sees it.

    Per node and resource: "used" is the measured usage, "est" the usage the filter counts for the
    pods already there (measured + pods not yet in the metric; "+pod" with the given pod), "max"
    the threshold. A stale metric is red and marked "stale"; a usage over its threshold is red.
    """
    with_pod = report.get("pod") is not None
    headers = ["node", "metric age"]
    resources: list[str] = []
    for row in report["nodes"]:
        for r in [*(row.get("thresholds") or {}), "cpu", "memory"]:
            if r not in resources:
                resources.append(r)
    for r in resources:
        short = _NODE_RESOURCES_SHORT.get(r, r)
        headers += [f"{short} used", f"{short} +pod" if with_pod else f"{short} est", f"{short} max"]
    if with_pod:
        headers.append("filter")
    table = kubectl_table(*headers, names=("node",))
    unit = column_formatters(resources, [(r, v) for row in report["nodes"] for key in ("measured", "estimated",
                                                                                      "estimatedIfPlaced")
                                         for r, v in (row.get(key) or {}).items() if v is not None])
    for row in report["nodes"]:
        if not row["metric"]:
            age = Text("no NodeMetric", style="dim")
        elif row["metricAge"] is None:
            age = Text("never (stale)", style="red")
        else:
            age = Text(f"{row['metricAge']:.0f}s" + (" (stale)" if row["stale"] else ""),
                       style="red" if row["stale"] else "")
        cells: list[Any] = [row["name"], age]
        for r in resources:
            threshold = (row.get("thresholds") or {}).get(r)
            measured = (row.get("measured") or {}).get(r)
            key, pct_key = ("estimatedIfPlaced", "usagePercentIfPlaced") if with_pod else ("estimated", "usagePercent")
            estimated = (row.get(key) or {}).get(r)
            pct = (row.get(pct_key) or {}).get(r)
            est = Text("-" if estimated is None else f"{in_unit(unit, r, estimated)} ({pct}%)")
            if threshold and pct is not None and pct > threshold:
                est.stylize("red")
            cells += [in_unit(unit, r, measured), est,
                      f"{threshold}%" if threshold else "-"]
        if with_pod:
            cells.append(Text(row.get("rejection") or "fits", style="red" if row.get("rejection") else ""))
        table.add_row(*cells)
    console.print(table)
