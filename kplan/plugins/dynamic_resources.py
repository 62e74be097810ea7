"""DynamicResources: allocates a pod's ResourceClaims (DRA). kplan loads no ResourceClaims,
ResourceSlices or DeviceClasses, so it does not simulate allocation; what it does reproduce is
the part every pod meets, because it shapes every FailedScheduling message from v1.34 on.

Its gate (DynamicResourceAllocation) is GA and on by default from v1.34, beta and off in v1.33;
upstream's applyFeatureGates adds the plugin to the default profile, just before DefaultPreemption,
only while the gate is on. Built for an older release it joins no extension point.

- PreFilter first writes an empty cycle state, then skips a pod that references no claim.
- PostFilter runs first among the PostFilter plugins: without its cycle state (an earlier
  PreFilter plugin ended the PreFilter loop with UnschedulableAndUnresolvable, so it never ran)
  it fails with an Error, "not found", and preemption never runs; with no claims it answers
  Unschedulable "no new claims to deallocate", which the framework joins before the reasons of
  DefaultPreemption.
"""
from __future__ import annotations

from typing import Mapping

from kplan.api.objects import Pod
from kplan.cluster.state import ClusterState
from kplan.framework import versions
from kplan.framework.interfaces import CycleState, Handle, plugin_args
from kplan.framework.preemption import Diagnosis, PostFilterResult
from kplan.framework.status import Code, Status

NAME = "DynamicResources"
STATE_KEY = NAME
# What fwk.CycleState.Read answers for a key never written (fwk.ErrNotFound).
ERR_STATE_NOT_FOUND = "not found"
NO_CLAIMS = "no new claims to deallocate"
# Claims exist but none can be deallocated: what PostFilter says when no claim was allocated
# elsewhere (kplan cannot see claims' allocations, so this is the answer it gives for them).
STILL_NOT_SCHEDULABLE = "still not schedulable"


def new(args: Mapping | None = None, handle: Handle | None = None):
    """Builds the plugin as the release would: before v1.34 (gate off) it takes part in nothing."""
    plugin_args(args, {}, NAME)
    if versions.has(handle.kube_version if handle else None, versions.DYNAMIC_RESOURCES_DEFAULT):
        return DynamicResources()
    return NotInRelease()


class NotInRelease:
    """DynamicResources in a release whose feature gate is off by default: it takes part in nothing."""

    name = NAME


class DynamicResources:
    """The cycle state and PostFilter answers of DynamicResources for pods kplan can judge."""

    name = NAME

    @staticmethod
    def simulates(pod: Pod) -> bool:
        """ResourceClaims are not loaded: for a pod with claims the plugin is not simulated."""
        return not pod.spec.get("resourceClaims")

    def pre_filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> Status:
        claims = tuple(pod.spec.get("resourceClaims") or ())
        state.write(STATE_KEY, claims)
        return Status.skip()

    def post_filter(self, state: CycleState, pod: Pod, cluster: ClusterState,
                    diagnosis: Diagnosis) -> PostFilterResult:
        if STATE_KEY not in state:
            return PostFilterResult(Status(Code.ERROR, (ERR_STATE_NOT_FOUND,)), plugin=NAME)
        reason = STILL_NOT_SCHEDULABLE if state[STATE_KEY] else NO_CLAIMS
        return PostFilterResult(Status(Code.UNSCHEDULABLE, (reason,)), plugin=NAME)
