"""VolumeZone: the zone and region labels of a pod's bound volumes must match the node's.

Follows pkg/scheduler/framework/plugins/volumezone:
- PreFilter looks at the pod's persistentVolumeClaim volumes (not ephemeral ones): a missing
  claim or volume rejects the pod (UnschedulableAndUnresolvable, the lister's NotFound text, e.g.
  `persistentvolume "pv-1" not found`); a claim without a volume is skipped when its class binds
  WaitForFirstConsumer and rejects the pod otherwise ("PersistentVolumeClaim had no pv name and
  storageClass name", a missing class's NotFound text, "PersistentVolume had no name"). It keeps
  each bound volume's topology labels (failure-domain.beta zone and region, topology.kubernetes.io
  zone and region; a value may list zones joined by "__"), and skips the pod when there are none.
- Filter: a node with none of those labels fits (a single-zone cluster). Otherwise, for every
  volume label, the node's value of that key (or of its GA key, for a beta one) must be among the
  volume's; else "node(s) had no available volume zone" (UnschedulableAndUnresolvable).

It reads the cluster's objects, not the binder's assumptions: a claim bound during the run keeps
no volume name here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from kplan.api.objects import Pod
from kplan.api.storage import WAIT_FOR_FIRST_CONSUMER
from kplan.cluster.state import ClusterState
from kplan.cluster.volumes import claim_volume_names
from kplan.framework.interfaces import CycleState, Handle, plugin_args
from kplan.framework.status import Code, NodeStatus, Status
from kplan.plugins.volume_binding import not_found

NAME = "VolumeZone"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) had no available volume zone"
BETA_ZONE, BETA_REGION = "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region"
GA_ZONE, GA_REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, GA_ZONE, GA_REGION)
GA_OF = {BETA_ZONE: GA_ZONE, BETA_REGION: GA_REGION}


@dataclass(frozen=True)
class PVTopology:
    """One topology label of a bound volume: the volume, the label key and the values it admits."""

    pv: str
    key: str
    values: frozenset[str]


def zones_of(value: str) -> frozenset[str] | None:
    """LabelZonesToSet: zones joined by "__"; an empty zone makes the label unusable (None)."""
    zones = value.split("__")
    return None if any(not z for z in zones) else frozenset(zones)


class VolumeZone:
    """Rejects nodes outside the zones (and regions) of the pod's bound volumes."""

    name = NAME

    def __init__(self, args: Mapping | None = None, handle: Handle | None = None):
        plugin_args(args, {}, NAME)

    def pre_filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> Status | None:
        if not pod.spec.get("volumes"):
            return Status.skip()
        topologies, problem = self.pv_topologies(pod, cluster)
        if problem:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (problem,))
        if not topologies:
            return Status.skip()
        state.write(PRE_FILTER_STATE_KEY, topologies)
        return None

    @staticmethod
    def pv_topologies(pod: Pod, cluster: ClusterState) -> tuple[list[PVTopology], str]:
        """getPVbyPod: the bound volumes' topology labels, or the problem that rejects the pod."""
        volumes = cluster.volumes
        out: list[PVTopology] = []
        for name in claim_volume_names(pod):
            if not name:
                return [], "PersistentVolumeClaim had no name"
            claim = volumes.claim(pod.namespace, name) if volumes is not None else None
            if claim is None:
                return [], not_found("persistentvolumeclaim", name)
            if not claim.volume_name:
                if not claim.storage_class:
                    return [], "PersistentVolumeClaim had no pv name and storageClass name"
                cls = volumes.storage_class(claim.storage_class)
                if cls is None:
                    return [], not_found("storageclass.storage.k8s.io", claim.storage_class)
                if cls.binding_mode == WAIT_FOR_FIRST_CONSUMER:
                    continue
                return [], "PersistentVolume had no name"
            pv = volumes.volumes.get(claim.volume_name)
            if pv is None:
                return [], not_found("persistentvolume", claim.volume_name)
            for key in TOPOLOGY_LABELS:
                zones = zones_of(pv.labels[key]) if key in pv.labels else None
                if zones is not None:
                    out.append(PVTopology(pv.name, key, zones))
        return out, ""

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> NodeStatus:
        topologies: list[PVTopology] = state.read(PRE_FILTER_STATE_KEY)
        labelled = np.zeros(cluster.n, dtype=bool)
        for key in TOPOLOGY_LABELS:
            labelled |= cluster.label_column(key).present
        rejected = np.zeros(cluster.n, dtype=bool)
        for t in topologies:
            col = cluster.label_column(t.key)
            fits = col.isin(t.values)
            if t.key in GA_OF:  # a node without the beta label is read by the GA one
                ga = cluster.label_column(GA_OF[t.key])
                fits = np.where(col.present, fits, ga.isin(t.values))
            rejected |= labelled & ~fits

        def explain(i: int) -> list[str]:
            labels = cluster.nodes[i].labels
            lines = []
            for t in topologies:
                have = labels.get(t.key, labels.get(GA_OF.get(t.key, t.key)))
                if have not in t.values:
                    lines.append(f"volume {t.pv} is in {t.key} {', '.join(sorted(t.values))}; the node is in "
                                 + (have if have is not None else f"no {t.key}"))
            return lines

        return NodeStatus.reject_where(rejected, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON, explain)
