"""Runs kplan as users do (python -m kplan, in the repository), for the command-line tests."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_kplan(*args: str, columns: int = 200, stdin: str | None = None, env: dict[str, str] | None = None,
              timeout: float | None = None) -> tuple[int, str, str]:
    """Returns (exit code, stdout, stderr), with a clean environment: no colour, COLUMNS set."""
    proc = subprocess.run([sys.executable, "-m", "kplan", *args], capture_output=True, text=True, input=stdin,
                          cwd=ROOT, env={"COLUMNS": str(columns), "PATH": "/usr/bin:/bin", "NO_COLOR": "1",
                                         **(env or {})}, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr
