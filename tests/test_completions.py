"""The shipped completion files are what scripts/gen_completions.py makes of the current CLI."""
from __future__ import annotations

import difflib
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Annotated, Optional

import pytest
import typer

ROOT = Path(__file__).resolve().parent.parent
GENERATOR = ROOT / "scripts" / "gen_completions.py"
COMPLETIONS = ROOT / "completions"
FILES = ["_kplan", "commands.txt", "kplan.bash", "kplan.fish", "kubectl_complete-kplan"]
REGENERATE = "completions/ is stale: run `python scripts/gen_completions.py` and commit the result"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_completions", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("_KPLAN_", "_TYPER_", "COMP_"))}
    return {**env, **extra}


def _kplan() -> list[str]:
    found = shutil.which("kplan")
    return [found] if found else [sys.executable, "-m", "kplan"]


def test_completion_files_are_up_to_date(tmp_path):
    proc = subprocess.run([sys.executable, str(GENERATOR), "--out", str(tmp_path)],
                          capture_output=True, text=True, env=_env())
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == FILES
    diffs = []
    for name in FILES:
        shipped = COMPLETIONS / name
        want = (tmp_path / name).read_bytes()
        have = shipped.read_bytes() if shipped.is_file() else b""
        if have != want:
            diffs += difflib.unified_diff(have.decode().splitlines(), want.decode().splitlines(),
                                          f"completions/{name}", "generated", lineterm="")
    assert not diffs, REGENERATE + "\n" + "\n".join(diffs)


@pytest.mark.skipif(os.name == "nt", reason="no executable bit on Windows")
def test_kubectl_completion_script_is_executable():
    assert os.access(COMPLETIONS / "kubectl_complete-kplan", os.X_OK)


def test_commands_txt_lists_every_option():
    """A new option changes commands.txt, so forgetting to regenerate fails the test above."""
    gen = _generator()
    app = typer.Typer()

    @app.command()
    def demo(name: Annotated[Optional[str], typer.Option("--name", "-n", help="A name.")] = None) -> None:
        """Demo."""

    @app.command()
    def other() -> None:
        """Other."""

    text = gen.commands_txt(typer.main.get_command(app))
    assert "kplan demo\n  option -n, --name  type=str\n" in text
    assert "kplan other\n" in text


def _path_with_installed_kplan() -> str:
    """PATH led by the directory where installing kplan put its `kplan` script for this interpreter
    (the virtual environment's bin/), as the completion scripts call `kplan` by name."""
    scripts = sysconfig.get_path("scripts")
    assert (Path(scripts) / "kplan").is_file(), f"no kplan script in {scripts}: install kplan (pip install -e .)"
    return os.pathsep.join([scripts, os.environ.get("PATH", os.defpath)])


def test_kubectl_plugin_completion_completes_subcommands():
    script = COMPLETIONS / "kubectl_complete-kplan"
    proc = subprocess.run(["sh", str(script), "pl"], capture_output=True, text=True,
                          env=_env(PATH=_path_with_installed_kplan()), timeout=60)
    lines = proc.stdout.splitlines()
    assert "place" in lines, proc.stdout + proc.stderr
    assert lines[-1] == ":4"


def test_bash_protocol_completes_place_options():
    env = _env(_KPLAN_COMPLETE="complete_bash", COMP_WORDS="kplan place --", COMP_CWORD="2")
    proc = subprocess.run(_kplan(), capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "--snapshot" in proc.stdout.splitlines()
