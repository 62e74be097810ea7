"""`kplan consolidate`: which nodes could go, and what stops the others?"""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from kplan.cli.options import (
    OUTPUT, ConfigOpt, HtmlOpt, KubeVersionOpt, NodeSelectorOpt, NowOpt, OutputFormat, OutputOpt,
    ProfileOpt, SnapshotOpt, VerboseOpt, parse_now,
)
from kplan.cli.options import AsGroupOpt, AsOpt, ContextOpt, KubeconfigOpt, LiveOpt, RequestTimeoutOpt, StrictOpt
from kplan.errors import ExitCode, InputError

# Commands import the planning stack when they run, so `kplan --help` stays fast.
PLAN = "Scale-down"


def consolidate(
    snapshot: SnapshotOpt = None,
    live: LiveOpt = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    as_user: AsOpt = None,
    as_groups: AsGroupOpt = None,
    request_timeout: RequestTimeoutOpt = None,
    strict: StrictOpt = False,
    selector: NodeSelectorOpt = None,
    max_nodes: Annotated[Optional[int], typer.Option(
        "--max-nodes", metavar="N", help="Stop once N nodes can go (default: visit every candidate).",
        rich_help_panel=PLAN)] = None,
    threshold: Annotated[float, typer.Option(
        "--threshold", metavar="RATIO", help="A candidate's requested cpu and memory are both under this share of "
                                             "allocatable (cluster-autoscaler's scale-down-utilization-threshold).",
        rich_help_panel=PLAN)] = 0.5,
    gpu_threshold: Annotated[float, typer.Option(
        "--gpu-threshold", metavar="RATIO", help="For nodes offering nvidia.com/gpu: their GPUs' requested share "
                                                 "instead (scale-down-gpu-utilization-threshold).",
        rich_help_panel=PLAN)] = 0.5,
    pool_label: Annotated[Optional[str], typer.Option(
        "--pool-label", metavar="KEY", help="The node label naming node pools, for the savings per pool (default: "
                                            "karpenter.sh/nodepool, cloud.google.com/gke-nodepool, "
                                            "eks.amazonaws.com/nodegroup or kubernetes.azure.com/agentpool, the "
                                            "first a node carries).", rich_help_panel=OUTPUT)] = None,
    config: ConfigOpt = None,
    profile: ProfileOpt = None,
    kube_version: KubeVersionOpt = None,
    now: NowOpt = None,
    output: OutputOpt = OutputFormat.table,
    html: HtmlOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Plan a scale-down: which nodes could go, one after another, where their pods would land, and what stops the others.

    Candidates are chosen as cluster-autoscaler's scale-down chooses them (both requested cpu and memory under
    --threshold of allocatable) and visited least utilized first. Each node's pods are checked against the
    autoscaler's drainability rules, then placed on the remaining nodes with the full scheduling cycle; nodes
    that go stay gone, and PodDisruptionBudgets are counted over the whole plan. Exit 0 once the plan is made.
    """
    from kplan.api.selector_syntax import parse_selector
    from kplan.cli.common import live_source, load_cluster, load_profiles, stdout_console, write
    from kplan.planning.consolidate import Options, consolidate as plan
    from kplan.planning.place import Planner
    from kplan.report.consolidate import consolidation_report
    from kplan.report.consolidate_table import render_consolidation
    from kplan.report.render import to_json, to_yaml

    if max_nodes is not None and max_nodes < 1:
        raise InputError(f"--max-nodes {max_nodes}: must be at least 1")
    for flag, value in (("--threshold", threshold), ("--gpu-threshold", gpu_threshold)):
        if not 0 <= value <= 1:
            raise InputError(f"{flag} {value}: must be a share of allocatable between 0 and 1")
    parse_selector(selector or "")  # a malformed -l is an input error before the snapshot is read
    at = parse_now(now)
    profiles = load_profiles(config)
    source = live_source(live, kubeconfig, context, as_user, as_groups, request_timeout, strict=strict)
    planner = Planner(load_cluster(snapshot, verbose, source), profiles, profile, kube_version=kube_version, now=at)
    options = Options(threshold=threshold, gpu_threshold=gpu_threshold, max_nodes=max_nodes, selector=selector,
                      pool_label=pool_label, now=at)
    report = consolidation_report(plan(planner, options))
    if html:  # the nodes as the plan leaves them
        from kplan.report.html import pages
        from kplan.report.html.header import planner_header
        from kplan.report.html.nodes import node_section
        pages.write_page(html, pages.consolidate_page(report, planner_header("consolidate", planner, snapshot),
                                                      node_section(planner.cluster)))
    if output in (OutputFormat.json, OutputFormat.yaml):
        write(to_json(report) if output == OutputFormat.json else to_yaml(report))
    else:
        render_consolidation(report, stdout_console(), wide=output == OutputFormat.wide)
    raise typer.Exit(ExitCode.OK)
