"""The command-line tests' two ways to run kplan answer alike: in a child process, as users run it, and
in this interpreter, as they run under mutation testing (tests/run_kplan.py)."""
import os
import sys

import pytest

from run_kplan import ROOT, in_process_kplan, subprocess_kplan

CLEAN = {"PATH": "/usr/bin:/bin", "NO_COLOR": "1"}
POD_ON_STDIN = (ROOT / "samples" / "pod-burstable.yaml").read_text()

COMMANDS = [
    # A placement as a table (exit 0), as JSON, and one that does not fit (exit 1).
    (["place", "samples/pod-burstable.yaml", "-f", "samples/cluster.yaml"], 120, None),
    (["place", "samples/pod-burstable.yaml", "-f", "samples/cluster.yaml", "-o", "json"], 200, None),
    (["place", "samples/pod-gpu.yaml", "-f", "samples/cluster.yaml", "--explain", "node-a1"], 120, None),
    (["place", "samples/pod-too-big.yaml", "-f", "samples/cluster.yaml", "-o", "wide"], 200, None),
    # The manifest read from standard input.
    (["place", "-", "-f", "samples/cluster.yaml", "-o", "yaml"], 200, POD_ON_STDIN),
    # The other commands, each with its own output.
    (["nodes", "-f", "samples/cluster.yaml", "--cordon", "node-a1"], 160, None),
    (["check", "samples/check/apps.yaml", "samples/check/too-big.yaml", "-f", "samples/cluster.yaml"], 200, None),
    (["capacity", "samples/capacity/checkout.yaml", "-f", "samples/capacity/cluster.yaml"], 200, None),
    # An input error (exit 2, one line on stderr), a usage error (click's box), help and --version.
    (["place", "samples/no-such-pod.yaml", "-f", "samples/cluster.yaml"], 200, None),
    (["place", "samples/pod-burstable.yaml", "--no-such-option"], 100, None),
    (["place", "-h"], 100, None),
    (["--version"], 80, None),
]


@pytest.mark.parametrize(("args", "columns", "stdin"), COMMANDS, ids=[" ".join(c[0][:2]) for c in COMMANDS])
def test_in_process_run_answers_as_a_child_process(args, columns, stdin):
    env = {**CLEAN, "COLUMNS": str(columns)}
    child = subprocess_kplan(args, env=env, stdin=stdin)
    assert child[1] or child[2]  # the command said something to compare
    assert in_process_kplan(args, env=env, stdin=stdin) == child


def test_in_process_runs_leave_no_state_behind():
    """A command run twice in the same interpreter answers the same bytes, and the test process gets
    its streams, environment and working directory back."""
    before = sys.stdout, sys.stderr, sys.argv, dict(os.environ), os.getcwd()
    args = ["place", "samples/pod-gpu.yaml", "-f", "samples/cluster.yaml", "-o", "json"]
    first = in_process_kplan(args, env={**CLEAN, "COLUMNS": "120"})
    assert first[0] in (0, 1) and first[1].startswith("{")
    assert in_process_kplan(args, env={**CLEAN, "COLUMNS": "120"}) == first
    assert (sys.stdout, sys.stderr, sys.argv, dict(os.environ), os.getcwd()) == before
