"""Volumes next to the node table: the storage objects indexed, the run's binding decisions, and
per-node counts the volume plugins read on every cycle.

kube-scheduler reads storage through two views, and so does kplan:
- the informer view (listers): the objects as the cluster holds them, plus the claims the run's
  workloads create (a StatefulSet's claims, an ephemeral volume's claim exist before their pod is
  scheduled). VolumeZone, VolumeRestrictions and NodeVolumeLimits read this view.
- the binder's view (VolumeBinding's assume caches): the same objects with the bindings Reserve
  assumed for placed pods: a volume pre-bound to the claim it was chosen for, a claim to provision
  annotated with the node chosen. Nothing provisions or completes a binding during a run.

Placing a pod updates, through ClusterState.assume/forget, the claims bound pods use (for
ReadWriteOncePod) and the CSI volumes attached to each node per driver (for the attach limits),
so preemption's dry runs and later pods see them. Nothing here mutates the loaded objects.
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

import numpy as np

from kplan.api.objects import Pod
from kplan.api.storage import (
    ClaimRef, CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass, StorageObjects, admitted,
    inline_source, persistent_volume_claim,
)
from kplan.api import csi_translation
from kplan.api.pv_matching import node_affinity_mask

if TYPE_CHECKING:
    from kplan.cluster.state import ClusterState

# Inline volume types VolumeRestrictions checks for disk conflicts.
DISK_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


def claim_volume_names(pod: Pod) -> list[str]:
    """The claims of a pod's persistentVolumeClaim volumes (what the scheduler cache counts per PVC)."""
    return [str(v["persistentVolumeClaim"].get("claimName") or "") for v in pod.spec.get("volumes") or ()
            if isinstance(v, Mapping) and isinstance(v.get("persistentVolumeClaim"), Mapping)]


def _has_disks(pod: Pod) -> bool:
    return any(isinstance(v, Mapping) and any(v.get(k) for k in DISK_SOURCES) for v in pod.spec.get("volumes") or ())


class VolumeState:
    """The storage objects of a run, the binder's assumed bindings, and per-node volume counts."""

    def __init__(self, objects: StorageObjects, cluster: "ClusterState"):
        self.cluster = cluster
        self.claims = dict(objects.claims)
        self.volumes = objects.volumes
        self.classes = objects.classes
        self.csi_nodes = objects.csi_nodes
        self.csi_drivers = objects.csi_drivers
        self.capacities = objects.capacities
        self.attachments = objects.attachments
        self.default_class = objects.default_class()
        # The binder's assumptions: volume -> the claim it is pre-bound to; claim -> its selected node.
        self.assumed_claim_refs: dict[str, ClaimRef] = {}
        self.assumed_selected: dict[tuple[str, str], str] = {}
        self._binder_volumes: dict[str, PersistentVolume] = {}
        self._by_class: dict[str, list[PersistentVolume]] | None = None
        self._affinity: dict[tuple[str, bool], np.ndarray] = {}
        self._migrated: dict[str, np.ndarray] = {}
        self._limits: dict[str, np.ndarray] = {}
        # Built on first use, then kept up to date as pods come and go.
        self._claim_users: Counter | None = None
        self._attached: "AttachedVolumes | None" = None
        self._disks: dict[int, list[tuple[Pod, Mapping]]] | None = None

    def clone(self, cluster: "ClusterState") -> "VolumeState":
        """A copy for another run over a copy of the node table (kplan compare)."""
        new = object.__new__(VolumeState)
        new.__dict__.update(self.__dict__)
        new.cluster = cluster
        new.claims = dict(self.claims)
        new.assumed_claim_refs = dict(self.assumed_claim_refs)
        new.assumed_selected = dict(self.assumed_selected)
        new._binder_volumes = dict(self._binder_volumes)
        new._claim_users = Counter(self._claim_users) if self._claim_users is not None else None
        new._attached = self._attached.clone() if self._attached is not None else None
        new._disks = {i: list(v) for i, v in self._disks.items()} if self._disks is not None else None
        return new

    def over(self, cluster: "ClusterState") -> "VolumeState":
        """This run's volumes over another table of the run, whose rows changed (nodes taken out with
        their pods): the claims and the binder's assumptions carry over; what is kept per node
        position, and the claims' users, are counted again on use over the new table."""
        new = self.clone(cluster)
        new._affinity, new._migrated, new._limits = {}, {}, {}
        new._claim_users = new._attached = new._disks = None
        return new

    # -- the informer view ------------------------------------------------------------------------

    def claim(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        return self.claims.get((namespace, name))

    def csi_node(self, i: int) -> CSINode | None:
        return self.csi_nodes.get(self.cluster.names[i])

    def storage_class(self, name: str) -> StorageClass | None:
        return self.classes.get(name)

    def create_claim(self, raw: Mapping, source: str = "") -> PersistentVolumeClaim:
        """Adds a claim the run creates (a workload's controller, applied manifests), unless the
        cluster already holds one of that name: the existing claim (and its volume) is used then.
        Without a class of its own it gets the default class (DefaultStorageClass admission)."""
        meta = raw.get("metadata") or {}
        key = (meta.get("namespace") or "default", meta.get("name") or "")
        existing = self.claims.get(key)
        if existing is not None:
            return existing
        claim = self.claims[key] = admitted(persistent_volume_claim(raw, source), self.default_class)
        self.cluster.generation += 1
        return claim

    # -- the binder's view ------------------------------------------------------------------------

    def binder_claim(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        """The claim as the binder's cache holds it: with the node chosen for it when it was assumed
        for provisioning."""
        claim = self.claims.get((namespace, name))
        node = self.assumed_selected.get((namespace, name))
        if claim is None or node is None:
            return claim
        return dataclasses.replace(claim, selected_node=node)

    def binder_volume(self, name: str) -> PersistentVolume | None:
        """The volume as the binder's cache holds it: pre-bound to the claim it was chosen for."""
        if name in self._binder_volumes:
            return self._binder_volumes[name]
        return self.volumes.get(name)

    def binder_volumes_of_class(self, storage_class: str) -> list[PersistentVolume]:
        """pvCache.ListPVs: the volumes of a class, in name order (upstream lists them in no fixed order)."""
        if self._by_class is None:
            by_class: dict[str, list[PersistentVolume]] = {}
            for name in sorted(self.volumes):
                pv = self.volumes[name]
                by_class.setdefault(pv.storage_class, []).append(pv)
            self._by_class = by_class
        return [self._binder_volumes.get(pv.name, pv) for pv in self._by_class.get(storage_class, ())]

    def assume_binding(self, pv: PersistentVolume, claim: PersistentVolumeClaim) -> None:
        """AssumePodVolumes for a static binding: the volume is pre-bound to the claim (GetBindVolumeToClaim)."""
        ref = ClaimRef(claim.namespace, claim.name, claim.uid)
        if pv.claim_ref == ref:
            return
        self.cluster.generation += 1
        self.assumed_claim_refs[pv.name] = ref
        self._binder_volumes[pv.name] = dataclasses.replace(self.volumes[pv.name], claim_ref=ref)

    def assume_provisioning(self, claim: PersistentVolumeClaim, node: str) -> None:
        """AssumePodVolumes for a dynamic provision: the claim is annotated with the chosen node."""
        self.cluster.generation += 1
        self.assumed_selected[claim.key] = node

    def revert_binding(self, pv_name: str) -> None:
        """pvCache.Restore: the volume as the cluster holds it again."""
        self.cluster.generation += 1
        self.assumed_claim_refs.pop(pv_name, None)
        self._binder_volumes.pop(pv_name, None)

    def revert_provisioning(self, key: tuple[str, str]) -> None:
        """pvcCache.Restore: the claim as the cluster holds it again."""
        self.cluster.generation += 1
        self.assumed_selected.pop(key, None)

    # -- node masks -------------------------------------------------------------------------------

    def affinity_mask(self, pv: PersistentVolume) -> np.ndarray:
        """CheckNodeAffinity of a volume over all nodes, as VolumeBinding checks it: an in-tree volume
        with the node affinity of its CSI driver on the nodes where its plugin is migrated."""
        plugin = pv.source.in_tree
        mask = self._mask(pv, translated=False)
        if plugin in csi_translation.ZONE_KEYS or plugin == csi_translation.PORTWORX:
            migrated = self.migrated_mask(plugin)
            if migrated.any():
                mask = np.where(migrated, self._mask(pv, translated=True), mask)
        return mask

    def _mask(self, pv: PersistentVolume, translated: bool) -> np.ndarray:
        key = (pv.name, translated)
        mask = self._affinity.get(key)
        if mask is None:
            terms = csi_translation.translated_affinity(pv) if translated else pv.node_affinity
            mask = self._affinity[key] = node_affinity_mask(terms, self.cluster)
        return mask

    def migrated_mask(self, plugin: str) -> np.ndarray:
        """The nodes whose CSINode lists an in-tree plugin as migrated to CSI."""
        mask = self._migrated.get(plugin)
        if mask is None:
            mask = self._migrated[plugin] = np.array(
                [csi_translation.migrated_on(plugin, self.csi_nodes.get(name)) for name in self.cluster.names],
                dtype=bool)
        return mask

    def limits(self, driver: str) -> np.ndarray:
        """Each node's attach limit for a CSI driver (its CSINode's allocatable.count), -1 where none."""
        limits = self._limits.get(driver)
        if limits is None:
            counts = [(self.csi_nodes[name].limits.get(driver) if name in self.csi_nodes else None)
                      for name in self.cluster.names]
            limits = self._limits[driver] = np.array([-1 if c is None else c for c in counts], dtype=np.int64)
        return limits

    # -- pods on nodes ----------------------------------------------------------------------------

    def claim_users(self) -> Counter:
        """How many bound pods use each claim (namespace, name) through a persistentVolumeClaim volume
        (the scheduler cache's PVC reference counts)."""
        if self._claim_users is None:
            users: Counter = Counter()
            for pod, _ in _with_volumes(self.cluster):
                for name in claim_volume_names(pod):
                    users[(pod.namespace, name)] += 1
            self._claim_users = users
        return self._claim_users

    def csi_volumes(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per CSI driver that a node publishes or has volumes of: (attached per node, limit per
        node, -1 where none), as NodeVolumeLimits counts them."""
        attached = self.attached()
        drivers = sorted({d for node in self.csi_nodes.values() for d in node.limits} | set(attached.counts))
        return {d: (attached.count(d), self.limits(d)) for d in drivers}

    def claim_user(self, namespace: str, name: str) -> tuple[Pod, str] | None:
        """A bound pod using the claim, and its node (for explanations: a scan of the pods)."""
        for i, pods in enumerate(self.cluster.pods_by_node):
            for pod in pods:
                if pod.namespace == namespace and name in claim_volume_names(pod):
                    return pod, self.cluster.names[i]
        return None

    def attached(self) -> "AttachedVolumes":
        if self._attached is None:
            self._attached = AttachedVolumes(self)
        return self._attached

    def disks(self) -> dict[int, list[tuple[Pod, Mapping]]]:
        """Per node, the inline disks (GCE PD, AWS EBS, RBD, iSCSI) of its pods."""
        if self._disks is None:
            disks: dict[int, list[tuple[Pod, Mapping]]] = {}
            for pod, i in _with_volumes(self.cluster):  # a node's pods stay in snapshot order either way
                self._add_disks(disks, pod, i)
            self._disks = disks
        return self._disks

    @staticmethod
    def _add_disks(disks: dict, pod: Pod, i: int) -> None:
        if _has_disks(pod):
            disks.setdefault(i, []).extend((pod, v) for v in pod.spec.get("volumes") or ()
                                           if isinstance(v, Mapping) and any(v.get(k) for k in DISK_SOURCES))

    def pod_added(self, pod: Pod, i: int) -> None:
        if not pod.spec.get("volumes"):
            return
        if self._claim_users is not None:
            for name in claim_volume_names(pod):
                self._claim_users[(pod.namespace, name)] += 1
        if self._attached is not None:
            self._attached.add(pod, i)
        if self._disks is not None:
            self._add_disks(self._disks, pod, i)

    def pod_removed(self, pod: Pod, i: int) -> None:
        if not pod.spec.get("volumes"):
            return
        if self._claim_users is not None:
            for name in claim_volume_names(pod):
                self._claim_users[(pod.namespace, name)] -= 1
                if self._claim_users[(pod.namespace, name)] <= 0:
                    del self._claim_users[(pod.namespace, name)]
        if self._attached is not None:
            self._attached.remove(pod, i)
        if self._disks is not None and i in self._disks:
            kept = [(p, v) for p, v in self._disks[i] if p is not pod]
            if kept:
                self._disks[i] = kept
            else:
                del self._disks[i]


@dataclass
class ClaimFacts:
    """What a pod's claim is, as the scheduler sees it now: its class and binding mode, the volume it
    is bound to (or was chosen for it during the run) and where that volume can be used."""

    claim: str
    status: str  # Bound, Pending (unbound), Missing
    storage_class: str = ""
    binding_mode: str = ""
    volume: str = ""
    zone: str = ""
    node_affinity: list[Mapping] | None = None
    selected_node: str = ""  # a claim to provision for this node (WaitForFirstConsumer)


def claim_facts(pod: Pod, volumes: VolumeState) -> list[ClaimFacts]:
    """Each claim of the pod's volumes, in volume order, from the binder's view of the run."""
    from kplan.api.storage import claim_names
    out = []
    for name, _ in claim_names(pod.spec, pod.name):
        claim = volumes.binder_claim(pod.namespace, name)
        if claim is None:
            out.append(ClaimFacts(name, "Missing"))
            continue
        cls = volumes.storage_class(claim.storage_class) if claim.storage_class else None
        volume_name = claim.volume_name or next(
            (pv for pv, ref in volumes.assumed_claim_refs.items() if (ref.namespace, ref.name) == claim.key), "")
        pv = volumes.binder_volume(volume_name) if volume_name else None
        out.append(ClaimFacts(name, "Bound" if claim.fully_bound else "Pending", claim.storage_class,
                              cls.binding_mode if cls is not None else "", volume_name,
                              pv.zone_summary() if pv is not None else "",
                              pv.node_affinity if pv is not None else None, claim.selected_node or ""))
    return out


class AttachedVolumes:
    """The CSI volumes attached to each node, per driver, as NodeVolumeLimits counts them: the unique
    volumes (driver/handle) of the node's pods, and the VolumeAttachments to it of other volumes.

    `count(driver)` is a (N,) array of distinct volumes; `holders(unique)` the nodes whose pods use a
    volume (a new pod's volume already there is not counted twice)."""

    def __init__(self, volumes: VolumeState):
        self.volumes = volumes
        self.n = volumes.cluster.n
        self.refs: dict[tuple[int, str], int] = {}  # (node, unique volume) -> pods using it
        self.drivers_of: dict[str, str] = {}  # unique volume -> driver
        self.by_attachment: set[tuple[int, str]] = set()  # (node, unique volume) of VolumeAttachments
        self.counts: dict[str, np.ndarray] = {}
        self._holders: dict[str, set[int]] | None = None  # unique volume -> nodes, built on first use
        self._attachments()
        refs, drivers_of = self.refs, self.drivers_of
        for pod, i in _with_volumes(volumes.cluster):
            for unique, driver in unique_volumes(volumes, pod, i, new=False).items():
                key = (i, unique)
                refs[key] = refs.get(key, 0) + 1
                drivers_of[unique] = driver
        by_driver: dict[str, list[int]] = {}
        for i, unique in refs:
            if (i, unique) not in self.by_attachment:
                by_driver.setdefault(drivers_of[unique], []).append(i)
        for driver, rows in by_driver.items():
            np.add.at(self._count(driver), np.array(rows, dtype=np.intp), 1)

    def clone(self) -> "AttachedVolumes":
        new = object.__new__(AttachedVolumes)
        new.__dict__.update(self.__dict__)
        new.refs = dict(self.refs)
        new.drivers_of = dict(self.drivers_of)
        new.counts = {d: c.copy() for d, c in self.counts.items()}
        new._holders = {u: set(s) for u, s in self._holders.items()} if self._holders is not None else None
        return new

    def _attachments(self) -> None:
        """getNodeVolumeAttachmentInfo: attachments with an attacher, of a CSI PersistentVolume."""
        index = self.volumes.cluster.index
        for att in self.volumes.attachments:
            i = index.get(att.node)
            pv = self.volumes.volumes.get(att.volume) if att.volume else None
            if i is None or not att.attacher or pv is None or not pv.source.csi_driver:
                continue
            key = (i, f"{att.attacher}/{pv.source.handle}")
            if key not in self.by_attachment:
                self.by_attachment.add(key)
                self._count(att.attacher)[i] += 1

    def _count(self, driver: str) -> np.ndarray:
        counts = self.counts.get(driver)
        if counts is None:
            counts = self.counts[driver] = np.zeros(self.n, dtype=np.int64)
        return counts

    def count(self, driver: str) -> np.ndarray:
        return self.counts.get(driver, np.zeros(self.n, dtype=np.int64))

    def holders(self, unique: str) -> set[int]:
        """The nodes whose pods use a volume (asked for a new pod's few volumes: built on first use)."""
        if self._holders is None:
            holders: dict[str, set[int]] = {}
            for i, held in self.refs:
                holders.setdefault(held, set()).add(i)
            self._holders = holders
        return self._holders.get(unique, set())

    def add(self, pod: Pod, i: int) -> None:
        for unique, driver in unique_volumes(self.volumes, pod, i, new=False).items():
            held = self.refs[(i, unique)] = self.refs.get((i, unique), 0) + 1
            if held == 1:
                self.drivers_of[unique] = driver
                if self._holders is not None:
                    self._holders.setdefault(unique, set()).add(i)
                if (i, unique) not in self.by_attachment:
                    self._count(driver)[i] += 1

    def remove(self, pod: Pod, i: int) -> None:
        for unique in unique_volumes(self.volumes, pod, i, new=False):
            key = (i, unique)
            if not self.refs.get(key):
                continue
            self.refs[key] -= 1
            if self.refs[key] == 0:
                del self.refs[key]
                if self._holders is not None:
                    self._holders[unique].discard(i)
                if key not in self.by_attachment:
                    self._count(self.drivers_of[unique])[i] -= 1


def _with_volumes(cluster: "ClusterState") -> list[tuple[Pod, int]]:
    """(pod, node row) of the table's pods that have volumes, in the order ClusterState.bound_pods
    gives them: the passes over the table's volumes read nothing else, and most pods have none."""
    pods, rows = cluster.bound_pods()
    at = [k for k, pod in enumerate(pods) if pod.has_volumes]
    return [(pods[k], i) for k, i in zip(at, rows[at].tolist())]


class ClaimLookupError(LookupError):
    """A new pod's claim is missing (or its ephemeral claim is not the pod's)."""


def unique_volumes(volumes: VolumeState, pod: Pod, i: int | None, new: bool) -> dict[str, str]:
    """filterAttachableVolumes: the pod's attachable volumes as unique name (driver/handle) -> driver,
    on node i (its CSINode decides whether in-tree volumes count; None: as on a node with a CSINode).

    A claim that is missing raises ClaimLookupError for a new pod and is left out for a pod already
    on a node; an unbound claim counts as a volume of its class's provisioner."""
    out: dict[str, str] = {}
    for v in pod.spec.get("volumes") or ():
        if v.__class__ is not dict:
            continue
        if v.get("persistentVolumeClaim").__class__ is dict:
            name, ephemeral = str(v["persistentVolumeClaim"].get("claimName") or ""), False
        elif v.get("ephemeral").__class__ is dict:
            name, ephemeral = f"{pod.name}-{v.get('name') or ''}", True
        else:
            source = inline_source(v)
            if source.in_tree and csi_translation.counts_on(source.in_tree, _csi_node_at(volumes, i)):
                driver, handle = csi_translation.csi_handle(source)
                if driver and handle:
                    out[f"{driver}/{handle}"] = driver
            continue
        if not name:
            if new:
                raise ClaimLookupError("PersistentVolumeClaim had no name")
            continue
        claim = volumes.claim(pod.namespace, name)
        if claim is None:
            if new:
                raise ClaimLookupError(f'looking up PVC {pod.namespace}/{name}: persistentvolumeclaim "{name}" not found')
            continue
        if ephemeral and claim.controller_uid != pod.uid:
            if new:
                raise ClaimLookupError(ephemeral_not_for_pod(claim, pod))
            continue
        driver, handle = _claim_driver(volumes, claim, i)
        if driver and handle:
            out[f"{driver}/{handle}"] = driver
    return out


def _csi_node_at(volumes: VolumeState, i: int | None) -> CSINode | None:
    """Node i's CSINode; for a node not chosen yet (None), as on a node with a CSINode."""
    return volumes.csi_node(i) if i is not None else CSINode("", {}, frozenset())


def ephemeral_not_for_pod(claim: PersistentVolumeClaim, pod: Pod) -> str:
    """ephemeral.VolumeIsForPod's error."""
    return f"PVC {claim.namespace}/{claim.name} was not created for pod {pod.namespace}/{pod.name} (pod is not owner)"


def _claim_driver(volumes: VolumeState, claim: PersistentVolumeClaim, i: int | None) -> tuple[str, str]:
    """getCSIDriverInfo: the bound volume's driver and handle (translated when in-tree, as node i's
    CSINode has it), else the class's provisioner with a handle of the claim's own (getCSIDriverInfoFromSC)."""
    pv = volumes.volumes.get(claim.volume_name) if claim.volume_name else None
    if pv is None:
        return _class_driver(volumes, claim, _csi_node_at(volumes, i))
    source = pv.source
    if source.csi_driver:
        return source.csi_driver, source.handle
    if not source.in_tree or not csi_translation.counts_on(source.in_tree, _csi_node_at(volumes, i)):
        return "", ""
    return csi_translation.csi_handle(source)


def _class_driver(volumes: VolumeState, claim: PersistentVolumeClaim, csi_node: CSINode | None) -> tuple[str, str]:
    cls = volumes.classes.get(claim.storage_class) if claim.storage_class else None
    if cls is None:
        return "", ""
    # Upstream prefixes a random string so that such handles never equal a real one.
    handle = f"claim:{claim.namespace}/{claim.name}"
    if cls.provisioner in csi_translation.CSI_DRIVERS:
        if not csi_translation.counts_on(cls.provisioner, csi_node):
            return "", ""
        return csi_translation.CSI_DRIVERS[cls.provisioner], handle
    return cls.provisioner, handle
