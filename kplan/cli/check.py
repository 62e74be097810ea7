"""`kplan check`: would these manifests schedule? For CI and pre-commit hooks."""
from __future__ import annotations

import os
from functools import partial
from typing import Annotated, Optional

import typer

from kplan.cli.options import (
    OUTPUT, SCHEDULER, ConfigOpt, CordonOpt, DrainOpt, ForceDrainOpt, HtmlOpt, KubeVersionOpt, NowOpt, OutputFormat, OutputOpt,
    ProfileOpt, RemoveNodeOpt, SnapshotOpt, ValidateOpt, VerboseOpt, parse_now,
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
    no_rollout: Annotated[bool, typer.Option(
        "--no-rollout", help="Create every workload beside what runs, even one the snapshot already runs "
                             "(default: update it as its controller rolls it out).")] = False,
    at_max: Annotated[bool, typer.Option(
        "--at-max", help="Check autoscaled workloads at their HorizontalPodAutoscaler's maxReplicas "
                         "(default: their replicas kept between minReplicas and maxReplicas).")] = False,
    verbose: VerboseOpt = False,
    validate: ValidateOpt = "strict",  # applied by the option's callback
) -> None:
    """Check that every workload in the manifests would schedule; exit 1 if a pod would not.

    Pods, Deployments, ReplicaSets, StatefulSets, Jobs, CronJobs and DaemonSets are expanded into the pods
    their controllers would create and placed in order, each seeing the ones before it; their ReplicaSets and
    StatefulSets, and the Services in the manifests, join the cluster (topology spread's default selector).
    A pod that is unschedulable, or needs preemption (unless --allow-preemption), fails its workload.
    A Deployment, StatefulSet or DaemonSet the snapshot runs is updated as its controller rolls it out
    (maxSurge, maxUnavailable, partition); a rollout that gets stuck fails it. HorizontalPodAutoscalers
    (snapshot or manifests) set the replicas of the workloads they scale.
    With $GITHUB_STEP_SUMMARY set, a Markdown summary is appended to it.
    """
    from kplan.sources.manifests import load_manifests
    from kplan.cli.common import load_cluster, load_profiles, stdout_console, write
    from kplan.cli.what_if import progress_bar, simulate
    from kplan.planning.auto_nodes import Scenario, check_simulator
    from kplan.planning.check import run_check
    from kplan.report.check import check_report
    from kplan.report.check_table import render_check
    from kplan.report.render import to_json, to_yaml

    if not manifests and not manifest:
        raise InputError("no manifests given: pass MANIFEST... or --manifest PATH")
    manifests = load_manifests([*(manifests or ()), *(manifest or ())])
    cluster = load_cluster(snapshot, verbose)
    autoscale(manifests, cluster, at_max)
    workloads = manifests.workloads
    scenario = Scenario(cluster, manifests, remove_node, cordon, drain, force_drain,
                        load_profiles(config), profile, kube_version, parse_now(now))
    previews: dict = {}

    def check_on(planner):
        first_pod = partial(preview_into, previews, planner) if html else None
        with progress_bar(sum(w.wanted or 0 for w in workloads) or None, "kplan check") as advance:
            return run_check(planner, workloads, allow_preemption, advance, first_pod, rollout=not no_rollout)

    run = simulate(scenario, add_node, max_nodes, "kplan check", run=check_on, document=check_report,
                   html=bool(html), verbose=verbose,
                   auto=lambda fixed, templates: check_simulator(scenario, fixed, templates, allow_preemption,
                                                                 rollout=not no_rollout))
    report = run.report
    if junit:
        write_junit(junit, report)
    if html:  # with --add-node FILE:auto, the nodes as the count found leaves them (no before)
        from kplan.report.html import pages
        pages.write_page(html, pages.check_page(report, previews=previews,
                                                **pages.run_parts("check", run.planner, snapshot, run.before)))
    if output in (OutputFormat.json, OutputFormat.yaml):
        write(to_json(report) if output == OutputFormat.json else to_yaml(report))
    else:
        render_check(report, stdout_console(), wide=output == OutputFormat.wide)
    if github is None:
        github = output not in (OutputFormat.json, OutputFormat.yaml) and os.environ.get("GITHUB_ACTIONS") == "true"
    write_github_outputs(report, github)
    raise typer.Exit(ExitCode.NOT_PLACEABLE if run.failed(report["summary"]["failed"]) else ExitCode.OK)


def autoscale(manifests, cluster, at_max: bool) -> None:
    """The replicas the HorizontalPodAutoscalers keep the manifests' workloads at; --at-max that scales
    nothing is said on stderr."""
    from kplan.cli.common import stderr_console
    from kplan.planning.autoscalers import scale
    if not scale(manifests, cluster.hpas, at_max) and at_max:
        stderr_console().print("kplan: --at-max: no HorizontalPodAutoscaler (in the snapshot or the manifests) "
                               "scales these workloads", style="yellow", markup=False)


def preview_into(previews: dict, planner, pod) -> None:
    """--html: a workload's first pod placed alone, on the nodes as its turn found them."""
    from kplan.report.model import placement
    previews[pod.key] = placement(planner.preview(pod), planner.cluster)


def write_junit(path: str, report: dict) -> None:
    from kplan.report.ci import junit_xml
    try:
        with open(path, "wb") as f:
            f.write(junit_xml(report))
    except OSError as err:
        raise InputError(f"--junit: cannot write: {err.strerror}", path) from None


def write_github_outputs(report: dict, annotations: bool) -> None:
    """The ::error annotations on stdout when asked, and the Markdown summary when $GITHUB_STEP_SUMMARY is set."""
    from kplan.cli.common import write
    from kplan.report.ci import github_annotations, markdown_summary
    if annotations:
        for line in github_annotations(report):
            write(line + "\n")
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_file:
        try:
            with open(summary_file, "a", encoding="utf-8") as f:
                f.write(markdown_summary(report))
        except OSError as err:
            raise InputError(f"$GITHUB_STEP_SUMMARY: cannot write: {err.strerror}", summary_file) from None
