"""Option types shared by the commands, defined once."""
from __future__ import annotations

from enum import Enum
from typing import Annotated, Optional

import typer

INPUT = "Cluster state"
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
VerboseOpt = Annotated[bool, typer.Option(
    "--verbose", "-v", help="Also list what the loader skipped, by kind.", rich_help_panel=OUTPUT)]
NodeSelectorOpt = Annotated[Optional[str], typer.Option(
    "--selector", "-l", metavar="SELECTOR",
    help="Only nodes whose labels match this selector (e.g. pool=general,zone in (a,b),!gpu).",
    rich_help_panel=INPUT)]
KubeVersionOpt = Annotated[Optional[str], typer.Option(
    "--kube-version", metavar="X.Y",
    help="Answer as this kube-scheduler release would (default: the snapshot's recorded server version, "
         "else the newest release kplan knows).", rich_help_panel=SCHEDULER)]
NowOpt = Annotated[Optional[str], typer.Option(
    "--now", metavar="TIME",
    help="Answer as of this time (RFC 3339, e.g. 2026-05-01T12:00:00Z): the age of NodeMetrics and of "
         "recently scheduled pods is measured from it (default: the current time).",
    rich_help_panel=SCHEDULER)]
NamespaceOpt = Annotated[Optional[str], typer.Option(
    "--namespace", "-n", metavar="NAMESPACE",
    help="Only this namespace (default: the namespace \"default\", as kubectl).", rich_help_panel=INPUT)]
AllNamespacesOpt = Annotated[bool, typer.Option(
    "--all-namespaces", "-A", help="Every namespace.", rich_help_panel=INPUT)]


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
