"""What node changes did (kplan.planning.node_changes), as a report's `nodeChanges` and as lines for stderr."""
from __future__ import annotations

from typing import Any

from kplan.planning.node_changes import ChangeReport
from kplan.report.names import some_names


def node_changes_entry(changes: ChangeReport) -> dict[str, Any]:
    """A report's `nodeChanges`: the nodes added, removed, cordoned and drained, the pods dropped, evicted
    (where each went, or why it did not) and those whose eviction a PodDisruptionBudget refused."""
    return {"added": changes.added, "removed": changes.removed, "cordoned": changes.cordoned,
            "drained": changes.drained, "droppedPods": changes.dropped_pods,
            "evicted": [{"pod": p.key, "from": changes.evicted_from[p.key],
                         "node": changes.replaced.get(p.key), "reason": changes.unplaced.get(p.key)}
                        for p in changes.evicted],
            "blocked": [{"pod": key, **entry} for key, entry in changes.blocked.items()]}


def change_lines(changes: ChangeReport, verbose: bool = False) -> list[str]:
    """What changed, for stderr: a line per kind of change naming the first nodes and pods (all of
    them with `verbose`); a drain sums up per drained node, and lists each pod with `verbose`."""
    out = []
    if changes.added:
        out.append(f"added node(s): {some_names(changes.added, verbose)}")
    if changes.removed:
        out.append(f"removed node(s): {some_names(changes.removed, verbose)}"
                   + (f"; their {len(changes.dropped_pods)} pod(s) dropped: {some_names(changes.dropped_pods, verbose)}"
                      if changes.dropped_pods else ""))
    if changes.cordoned:
        out.append(f"cordoned node(s): {some_names(changes.cordoned, verbose)}")
    if changes.drained:
        refused = f", {len(changes.blocked)} eviction(s) refused" if changes.blocked else ""
        out.append(f"drained {len(changes.drained)} node(s): {len(changes.evicted)} pod(s) evicted, "
                   f"{len(changes.replaced)} re-placed, {len(changes.unplaced)} could not be placed{refused}")
        for node in changes.drained:
            out += _drained_node(changes, node, verbose)
    return out


def _drained_node(changes: ChangeReport, node: str, verbose: bool) -> list[str]:
    """A drained node's line: its pods evicted, re-placed (onto how many nodes), not placed, and those
    whose eviction was refused; with `verbose` a line per pod under it."""
    keys = [pod.key for pod in changes.evicted if changes.evicted_from[pod.key] == node]
    moved = [key for key in keys if key in changes.replaced]
    stuck = [key for key in keys if key in changes.unplaced]
    kept = [key for key, entry in changes.blocked.items() if entry["node"] == node]
    line = f"  {node}: {len(keys)} pod(s) evicted, {len(moved)} re-placed"
    if moved:
        line += f" on {len({changes.replaced[key] for key in moved})} node(s)"
    if stuck:
        line += f", {len(stuck)} not placed: {some_names(stuck, verbose)}"
    if kept:
        line += f", {len(kept)} eviction(s) refused: {some_names(kept, verbose)}"
    if (stuck or kept) and not verbose:
        line += " (-v says why)"
    out = [line]
    if verbose:
        out += [f"    {key} -> {changes.replaced[key]}" for key in moved]
        out += [f"    {key} -> not placed: {changes.unplaced[key]}" for key in stuck]
        out += [f"    {key}: stays on {node}, eviction refused: {changes.blocked[key]['reason']}" for key in kept]
    return out
