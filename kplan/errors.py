"""Exit codes and the error hierarchy: the one place exit codes live."""
from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes, as the README and `--help` list them."""

    OK = 0
    NOT_PLACEABLE = 1  # the answer is "no": a pod is unschedulable or needs preemption
    USAGE = 2  # bad command line or bad input
    CLUSTER = 3  # cluster access failed
    INTERNAL = 4  # a bug
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)


class KplanError(Exception):
    """Base of every error kplan reports as one line."""

    exit_code = ExitCode.INTERNAL


class InputError(KplanError):
    """Bad input: malformed YAML, an invalid quantity, an unknown plugin, a missing file."""

    exit_code = ExitCode.USAGE

    def __init__(self, message: str, source: str | None = None, document: int | None = None):
        self.source = source
        self.document = document
        self.message = message
        where = source or ""
        if source and document is not None:
            where += f" (document {document})"
        super().__init__(f"{where}: {message}" if where else message)


class ClusterAccessError(KplanError):
    """Kubeconfig or context not found, credentials refused, API unreachable."""

    exit_code = ExitCode.CLUSTER


class PluginError(KplanError):
    """A plugin returned Code.ERROR: a bug or an inconsistent snapshot."""

    exit_code = ExitCode.INTERNAL
