"""Storage objects as the volume plugins read them: claims, volumes, classes and CSI node facts.

PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes, CSIDrivers and
CSIStorageCapacities become typed records holding only what kube-scheduler's VolumeBinding,
VolumeZone, VolumeRestrictions and NodeVolumeLimits read. Each is validated as the API server
validates it (ValidatePersistentVolumeClaim, ValidatePersistentVolume, ...) for the fields read,
so a claim without a name, an unknown access mode or a volume with an unparseable node affinity
is an input error naming the object and the field, in snapshots and manifests alike.

Storage sizes stay exact (Fractions): upstream compares them as Quantities (Cmp), and rounds up to
whole bytes (Value) only where it checks CSIStorageCapacity.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterable, Mapping, NamedTuple

from kplan.api.label_selectors import NOTHING, Selector, parse_selector
from kplan.api.quantity import InvalidQuantity, parse_quantity
from kplan.api.validation import (
    Invalid, forbidden, invalid, items, label_name, mapping, node_selector_term, not_supported, required,
    sequence, string,
)
from kplan.errors import InputError

STORAGE = "storage"
ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
VOLUME_MODES = ("Block", "Filesystem")
FILESYSTEM = "Filesystem"
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
IMMEDIATE, WAIT_FOR_FIRST_CONSUMER = BINDING_MODES
# The provisioner of classes whose volumes are created by hand (volume.NotSupportedProvisioner).
NO_PROVISIONER = "kubernetes.io/no-provisioner"

# Annotations the binder reads and writes (k8s.io/component-helpers/storage/volume).
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BETA_CLASS = "volume.beta.kubernetes.io/storage-class"
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
BETA_DEFAULT_CLASS = "storageclass.beta.kubernetes.io/is-default-class"
MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"

CLAIM = "PersistentVolumeClaim"
VOLUME = "PersistentVolume"
CLASS = "StorageClass"
CSI_NODE = "CSINode"
CSI_DRIVER = "CSIDriver"
CAPACITY = "CSIStorageCapacity"
ATTACHMENT = "VolumeAttachment"
KINDS = (CLAIM, VOLUME, CLASS, CSI_NODE, CSI_DRIVER, CAPACITY, ATTACHMENT)

# In-tree volume sources whose volumes a CSI driver took over (csi-translation-lib), by the
# field of the volume source: (in-tree plugin name, the source's id field).
IN_TREE_SOURCES = {
    "awsElasticBlockStore": ("kubernetes.io/aws-ebs", "volumeID"),
    "gcePersistentDisk": ("kubernetes.io/gce-pd", "pdName"),
    "azureDisk": ("kubernetes.io/azure-disk", "diskURI"),
    "cinder": ("kubernetes.io/cinder", "volumeID"),
    "azureFile": ("kubernetes.io/azure-file", "shareName"),
    "vsphereVolume": ("kubernetes.io/vsphere-volume", "volumePath"),
    "portworxVolume": ("kubernetes.io/portworx-volume", "volumeID"),
}


class Source(NamedTuple):
    """Where a volume lives, as the attach limits count it: a CSI driver and volume handle, or an
    in-tree plugin (kubernetes.io/aws-ebs, ...) and its volume id; neither for other volume types.
    (A tuple: every volume has one, and a tuple is built several times faster than a frozen dataclass.)"""

    csi_driver: str = ""
    handle: str = ""
    in_tree: str = ""  # in-tree plugin name
    in_tree_id: str = ""
    zone: str = ""  # the volume's zone label, which some translations put into the handle


class ClaimRef(NamedTuple):
    namespace: str
    name: str
    uid: str = ""


@dataclass
class PersistentVolumeClaim:
    """A claim: what it asks for, what it is bound to, and the binder's annotations."""

    namespace: str
    name: str
    uid: str
    storage_class: str  # GetPersistentVolumeClaimClass: the beta annotation, else spec, else ""
    volume_name: str
    access_modes: tuple[str, ...]
    volume_mode: str
    request: Fraction | None  # spec.resources.requests.storage
    selector: Selector | None  # spec.selector (None: none)
    attributes_class: str
    bind_completed: bool
    selected_node: str | None
    terminating: bool
    lost: bool  # status.phase Lost: bound to a volume that no longer exists
    controller_uid: str  # the uid of its controlling owner (an ephemeral volume's pod)
    class_given: bool = True  # spec.storageClassName (or the beta annotation) set, "" included
    source: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return self.namespace, self.name

    @property
    def fully_bound(self) -> bool:
        """isPVCFullyBound: a volume name and the bind-completed annotation."""
        return bool(self.volume_name) and self.bind_completed

    @property
    def request_bytes(self) -> int:
        """Quantity.Value() of the request: whole bytes, rounded up."""
        return math.ceil(self.request) if self.request is not None else 0


@dataclass
class PersistentVolume:
    """A volume: its capacity and class, whom it is bound to, and where it can be used."""

    name: str
    labels: dict[str, str]
    storage_class: str  # GetPersistentVolumeClass
    capacity: Fraction
    access_modes: tuple[str, ...]
    volume_mode: str
    claim_ref: ClaimRef | None
    node_affinity: list[Mapping] | None  # spec.nodeAffinity.required.nodeSelectorTerms, None without
    phase: str
    terminating: bool
    attributes_class: str
    source: Source = field(default_factory=Source)
    origin: str = ""

    def zone_summary(self) -> str:
        """The zone (or region) labels it carries, as "zone-a", for explanations."""
        for key in ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone",
                    "topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region"):
            if key in self.labels:
                return self.labels[key]
        return ""


@dataclass
class StorageClass:
    name: str
    provisioner: str
    binding_mode: str
    allowed_topologies: list[Mapping]  # TopologySelectorTerms
    is_default: bool
    created: str


@dataclass
class CSINode:
    """A node's CSI drivers: each one's attach limit (None: no limit published) and the in-tree plugins
    migrated to CSI on it."""

    name: str
    limits: dict[str, int | None]
    migrated_plugins: frozenset[str]


@dataclass
class CSIDriver:
    name: str
    storage_capacity: bool


@dataclass
class CSIStorageCapacity:
    namespace: str
    name: str
    storage_class: str
    capacity: int | None  # whole bytes (Value)
    maximum_volume_size: int | None
    node_topology: Selector  # a nil nodeTopology: no node has access

    @property
    def limit(self) -> int | None:
        """volumeLimit: maximumVolumeSize when set (it is more precise), else capacity."""
        return self.maximum_volume_size if self.maximum_volume_size is not None else self.capacity


@dataclass
class VolumeAttachment:
    """A volume attached to a node by a CSI driver (NodeVolumeLimits counts it against the limit
    even when no pod on the node uses the volume any more)."""

    name: str
    attacher: str
    node: str
    volume: str  # spec.source.persistentVolumeName ("" for an inline volume)


@dataclass
class StorageObjects:
    """The storage objects of a snapshot (or of a run, with the claims its workloads create)."""

    claims: dict[tuple[str, str], PersistentVolumeClaim] = field(default_factory=dict)
    volumes: dict[str, PersistentVolume] = field(default_factory=dict)
    classes: dict[str, StorageClass] = field(default_factory=dict)
    csi_nodes: dict[str, CSINode] = field(default_factory=dict)
    csi_drivers: dict[str, CSIDriver] = field(default_factory=dict)
    capacities: list[CSIStorageCapacity] = field(default_factory=list)
    attachments: list[VolumeAttachment] = field(default_factory=list)

    def add(self, obj: Any) -> None:
        if isinstance(obj, PersistentVolumeClaim):
            self.claims[obj.key] = obj
        elif isinstance(obj, PersistentVolume):
            self.volumes[obj.name] = obj
        elif isinstance(obj, StorageClass):
            self.classes[obj.name] = obj
        elif isinstance(obj, CSINode):
            self.csi_nodes[obj.name] = obj
        elif isinstance(obj, CSIDriver):
            self.csi_drivers[obj.name] = obj
        elif isinstance(obj, VolumeAttachment):
            self.attachments.append(obj)
        else:
            self.capacities.append(obj)

    def with_objects(self, objects: Iterable[Any]) -> "StorageObjects":
        """A copy with more objects, as creating them through the API server would leave it (one
        replaces the object of its kind, namespace and name; a new claim without a class gets the
        default class)."""
        objects = list(objects)
        if not objects:
            return self
        new = StorageObjects(dict(self.claims), dict(self.volumes), dict(self.classes), dict(self.csi_nodes),
                             dict(self.csi_drivers), list(self.capacities), list(self.attachments))
        for obj in objects:
            if not isinstance(obj, PersistentVolumeClaim):
                new.add(obj)
        default = new.default_class()
        for obj in objects:
            if isinstance(obj, PersistentVolumeClaim):
                new.add(admitted(obj, default))
        return new

    def __bool__(self) -> bool:
        return bool(self.claims or self.volumes or self.classes or self.csi_nodes or self.csi_drivers
                    or self.capacities or self.attachments)

    def default_class(self) -> StorageClass | None:
        """The class the DefaultStorageClass admission plugin gives a claim without one: among the
        classes marked default, the newest, then the first by name (GetDefaultClass)."""
        by_name = sorted((c for c in self.classes.values() if c.is_default), key=lambda c: c.name)
        newest_first = sorted(by_name, key=lambda c: c.created, reverse=True)  # stable: names stay ordered
        return newest_first[0] if newest_first else None


def admitted(claim: PersistentVolumeClaim, default: StorageClass | None) -> PersistentVolumeClaim:
    """A new claim as the DefaultStorageClass admission plugin leaves it: without a class of its own
    (storageClassName unset, not ""), it gets the default class, when there is one."""
    if claim.class_given or default is None:
        return claim
    return dataclasses.replace(claim, storage_class=default.name, class_given=True)


# -- validation, of the objects users write (manifests) ----------------------------------------------
#
# A snapshot's objects were admitted by their API server: they are read without these checks, for
# speed (65,000 claims and volumes load in a fraction of a second); a malformed one is still an
# input error when its fields cannot be read.

def _name(meta: Mapping) -> str:
    name = string(meta.get("name"), "metadata.name")
    if not name:
        raise required("metadata.name", "name or generateName is required")
    return name


def _size(raw: Any, path: str) -> Fraction:
    if raw is None:
        raise required(path)
    try:
        amount = parse_quantity(raw)
    except InvalidQuantity:
        raise invalid(path, raw, "quantities must match the regular expression "
                                 "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'") from None
    if amount < 0:
        raise invalid(path, str(raw), "must be greater than or equal to 0")
    return amount


def _access_modes(raw: Any, path: str) -> None:
    """validateAccessModes (ValidatePersistentVolumeClaimSpec and ValidatePersistentVolumeSpec)."""
    modes = [string(m, f"{path}[{i}]") for i, m in enumerate(sequence(raw, path))]
    if not modes:
        raise required(path, "at least 1 access mode is required")
    for mode in modes:
        if mode not in ACCESS_MODES:
            raise not_supported(path, mode, ACCESS_MODES)
    if READ_WRITE_ONCE_POD in modes and len(modes) > 1:
        raise forbidden(path, "may not use ReadWriteOncePod with other access modes")


def _volume_mode(raw: Any, path: str) -> None:
    mode = string(raw, path) or FILESYSTEM
    if mode not in VOLUME_MODES:
        raise not_supported(path, mode, VOLUME_MODES)


def claim_spec(spec: Mapping, path: str) -> None:
    """ValidatePersistentVolumeClaimSpec for what scheduling reads: access modes, volume mode, the
    storage request and the selector."""
    _access_modes(spec.get("accessModes"), f"{path}.accessModes")
    _volume_mode(spec.get("volumeMode"), f"{path}.volumeMode")
    requests = mapping(mapping(spec.get("resources"), f"{path}.resources").get("requests"),
                       f"{path}.resources.requests")
    if STORAGE not in requests:
        raise required(f"{path}.resources[storage]")
    if _size(requests[STORAGE], f"{path}.resources[storage]") <= 0:
        raise invalid(f"{path}.resources[storage]", str(requests[STORAGE]), "must be greater than zero")
    if spec.get("selector") is not None:
        parse_selector(mapping(spec.get("selector"), f"{path}.selector"), f"{path}.selector")
    string(spec.get("storageClassName"), f"{path}.storageClassName")
    string(spec.get("volumeName"), f"{path}.volumeName")


def _check_claim(raw: Mapping) -> None:
    _name(mapping(raw.get("metadata"), "metadata"))
    claim_spec(mapping(raw.get("spec"), "spec"), "spec")


def _check_volume(raw: Mapping) -> None:
    """ValidatePersistentVolume for what scheduling reads: capacity, modes, the source's identity and
    the node affinity (ValidateVolumeNodeAffinity)."""
    _name(mapping(raw.get("metadata"), "metadata"))
    spec = mapping(raw.get("spec"), "spec")
    capacity = mapping(spec.get("capacity"), "spec.capacity")
    if STORAGE not in capacity:
        raise required("spec.capacity", "must specify storage")
    _size(capacity[STORAGE], "spec.capacity[storage]")
    _access_modes(spec.get("accessModes"), "spec.accessModes")
    _volume_mode(spec.get("volumeMode"), "spec.volumeMode")
    if spec.get("csi") is not None:
        csi = mapping(spec["csi"], "spec.csi")
        for name in ("driver", "volumeHandle"):
            if not string(csi.get(name), f"spec.csi.{name}"):
                raise required(f"spec.csi.{name}")
    if spec.get("claimRef") is not None:
        mapping(spec["claimRef"], "spec.claimRef")
    affinity = spec.get("nodeAffinity")
    if affinity is None:
        return
    path = "spec.nodeAffinity"
    required_ = mapping(affinity, path).get("required")
    if required_ is None:
        raise required(f"{path}.required", "must specify required node constraints")
    terms = items(mapping(required_, f"{path}.required").get("nodeSelectorTerms"), f"{path}.required.nodeSelectorTerms")
    if not terms:
        raise required(f"{path}.required.nodeSelectorTerms", "must have at least one node selector term")
    for p, term in terms:
        node_selector_term(term, p)


def _check_class(raw: Mapping) -> None:
    _name(mapping(raw.get("metadata"), "metadata"))
    if not string(raw.get("provisioner"), "provisioner"):
        raise required("provisioner")
    mode = string(raw.get("volumeBindingMode"), "volumeBindingMode")
    if mode and mode not in BINDING_MODES:
        raise not_supported("volumeBindingMode", mode, BINDING_MODES)
    for p, term in items(raw.get("allowedTopologies"), "allowedTopologies"):
        for q, expr in items(term.get("matchLabelExpressions"), f"{p}.matchLabelExpressions"):
            label_name(expr.get("key"), f"{q}.key")
            values = [string(v, f"{q}.values[{i}]") for i, v in enumerate(sequence(expr.get("values"), f"{q}.values"))]
            if not values:
                raise required(f"{q}.values", "must specify as least one value")


CHECKS = {CLAIM: _check_claim, VOLUME: _check_volume, CLASS: _check_class}


# -- reading -----------------------------------------------------------------------------------------

def _size_value(raw: Any) -> Fraction:
    return _SIZES.get(raw) or _SIZES.setdefault(raw, parse_quantity(raw))


_SIZES: dict[Any, Fraction] = {}  # a cluster's claims and volumes repeat a few sizes


def _controller_uid(meta: Mapping) -> str:
    for ref in meta.get("ownerReferences") or ():
        if ref.get("controller") is True:
            return str(ref.get("uid") or "")
    return ""


def _class_of(annotations: Mapping, spec: Mapping) -> str:
    """GetPersistentVolumeClaimClass / GetPersistentVolumeClass: the beta annotation, else spec."""
    cls = annotations.get(BETA_CLASS)
    return str(cls) if cls is not None else (spec.get("storageClassName") or "")


def persistent_volume_claim(raw: Mapping, source: str = "") -> PersistentVolumeClaim:
    meta = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    annotations = meta.get("annotations") or {}
    request = ((spec.get("resources") or {}).get("requests") or {}).get(STORAGE)
    selector = spec.get("selector")
    return PersistentVolumeClaim(
        namespace=meta.get("namespace") or "default", name=meta.get("name") or "", uid=str(meta.get("uid") or ""),
        storage_class=_class_of(annotations, spec), volume_name=spec.get("volumeName") or "",
        access_modes=tuple(spec.get("accessModes") or ()), volume_mode=spec.get("volumeMode") or FILESYSTEM,
        request=_size_value(request) if request is not None else None,
        selector=parse_selector(selector, f"PersistentVolumeClaim {meta.get('name')} spec.selector")
        if selector is not None else None,
        attributes_class=spec.get("volumeAttributesClassName") or "",
        bind_completed=BIND_COMPLETED in annotations, selected_node=annotations.get(SELECTED_NODE),
        terminating=bool(meta.get("deletionTimestamp")), lost=(raw.get("status") or {}).get("phase") == "Lost",
        controller_uid=_controller_uid(meta),
        class_given=BETA_CLASS in annotations or spec.get("storageClassName") is not None, source=source)


def inline_source(volume: Mapping, zone: str = "") -> Source:
    """The in-tree source of a volume (a PV spec or a pod's inline volume), if it has one."""
    for key, (plugin, id_field) in IN_TREE_SOURCES.items():
        src = volume.get(key)
        if src.__class__ is dict:
            return Source(in_tree=plugin, in_tree_id=str(src.get(id_field) or ""), zone=zone)
    return Source()


def persistent_volume(raw: Mapping, source: str = "") -> PersistentVolume:
    meta = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    labels = meta.get("labels") or {}
    ref = spec.get("claimRef")
    csi = spec.get("csi")
    if csi is not None:
        volume_source = Source(csi_driver=csi.get("driver") or "", handle=csi.get("volumeHandle") or "")
    else:
        zone = labels.get("topology.kubernetes.io/zone") or labels.get("failure-domain.beta.kubernetes.io/zone") or ""
        volume_source = inline_source(spec, zone)
    affinity = spec.get("nodeAffinity")
    return PersistentVolume(
        name=meta.get("name") or "", labels=labels,
        storage_class=_class_of(meta.get("annotations") or {}, spec),
        capacity=_size_value((spec.get("capacity") or {}).get(STORAGE) or 0),
        access_modes=tuple(spec.get("accessModes") or ()), volume_mode=spec.get("volumeMode") or FILESYSTEM,
        claim_ref=ClaimRef(ref.get("namespace") or "", ref.get("name") or "", ref.get("uid") or "") if ref else None,
        node_affinity=list(((affinity.get("required") or {}).get("nodeSelectorTerms") or ())) if affinity else None,
        phase=(raw.get("status") or {}).get("phase") or "", terminating=bool(meta.get("deletionTimestamp")),
        attributes_class=spec.get("volumeAttributesClassName") or "", source=volume_source, origin=source)


def storage_class(raw: Mapping, source: str = "") -> StorageClass:
    meta = raw.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    default = (annotations.get(DEFAULT_CLASS) or annotations.get(BETA_DEFAULT_CLASS)) == "true"
    # The API server defaults volumeBindingMode to Immediate.
    return StorageClass(meta.get("name") or "", raw.get("provisioner") or "", raw.get("volumeBindingMode") or IMMEDIATE,
                        list(raw.get("allowedTopologies") or ()), default, str(meta.get("creationTimestamp") or ""))


def csi_node(raw: Mapping, source: str = "") -> CSINode:
    meta = raw.get("metadata") or {}
    limits = {d.get("name") or "": (d.get("allocatable") or {}).get("count")
              for d in (raw.get("spec") or {}).get("drivers") or ()}
    migrated = (meta.get("annotations") or {}).get(MIGRATED_PLUGINS) or ""
    return CSINode(meta.get("name") or "", limits, frozenset(p for p in str(migrated).split(",") if p))


def csi_driver(raw: Mapping, source: str = "") -> CSIDriver:
    return CSIDriver((raw.get("metadata") or {}).get("name") or "",
                     (raw.get("spec") or {}).get("storageCapacity") is True)


def csi_storage_capacity(raw: Mapping, source: str = "") -> CSIStorageCapacity:
    meta = raw.get("metadata") or {}

    def whole(key: str) -> int | None:
        return math.ceil(_size_value(raw[key])) if raw.get(key) is not None else None

    topology = raw.get("nodeTopology")
    selector = NOTHING if topology is None else parse_selector(topology, f"CSIStorageCapacity {meta.get('name')}")
    return CSIStorageCapacity(meta.get("namespace") or "default", meta.get("name") or "",
                              raw.get("storageClassName") or "", whole("capacity"), whole("maximumVolumeSize"), selector)


def volume_attachment(raw: Mapping, source: str = "") -> VolumeAttachment:
    spec = raw.get("spec") or {}
    return VolumeAttachment((raw.get("metadata") or {}).get("name") or "", spec.get("attacher") or "",
                            spec.get("nodeName") or "", (spec.get("source") or {}).get("persistentVolumeName") or "")


PARSERS = {
    CLAIM: persistent_volume_claim,
    VOLUME: persistent_volume,
    CLASS: storage_class,
    CSI_NODE: csi_node,
    CSI_DRIVER: csi_driver,
    CAPACITY: csi_storage_capacity,
    ATTACHMENT: volume_attachment,
}


def _object(kind: str, raw: Mapping) -> str:
    meta = raw.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else ""
    return f'{kind} "{name if isinstance(name, str) else ""}"'


def parse(kind: str, raw: Mapping, where: str, validate: bool = False) -> Any:
    """Builds the record of a storage object. With `validate` (objects users write), one the API
    server would refuse is an InputError naming the file, the object and the field; without (a
    snapshot's), only one whose fields cannot be read is."""
    try:
        if validate and kind in CHECKS:
            CHECKS[kind](raw)
        return PARSERS[kind](raw, where)
    except Invalid as err:
        raise InputError(f"{_object(kind, raw)}: {err}", where) from None
    except InputError as err:  # a selector's: it names the object and the field, not the file
        if err.source is not None:
            raise
        raise InputError(err.message, where) from None
    except InvalidQuantity as err:
        raise InputError(f"{_object(kind, raw)}: invalid quantity: {err}", where) from None
    except (AttributeError, TypeError, ValueError) as err:
        raise InputError(f"malformed {kind}: {err}", where) from None


# -- claims a pod's volumes name, and the claims controllers create --------------------------------

def claim_names(spec: Mapping, pod_name: str) -> list[tuple[str, bool]]:
    """The claims a pod's volumes use, in volume order: (claim name, is an ephemeral volume's claim),
    as upstream names an ephemeral volume's claim (<pod>-<volume>)."""
    out = []
    for v in spec.get("volumes") or ():
        if not isinstance(v, Mapping):
            continue
        if isinstance(v.get("persistentVolumeClaim"), Mapping):
            out.append((str(v["persistentVolumeClaim"].get("claimName") or ""), False))
        elif isinstance(v.get("ephemeral"), Mapping):
            out.append((f"{pod_name}-{v.get('name') or ''}", True))
    return out


def uses_claims(spec: Mapping) -> bool:
    """Tells whether a pod spec has a volume backed by a claim (persistentVolumeClaim or ephemeral)."""
    return any(isinstance(v, Mapping) and (v.get("persistentVolumeClaim") or v.get("ephemeral"))
               for v in spec.get("volumes") or ())


def pod_volumes(spec: Mapping, path: str) -> None:
    """validateVolumes for the volumes scheduling reads: a claim reference names its claim, an
    ephemeral volume's claim template is a valid claim spec."""
    names = set()
    for p, v in items(spec.get("volumes"), f"{path}.volumes"):
        name = string(v.get("name"), f"{p}.name")
        if not name:
            raise required(f"{p}.name")
        if name in names:
            raise Invalid(f'{p}.name: Duplicate value: "{name}"')
        names.add(name)
        if v.get("persistentVolumeClaim") is not None:
            ref = mapping(v["persistentVolumeClaim"], f"{p}.persistentVolumeClaim")
            if not string(ref.get("claimName"), f"{p}.persistentVolumeClaim.claimName"):
                raise required(f"{p}.persistentVolumeClaim.claimName")
        if v.get("ephemeral") is not None:
            template = mapping(mapping(v["ephemeral"], f"{p}.ephemeral").get("volumeClaimTemplate"),
                               f"{p}.ephemeral.volumeClaimTemplate")
            if not template:
                raise required(f"{p}.ephemeral.volumeClaimTemplate")
            claim_spec(mapping(template.get("spec"), f"{p}.ephemeral.volumeClaimTemplate.spec"),
                       f"{p}.ephemeral.volumeClaimTemplate.spec")


def _claim_from_template(namespace: str, name: str, template: Mapping, labels: Mapping[str, str] | None = None,
                         owner: Mapping | None = None) -> dict:
    """A claim a controller creates from a claim template, before admission."""
    meta = template.get("metadata") or {}
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    merged = {**(meta.get("labels") or {}), **(labels or {})}
    if merged:
        metadata["labels"] = merged
    if meta.get("annotations"):
        metadata["annotations"] = dict(meta["annotations"])
    if owner is not None:
        metadata["ownerReferences"] = [dict(owner)]
    return {"apiVersion": "v1", "kind": CLAIM, "metadata": metadata, "spec": dict(template.get("spec") or {}),
            "status": {"phase": "Pending"}}


def claims_to_create(pod: Any) -> list[dict]:
    """The claims the controllers create for a pod before it is scheduled: its StatefulSet's claim
    templates (<template>-<pod>, labelled with the set's selector) and its ephemeral volumes'
    (<pod>-<volume>, owned by the pod). Only pods from manifests have them (`claim_templates`)."""
    templates = getattr(pod, "claim_templates", None)
    if templates is None:
        return []
    out = [_claim_from_template(pod.namespace, f"{name}-{pod.name}", template, labels)
           for name, (template, labels) in templates.items()]
    owner = {"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid, "controller": True,
             "blockOwnerDeletion": True}
    for v in pod.spec.get("volumes") or ():
        if isinstance(v, Mapping) and isinstance(v.get("ephemeral"), Mapping):
            template = v["ephemeral"].get("volumeClaimTemplate") or {}
            out.append(_claim_from_template(pod.namespace, f"{pod.name}-{v.get('name')}", template, owner=owner))
    return out
