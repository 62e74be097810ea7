"""The compare page: the variants' figures side by side, then the pods they placed differently."""
from __future__ import annotations

from typing import Any, Sequence

from kplan.api.resources import CPU, MEMORY, amount
from kplan.report.html.header import RELEASE_SOURCES, header, used_profiles
from kplan.report.html.page import render
from kplan.report.html.placement import OUTCOME_TONES
from kplan.report.units import column_formatters, in_unit
from kplan.sources.snapshot import Snapshot

SUMMARY = (("pods", "Pods"), ("scheduled", "Placed"), ("needsPreemption", "Need preemption"),
           ("unschedulable", "Unschedulable"))
NODES = (("nodes", "Nodes"), ("nodesUsed", "Nodes used"), ("nodesEmpty", "Nodes empty"),
         ("nodesUsedByRun", "Nodes the run used"))
STATS = (("mean", "mean"), ("stddev", "standard deviation"), ("max", "max"))


def _cell(value: Any, text: str | None = None, bar: float | None = None) -> dict[str, Any]:
    """A variant's cell: the number sorting and tests read (data-v), its text, and a bar's length."""
    return {"v": "" if value is None else value, "text": "—" if value is None else text or str(value), "bar": bar}


def _row(metric: str, label: str, cells: Sequence[dict[str, Any]], group: str) -> dict[str, Any]:
    return {"metric": metric, "label": label, "cells": list(cells), "group": group}


def _ratio_cell(ratio: float) -> dict[str, Any]:
    # Requested over allocatable: the bar runs to 100%, the text says any excess.
    return _cell(ratio, f"{ratio * 100:.1f}%", round(min(max(ratio, 0.0), 1.0) * 100, 1))


def metric_rows(variants: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per figure of the report's variants, grouped; a zone or workload a variant does not
    have is an empty cell."""
    metrics = [v["metrics"] for v in variants]
    rows = [_row(f"summary.{k}", label, [_cell(v["summary"][k]) for v in variants], "Pods") for k, label in SUMMARY]
    rows += [_row(k, label, [_cell(m[k]) for m in metrics], "Nodes") for k, label in NODES]
    for r in (CPU, MEMORY):
        rows += [_row(f"requestedRatio.{r}.{k}", f"{r} {label}",
                      [_ratio_cell(m["requestedRatio"][r][k]) for m in metrics], "Requested over allocatable, per node")
                 for k, label in STATS]
    for r in (CPU, MEMORY):
        unit = column_formatters((), [(r, m["largestFree"][r]) for m in metrics], cores=True)
        rows.append(_row(f"largestFree.{r}", r, [_cell(amount(r, m["largestFree"][r]),
                                                       in_unit(unit, r, m["largestFree"][r])) for m in metrics],
                         "Largest free on one node"))
    for key, group in (("zones", "Pods placed per zone"), ("zoneSkew", "Zone skew per workload (pods)")):
        names = sorted({name for m in metrics for name in m[key]})
        rows += [_row(f"{key}.{name}", name, [_cell(m[key].get(name)) for m in metrics], group) for name in names]
    return rows


def moved_pods(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The pods whose outcome or node differ between variants, each variant's placement toned."""
    rows = []
    for p in report["pods"]:
        if not p["differs"]:
            continue
        places = [{"variant": name, "tone": OUTCOME_TONES.get(place["outcome"], "muted"), **place}
                  for name, place in p["placements"].items()]
        rows.append({"pod": p["pod"], "workload": p["workload"], "places": places,
                     "explanations": p.get("explanations", [])})
    return rows


def compare_header(snapshot: Snapshot, sources: Sequence[str] | None, report: dict[str, Any],
                   planners: Sequence[Any]) -> dict[str, Any]:
    """The header of the snapshot, with each variant's flags, release, profiles and the plugins it
    does not simulate as facts (`planners`: the variants' planners, in the report's order)."""
    head = header("compare", snapshot, sources)
    for v, planner in zip(report["variants"], planners):
        source = RELEASE_SOURCES.get(v["kubeVersionSource"], v["kubeVersionSource"])
        profiles = "; ".join(f"profile {name}, not simulated: {', '.join(plugins) or 'none'}"
                             for name, plugins in used_profiles(planner).items())
        head["facts"].append((f"Variant {v['name']}", f"{v['flags'] or '(no flags)'} · kube-scheduler "
                                                      f"{v['kubeVersion']}, from {source} · {profiles}"))
    return head


def compare_page(report: dict[str, Any], head: dict[str, Any]) -> str:
    tiles = [{"label": "variants", "value": len(report["variants"]), "tone": ""},
             {"label": "pods", "value": len(report["pods"]), "tone": ""},
             {"label": "placed differently", "value": report["differing"],
              "tone": "warn" if report["differing"] else ""}]
    return render("compare.html.j2", head=head, tiles=tiles, variants=report["variants"],
                  rows=metric_rows(report["variants"]), moved=moved_pods(report))
