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
KubeVersionOpt = Annotated[Optional[str], typer.Option(
    "--kube-version", metavar="X.Y",
    help="Answer as this kube-scheduler release would (default: the snapshot's recorded server version, "
         "else the newest release kplan knows).", rich_help_panel=SCHEDULER)]
