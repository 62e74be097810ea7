"""The pods a run's preemptions evicted: the `victims` object of the JSON contract and its tables.

`victims`: `{"pods", "cpu", "memory", "perPriority": [{"priority", "priorityClassName", "pods", "cpu",
"memory"}], "perNamespace": [{"namespace", "pods", "cpu", "memory"}], "evicted": [{"pod", "node",
"priority", "priorityClassName", "cpu", "memory", "preemptor"}]}`; cpu and memory are the requests
the pods held, as quantity strings. Groups are ordered by priority (then class name) and by namespace;
`evicted` in the order the preemptions evicted them.
"""
from __future__ import annotations

from typing import Any, Callable, Hashable, Sequence

from rich.console import Console
from rich.text import Text

from kplan.api.resources import CPU, MEMORY
from kplan.planning.victims import Eviction
from kplan.report.table import kubectl_table
from kplan.report.units import column_formatters, in_unit, quantity

NO_CLASS = "<none>"
NOT_REPLACED = "Evicted pods are not placed again: their controllers would recreate them, pending."


def victims_summary(victims: Sequence[Eviction]) -> dict[str, Any]:
    """The victims as counts and requests held, per priority and per namespace, and one by one."""
    return {"pods": len(victims), **_held(victims),
            "perPriority": [{"priority": priority, "priorityClassName": name, **_counted(group)}
                            for (priority, name), group in _groups(victims, _priority_key)],
            "perNamespace": [{"namespace": namespace, **_counted(group)}
                             for namespace, group in _groups(victims, lambda e: e.victim.namespace)],
            "evicted": [{"pod": e.victim.key, "node": e.node, "priority": e.victim.priority or 0,
                         "priorityClassName": e.victim.priority_class_name, **_held([e]), "preemptor": e.preemptor}
                        for e in victims]}


def _priority_key(e: Eviction) -> tuple[int, str]:
    return e.victim.priority or 0, e.victim.priority_class_name


def _groups(victims: Sequence[Eviction], key: Callable[[Eviction], Hashable]) -> list[tuple[Any, list[Eviction]]]:
    groups: dict[Any, list[Eviction]] = {}
    for e in victims:
        groups.setdefault(key(e), []).append(e)
    return sorted(groups.items())


def _counted(victims: Sequence[Eviction]) -> dict[str, Any]:
    return {"pods": len(victims), **_held(victims)}


def _held(victims: Sequence[Eviction]) -> dict[str, str]:
    """The cpu and memory requests the pods held, as the scheduler counted them on their nodes."""
    return {r: quantity(r, sum(e.victim.requests.get(r, 0) for e in victims)) for r in (CPU, MEMORY)}


def class_label(name: str) -> str:
    return name or NO_CLASS


def priority_label(group: dict[str, Any]) -> str:
    """"priority 10 (low)", or "priority 0" for pods without a class."""
    name = group["priorityClassName"]
    return f"priority {group['priority']}" + (f" ({name})" if name else "")


def victims_line(summary: dict[str, Any]) -> str:
    """The victims in words: "3 pod(s) (priority 0: 2, priority 10 (low): 1) holding 1.5 cpu, 3Gi memory"."""
    groups = ", ".join(f"{priority_label(g)}: {g['pods']}" for g in summary["perPriority"])
    unit = _held_units([summary])
    return (f"{summary['pods']} pod(s) ({groups}) holding {in_unit(unit, CPU, summary['cpu'])} cpu, "
            f"{in_unit(unit, MEMORY, summary['memory'])} memory")


def _held_units(rows: Sequence[dict[str, Any]]) -> dict[str, Callable[[int], str]]:
    """One unit per cpu and memory column over the rows, as every kplan table writes resources."""
    return column_formatters((CPU, MEMORY), [(r, row[r]) for row in rows for r in (CPU, MEMORY)])


def render_victims(summary: dict[str, Any], console: Console, *, wide: bool = False) -> None:
    """The victims per priority and per namespace; with `wide`, every evicted pod."""
    console.print(Text.assemble(("Evicted: ", "bold yellow"), victims_line(summary)))
    console.print(NOT_REPLACED, highlight=False)
    table = kubectl_table("Priority", "Class", "Pods", "CPU", "Memory", names=("Class",))
    unit = _held_units(summary["perPriority"])
    for g in summary["perPriority"]:
        table.add_row(str(g["priority"]), class_label(g["priorityClassName"]), str(g["pods"]),
                      in_unit(unit, CPU, g["cpu"]), in_unit(unit, MEMORY, g["memory"]))
    console.print()
    console.print(table)
    table = kubectl_table("Namespace", "Pods", "CPU", "Memory", names=("Namespace",))
    unit = _held_units(summary["perNamespace"])
    for g in summary["perNamespace"]:
        table.add_row(g["namespace"], str(g["pods"]), in_unit(unit, CPU, g["cpu"]), in_unit(unit, MEMORY, g["memory"]))
    console.print()
    console.print(table)
    if wide:
        table = kubectl_table("Evicted pod", "Node", "Priority", "CPU", "Memory", "Evicted for",
                              names=("Evicted pod", "Node", "Evicted for"))
        unit = _held_units(summary["evicted"])
        for e in summary["evicted"]:
            table.add_row(e["pod"], e["node"], str(e["priority"]), in_unit(unit, CPU, e["cpu"]),
                          in_unit(unit, MEMORY, e["memory"]), e["preemptor"])
        console.print()
        console.print(table)
