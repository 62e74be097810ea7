"""`kplan place`: where would these pods land, and why not elsewhere?"""
from __future__ import annotations

import os
import re
from typing import Annotated, Optional

import typer

from kplan.cli.options import (
    OUTPUT, AddNodeOpt, ConfigOpt, HtmlOpt, CordonOpt, DrainOpt, ForceDrainOpt, KubeVersionOpt, RemoveNodeOpt, NowOpt, OutputFormat, OutputOpt, ProfileOpt, SnapshotOpt, ValidateOpt, VerboseOpt,
    parse_now,
)
from kplan.cli.options import AsGroupOpt, AsOpt, ContextOpt, KubeconfigOpt, LiveOpt, RequestTimeoutOpt, StrictOpt
from kplan.errors import ExitCode

# Commands import the planning stack when they run, so `kplan --help` stays fast.

_POD_REFERENCE = re.compile(r"(?:[a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?")


def is_pod_reference(arg: str) -> bool:
    """A POD argument that names a pod of the snapshot (ns/name, or name in "default") rather than a
    file: no such file, and the shape of a namespace and a pod name."""
    return not os.path.exists(arg) and bool(_POD_REFERENCE.fullmatch(arg)) \
        and not arg.endswith((".yaml", ".yml", ".json", ".gz"))


def place(
    pod_files: Annotated[list[str], typer.Argument(
        metavar="POD_FILE...|NS/NAME...",
        help="Pods to place, in order: manifest files, or pods of the snapshot (ns/name) to re-plan, taken "
             "off their node first.")],
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
    kube_version: KubeVersionOpt = None,
    now: NowOpt = None,
    output: OutputOpt = OutputFormat.table,
    html: HtmlOpt = None,
    top: Annotated[int, typer.Option("--top", help="Ranked nodes to show (0: all).", rich_help_panel=OUTPUT)] = 10,
    explain: Annotated[Optional[list[str]], typer.Option(
        "--explain", metavar="NODE", help="Explain this node's result plugin by plugin. Repeatable.",
        rich_help_panel=OUTPUT)] = None,
    add_node: AddNodeOpt = None,
    remove_node: RemoveNodeOpt = None,
    cordon: CordonOpt = None,
    drain: DrainOpt = None,
    force_drain: ForceDrainOpt = False,
    verbose: VerboseOpt = False,
    validate: ValidateOpt = "strict",  # applied by the option's callback
) -> None:
    """Place pods as kube-scheduler would: ranked nodes, per-plugin scores, rejection reasons.

    Each pod sees the ones placed before it.
    """
    from kplan.cli.common import live_source, load_cluster, load_profiles, stdout_console, write
    from kplan.api.workloads import Manifests
    from kplan.sources.manifests import load_manifests
    from kplan.planning.place import Planner
    from kplan.report.model import placement, placement_report
    from kplan.report.nearest import what_would_make_it_fit_fields
    from kplan.report.ratios import NodeTotals
    from kplan.report.render import to_json, to_yaml
    from kplan.report.table import render_placements

    from kplan.cli.what_if import apply_what_if
    at = parse_now(now)
    profiles = load_profiles(config)
    source = live_source(live, kubeconfig, context, as_user, as_groups, request_timeout, strict=strict)
    snap, changes = apply_what_if(load_cluster(snapshot, verbose, source), add_node, remove_node, cordon, drain,
                                  profiles, profile, kube_version, at, force_drain, verbose)
    refs = [arg for arg in pod_files if is_pod_reference(arg)]
    files = [arg for arg in pod_files if arg not in refs]
    manifests = load_manifests(files) if files else Manifests()
    snap = manifests.applied_to(snap)
    planner = Planner(snap, profiles, profile, kube_version=kube_version, now=at)
    planner.check_nodes(explain or ())
    replanned = [planner.unbind(ref if "/" in ref else f"default/{ref}") for ref in refs]
    runs_on = {pod.key: node or None for pod, node in replanned}
    admitted = [planner.admit(pod) for pod in manifests.pods(snap.nodes)]
    notes = {pod.key: pod_notes for pod, _, pod_notes in admitted if pod_notes}
    runs_on.update({pod.key: node for pod, node, pod_notes in admitted if node})
    pods = [pod for pod, _ in replanned] + [pod for pod, _, _ in admitted]
    before = NodeTotals.of(planner.cluster) if html else None
    # An unschedulable pod gets what `kplan pending` shows for one: the nearest nodes and the hints.
    entries = [{**placement(result, planner.cluster, explain or ()), **what_would_make_it_fit_fields(planner, result)}
               for result in planner.place_each(pods)]
    for entry in entries:
        if entry["pod"] in runs_on:
            entry["runsOn"] = runs_on[entry["pod"]]
        if entry["pod"] in notes:
            entry["notes"] = notes[entry["pod"]]
    report = placement_report(entries, **planner.release_fields())
    if html:
        from kplan.report.html import pages
        pages.write_page(html, pages.place_page(report, **pages.run_parts("place", planner, snapshot, before)))
    if output in (OutputFormat.json, OutputFormat.yaml):
        write(to_json(report) if output == OutputFormat.json else to_yaml(report))
    else:
        render_placements(report, stdout_console(), wide=output == OutputFormat.wide, top=top)
    all_scheduled = report["summary"]["scheduled"] == len(entries) and not (changes and changes.failed)
    raise typer.Exit(ExitCode.OK if all_scheduled else ExitCode.NOT_PLACEABLE)
