"""Dynamic Resource Allocation objects as DynamicResources reads them: device classes, resource
slices, resource claims and claim templates (resource.k8s.io).

Each becomes a typed record holding only what the scheduler's plugin and its structured
allocator read. resource.k8s.io/v1 is the served version from Kubernetes 1.34; v1beta1 and v1beta2,
which 1.32 and 1.33 clusters serve, are converted as the API server converts them (v1beta1's
requests carry the exact-count fields themselves and its devices wrap them in `basic`). Fields are
validated as the API server validates the ones read (names, allocation modes, counts, attribute
values, quantities, node selectors), so a broken object is an input error naming the file, the
object and the field. CEL expressions are compiled when a run first needs them (kplan.api.device_cel).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterable, Mapping

from kplan.api.validation import (
    Invalid, forbidden, integer, invalid, items, mapping, node_selector_term, not_supported, required, sequence,
    string,
)
from kplan.api import validation
from kplan.errors import InputError

GROUP = "resource.k8s.io"
API_VERSIONS = (f"{GROUP}/v1", f"{GROUP}/v1beta2", f"{GROUP}/v1beta1")
V1BETA1 = f"{GROUP}/v1beta1"

DEVICE_CLASS = "DeviceClass"
RESOURCE_SLICE = "ResourceSlice"
RESOURCE_CLAIM = "ResourceClaim"
CLAIM_TEMPLATE = "ResourceClaimTemplate"
KINDS = (DEVICE_CLASS, RESOURCE_SLICE, RESOURCE_CLAIM, CLAIM_TEMPLATE)

EXACT_COUNT, ALL = "ExactCount", "All"
ALLOCATION_MODES = (ALL, EXACT_COUNT)
# API limits (k8s.io/api/resource/v1).
ALLOCATION_RESULTS_MAX = 32  # AllocationResultsMaxSize: devices per claim
RESERVED_FOR_MAX = 256  # ResourceClaimReservedForMaxSize
TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")

_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                     r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
                     r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?\Z")


@dataclass(frozen=True)
class Version:
    """A device attribute of type version: a semantic version 2.0.0 string."""

    text: str


AttributeValue = int | bool | str | Version


@dataclass(frozen=True)
class DeviceTaint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True)
class Device:
    """One device of a slice: what selectors see (attributes, capacity by qualified name) and what
    decides whether it can be allocated at all."""

    name: str
    attributes: Mapping[str, AttributeValue]
    capacity: Mapping[str, Fraction]
    capacity_text: Mapping[str, str]
    taints: tuple[DeviceTaint, ...] = ()
    consumes_counters: bool = False  # partitionable devices
    binding_conditions: bool = False

    @property
    def content(self) -> tuple:
        """What CEL can read of the device (its driver aside): devices alike share selector results."""
        return (tuple(sorted(self.attributes.items(), key=lambda kv: kv[0])),
                tuple(sorted(self.capacity_text.items())))


@dataclass(frozen=True)
class ResourceSlice:
    name: str
    driver: str
    pool: str
    generation: int
    slice_count: int
    node_name: str  # "" unless the slice's devices are local to one node
    node_selector: tuple[Mapping, ...] | None  # nodeSelectorTerms
    all_nodes: bool
    per_device_node_selection: bool
    shared_counters: bool
    devices: tuple[Device, ...]
    source: str = ""


@dataclass(frozen=True)
class Toleration:
    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, taint: DeviceTaint) -> bool:
        """Toleration.ToleratesTaint for device taints."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


@dataclass(frozen=True)
class ExactRequest:
    """An exact request (v1 `exactly`) or one alternative of firstAvailable."""

    name: str
    device_class: str
    selectors: tuple[str, ...]
    mode: str
    count: int
    admin_access: bool | None = None
    tolerations: tuple[Toleration, ...] = ()

    @property
    def signature(self) -> tuple:
        """What decides which devices match: requests alike share match results."""
        return self.device_class, self.selectors


@dataclass(frozen=True)
class DeviceRequest:
    name: str
    exactly: ExactRequest | None
    first_available: tuple[ExactRequest, ...] = ()


@dataclass(frozen=True)
class Constraint:
    requests: tuple[str, ...]
    match_attribute: str | None


@dataclass(frozen=True)
class ClaimSpec:
    requests: tuple[DeviceRequest, ...]
    constraints: tuple[Constraint, ...]


@dataclass(frozen=True)
class DeviceResult:
    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool = False


@dataclass(frozen=True)
class Allocation:
    results: tuple[DeviceResult, ...]
    node_selector: tuple[Mapping, ...] | None  # nodeSelectorTerms; None: available on every node


@dataclass(frozen=True)
class Consumer:
    """An entry of status.reservedFor."""

    resource: str
    name: str
    uid: str


@dataclass(frozen=True)
class ResourceClaim:
    namespace: str
    name: str
    uid: str
    spec: ClaimSpec
    allocation: Allocation | None
    reserved_for: tuple[Consumer, ...]
    deleting: bool
    owner_pod_uid: str  # the uid of its controlling owner when that is a Pod ("" otherwise)
    source: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return self.namespace, self.name


@dataclass(frozen=True)
class ResourceClaimTemplate:
    namespace: str
    name: str
    spec: ClaimSpec
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    source: str = ""


@dataclass(frozen=True)
class DeviceClass:
    name: str
    selectors: tuple[str, ...]
    source: str = ""


@dataclass
class DeviceObjects:
    """The DRA objects of a snapshot, by name."""

    classes: dict[str, DeviceClass] = field(default_factory=dict)
    slices: dict[str, ResourceSlice] = field(default_factory=dict)
    claims: dict[tuple[str, str], ResourceClaim] = field(default_factory=dict)
    templates: dict[tuple[str, str], ResourceClaimTemplate] = field(default_factory=dict)

    def add(self, obj: Any) -> None:
        if isinstance(obj, DeviceClass):
            self.classes[obj.name] = obj
        elif isinstance(obj, ResourceSlice):
            self.slices[obj.name] = obj
        elif isinstance(obj, ResourceClaim):
            self.claims[obj.key] = obj
        else:
            self.templates[(obj.namespace, obj.name)] = obj

    def __bool__(self) -> bool:
        return bool(self.classes or self.slices or self.claims or self.templates)

    def with_objects(self, objects: Iterable[Any]) -> "DeviceObjects":
        """A copy with more objects, each replacing the one of its kind and name (applied manifests)."""
        new = DeviceObjects(dict(self.classes), dict(self.slices), dict(self.claims), dict(self.templates))
        for obj in objects:
            new.add(obj)
        return new


# -- parsing -----------------------------------------------------------------------------------------

def _meta(raw: Mapping) -> Mapping:
    return mapping(raw.get("metadata"), "metadata")


def _name(raw: Mapping) -> str:
    name = string(_meta(raw).get("name"), "metadata.name")
    if not name:
        raise required("metadata.name", "name or generateName is required")
    return name


def _qualified(name: Any, path: str) -> str:
    """A qualified name as attributes, capacities and matchAttribute use them: [domain/]identifier,
    the identifier a C identifier of at most 64 characters."""
    name = string(name, path)
    domain, _, ident = name.rpartition("/")
    if not _C_IDENTIFIER.fullmatch(ident):
        raise invalid(path, ident, "a valid C identifier must start with alphabetic character or '_', followed by "
                                   "a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or "
                                   "'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')")
    if len(ident) > 64:
        raise Invalid(f"{path}: Too long: may not be more than 64 bytes")
    if domain:
        validation.dns_subdomain(domain, path)
    return name


def _selectors(raw: Any, path: str) -> tuple[str, ...]:
    out = []
    for p, sel in items(raw, path):
        cel = sel.get("cel")
        if cel is None:
            raise required(f"{p}.cel")
        expression = string(mapping(cel, f"{p}.cel").get("expression"), f"{p}.cel.expression")
        if not expression:
            raise required(f"{p}.cel.expression")
        out.append(expression)
    return tuple(out)


def _tolerations(raw: Any, path: str) -> tuple[Toleration, ...]:
    out = []
    for p, t in items(raw, path):
        operator = string(t.get("operator"), f"{p}.operator") or "Equal"
        if operator not in ("Equal", "Exists"):
            raise not_supported(f"{p}.operator", operator, ("Equal", "Exists"))
        effect = string(t.get("effect"), f"{p}.effect")
        if effect and effect not in TAINT_EFFECTS:
            raise not_supported(f"{p}.effect", effect, TAINT_EFFECTS)
        out.append(Toleration(string(t.get("key"), f"{p}.key"), operator, string(t.get("value"), f"{p}.value"),
                              effect))
    return tuple(out)


def _exact(raw: Mapping, name: str, path: str, sub: bool) -> ExactRequest:
    """An ExactDeviceRequest (or DeviceSubRequest) with the API server's defaults: ExactCount, count 1."""
    device_class = string(raw.get("deviceClassName"), f"{path}.deviceClassName")
    if not device_class:
        raise required(f"{path}.deviceClassName")
    validation.dns_subdomain(device_class, f"{path}.deviceClassName")
    mode = string(raw.get("allocationMode"), f"{path}.allocationMode") or EXACT_COUNT
    count = integer(raw.get("count"), f"{path}.count")
    if mode == EXACT_COUNT:
        count = 1 if count is None else count
        if count <= 0:
            raise invalid(f"{path}.count", count, "must be greater than zero")
    elif mode == ALL:
        if count:
            raise invalid(f"{path}.count", count, "must not be specified when allocationMode is 'All'")
        count = 0
    else:
        raise not_supported(f"{path}.allocationMode", mode, ALLOCATION_MODES)
    admin = raw.get("adminAccess")
    if admin is not None and not isinstance(admin, bool):
        raise validation.wrong_type(f"{path}.adminAccess", admin, "boolean")
    return ExactRequest(name, device_class, _selectors(raw.get("selectors"), f"{path}.selectors"), mode, count,
                        None if sub else admin, _tolerations(raw.get("tolerations"), f"{path}.tolerations"))


def _request(raw: Mapping, path: str, beta1: bool) -> DeviceRequest:
    name = string(raw.get("name"), f"{path}.name")
    if not name:
        raise required(f"{path}.name")
    alternatives = []
    for p, sub in items(raw.get("firstAvailable"), f"{path}.firstAvailable"):
        sub_name = string(sub.get("name"), f"{p}.name")
        if not sub_name:
            raise required(f"{p}.name")
        alternatives.append(_exact(sub, sub_name, p, sub=True))
    exact_raw = raw if beta1 else raw.get("exactly")
    has_exact = bool(raw.get("deviceClassName")) if beta1 else exact_raw is not None
    if alternatives and has_exact:
        raise forbidden(path, "exactly one of `exactly` or `firstAvailable` is required, not both")
    if not alternatives and not has_exact:
        raise required(path, "exactly one of `exactly` or `firstAvailable` is required")
    if alternatives:
        return DeviceRequest(name, None, tuple(alternatives))
    exact_path = path if beta1 else f"{path}.exactly"
    return DeviceRequest(name, _exact(mapping(exact_raw, exact_path), name, exact_path, sub=False))


def claim_spec(raw: Any, path: str, api_version: str) -> ClaimSpec:
    """A ResourceClaimSpec: requests (unique names) and constraints naming them."""
    devices = mapping(mapping(raw, path).get("devices"), f"{path}.devices")
    beta1 = api_version == V1BETA1
    requests = []
    for p, r in items(devices.get("requests"), f"{path}.devices.requests"):
        request = _request(r, p, beta1)
        if any(x.name == request.name for x in requests):
            raise Invalid(f"{p}.name: Duplicate value: {validation._shown(request.name)}")
        requests.append(request)
    known = {r.name for r in requests} | {f"{r.name}/{s.name}" for r in requests for s in r.first_available}
    constraints = []
    for p, c in items(devices.get("constraints"), f"{path}.devices.constraints"):
        names = tuple(string(n, f"{p}.requests[{i}]") for i, n in enumerate(sequence(c.get("requests"),
                                                                                    f"{p}.requests")))
        for i, n in enumerate(names):
            if n not in known:
                raise invalid(f"{p}.requests[{i}]", n, "must be the name of a request in the claim or the name of "
                                                       "a request and a subrequest separated by '/'")
        attribute = c.get("matchAttribute")
        if attribute is None:
            raise required(p, "exactly one constraint must be specified")
        constraints.append(Constraint(names, _qualified(attribute, f"{p}.matchAttribute")))
    return ClaimSpec(tuple(requests), tuple(constraints))


def _attribute(raw: Any, path: str) -> AttributeValue:
    value = mapping(raw, path)
    present = [k for k in ("int", "bool", "string", "version") if value.get(k) is not None]
    if len(present) != 1:
        raise invalid(path, value, "exactly one value must be specified")
    kind = present[0]
    v = value[kind]
    if kind == "int":
        return integer(v, f"{path}.int")
    if kind == "bool":
        if not isinstance(v, bool):
            raise validation.wrong_type(f"{path}.bool", v, "boolean")
        return v
    text = string(v, f"{path}.{kind}")
    if kind == "version":
        if not _SEMVER.match(text):
            raise invalid(f"{path}.version", text, "must be a string compatible with semver.org spec 2.0.0")
        return Version(text)
    return text


def _device(raw: Mapping, path: str, beta1: bool) -> Device:
    name = string(raw.get("name"), f"{path}.name")
    if not name:
        raise required(f"{path}.name")
    body_path = f"{path}.basic" if beta1 else path
    body = mapping(raw.get("basic"), body_path) if beta1 else raw
    attributes = {_qualified(k, f"{body_path}.attributes"): _attribute(v, f"{body_path}.attributes[{k}]")
                  for k, v in mapping(body.get("attributes"), f"{body_path}.attributes").items()}
    capacity, text = {}, {}
    for k, v in mapping(body.get("capacity"), f"{body_path}.capacity").items():
        key = _qualified(k, f"{body_path}.capacity")
        raw_value = mapping(v, f"{body_path}.capacity[{k}]").get("value")
        if raw_value is None:
            raise required(f"{body_path}.capacity[{k}].value")
        capacity[key] = validation.quantity(raw_value, f"{body_path}.capacity[{k}].value")
        text[key] = str(raw_value)
    taints = []
    for p, t in items(body.get("taints"), f"{body_path}.taints"):
        effect = string(t.get("effect"), f"{p}.effect")
        if effect not in TAINT_EFFECTS:
            raise not_supported(f"{p}.effect", effect, TAINT_EFFECTS)
        taints.append(DeviceTaint(string(t.get("key"), f"{p}.key"), string(t.get("value"), f"{p}.value"), effect))
    return Device(name, attributes, capacity, text, tuple(taints), bool(body.get("consumesCounters")),
                  bool(body.get("bindingConditions")))


def _node_selector(raw: Any, path: str) -> tuple[Mapping, ...] | None:
    if raw is None:
        return None
    terms = items(mapping(raw, path).get("nodeSelectorTerms"), f"{path}.nodeSelectorTerms")
    for p, term in terms:
        node_selector_term(term, p)
    return tuple(term for _, term in terms)


def device_class(raw: Mapping, source: str = "") -> DeviceClass:
    spec = mapping(raw.get("spec"), "spec")
    return DeviceClass(_name(raw), _selectors(spec.get("selectors"), "spec.selectors"), source)


def resource_slice(raw: Mapping, source: str = "") -> ResourceSlice:
    name = _name(raw)
    beta1 = raw.get("apiVersion") == V1BETA1
    spec = mapping(raw.get("spec"), "spec")
    driver = string(spec.get("driver"), "spec.driver")
    if not driver:
        raise required("spec.driver")
    pool = mapping(spec.get("pool"), "spec.pool")
    pool_name = string(pool.get("name"), "spec.pool.name")
    if not pool_name:
        raise required("spec.pool.name")
    generation = integer(pool.get("generation"), "spec.pool.generation") or 0
    count = integer(pool.get("resourceSliceCount"), "spec.pool.resourceSliceCount")
    if count is None or count <= 0:
        raise invalid("spec.pool.resourceSliceCount", count or 0, "must be greater than zero")
    node_name = string(spec.get("nodeName"), "spec.nodeName")
    selector = _node_selector(spec.get("nodeSelector"), "spec.nodeSelector")
    all_nodes = spec.get("allNodes") is True
    per_device = spec.get("perDeviceNodeSelection") is True
    chosen = [bool(node_name), selector is not None, all_nodes, per_device]
    if sum(chosen) != 1 and not spec.get("sharedCounters"):
        raise required("spec", "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` "
                               "is required")
    devices = []
    for p, d in items(spec.get("devices"), "spec.devices"):
        device = _device(d, p, beta1)
        devices.append(device)
    return ResourceSlice(name, driver, pool_name, generation, count, node_name, selector, all_nodes, per_device,
                         bool(spec.get("sharedCounters")), tuple(devices), source)


def _allocation(status: Mapping) -> Allocation | None:
    raw = status.get("allocation")
    if raw is None:
        return None
    allocation = mapping(raw, "status.allocation")
    results = []
    for p, r in items(mapping(allocation.get("devices"), "status.allocation.devices").get("results"),
                      "status.allocation.devices.results"):
        fields = [string(r.get(k), f"{p}.{k}") for k in ("request", "driver", "pool", "device")]
        for k, value in zip(("request", "driver", "pool", "device"), fields):
            if not value:
                raise required(f"{p}.{k}")
        results.append(DeviceResult(*fields, admin_access=r.get("adminAccess") is True))
    return Allocation(tuple(results), _node_selector(allocation.get("nodeSelector"), "status.allocation.nodeSelector"))


def _owner_pod_uid(raw: Mapping) -> str:
    for p, ref in items(_meta(raw).get("ownerReferences"), "metadata.ownerReferences"):
        if ref.get("controller") is True and ref.get("kind") == "Pod" and ref.get("apiVersion") == "v1":
            return string(ref.get("uid"), f"{p}.uid")
    return ""


def resource_claim(raw: Mapping, source: str = "") -> ResourceClaim:
    name = _name(raw)
    meta = _meta(raw)
    spec = claim_spec(raw.get("spec"), "spec", raw.get("apiVersion") or "")
    status = mapping(raw.get("status"), "status")
    reserved = []
    for p, ref in items(status.get("reservedFor"), "status.reservedFor"):
        reserved.append(Consumer(string(ref.get("resource"), f"{p}.resource"), string(ref.get("name"), f"{p}.name"),
                                 string(ref.get("uid"), f"{p}.uid")))
    if len(reserved) > RESERVED_FOR_MAX:
        raise Invalid(f"status.reservedFor: Too many: {len(reserved)}: must have at most {RESERVED_FOR_MAX} items")
    allocation = _allocation(status)
    if reserved and allocation is None:
        raise forbidden("status.reservedFor", "may not be specified when `allocated` is not set")
    return ResourceClaim(meta.get("namespace") or "default", name, str(meta.get("uid") or ""), spec, allocation,
                         tuple(reserved), bool(meta.get("deletionTimestamp")), _owner_pod_uid(raw), source)


def resource_claim_template(raw: Mapping, source: str = "") -> ResourceClaimTemplate:
    name = _name(raw)
    meta = _meta(raw)
    template = mapping(mapping(raw.get("spec"), "spec"), "spec")
    template_meta = mapping(template.get("metadata"), "spec.metadata")
    spec = claim_spec(template.get("spec"), "spec.spec", raw.get("apiVersion") or "")
    return ResourceClaimTemplate(meta.get("namespace") or "default", name, spec,
                                 dict(validation.string_map(template_meta.get("labels"), "spec.metadata.labels")),
                                 dict(validation.string_map(template_meta.get("annotations"),
                                                            "spec.metadata.annotations")), source)


# The records DRA objects parse into.
DRA_RECORDS = (DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate)

PARSERS = {
    DEVICE_CLASS: device_class,
    RESOURCE_SLICE: resource_slice,
    RESOURCE_CLAIM: resource_claim,
    CLAIM_TEMPLATE: resource_claim_template,
}


def _object(kind: str, raw: Mapping) -> str:
    meta = raw.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else ""
    namespace = meta.get("namespace") if isinstance(meta, Mapping) else ""
    name = name if isinstance(name, str) else ""
    shown = f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name
    return f'{kind} "{shown}"'


def reads(kind: str, api_version: Any) -> bool:
    """Whether kplan reads this object: a DRA kind in one of the versions it converts."""
    return kind in PARSERS and api_version in API_VERSIONS


def parse(kind: str, raw: Mapping, where: str) -> Any:
    """Builds the record of a DRA object; one the API server would refuse is an InputError naming the
    file, the object and the field."""
    try:
        return PARSERS[kind](raw, where)
    except Invalid as err:
        raise InputError(f"{_object(kind, raw)}: {err}", where) from None
