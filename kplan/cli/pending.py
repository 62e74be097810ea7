"""`kplan pending`: why are the cluster's pending pods pending, and what would make them fit?"""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from kplan.cli.options import (
    AllNamespacesOpt, AsGroupOpt, AsOpt, ConfigOpt, ContextOpt, HtmlOpt, KubeconfigOpt, KubeVersionOpt, LiveOpt, NamespaceOpt,
    NowOpt, OutputFormat, OutputOpt, PodSelectorOpt, RequestTimeoutOpt, SnapshotOpt, StrictOpt, VerboseOpt, parse_now,
)
from kplan.errors import ExitCode


def pending(
    pods: Annotated[Optional[list[str]], typer.Argument(
        metavar="[POD]...", help="Pending pods to explain: ns/name, or name in --namespace (default: all of them).")] = None,
    snapshot: SnapshotOpt = None,
    live: LiveOpt = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    as_user: AsOpt = None,
    as_groups: AsGroupOpt = None,
    request_timeout: RequestTimeoutOpt = None,
    strict: StrictOpt = False,
    namespace: NamespaceOpt = None,
    all_namespaces: AllNamespacesOpt = False,
    selector: PodSelectorOpt = None,
    config: ConfigOpt = None,
    kube_version: KubeVersionOpt = None,
    now: NowOpt = None,
    independent: Annotated[bool, typer.Option(
        "--independent", help="Place each pod alone against the snapshot, instead of one after another in "
                              "queue order, each seeing those before it.")] = False,
    output: OutputOpt = OutputFormat.table,
    html: HtmlOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Explain the cluster's pending pods: kube-scheduler's answer now, beside the one it recorded.

    Takes the unscheduled pods of the snapshot (no nodeName, phase Pending, not being deleted)
    whose schedulerName is a profile of the configuration, in the scheduling queue's order
    (higher priority first, then the older pod), and places them one after another. For a pod
    that fits nowhere it shows the nearest nodes and what each lacks.
    """
    from kplan.api.selector_syntax import pod_selector
    from kplan.cli.common import live_source, load_cluster, load_profiles, stdout_console, write
    from kplan.errors import InputError
    from kplan.framework.runtime import NEEDS_PREEMPTION, UNSCHEDULABLE
    from kplan.planning.pending import recorded_condition, select_pending, what_would_make_it_fit
    from kplan.planning.place import Planner
    from kplan.report.pending import pending_entry, pending_report
    from kplan.report.pending_table import render_pending
    from kplan.report.render import to_json, to_yaml

    if namespace and all_namespaces:
        raise InputError("--namespace and --all-namespaces exclude each other")
    at = parse_now(now)
    profiles = load_profiles(config)
    source = live_source(live, kubeconfig, context, as_user, as_groups, request_timeout, strict=strict)
    snap = load_cluster(snapshot, verbose, source)
    planner = Planner(snap, profiles, kube_version=kube_version, now=at)
    chosen = select_pending(snap, set(planner.frameworks), pods or (), None if all_namespaces else namespace or "default",
                            pod_selector(selector) if selector else None)
    before, entries, ranked, drawn = None, [], {}, 0
    if html:
        from kplan.report.html.pages import DETAILED_PODS
        from kplan.report.html.placement import heatmap_rows
        from kplan.report.model import ranked_feasible_nodes
        from kplan.report.ratios import NodeTotals
        before = NodeTotals.of(planner.cluster) if not independent else None
        drawn = heatmap_rows(min(len(chosen.queue), DETAILED_PODS))
    # The report keeps the selected node of each pod (pending.TOP): no ranking of the others. The page
    # ranks the best nodes of the pods it draws in full.
    placed_drawn = 0  # the page draws the pods that would not be placed first, then the others in queue order
    for result in planner.place_each(chosen.queue, independent=independent, rank=False):
        nearest, hints = what_would_make_it_fit(planner, result)
        entries.append(pending_entry(result, planner.cluster, recorded_condition(result.pod), nearest, hints))
        not_placed = result.outcome in (UNSCHEDULABLE, NEEDS_PREEMPTION)
        if html and (not_placed or placed_drawn < DETAILED_PODS):
            placed_drawn += not not_placed
            ranked[result.pod.key] = (ranked_feasible_nodes(result, planner.cluster, drawn), len(result.candidates))
    report = pending_report(entries, chosen.other_scheduler, **planner.release_fields())
    if not (all_namespaces or pods):
        report["namespace"] = namespace or "default"
        report["pendingInOtherNamespaces"] = chosen.elsewhere
    if html:
        from kplan.report.html import pages
        parts = pages.run_parts("pending", planner, snapshot, before, nodes=not independent)
        pages.write_page(html, pages.pending_page(report, ranked=ranked, **parts))
    if output in (OutputFormat.json, OutputFormat.yaml):
        write(to_json(report) if output == OutputFormat.json else to_yaml(report))
    else:
        render_pending(report, stdout_console(), now=planner.handle.now, wide=output == OutputFormat.wide)
    summary = report["summary"]
    raise typer.Exit(ExitCode.OK if not (summary["needsPreemption"] or summary["unschedulable"])
                     else ExitCode.NOT_PLACEABLE)
