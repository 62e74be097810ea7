"""Option types shared by the commands, defined once."""
from __future__ import annotations

from enum import Enum
from typing import Annotated, Optional

import typer

INPUT = "Cluster state"
MANIFESTS = "Manifests"
OUTPUT = "Output"
SCHEDULER = "Scheduler"


class OutputFormat(str, Enum):
    table = "table"
    wide = "wide"
    json = "json"
    yaml = "yaml"


SnapshotOpt = Annotated[Optional[list[str]], typer.Option(
    "--snapshot", "-f", metavar="PATH",
    help="Cluster dump: a file (YAML/JSON, `kind: List`, .gz), a folder, or - for stdin. Repeatable.",
    rich_help_panel=INPUT)]
ConfigOpt = Annotated[Optional[str], typer.Option(
    "--config", metavar="FILE", help="A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1).",
    rich_help_panel=SCHEDULER)]
ProfileOpt = Annotated[Optional[str], typer.Option(
    "--profile", metavar="NAME", help="Use this profile for every pod instead of its schedulerName.",
    rich_help_panel=SCHEDULER)]
OutputOpt = Annotated[OutputFormat, typer.Option(
    "--output", "-o", help="table, wide, json or yaml.", rich_help_panel=OUTPUT, case_sensitive=False)]


def _use_field_validation(ctx: typer.Context, value: str) -> str:
    """Makes --validate the field validation of this command's run (kplan.api.field_validation)."""
    from kplan.api.field_validation import FieldValidation, parse_flag, validating
    from kplan.cli.common import stderr_console

    def warn(line: str) -> None:
        stderr_console().print(f"kplan: warning: {line}", style="yellow", markup=False)

    ctx.with_resource(validating(FieldValidation(parse_flag(value), warn=warn)))
    return value


ValidateOpt = Annotated[str, typer.Option(
    "--validate", metavar="strict|warn|ignore", callback=_use_field_validation,
    help="Unknown or duplicate fields in manifests and --add-node files, as kubectl's --validate: strict (or "
         "true) refuses the file, warn says so, ignore (or false) drops them.", rich_help_panel=MANIFESTS)]
VerboseOpt = Annotated[bool, typer.Option(
    "--verbose", "-v", help="Also list what the loader skipped, by kind.", rich_help_panel=OUTPUT)]
NodeSelectorOpt = Annotated[Optional[str], typer.Option(
    "--selector", "-l", metavar="SELECTOR",
    help="Only nodes whose labels match this selector (e.g. pool=general,zone in (a,b),!gpu).",
    rich_help_panel=INPUT)]
KubeVersionOpt = Annotated[Optional[str], typer.Option(
    "--kube-version", metavar="X.Y[.Z]",
    help="Answer as this kube-scheduler release would: X.Y.Z that patch release, X.Y its first one, X.Y.0 "
         "(default: the snapshot's recorded server version, else its newest kubelet's, else the newest "
         "release kplan knows).",
    rich_help_panel=SCHEDULER)]
NowOpt = Annotated[Optional[str], typer.Option(
    "--now", metavar="TIME",
    help="Answer as of this time (RFC 3339, e.g. 2026-05-01T12:00:00Z): the age of NodeMetrics and of "
         "recently scheduled pods is measured from it (default: the current time).",
    rich_help_panel=SCHEDULER)]
PodSelectorOpt = Annotated[Optional[str], typer.Option(
    "--selector", "-l", metavar="SELECTOR", help="Only pods whose labels match this selector (e.g. app=web,tier!=db).",
    rich_help_panel=INPUT)]
NamespaceOpt = Annotated[Optional[str], typer.Option(
    "--namespace", "-n", metavar="NAMESPACE",
    help="Only this namespace (default: the namespace \"default\", as kubectl).", rich_help_panel=INPUT)]
AllNamespacesOpt = Annotated[bool, typer.Option(
    "--all-namespaces", "-A", help="Every namespace.", rich_help_panel=INPUT)]

KUBERNETES = "Kubernetes"
LiveOpt = Annotated[bool, typer.Option(
    "--live", help="Read the cluster now (get/list only) instead of --snapshot, as kubectl finds it.",
    rich_help_panel=KUBERNETES)]
KubeconfigOpt = Annotated[Optional[str], typer.Option(
    "--kubeconfig", metavar="FILE", help="The kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, "
                                         "else the in-cluster service account).", rich_help_panel=KUBERNETES)]
ContextOpt = Annotated[Optional[str], typer.Option(
    "--context", metavar="NAME", help="The kubeconfig context (default: its current-context).",
    rich_help_panel=KUBERNETES)]
AsOpt = Annotated[Optional[str], typer.Option(
    "--as", metavar="USER", help="Impersonate this user (or system:serviceaccount:NS:NAME).",
    rich_help_panel=KUBERNETES)]
AsGroupOpt = Annotated[Optional[list[str]], typer.Option(
    "--as-group", metavar="GROUP", help="Impersonate this group (with --as). Repeatable.",
    rich_help_panel=KUBERNETES)]
StrictOpt = Annotated[bool, typer.Option(
    "--strict", help="Fail (exit 3) when a kind kplan reads is forbidden, instead of going on without it and "
                     "saying what the answer lacks (nodes and pods are always required).", rich_help_panel=KUBERNETES)]
RequestTimeoutOpt = Annotated[Optional[str], typer.Option(
    "--request-timeout", metavar="DURATION",
    help="Give up on an API request after this long, e.g. 30s or 2m; 0 waits forever (default: 60s).",
    rich_help_panel=KUBERNETES)]

WHAT_IF = "What-if node changes"
AddNodeOpt = Annotated[Optional[list[str]], typer.Option(
    "--add-node", metavar="FILE[:COUNT]",
    help="Add a node from this Node manifest; with COUNT, that many copies named <name>-1..COUNT. Repeatable.",
    rich_help_panel=WHAT_IF)]
RemoveNodeOpt = Annotated[Optional[list[str]], typer.Option(
    "--remove-node", metavar="NAME|SELECTOR",
    help="Remove the node (or the nodes matching a label selector, e.g. pool=gpu); their pods are dropped. "
         "Repeatable.", rich_help_panel=WHAT_IF)]
CordonOpt = Annotated[Optional[list[str]], typer.Option(
    "--cordon", metavar="NAME|SELECTOR",
    help="Cordon the node(s): unschedulable, with the node.kubernetes.io/unschedulable:NoSchedule taint. "
         "Repeatable.", rich_help_panel=WHAT_IF)]
DrainOpt = Annotated[Optional[list[str]], typer.Option(
    "--drain", metavar="NAME|SELECTOR",
    help="Drain the node(s): cordon, then evict their pods (not DaemonSet or static pods) and re-place them first, "
         "highest priority first; evictions a PodDisruptionBudget refuses and pods that fit nowhere are reported "
         "and the exit code is 1. Repeatable.",
    rich_help_panel=WHAT_IF)]
ForceDrainOpt = Annotated[bool, typer.Option(
    "--force-drain", help="With --drain: delete the pods without asking their PodDisruptionBudgets.",
    rich_help_panel=WHAT_IF)]


def parse_now(value: str | None):
    """Returns --now as an aware datetime (None when not given); a bad time is an input error."""
    if value is None:
        return None
    from kplan.api.node_metric import parse_time
    from kplan.errors import InputError
    try:
        return parse_time(value)
    except ValueError as err:
        raise InputError(f"--now: {err}") from None


HtmlOpt = Annotated[Optional[str], typer.Option(
    "--html", metavar="FILE",
    help="Also write the run as one self-contained HTML page (charts, sortable tables) to FILE.",
    rich_help_panel=OUTPUT)]
