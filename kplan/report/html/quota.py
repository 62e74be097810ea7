"""The quota section: per ElasticQuota and resource, min / max / used / borrowed / lendable as a
stacked bar beside them in readable units (one per resource; the report's exact quantity strings in
the rows' data attributes), then the cluster's totals."""
from __future__ import annotations

from typing import Any

from kplan.api.resources import amount
from kplan.report.html.page import render
from kplan.report.units import UNLIMITED, column_formatters, in_unit
FIELDS = ("min", "max", "used", "borrowed", "lendable")


def _amount(resource: str, text: str) -> int | None:
    """A report quantity as the scheduler counts it (milli-cpu, bytes, units); None for unlimited."""
    return None if text == UNLIMITED else amount(resource, text)


def _x(value: int | None, top: int) -> float:
    return round(100 * value / top, 1) if value and top else 0.0


def quota_bar(resource: str, texts: dict[str, str], top: int, unit) -> dict[str, Any]:
    """One resource of one quota on a 0-100 track where 100 is `top`: used within min (solid),
    borrowed (used above min), lendable (min not used) and max as an outline (none when unlimited).
    `texts` are the report's exact quantities; `shown`, the same in the resource's unit (`unit`)."""
    amounts = {k: _amount(resource, texts[k]) for k in FIELDS}
    low, high, used = amounts["min"] or 0, amounts["max"], amounts["used"]
    within = min(used, low)
    shown = {k: in_unit(unit, resource, v) for k, v in texts.items()}
    return {"resource": resource, "texts": texts, "shown": shown, "amounts": amounts,
            "usedW": _x(within, top), "borrowedW": _x(max(used - low, 0), top),
            "lendableW": _x(max(low - used, 0), top), "minW": _x(low, top),
            "maxW": None if high is None else _x(high, top),
            "hover": f"{resource}: used {shown['used']} of min {shown['min']}, max {shown['max']}; "
                     f"borrowed {shown['borrowed']}, lendable {shown['lendable']}"}


def _scales(quotas: list[dict[str, Any]]) -> dict[str, int]:
    """Per resource, the largest finite min, max or used over every quota: all bars of a resource
    share one scale, so quotas compare at a glance."""
    top: dict[str, int] = {}
    for q in quotas:
        for r in q["used"]:
            values = [_amount(r, q[k][r]) for k in ("min", "max", "used")]
            top[r] = max([top.get(r, 0)] + [v for v in values if v is not None])
    return top


def cluster_rows(cluster: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    """Per resource: capacity, total min and total used, drawn on a track scaled to the largest."""
    rows = []
    for r, capacity in cluster["capacity"].items():
        texts = {"capacity": capacity, "totalMin": cluster["totalMin"][r], "totalUsed": cluster["totalUsed"][r]}
        unit = column_formatters((), [(r, v) for v in texts.values()], cores=True)
        shown = {k: in_unit(unit, r, v) for k, v in texts.items()}
        values = {k: amount(r, v) for k, v in texts.items()}
        top = max(values.values())
        rows.append({"resource": r, "texts": texts, "shown": shown, "usedW": _x(values["totalUsed"], top),
                     "minW": _x(values["totalMin"], top), "capacityW": _x(values["capacity"], top),
                     "hover": f"{r}: used {shown['totalUsed']}, total min {shown['totalMin']}, "
                              f"capacity {shown['capacity']}"})
    return rows


def quota_section(status: dict[str, Any]) -> dict[str, Any]:
    """The section's model, from a QuotaStatus report (kplan.report.quota.quota_status)."""
    top = _scales(status["quotas"])
    unit = column_formatters((), [(r, q[k][r]) for q in status["quotas"] for k in FIELDS for r in q[k]], cores=True)
    quotas = []
    for q in status["quotas"]:
        bars = [quota_bar(r, {k: q[k][r] for k in FIELDS}, top[r], unit) for r in q["used"]]
        quotas.append({"key": f"{q['namespace']}/{q['name']}", "bars": bars, "share": q["share"],
                       "borrowing": q["borrowing"], "statusUsed": q["statusUsed"]})
    return {"quotas": quotas, "cluster": cluster_rows(status["cluster"]), "warnings": status["warnings"]}


def quota_tiles(status: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"label": "quotas", "value": len(status["quotas"]), "tone": ""},
            {"label": "borrowing", "value": sum(q["borrowing"] for q in status["quotas"]), "tone": ""},
            {"label": "warnings", "value": len(status["warnings"]), "tone": "warn" if status["warnings"] else ""}]


def quota_page(status: dict[str, Any], head: dict[str, Any]) -> str:
    return render("quota_page.html.j2", head=head, tiles=quota_tiles(status), quota=quota_section(status))


def quota_after(planner) -> dict[str, Any] | None:
    """The section as the quotas stand after a run: `used` counts the node table's pods, the placed
    ones included and preemption's victims gone. None, computing nothing, when no profile runs
    CapacityScheduling."""
    from kplan.planning.quota import quota_usage
    from kplan.plugins.capacity_scheduling import NAME
    from kplan.report.quota import quota_status
    if not any(NAME in fw.plugins for fw in planner.frameworks.values()):
        return None
    placed = (pod for pods in planner.cluster.pods_by_node for pod in pods)
    return quota_section(quota_status(quota_usage(planner.snapshot, placed)))
