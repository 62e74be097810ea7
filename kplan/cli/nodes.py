"""`kplan nodes`: per node allocatable, requests and limits with their ratios, limit headroom, QoS mix."""
from __future__ import annotations

from enum import Enum
from typing import Annotated, Optional

import typer

from kplan.cli.options import (
    OUTPUT, SCHEDULER, AddNodeOpt, ConfigOpt, CordonOpt, DrainOpt, ForceDrainOpt, HtmlOpt, KubeVersionOpt, NodeSelectorOpt, NowOpt,
    OutputFormat, OutputOpt, ProfileOpt, RemoveNodeOpt, SnapshotOpt, ValidateOpt, VerboseOpt, parse_now,
)
from kplan.cli.options import AsGroupOpt, AsOpt, ContextOpt, KubeconfigOpt, LiveOpt, RequestTimeoutOpt, StrictOpt
from kplan.errors import ExitCode, InputError

# Commands import the planning stack when they run, so `kplan --help` stays fast.


class SortKey(str, Enum):
    name = "name"
    pods = "pods"
    request_ratio = "request-ratio"
    limit_ratio = "limit-ratio"
    cpu_request_ratio = "cpu-request-ratio"
    cpu_limit_ratio = "cpu-limit-ratio"
    memory_request_ratio = "memory-request-ratio"
    memory_limit_ratio = "memory-limit-ratio"
    headroom = "headroom"


def nodes(
    snapshot: SnapshotOpt = None,
    live: LiveOpt = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    as_user: AsOpt = None,
    as_groups: AsGroupOpt = None,
    request_timeout: RequestTimeoutOpt = None,
    strict: StrictOpt = False,
    config: ConfigOpt = None,
    profile: ProfileOpt = None,
    selector: NodeSelectorOpt = None,
    sort: Annotated[SortKey, typer.Option(
        "--sort", help="Order nodes by name, pods, request-ratio, limit-ratio (the higher of cpu and memory), "
                       "cpu-/memory-request-ratio, cpu-/memory-limit-ratio (highest first), or headroom "
                       "(least limit capacity left first).", rich_help_panel=OUTPUT, case_sensitive=False)]
    = SortKey.name,
    after: Annotated[Optional[list[str]], typer.Option(
        "--after", metavar="POD_FILE",
        help="Place these pods first, as `kplan place` would, and show the ratios before -> after. Repeatable.",
        rich_help_panel=SCHEDULER)]
    = None,
    usage: Annotated[bool, typer.Option(
        "--usage", help="Show load as LoadAwareScheduling sees it: measured usage (NodeMetrics), estimated usage "
                        "of pods not yet in the metric, thresholds and metric age; stale metrics are flagged.",
        rich_help_panel=OUTPUT)] = False,
    pod: Annotated[Optional[str], typer.Option(
        "--pod", metavar="POD_FILE", help="With --usage: the estimated usage if this pod landed on each node, and "
                                          "whether LoadAwareScheduling would filter the node.",
        rich_help_panel=SCHEDULER)] = None,
    now: NowOpt = None,
    label_columns: Annotated[Optional[list[str]], typer.Option(
        "--label-columns", "-L", metavar="KEY,...",
        help="Show these node labels as columns, headed by the key's last path segment, as kubectl get -L "
             "(comma-separated or repeated).", rich_help_panel=OUTPUT)] = None,
    group_by: Annotated[Optional[str], typer.Option(
        "--group-by", metavar="zone|LABEL",
        help="Show the totals per value of a node label instead of a row per node: nodes, pods, allocatable, "
             "requests and limits (zone: topology.kubernetes.io/zone).", rich_help_panel=OUTPUT)] = None,
    kube_version: KubeVersionOpt = None,
    add_node: AddNodeOpt = None,
    remove_node: RemoveNodeOpt = None,
    cordon: CordonOpt = None,
    drain: DrainOpt = None,
    force_drain: ForceDrainOpt = False,
    output: OutputOpt = OutputFormat.table,
    html: HtmlOpt = None,
    verbose: VerboseOpt = False,
    validate: ValidateOpt = "strict",  # applied by the option's callback
) -> None:
    """Show each node's requests and limits against allocatable, with limit headroom and QoS mix.

    Limits count a container's request where it sets no limit, as LimitAware does.

    Ratio: the node's node.koordinator.sh/limit-to-allocatable annotation, else LimitAware's args in --config.

    Headroom: allocatable x ratio - limits. Limits above allocatable are yellow, above the ratio red with "!".
    """
    from kplan.api.selector_syntax import selector_mask
    from kplan.cli.common import live_source, load_cluster, load_profiles, stderr_console, stdout_console, write
    from kplan.plugins.limit_aware import NAME as LIMIT_AWARE, LimitAware, limit_capacity
    from kplan.report.ratios import NodeTotals, node_report, placed_pods, sort_rows
    from kplan.report.render import to_json, to_yaml
    from kplan.planning.check import ZONE_LABEL
    from kplan.report.names import some_names
    from kplan.report.table import render_nodes

    profiles = load_profiles(config)
    chosen = profiles[0]
    if profile:
        chosen = next((p for p in profiles if p.scheduler_name == profile), None)
        if chosen is None:
            raise InputError(f"--profile {profile!r}: no such profile "
                             f"(profiles: {', '.join(p.scheduler_name for p in profiles)})")
    if pod and not usage:
        raise InputError("--pod goes with --usage")
    if now and not (usage or after):
        raise InputError("--now goes with --usage or --after")
    if kube_version and not after:
        raise InputError("--kube-version goes with --after")
    if html and usage:
        raise InputError("--html draws requests and limits: it does not go with --usage")
    if usage and (label_columns or group_by):
        raise InputError(f"{'--label-columns' if label_columns else '--group-by'} does not go with --usage")
    from kplan.cli.what_if import apply_what_if
    source = live_source(live, kubeconfig, context, as_user, as_groups, request_timeout, strict=strict)
    snap, changes = apply_what_if(load_cluster(snapshot, verbose, source), add_node, remove_node, cordon, drain,
                                  profiles, profile, force_drain=force_drain, verbose=verbose)
    if usage:
        _usage(snap, profiles, profile, selector, pod, parse_now(now), output)
    default_ratio = LimitAware(chosen.plugin_config.get(LIMIT_AWARE)).default_ratio
    before, entries = None, []
    if after:
        from kplan.sources.manifests import load_manifests
        from kplan.planning.place import Planner
        from kplan.report.model import placement
        manifests = load_manifests(after)
        snap = manifests.applied_to(snap)
        pods = manifests.pods(snap.nodes)
        planner = Planner(snap, profiles, profile, kube_version=kube_version, now=parse_now(now))
        cluster = planner.cluster
        before = NodeTotals.of(cluster)
        entries = [placement(result, cluster) for result in planner.place_each(pods)]
    else:
        from kplan.planning.place import release_cluster, resolve_kube_version
        cluster = release_cluster(snap, resolve_kube_version(None, snap))  # as the snapshot's release counts
    import numpy as np
    rows = np.flatnonzero(selector_mask(selector, cluster))
    capacity = limit_capacity(cluster, default_ratio)
    rows = sort_rows(cluster, capacity, rows, sort.value)
    keys = [key for arg in label_columns or () for key in arg.split(",") if key]
    report = node_report(cluster, capacity, rows, before=before, placed=placed_pods(entries), label_columns=keys,
                         group_by=group_key(group_by))
    if keys:
        report["labelColumns"] = keys
    report.update(snap.forbidden_fields())
    err = stderr_console()
    nodes_of: dict[str, list[str]] = {}
    for node in report["nodes"]:
        for warning in node["warnings"]:
            nodes_of.setdefault(warning, []).append(node["name"])
    for warning, names in nodes_of.items():  # a warning of many nodes once, naming the first of them
        where = f"node {names[0]}" if len(names) == 1 else f"{len(names)} nodes ({some_names(names, verbose)})"
        err.print(f"kplan: warning: {where}: {warning}", style="yellow", markup=False)
    if not len(rows):
        err.print("No nodes found" + (f" matching {selector!r}." if selector else "."))
    if html:
        from kplan.report.html.nodes import node_section
        section = node_section(cluster, before, rows, label_columns=keys, group_by=report.get("groupBy") or ZONE_LABEL)
        _write_page(html, report, snap, snapshot, planner if after else None, chosen, section)
    if output in (OutputFormat.json, OutputFormat.yaml):
        write(to_json(report) if output == OutputFormat.json else to_yaml(report))
    else:
        render_nodes(report, stdout_console(), wide=output == OutputFormat.wide)
    placed_all = all(e["outcome"] == "Scheduled" for e in entries) and not (changes and changes.failed)
    raise typer.Exit(ExitCode.OK if placed_all else ExitCode.NOT_PLACEABLE)


def group_key(value: str | None) -> str | None:
    """--group-by: a node label key, "zone" for topology.kubernetes.io/zone; a key kubectl would refuse
    is an input error."""
    if value is None:
        return None
    from kplan.planning.check import ZONE_LABEL
    key = ZONE_LABEL if value == "zone" else value
    from kplan.api.validation import Invalid, label_name
    try:
        label_name(key, "--group-by")
    except Invalid as err:
        raise InputError(str(err)) from None
    return key


def _write_page(path, report, snap, sources, planner, profile, section) -> None:
    """--html: the node section (before -> after with --after), with the pods placed first."""
    from kplan.report.html import pages
    from kplan.report.html.header import header, planner_header
    if planner is not None:
        head = planner_header("nodes", planner, sources)
    else:
        head = header("nodes", snap, sources, profiles=[profile.scheduler_name])
    pages.write_page(path, pages.nodes_page(report, head, section))


def _usage(snap, profiles, profile, selector, pod_file, at, output) -> None:
    """`kplan nodes --usage`: load as LoadAwareScheduling sees it, per node, as a table or JSON/YAML."""
    from datetime import datetime, timezone

    import numpy as np

    from kplan.api.selector_syntax import selector_mask
    from kplan.cli.common import stdout_console, write
    from kplan.planning.place import load_pods, release_cluster, resolve_kube_version
    from kplan.planning.usage import load_aware_args, node_usage
    from kplan.report.render import to_json, to_yaml
    from kplan.report.table import render_node_usage
    from kplan.report.usage import node_usage_report

    cluster = release_cluster(snap, resolve_kube_version(None, snap))
    incoming = None
    if pod_file:
        pods = load_pods([pod_file])
        if len(pods) != 1:
            raise InputError(f"--pod: expected one Pod, found {len(pods)}", pod_file)
        incoming = pods[0]
        snap.resolve_priority(incoming)
    names = [cluster.names[i] for i in np.flatnonzero(selector_mask(selector, cluster))]
    usage = node_usage(snap, cluster, at or datetime.now(timezone.utc), load_aware_args(profiles, profile),
                       incoming, names)
    report = {**node_usage_report(usage), **snap.forbidden_fields()}
    if output in (OutputFormat.json, OutputFormat.yaml):
        write(to_json(report) if output == OutputFormat.json else to_yaml(report))
    else:
        render_node_usage(report, stdout_console())
    raise typer.Exit(ExitCode.OK)
