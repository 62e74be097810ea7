"""VolumeRestrictions: inline disks a node's pods mount already, and ReadWriteOncePod claims in use.

Follows pkg/scheduler/framework/plugins/volumerestrictions:
- PreFilter reads every claim of the pod's persistentVolumeClaim volumes: a missing one rejects
  the pod (UnschedulableAndUnresolvable, `persistentvolumeclaim "x" not found`). It counts the
  pod's ReadWriteOncePod claims that a bound pod uses already; the plugin is skipped when that
  count is 0 and the pod mounts no inline GCE PD, AWS EBS, RBD or iSCSI disk.
- Filter, per node: an inline disk a pod on the node mounts too ("node(s) had no available
  disk": same GCE PD unless both read-only, same EBS volume, same RBD image on a shared monitor
  unless both read-only, same iSCSI IQN unless both read-only), then, on every node, a
  ReadWriteOncePod claim in use ("node(s) unavailable due to PersistentVolumeClaim with
  ReadWriteOncePod access mode already in-use by another pod"). Both Unschedulable.
- AddPod/RemovePod (preemption's what-ifs) count the pod's volumes naming one of those claims, by
  claim name, as upstream does: evicting the pod holding the claim frees it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from kplan.api.objects import Pod
from kplan.api.storage import READ_WRITE_ONCE_POD
from kplan.cluster.state import ClusterState
from kplan.cluster.volumes import DISK_SOURCES, claim_volume_names
from kplan.framework.interfaces import CycleState, Handle, plugin_args
from kplan.framework.status import Code, NodeStatus, Status
from kplan.plugins.volume_binding import not_found

NAME = "VolumeRestrictions"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
DISK_CONFLICT = "node(s) had no available disk"
READ_WRITE_ONCE_POD_CONFLICT = ("node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access "
                                "mode already in-use by another pod")


@dataclass
class PreFilterState:
    """The pod's ReadWriteOncePod claims, and how many references bound pods hold to them."""

    claims: frozenset[str]
    conflicts: int

    def clone(self) -> "PreFilterState":
        return PreFilterState(self.claims, self.conflicts)

    def update(self, pod: Pod, sign: int) -> None:
        self.conflicts += sign * sum(1 for name in claim_volume_names(pod) if name in self.claims)


def volume_conflict(volume: Mapping, other: Mapping) -> bool:
    """isVolumeConflict for one pair of inline volumes."""
    gce, ogce = volume.get("gcePersistentDisk"), other.get("gcePersistentDisk")
    if gce and ogce and gce.get("pdName") == ogce.get("pdName") and not (gce.get("readOnly") and ogce.get("readOnly")):
        return True
    ebs, oebs = volume.get("awsElasticBlockStore"), other.get("awsElasticBlockStore")
    if ebs and oebs and ebs.get("volumeID") == oebs.get("volumeID"):
        return True
    iscsi, oiscsi = volume.get("iscsi"), other.get("iscsi")
    if iscsi and oiscsi and iscsi.get("iqn") == oiscsi.get("iqn") \
            and not (iscsi.get("readOnly") and oiscsi.get("readOnly")):
        return True
    rbd, orbd = volume.get("rbd"), other.get("rbd")
    if rbd and orbd and set(rbd.get("monitors") or ()) & set(orbd.get("monitors") or ()) \
            and (rbd.get("pool") or "rbd") == (orbd.get("pool") or "rbd") and rbd.get("image") == orbd.get("image") \
            and not (rbd.get("readOnly") and orbd.get("readOnly")):
        return True
    return False


def _disks(pod: Pod) -> list[Mapping]:
    return [v for v in pod.spec.get("volumes") or () if isinstance(v, Mapping) and any(v.get(k) for k in DISK_SOURCES)]


class VolumeRestrictions:
    """Rejects nodes where the pod's inline disk is mounted already, and every node while a
    ReadWriteOncePod claim of the pod is in use."""

    name = NAME

    def __init__(self, args: Mapping | None = None, handle: Handle | None = None):
        plugin_args(args, {}, NAME)

    def pre_filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> Status | None:
        if not pod.spec.get("volumes"):
            return Status.skip()
        volumes = cluster.volumes
        rwop = set()
        for name in claim_volume_names(pod):
            claim = volumes.claim(pod.namespace, name) if volumes is not None else None
            if claim is None:
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (not_found("persistentvolumeclaim", name),))
            if READ_WRITE_ONCE_POD in claim.access_modes:
                rwop.add(name)
        users = volumes.claim_users() if rwop else {}
        conflicts = sum(1 for name in rwop if users.get((pod.namespace, name), 0) > 0)
        if not _disks(pod) and not conflicts:
            return Status.skip()
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(frozenset(rwop), conflicts))
        return None

    def add_pod(self, state: CycleState, pod: Pod, other: Pod, cluster: ClusterState, i: int) -> Status | None:
        state.read(PRE_FILTER_STATE_KEY).update(other, +1)
        return None

    def remove_pod(self, state: CycleState, pod: Pod, other: Pod, cluster: ClusterState, i: int) -> Status | None:
        state.read(PRE_FILTER_STATE_KEY).update(other, -1)
        return None

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> NodeStatus:
        pre: PreFilterState = state.read(PRE_FILTER_STATE_KEY)
        n = cluster.n
        short = np.zeros((n, 2), dtype=bool)
        wanted = _disks(pod)
        clashes: dict[int, list[tuple[Mapping, Pod]]] = {}
        if wanted:
            for i, mounted in cluster.volumes.disks().items():
                found = [(v, other) for other, v in mounted for w in wanted if volume_conflict(w, v)]
                if found:
                    clashes[i] = found
                    short[i, 0] = True
        if pre.conflicts > 0:
            short[:, 1] = ~short[:, 0]

        def explain(i: int) -> list[str]:
            if short[i, 0]:
                return [f"volume {v.get('name')} is mounted by pod {other.key} already" for v, other in clashes[i]]
            lines = []
            for name in sorted(pre.claims):
                holder = cluster.volumes.claim_user(pod.namespace, name)
                if holder is not None:
                    other, node = holder
                    lines.append(f"claim {name} (ReadWriteOncePod) is in use by pod {other.key} on {node}")
            return lines

        return NodeStatus.from_reasons(short, [DISK_CONFLICT, READ_WRITE_ONCE_POD_CONFLICT], Code.UNSCHEDULABLE,
                                       explain)
