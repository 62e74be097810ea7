"""The plugin registry: every plugin name kplan accepts, mapped to its factory.

It lives beside the plugins, as upstream's in-tree registry does (pkg/scheduler/framework/plugins/
registry.go): the framework knows plugins only through the registry it is given.
"""
from __future__ import annotations

from functools import partial
from typing import Any, Callable, Mapping

from kplan.plugins import (
    capacity_scheduling, default_preemption, dynamic_resources, image_locality, inter_pod_affinity, limit_aware,
    load_aware_scheduling, node_affinity, node_declared_features, node_name, node_ports,
    node_resources_balanced_allocation, node_resources_fit, node_resources_limit_aware, node_unschedulable,
    node_volume_limits, not_simulated, pod_topology_spread, scheduling_gates, taint_toleration, volume_binding,
    volume_restrictions, volume_zone,
)

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
    volume_restrictions.NAME: volume_restrictions.VolumeRestrictions,
    node_volume_limits.NAME: node_volume_limits.NodeVolumeLimits,
    volume_binding.NAME: volume_binding.VolumeBinding,
    volume_zone.NAME: volume_zone.VolumeZone,
    node_resources_balanced_allocation.NAME: node_resources_balanced_allocation.NodeResourcesBalancedAllocation,
    image_locality.NAME: image_locality.ImageLocality,
    pod_topology_spread.NAME: pod_topology_spread.PodTopologySpread,
    inter_pod_affinity.NAME: inter_pod_affinity.InterPodAffinity,
    default_preemption.NAME: default_preemption.DefaultPreemption,
    # Built per release: before v1.36 (gate off) the plugin joins no extension point.
    node_declared_features.NAME: node_declared_features.new,
    # Built per release: before v1.34 (gate off) the plugin joins no extension point.
    dynamic_resources.NAME: dynamic_resources.new,
}

REGISTRY: dict[str, Factory] = {
    **IN_TREE,
    # Limit awareness (off by default): koordinator LimitAware, scheduler-plugins KEP 217.
    limit_aware.NAME: limit_aware.LimitAware,
    node_resources_limit_aware.NAME: node_resources_limit_aware.NodeResourcesLimitAware,
    # Load awareness (off by default): koordinator LoadAwareScheduling, reading NodeMetrics.
    load_aware_scheduling.NAME: load_aware_scheduling.LoadAwareScheduling,
    # Elastic quotas (off by default): scheduler-plugins CapacityScheduling, reading ElasticQuotas.
    capacity_scheduling.NAME: capacity_scheduling.CapacityScheduling,
    **{name: partial(not_simulated.NotSimulated, name) for name in not_simulated.NOTHING_TO_SIMULATE},
}
