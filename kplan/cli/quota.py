"""`kplan quota`: ElasticQuota status (min, max, used, borrowed) and per-pod quota checks."""
from __future__ import annotations

from functools import partial
from typing import Annotated

import typer

from kplan.cli.options import (
    AddNodeOpt, AllNamespacesOpt, ConfigOpt, CordonOpt, DrainOpt, ForceDrainOpt, HtmlOpt, KubeVersionOpt, NamespaceOpt, OutputFormat,
    OutputOpt, ProfileOpt, RemoveNodeOpt, SnapshotOpt, ValidateOpt, VerboseOpt,
)
from kplan.cli.options import AsGroupOpt, AsOpt, ContextOpt, KubeconfigOpt, LiveOpt, RequestTimeoutOpt, StrictOpt
from kplan.errors import ExitCode, InputError

DEFAULT_NAMESPACE = "default"

app = typer.Typer(name="quota", help="ElasticQuota (CapacityScheduling): status and per-pod checks.",
                  no_args_is_help=True, rich_markup_mode="rich",
                  context_settings={"help_option_names": ["-h", "--help"]})


def _emit(report: dict, output: OutputFormat, render) -> None:
    from kplan.cli.common import stdout_console, write
    from kplan.report.render import to_json, to_yaml
    if output == OutputFormat.json:
        write(to_json(report))
    elif output == OutputFormat.yaml:
        write(to_yaml(report))
    else:
        render(report, stdout_console())


@app.command()
def status(
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
    """Show each ElasticQuota's min, max, used, borrowed (used above min), lendable (min unused) and share.

    `used` is what CapacityScheduling counts: the requests of the namespace's pods bound to a node;
    a differing status.used is shown beside it. Cluster capacity, total min and total used follow,
    then warnings (surprising bounds, total min above capacity).
    """
    from kplan.cli.common import live_source, load_cluster
    from kplan.planning.quota import quota_usage
    from kplan.report.quota import quota_status
    from kplan.report.table import render_quota_status

    if namespace and all_namespaces:
        raise InputError("--namespace and --all-namespaces exclude each other")
    from kplan.cli.what_if import apply_what_if
    source = live_source(live, kubeconfig, context, as_user, as_groups, request_timeout, strict=strict)
    snap, changes = apply_what_if(load_cluster(snapshot, verbose, source), add_node, remove_node, cordon, drain,
                                  force_drain=force_drain, verbose=verbose)
    report = {**quota_status(quota_usage(snap), None if all_namespaces else namespace or DEFAULT_NAMESPACE),
              **snap.forbidden_fields()}
    if html:
        from kplan.report.html.header import header
        from kplan.report.html.page import write_page
        from kplan.report.html.quota import quota_page
        write_page(html, quota_page(report, header("quota status", snap, snapshot)))
    _emit(report, output, partial(render_quota_status, verbose=verbose))
    if changes is not None and changes.failed:
        raise typer.Exit(ExitCode.NOT_PLACEABLE)


@app.command()
def check(
    pod_files: Annotated[list[str], typer.Argument(metavar="POD_FILE...", help="Pods to check, in order.")],
    snapshot: SnapshotOpt = None,
    config: ConfigOpt = None,
    profile: ProfileOpt = None,
    kube_version: KubeVersionOpt = None,
    output: OutputOpt = OutputFormat.table,
    verbose: VerboseOpt = False,
    validate: ValidateOpt = "strict",  # applied by the option's callback
) -> None:
    """Would these pods pass their ElasticQuota (CapacityScheduling PreFilter), and whose pods go if only preemption fits them?

    Without --config, the profile of samples/quota/scheduler-config.yaml is used for every pod.
    Exit code 0 when every pod passes its quota and is scheduled without preemption, else 1.
    """
    from kplan.cli.common import load_cluster, load_profiles
    from kplan.planning.place import load_pods
    from kplan.planning.quota import quota_check
    from kplan.report.quota import quota_check as quota_check_report
    from kplan.report.table import render_quota_check

    pods = load_pods(pod_files)
    profiles = load_profiles(config) if config else None
    snap = load_cluster(snapshot, verbose)
    report = {**quota_check_report(quota_check(snap, pods, profiles, profile, kube_version)),
              **snap.forbidden_fields()}
    _emit(report, output, render_quota_check)
    ok = all(c["preFilter"]["passed"] and c["placement"]["outcome"] == "Scheduled" for c in report["checks"])
    raise typer.Exit(ExitCode.OK if ok else ExitCode.NOT_PLACEABLE)
