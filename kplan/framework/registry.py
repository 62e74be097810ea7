"""The plugin registry: every plugin name kplan accepts, mapped to its factory."""
from __future__ import annotations

from functools import partial
from typing import Any, Callable, Mapping

from kplan.plugins import (
    image_locality, node_affinity, node_name, node_ports, node_resources_balanced_allocation,
    node_resources_fit, node_unschedulable, scheduling_gates, taint_toleration,
)
from kplan.plugins.not_simulated import NOT_SIMULATED, NOTHING_TO_SIMULATE, NotSimulated

Factory = Callable[[Mapping | None, Any], Any]

# In-tree plugins kplan simulates (NewInTreeRegistry, for the parts scheduling decides).
IN_TREE: dict[str, Factory] = {
    scheduling_gates.NAME: scheduling_gates.SchedulingGates,
    node_unschedulable.NAME: node_unschedulable.NodeUnschedulable,
    node_name.NAME: node_name.NodeName,
    taint_toleration.NAME: taint_toleration.TaintToleration,
    node_affinity.NAME: node_affinity.NodeAffinity,
    node_ports.NAME: node_ports.NodePorts,
    node_resources_fit.NAME: node_resources_fit.NodeResourcesFit,
    node_resources_balanced_allocation.NAME: node_resources_balanced_allocation.NodeResourcesBalancedAllocation,
    image_locality.NAME: image_locality.ImageLocality,
}

# Accepted but not simulated yet: PodTopologySpread, InterPodAffinity and DefaultPreemption
# have their own work; the rest need objects kplan does not load.
PENDING = ("PodTopologySpread", "InterPodAffinity", "DefaultPreemption")

REGISTRY: dict[str, Factory] = {
    **IN_TREE,
    **{name: partial(NotSimulated, name) for name in (*NOTHING_TO_SIMULATE, *NOT_SIMULATED, *PENDING)},
}
