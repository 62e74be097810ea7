"""`kplan snapshot`: read a live cluster (read-only) and write a redacted dump for --snapshot."""
from __future__ import annotations

from enum import Enum
from typing import Annotated, Optional

import typer

from kplan.cli.options import (
    INPUT, OUTPUT, AsGroupOpt, AsOpt, ContextOpt, KubeconfigOpt, RequestTimeoutOpt, StrictOpt,
)

# Commands import the Kubernetes client when they run, so `kplan --help` stays fast.


class DumpFormat(str, Enum):
    json = "json"
    yaml = "yaml"


def snapshot(
    output: Annotated[Optional[DumpFormat], typer.Option(
        "--output", "-o", help="json or yaml (default: from the --out extension, else json).",
        rich_help_panel=OUTPUT, case_sensitive=False)] = None,
    out: Annotated[Optional[str], typer.Option(
        "--out", metavar="FILE", help="Write here instead of stdout: .json, .yaml or .yml, with .gz to gzip.",
        rich_help_panel=OUTPUT)] = None,
    namespace: Annotated[Optional[str], typer.Option(
        "--namespace", "-n", metavar="NAMESPACE",
        help="Only the pods, PodDisruptionBudgets, ElasticQuotas, Services and controllers of this namespace "
             "(default: all). Nodes then show only this namespace's usage.", rich_help_panel=INPUT)] = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    as_user: AsOpt = None,
    as_groups: AsGroupOpt = None,
    request_timeout: RequestTimeoutOpt = None,
    strict: StrictOpt = False,
) -> None:
    """Read the cluster (get/list only) and write what scheduling reads, for --snapshot.

    Nodes, pods, namespaces, PriorityClasses, PodDisruptionBudgets, ElasticQuotas and NodeMetrics, and the selectors
    of Services, ReplicaSets, StatefulSets and ReplicationControllers (topology spread's defaults), after a header.

    The header records the context, server version (the default --kube-version) and time taken. A kind the role may
    not list (but nodes and pods) is left out with a warning saying what answers lack without it, and recorded in the
    header; --strict makes that exit 3.

    Env values, secrets, command lines, last-applied-configuration and managed fields are left out: safe to attach.
    """
    from kplan.cli.common import live_source, stderr_console
    from kplan.sources.live import fetch
    from kplan.sources.snapshot import bulk_allocation, forbidden_lines
    from kplan.sources.writer import format_for, write_snapshot

    fmt = format_for(out, output.value if output else None)
    source = live_source(True, kubeconfig, context, as_user, as_groups, request_timeout, namespace, strict)
    with bulk_allocation():
        dump = fetch(source)
    write_snapshot(dump.header_object(), dump.objects(), out, fmt)
    for line in forbidden_lines(dump.header.get("forbidden", {})):
        stderr_console().print(f"kplan: warning: {line}", style="yellow", markup=False)
    if out:
        counts = ", ".join(f"{n} {plural}" for plural, n in dump.header["counts"].items())
        stderr_console().print(f"kplan: wrote {out}: {counts} (read in {dump.header['seconds']:.1f}s)",
                               style="dim")
