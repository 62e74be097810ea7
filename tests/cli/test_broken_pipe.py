"""`kplan … | head`: when the reader goes away, kplan ends quietly with the answer's exit code (0 it
fits, 1 it does not), never one the closed pipe made up, and without a traceback."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from builders import node

ROOT = Path(__file__).resolve().parents[2]


def with_closed_stdout(*args: str) -> tuple[int, str]:
    """Runs kplan with its standard output a pipe that nobody reads: closed before kplan writes."""
    proc = subprocess.Popen([sys.executable, "-m", "kplan", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={"PATH": "/usr/bin:/bin", "COLUMNS": "120"})
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(timeout=120), err


@pytest.mark.parametrize("pod, answer", [("samples/pod-burstable.yaml", 0), ("samples/pod-too-big.yaml", 1)])
@pytest.mark.parametrize("output", ["table", "json"])
def test_the_answer_survives_a_closed_pipe(pod, answer, output):
    code, err = with_closed_stdout("place", pod, "-f", "samples/cluster.yaml", "-o", output)
    assert code == answer and err == "", err


def test_help_into_a_closed_pipe():
    code, err = with_closed_stdout("--help")
    assert code == 0 and err == "", err


def test_the_pipe_closing_midway(tmp_path):
    """`| head -1` on a report far longer than the pipe holds: the first line comes out, and the exit code is
    the answer's (0: the node report always answers) though most writes fail."""
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [node(f"n{i}") for i in range(400)]}))
    err = tmp_path / "err.txt"
    proc = subprocess.run(f"{sys.executable} -m kplan nodes -f {cluster} -o json 2>{err} | head -1; "
                          'echo "${PIPESTATUS[0]}"', shell=True, cwd=ROOT, capture_output=True, text=True,
                          executable="/bin/bash", env={"PATH": "/usr/bin:/bin"})
    assert proc.stdout.splitlines() == ["{", "0"] and err.read_text() == "", (proc.stdout, err.read_text())
