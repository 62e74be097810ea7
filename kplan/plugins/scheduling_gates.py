"""SchedulingGates: holds pods carrying spec.schedulingGates out of the scheduling queue."""
from __future__ import annotations

from typing import Mapping

from kplan.api.objects import Pod
from kplan.framework.interfaces import Handle, plugin_args
from kplan.framework.status import Code, Status

NAME = "SchedulingGates"


class SchedulingGates:
    """Keeps a pod from being scheduled while any scheduling gate remains on it."""

    name = NAME

    def __init__(self, args: Mapping | None = None, handle: Handle | None = None):
        plugin_args(args, {}, NAME)
        self.handle = handle

    def pre_enqueue(self, pod: Pod, cluster=None) -> Status | None:
        gates = pod.scheduling_gates
        if not gates:
            return None
        # Go prints the []string of gate names with %v: "[a b]".
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                      (f"waiting for scheduling gates: [{' '.join(gates)}]",), NAME)
