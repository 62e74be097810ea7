"""One page per command: the header, the summary tiles and the command's sections."""
from __future__ import annotations

from typing import Any, Sequence

from kplan.report.html.page import render
from kplan.report.html.placement import placement_view, pod_rows

DETAILED_PODS = 200  # pods whose scores and rejections are drawn; the table lists every pod

SUMMARY_TONES = {"scheduled": "ok", "placed": "ok", "needsPreemption": "warn", "unschedulable": "bad",
                 "failed": "bad", "gated": "muted"}


def tiles(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The summary counts as tiles, labelled in words ("needsPreemption" -> "needs preemption")."""
    return [{"label": _words(key), "value": value, "tone": SUMMARY_TONES.get(key, "") if value else ""}
            for key, value in summary.items()]


def _words(key: str) -> str:
    return "".join(f" {c.lower()}" if c.isupper() else c for c in key)


def place_page(report: dict[str, Any], head: dict[str, Any], nodes: dict[str, Any]) -> str:
    entries = report["placements"]
    details = [placement_view(e, f"pod-{k}") for k, e in enumerate(entries[:DETAILED_PODS])]
    return render("place.html.j2", head=head, tiles=tiles(report["summary"]), pods=pod_rows(entries),
                  details=details, undrawn=len(entries) - len(details), nodes=nodes)
