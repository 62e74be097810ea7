"""Which kube-scheduler release kplan answers as, and what differs between releases.

The one place that knows release differences: plugins ask `has(handle, CHANGE_KEY)` and never
compare versions themselves.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from kplan.errors import InputError

Version = tuple[int, int]

OLDEST: Version = (1, 33)
NEWEST: Version = (1, 36)


@dataclass(frozen=True)
class Change:
    """A behaviour upstream changed: releases from `since` on have `after`, older ones `before`."""

    key: str
    plugin: str
    since: Version
    before: str
    after: str
    upstream: str


BALANCE_CHANGE = "balanced-allocation-scores-balance-change"
BALANCED_SKIPS_BEST_EFFORT = "balanced-allocation-skips-best-effort"
GENERIC_TAINT_REASON = "taint-toleration-generic-reason"
FIT_UNRESOLVABLE = "fit-unresolvable-when-over-allocatable"
POD_LEVEL_RESOURCES = "pod-level-resources"
POD_LEVEL_RESIZE = "pod-level-requests-count-status"
SIDECAR_HOST_PORTS = "node-ports-counts-sidecar-host-ports"

CHANGES: tuple[Change, ...] = (
    Change(BALANCED_SKIPS_BEST_EFFORT, "NodeResourcesBalancedAllocation", (1, 33),
           "scores pods that request none of its resources",
           "PreScore skips pods that request none of its resources", "kubernetes#130260"),
    Change(POD_LEVEL_RESOURCES, "pod requests (every resource plugin)", (1, 34),
           "pod-level spec.resources is ignored (PodLevelResources alpha, off by default)",
           "pod-level requests replace the containers' cpu, memory and hugepages (beta, on by default)",
           "KEP-2837"),
    Change(FIT_UNRESOLVABLE, "NodeResourcesFit", (1, 34),
           "a request larger than the node's whole allocatable is Unschedulable",
           "such a node is UnschedulableAndUnresolvable (preemption skips it)", "kubernetes#131345"),
    Change(SIDECAR_HOST_PORTS, "NodePorts", (1, 34),
           "host ports of sidecar (restartable init) containers are neither asked for nor held",
           "they count like the containers' (also in 1.33.6 and later 1.33 patch releases)",
           "kubernetes#132040"),
    Change(GENERIC_TAINT_REASON, "TaintToleration", (1, 35),
           "reason names the taint: node(s) had untolerated taint {key: value}",
           "reason: node(s) had untolerated taint(s)", "kubernetes#134740"),
    Change(BALANCE_CHANGE, "NodeResourcesBalancedAllocation", (1, 36),
           "scores the balance after placement: (1 - std) * 100",
           "scores the change of balance: 50 + (50 + with - without) / 2; no change scores 75",
           "kubernetes#135573"),
    Change(POD_LEVEL_RESIZE, "pod requests (every resource plugin)", (1, 36),
           "a bound pod's pod-level requests are its spec.resources "
           "(InPlacePodLevelResourcesVerticalScaling alpha, off by default)",
           "they are max(spec, status.resources, status.allocatedResources) per resource; "
           "without spec while a resize is Infeasible (beta, on by default)",
           "kubernetes#137684"),
)
_BY_KEY = {c.key: c for c in CHANGES}


def _parse(text: str, what: str = "--kube-version") -> Version:
    match = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?(?:[-+].*)?", str(text).strip())
    if not match:
        raise InputError(f"{what} {text!r}: not a Kubernetes version (use e.g. 1.35)")
    return int(match.group(1)), int(match.group(2))


def recorded_version(text: str) -> tuple[Version, str]:
    """Returns the release to answer as for a server's recorded version, and a warning when kplan
    does not know that release (it then answers as the nearest one it knows)."""
    version = _parse(text, "the snapshot's kubeVersion")
    nearest = min(max(version, OLDEST), NEWEST)
    if nearest == version:
        return version, ""
    return nearest, (f"the snapshot's server runs {text}; kplan answers as kube-scheduler "
                     f"{format_version(nearest)}, the nearest release it knows (--kube-version overrides)")


def parse_version(text: str) -> Version:
    """Parses "1.35", "v1.35" or "v1.35.2" (a server's gitVersion) into (1, 35); unsupported -> InputError."""
    version = _parse(text)
    if not OLDEST <= version <= NEWEST:
        raise InputError(f"--kube-version {text}: kplan simulates kube-scheduler "
                         f"{format_version(OLDEST)} to {format_version(NEWEST)}")
    return version


def format_version(version: Version) -> str:
    return f"{version[0]}.{version[1]}"


def has(version: Version | None, key: str) -> bool:
    """Tells whether a release (None: the newest) has the new behaviour of change `key`."""
    return (version or NEWEST) >= _BY_KEY[key].since
