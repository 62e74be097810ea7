"""Typed Kubernetes objects, holding only what scheduling reads.

Each object keeps its raw dict (`raw`) so later plugins can read fields this module does not
model yet; the attributes here are the ones the node table and the default plugins need.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Hashable, Mapping, Sequence

from kplan.api.quantity import InvalidQuantity
from kplan.api.resources import (
    CPU, MEMORY, NON_ZERO_DEFAULTS, ResourceList, add_into, effective, max_into, parse_resource_list,
    resized_requests,
)
from kplan.errors import InputError

if TYPE_CHECKING:
    from kplan.api.label_selectors import Selector

TERMINAL_PHASES = ("Succeeded", "Failed")


class lazy:
    """A cached property without functools.cached_property's per-access lock (Python < 3.12)."""

    def __init__(self, fn):
        self.fn = fn
        self.__doc__ = fn.__doc__
        self.name = fn.__name__

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.fn(obj)
        return value
DEFAULT_SCHEDULER = "default-scheduler"


@dataclass(frozen=True)
class Taint:
    """A node taint (key, value, effect)."""

    key: str
    value: str
    effect: str


@dataclass(frozen=True)
class Toleration:
    """A pod toleration; `operator` is Equal (default) or Exists."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """Tells whether this toleration tolerates the taint (v1.Toleration.ToleratesTaint)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("Equal", ""):
            return self.value == taint.value
        return False


@dataclass(frozen=True)
class HostPort:
    """A host port a container binds: (hostIP, protocol, hostPort), and whether a sidecar binds it."""

    ip: str
    protocol: str
    port: int
    sidecar: bool = False  # bound by a restartable init container (not seen by releases before 1.34)


class ContainerResources:
    """One container's parsed requests and limits (shared between identical containers: read-only)."""

    __slots__ = ("requests", "limits", "non_zero", "restartable")

    def __init__(self, requests: ResourceList, limits: ResourceList, restartable: bool):
        self.requests = requests
        self.limits = limits
        self.non_zero = {**NON_ZERO_DEFAULTS, **requests}  # requests as scoring sees them
        self.restartable = restartable


def _metadata(raw: Mapping) -> Mapping:
    return raw.get("metadata") or {}


_CONTAINER_CACHE: dict[tuple, ContainerResources] = {}
_CONTAINER_CACHE_SIZE = 65536


_NO_AMOUNTS: Mapping = {}


def _container_key(requests: Mapping, limits: Mapping, restartable: bool) -> tuple:
    """The cache key of a container's resources. Most name cpu and memory only: keyed by those values
    (five items, no tuple per item); any other resource, by every item of both."""
    cpu, memory, cpu_limit, memory_limit = requests.get(CPU), requests.get(MEMORY), limits.get(CPU), limits.get(MEMORY)
    if len(requests) == (cpu is not None) + (memory is not None) \
            and len(limits) == (cpu_limit is not None) + (memory_limit is not None):
        return cpu, memory, cpu_limit, memory_limit, restartable
    return tuple(requests.items()), tuple(limits.items()), restartable


def _container_resources(c: Mapping, restartable: bool, pod: "Pod", parse: bool = True) -> ContainerResources | None:
    """Parses a container's resources; replicas repeat the same few specs, so results are shared
    (and the pod's name, for an error, is only spelled out when one is parsed). Without `parse`,
    only a shared result is returned (else None): nothing is parsed, no error raised."""
    res = c.get("resources") or {}
    raw_requests, raw_limits = res.get("requests"), res.get("limits")
    key = _container_key(raw_requests or _NO_AMOUNTS, raw_limits or _NO_AMOUNTS, restartable)
    cached = _CONTAINER_CACHE.get(key)
    if cached is not None or not parse:
        return cached
    where = pod._where
    limits = parse_resource_list(raw_limits, where)
    # The API server defaults a missing request to the limit; dumps of unadmitted pods lack it.
    requests = {**limits, **parse_resource_list(raw_requests, where)}
    parsed = ContainerResources(requests, limits, restartable)
    if len(_CONTAINER_CACHE) >= _CONTAINER_CACHE_SIZE:
        _CONTAINER_CACHE.clear()
    _CONTAINER_CACHE[key] = parsed
    return parsed


def _one_plain_container(spec: Mapping) -> bool:
    """One container, and no init containers, overhead or pod-level resources adding to it."""
    containers = spec.get("containers")
    return (bool(containers) and len(containers) == 1 and not spec.get("initContainers")
            and not spec.get("overhead") and not spec.get("resources"))


_RESIZED_CACHE: dict[tuple, ContainerResources] = {}


def _resized_container(c: ContainerResources, status: Mapping, infeasible: bool, where: str) -> ContainerResources:
    """Returns the container with the requests counted from its status (see Pod._counted), or the
    container itself when they change nothing; replicas report alike, so results are shared."""
    raw_actual = (status.get("resources") or {}).get("requests")
    raw_allocated = status.get("allocatedResources")
    key = (c, tuple(raw_actual.items()) if raw_actual else (),
           tuple(raw_allocated.items()) if raw_allocated else (), infeasible)
    cached = _RESIZED_CACHE.get(key)
    if cached is not None:
        return cached
    requests = resized_requests(None if infeasible else c.requests, parse_resource_list(raw_actual, where),
                                parse_resource_list(raw_allocated, where))
    counted = c if requests == c.requests else ContainerResources(requests, c.limits, c.restartable)
    if len(_RESIZED_CACHE) >= _CONTAINER_CACHE_SIZE:
        _RESIZED_CACHE.clear()
    _RESIZED_CACHE[key] = counted
    return counted


def _status_named(status: Mapping, name: str | None) -> Mapping | None:
    """Returns the container status of that name; an init container's wins, as upstream's lookup has it."""
    found = None
    for key in ("containerStatuses", "initContainerStatuses"):
        for s in status.get(key) or ():
            if s.get("name") == name:
                found = s
    return found


def _reports_spec(raw: Mapping, reported: Mapping) -> bool:
    """Tells whether a container status reports exactly the spec's requests (nothing to count twice)."""
    requests = (raw.get("resources") or {}).get("requests")
    allocated = reported.get("allocatedResources")
    return (reported["resources"].get("requests") == requests
            and (allocated is None or allocated == requests))


def _resize_infeasible(status: Mapping) -> bool:
    """Tells whether the pod's PodResizePending condition says Infeasible (IsPodResizeInfeasible)."""
    for condition in status.get("conditions") or ():
        if condition.get("type") == "PodResizePending":
            return condition.get("reason") == "Infeasible"
    return False


_MAX_LIMITS_CACHE: dict[ContainerResources, tuple[ResourceList, ResourceList]] = {}


def _container_max_limits(c: ContainerResources) -> tuple[ResourceList, ResourceList]:
    """Returns a container's max(limit, request) per resource, and that with 100m/200Mi where it
    names no cpu/memory; shared between pods with identical containers (read-only)."""
    hit = _MAX_LIMITS_CACHE.get(c)
    if hit is None:
        limit = {name: max(c.limits.get(name, v), v) for name, v in c.requests.items()}
        hit = (limit, {**NON_ZERO_DEFAULTS, **limit})
        if len(_MAX_LIMITS_CACHE) >= _CONTAINER_CACHE_SIZE:
            _MAX_LIMITS_CACHE.clear()
        _MAX_LIMITS_CACHE[c] = hit
    return hit


class Pod:
    """A pod as the scheduler sees it: identity, placement, resources and constraints.

    Only identity and placement are read up front; the rest is parsed on first use, since a
    snapshot holds far more pods than any one question reads in full.
    """

    # What __init__ reads goes in slots (a snapshot builds 150,000 pods: no dict grows per pod for
    # them); the attributes parsed on first use (`lazy`) go in the instance dict. (No __getattr__:
    # a class with one reads every attribute through it, a third slower.)
    __slots__ = ("raw", "source", "_meta", "spec", "name", "namespace", "node_name", "phase", "priority",
                 "preemption_policy", "labels", "terminating", "has_volumes", "__dict__")

    # Set for pods a manifest creates: the claim templates of its StatefulSet (see kplan.api.storage.
    # claims_to_create). A snapshot's pods have none: their claims exist, or are missing, as they are.
    claim_templates = None

    def __init__(self, raw: Mapping, source: str = ""):
        meta = raw.get("metadata") or {}
        spec = raw.get("spec") or {}
        self.raw = raw
        self.source = source
        self._meta = meta
        self.spec: Mapping = spec
        self.name: str = meta.get("name") or meta.get("generateName") or ""
        self.namespace: str = meta.get("namespace") or "default"
        self.node_name: str = spec.get("nodeName") or ""
        status = raw.get("status")
        self.phase: str = status.get("phase") or "" if status else ""
        self.priority: int | None = spec.get("priority")
        self.preemption_policy: str = spec.get("preemptionPolicy") or ""
        # Read now, while the metadata is at hand: the pod index reads them for every pod.
        self.labels: dict[str, str] = meta.get("labels") or {}
        self.terminating: bool = bool(meta.get("deletionTimestamp"))
        # Read while the spec is at hand: the passes over the table's volumes skip the pods without.
        self.has_volumes: bool = bool(spec.get("volumes"))
        # A bound pod's requests are parsed now: a bad quantity in a dump is an input error at load time.
        # Another pod's (a pending pod, a replica) are filled now only when their container was parsed
        # before (replicas share it), and otherwise parsed when first read.
        self._parse_requests(status, parse=bool(self.node_name) and self.phase not in TERMINAL_PHASES)

    def _parse_requests(self, status: Mapping | None, parse: bool) -> None:
        """Parses the requests (without `parse`: see _container_resources). Most pods of a snapshot
        have one container, nothing adding to it and no container status to count: their resource
        attributes are set in one step (the same values), and their host ports too when the container
        declares none."""
        if _one_plain_container(self.spec) and not (status and status.get("containerStatuses")):
            container = self.spec["containers"][0]
            only = _container_resources(container, False, self, parse)
            if only is None:
                return
            self.__dict__.update(containers=[only], _single_container=only, _counted_single=only,
                                 requests=only.requests)
            if "ports" not in container:  # read while the container is at hand: most pods bind no port
                self.host_ports = []
            return
        if parse:
            self.requests

    @lazy
    def uid(self) -> str:
        return self._meta.get("uid") or f"{self.namespace}/{self.name}"

    @lazy
    def annotations(self) -> dict[str, str]:
        return self._meta.get("annotations") or {}

    @lazy
    def scheduler_name(self) -> str:
        return self.spec.get("schedulerName") or DEFAULT_SCHEDULER

    @lazy
    def priority_class_name(self) -> str:
        return self.spec.get("priorityClassName") or ""

    @lazy
    def owner_references(self) -> Sequence[Mapping]:
        """Returns the raw ownerReferences (replicas of a workload share the list object)."""
        return self._meta.get("ownerReferences") or ()

    @lazy
    def owner_kind(self) -> str:
        """Returns the kind of the pod's controller (DaemonSet, ReplicaSet...), or ""."""
        owner = next((o for o in self.owner_references if o.get("controller")), None)
        return owner.get("kind", "") if owner else ""

    @lazy
    def _where(self) -> str:
        return f"pod {self.namespace}/{self.name}: "

    @lazy
    def containers(self) -> list[ContainerResources]:
        return [_container_resources(c, False, self) for c in self.spec.get("containers") or ()]

    @lazy
    def init_containers(self) -> list[ContainerResources]:
        return [_container_resources(c, c.get("restartPolicy") == "Always", self)
                for c in self.spec.get("initContainers") or ()]

    @lazy
    def overhead(self) -> ResourceList:
        return parse_resource_list(self.spec.get("overhead"), self._where)

    @lazy
    def pod_level(self) -> tuple[ResourceList, ResourceList]:
        """Returns pod-level (spec.resources) requests and limits."""
        res = self.spec.get("resources") or {}
        return (parse_resource_list(res.get("requests"), self._where),
                parse_resource_list(res.get("limits"), self._where))

    @lazy
    def _single_container(self) -> ContainerResources | None:
        """Returns the only container when nothing else adds to it (the common, fast case)."""
        return self.containers[0] if _one_plain_container(self.spec) else None

    @property
    def resource_profile(self) -> Hashable | None:
        """What the pod's requests, max limits and their non-zero forms all derive from, shared by the
        pods of one template: its only container as counted and as specified (one object when the
        two are the same); None when anything else adds to them."""
        counted = self._counted_single
        if counted is None:
            return None
        single = self._single_container
        return counted if counted is single else (counted, single)

    @lazy
    def requests(self) -> ResourceList:
        """Returns the pod's effective requests (resourcehelper.PodRequests); read-only.

        A bound pod counts what its status reports too (in-place resize): see _counted_containers.
        """
        single = self._counted_single
        if single is not None:
            return single.requests
        return self._effective(lambda c: c.requests, *self._counted_containers, self._counted_pod_level)

    @lazy
    def spec_requests(self) -> ResourceList:
        """Returns the requests the spec alone asks for (PodRequests without status resources)."""
        single = self._single_container
        if single is not None:
            return single.requests
        return self._effective(lambda c: c.requests, self.containers, self.init_containers, self.pod_level[0])

    def _effective(self, pick, containers, init_containers, pod_level: ResourceList) -> ResourceList:
        return effective((pick(c) for c in containers), ((pick(c), c.restartable) for c in init_containers),
                         self.overhead, pod_level)

    @lazy
    def _counted_containers(self) -> tuple[list[ContainerResources], list[ContainerResources]]:
        """Returns the containers and init containers with the requests the scheduler counts.

        Only a bound pod's status counts (the scheduler computes a pod it places from its spec).
        Ordinary init containers have finished and keep their spec; see _counted for the others.
        """
        status = (self.raw.get("status") or {}) if self.node_name else {}
        if not (status.get("containerStatuses") or status.get("initContainerStatuses")):
            return self.containers, self.init_containers
        spec = self.spec
        return ([self._counted(c, raw, status) for c, raw in zip(self.containers, spec.get("containers") or ())],
                [self._counted(c, raw, status) if c.restartable else c
                 for c, raw in zip(self.init_containers, spec.get("initContainers") or ())])

    @lazy
    def _counted_single(self) -> ContainerResources | None:
        """Returns the only container as the scheduler counts it, when nothing else adds to it."""
        single = self._single_container
        if single is None or not self.node_name:
            return single
        return self._counted(single, self.spec["containers"][0], self.raw.get("status") or {})

    def _counted(self, c: ContainerResources, raw: Mapping, status: Mapping) -> ContainerResources:
        """Returns a running container as the scheduler counts it (resourcehelper.PodRequests with
        UseStatusResources, on by default in every release kplan follows: InPlacePodVerticalScaling
        is beta in 1.33 and GA in 1.35).

        Once its status reports `resources`, each resource counts the largest of the spec, status
        and allocated requests; while a resize is Infeasible, only the last two.
        """
        reported = _status_named(status, raw.get("name"))
        if reported is None or reported.get("resources") is None:
            return c
        infeasible = _resize_infeasible(status)
        if not infeasible and _reports_spec(raw, reported):
            return c  # the common case: the kubelet reports what the spec asks
        return _resized_container(c, reported, infeasible, self._where)

    @lazy
    def _counted_pod_level(self) -> ResourceList:
        """Returns the pod-level requests the scheduler counts.

        A bound pod whose status reports pod-level `resources` counts, per resource spec.resources
        names, the largest of spec, status.resources.requests and status.allocatedResources; while a
        resize is Infeasible, only the last two. Releases before 1.36 do not read those status
        fields (InPlacePodLevelResourcesVerticalScaling off): see place.as_release_sees.
        """
        requests = self.pod_level[0]
        status = self.raw.get("status") or {}
        if not requests or not self.node_name or status.get("resources") is None:
            return requests
        counted = resized_requests(None if _resize_infeasible(status) else requests,
                                   parse_resource_list(status["resources"].get("requests"), self._where),
                                   parse_resource_list(status.get("allocatedResources"), self._where))
        # Only the resources spec.resources names are replaced, by 0 where the status lacks one.
        return {name: counted.get(name, 0) for name in requests}

    @property
    def key(self) -> str:
        """Returns "namespace/name", the pod's name in reports."""
        return f"{self.namespace}/{self.name}"

    @lazy
    def non_zero_requests(self) -> ResourceList:
        """Returns requests with 100m CPU / 200Mi memory for containers that ask for none (scoring)."""
        single = self._counted_single
        if single is not None:
            return single.non_zero
        return self._effective(lambda c: c.non_zero, *self._counted_containers, self._counted_pod_level)

    @lazy
    def limits(self) -> ResourceList:
        """Returns the pod's effective limits (resourcehelper.PodLimits: overhead only where limited)."""
        limits = effective((c.limits for c in self.containers),
                           ((c.limits, c.restartable) for c in self.init_containers),
                           {}, self.pod_level[1])
        for name, v in self.overhead.items():
            if name in limits:
                limits[name] += v
        return limits

    @lazy
    def max_limits(self) -> ResourceList:
        """Returns Σ containers' max(limit, request), raised to each init container's, plus overhead.

        A container without a limit counts its request (koordinator LimitAware's getPodResourceLimit,
        which treats sidecars as plain init containers and ignores pod-level resources).
        """
        return self._max_limits[0]

    @lazy
    def non_zero_max_limits(self) -> ResourceList:
        """Returns max_limits with 100m CPU / 200Mi memory for containers naming neither (for scoring)."""
        return self._max_limits[1]

    @lazy
    def _max_limits(self) -> tuple[ResourceList, ResourceList]:
        single = self._single_container
        if single is not None:
            return _container_max_limits(single)
        total: ResourceList = {}
        non_zero = {CPU: 0, MEMORY: 0}
        for k, c in enumerate((*self.containers, *self.init_containers)):
            limit, nz = _container_max_limits(c)
            is_init = k >= len(self.containers)
            (max_into if is_init else add_into)(total, limit)
            for name in (CPU, MEMORY):
                non_zero[name] = max(non_zero[name], nz[name]) if is_init else non_zero[name] + nz[name]
        add_into(total, self.overhead)
        for name in (CPU, MEMORY):
            non_zero[name] += self.overhead.get(name, 0)
        return total, {**total, **non_zero}

    @property
    def occupies_node(self) -> bool:
        """Tells whether the pod holds resources on its node: bound and not Succeeded/Failed."""
        return bool(self.node_name) and self.phase not in TERMINAL_PHASES

    @property
    def tolerations(self) -> list[Toleration]:
        return [Toleration(t.get("key") or "", t.get("operator") or "Equal", t.get("value") or "",
                           t.get("effect") or "") for t in self.spec.get("tolerations") or ()]

    @property
    def node_selector(self) -> dict[str, str]:
        return self.spec.get("nodeSelector") or {}

    @property
    def affinity(self) -> Mapping:
        return self.spec.get("affinity") or {}

    @property
    def scheduling_gates(self) -> list[str]:
        return [g.get("name", "") for g in self.spec.get("schedulingGates") or ()]

    @lazy
    def host_ports(self) -> list[HostPort]:
        """Returns the host ports the pod binds (containerPort.hostPort > 0), as util.GetHostPorts.

        Restartable (sidecar) init containers come first, marked `sidecar`, then the containers;
        other init containers are gone by the time the pod runs and bind nothing.
        """
        spec = self.spec
        init = spec.get("initContainers")
        containers = spec.get("containers") or ()
        if not init and not any("ports" in c for c in containers):
            return []  # most pods: nothing to look at
        ports = []
        sidecars = [c for c in init or () if c.get("restartPolicy") == "Always"]
        for sidecar, group in ((True, sidecars), (False, containers)):
            for c in group:
                for p in c.get("ports") or ():
                    if int(p.get("hostPort") or 0) > 0:
                        ports.append(HostPort(p.get("hostIP") or "0.0.0.0", p.get("protocol") or "TCP",
                                              int(p["hostPort"]), sidecar))
        return ports

    @property
    def images(self) -> list[str]:
        """Returns the images of the pod's containers and init containers."""
        spec = self.spec
        return [c.get("image", "") for c in (*(spec.get("initContainers") or ()), *(spec.get("containers") or ()))
                if c.get("image")]

    @property
    def qos_class(self) -> str:
        """Returns Guaranteed, Burstable or BestEffort as the API server computes it (GetPodQOS)."""
        pod_req, pod_lim = self.pod_level
        if pod_req or pod_lim:
            return _qos_class([(pod_req, pod_lim)])
        return _qos_class([(c.requests, c.limits) for c in (*self.containers, *self.init_containers)])


def _qos_class(parts: list[tuple[ResourceList, ResourceList]]) -> str:
    """Sums positive cpu/memory requests and limits; Guaranteed needs both limited everywhere and equal sums."""
    requests: ResourceList = {}
    limits: ResourceList = {}
    guaranteed = True
    for reqs, lims in parts:
        for name in (CPU, MEMORY):
            if reqs.get(name, 0) > 0:
                requests[name] = requests.get(name, 0) + reqs[name]
            if lims.get(name, 0) > 0:
                limits[name] = limits.get(name, 0) + lims[name]
            else:
                guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and requests == limits:
        return "Guaranteed"
    return "Burstable"


class Node:
    """A node: name, labels, taints, allocatable, images."""

    __slots__ = ("raw", "name", "labels", "annotations", "taints", "unschedulable", "allocatable",
                 "images", "source")

    def __init__(self, raw: Mapping, source: str = ""):
        meta = _metadata(raw)
        spec = raw.get("spec") or {}
        status = raw.get("status") or {}
        self.raw = raw
        self.source = source
        self.name: str = meta.get("name") or ""
        self.labels: dict[str, str] = meta.get("labels") or {}
        self.annotations: dict[str, str] = meta.get("annotations") or {}
        self.taints = tuple(Taint(t.get("key") or "", t.get("value") or "", t.get("effect") or "")
                            for t in spec.get("taints") or ())
        self.unschedulable = bool(spec.get("unschedulable"))
        self.allocatable = parse_resource_list(status.get("allocatable") or status.get("capacity"),
                                               f"node {self.name}: ")
        self.images: dict[str, int] = {}
        for image in status.get("images") or ():
            for image_name in image.get("names") or ():
                self.images[image_name] = int(image.get("sizeBytes") or 0)

    @property
    def kubelet_version(self) -> Any:
        """status.nodeInfo.kubeletVersion as the node reports it (None when it does not): read once
        per load, when the snapshot records no server version, so it is not kept in a slot."""
        info = (self.raw.get("status") or {}).get("nodeInfo")
        return info.get("kubeletVersion") if isinstance(info, Mapping) else None


@dataclass
class PriorityClass:
    name: str
    value: int
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"

    @classmethod
    def from_raw(cls, raw: Mapping) -> "PriorityClass":
        return cls(_metadata(raw).get("name") or "", int(raw.get("value") or 0),
                   bool(raw.get("globalDefault")), raw.get("preemptionPolicy") or "PreemptLowerPriority")


@dataclass
class Namespace:
    name: str
    labels: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_raw(cls, raw: Mapping) -> "Namespace":
        meta = _metadata(raw)
        return cls(meta.get("name") or "", dict(meta.get("labels") or {}))


@dataclass
class PodDisruptionBudget:
    namespace: str
    name: str
    selector: Mapping | None
    disruptions_allowed: int
    raw: Mapping = field(default_factory=dict, repr=False)

    @lazy
    def label_selector(self) -> "Selector":
        """spec.selector parsed (LabelSelectorAsSelector), once per budget: None selects nothing, {}
        everything, and a selector the API server would refuse nothing (its consumers skip it)."""
        from kplan.api.label_selectors import NOTHING, parse_selector
        try:
            return parse_selector(self.selector)
        except InputError:
            return NOTHING

    @classmethod
    def from_raw(cls, raw: Mapping) -> "PodDisruptionBudget":
        meta = _metadata(raw)
        return cls(meta.get("namespace") or "default", meta.get("name") or "",
                   (raw.get("spec") or {}).get("selector"),
                   int((raw.get("status") or {}).get("disruptionsAllowed") or 0), raw)


def _string_map(raw: Any, what: str) -> dict[str, str] | None:
    """A label map as the API decodes one (None stays None: no selector)."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ValueError(f"{what} must be a mapping of labels, got {raw!r}")
    return {str(k): v if isinstance(v, str) else str(v) for k, v in raw.items()}


@dataclass
class Service:
    """A Service, for the pods it selects: PodTopologySpread's default selector reads its spec.selector
    (a label map; None, a Service without a selector, selects nothing)."""

    namespace: str
    name: str
    uid: str
    selector: Mapping[str, str] | None

    @classmethod
    def from_raw(cls, raw: Mapping) -> "Service":
        meta = _metadata(raw)
        return cls(meta.get("namespace") or "default", meta.get("name") or "", meta.get("uid") or "",
                   _string_map((raw.get("spec") or {}).get("selector"), "spec.selector"))


CONTROLLER_KINDS = ("ReplicaSet", "StatefulSet", "ReplicationController")


@dataclass
class Controller:
    """A ReplicaSet, StatefulSet or ReplicationController, for its pod selector (PodTopologySpread's
    default selector): a metav1.LabelSelector for the first two, a label map for a
    ReplicationController (defaulted to its template's labels, as the API server does)."""

    kind: str
    namespace: str
    name: str
    uid: str
    selector: Mapping | None

    @property
    def key(self) -> tuple[str, str, str]:
        return self.kind, self.namespace, self.name

    @classmethod
    def from_raw(cls, raw: Mapping) -> "Controller":
        meta = _metadata(raw)
        kind = raw.get("kind") or ""
        spec = raw.get("spec") or {}
        selector = spec.get("selector")
        if kind == "ReplicationController":
            template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
            selector = _string_map(selector or template_labels, "spec.selector")  # SetDefaults_ReplicationController
        elif selector is not None and not isinstance(selector, Mapping):
            raise ValueError(f"spec.selector must be a label selector, got {selector!r}")
        return cls(kind, meta.get("namespace") or "default", meta.get("name") or "", meta.get("uid") or "", selector)


def build(kind: str, raw: Mapping, source: str) -> Any:
    """Builds the typed object for a known kind; an invalid quantity is an InputError naming the source."""
    try:
        return BUILDERS[kind](raw, source) if kind in ("Pod", "Node") else BUILDERS[kind](raw)
    except InvalidQuantity as err:
        raise InputError(f"invalid quantity: {err}", source) from None
    except (TypeError, ValueError, AttributeError) as err:
        raise InputError(f"malformed {kind}: {err}", source) from None


BUILDERS = {
    "Pod": Pod,
    "Node": Node,
    "PriorityClass": PriorityClass.from_raw,
    "Namespace": Namespace.from_raw,
    "PodDisruptionBudget": PodDisruptionBudget.from_raw,
    "Service": Service.from_raw,
    **{kind: Controller.from_raw for kind in CONTROLLER_KINDS},
}
