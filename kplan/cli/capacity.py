"""`kplan capacity`: how many more replicas of this pod fit?"""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from kplan.cli.options import (
    ConfigOpt, CordonOpt, DrainOpt, ForceDrainOpt, HtmlOpt, KubeVersionOpt, NowOpt, OutputFormat, OutputOpt, ProfileOpt,
    RemoveNodeOpt, SnapshotOpt, VerboseOpt, parse_now,
)
from kplan.cli.what_if import AddNodeAutoOpt, MaxNodesOpt
from kplan.errors import ExitCode, InputError

# Commands import the planning stack when they run, so `kplan --help` stays fast.


def capacity(
    pod_file: Annotated[str, typer.Argument(metavar="POD_OR_WORKLOAD",
                                            help="A Pod or a workload whose pod template is replicated.")],
    snapshot: SnapshotOpt = None,
    config: ConfigOpt = None,
    profile: ProfileOpt = None,
    kube_version: KubeVersionOpt = None,
    now: NowOpt = None,
    max_replicas: Annotated[Optional[int], typer.Option(
        "--max", metavar="N", min=0, help="Stop after N replicas (default: until one does not fit).")] = None,
    wanted: Annotated[Optional[int], typer.Option(
        "--replicas", metavar="N", help="Ask for N replicas: exit 1 when fewer fit; with --add-node FILE:auto, "
                                        "find the fewest added nodes that hold them.")] = None,
    add_node: AddNodeAutoOpt = None,
    max_nodes: MaxNodesOpt = None,
    remove_node: RemoveNodeOpt = None,
    cordon: CordonOpt = None,
    drain: DrainOpt = None,
    force_drain: ForceDrainOpt = False,
    output: OutputOpt = OutputFormat.table,
    html: HtmlOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Count how many more replicas of a pod fit: place copies until one is unschedulable, as cluster-capacity does.

    Shows the per-node and per-zone (topology.kubernetes.io/zone) split and kube-scheduler's message for the
    first replica that did not fit. Preemption does not count as fitting: a replica that needs it stops the count.
    """
    from kplan.api.workloads import load_manifests
    from kplan.cli.common import load_cluster, load_profiles, stdout_console, write
    from kplan.cli.what_if import apply_what_if, auto_templates, check_force_drain, find_node_count, progress_bar
    from kplan.planning.check import run_capacity
    from kplan.planning.place import Planner
    from kplan.report.check_table import render_capacity
    from kplan.report.render import to_json, to_yaml

    manifests = load_manifests([pod_file])
    workloads = manifests.workloads
    if len(workloads) != 1:
        raise InputError(f"expected one Pod or workload, found {len(workloads)}", pod_file)
    if workloads[0].kind == "DaemonSet":
        raise InputError("a DaemonSet runs one pod per node: its capacity is not a replica count", pod_file)
    at = parse_now(now)
    profiles = load_profiles(config)
    if wanted is not None and wanted < 1:
        raise InputError(f"--replicas {wanted}: must be at least 1")
    if wanted is not None and max_replicas is not None:
        raise InputError("--replicas and --max exclude each other: --replicas asks for N, --max stops at N")
    fixed, templates, max_nodes = auto_templates(add_node, max_nodes, "kplan capacity")
    if templates and wanted is None:
        raise InputError("--add-node FILE:auto needs --replicas N: the count of nodes that holds N replicas")
    pods = workloads[0].pods([])
    if not pods:
        raise InputError("the workload has no replicas to copy (replicas: 0)", pod_file)
    answer, before = None, None
    if templates:
        check_force_drain(drain, force_drain)
        from kplan.planning.auto_nodes import capacity_simulator
        simulate = capacity_simulator(load_cluster(snapshot, verbose), manifests, pods[0], wanted, fixed,
                                      remove_node, cordon, drain, templates, profiles, profile, kube_version, at,
                                      force_drain)
        report, answer = find_node_count(simulate, templates, max_nodes)
        changes, planner = answer.run.changes, answer.run.planner
    else:
        snap, changes = apply_what_if(load_cluster(snapshot, verbose), add_node, remove_node, cordon, drain,
                                      profiles, profile, kube_version, at, force_drain)
        snap = manifests.applied_to(snap)
        planner = Planner(snap, profiles, profile, kube_version=kube_version, now=at)
        limit = wanted if wanted is not None else max_replicas
        if html:
            from kplan.report.ratios import NodeTotals
            before = NodeTotals.of(planner.cluster)
        with progress_bar(limit, "kplan capacity") as advance:
            report = run_capacity(planner, pods[0], limit, advance, wanted=wanted is not None)
        if changes is not None:
            report["nodeChanges"] = changes.to_dict()
    if wanted is not None:
        report["wanted"] = wanted
    if html:
        from kplan.report.html import pages
        pages.write_page(html, pages.capacity_page(report, **pages.run_parts("capacity", planner, snapshot, before)))
    if output in (OutputFormat.json, OutputFormat.yaml):
        write(to_json(report) if output == OutputFormat.json else to_yaml(report))
    else:
        render_capacity(report, stdout_console())
    failed = changes is not None and changes.failed
    if wanted is not None:
        failed = failed or report["replicas"] < wanted
    if answer is not None:
        failed = answer.counts is None
    raise typer.Exit(ExitCode.NOT_PLACEABLE if failed else ExitCode.OK)
