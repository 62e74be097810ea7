"""The kplan command line: a Typer app wiring options to planning functions."""
from __future__ import annotations

import os
import sys
from typing import Annotated

import typer
from typer.core import TyperGroup

from kplan import __version__
from kplan.errors import ExitCode, KplanError

EXIT_CODES = ("Exit codes: 0 every pod placed without preemption; 1 a pod needs preemption or is "
              "unschedulable; 2 usage or input error; 3 cluster access failed; 4 internal error; "
              "130 interrupted.")

# Typer coerces every option it parses through a pydantic adapter, built on first use, unless the
# option is a flag whose value is already a bool. The flags Typer adds itself (-h, and the completion
# options) are None when not given, so `kplan place -h` would import pydantic (~0.1 s) just to parse
# the root's unused flags. Their defaults, given here as bools, skip that.
_UNSET_FLAGS = {"help": False, "install_completion": False, "show_completion": False}
FLAG_DEFAULTS = {**_UNSET_FLAGS, "quota": dict(_UNSET_FLAGS)}

# Each command's module, and the name of its function (or of its Typer app, for a group), in the
# order `kplan --help` lists them (Typer lists groups after commands). A module is imported, and its
# command built, only when the command is looked up: `kplan place -h` builds `place` alone; `kplan
# --help` lists them all, so it builds them all.
COMMANDS = {
    "place": ("kplan.cli.place", "place"),
    "pending": ("kplan.cli.pending", "pending"),
    "nodes": ("kplan.cli.nodes", "nodes"),
    "check": ("kplan.cli.check", "check"),
    "capacity": ("kplan.cli.capacity", "capacity"),
    "compare": ("kplan.cli.compare", "compare"),
    "consolidate": ("kplan.cli.consolidate", "consolidate"),
    "snapshot": ("kplan.cli.snapshot", "snapshot"),
    "quota": ("kplan.cli.quota", "app"),
}


# Commands whose exit codes differ from the placing commands'.
EPILOGS = {"consolidate": ("Exit codes: 0 the plan was made, whatever it finds; 2 usage or input error; 3 cluster "
                           "access failed; 4 internal error; 130 interrupted.")}


def _build(name: str):
    """Builds one command as `app.command(epilog=...)` (or `app.add_typer` for a group) would."""
    from importlib import import_module

    import typer.main

    module, attr = COMMANDS[name]
    target = getattr(import_module(module), attr)
    holder = typer.Typer(rich_markup_mode="rich")
    if isinstance(target, typer.Typer):
        holder.add_typer(target, name=name, epilog=EXIT_CODES)
    else:
        holder.command(name=name, epilog=EPILOGS.get(name, EXIT_CODES))(target)
    return typer.main.get_group(holder).commands[name]


class LazyGroup(TyperGroup):
    """The root group: lists COMMANDS and builds each on first lookup."""

    def list_commands(self, ctx) -> list[str]:
        return [*self.commands, *(name for name in COMMANDS if name not in self.commands)]

    def get_command(self, ctx, cmd_name: str):
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.commands[cmd_name] = _build(cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx, args):
        if args and args[0] not in COMMANDS:  # a typo: Typer suggests from the commands built
            for name in COMMANDS:
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)


app = typer.Typer(
    cls=LazyGroup,
    name="kplan",
    help="What would the Kubernetes scheduler do if...? Place pods against a cluster snapshot "
         "and see ranked nodes, plugin scores and rejection reasons.",
    epilog=EXIT_CODES,
    rich_markup_mode="rich",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"], "default_map": FLAG_DEFAULTS},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kplan {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors (also after the command: "
                                                        "kplan place ... --debug).")] = False,
) -> None:
    """What would the Kubernetes scheduler do if...?"""



def global_flags(args: list[str]) -> tuple[list[str], bool]:
    """Takes --debug from anywhere on the command line (before a `--`), as kubectl takes its global
    flags before or after the subcommand; returns the other arguments and whether it was given."""
    end = args.index("--") if "--" in args else len(args)
    debug = "--debug" in args[:end]
    return [a for k, a in enumerate(args) if k >= end or a != "--debug"], debug


def _error(message: str) -> None:
    from rich.console import Console
    from rich.markup import escape
    Console(stderr=True, highlight=False, soft_wrap=True).print(f"[bold red]kplan: error:[/] {escape(message)}")


class PipeStdout:
    """Standard output that outlives its reader. When the pipe closes (`kplan place … | head`), what is
    left to print goes to /dev/null, quietly, and the command runs to its end: its exit code stays the
    answer's, never one a failed write would make up (click exits 1, kplan's "does not fit", on EPIPE)."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._discard()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._discard()

    def _discard(self) -> None:
        """Points the descriptor at /dev/null, so later writes and the final flush succeed."""
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self._stream.fileno())
        os.close(devnull)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def main() -> None:
    """Runs the CLI and turns every error into one line on stderr and its exit code."""
    prog = "kubectl kplan" if os.path.basename(sys.argv[0]).startswith("kubectl-") else "kplan"
    args, debug = global_flags(sys.argv[1:])
    sys.stdout = PipeStdout(sys.stdout)
    try:
        code = app(args=args, standalone_mode=False, prog_name=prog)
    except KplanError as err:
        if debug:
            raise
        _error(str(err))
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        sys.exit(ExitCode.INTERRUPTED)
    except Exception as err:  # click's own exceptions come from typer's bundled copy: duck-typed
        if type(err).__name__ == "Abort":
            sys.exit(ExitCode.INTERRUPTED)
        if hasattr(err, "show") and hasattr(err, "exit_code"):
            err.show()
            sys.exit(ExitCode.USAGE)
        if debug:
            raise
        _error(f"internal error: {type(err).__name__}: {err} (run with --debug for a traceback)")
        sys.exit(ExitCode.INTERNAL)
    _leave(code if isinstance(code, int) else ExitCode.OK)


def _leave(code: int) -> None:
    """Ends the process once the answer is out. After loading a snapshot, without the interpreter's
    teardown: freeing it object by object (150,000 pods: about 0.4 s) would only delay the exit."""
    common = sys.modules.get("kplan.cli.common")  # not imported: nothing was loaded (e.g. -h)
    if common is None or not common.LOADED:
        sys.exit(code)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
