"""NodeVolumeLimits: the CSI volumes attached to a node must stay within each driver's limit.

Follows pkg/scheduler/framework/plugins/nodevolumelimits (csi.go, CSILimits):
- PreFilter skips a pod without a claim, an ephemeral volume or an inline in-tree volume a CSI
  driver took over.
- Filter, per node: the node's CSINode gives each driver's limit (drivers[].allocatable.count;
  none published: no limit, no CSINode: no limits at all). The pod's volumes count as unique
  volumes driver/handle: a bound claim's volume (an in-tree one as its CSI driver, where migrated),
  an unbound claim as a new volume of its class's provisioner, an inline in-tree volume as its
  CSI driver. Those the node's pods use already are not counted again. Attached are the unique
  volumes of the node's pods plus its VolumeAttachments of other volumes. A driver whose
  attached + new volumes exceed its limit rejects the node: "node(s) exceed max volume count"
  (Unschedulable: evicting pods frees their volumes).
- A new pod's missing claim (or an ephemeral claim that is not the pod's) rejects every node
  (UnschedulableAndUnresolvable); in the default profile VolumeRestrictions and VolumeBinding
  reject such a pod in PreFilter first.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from kplan.api.objects import Pod
from kplan.api.storage import inline_source
from kplan.cluster.state import ClusterState
from kplan.cluster.volumes import ClaimLookupError, unique_volumes
from kplan.framework.interfaces import CycleState, Handle, plugin_args
from kplan.framework.status import Code, NodeStatus, Status

NAME = "NodeVolumeLimits"
ERR_REASON = "node(s) exceed max volume count"


def attachable(volume: Mapping) -> bool:
    """A volume NodeVolumeLimits looks at: a claim, an ephemeral volume, or an in-tree volume a CSI
    driver can take over (IsInlineMigratable)."""
    return bool(volume.get("persistentVolumeClaim") or volume.get("ephemeral") or inline_source(volume).in_tree)


class NodeVolumeLimits:
    """Rejects nodes where the pod's new CSI volumes would exceed a driver's attach limit."""

    name = NAME

    def __init__(self, args: Mapping | None = None, handle: Handle | None = None):
        plugin_args(args, {}, NAME)

    def pre_filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> Status | None:
        if any(isinstance(v, Mapping) and attachable(v) for v in pod.spec.get("volumes") or ()):
            return None
        return Status.skip()

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> NodeStatus:
        n = cluster.n
        try:
            new = unique_volumes(cluster.volumes, pod, None, new=True)
        except ClaimLookupError as err:
            return NodeStatus.reject_where(np.ones(n, dtype=bool), Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(err))
        attached = cluster.volumes.attached()
        rejected = np.zeros(n, dtype=bool)
        by_driver: dict[str, list[str]] = {}
        for unique, driver in new.items():
            by_driver.setdefault(driver, []).append(unique)
        for driver, uniques in by_driver.items():
            limits = cluster.volumes.limits(driver)
            if not (limits >= 0).any():
                continue
            adding = np.full(n, len(uniques), dtype=np.int64)
            for unique in uniques:  # a volume the node's pods use already is not new there
                held = list(attached.holders(unique))
                if held:
                    adding[held] -= 1
            rejected |= (limits >= 0) & (adding > 0) & (attached.count(driver) + adding > limits)

        def explain(i: int) -> list[str]:
            lines = []
            for driver, uniques in sorted(by_driver.items()):
                limit = int(cluster.volumes.limits(driver)[i])
                if limit < 0:
                    continue
                adding = sum(1 for u in uniques if i not in attached.holders(u))
                have = int(attached.count(driver)[i])
                if adding and have + adding > limit:
                    lines.append(f"the node holds {have} of {limit} {driver} volumes; the pod adds {adding}")
            return lines

        return NodeStatus.reject_where(rejected, Code.UNSCHEDULABLE, ERR_REASON, explain)
