"""Runs kplan as users do (python -m kplan, in the repository), for the command-line tests.

Under mutation testing the commands run in this interpreter instead (`in_process_kplan`), so that
mutmut sees which scheduling functions each command-line test reaches and runs it against their
mutants: mutmut sets MUTANT_UNDER_TEST in every test run it makes, and KPLAN_TESTS_IN_PROCESS=1 asks
for the same in a plain pytest run. Both ways give the same exit code, stdout and stderr
(tests/cli/test_in_process_runner.py compares them).
"""
from __future__ import annotations

import gc
import io
import os
import subprocess
import sys
import warnings
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Iterator
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]

IN_PROCESS = "MUTANT_UNDER_TEST" in os.environ or os.environ.get("KPLAN_TESTS_IN_PROCESS") == "1"

# mutmut's own variables: the trampolines in the mutated code read which mutant is active from them.
MUTMUT_VARIABLES = ("MUTANT_UNDER_TEST", "MUTMUT_DEPENDENCY_DEPTH", "PY_IGNORE_IMPORTMISMATCH")


def run_kplan(*args: str, columns: int = 200, stdin: str | None = None, env: dict[str, str] | None = None,
              timeout: float | None = None) -> tuple[int, str, str]:
    """Returns (exit code, stdout, stderr), with a clean environment: no colour, COLUMNS set."""
    return kplan(args, env={"COLUMNS": str(columns), "PATH": "/usr/bin:/bin", "NO_COLOR": "1", **(env or {})},
                 stdin=stdin, timeout=timeout)


def kplan(args: tuple[str, ...] | list[str], env: dict[str, str] | None = None, cwd: Path | str = ROOT,
          stdin: str | None = None, timeout: float | None = None) -> tuple[int, str, str]:
    """`python -m kplan ARGS` in `cwd` with environment `env` (None: this process's); returns (exit
    code, stdout, stderr). In this interpreter when IN_PROCESS, else in a child process (the only
    one a `timeout` can stop)."""
    if IN_PROCESS:
        return in_process_kplan(args, env=env, cwd=cwd, stdin=stdin)
    return subprocess_kplan(args, env=env, cwd=cwd, stdin=stdin, timeout=timeout)


def subprocess_kplan(args, env=None, cwd=ROOT, stdin=None, timeout=None) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "kplan", *args], capture_output=True, text=True, input=stdin,
                          cwd=cwd, env=env, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


def in_process_kplan(args, env=None, cwd=ROOT, stdin=None) -> tuple[int, str, str]:
    """Runs kplan's command-line entry point here, with the process state a child would start from:
    argv, environment, working directory, standard streams. Its exit (sys.exit, or os._exit after a
    snapshot was loaded) becomes the returned code."""
    from kplan.cli import app, common

    out, err = io.BytesIO(), io.BytesIO()
    with ExitStack() as stack:
        stack.enter_context(_process_state(args, env, cwd, stdin, out, err))
        # os._exit would end the test run: leave as sys.exit does, the streams flushed alike.
        stack.enter_context(mock.patch.object(app, "_leave", _leave_by_exception))
        # A child freezes its loaded objects out of the collector for its last moments; here they
        # must stay collectable once the command is done.
        stack.enter_context(mock.patch.object(gc, "freeze", lambda: None))
        try:
            app.main()
            code = 0
        except SystemExit as leaving:
            code = _exit_status(leaving.code)
        except BaseException:  # what --debug lets through: the interpreter prints it and exits 1
            sys.excepthook(*sys.exc_info())
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            common.LOADED.clear()
    return code, _decoded(out), _decoded(err)


def _leave_by_exception(code: int) -> None:
    raise SystemExit(code)


def _exit_status(code) -> int:
    """The status a child exits with for SystemExit(code): None is 0; a non-integer is printed, 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _decoded(data: io.BytesIO) -> str:
    """As subprocess.run(text=True) reads a child's output: UTF-8, universal newlines."""
    return data.getvalue().decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


@contextmanager
def _fresh_warnings() -> Iterator[None]:
    """Python's warnings as a fresh interpreter has them (pytest's are recorded, not printed): its
    default filters, and each warning printed to stderr."""
    def show(message, category, filename, lineno, file=None, line=None):
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    with warnings.catch_warnings():
        warnings.resetwarnings()
        for action, category, module in reversed(DEFAULT_WARNING_FILTERS):
            warnings.filterwarnings(action, category=category, module=module)
        warnings.showwarning = show
        yield


# The filters of an interpreter started without -W (the warnings module's documentation, "Default
# Warning Filter"), first match first.
DEFAULT_WARNING_FILTERS = (("default", DeprecationWarning, "__main__"), ("ignore", DeprecationWarning, ""),
                           ("ignore", PendingDeprecationWarning, ""), ("ignore", ImportWarning, ""),
                           ("ignore", ResourceWarning, ""))


@contextmanager
def _process_state(args, env, cwd, stdin, out: io.BytesIO, err: io.BytesIO) -> Iterator[None]:
    saved_environ, saved_argv, saved_cwd = dict(os.environ), sys.argv, os.getcwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    if env is not None:
        os.environ.clear()
        os.environ.update({k: v for k, v in saved_environ.items() if k in MUTMUT_VARIABLES})
        os.environ.update(env)
    sys.argv = [str(ROOT / "kplan" / "__main__.py"), *args]  # what `python -m kplan` sees
    os.chdir(cwd)
    streams = (io.TextIOWrapper(io.BytesIO((stdin or "").encode("utf-8")), encoding="utf-8"),
               io.TextIOWrapper(out, encoding="utf-8", write_through=True),
               io.TextIOWrapper(err, encoding="utf-8", write_through=True))
    sys.stdin, sys.stdout, sys.stderr = streams
    try:
        with _fresh_warnings():
            yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        for stream in streams:  # unwrapped, so that collecting a wrapper does not close its buffer
            stream.detach()
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_environ)
