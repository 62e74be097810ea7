"""DynamicResources: a pod's ResourceClaims must be allocatable on the node, with devices its
ResourceSlices publish (pkg/scheduler/framework/plugins/dynamicresources).

Its gate (DynamicResourceAllocation) is GA and on by default from v1.34, beta and off in v1.33;
upstream's applyFeatureGates adds the plugin to the default profile, just before DefaultPreemption,
only while the gate is on. Built for an older release it joins no extension point.

- PreEnqueue: each pod claim must name a claim that exists (a template's claim through the pod's
  status.resourceClaimStatuses), is not being deleted and, when made from a template, is owned by
  the pod; otherwise the pod waits with upstream's words (`could not find ResourceClaim "ns/name"`).
- PreFilter writes an empty cycle state, then skips a pod without claims. An allocated claim that
  cannot be reserved for one more pod (256 already) rejects the pod ("resourceclaim in use"), and so
  does an unallocated claim naming a device class that does not exist. Allocated claims keep their
  node selector; the others are handed to the structured allocator (kplan.plugins.structured_allocator).
- Filter, both UnschedulableAndUnresolvable: "cannot allocate all claims" where the allocator finds
  no devices for the unallocated claims; else "resourceclaim not available on the node" where an
  allocated claim's node selector excludes the node. The result does not depend on the pods on the
  node, so preemption's dry runs never free devices.
- PostFilter runs first among the PostFilter plugins: without its cycle state (an earlier PreFilter
  plugin ended the PreFilter loop with UnschedulableAndUnresolvable) it fails with an Error, "not
  found", and preemption never runs; with no claims it answers "no new claims to deallocate"; if an
  allocated claim was unavailable on a node the Filter reached and is reserved for nobody (or for
  this pod alone), it deallocates it ("deallocation of ResourceClaim completed": later pods see the
  devices free); else "still not schedulable".
- Reserve allocates on the chosen node; the allocation and the pod's reservation are written when
  the pod is bound (PreBind), through kplan.cluster.devices, so later pods see the devices taken and
  a shared claim allocated to that node.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from kplan.api.dra import RESERVED_FOR_MAX, ExactRequest, ResourceClaim
from kplan.api.node_selectors import node_selector_terms_mask
from kplan.api.objects import Pod
from kplan.cluster.devices import DeviceState
from kplan.cluster.state import ClusterState
from kplan.errors import InputError
from kplan.framework import versions
from kplan.framework.interfaces import CycleState, Handle, PostFilterResult, plugin_args
from kplan.framework.node_filters import Diagnosis
from kplan.framework.status import Code, NodeStatus, Status
from kplan.plugins.structured_allocator import AllocationError, Allocator, Features

NAME = "DynamicResources"
STATE_KEY = NAME
# What fwk.CycleState.Read answers for a key never written (fwk.ErrNotFound).
ERR_STATE_NOT_FOUND = "not found"
NO_CLAIMS = "no new claims to deallocate"
STILL_NOT_SCHEDULABLE = "still not schedulable"
DEALLOCATED = "deallocation of ResourceClaim completed"
CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"
IN_USE = "resourceclaim in use"
REASONS = (CANNOT_ALLOCATE, NOT_AVAILABLE)
# DynamicResourcesArgs: how long Filter and PreBind may wait, which a what-if never does.
DEFAULT_ARGS = {"filterTimeout": None, "bindingTimeout": None}


def new(args: Mapping | None = None, handle: Handle | None = None):
    """Builds the plugin as the release would: before v1.34 (gate off) it takes part in nothing."""
    args = plugin_args(args, DEFAULT_ARGS, NAME)
    version = handle.kube_version if handle else None
    if versions.has(version, versions.DYNAMIC_RESOURCES_DEFAULT):
        return DynamicResources(Features(device_taints=versions.has(version, versions.DRA_DEVICE_TAINTS),
                                         binding_conditions=versions.has(version, versions.DRA_BINDING_CONDITIONS)))
    return NotInRelease()


class NotInRelease:
    """DynamicResources in a release whose feature gate is off by default: it takes part in nothing."""

    name = NAME


class ClaimProblem(Exception):
    """A pod claim that keeps the pod from being scheduled (foreachPodResourceClaim's error)."""


def pod_claims(pod: Pod, devices: DeviceState | None) -> list[ResourceClaim]:
    """foreachPodResourceClaim: the pod's claims, in spec order; ClaimProblem names the first one missing,
    being deleted, or made from a template for another pod."""
    statuses = {s.get("name"): s.get("resourceClaimName") for s in
                (pod.raw.get("status") or {}).get("resourceClaimStatuses") or () if isinstance(s, Mapping)}
    claims = []
    for pod_claim in pod.spec.get("resourceClaims") or ():
        pod_claim = pod_claim if isinstance(pod_claim, Mapping) else {}
        if pod_claim.get("resourceClaimName"):
            name, from_template = pod_claim["resourceClaimName"], False
        elif pod_claim.get("resourceClaimTemplateName"):
            if pod_claim.get("name") not in statuses:
                raise ClaimProblem(f'pod "{pod.namespace}/{pod.name}": ResourceClaim not created yet')
            name, from_template = statuses[pod_claim.get("name")], True
            if not name:
                continue  # intentionally not created
        else:
            raise ClaimProblem(f'pod "{pod.namespace}/{pod.name}", spec.resourceClaim "{pod_claim.get("name")}": '
                               "none of the supported fields are set")
        claim = devices.claim(pod.namespace, name) if devices is not None else None
        if claim is None:
            raise ClaimProblem(f'could not find ResourceClaim "{pod.namespace}/{name}"')
        if claim.deleting:
            raise ClaimProblem(f'resourceclaim "{claim.name}" is being deleted')
        if from_template and claim.owner_pod_uid != pod.uid:
            raise ClaimProblem(f"ResourceClaim {claim.namespace}/{claim.name} was not created for pod "
                               f"{pod.namespace}/{pod.name} (pod is not owner)")
        claims.append(claim)
    return claims


def reserved_for(claim: ResourceClaim, pod: Pod) -> bool:
    return any(c.uid == pod.uid for c in claim.reserved_for)


@dataclass
class CycleData:
    """stateData: the pod's claims, where the allocated ones are available, and the allocator."""

    pod: Pod | None = None
    outcome: Status | None = None  # PreFilter's answer
    claims: list[ResourceClaim] = field(default_factory=list)
    available_on: list[np.ndarray | None] = field(default_factory=list)
    to_allocate: list[int] = field(default_factory=list)
    allocator: Allocator | None = None
    status: NodeStatus | None = None  # Filter's answer, computed once per cycle
    feasible: np.ndarray | None = None

    def clone(self) -> "CycleData":
        return self  # upstream's Clone returns the same state


class DynamicResources:
    """Allocates the pod's claims with the structured allocator and checks allocated claims' nodes."""

    name = NAME

    def __init__(self, features: Features | None = None):
        self.features = features or Features()

    # -- PreEnqueue -------------------------------------------------------------------------------------

    def pre_enqueue(self, pod: Pod, cluster: ClusterState | None = None) -> Status | None:
        if not pod.spec.get("resourceClaims"):
            return None
        try:
            pod_claims(pod, cluster.devices if cluster is not None else None)
        except ClaimProblem as problem:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (str(problem),))
        return None

    # -- PreFilter ---------------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> Status:
        earlier = state.get(STATE_KEY)
        if earlier is not None and earlier.pod is pod and earlier.outcome is not None:
            return earlier.outcome  # a preemption dry run: the cycle's state stands, as upstream's does
        data = CycleData(pod)
        state.write(STATE_KEY, data)
        data.outcome = self._pre_filter(data, pod, cluster)
        return data.outcome

    def _pre_filter(self, data: "CycleData", pod: Pod, cluster: ClusterState) -> Status:
        if not pod.spec.get("resourceClaims"):
            return Status.skip()
        devices = cluster.devices
        try:
            claims = pod_claims(pod, devices)
        except ClaimProblem as problem:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (str(problem),))
        if not claims:
            return Status.skip()
        devices.unreserve(pod)
        available_on: list[np.ndarray | None] = []
        to_allocate = []
        for k, claim in enumerate(claims):
            if claim.allocation is not None:
                if len(claim.reserved_for) >= RESERVED_FOR_MAX and not reserved_for(claim, pod):
                    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (IN_USE,))
                selector = claim.allocation.node_selector
                available_on.append(None if selector is None else node_selector_terms_mask(selector, cluster))
                continue
            available_on.append(None)
            to_allocate.append(k)
            problem = self._class_problem(claim, devices)
            if problem:
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (problem,))
        data.claims, data.available_on, data.to_allocate = claims, available_on, to_allocate
        if to_allocate:
            data.allocator = Allocator([claims[k] for k in to_allocate], devices, self.features)
        return Status()

    def _class_problem(self, claim: ResourceClaim, devices: DeviceState) -> str:
        """validateDeviceClass for each request (each alternative of firstAvailable)."""
        for request in claim.spec.requests:
            if request.exactly is not None:
                if request.exactly.device_class not in devices.classes:
                    return f"request {request.name}: device class {request.exactly.device_class} does not exist"
                continue
            if not self.features.prioritized_list:
                return (f"resource claim {claim.namespace}/{claim.name}, request {request.name}: has subrequests, "
                        "but the DRAPrioritizedList feature is disabled")
            for sub in request.first_available:
                if sub.device_class not in devices.classes:
                    return f"request {request.name}/{sub.name}: device class {sub.device_class} does not exist"
        return ""

    # -- Filter -----------------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> NodeStatus:
        data: CycleData = state.read(STATE_KEY)
        if data.status is None:
            data.status = self._decide(data, pod, cluster)
        return data.status

    def _decide(self, data: CycleData, pod: Pod, cluster: ClusterState) -> NodeStatus:
        n = cluster.n
        unavailable = self.unavailable(data, n)
        short = np.zeros((n, len(REASONS)), dtype=bool)
        errors: dict[int, str] = {}
        if data.allocator is not None:
            feasible, errors = data.allocator.feasible()
            short[:, 0] = ~feasible
        data.feasible = ~short[:, 0]
        short[:, 1] = unavailable.any(axis=1) & ~short[:, 0]
        codes = np.full(n, np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), dtype=np.int8)
        status = NodeStatus.from_reasons(short, list(REASONS), codes,
                                         lambda i: explain_node(data, pod, cluster, i))
        if errors:
            where = sorted(errors)
            status.code[where] = np.int8(Code.ERROR)
            first = data.allocator.claims[0]
            status.error = InputError(f"{NAME}: {errors[where[0]]}", first.source or None)
        return status

    @staticmethod
    def unavailable(data: CycleData, n: int) -> np.ndarray:
        """(N, claims): where each allocated claim's node selector excludes the node."""
        out = np.zeros((n, len(data.claims)), dtype=bool)
        for k, mask in enumerate(data.available_on):
            if mask is not None:
                out[:, k] = ~mask
        return out

    # -- PostFilter -------------------------------------------------------------------------------------

    def post_filter(self, state: CycleState, pod: Pod, cluster: ClusterState,
                    diagnosis: Diagnosis) -> PostFilterResult:
        if STATE_KEY not in state:
            return PostFilterResult(Status(Code.ERROR, (ERR_STATE_NOT_FOUND,)), plugin=NAME)
        data: CycleData = state[STATE_KEY]
        if not data.claims:
            return PostFilterResult(Status(Code.UNSCHEDULABLE, (NO_CLAIMS,)), plugin=NAME)
        for k in self._unavailable_claims(data, diagnosis, cluster.n):
            claim = cluster.devices.claims[data.claims[k].key]
            if not claim.reserved_for or (len(claim.reserved_for) == 1 and claim.reserved_for[0].uid == pod.uid):
                cluster.devices.deallocate(claim.key)
                return PostFilterResult(Status(Code.UNSCHEDULABLE, (DEALLOCATED,)), plugin=NAME)
        return PostFilterResult(Status(Code.UNSCHEDULABLE, (STILL_NOT_SCHEDULABLE,)), plugin=NAME)

    def _unavailable_claims(self, data: CycleData, diagnosis: Diagnosis, n: int) -> list[int]:
        """state.unavailableClaims: the allocated claims unavailable on a node whose Filter this plugin
        ran and rejected with NOT_AVAILABLE (upstream picks one at random; kplan the first)."""
        result = diagnosis.result
        if data.status is None or result.failed_plugin is None or NAME not in result.filter_plugins:
            return []
        mine = result.failed_plugin == result.filter_plugins.index(NAME)
        reached = mine & data.status.reason_mask[:, 1]
        hit = self.unavailable(data, n)[reached].any(axis=0)
        return np.flatnonzero(hit).tolist()

    # -- Reserve ----------------------------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, cluster: ClusterState, node: int) -> Status | None:
        data: CycleData | None = state.get(STATE_KEY)
        if data is None or not data.claims:
            return None
        work = [(claim.key, None) for claim in data.claims if claim.allocation is not None]
        if data.allocator is not None:
            try:
                allocations = data.allocator.allocate(node)
            except AllocationError as err:
                return Status.error(str(err))
            if allocations is None:
                return Status.error("claim allocation not found for node")
            work += [(data.claims[k].key, a) for k, a in zip(data.to_allocate, allocations)]
        cluster.devices.reserve(pod, work)
        return None

    def unreserve(self, state: CycleState, pod: Pod, cluster: ClusterState, node: int) -> None:
        if cluster.devices is not None:
            cluster.devices.unreserve(pod)


# -- explanations -----------------------------------------------------------------------------------

def _request_line(request: ExactRequest, claim: ResourceClaim, devices: DeviceState, i: int,
                  allocator: Allocator) -> str:
    """How many devices of node i match the request's class and selectors, how many are free, and
    which claims hold the others."""
    held = devices.allocated()
    matching, free, drivers, holders = 0, 0, [], []
    for pool in devices.pools(i):
        for slc in pool.slices:
            for device in slc.devices:
                if allocator._selectable_device(request, claim, pool.driver, device) is not True:
                    continue
                matching += 1
                drivers.append(pool.driver)
                device_id = (pool.driver, pool.name, device.name)
                if device_id in held:
                    holders += [c.name for c in devices.holders(device_id)]
                else:
                    free += 1
    want = "all" if request.mode == "All" else str(request.count)
    head = f"claim {claim.name}, request {request.name} ({want} of class {request.device_class})"
    if not matching:
        return f"{head}: no device here matches the class and selectors"
    kinds = " or ".join(dict.fromkeys(drivers))
    held_by = f" (held by claims {', '.join(dict.fromkeys(holders))})" if holders else ""
    return f"{head}: {free} of {matching} {kinds} devices free{held_by}"


def explain_node(data: CycleData, pod: Pod, cluster: ClusterState, i: int) -> list[str]:
    """What node i's verdict rests on, claim by claim and request by request."""
    devices = cluster.devices
    lines = []
    for k, claim in enumerate(data.claims):
        if claim.allocation is not None:
            mask = data.available_on[k]
            where = ("any node" if mask is None else "this node" if mask[i]
                     else "other nodes only (its allocation's node selector excludes this one)")
            lines.append(f"claim {claim.name} is allocated already ({len(claim.allocation.results)} device(s)), "
                         f"usable on {where}")
            continue
        for request in claim.spec.requests:
            for choice in ((request.exactly,) if request.exactly is not None else request.first_available):
                lines.append(_request_line(choice, claim, devices, i, data.allocator))
    return lines
