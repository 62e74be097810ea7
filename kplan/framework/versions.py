"""Which kube-scheduler release kplan answers as, and what differs between releases.

The one place that knows release differences: plugins ask `has(handle, CHANGE_KEY)` and never
compare versions themselves.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from kplan.errors import InputError

# (major, minor) or (major, minor, patch). A minor alone stands for its first release, X.Y.0: the
# behaviour every later patch release of it has too.
Version = tuple[int, ...]

OLDEST: Version = (1, 33)
NEWEST: Version = (1, 36)


@dataclass(frozen=True)
class Change:
    """A behaviour upstream changed: releases from `since` on have `after`, older ones `before`.

    `backported` names the patch releases of older minors that got the change as a cherry-pick:
    {(1, 33): 6} means 1.33.6 and every later 1.33 patch release have `after` too.
    """

    key: str
    plugin: str
    since: Version
    before: str
    after: str
    upstream: str
    backported: Mapping[Version, int] = field(default_factory=dict, hash=False)


BALANCE_CHANGE = "balanced-allocation-scores-balance-change"
BALANCED_SKIPS_BEST_EFFORT = "balanced-allocation-skips-best-effort"
DYNAMIC_RESOURCES_DEFAULT = "dynamic-resources-in-default-profile"
DRA_BINDING_CONDITIONS = "dra-device-binding-conditions"
DRA_DEVICE_TAINTS = "dra-device-taints"
GENERIC_TAINT_REASON = "taint-toleration-generic-reason"
FIT_UNRESOLVABLE = "fit-unresolvable-when-over-allocatable"
IMAGE_LOCALITY_IMAGE_VOLUMES = "image-locality-counts-image-volumes"
NODE_DECLARED_FEATURES = "node-declared-features-filter"
POD_LEVEL_RESOURCES = "pod-level-resources"
POD_LEVEL_RESIZE = "pod-level-requests-count-status"
SIDECAR_HOST_PORTS = "node-ports-counts-sidecar-host-ports"
STATEFUL_SET_MAX_UNAVAILABLE = "stateful-set-rolls-max-unavailable-at-once"
VOLUME_ATTRIBUTES_CLASS = "volume-binding-matches-attributes-class"

CHANGES: tuple[Change, ...] = (
    Change(BALANCED_SKIPS_BEST_EFFORT, "NodeResourcesBalancedAllocation", (1, 33),
           "scores pods that request none of its resources",
           "PreScore skips pods that request none of its resources", "kubernetes#130260"),
    Change(POD_LEVEL_RESOURCES, "pod requests (every resource plugin)", (1, 34),
           "pod-level spec.resources is ignored (PodLevelResources alpha, off by default)",
           "pod-level requests replace the containers' cpu, memory and hugepages (beta, on by default)",
           "KEP-2837"),
    Change(DYNAMIC_RESOURCES_DEFAULT, "DynamicResources", (1, 34),
           "not in the default profile (DynamicResourceAllocation beta, off by default): "
           "FailedScheduling messages end with DefaultPreemption's reasons",
           "in the default profile before DefaultPreemption (GA, on by default): its PostFilter runs "
           "first, so a pod without claims reads \"... . no new claims to deallocate, preemption: ...\", "
           "and \"... . not found\" (no preemption) when a PreFilter plugin rejected it as "
           "UnschedulableAndUnresolvable",
           "KEP-4381"),
    Change(VOLUME_ATTRIBUTES_CLASS, "VolumeBinding", (1, 34),
           "a claim or volume naming a VolumeAttributesClass never binds (VolumeAttributesClass beta, off by default)",
           "a claim binds only volumes of its own VolumeAttributesClass (GA, on by default)", "kubernetes#131549"),
    Change(FIT_UNRESOLVABLE, "NodeResourcesFit", (1, 34),
           "a request larger than the node's whole allocatable is Unschedulable",
           "such a node is UnschedulableAndUnresolvable (preemption skips it)", "kubernetes#131345"),
    Change(SIDECAR_HOST_PORTS, "NodePorts", (1, 34),
           "host ports of sidecar (restartable init) containers are neither asked for nor held",
           "they count like the containers'", "kubernetes#132040",
           backported={(1, 33): 6}),  # kubernetes#133390, released in v1.33.6
    Change(GENERIC_TAINT_REASON, "TaintToleration", (1, 35),
           "reason names the taint: node(s) had untolerated taint {key: value}",
           "reason: node(s) had untolerated taint(s)", "kubernetes#134740",
           backported={(1, 34): 2}),  # kubernetes#135023, released in v1.34.2
    Change(STATEFUL_SET_MAX_UNAVAILABLE, "StatefulSet controller (check's rollouts)", (1, 35),
           "a rolling update replaces one pod at a time, whatever rollingUpdate.maxUnavailable says "
           "(MaxUnavailableStatefulSet alpha, off by default)",
           "it replaces up to maxUnavailable pods at once (beta, on by default)", "KEP-961"),
    Change(DRA_DEVICE_TAINTS, "DynamicResources", (1, 36),
           "devices' taints are ignored (DRADeviceTaints alpha, off by default)",
           "a device with a NoSchedule or NoExecute taint is allocated only to a request tolerating it "
           "(beta, on by default)", "KEP-5055"),
    Change(DRA_BINDING_CONDITIONS, "DynamicResources", (1, 36),
           "devices with binding conditions are never allocated (DRADeviceBindingConditions alpha, off by default)",
           "they are allocated like any other device (beta, on by default; PreBind then waits for the "
           "conditions)", "KEP-5007"),
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
    Change(IMAGE_LOCALITY_IMAGE_VOLUMES, "ImageLocality", (1, 36),
           "image volumes (spec.volumes[].image) add nothing to the score",
           "each image volume's image on the node adds its spread-scaled size like a container's; "
           "the cap stays 1000MB per init container and container (kubernetes#138952)",
           "kubernetes#130231"),
    Change(NODE_DECLARED_FEATURES, "NodeDeclaredFeatures", (1, 36),
           "not in the default profile (NodeDeclaredFeatures alpha, off by default): "
           "nodes' status.declaredFeatures are not read",
           "in the default profile (beta, on by default): a node not declaring a feature the pod's spec "
           "needs is UnschedulableAndUnresolvable: node(s) didn't match Pod's required features",
           "kubernetes#136042"),
)
_BY_KEY = {c.key: c for c in CHANGES}


# Where the release kplan answers as comes from (kubeVersionSource in the JSON reports).
FROM_FLAG, FROM_SNAPSHOT, FROM_KUBELET, FROM_DEFAULT = "flag", "snapshot", "kubelet", "default"


def _match(text: str) -> Version | None:
    # A server's gitVersion may carry a vendor suffix (v1.34.2-eks-1234): the release is what precedes it.
    match = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+].*)?", str(text).strip())
    return tuple(int(part) for part in match.groups() if part is not None) if match else None


def _parse(text: str, what: str = "--kube-version") -> Version:
    version = _match(text)
    if version is None:
        raise InputError(f"{what} {text!r}: not a Kubernetes version (use e.g. 1.35 or 1.35.2)")
    return version


def _minor(version: Version) -> Version:
    """(major, minor) of a version, the unit releases are supported and changes land in."""
    return version[:2]


def _patch(version: Version) -> int:
    """The patch number; a minor given alone is its first release, X.Y.0."""
    return version[2] if len(version) > 2 else 0


def _nearest(version: Version) -> Version:
    """The version itself when kplan knows its minor, else the nearest known minor (its first release)."""
    if OLDEST <= _minor(version) <= NEWEST:
        return version
    return min(max(_minor(version), OLDEST), NEWEST)


def recorded_version(text: str) -> tuple[Version, str]:
    """Returns the release to answer as for a server's recorded version (its patch included), and a
    warning when kplan does not know that minor (it then answers as the nearest minor it knows)."""
    version = _parse(text, "the snapshot's kubeVersion")
    nearest = _nearest(version)
    if nearest == version:
        return version, ""
    return nearest, (f"the snapshot's server runs {text}; kplan answers as kube-scheduler "
                     f"{format_version(nearest)}, the nearest release it knows (--kube-version overrides)")


@dataclass(frozen=True)
class KubeletInference:
    """The release inferred from the nodes' kubelet versions, for a snapshot that records no server version.

    Kubelets may lag the control plane by up to three minors and never lead it, so the newest
    kubelet's version is the closest lower bound of the server's.
    """

    version: Version | None  # the release to answer as; None when no node reports a kubelet version
    kubelet: str = ""  # the newest kubelet's version as its node reports it (v1.34.2-eks-1234)
    ignored: int = 0  # nodes reporting no kubelet version, or one that is not a Kubernetes version
    warning: str = ""  # set when kplan does not know the newest kubelet's minor


def infer_from_kubelets(reported: Iterable[object]) -> KubeletInference:
    """Infers the release from the nodes' status.nodeInfo.kubeletVersion values: the newest one, vendor
    suffix dropped, answered as the nearest minor kplan knows (with a warning) when it knows not that one."""
    parsed: dict[str, Version | None] = {}  # a cluster runs a handful of kubelet versions: parse each once
    newest: tuple[int, int, int] | None = None
    newest_text, ignored = "", 0
    for text in reported:
        if not isinstance(text, str):
            ignored += 1
            continue
        if text not in parsed:
            parsed[text] = _match(text)
        version = parsed[text]
        if version is None:
            ignored += 1
            continue
        key = (*_minor(version), _patch(version))
        if newest is None or key > newest:
            newest, newest_text = key, text
    if newest is None:
        return KubeletInference(None, ignored=ignored)
    version = parsed[newest_text]
    nearest = _nearest(version)
    warning = "" if nearest == version else (
        f"the snapshot records no server version and its newest kubelet runs {newest_text}; kplan answers as "
        f"kube-scheduler {format_version(nearest)}, the nearest release it knows (--kube-version overrides)")
    return KubeletInference(nearest, newest_text, ignored, warning)


def parse_version(text: str) -> Version:
    """Parses "1.35" into (1, 35), and "1.35.2" or "v1.35.2" (a server's gitVersion) into (1, 35, 2);
    a minor kplan does not simulate -> InputError."""
    version = _parse(text)
    if not OLDEST <= _minor(version) <= NEWEST:
        raise InputError(f"--kube-version {text}: kplan simulates kube-scheduler "
                         f"{format_version(OLDEST)} to {format_version(NEWEST)}")
    return version


def format_version(version: Version) -> str:
    """Shows a minor as "1.33" and a patch release as "1.33.7": the release as it was asked for."""
    return ".".join(str(part) for part in version)


def has(version: Version | None, key: str) -> bool:
    """Tells whether a release (None: the newest) has the new behaviour of change `key`: every
    release of minor `since` or later has it, and of an older minor the patch releases it was
    backported to."""
    change = _BY_KEY[key]
    version = version or NEWEST
    if _minor(version) >= change.since:
        return True
    first_patch = change.backported.get(_minor(version))
    return first_patch is not None and _patch(version) >= first_patch
