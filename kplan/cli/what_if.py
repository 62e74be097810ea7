"""Wiring of the what-if node options (--add-node, --remove-node, --cordon, --drain) and the progress bar."""
from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Callable, Iterator, Optional, Sequence

import typer

from kplan.cli.options import WHAT_IF

PROGRESS_MIN = 1000  # simulations shorter than this get no progress bar

# --add-node of check and capacity, which also take FILE:auto, and --max-nodes.
AddNodeAutoOpt = Annotated[Optional[list[str]], typer.Option(
    "--add-node", metavar="FILE[:COUNT|:auto]",
    help="Add a node from this Node manifest; with COUNT, that many copies named <name>-1..COUNT; with auto, the "
         "fewest copies that let every pod fit (reported as nodesNeeded). Repeatable.", rich_help_panel=WHAT_IF)]
MaxNodesOpt = Annotated[Optional[int], typer.Option(
    "--max-nodes", metavar="N", help="With --add-node FILE:auto: the most copies of each template to try "
                                     "(default 100).", rich_help_panel=WHAT_IF)]


def node_changes(add: Sequence[str] | None, remove: Sequence[str] | None, cordon: Sequence[str] | None,
                 drain: Sequence[str] | None, force_drain: bool = False):
    """The NodeChanges of the command line; --force-drain needs --drain."""
    from kplan.planning.node_changes import NodeChanges
    check_force_drain(drain, force_drain)
    return NodeChanges(add or (), remove or (), cordon or (), drain or (), force_drain)


def check_force_drain(drain: Sequence[str] | None, force_drain: bool) -> None:
    from kplan.errors import InputError
    if force_drain and not drain:
        raise InputError("--force-drain goes with --drain")


def say_changes(report, label: str = "what-if", verbose: bool = False) -> None:
    """Says on stderr what the node changes did (every node and pod with `verbose`), what went wrong
    in yellow."""
    from kplan.cli.common import stderr_console
    err = stderr_console()
    from kplan.report.node_changes import change_lines
    for line in change_lines(report, verbose):
        failed = "not placed" in line or "eviction refused" in line
        err.print(f"kplan: {label}: {line}", style="yellow" if failed else "dim", markup=False)


def apply_what_if(snapshot, add: Sequence[str] | None, remove: Sequence[str] | None, cordon: Sequence[str] | None,
                  drain: Sequence[str] | None, profiles=None, profile: str | None = None,
                  kube_version: str | None = None, now=None, force_drain: bool = False, verbose: bool = False):
    """Returns (snapshot after the node changes, ChangeReport or None); says what changed on stderr (every
    node and pod with `verbose`)."""
    from kplan.planning.node_changes import what_if
    changes = node_changes(add, remove, cordon, drain, force_drain)
    if not changes:
        return snapshot, None
    new, report = what_if(snapshot, changes, profiles, profile, kube_version, now)
    say_changes(report, verbose=verbose)
    return new, report


@dataclass
class Simulation:
    """What a what-if command (check, capacity) simulated: its report, with nodeChanges; the planner
    after the run; the node changes (a ChangeReport, or None); the --add-node FILE:auto search's answer
    (None without auto); and for --html the node totals before the run (None with auto)."""

    report: dict
    planner: Any
    changes: Any
    answer: Any = None
    before: Any = None

    def failed(self, run_failed: bool) -> bool:
        """The command's verdict: with --add-node FILE:auto, whether no count let everything fit;
        otherwise whether the run failed (`run_failed`) or a drained pod could not be re-placed."""
        if self.answer is not None:
            return self.answer.counts is None
        return bool(run_failed) or (self.changes is not None and self.changes.failed)


def simulate(scenario, add: Sequence[str] | None, max_nodes: int | None, command: str, *,
             auto: Callable[[list[str], list], Callable], run: Callable[[Any], Any], document: Callable[[Any], dict],
             html: bool = False, verbose: bool = False) -> Simulation:
    """The what-if wiring of check and capacity over a planning Scenario. With --add-node FILE:auto,
    the fewest added nodes at which the simulation `auto(fixed specs, templates)` passes; otherwise the
    node changes applied (and said on stderr, every node and pod with `verbose`), then `run(planner)`.
    `document` writes the report of what the run returned."""
    check_force_drain(scenario.drain, scenario.force_drain)
    fixed, templates, max_nodes = auto_templates(add, max_nodes, command)
    if templates:
        report, answer = find_node_count(auto(fixed, templates), templates, max_nodes, document, verbose)
        return Simulation(report, answer.run.planner, answer.run.changes, answer)
    planner, changes = scenario.planner(fixed)
    if changes is not None:
        say_changes(changes, verbose=verbose)
    before = None
    if html:
        from kplan.report.ratios import NodeTotals
        before = NodeTotals.of(planner.cluster)
    report = document(run(planner))
    if changes is not None:
        from kplan.report.node_changes import node_changes_entry
        report["nodeChanges"] = node_changes_entry(changes)
    return Simulation(report, planner, changes, before=before)


@contextmanager
def progress_bar(total: int | None, what: str) -> Iterator[Callable[[int], None] | None]:
    """Yields an advance(n) callback drawing a bar on stderr, or None when stderr is not a terminal
    or the simulation is short."""
    if not sys.stderr.isatty() or (total is not None and total < PROGRESS_MIN):
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from kplan.cli.common import stderr_console
    columns = [TextColumn(what), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    with Progress(*columns, console=stderr_console(), transient=True) as bar:
        task = bar.add_task(what, total=total)
        yield lambda n: bar.advance(task, n)


def auto_templates(add: Sequence[str] | None, max_nodes: int | None, command: str):
    """Splits --add-node into the fixed arguments and the FILE:auto templates (read once); checks --max-nodes.
    Returns (fixed, templates, max_nodes)."""
    from kplan.errors import InputError
    from kplan.planning.auto_nodes import DEFAULT_MAX_NODES, load_templates, split_auto
    fixed, auto = split_auto(add)
    if max_nodes is not None and not auto:
        raise InputError(f"{command}: --max-nodes goes with --add-node FILE:auto")
    if max_nodes is not None and max_nodes < 1:
        raise InputError(f"--max-nodes {max_nodes}: must be at least 1")
    return fixed, load_templates(auto), max_nodes or DEFAULT_MAX_NODES


def find_node_count(simulate, templates, max_nodes: int, document: Callable[[Any], dict],
                    verbose: bool = False) -> tuple[dict, "object"]:
    """Searches the count (kplan.planning.auto_nodes.search); returns (the report of the answer's run with
    nodesNeeded, and its ChangeReport), saying the node changes of that run on stderr."""
    from kplan.planning.auto_nodes import search
    from kplan.report.node_changes import node_changes_entry
    from kplan.report.nodes_needed import nodes_needed_fields
    answer = search(simulate, templates, max_nodes)
    run = answer.run
    report = document(run.result)
    if run.changes is not None:
        report["nodeChanges"] = node_changes_entry(run.changes)
        say_changes(run.changes, verbose=verbose)
    report.update(nodes_needed_fields(answer, templates))
    return report, answer
