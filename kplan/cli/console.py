"""The console human output goes to: on a terminal, fit to its width; anywhere else (a CI log, a
pipe, a file) every line at its natural width, as kubectl prints, so a table row stays one line."""
from __future__ import annotations

import sys
from typing import IO, Any

from rich.console import Console

# The width given to Rich when the output is not a terminal: wider than any line kplan prints (a
# `-o wide` row lists every rejected node), so nothing wraps; Rich pads nothing to it.
PIPE_WIDTH = 1 << 30


class _StripTrailingBlanks:
    """A text stream that writes each line without the blanks Rich pads table cells with."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._tail = ""

    @property
    def encoding(self) -> str:
        return getattr(self._stream, "encoding", None) or "utf-8"

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        lines = (self._tail + text).split("\n")
        self._tail = lines.pop()
        if lines:
            self._stream.write("".join(line.rstrip(" ") + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        if self._tail:  # a line Rich ended without a newline
            self._stream.write(self._tail)
            self._tail = ""
        self._stream.flush()


class TerminalConsole(Console):
    """A terminal's console that never cuts a line at the right edge: a table that cannot fit even
    with every column wrapped down to its longest word (kplan/report/table.py) runs past the edge and
    the terminal wraps it, as it does kubectl's, rather than losing its last columns."""

    def print(self, *objects: Any, crop: bool = False, **kwargs: Any) -> None:
        super().print(*objects, crop=crop, **kwargs)


def output_console(file: IO[str] | None = None) -> Console:
    """Returns the console for human output to `file` (default: standard output)."""
    stream = file if file is not None else sys.stdout
    if Console(file=stream).is_terminal:  # Rich's answer: isatty, or FORCE_COLOR / TTY_COMPATIBLE
        return TerminalConsole(file=file, highlight=False, soft_wrap=False)
    return Console(file=_StripTrailingBlanks(stream), width=PIPE_WIDTH, highlight=False, soft_wrap=False)
