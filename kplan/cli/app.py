"""The kplan command line: a Typer app wiring options to planning functions."""
from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from kplan import __version__
from kplan.cli.capacity import capacity
from kplan.cli.check import check
from kplan.cli.nodes import nodes
from kplan.cli.pending import pending
from kplan.cli.place import place
from kplan.cli.quota import app as quota_app
from kplan.cli.snapshot import snapshot
from kplan.errors import ExitCode, KplanError

EXIT_CODES = ("Exit codes: 0 every pod placed without preemption; 1 a pod needs preemption or is "
              "unschedulable; 2 usage or input error; 3 cluster access failed; 4 internal error; "
              "130 interrupted.")

app = typer.Typer(
    name="kplan",
    help="What would the Kubernetes scheduler do if...? Place pods against a cluster snapshot "
         "and see ranked nodes, plugin scores and rejection reasons.",
    epilog=EXIT_CODES,
    rich_markup_mode="rich",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kplan {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
) -> None:
    """What would the Kubernetes scheduler do if...?"""


app.command(epilog=EXIT_CODES)(place)
app.command(epilog=EXIT_CODES)(pending)
app.command(epilog=EXIT_CODES)(nodes)
app.add_typer(quota_app, name="quota", epilog=EXIT_CODES)
app.command(epilog=EXIT_CODES)(check)
app.command(epilog=EXIT_CODES)(capacity)
app.command(epilog=EXIT_CODES)(snapshot)


def _error(message: str) -> None:
    from rich.console import Console
    from rich.markup import escape
    Console(stderr=True, highlight=False, soft_wrap=True).print(f"[bold red]kplan: error:[/] {escape(message)}")


def main() -> None:
    """Runs the CLI and turns every error into one line on stderr and its exit code."""
    prog = "kubectl kplan" if os.path.basename(sys.argv[0]).startswith("kubectl-") else "kplan"
    debug = "--debug" in sys.argv
    try:
        code = app(standalone_mode=False, prog_name=prog)
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
    sys.exit(code if isinstance(code, int) else ExitCode.OK)
