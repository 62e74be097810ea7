"""`kplan capacity`: how many more replicas of this pod fit?"""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from kplan.cli.options import (
    SCHEDULER, ConfigOpt, CordonOpt, DrainOpt, ForceDrainOpt, HtmlOpt, KubeVersionOpt, NowOpt, OutputFormat, OutputOpt,
    ProfileOpt, RemoveNodeOpt, SnapshotOpt, ValidateOpt, VerboseOpt, parse_now,
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
    allow_preemption: Annotated[bool, typer.Option(
        "--allow-preemption", help="Go on past replicas that fit only by preempting lower-priority pods (their "
                                   "victims go, and are listed), as kube-scheduler would place them.",
        rich_help_panel=SCHEDULER)] = False,
    add_node: AddNodeAutoOpt = None,
    max_nodes: MaxNodesOpt = None,
    remove_node: RemoveNodeOpt = None,
    cordon: CordonOpt = None,
    drain: DrainOpt = None,
    force_drain: ForceDrainOpt = False,
    output: OutputOpt = OutputFormat.table,
    html: HtmlOpt = None,
    verbose: VerboseOpt = False,
    validate: ValidateOpt = "strict",  # applied by the option's callback
) -> None:
    """Count how many more replicas of a pod fit: place copies until one is unschedulable, as cluster-capacity does.

    Shows the per-node and per-zone (topology.kubernetes.io/zone) split and kube-scheduler's message for the
    first replica that did not fit. Preemption does not count as fitting: a replica that needs it stops the count,
    unless --allow-preemption, which counts the replicas that fit in free room and those that fit only by
    preempting, and lists the pods they evict (not placed again).
    """
    from kplan.sources.manifests import load_manifests
    from kplan.cli.common import load_cluster, load_profiles, stdout_console, write
    from kplan.cli.what_if import progress_bar, simulate
    from kplan.planning.auto_nodes import Scenario, capacity_simulator
    from kplan.planning.check import run_capacity
    from kplan.report.check import capacity_report
    from kplan.report.check_table import render_capacity
    from kplan.report.render import to_json, to_yaml

    manifests = load_manifests([pod_file])
    check_replica_options(wanted, max_replicas, add_node)
    pod = replicated_pod(manifests.workloads, pod_file)
    cluster = load_cluster(snapshot, verbose)
    scenario = Scenario(cluster, manifests, remove_node, cordon, drain, force_drain,
                        load_profiles(config), profile, kube_version, parse_now(now))
    limit = wanted if wanted is not None else max_replicas

    def count(planner):
        with progress_bar(limit, "kplan capacity") as advance:
            return run_capacity(planner, pod, limit, advance, wanted=wanted is not None,
                                allow_preemption=allow_preemption)

    run = simulate(scenario, add_node, max_nodes, "kplan capacity", run=count, document=capacity_report,
                   html=bool(html), verbose=verbose,
                   auto=lambda fixed, templates: capacity_simulator(scenario, pod, wanted, fixed, templates,
                                                                    allow_preemption))
    report = run.report
    if wanted is not None:
        report["wanted"] = wanted
    add_headroom(report, manifests, cluster)
    if html:
        from kplan.report.html import pages
        pages.write_page(html, pages.capacity_page(report, **pages.run_parts("capacity", run.planner, snapshot,
                                                                            run.before)))
    if output in (OutputFormat.json, OutputFormat.yaml):
        write(to_json(report) if output == OutputFormat.json else to_yaml(report))
    else:
        render_capacity(report, stdout_console(), wide=output == OutputFormat.wide)
    short = wanted is not None and report["replicas"] < wanted
    raise typer.Exit(ExitCode.NOT_PLACEABLE if run.failed(short) else ExitCode.OK)


def add_headroom(report: dict, manifests, cluster) -> None:
    """`hpa` when a HorizontalPodAutoscaler (snapshot or file) scales the workload: how many of its
    maxReplicas fit, the workload's running pods and the replicas counted here together."""
    from kplan.planning.autoscalers import by_target, headroom
    from kplan.planning.rollout import Running
    w = manifests.workloads[0]
    hpa = by_target(cluster.hpas, manifests.hpas).get((w.kind, w.namespace, w.name))
    if hpa is not None:
        report["hpa"] = headroom(hpa, w, len(Running.of(cluster).old_pods(w)), report["replicas"])


def check_replica_options(wanted: int | None, max_replicas: int | None, add_node: list[str] | None) -> None:
    """--replicas is at least 1 and excludes --max; --add-node FILE:auto needs it."""
    from kplan.planning.auto_nodes import split_auto
    if wanted is not None and wanted < 1:
        raise InputError(f"--replicas {wanted}: must be at least 1")
    if wanted is not None and max_replicas is not None:
        raise InputError("--replicas and --max exclude each other: --replicas asks for N, --max stops at N")
    if wanted is None and split_auto(add_node)[1]:
        raise InputError("--add-node FILE:auto needs --replicas N: the count of nodes that holds N replicas")


def replicated_pod(workloads, pod_file: str):
    """The pod whose copies are counted: the one Pod, or the first replica of the one workload."""
    if len(workloads) != 1:
        raise InputError(f"expected one Pod or workload, found {len(workloads)}", pod_file)
    if workloads[0].kind == "DaemonSet":
        raise InputError("a DaemonSet runs one pod per node: its capacity is not a replica count", pod_file)
    pods = workloads[0].pods([])
    if not pods:
        raise InputError("the workload has no replicas to copy (replicas: 0)", pod_file)
    return pods[0]
