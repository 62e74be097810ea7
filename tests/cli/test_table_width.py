"""Human output piped or redirected keeps each table row on one line, at its natural width, with no
trailing blanks; on a terminal tables fit its width and never break a node name."""
from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import pytest
from rich.console import Console

from kplan.cli.console import TerminalConsole, output_console
from kplan.report.pending_table import render_pending
from kplan.report.table import kubectl_table, render_nodes, render_placements
from run_kplan import kplan

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
LONG = {  # the sample cluster's nodes, named as on EKS
    "node-a1": "ip-10-0-123-45.eu-west-1.compute.internal",
    "node-b1": "ip-10-0-77-201.eu-west-1.compute.internal",
    "node-b2": "ip-10-0-77-9.eu-west-1.compute.internal",
    "node-c1": "ip-10-0-200-17.eu-west-1.compute.internal",
    "node-c2": "ip-10-0-200-180.eu-west-1.compute.internal",
    "gpu-a1": "ip-10-0-5-66.eu-west-1.compute.internal",
}
COLUMN_GAP = re.compile(r" {3,}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Path:
    text = (SAMPLES / "cluster.yaml").read_text()
    for short, long in LONG.items():
        text = text.replace(short, long)
    path = tmp_path_factory.mktemp("long-names") / "cluster.yaml"
    path.write_text(text)
    return path


def piped(*args: str) -> str:
    """Runs kplan with stdout a pipe (as `kplan ... | cat`) and no COLUMNS in the environment."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "TTY_COMPATIBLE")}
    code, out, err = kplan(args, env=env)
    assert code in (0, 1), err
    return out


def table_after(lines: list[str], header: str) -> list[list[str]]:
    """The rows (cells split at kubectl's 3-space gaps) of the table whose header line starts so."""
    start = next(k for k, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start:]:
        if not line.strip() or not line[0].isalnum() and not line.startswith("*"):
            break
        rows.append(COLUMN_GAP.split(line))
    return rows


def assert_plain_lines(out: str) -> list[str]:
    lines = out.splitlines()
    assert not [line for line in lines if line != line.rstrip()], "trailing blanks"
    return lines


def test_place_piped_keeps_rows_and_names_whole(cluster):
    out = piped("place", "samples/pod-too-big.yaml", "samples/pod-burstable.yaml", "-f", str(cluster), "-o", "wide")
    lines = assert_plain_lines(out)
    message = next(line for line in lines if line.startswith("Unschedulable: "))
    assert message.endswith("6 Preemption is not helpful for scheduling.")
    rejected = table_after(lines, "NODES")
    assert rejected[0] == ["NODES", "PLUGIN", "REASON", "NODE NAMES"]
    assert rejected[1] == ["4", "NodeResourcesFit", "Insufficient cpu; Insufficient memory",
                           ", ".join(LONG[n] for n in ("node-a1", "node-b1", "node-c1", "node-c2"))]
    ranked = table_after(lines, "RANK")
    assert ranked[0][:3] == ["RANK", "NODE", "SCORE"] and len(ranked) == 5
    assert all(len(row) == len(ranked[0]) for row in ranked)  # one line per row, every plugin column on it
    assert [row[1] for row in ranked[1:]] == [LONG[n] for n in ("node-c1", "node-b1", "node-c2", "node-a1")]


def test_nodes_wide_piped_header_and_rows_on_one_line(cluster):
    lines = assert_plain_lines(piped("nodes", "-f", str(cluster), "-o", "wide"))
    rows = table_after(lines, "NODE")
    assert len(rows) == len(lines) == 1 + len(LONG) + 1  # header, a row per node, the total
    assert rows[0][:7] == ["NODE", "STATUS", "ZONE", "TAINTS", "PODS", "QOS G/B/BE", "CPU"]
    assert "NVIDIA.COM/GPU HEADROOM" in rows[0]
    assert all(len(row) == len(rows[0]) for row in rows)
    assert rows[-1][:4] == ["*", "-", "-", "-"]  # status, zone and taints do not add up
    assert sorted(row[0] for row in rows[1:-1]) == sorted(LONG.values())
    gpu = next(row for row in rows if row[0] == LONG["gpu-a1"])
    assert gpu[1:4] == ["Ready", "zone-a", "nvidia.com/gpu=present:NoSchedule"]


def test_pending_piped_is_one_line_per_row():
    out = piped("pending", "-f", "samples/pending/cluster.yaml", "-A")
    lines = assert_plain_lines(out)
    rows = table_after(lines, "POD")[:5]  # the header, then a row per pending pod
    assert rows[0] == ["POD", "PRIORITY", "AGE", "OUTCOME", "NODE OR FIRST REASON"]
    assert [row[0] for row in rows[1:]] == ["shop/api-7", "batch/train-1", "shop/worker-3", "batch/report-1"]
    assert all(len(row) == 5 for row in rows)
    assert any(line.startswith("  now:      0/3 nodes are available: ") and line.endswith("for incoming pod.")
               for line in lines)


def reports(cluster: Path) -> tuple[dict, dict]:
    place = piped("place", "samples/pod-too-big.yaml", "samples/pod-burstable.yaml", "-f", str(cluster), "-o", "json")
    nodes = piped("nodes", "-f", str(cluster), "-o", "json")
    return json.loads(place), json.loads(nodes)


def test_non_terminal_stream_gets_natural_width(cluster):
    place, nodes = reports(cluster)
    stream = io.StringIO()
    console = output_console(stream)
    assert not console.is_terminal
    render_placements(place, console, wide=True)
    render_nodes(nodes, console, wide=True)
    lines = assert_plain_lines(stream.getvalue())
    assert max(len(line) for line in lines) > 200  # nothing wrapped at 80
    for name in LONG.values():
        assert any(re.search(rf"(^|\s){re.escape(name)}(\s|,|$)", line) for line in lines)
    ranked = table_after(lines, "RANK")
    assert len(ranked) == 5 and all(len(row) == len(ranked[0]) for row in ranked)
    node_rows = table_after(lines, "NODE ")
    assert len(node_rows) == 1 + len(LONG) + 1 and all(len(row) == len(node_rows[0]) for row in node_rows)


def name_fragments(lines: list[str]) -> list[str]:
    """Pieces of a long node name on a line that does not hold the whole name."""
    broken = []
    for line in lines:
        for word in re.findall(r"ip-10-0-[\w.-]*", line):
            if word.rstrip(",") not in LONG.values():
                broken.append(word)
    return broken


@pytest.mark.parametrize("width", [80, 60])
def test_terminal_console_keeps_the_node_column_whole(cluster, width):
    """A plain Rich terminal console: name columns are never wrapped nor squeezed."""
    place, nodes = reports(cluster)
    stream = io.StringIO()
    console = Console(file=stream, width=width, force_terminal=True, color_system=None)
    render_placements(place, console, wide=False)
    lines = stream.getvalue().splitlines()
    ranked = [line for line in lines if re.match(r"\d+\s+ip-10-0-", line)]
    assert [COLUMN_GAP.split(line)[1] for line in ranked] == [LONG[n] for n in ("node-c1", "node-b1", "node-c2",
                                                                                 "node-a1")]
    stream = io.StringIO()  # the node table alone (the placements' nearest-node rows start with names too)
    render_nodes(nodes, Console(file=stream, width=width, force_terminal=True, color_system=None), wide=True)
    node_rows = [line for line in stream.getvalue().splitlines() if line.startswith("ip-10-0-")]
    assert sorted(line.split()[0] for line in node_rows) == sorted(LONG.values())


@pytest.mark.parametrize("width", [80, 60])
def test_kplan_terminal_console_breaks_no_node_name(cluster, width):
    """kplan's own terminal console never cuts a line at the edge, so no name anywhere is cut either."""
    place, nodes = reports(cluster)
    stream = io.StringIO()
    console = TerminalConsole(file=stream, width=width, force_terminal=True, color_system=None)
    render_placements(place, console, wide=True)
    render_nodes(nodes, console, wide=True)
    lines = stream.getvalue().splitlines()
    assert not name_fragments(lines)
    assert sum(name in line for line in lines for name in LONG.values()) >= 3 * len(LONG)
    ranked = [line for line in lines if re.match(r"\d+\s+ip-10-0-", line)]
    assert len(ranked) == 4


def test_terminal_wraps_other_columns_between_words_first():
    table = kubectl_table("node", "reason", names=("node",))
    table.add_row(LONG["node-a1"], "node(s) didn't match Pod's node affinity/selector; Insufficient cpu")
    stream = io.StringIO()
    Console(file=stream, width=80, force_terminal=True, color_system=None).print(table)
    lines = stream.getvalue().splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert lines[1].startswith(LONG["node-a1"] + "   node(s)")
    words = " ".join(line[len(LONG["node-a1"]) + 3:].strip() for line in lines[1:]).split()
    assert words == "node(s) didn't match Pod's node affinity/selector; Insufficient cpu".split()


def test_terminal_table_that_fits_is_unchanged():
    table = kubectl_table("node", "score", names=("node",))
    table.add_row("node-a1", "432")
    stream = io.StringIO()
    Console(file=stream, width=80, force_terminal=True, color_system=None).print(table)
    assert stream.getvalue().splitlines() == ["NODE      SCORE", "node-a1   432  "]


def test_pending_render_is_unchanged_by_the_name_columns():
    report = json.loads(piped("pending", "-f", "samples/pending/cluster.yaml", "-A", "-o", "json"))
    stream = io.StringIO()
    render_pending(report, Console(file=stream, width=200, color_system=None))
    assert "POD              PRIORITY   AGE" in stream.getvalue()
