"""Wiring of the what-if node options (--add-node, --remove-node, --cordon, --drain) and the progress bar."""
from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

PROGRESS_MIN = 1000  # simulations shorter than this get no progress bar


def apply_what_if(snapshot, add: Sequence[str] | None, remove: Sequence[str] | None, cordon: Sequence[str] | None,
                  drain: Sequence[str] | None, profiles=None, profile: str | None = None,
                  kube_version: str | None = None, now=None):
    """Returns (snapshot after the node changes, ChangeReport or None); says what changed on stderr."""
    from kplan.planning.node_changes import NodeChanges, what_if
    changes = NodeChanges(add or (), remove or (), cordon or (), drain or ())
    if not changes:
        return snapshot, None
    from kplan.cli.common import stderr_console
    new, report = what_if(snapshot, changes, profiles, profile, kube_version, now)
    err = stderr_console()
    for line in report.lines():
        err.print(f"kplan: what-if: {line}", style="yellow" if "not placed" in line else "dim", markup=False)
    return new, report


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
