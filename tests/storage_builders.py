"""Builders of storage objects (claims, volumes, classes, CSI objects) for the volume plugin tests,
in the shape `kubectl get -o json` prints, and the wiring of a cluster's VolumeState."""
from __future__ import annotations

from typing import Any, Mapping

from kplan.api import storage
from kplan.cluster.state import ClusterState
from kplan.cluster.volumes import VolumeState
from kplan.framework.status import NodeStatus

RWO, RWX, ROX, RWOP = "ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany", "ReadWriteOncePod"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
WFFC, IMMEDIATE = "WaitForFirstConsumer", "Immediate"


def pvc(name: str, storage_class: str | None = None, *, namespace: str = "default", volume: str = "",
        request: str = "1Gi", modes=(RWO,), bind_completed: bool = False, selected_node: str | None = None,
        phase: str = "", uid: str = "", owner_uid: str = "", terminating: bool = False,
        volume_mode: str | None = None, selector: Mapping | None = None,
        attributes_class: str | None = None) -> dict[str, Any]:
    """A PersistentVolumeClaim; `storage_class` None leaves spec.storageClassName unset."""
    annotations = {}
    if bind_completed:
        annotations[storage.BIND_COMPLETED] = "yes"
    if selected_node is not None:
        annotations[storage.SELECTED_NODE] = selected_node
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid or f"uid-{namespace}-{name}",
                            "annotations": annotations}
    if owner_uid:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "owner", "uid": owner_uid,
                                    "controller": True}]
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: dict[str, Any] = {"accessModes": list(modes), "resources": {"requests": {"storage": request}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if volume:
        spec["volumeName"] = volume
    if volume_mode:
        spec["volumeMode"] = volume_mode
    if selector is not None:
        spec["selector"] = dict(selector)
    if attributes_class:
        spec["volumeAttributesClassName"] = attributes_class
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec,
            "status": {"phase": phase or ("Bound" if volume else "Pending")}}


def affinity_terms(*terms: Mapping[str, list[str]]) -> list[dict]:
    """Node selector terms, each from a {key: values} map of In requirements (keys in sorted order)."""
    return [{"matchExpressions": [{"key": k, "operator": "In", "values": list(term[k])} for k in sorted(term)]}
            for term in terms]


def pv(name: str, storage_class: str = "", *, capacity: str = "1Gi", modes=(RWO,), phase: str = "Available",
       labels: Mapping[str, str] | None = None, affinity: Mapping[str, list[str]] | None = None,
       claim: Mapping | None = None, source: Mapping | None = None, volume_mode: str | None = None,
       attributes_class: str | None = None, terminating: bool = False) -> dict[str, Any]:
    """A PersistentVolume; `affinity` is one required node selector term, `claim` a claim dict it is
    bound (or pre-bound) to through spec.claimRef, `source` the volume source (e.g. {"csi": {...}})."""
    meta: dict[str, Any] = {"name": name, "labels": dict(labels or {})}
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: dict[str, Any] = {"capacity": {"storage": capacity}, "accessModes": list(modes),
                            "storageClassName": storage_class, **(source or {})}
    if affinity is not None:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": affinity_terms(affinity)}}
    if claim is not None:
        claim_meta = claim["metadata"]
        spec["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": claim_meta["namespace"],
                            "name": claim_meta["name"], "uid": claim_meta.get("uid", "")}
    if volume_mode:
        spec["volumeMode"] = volume_mode
    if attributes_class:
        spec["volumeAttributesClassName"] = attributes_class
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec,
            "status": {"phase": phase} if phase else {}}


def storage_class(name: str, provisioner: str = NO_PROVISIONER, mode: str | None = None,
                  topologies: list[Mapping[str, list[str]]] | None = None) -> dict[str, Any]:
    """A StorageClass; `topologies` are allowedTopologies terms as {key: values} maps."""
    raw: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
                           "provisioner": provisioner}
    if mode:
        raw["volumeBindingMode"] = mode
    if topologies:
        raw["allowedTopologies"] = [{"matchLabelExpressions": [{"key": k, "values": list(t[k])} for k in sorted(t)]}
                                    for t in topologies]
    return raw


def csi_node(name: str, limits: Mapping[str, int | None] | None = None, migrated: str | None = None) -> dict:
    """A CSINode: each driver's allocatable.count (None: none published), and the migrated-plugins
    annotation when `migrated` is given."""
    drivers = [{"name": d, "nodeID": name, **({"allocatable": {"count": c}} if c is not None else {})}
               for d, c in (limits or {}).items()]
    meta: dict[str, Any] = {"name": name}
    if migrated is not None:
        meta["annotations"] = {storage.MIGRATED_PLUGINS: migrated}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": meta, "spec": {"drivers": drivers}}


def csi_driver(name: str, storage_capacity: bool | None = None, **spec: Any) -> dict[str, Any]:
    if storage_capacity is not None:
        spec["storageCapacity"] = storage_capacity
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name}, "spec": spec}


def capacity(name: str, storage_class_name: str, match_labels: Mapping[str, str] | None, size: str = "",
             maximum_volume_size: str = "") -> dict[str, Any]:
    """A CSIStorageCapacity whose nodeTopology selects `match_labels` ({}: every node)."""
    raw: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                           "metadata": {"name": name, "namespace": "kube-system"},
                           "storageClassName": storage_class_name,
                           "nodeTopology": {"matchLabels": dict(match_labels or {})}}
    if size:
        raw["capacity"] = size
    if maximum_volume_size:
        raw["maximumVolumeSize"] = maximum_volume_size
    return raw


def attachment(name: str, attacher: str, node_name: str, pv_name: str) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": name},
            "spec": {"attacher": attacher, "nodeName": node_name, "source": {"persistentVolumeName": pv_name}}}


def claim_volume(claim: str, name: str = "") -> dict[str, Any]:
    """A pod volume of a persistentVolumeClaim."""
    return {"name": name or f"vol-{claim}", "persistentVolumeClaim": {"claimName": claim}}


def ephemeral_volume(name: str) -> dict[str, Any]:
    """A generic ephemeral volume; its claim is <pod>-<name>."""
    return {"name": name, "ephemeral": {"volumeClaimTemplate": {"spec": {
        "accessModes": [RWO], "resources": {"requests": {"storage": "1Gi"}}}}}}


def with_volumes(pod: dict, *volumes: Mapping, uid: str = "") -> dict:
    """The pod dict with these volumes (and this uid, when given)."""
    pod["spec"]["volumes"] = [dict(v) for v in volumes]
    if uid:
        pod["metadata"]["uid"] = uid
    return pod


def with_storage(cluster: ClusterState, *objects: Mapping) -> ClusterState:
    """Parses the storage objects as a snapshot's and sets them beside the node table."""
    records = storage.StorageObjects()
    for raw in objects:
        records.add(storage.parse(raw["kind"], raw, "test"))
    cluster.volumes = VolumeState(records, cluster)
    return cluster


def results(status: NodeStatus) -> list[tuple[int, list[str]] | None]:
    """Per node: None where it fits, else (code, reasons)."""
    return [(int(code), status.reasons_of(i)) if code else None for i, code in enumerate(status.code)]
