"""`kplan check`: would these manifests schedule? For CI and pre-commit hooks."""
from __future__ import annotations

import os
from typing import Annotated, Optional

import typer

from kplan.cli.options import (
    OUTPUT, SCHEDULER, ConfigOpt, CordonOpt, DrainOpt, ForceDrainOpt, HtmlOpt, KubeVersionOpt, NowOpt, OutputFormat, OutputOpt,
    ProfileOpt, RemoveNodeOpt, SnapshotOpt, VerboseOpt, parse_now,
)
from kplan.cli.what_if import AddNodeAutoOpt, MaxNodesOpt
from kplan.errors import ExitCode, InputError

# Commands import the planning stack when they run, so `kplan --help` stays fast.


def check(
    manifests: Annotated[Optional[list[str]], typer.Argument(
        metavar="MANIFEST...", help="Manifests (files or folders) of Pods and workloads, simulated in order.")] = None,
    manifest: Annotated[Optional[list[str]], typer.Option(
        "--manifest", "-m", metavar="PATH", help="A manifest, as the arguments (repeatable); -f stays --snapshot.")]
    = None,
    snapshot: SnapshotOpt = None,
    config: ConfigOpt = None,
    profile: ProfileOpt = None,
    kube_version: KubeVersionOpt = None,
    now: NowOpt = None,
    allow_preemption: Annotated[bool, typer.Option(
        "--allow-preemption", help="Pods that fit only by preempting others pass (and their victims go).",
        rich_help_panel=SCHEDULER)] = False,
    output: OutputOpt = OutputFormat.table,
    junit: Annotated[Optional[str], typer.Option(
        "--junit", metavar="FILE", help="Also write a JUnit XML report: one test case per workload.",
        rich_help_panel=OUTPUT)] = None,
    github: Annotated[Optional[bool], typer.Option(
        "--github/--no-github", help="Print GitHub Actions ::error annotations pointing at the manifests "
                                     "(default: on when GITHUB_ACTIONS=true and the output is a table).",
        rich_help_panel=OUTPUT, show_default=False)] = None,
    html: HtmlOpt = None,
    add_node: AddNodeAutoOpt = None,
    remove_node: RemoveNodeOpt = None,
    cordon: CordonOpt = None,
    drain: DrainOpt = None,
    force_drain: ForceDrainOpt = False,
    max_nodes: MaxNodesOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Check that every workload in the manifests would schedule; exit 1 if a pod would not.

    Pods, Deployments, ReplicaSets, StatefulSets, Jobs, CronJobs and DaemonSets are expanded into the pods
    their controllers would create and placed in order, each seeing the ones before it; their ReplicaSets and
    StatefulSets, and the Services in the manifests, join the cluster (topology spread's default selector).
    A pod that is unschedulable, or needs preemption (unless --allow-preemption), fails its workload.
    With $GITHUB_STEP_SUMMARY set, a Markdown summary is appended to it.
    """
    from kplan.api.workloads import load_manifests
    from kplan.cli.common import load_cluster, load_profiles, stdout_console, write
    from kplan.cli.what_if import apply_what_if, auto_templates, check_force_drain, find_node_count, progress_bar
    from kplan.planning.check import github_annotations, junit_xml, markdown_summary, run_check
    from kplan.planning.place import Planner
    from kplan.report.check_table import render_check
    from kplan.report.render import to_json, to_yaml

    paths = [*(manifests or ()), *(manifest or ())]
    if not paths:
        raise InputError("no manifests given: pass MANIFEST... or --manifest PATH")
    manifests = load_manifests(paths)
    workloads = manifests.workloads
    at = parse_now(now)
    profiles = load_profiles(config)
    fixed, templates, max_nodes = auto_templates(add_node, max_nodes, "kplan check")
    answer, before, previews = None, None, {}
    if templates:  # --add-node FILE:auto: the smallest count of added nodes at which every pod fits
        check_force_drain(drain, force_drain)
        from kplan.planning.auto_nodes import check_simulator
        simulate = check_simulator(load_cluster(snapshot, verbose), manifests, fixed, remove_node, cordon, drain,
                                   templates, profiles, profile, kube_version, at, allow_preemption, force_drain)
        report, answer = find_node_count(simulate, templates, max_nodes)
        changes, planner = answer.run.changes, answer.run.planner
    else:
        snap, changes = apply_what_if(load_cluster(snapshot, verbose), add_node, remove_node, cordon, drain,
                                      profiles, profile, kube_version, at, force_drain)
        snap = manifests.applied_to(snap)
        planner = Planner(snap, profiles, profile, kube_version=kube_version, now=at)
        total = sum(w.wanted or 0 for w in workloads) or None
        first_pod = None
        if html:
            from kplan.report.model import placement
            from kplan.report.ratios import NodeTotals
            before = NodeTotals.of(planner.cluster)

            def first_pod(pod):
                previews[pod.key] = placement(planner.preview(pod), planner.cluster)
        with progress_bar(total, "kplan check") as advance:
            report = run_check(planner, workloads, allow_preemption, advance, first_pod)
        if changes is not None:
            report["nodeChanges"] = changes.to_dict()
    if junit:
        try:
            with open(junit, "wb") as f:
                f.write(junit_xml(report))
        except OSError as err:
            raise InputError(f"--junit: cannot write: {err.strerror}", junit) from None
    if html:  # with --add-node FILE:auto, the nodes as the count found leaves them (no before)
        from kplan.report.html import pages
        pages.write_page(html, pages.check_page(report, previews=previews,
                                                **pages.run_parts("check", planner, snapshot, before)))
    if output in (OutputFormat.json, OutputFormat.yaml):
        write(to_json(report) if output == OutputFormat.json else to_yaml(report))
    else:
        render_check(report, stdout_console())
        if github is None:
            github = os.environ.get("GITHUB_ACTIONS") == "true"
    if github:
        for line in github_annotations(report):
            write(line + "\n")
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_file:
        try:
            with open(summary_file, "a", encoding="utf-8") as f:
                f.write(markdown_summary(report))
        except OSError as err:
            raise InputError(f"$GITHUB_STEP_SUMMARY: cannot write: {err.strerror}", summary_file) from None
    failed = report["summary"]["failed"] or (changes is not None and changes.failed)
    if answer is not None:
        failed = answer.counts is None
    raise typer.Exit(ExitCode.NOT_PLACEABLE if failed else ExitCode.OK)
