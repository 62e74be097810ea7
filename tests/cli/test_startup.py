"""`kplan --help` and every command's `-h` load only what they print: the command asked for, not the
others, and no planning stack (numpy, YAML), kubernetes client or pydantic. Start-up time itself is
measured by bench/run.py (e), not here."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

from kplan.cli.app import COMMANDS, app

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("numpy", "yaml", "kubernetes", "pydantic", "kplan.planning", "kplan.framework", "kplan.sources",
         "kplan.cluster", "kplan.report")

PROBE = """
import json, sys
sys.argv = ["kplan", *json.loads(sys.argv[1])]
from kplan.cli.app import main
try:
    main()
except SystemExit as exit:
    code = exit.code
sys.stdout = sys.__stdout__
print("\\n" + json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def loaded(*args: str) -> tuple[int, set[str]]:
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], capture_output=True, text=True,
                          cwd=ROOT, env={"COLUMNS": "120", "PATH": "/usr/bin:/bin"})
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return result["code"], set(result["modules"])


def command_paths() -> list[list[str]]:
    root = typer.main.get_command(app)
    ctx = root.make_context("kplan", [], resilient_parsing=True)
    paths = []
    for name in root.list_commands(ctx):
        paths.append([name])
        sub = root.get_command(ctx, name)
        if hasattr(sub, "list_commands"):
            paths += [[name, s] for s in sub.list_commands(sub.make_context(name, [], parent=ctx, resilient_parsing=True))]
    return paths


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_every_command_is_listed():
    assert [p[0] for p in command_paths() if len(p) == 1] == list(COMMANDS)
    assert ["quota", "status"] in command_paths() and ["quota", "check"] in command_paths()


def test_root_help_loads_no_planning_stack():
    code, modules = loaded("--help")
    assert code == 0 and not heavy(modules)


@pytest.mark.parametrize("path", command_paths(), ids=" ".join)
def test_command_help_loads_that_command_only(path):
    code, modules = loaded(*path, "-h")
    assert code == 0
    assert not heavy(modules), f"kplan {' '.join(path)} -h imports {heavy(modules)}"
    others = {module for name, (module, _) in COMMANDS.items() if name != path[0]}
    assert not others & modules, f"kplan {' '.join(path)} -h imports {sorted(others & modules)}"
