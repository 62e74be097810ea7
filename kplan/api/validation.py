"""What the API server would refuse: the fields scheduling reads, validated as upstream does.

kplan answers for manifests written by hand, so a Pod, workload or Node that `kubectl apply`
would reject is an input error, not an answer. The rules and texts follow kubernetes
pkg/apis/core/validation/validation.go (ValidatePodSpec, ValidateResourceRequirements,
validateTaints/validateTolerations, ValidateNodeSelector(Requirement), validateAffinity,
validateTopologySpreadConstraints, validateRestartPolicy), apimachinery's metav1 validation
(ValidateLabelSelector, ValidateLabels) and field.Error's formatting: one line per problem,
`<field path>: <type>: <value>: <detail>`, the first problem found. A field of the wrong JSON
type (a map where a list belongs) reads as the API server's OpenAPI check words it.

Only candidates are validated (manifests to place, nodes added with --add-node): a snapshot's
objects were admitted by their API server already. A pod without containers stays accepted
(kube-scheduler's own tests place such pods).
"""
from __future__ import annotations

import re
from fractions import Fraction
from typing import Any, Mapping, Sequence

from kplan.api.node_selectors import _DNS1123_SUBDOMAIN, _SUBDOMAIN_MSG, _label_value_errors, _qualified_name_errors
from kplan.api.quantity import InvalidQuantity, parse_quantity
from kplan.errors import InputError

QUANTITY_REGEX_MSG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_INT64_MAX = (1 << 63) - 1
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
              "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
              "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Equal", "Exists")
WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
NODE_INCLUSION_POLICIES = ("Ignore", "Honor")
RESTART_POLICIES = ("Always", "OnFailure", "Never")
PROTOCOLS = ("SCTP", "TCP", "UDP")
# The restart policies the controllers accept in their pod templates (ValidatePodTemplateSpecForReplicaSet…).
TEMPLATE_RESTART_POLICIES = {"Deployment": ("Always",), "ReplicaSet": ("Always",), "StatefulSet": ("Always",),
                             "DaemonSet": ("Always",), "Job": ("OnFailure", "Never")}
TEMPLATE_PATHS = {"CronJob": "spec.jobTemplate.spec.template"}  # a pod template not at spec.template
# The controllers whose templates may not set activeDeadlineSeconds, as their errors name them.
ACTIVE_DEADLINE_FORBIDDEN = {"Deployment": "ReplicaSet", "ReplicaSet": "ReplicaSet", "StatefulSet": "StatefulSet",
                             "DaemonSet": "DaemonSet"}
# standardResources and standardContainerResources (pkg/apis/core/helper), hugepages-* aside.
CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
STANDARD_RESOURCES = CONTAINER_RESOURCES + (
    "requests.cpu", "requests.memory", "requests.ephemeral-storage", "limits.cpu", "limits.memory",
    "limits.ephemeral-storage", "pods", "services", "replicationcontrollers", "resourcequotas", "secrets",
    "persistentvolumeclaims", "configmaps", "storage", "requests.storage", "services.nodeports",
    "services.loadbalancers")
# integerResources (pkg/apis/core/helper): counted in whole units, as extended resources are.
INTEGER_RESOURCES = ("pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
                     "persistentvolumeclaims", "services.nodeports", "services.loadbalancers")


class Invalid(Exception):
    """One field error, already worded as field.Error.Error() words it."""


# -- field.Error wording ---------------------------------------------------------------------------

def _shown(value: Any) -> str:
    """The bad value as field.Error prints it: strings quoted (%q), numbers and bools bare."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if value is None:
        return "null"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return _go_struct(value)


def _go_struct(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}:{_shown(v)}" for k, v in value.items()) + "}"
    return "[" + " ".join(_shown(v) for v in value) + "]" if isinstance(value, (list, tuple)) else repr(value)


def invalid(path: str, value: Any, detail: str) -> Invalid:
    return Invalid(f"{path}: Invalid value: {_shown(value)}: {detail}")


def required(path: str, detail: str = "") -> Invalid:
    return Invalid(f"{path}: Required value" + (f": {detail}" if detail else ""))


def forbidden(path: str, detail: str) -> Invalid:
    return Invalid(f"{path}: Forbidden: {detail}")


def not_supported(path: str, value: Any, supported: Sequence[str]) -> Invalid:
    return Invalid(f"{path}: Unsupported value: {_shown(value)}: supported values: "
                   + ", ".join(f'"{s}"' for s in supported))


def _json_type(value: Any) -> str:
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "null" if value is None else "string"


def wrong_type(path: str, value: Any, want: str) -> Invalid:
    """The OpenAPI schema check's words: `spec.containers: Invalid value: "object": spec.containers in
    body must be of type array: "object"`."""
    got = _json_type(value)
    return Invalid(f'{path}: Invalid value: "{got}": {path} in body must be of type {want}: "{got}"')


# -- shapes ----------------------------------------------------------------------------------------

def mapping(value: Any, path: str) -> Mapping:
    """The value as a map (None: empty); anything else is a type error."""
    if value.__class__ is dict:  # the common case, without the ABC check
        return value
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise wrong_type(path, value, "object")
    return value


def sequence(value: Any, path: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise wrong_type(path, value, "array")
    return value


def items(value: Any, path: str) -> list[tuple[str, Mapping]]:
    """The entries of a list of objects, each with its indexed path."""
    out = []
    for i, item in enumerate(sequence(value, path)):
        if item.__class__ is not dict and not isinstance(item, Mapping):
            raise wrong_type(f"{path}[{i}]", item, "object")
        out.append((f"{path}[{i}]", item))
    return out


def string(value: Any, path: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise wrong_type(path, value, "string")
    return value


def integer(value: Any, path: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise wrong_type(path, value, "integer")
    return value


def string_map(value: Any, path: str) -> Mapping[str, str]:
    m = mapping(value, path)
    for k, v in m.items():
        if not isinstance(v, str):
            raise wrong_type(f"{path}[{k}]", v, "string")
    return m


# -- names, labels ---------------------------------------------------------------------------------

def label_name(key: Any, path: str) -> None:
    """ValidateLabelName: a qualified name."""
    key = string(key, path)
    for msg in _qualified_name_errors(key):
        raise invalid(path, key, msg)


def label_value(value: str, path: str) -> None:
    for msg in _label_value_errors(value):
        raise invalid(path, value, msg)


def labels(value: Any, path: str) -> None:
    """ValidateLabels: every key a qualified name, every value a label value (the path names the map)."""
    for k, v in string_map(value, path).items():
        label_name(k, path)
        label_value(v, path)


def dns_subdomain(name: str, path: str) -> None:
    if len(name) > 253:
        raise invalid(path, name, "must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.match(name):
        raise invalid(path, name, _SUBDOMAIN_MSG)


def dns_label(name: str, path: str) -> None:
    """IsDNS1123Label."""
    if len(name) > 63:
        raise invalid(path, name, "must be no more than 63 characters")
    if not _DNS1123_LABEL.match(name):
        raise invalid(path, name, _LABEL_MSG)


def metadata(obj: Mapping, generate_name: bool, dns_label_name: bool = False) -> None:
    """ValidateObjectMeta for what kplan reads: name (or generateName; a DNS label where the kind asks
    for one, a DNS subdomain otherwise), namespace, labels."""
    meta = mapping(obj.get("metadata"), "metadata")
    name = string(meta.get("name"), "metadata.name")
    generated = string(meta.get("generateName"), "metadata.generateName")
    if not name and not (generate_name and generated):
        raise required("metadata.name", "name or generateName is required")
    if name:
        (dns_label if dns_label_name else dns_subdomain)(name, "metadata.name")
    elif generated:  # a prefix: validated with a trailing dash masked, as upstream does
        dns_subdomain(generated[:-1] if generated.endswith("-") and len(generated) > 1 else generated,
                      "metadata.generateName")
    namespace = string(meta.get("namespace"), "metadata.namespace")
    if namespace:
        dns_label(namespace, "metadata.namespace")
    labels(meta.get("labels"), "metadata.labels")
    string_map(meta.get("annotations"), "metadata.annotations")
    owner_references(meta.get("ownerReferences"), "metadata.ownerReferences")


def owner_references(raw: Any, path: str) -> None:
    """ValidateOwnerReferences: apiVersion, kind, name and uid set, at most one controller."""
    controller_name = ""
    for p, ref in items(raw, path):
        for name, what in (("apiVersion", "version"), ("kind", "kind"), ("name", "name"), ("uid", "uid")):
            value = string(ref.get(name), f"{p}.{name}")
            if not (value.rsplit("/", 1)[-1] if name == "apiVersion" else value):
                raise invalid(f"{p}.{name}", value, f"{what} must not be empty")
        controller = ref.get("controller")
        if controller is not None and not isinstance(controller, bool):
            raise wrong_type(f"{p}.controller", controller, "boolean")
        if controller and controller_name:
            raise invalid(path, f"{ref['kind']}/{ref['name']}", "Only one reference can have Controller set to "
                          f'true. Found "true" in references for {controller_name} and {ref["kind"]}/{ref["name"]}')
        if controller:
            controller_name = f"{ref['kind']}/{ref['name']}"


# -- quantities and resources ----------------------------------------------------------------------

def quantity(raw: Any, path: str) -> Fraction:
    """A quantity the API server can decode and kube-scheduler can count (int64 milli-units)."""
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        raise invalid(path, raw if isinstance(raw, str) else _json_type(raw), QUANTITY_REGEX_MSG)
    try:
        q = parse_quantity(raw)
    except InvalidQuantity:
        raise invalid(path, str(raw), QUANTITY_REGEX_MSG) from None
    if abs(q) * 1000 > _INT64_MAX:
        raise invalid(path, str(raw), "must be no more than 9223372036854775 (kube-scheduler counts every "
                                      "quantity in 64-bit milli-units)")
    return q


def _native(name: str) -> bool:
    """helper.IsNativeResource: no domain, or a kubernetes.io one."""
    return "/" not in name or "kubernetes.io/" in name


def _extended(name: str) -> bool:
    """helper.IsExtendedResourceName: not native, not `requests.`, and `requests.<name>` a qualified name."""
    return not _native(name) and not name.startswith("requests.") and not _qualified_name_errors(f"requests.{name}")


def _overcommit_allowed(name: str) -> bool:
    """helper.IsOvercommitAllowed: native resources but not hugepages."""
    return _native(name) and not name.startswith("hugepages-")


def container_resource_name(name: str, path: str) -> None:
    """validateResourceName and validateContainerResourceName."""
    for msg in _qualified_name_errors(name):
        raise invalid(path, name, msg)
    if "/" not in name:
        if name not in STANDARD_RESOURCES and not name.startswith("hugepages-"):
            raise invalid(path, name, "must be a standard resource type or fully qualified")
        if name not in CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            raise invalid(path, name, "must be a standard resource for containers")
    elif not _native(name) and not _extended(name):
        raise invalid(path, name, "doesn't follow extended resource name standard")


def resource_list(raw: Any, path: str, container: bool = False) -> dict[str, tuple[Any, Fraction]]:
    """A ResourceList: each quantity valid and not negative, whole for extended resources and pods
    (ValidateResourceQuantityValue); a container's resource names as validateContainerResourceName."""
    out = {}
    for name, q in mapping(raw, path).items():
        key = f"{path}[{name}]"
        string(name, key)
        if container:
            container_resource_name(name, key)
        amount = quantity(q, key)
        if amount < 0:
            raise invalid(key, str(q), "must be greater than or equal to 0")
        if (_extended(name) or name in INTEGER_RESOURCES) and amount.denominator != 1:
            raise invalid(key, str(q), "must be an integer")
        out[name] = (q, amount)
    return out


def resource_requirements(raw: Any, path: str, container: bool = False) -> None:
    """ValidateResourceRequirements: limits and requests valid, each request at most its limit, and a
    resource that cannot be overcommitted (extended, hugepages) requested exactly at its limit."""
    res = mapping(raw, path)
    limits = resource_list(res.get("limits"), f"{path}.limits", container)
    requests = resource_list(res.get("requests"), f"{path}.requests", container)
    for name, (q, amount) in requests.items():
        limit = limits.get(name)
        if limit is None:
            if not _overcommit_allowed(name):
                raise required(f"{path}.limits", "Limit must be set for non overcommitable resources")
            continue
        if amount != limit[1] and not _overcommit_allowed(name):
            raise invalid(f"{path}.requests", str(q), f"must be equal to {name} limit of {limit[0]}")
        if amount > limit[1]:
            raise invalid(f"{path}.requests", str(q), f"must be less than or equal to {name} limit of {limit[0]}")


# -- containers ------------------------------------------------------------------------------------

def ports(raw: Any, path: str) -> None:
    for p, port in items(raw, path):
        for name in ("containerPort", "hostPort"):
            number = integer(port.get(name), f"{p}.{name}")
            if number is not None and not 0 < number <= 65535 and not (name == "hostPort" and number == 0):
                raise invalid(f"{p}.{name}", number, "must be between 1 and 65535, inclusive")
        protocol = string(port.get("protocol"), f"{p}.protocol")
        if protocol and protocol not in PROTOCOLS:
            raise not_supported(f"{p}.protocol", protocol, PROTOCOLS)
        string(port.get("hostIP"), f"{p}.hostIP")


def container(c: Mapping, path: str, init: bool) -> None:
    string(c.get("name"), f"{path}.name")
    string(c.get("image"), f"{path}.image")
    resource_requirements(c.get("resources"), f"{path}.resources", container=True)
    ports(c.get("ports"), f"{path}.ports")
    policy = string(c.get("restartPolicy"), f"{path}.restartPolicy")
    if policy and init and policy != "Always":
        raise not_supported(f"{path}.restartPolicy", policy, ("Always",))


# -- taints and tolerations ------------------------------------------------------------------------

def taint_effect(effect: str, path: str, allow_empty: bool) -> None:
    if not effect:
        if not allow_empty:
            raise required(path)
        return
    if effect not in TAINT_EFFECTS:
        raise not_supported(path, effect, TAINT_EFFECTS)


def taints(raw: Any, path: str) -> None:
    """validateNodeTaints: key, value, effect, and unique by key and effect."""
    seen = set()
    for p, t in items(raw, path):
        key = string(t.get("key"), f"{p}.key")
        label_name(key, f"{p}.key")
        value = string(t.get("value"), f"{p}.value")
        for msg in _label_value_errors(value):
            raise invalid(f"{p}.value", value, msg)
        effect = string(t.get("effect"), f"{p}.effect")
        taint_effect(effect, f"{p}.effect", allow_empty=False)
        if (key, effect) in seen:
            raise Invalid(f"{p}: Duplicate value: core.Taint{{Key:{_shown(key)}, Value:{_shown(value)}, "
                          f"Effect:{_shown(effect)}, TimeAdded:<nil>}}: taints must be unique by key and effect pair")
        seen.add((key, effect))


def _toleration_struct(t: Mapping) -> str:
    seconds = t.get("tolerationSeconds")
    shown = "(*int64)(nil)" if seconds is None else f"(*int64)({seconds})"
    return (f"core.Toleration{{Key:{_shown(t.get('key') or '')}, Operator:{_shown(t.get('operator') or '')}, "
            f"Value:{_shown(t.get('value') or '')}, Effect:{_shown(t.get('effect') or '')}, "
            f"TolerationSeconds:{shown}}}")


def tolerations(raw: Any, path: str) -> None:
    """validateTolerations."""
    for p, t in items(raw, path):
        key = string(t.get("key"), f"{p}.key")
        if key:
            label_name(key, f"{p}.key")
        operator = string(t.get("operator"), f"{p}.operator")
        value = string(t.get("value"), f"{p}.value")
        effect = string(t.get("effect"), f"{p}.effect")
        seconds = integer(t.get("tolerationSeconds"), f"{p}.tolerationSeconds")
        if not key and operator != "Exists":
            raise invalid(f"{p}.operator", operator, 'operator must be Exists when `key` is empty, which means '
                                                     '"match all values and all keys"')
        if seconds is not None and effect != "NoExecute":
            raise invalid(f"{p}.effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set")
        if operator in ("Equal", ""):
            msgs = _label_value_errors(value)
            if msgs:
                raise invalid(f"{p}.operator", value, ";".join(msgs))
        elif operator == "Exists":
            if value:
                raise Invalid(f"{p}.operator: Invalid value: {_toleration_struct(t)}: "
                              "value must be empty when `operator` is 'Exists'")
        else:
            raise not_supported(f"{p}.operator", operator, TOLERATION_OPERATORS)
        taint_effect(effect, f"{p}.effect", allow_empty=True)


# -- node selectors and affinity -------------------------------------------------------------------

def _string_list(raw: Any, path: str) -> list[str]:
    values = sequence(raw, path)
    for i, v in enumerate(values):
        string(v, f"{path}[{i}]")
    return values


def node_selector_requirement(req: Mapping, path: str) -> None:
    """ValidateNodeSelectorRequirement."""
    operator = string(req.get("operator"), f"{path}.operator")
    values = _string_list(req.get("values"), f"{path}.values")
    if operator in ("In", "NotIn"):
        if not values:
            raise required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'")
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            raise forbidden(f"{path}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            raise required(f"{path}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'")
    else:
        raise invalid(f"{path}.operator", operator, "not a valid selector operator")
    label_name(req.get("key"), f"{path}.key")


def node_field_selector_requirement(req: Mapping, path: str) -> None:
    """ValidateNodeFieldSelectorRequirement: metadata.name In/NotIn exactly one value."""
    operator = string(req.get("operator"), f"{path}.operator")
    values = _string_list(req.get("values"), f"{path}.values")
    if operator not in ("In", "NotIn"):
        raise invalid(f"{path}.operator", operator, "not a valid selector operator")
    if len(values) != 1:
        raise required(f"{path}.values", "must be only one value when `operator` is 'In' or 'NotIn' for node "
                                         "field selector")
    key = string(req.get("key"), f"{path}.key")
    if key != "metadata.name":
        raise invalid(f"{path}.key", key, "not a valid field selector key")


def node_selector_term(term: Mapping, path: str) -> None:
    for p, req in items(term.get("matchExpressions"), f"{path}.matchExpressions"):
        node_selector_requirement(req, p)
    for p, req in items(term.get("matchFields"), f"{path}.matchFields"):
        node_field_selector_requirement(req, p)


def node_affinity(raw: Any, path: str) -> None:
    na = mapping(raw, path)
    req_path = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    if na.get("requiredDuringSchedulingIgnoredDuringExecution") is not None:
        selector = mapping(na["requiredDuringSchedulingIgnoredDuringExecution"], req_path)
        terms = items(selector.get("nodeSelectorTerms"), f"{req_path}.nodeSelectorTerms")
        if not terms:
            raise required(f"{req_path}.nodeSelectorTerms", "must have at least one node selector term")
        for p, term in terms:
            node_selector_term(term, p)
    for p, pref in items(na.get("preferredDuringSchedulingIgnoredDuringExecution"),
                         f"{path}.preferredDuringSchedulingIgnoredDuringExecution"):
        weight(pref.get("weight"), f"{p}.weight")
        node_selector_term(mapping(pref.get("preference"), f"{p}.preference"), f"{p}.preference")


def weight(raw: Any, path: str) -> None:
    w = integer(raw, path)
    if w is None or not 1 <= w <= 100:
        raise invalid(path, w or 0, "must be in the range 1-100")


# -- label selectors, pod affinity, spread ---------------------------------------------------------

def label_selector(raw: Any, path: str) -> None:
    """metav1 ValidateLabelSelector."""
    selector = mapping(raw, path)
    labels(selector.get("matchLabels"), f"{path}.matchLabels")
    for p, req in items(selector.get("matchExpressions"), f"{path}.matchExpressions"):
        operator = string(req.get("operator"), f"{p}.operator")
        values = _string_list(req.get("values"), f"{p}.values")
        if operator in ("In", "NotIn"):
            if not values:
                raise required(f"{p}.values", "must be specified when `operator` is 'In' or 'NotIn'")
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                raise forbidden(f"{p}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
        else:
            raise invalid(f"{p}.operator", operator, "not a valid selector operator")
        label_name(req.get("key"), f"{p}.key")
        for i, v in enumerate(values):
            label_value(v, f"{p}.values[{i}]")


def pod_affinity_term(term: Mapping, path: str) -> None:
    label_selector(term.get("labelSelector"), f"{path}.labelSelector")
    label_selector(term.get("namespaceSelector"), f"{path}.namespaceSelector")
    _string_list(term.get("namespaces"), f"{path}.namespaces")
    key = string(term.get("topologyKey"), f"{path}.topologyKey")
    if not key:
        raise required(f"{path}.topologyKey", "can not be empty")
    label_name(key, f"{path}.topologyKey")
    for name in ("matchLabelKeys", "mismatchLabelKeys"):
        for i, k in enumerate(_string_list(term.get(name), f"{path}.{name}")):
            label_name(k, f"{path}.{name}[{i}]")


def pod_affinity(raw: Any, path: str) -> None:
    pa = mapping(raw, path)
    for p, term in items(pa.get("requiredDuringSchedulingIgnoredDuringExecution"),
                         f"{path}.requiredDuringSchedulingIgnoredDuringExecution"):
        pod_affinity_term(term, p)
    for p, pref in items(pa.get("preferredDuringSchedulingIgnoredDuringExecution"),
                         f"{path}.preferredDuringSchedulingIgnoredDuringExecution"):
        weight(pref.get("weight"), f"{p}.weight")
        pod_affinity_term(mapping(pref.get("podAffinityTerm"), f"{p}.podAffinityTerm"), f"{p}.podAffinityTerm")


def affinity(raw: Any, path: str) -> None:
    aff = mapping(raw, path)
    node_affinity(aff.get("nodeAffinity"), f"{path}.nodeAffinity")
    pod_affinity(aff.get("podAffinity"), f"{path}.podAffinity")
    pod_affinity(aff.get("podAntiAffinity"), f"{path}.podAntiAffinity")


def topology_spread_constraints(raw: Any, path: str) -> None:
    """validateTopologySpreadConstraints (one constraint per topologyKey and whenUnsatisfiable)."""
    seen = set()
    for p, c in items(raw, path):
        skew = integer(c.get("maxSkew"), f"{p}.maxSkew")
        if skew is None or skew <= 0:
            raise invalid(f"{p}.maxSkew", skew or 0, "must be greater than zero")
        key = string(c.get("topologyKey"), f"{p}.topologyKey")
        if not key:
            raise required(f"{p}.topologyKey", "can not be empty")
        label_name(key, f"{p}.topologyKey")
        when = string(c.get("whenUnsatisfiable"), f"{p}.whenUnsatisfiable")
        if when not in WHEN_UNSATISFIABLE:
            raise not_supported(f"{p}.whenUnsatisfiable", when, WHEN_UNSATISFIABLE)
        if (key, when) in seen:
            raise Invalid(f'{p}: Duplicate value: "{{{key}, {when}}}"')
        seen.add((key, when))
        domains = integer(c.get("minDomains"), f"{p}.minDomains")
        if domains is not None and domains <= 0:
            raise invalid(f"{p}.minDomains", domains, "must be greater than zero")
        if domains is not None and when != "DoNotSchedule":
            raise invalid(f"{p}.minDomains", domains, "can only use minDomains if whenUnsatisfiable=DoNotSchedule, "
                                                      f"not {when}")
        for name in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            policy = string(c.get(name), f"{p}.{name}")
            if policy and policy not in NODE_INCLUSION_POLICIES:
                raise not_supported(f"{p}.{name}", policy, NODE_INCLUSION_POLICIES)
        label_selector(c.get("labelSelector"), f"{p}.labelSelector")
        for i, k in enumerate(_string_list(c.get("matchLabelKeys"), f"{p}.matchLabelKeys")):
            label_name(k, f"{p}.matchLabelKeys[{i}]")


# -- pod spec, pod, workloads, nodes ---------------------------------------------------------------

def pod_spec(raw: Any, path: str) -> None:
    """ValidatePodSpec for the fields scheduling reads."""
    spec = mapping(raw, path)
    for name, init in (("initContainers", True), ("containers", False)):
        for p, c in items(spec.get(name), f"{path}.{name}"):
            container(c, p, init)
    policy = string(spec.get("restartPolicy"), f"{path}.restartPolicy")
    if policy and policy not in RESTART_POLICIES:
        raise not_supported(f"{path}.restartPolicy", policy, RESTART_POLICIES)
    if spec.get("resources") is not None:
        resource_requirements(spec.get("resources"), f"{path}.resources")
    resource_list(spec.get("overhead"), f"{path}.overhead")
    labels(spec.get("nodeSelector"), f"{path}.nodeSelector")
    affinity(spec.get("affinity"), f"{path}.affinity")
    tolerations(spec.get("tolerations"), f"{path}.tolerations")
    topology_spread_constraints(spec.get("topologySpreadConstraints"), f"{path}.topologySpreadConstraints")
    for p, gate in items(spec.get("schedulingGates"), f"{path}.schedulingGates"):
        name = string(gate.get("name"), f"{p}.name")
        if not name:
            raise required(f"{p}.name")
        label_name(name, f"{p}.name")
    for field in ("nodeName", "schedulerName", "priorityClassName", "preemptionPolicy"):
        string(spec.get(field), f"{path}.{field}")
    integer(spec.get("priority"), f"{path}.priority")


# -- workloads (pkg/apis/apps/validation, pkg/apis/batch/validation) ------------------------------

def _go_string_map(labels: Mapping | None) -> str:
    """A map[string]string as the API server's errors print it (%#v): keys sorted, nil apart."""
    if labels is None:
        return "map[string]string(nil)"
    return "map[string]string{" + ", ".join(f"{_shown(k)}:{_shown(v)}" for k, v in sorted(labels.items())) + "}"


def _selector_text(selector: Mapping) -> str:
    """A *metav1.LabelSelector as the API server's errors print it (its generated String())."""
    pairs = "".join(f"{k}: {v}," for k, v in sorted((selector.get("matchLabels") or {}).items()))
    requirements = "".join(
        f"LabelSelectorRequirement{{Key:{e.get('key') or ''},Operator:{e.get('operator') or ''},"
        f"Values:[{' '.join(e.get('values') or ())}],}}," for e in selector.get("matchExpressions") or ())
    return (f"&LabelSelector{{MatchLabels:map[string]string{{{pairs}}},"
            f"MatchExpressions:[]LabelSelectorRequirement{{{requirements}}},}}")


def non_negative(spec: Mapping, name: str, path: str) -> None:
    """ValidateNonnegativeField for spec.<name>."""
    value = integer(spec.get(name), f"{path}.{name}")
    if value is not None and value < 0:
        raise invalid(f"{path}.{name}", value, "must be greater than or equal to 0")


def workload_selector(spec: Mapping, path: str, what: str | None) -> None:
    """A selector the controller needs: required, valid, and not empty (`empty selector is invalid for
    <what>`; None: an empty one is valid, as for a Job's manual selector)."""
    if spec.get("selector") is None:
        raise required(f"{path}.selector")
    label_selector(spec.get("selector"), f"{path}.selector")
    empty_selector(spec, path, what)


def empty_selector(spec: Mapping, path: str, what: str | None) -> None:
    """`empty selector is invalid for <what>` for a selector of neither matchLabels nor matchExpressions."""
    selector = spec.get("selector")
    if what and selector is not None and not (selector.get("matchLabels") or selector.get("matchExpressions")):
        raise Invalid(f"{path}.selector: Invalid value: {_selector_text(selector)}: empty selector is invalid "
                      f"for {what}")


def template_labels_match(spec: Mapping, path: str) -> None:
    """The selector must select the pods of the template (a missing selector selects nothing)."""
    from kplan.api.label_selectors import parse_selector
    template = mapping(spec.get("template"), f"{path}.template")
    raw = mapping(template.get("metadata"), f"{path}.template.metadata").get("labels")
    pod_labels = string_map(raw, f"{path}.template.metadata.labels") if raw is not None else None
    if not parse_selector(spec.get("selector")).matches(pod_labels):
        raise Invalid(f"{path}.template.metadata.labels: Invalid value: {_go_string_map(pod_labels)}: "
                      "`selector` does not match template `labels`")


def pod_template(spec: Mapping, path: str, kind: str) -> None:
    """ValidatePodTemplateSpec (labels, pod spec), then the restart policies the controller of `kind`
    accepts (a template's restartPolicy defaults to Always) and, but for a Job, no activeDeadlineSeconds."""
    template = mapping(spec.get("template"), f"{path}.template")
    labels(mapping(template.get("metadata"), f"{path}.template.metadata").get("labels"),
           f"{path}.template.metadata.labels")
    pod = mapping(template.get("spec"), f"{path}.template.spec")
    pod_spec(pod, f"{path}.template.spec")
    policies = TEMPLATE_RESTART_POLICIES[kind]
    policy = string(pod.get("restartPolicy"), f"{path}.template.spec.restartPolicy") or "Always"
    if policy not in policies:
        raise not_supported(f"{path}.template.spec.restartPolicy", policy, policies)
    if kind in ACTIVE_DEADLINE_FORBIDDEN and pod.get("activeDeadlineSeconds") is not None:
        raise forbidden(f"{path}.template.spec.activeDeadlineSeconds",
                        f"activeDeadlineSeconds in {ACTIVE_DEADLINE_FORBIDDEN[kind]} is not Supported")


def replica_set_spec(spec: Mapping, kind: str) -> None:
    """ValidateDeploymentSpec and ValidateReplicaSetSpec (both say `deployment` of an empty selector)."""
    non_negative(spec, "replicas", "spec")
    workload_selector(spec, "spec", "deployment")
    template_labels_match(spec, "spec")
    pod_template(spec, "spec", kind)


def stateful_set_spec(spec: Mapping) -> None:
    """ValidateStatefulSetSpec: claim templates named as pod volumes, replicas, the governing Service's
    name (a DNS label, when given), the selector and the template."""
    seen: set[str] = set()
    for p, claim in items(spec.get("volumeClaimTemplates"), "spec.volumeClaimTemplates"):
        name = string(mapping(claim.get("metadata"), f"{p}.metadata").get("name"), f"{p}.metadata.name")
        if not name:
            raise required(f"{p}.metadata.name")
        dns_label(name, f"{p}.metadata.name")
        if name in seen:
            raise Invalid(f"{p}.metadata.name: Duplicate value: {_shown(name)}")
        seen.add(name)
    non_negative(spec, "replicas", "spec")
    service = string(spec.get("serviceName"), "spec.serviceName")
    if service:
        dns_label(service, "spec.serviceName")
    workload_selector(spec, "spec", "statefulset")
    template_labels_match(spec, "spec")
    pod_template(spec, "spec", "StatefulSet")


def daemon_set_spec(spec: Mapping) -> None:
    """ValidateDaemonSetSpec: apps/v1 defaults no selector, so a missing one matches no template."""
    if spec.get("selector") is not None:
        label_selector(spec.get("selector"), "spec.selector")
    template_labels_match(spec, "spec")
    empty_selector(spec, "spec", "daemonset")
    pod_template(spec, "spec", "DaemonSet")


def job_spec(spec: Mapping, path: str) -> None:
    """validateJobSpec: the counts and the template; a manual selector must select the template's pods
    (otherwise the API server generates it from the Job's uid)."""
    for name in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit"):
        non_negative(spec, name, path)
    pod_template(spec, path, "Job")
    if spec.get("manualSelector") is True:
        workload_selector(spec, path, None)
        template_labels_match(spec, path)


def cron_job_spec(spec: Mapping) -> None:
    """ValidateCronJobSpec: a schedule, and a job template whose selector the API server generates."""
    if not string(spec.get("schedule"), "spec.schedule"):
        raise required("spec.schedule")
    path = TEMPLATE_PATHS["CronJob"].removesuffix(".template")
    job = mapping(mapping(spec.get("jobTemplate"), "spec.jobTemplate").get("spec"), path)
    job_spec({k: v for k, v in job.items() if k != "manualSelector"}, path)
    if job.get("selector") is not None:
        selector = mapping(job["selector"], f"{path}.selector")
        raise Invalid(f"{path}.selector: Invalid value: {_selector_text(selector)}: `selector` will be auto-generated")
    if job.get("manualSelector") is True:
        raise not_supported(f"{path}.manualSelector", True, ("nil", "false"))


WORKLOAD_SPECS = {"Deployment": lambda spec: replica_set_spec(spec, "Deployment"),
                  "ReplicaSet": lambda spec: replica_set_spec(spec, "ReplicaSet"),
                  "StatefulSet": stateful_set_spec, "DaemonSet": daemon_set_spec,
                  "Job": lambda spec: job_spec(spec, "spec"), "CronJob": cron_job_spec}


def check_manifest(obj: Mapping) -> None:
    """Raises Invalid for the first problem of a Pod or workload manifest."""
    kind = obj.get("kind")
    metadata(obj, generate_name=kind == "Pod", dns_label_name=kind == "StatefulSet")
    if kind == "Pod":
        pod_spec(obj.get("spec"), "spec")
        return
    WORKLOAD_SPECS[kind](mapping(obj.get("spec"), "spec"))


def check_node(obj: Mapping) -> None:
    """Raises Invalid for the first problem of a Node (ValidateNode for what scheduling reads)."""
    metadata(obj, generate_name=False)
    spec = mapping(obj.get("spec"), "spec")
    taints(spec.get("taints"), "spec.taints")
    if spec.get("unschedulable") is not None and not isinstance(spec["unschedulable"], bool):
        raise wrong_type("spec.unschedulable", spec["unschedulable"], "boolean")
    status = mapping(obj.get("status"), "status")
    resource_list(status.get("capacity"), "status.capacity")
    resource_list(status.get("allocatable"), "status.allocatable")
    for p, image in items(status.get("images"), "status.images"):
        _string_list(image.get("names"), f"{p}.names")
        integer(image.get("sizeBytes"), f"{p}.sizeBytes")


def object_name(obj: Mapping) -> str:
    """Names the object as the API server's errors do: `Deployment \"web\"`."""
    meta = obj.get("metadata")
    name = (meta.get("name") or meta.get("generateName") or "") if isinstance(meta, Mapping) else ""
    return f'{obj.get("kind")} "{name if isinstance(name, str) else ""}"'


def validate_manifest(obj: Mapping, where: str) -> None:
    """Raises an InputError naming the file, document, object and field when the API server would
    refuse the Pod or workload."""
    try:
        check_manifest(obj)
    except Invalid as err:
        raise InputError(f"{object_name(obj)}: {err}", where) from None


def validate_node(obj: Mapping, where: str) -> None:
    """Raises an InputError naming the file, object and field when the API server would refuse the Node."""
    try:
        check_node(obj)
    except Invalid as err:
        raise InputError(f"{object_name(obj)}: {err}", where) from None


def validate_list(obj: Mapping, where: str) -> None:
    """A `List` (or typed list) whose `items` is not a list (the reader's check, for snapshots and
    manifests alike)."""
    kind = obj.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and obj.get("items") is not None \
            and not isinstance(obj["items"], list):
        raise InputError(f"{object_name(obj)}: {wrong_type('items', obj['items'], 'array')}", where)
