"""The page header: what was simulated (snapshot, release, profiles, plugins kplan does not simulate)."""
from __future__ import annotations

from typing import Any, Sequence

from kplan.framework import versions
from kplan.sources.snapshot import Snapshot

RELEASE_SOURCES = {versions.FROM_FLAG: "--kube-version", versions.FROM_SNAPSHOT: "the snapshot's server version",
                   versions.FROM_KUBELET: "the newest kubelet", versions.FROM_DEFAULT: "the newest release kplan knows"}


def header(command: str, snapshot: Snapshot, sources: Sequence[str] | None, *, release: dict[str, Any] | None = None,
           profiles: Sequence[str] = (), not_simulated: dict[str, Sequence[str]] | None = None) -> dict[str, Any]:
    """Returns the header's title and facts as (label, value) pairs, in reading order."""
    facts: list[tuple[str, str]] = []
    recorded = snapshot.header
    if recorded.get("context") or recorded.get("server"):
        facts.append(("Cluster", " · ".join(str(v) for v in (recorded.get("context"), recorded.get("server")) if v)))
    facts.append(("Snapshot", ", ".join(sources) if sources else "read live"))
    if recorded.get("takenAt"):
        facts.append(("Taken at", str(recorded["takenAt"])))
    facts.append(("Objects", f"{len(snapshot.nodes)} nodes, {len(snapshot.pods)} pods, "
                             f"{len(snapshot.namespaces)} namespaces"))
    for resource, lost in snapshot.forbidden.items():  # lists the snapshot's reader was refused
        facts.append(("Forbidden", f"{resource}: {lost}"))
    if release:
        source = RELEASE_SOURCES.get(release.get("kubeVersionSource", ""), release.get("kubeVersionSource", ""))
        if release.get("kubeletVersion"):
            source = f"{source} ({release['kubeletVersion']})"
        facts.append(("kube-scheduler", f"{release['kubeVersion']}, from {source}"))
    if profiles:
        facts.append(("Profile", ", ".join(profiles)))
    for profile, plugins in (not_simulated or {}).items():
        label = "Not simulated" if len(not_simulated or {}) == 1 else f"Not simulated ({profile})"
        facts.append((label, ", ".join(plugins) if plugins else "none"))
    return {"title": f"kplan {command}", "command": command, "facts": facts}


def planner_header(command: str, planner, sources: Sequence[str] | None) -> dict[str, Any]:
    """The header of a run that scheduled pods: the planner's release, profiles and their plugins
    kplan does not simulate."""
    used = used_profiles(planner)
    return header(command, planner.snapshot, sources, release=planner.release_fields(), profiles=list(used),
                  not_simulated=used)


def used_profiles(planner) -> dict[str, list[str]]:
    """The profiles the planner schedules with (the --profile one only, when given), each with the
    plugins kplan does not simulate."""
    names = [planner.profile_override] if planner.profile_override else list(planner.frameworks)
    return {name: planner.frameworks[name].not_simulated for name in names}
