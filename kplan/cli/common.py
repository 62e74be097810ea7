"""Wiring shared by commands: consoles, loading the snapshot and the scheduler config."""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Sequence

from rich.console import Console

from kplan.errors import InputError
from kplan.framework.config import Profile, default_profile, load_config
from kplan.sources.files import iter_documents
from kplan.sources.snapshot import Snapshot, load_snapshot

if TYPE_CHECKING:
    from kplan.sources.live import LiveSource


def stdout_console() -> Console:
    """Human output: fit to a terminal's width; piped or redirected, each line at its natural width."""
    from kplan.cli.console import output_console
    return output_console()


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def load_cluster(paths: Sequence[str] | None, verbose: bool = False, live: "LiveSource | None" = None) -> Snapshot:
    """Loads the --snapshot paths (or reads the cluster for --live) and reports skipped kinds and
    warnings on stderr."""
    if live is not None:
        if paths:
            raise InputError("--live and --snapshot exclude each other")
        from kplan.sources.live import snapshot_live
        snapshot = snapshot_live(live)
    elif not paths:
        raise InputError("no cluster state given: pass --snapshot FILE (a dump from `kubectl get nodes,pods -A "
                         "-o json` or `kplan snapshot`) or --live")
    else:
        snapshot = load_snapshot(paths)
    report_load(snapshot, verbose)
    LOADED.append(snapshot)
    return snapshot


# The snapshots loaded by this process. The command line's main leaves without the interpreter's
# teardown; held here, their objects are not freed one by one when a command returns either.
LOADED: list[Snapshot] = []


def live_source(live: bool, kubeconfig: str | None = None, context: str | None = None, as_user: str | None = None,
                as_groups: Sequence[str] | None = None, request_timeout: str | None = None,
                namespace: str | None = None, strict: bool = False) -> "LiveSource | None":
    """Returns where to read the cluster for --live (None without it); the Kubernetes options need --live."""
    from kplan.sources.live import LiveSource, parse_timeout
    given = [flag for flag, value in (("--kubeconfig", kubeconfig), ("--context", context), ("--as", as_user),
                                      ("--as-group", as_groups), ("--request-timeout", request_timeout),
                                      ("--strict", strict)) if value]
    if not live:
        if given:
            raise InputError(f"{' and '.join(given)} {'go' if len(given) > 1 else 'goes'} with --live "
                             "(or write a file with `kplan snapshot`)")
        return None
    return LiveSource(kubeconfig=kubeconfig, context=context, namespace=namespace, as_user=as_user,
                      as_groups=tuple(as_groups or ()), request_timeout=parse_timeout(request_timeout), strict=strict)


def report_load(snapshot: Snapshot, verbose: bool) -> None:
    """Says on stderr what was skipped (always counted, by kind and file with -v) and what looked
    odd, naming what each warning is about (the first few without -v, all with it)."""
    err = stderr_console()
    for path, reason in snapshot.skipped_files:
        if reason is not None:
            err.print(f"kplan: warning: skipped {path}: {reason}", style="yellow",
                      markup=False)
    others = [path for path, reason in snapshot.skipped_files if reason is None]
    if others:
        if verbose:
            for path in others:
                err.print(f"kplan: skipped {path}: not a .yaml, .yml or .json file", style="dim", markup=False)
        else:
            err.print(f"kplan: skipped {len(others)} file(s) of the folder(s) that are not .yaml, .yml or .json "
                      "(-v lists them)", style="dim")
    skipped = sum(snapshot.skipped.values())
    if skipped:
        if verbose:
            for kind, count in sorted(snapshot.skipped.items()):
                reason = snapshot.skip_reasons.get(kind, "kind not used")
                err.print(f"kplan: skipped {count} {kind} object(s): {reason}", style="dim", markup=False)
        else:
            err.print(f"kplan: skipped {skipped} object(s) of kinds kplan does not use (-v lists them)",
                      style="dim")
    for message, count in sorted(snapshot.warnings.items()):
        err.print(f"kplan: warning: {count} {message}{_examples(snapshot.examples.get(message), verbose)}",
                  style="yellow", markup=False)
    for message in snapshot.problems:
        err.print(f"kplan: warning: {message}", style="yellow", markup=False)


def _examples(names: list[str] | None, verbose: bool) -> str:
    from kplan.report.names import some_names
    return ": " + some_names(names, verbose) if names else ""


def load_profiles(config: str | None) -> list[Profile]:
    """Returns the profiles of a KubeSchedulerConfiguration file, or the default profile."""
    if not config:
        return [default_profile()]
    docs = [obj for _, _, obj in iter_documents(config)]
    if len(docs) != 1:
        raise InputError(f"expected one KubeSchedulerConfiguration, found {len(docs)} documents", config)
    return load_config(docs[0], config)


def write(text: str) -> None:
    sys.stdout.write(text)
