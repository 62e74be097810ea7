"""The README's examples are printed whole: each block that starts with `$ kplan …` is what that
command prints now, line for line (none shortened, none stale)."""
import re
import shlex
from pathlib import Path

import pytest

from run_kplan import run_kplan

README = Path(__file__).resolve().parents[1] / "README.md"


def examples() -> list[tuple[str, str]]:
    blocks = re.findall(r"^```\n\$ (kplan [^\n]*)\n(.*?)^```$", README.read_text(encoding="utf-8"), re.M | re.S)
    return [(command, output) for command, output in blocks]


def test_the_readme_has_examples():
    commands = [command for command, _ in examples()]
    assert any(c.startswith("kplan pending ") for c in commands) and any(c.startswith("kplan nodes ") for c in commands)
    assert any(c.startswith("kplan check ") for c in commands)


@pytest.mark.parametrize("command,output", examples(), ids=[command for command, _ in examples()])
def test_readme_example_is_what_kplan_prints(command, output):
    code, out, err = run_kplan(*shlex.split(command)[1:])
    assert (err if code == 2 else out) == output, err  # an input error is what the terminal shows of it
