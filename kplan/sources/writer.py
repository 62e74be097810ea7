"""Writing snapshots that are safe to attach to a ticket: only what scheduling reads.

Every object is rebuilt from an allow-list of fields (never by deleting known-bad ones), so a
field the API adds later is left out by default. Dropped: env values, commands and args,
volumes other than claims, ephemeral claim templates, image volumes, in-tree disks' ids and local
storage (emptyDir, hostPath), managedFields, kubectl's last-applied-configuration, addresses and
node info but the kubelet's version, storage classes' parameters, CSI volume attributes and every
secret reference of a volume source. Services and the
controllers (ReplicaSets, StatefulSets, ReplicationControllers) keep their name, namespace, uid and
selector only; Deployments and DaemonSets theirs with their replicas and update strategy, and
HorizontalPodAutoscalers their target and bounds. DRA objects keep what allocation reads: device
classes their selectors, claims and their templates their requests and constraints (not the
drivers' opaque configuration), claims their allocation and reservations, slices their devices. The header (kind KplanSnapshot)
comes first; the loader reads it back (its kubeVersion becomes the default --kube-version, else
the newest kubelet's version).
"""
from __future__ import annotations

import gzip
import io
import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from kplan.errors import InputError

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
IDENTITY = ("name", "namespace", "uid")  # all the metadata kept of Services and controllers
METADATA = ("name", "namespace", "uid", "labels", "annotations", "ownerReferences", "creationTimestamp",
            "deletionTimestamp")
POD_SPEC = ("nodeName", "nodeSelector", "affinity", "tolerations", "topologySpreadConstraints", "priority",
            "priorityClassName", "preemptionPolicy", "schedulerName", "overhead", "resources",
            "schedulingGates", "runtimeClassName",
            "hostNetwork", "hostUsers",  # with restartPolicyRules: the node features a pod needs
            "terminationGracePeriodSeconds",  # when a deleted pod no longer holds its node (scale-down)
            "resourceClaims")
CONTAINER = ("name", "image", "resources", "ports", "restartPolicy", "restartPolicyRules")
POD_STATUS = ("phase", "conditions", "startTime", "nominatedNodeName", "qosClass", "resources",
              "allocatedResources",  # with the containers' status resources: in-place resize
              "resourceClaimStatuses")  # the claims made for the pod from templates
CONTAINER_STATUS = ("name", "resources", "allocatedResources")
IMAGE_VOLUME = ("reference", "pullPolicy")  # ImageLocality scores the image from 1.36 on
NODE_SPEC = ("taints", "unschedulable")
NODE_STATUS = ("allocatable", "capacity", "images", "declaredFeatures")
# What the structured allocator reads of a ResourceSlice (devices in full: attributes, capacities,
# taints and counters are what selectors and allocation decide on).
RESOURCE_SLICE_SPEC = ("driver", "pool", "nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection",
                       "sharedCounters", "devices")


def _pick(d: Any, keys: Iterable[str]) -> dict:
    if not isinstance(d, Mapping):
        return {}
    return {k: d[k] for k in keys if k in d and d[k] is not None}


def metadata(meta: Any) -> dict:
    """Keeps identity, labels, annotations (without last-applied-configuration), owners and times."""
    out = _pick(meta, METADATA)
    annotations = out.get("annotations")
    if isinstance(annotations, Mapping) and LAST_APPLIED in annotations:
        annotations = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
        if annotations:
            out["annotations"] = annotations
        else:
            del out["annotations"]
    return out


def _containers(containers: Any) -> list[dict]:
    return [_pick(c, CONTAINER) for c in containers or () if isinstance(c, Mapping)]


# What the volume plugins read of a volume source: ids and read-only flags, never secrets,
# credentials or driver attributes (an RBD's keyring and user, an Azure File's secret are dropped).
DISK_FIELDS = {
    "gcePersistentDisk": ("pdName", "readOnly"),
    "awsElasticBlockStore": ("volumeID", "readOnly"),
    "rbd": ("monitors", "pool", "image", "readOnly"),
    "iscsi": ("iqn", "readOnly"),
    "azureDisk": ("diskURI",),
    "cinder": ("volumeID",),
    "azureFile": ("shareName",),
    "vsphereVolume": ("volumePath",),
    "portworxVolume": ("volumeID",),
}
LOCAL_STORAGE_FIELDS = {"emptyDir": ("medium", "sizeLimit"), "hostPath": ("path", "type")}
CLAIM_SPEC = ("accessModes", "resources", "storageClassName", "volumeName", "volumeMode", "selector",
              "volumeAttributesClassName")


def _claim_template(template: Any) -> dict:
    """An ephemeral volume's claim template: its labels and the claim spec scheduling reads."""
    if not isinstance(template, Mapping):
        return {}
    out = {"spec": _claim_spec(template.get("spec"))}
    labels = _pick(template.get("metadata"), ("labels",))
    if labels:
        out["metadata"] = labels
    return out


def _claim_spec(spec: Any) -> dict:
    out = _pick(spec, CLAIM_SPEC)
    if isinstance(out.get("resources"), Mapping):
        out["resources"] = _pick(out["resources"], ("requests",))
    return out


def _volume(v: Mapping) -> dict | None:
    """Keeps a claim reference, an ephemeral volume's claim template, an image volume's image, the ids of
    in-tree disks and local storage (emptyDir, hostPath: it keeps a pod on its node for
    cluster-autoscaler); any other volume (secrets, config maps, ...) is dropped."""
    if v.get("persistentVolumeClaim"):
        return {"name": v.get("name"), "persistentVolumeClaim": v["persistentVolumeClaim"]}
    if isinstance(v.get("ephemeral"), Mapping):
        return {"name": v.get("name"),
                "ephemeral": {"volumeClaimTemplate": _claim_template(v["ephemeral"].get("volumeClaimTemplate"))}}
    if isinstance(v.get("image"), Mapping):
        return {"name": v.get("name"), "image": _pick(v["image"], IMAGE_VOLUME)}
    for source, fields in (DISK_FIELDS | LOCAL_STORAGE_FIELDS).items():
        if isinstance(v.get(source), Mapping):
            return {"name": v.get("name"), source: _pick(v[source], fields)}
    return None


def _pod(obj: Mapping) -> dict:
    spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
    out_spec = _pick(spec, POD_SPEC)
    out_spec["containers"] = _containers(spec.get("containers"))
    if spec.get("initContainers"):
        out_spec["initContainers"] = _containers(spec["initContainers"])
    volumes = [kept for v in spec.get("volumes") or () if isinstance(v, Mapping) and (kept := _volume(v))]
    if volumes:
        out_spec["volumes"] = volumes
    status = obj.get("status") if isinstance(obj.get("status"), Mapping) else {}
    out_status = _pick(status, POD_STATUS)
    for key in ("initContainerStatuses", "containerStatuses"):
        kept = [_pick(s, CONTAINER_STATUS) for s in status.get(key) or () if isinstance(s, Mapping)]
        if any(len(s) > 1 for s in kept):  # only when some status carries resources
            out_status[key] = kept
    return {"spec": out_spec, "status": out_status}


def _node(obj: Mapping) -> dict:
    status = obj.get("status") if isinstance(obj.get("status"), Mapping) else {}
    out_status = _pick(status, NODE_STATUS)
    conditions = [_pick(c, ("type", "status")) for c in status.get("conditions") or () if isinstance(c, Mapping)]
    if conditions:
        out_status["conditions"] = conditions
    kubelet = _pick(status.get("nodeInfo"), ("kubeletVersion",))  # the release when /version is unreadable
    if kubelet:
        out_status["nodeInfo"] = kubelet
    return {"spec": _pick(obj.get("spec"), NODE_SPEC), "status": out_status}


def _namespace(obj: Mapping) -> dict:
    status = _pick(obj.get("status"), ("phase",))
    return {"status": status} if status else {}


def _priority_class(obj: Mapping) -> dict:
    return _pick(obj, ("value", "globalDefault", "preemptionPolicy", "description"))


def _selector(obj: Mapping) -> dict:
    """Services and the controllers PodTopologySpread's default selector reads: the selector alone (no
    pod template, so no env values or commands)."""
    return {"spec": _pick(obj.get("spec"), ("selector",))}


def _rolled_out(obj: Mapping) -> dict:
    """Deployments and DaemonSets: what a rollout reads of them (selector, replicas, update strategy), no
    pod template."""
    return {"spec": _pick(obj.get("spec"), ("selector", "replicas", "strategy", "updateStrategy"))}


def _autoscaler(obj: Mapping) -> dict:
    """HorizontalPodAutoscaler: the workload it scales and its bounds (not its metrics)."""
    return {"spec": _pick(obj.get("spec"), ("scaleTargetRef", "minReplicas", "maxReplicas")),
            "status": _pick(obj.get("status"), ("currentReplicas", "desiredReplicas"))}


def _spec_and_status(obj: Mapping) -> dict:
    """PodDisruptionBudget and the custom resources: selectors, bounds and counters, nothing secret."""
    return _pick(obj, ("spec", "status"))


def _claim(obj: Mapping) -> dict:
    return {"spec": _claim_spec(obj.get("spec")), "status": _pick(obj.get("status"), ("phase",))}


def _persistent_volume(obj: Mapping) -> dict:
    """Capacity, class, modes, the claim it is bound to, where it can be used and what it is (a CSI
    driver and handle, or an in-tree disk's id); not the driver's attributes or secret references."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
    out = _pick(spec, ("capacity", "accessModes", "storageClassName", "volumeMode", "nodeAffinity",
                       "volumeAttributesClassName", "persistentVolumeReclaimPolicy"))
    if isinstance(spec.get("claimRef"), Mapping):
        out["claimRef"] = _pick(spec["claimRef"], ("namespace", "name", "uid"))
    if isinstance(spec.get("csi"), Mapping):
        out["csi"] = _pick(spec["csi"], ("driver", "volumeHandle"))
    for source, fields in DISK_FIELDS.items():
        if isinstance(spec.get(source), Mapping):
            out[source] = _pick(spec[source], fields)
    return {"spec": out, "status": _pick(obj.get("status"), ("phase",))}


def _storage_class(obj: Mapping) -> dict:
    """The provisioner and where it may provision; not its parameters (they may name secrets)."""
    return _pick(obj, ("provisioner", "volumeBindingMode", "allowedTopologies"))


def _csi_node(obj: Mapping) -> dict:
    drivers = [_pick(d, ("name", "allocatable", "topologyKeys"))
               for d in (obj.get("spec") or {}).get("drivers") or () if isinstance(d, Mapping)]
    return {"spec": {"drivers": drivers}}


def _csi_driver(obj: Mapping) -> dict:
    return {"spec": _pick(obj.get("spec"), ("storageCapacity", "attachRequired"))}


def _csi_storage_capacity(obj: Mapping) -> dict:
    return _pick(obj, ("storageClassName", "capacity", "maximumVolumeSize", "nodeTopology"))


def _volume_attachment(obj: Mapping) -> dict:
    spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
    out = _pick(spec, ("attacher", "nodeName"))
    if isinstance(spec.get("source"), Mapping):
        out["source"] = _pick(spec["source"], ("persistentVolumeName",))
    return {"spec": out}


def _device_class(obj: Mapping) -> dict:
    """DeviceClass: its selectors (configuration, which may carry driver parameters, is dropped)."""
    return {"spec": _pick(obj.get("spec"), ("selectors", "extendedResourceName"))}


def _resource_slice(obj: Mapping) -> dict:
    return {"spec": _pick(obj.get("spec"), RESOURCE_SLICE_SPEC)}


def _resource_claim(obj: Mapping) -> dict:
    """ResourceClaim: what it asks for (without opaque driver configuration), its allocation and users."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
    status = obj.get("status") if isinstance(obj.get("status"), Mapping) else {}
    out_status = _pick(status, ("reservedFor",))
    allocation = status.get("allocation")
    if isinstance(allocation, Mapping):
        devices = allocation.get("devices") if isinstance(allocation.get("devices"), Mapping) else {}
        out_status["allocation"] = {**_pick(allocation, ("nodeSelector",)), "devices": _pick(devices, ("results",))}
    return {"spec": _resource_claim_spec(spec), "status": out_status}


def _resource_claim_spec(spec: Mapping) -> dict:
    devices = spec.get("devices") if isinstance(spec.get("devices"), Mapping) else {}
    return {"devices": _pick(devices, ("requests", "constraints"))}


def _resource_claim_template(obj: Mapping) -> dict:
    template = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
    meta = _pick(template.get("metadata"), ("labels", "annotations"))
    spec = template.get("spec") if isinstance(template.get("spec"), Mapping) else {}
    return {"spec": {**({"metadata": meta} if meta else {}), "spec": _resource_claim_spec(spec)}}


BODIES: dict[str, Callable[[Mapping], dict]] = {
    "Pod": _pod,
    "Node": _node,
    "Namespace": _namespace,
    "PriorityClass": _priority_class,
    "PodDisruptionBudget": _spec_and_status,
    "Service": _selector,
    "ReplicaSet": _selector,
    "StatefulSet": _selector,
    "ReplicationController": _selector,
    "Deployment": _rolled_out,
    "DaemonSet": _rolled_out,
    "HorizontalPodAutoscaler": _autoscaler,
    "ElasticQuota": _spec_and_status,
    "NodeMetric": _spec_and_status,
    "PersistentVolumeClaim": _claim,
    "PersistentVolume": _persistent_volume,
    "StorageClass": _storage_class,
    "CSINode": _csi_node,
    "CSIDriver": _csi_driver,
    "CSIStorageCapacity": _csi_storage_capacity,
    "VolumeAttachment": _volume_attachment,
    "DeviceClass": _device_class,
    "ResourceSlice": _resource_slice,
    "ResourceClaim": _resource_claim,
    "ResourceClaimTemplate": _resource_claim_template,
}


def redact(obj: Mapping) -> dict:
    """Returns the object with only what scheduling reads (unknown kinds keep their identity only)."""
    kind = obj.get("kind")
    meta = _pick(obj.get("metadata"), IDENTITY) if BODIES.get(kind) in (_selector, _rolled_out, _autoscaler) \
        else metadata(obj.get("metadata"))
    out = {"apiVersion": obj.get("apiVersion"), "kind": kind, "metadata": meta}
    body = BODIES.get(kind)
    if body is not None:
        out.update(body(obj))
    return out


def format_for(path: str | None, output: str | None) -> str:
    """Returns json or yaml: -o, else the --out extension (.json/.yaml/.yml, optionally .gz), else json."""
    suffix = Path(path).name.removesuffix(".gz").rpartition(".")[2].lower() if path else ""
    by_suffix = {"json": "json", "yaml": "yaml", "yml": "yaml"}.get(suffix)
    if output and by_suffix and output != by_suffix:
        raise InputError(f"-o {output} does not match the extension of --out {path}")
    return output or by_suffix or "json"


def dump_text(header: Mapping, objects: Iterable[Mapping], fmt: str) -> Iterable[str]:
    """Yields the snapshot as text: a `kind: List` (JSON, one object a line) or multi-document YAML."""
    if fmt == "json":
        yield '{"apiVersion": "v1", "kind": "List", "items": [\n'
        yield json.dumps(header, separators=(",", ":"))
        for obj in objects:
            yield ",\n" + json.dumps(redact(obj), separators=(",", ":"))
        yield "\n]}\n"
        return
    import yaml
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    yield yaml.dump(dict(header), Dumper=dumper, sort_keys=False)
    for obj in objects:
        yield "---\n" + yaml.dump(redact(obj), Dumper=dumper, sort_keys=False)


def write_snapshot(header: Mapping, objects: Iterable[Mapping], out: str | None, fmt: str,
                   stdout: io.TextIOBase | None = None) -> None:
    """Writes to stdout, or to `out` (gzipped when it ends in .gz) through a temporary file."""
    if not out:
        import sys
        stream = stdout or sys.stdout
        for chunk in dump_text(header, objects, fmt):
            stream.write(chunk)
        stream.flush()
        return
    target = Path(out)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        if target.name.endswith(".gz"):
            stream = gzip.open(tmp, "wt", encoding="utf-8", compresslevel=6)
        else:
            stream = open(tmp, "w", encoding="utf-8")
        with stream:
            for chunk in dump_text(header, objects, fmt):
                stream.write(chunk)
        os.replace(tmp, target)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise InputError(f"cannot write: {err.strerror or err}", out) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
