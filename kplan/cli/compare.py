"""`kplan compare`: the same pods and workloads through two or more variants of the set-up."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from kplan.cli.options import (
    SCHEDULER, HtmlOpt, NowOpt, OutputFormat, OutputOpt, ProfileOpt, SnapshotOpt, ValidateOpt, VerboseOpt, parse_now,
)
from kplan.errors import ExitCode, InputError


def compare(
    manifests: Annotated[Optional[list[str]], typer.Argument(
        metavar="MANIFEST...", help="Manifests (files or folders) of Pods and workloads, simulated in order.")] = None,
    snapshot: SnapshotOpt = None,
    variant: Annotated[Optional[list[str]], typer.Option(
        "--variant", metavar="NAME=FLAGS",
        help="A variant: its name and flags among --config, --profile, --kube-version, --add-node, --remove-node, "
             "--cordon, --drain, --force-drain (e.g. 'packed=--config packed.yaml --remove-node pool=old'). Repeatable.",
        rich_help_panel=SCHEDULER)] = None,
    config: Annotated[Optional[list[str]], typer.Option(
        "--config", metavar="FILE", help="A KubeSchedulerConfiguration; two or more compare them (one variant "
                                         "each, named after the file).", rich_help_panel=SCHEDULER)] = None,
    kube_version: Annotated[Optional[list[str]], typer.Option(
        "--kube-version", metavar="X.Y[.Z]", help="A kube-scheduler release; two or more compare them.",
        rich_help_panel=SCHEDULER)] = None,
    profile: ProfileOpt = None,
    now: NowOpt = None,
    allow_preemption: Annotated[bool, typer.Option(
        "--allow-preemption", help="Pods that fit only by preempting others count as placed (their victims go).",
        rich_help_panel=SCHEDULER)] = False,
    output: OutputOpt = OutputFormat.table,
    html: HtmlOpt = None,
    verbose: VerboseOpt = False,
    validate: ValidateOpt = "strict",  # applied by the option's callback
) -> None:
    """Compare where two or more variants of the set-up put the same pods; exit 1 if a variant leaves a pod out.

    A variant differs in scheduler configuration or profile, release, or what-if node changes. The table shows
    the pods whose node or outcome differ (every pod with -o wide) and, per variant, pods placed, nodes used and
    left empty, requested cpu and memory per node (mean, standard deviation, max of allocatable), pods per zone
    and the largest free cpu and memory on one node.
    """
    from kplan.sources.manifests import load_manifests
    from kplan.cli.common import load_cluster, load_profiles, stdout_console, write
    from kplan.cli.what_if import progress_bar, say_changes
    from kplan.planning.compare import Run, failed, run_compare, variants_from
    from kplan.planning.node_changes import NodeChanges, what_if
    from kplan.planning.place import Planner, resolve_kube_version
    from kplan.report.compare import comparison_report
    from kplan.report.compare_table import render_compare
    from kplan.report.render import to_json, to_yaml

    if not manifests:
        raise InputError("no manifests given: pass MANIFEST...")
    variants = variants_from(variant or (), config or (), kube_version or ())
    loaded = load_manifests(manifests)
    workloads = loaded.workloads
    at = parse_now(now)
    base = load_cluster(snapshot, verbose)  # parsed once; each variant derives its own snapshot and table
    runs = []
    shared: list = []  # (run, release) of the variants without node changes
    applied = loaded.applied_to(base)
    for v in variants:
        profiles = load_profiles(v.config)
        chosen = v.profile or profile
        snap, changes = base, None
        node_changes = NodeChanges(v.add_node, v.remove_node, v.cordon, v.drain, v.force_drain)
        if node_changes:
            snap, changes = what_if(base, node_changes, profiles, chosen, v.kube_version, at)
            say_changes(changes, f"what-if ({v.name})", verbose)
        release = resolve_kube_version(v.kube_version, base)
        # Variants without node changes over the same release share the node table as built: copied, not rebuilt.
        twin = next((r.planner.cluster for r, same in shared if not node_changes and same == release), None)
        snap = loaded.applied_to(snap) if node_changes else applied
        planner = Planner(snap, profiles, chosen, kube_version=v.kube_version, now=at, base_cluster=twin)
        runs.append(Run(v, planner, changes))
        if not node_changes:
            shared.append((runs[-1], release))
    total = sum(w.wanted or 0 for w in workloads) or None
    with progress_bar(total, "kplan compare") as advance:
        pods = run_compare(runs, lambda run: workloads, allow_preemption, advance)
    report = comparison_report(runs, pods, allow_preemption)
    if html:
        from kplan.report.html.compare import compare_header, compare_page
        from kplan.report.html.page import write_page
        write_page(html, compare_page(report, compare_header(base, snapshot, report, [r.planner for r in runs])))
    if output in (OutputFormat.json, OutputFormat.yaml):
        write(to_json(report) if output == OutputFormat.json else to_yaml(report))
    else:
        render_compare(report, stdout_console(), wide=output == OutputFormat.wide)
    raise typer.Exit(ExitCode.NOT_PLACEABLE if failed(runs, allow_preemption) else ExitCode.OK)
