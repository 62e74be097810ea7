"""Resource lists as kube-scheduler reads them: CPU in milli-units, everything else in units."""
from __future__ import annotations

from typing import Iterable, Mapping

from kplan.api.quantity import InvalidQuantity, format_quantity, milli_value, value

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

# Defaults for containers that request no CPU or memory (schedutil.DefaultMilliCPURequest and
# DefaultMemoryRequest); used only for scoring, never for fitting.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
NON_ZERO_DEFAULTS = {CPU: DEFAULT_MILLI_CPU_REQUEST, MEMORY: DEFAULT_MEMORY_REQUEST}

ResourceList = dict[str, int]


def amount(resource: str, quantity) -> int:
    """Returns a quantity as the scheduler counts it: MilliValue for cpu, Value otherwise."""
    return milli_value(quantity) if resource == CPU else value(quantity)


def format_amount(resource: str, amount: int) -> str:
    """Formats an amount as a Kubernetes quantity string: milli-CPU, bytes, or a plain count."""
    if resource == CPU:
        return format_quantity(int(amount), "milli")
    if is_byte_resource(resource):
        return format_quantity(int(amount), "bytes")
    return format_quantity(int(amount), "value")


BINARY_UNITS = ((40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki"))


def is_byte_resource(resource: str) -> bool:
    """Tells the resources counted in bytes (memory, storage, hugepages)."""
    return resource in (MEMORY, EPHEMERAL_STORAGE) or resource.startswith("hugepages-")


def readable_amount(resource: str, amount: int, round_up: bool = True) -> str:
    """Formats an amount for a line of text: a byte amount in the largest binary unit it reaches, to
    a tenth ("1.5Gi", "300Mi"), rounded up by default (a shortfall so written is always enough),
    else to the nearest tenth; others as quantities ("500m", "4")."""
    amount = int(amount)
    if is_byte_resource(resource):
        size = abs(amount)
        for shift, suffix in BINARY_UNITS:
            unit = 1 << shift
            if size >= unit:
                tenths = -(-size * 10 // unit) if round_up else (size * 20 + unit) // (2 * unit)
                whole, tenth = divmod(tenths, 10)
                sign = "-" if amount < 0 else ""
                return f"{sign}{whole}{suffix}" if not tenth else f"{sign}{whole}.{tenth}{suffix}"
    return format_amount(resource, amount)


def parse_resource_list(raw: Mapping | None, where: str = "") -> ResourceList:
    """Parses a ResourceList mapping; an invalid quantity raises InvalidQuantity naming it."""
    if not raw:
        return {}
    try:
        return {name: amount(name, q) for name, q in raw.items()}
    except InvalidQuantity as err:
        raise InvalidQuantity(f"{where}{err}") from None


def add_into(total: ResourceList, other: Mapping[str, int]) -> None:
    """Adds other into total, key by key."""
    for name, v in other.items():
        total[name] = total.get(name, 0) + v


def max_into(total: ResourceList, other: Mapping[str, int]) -> None:
    """Raises each entry of total to at least other's, key by key."""
    for name, v in other.items():
        total[name] = max(total.get(name, v), v)


def resized_requests(desired: ResourceList | None, actual: ResourceList, allocated: ResourceList) -> ResourceList:
    """Returns the requests the scheduler counts for a container (or pod) being resized in place.

    Each resource counts the largest of the desired (spec), actual (status resources) and
    allocated amounts, so a node is not overcommitted whichever way the resize goes. `desired`
    is None while the resize is Infeasible: the kubelet will never grant it.
    """
    counted = dict(desired or {})
    max_into(counted, actual)
    max_into(counted, allocated)
    return counted


def is_scalar_resource(name: str) -> bool:
    """Tells extended, hugepages and attachable-volume resources from the native ones."""
    return name not in (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)


def is_pod_level_resource(name: str) -> bool:
    """Tells the resources pod-level spec.resources may set (IsSupportedPodLevelResource)."""
    return name in (CPU, MEMORY) or name.startswith("hugepages-")


def effective(containers: Iterable[ResourceList], init_containers: Iterable[tuple[ResourceList, bool]],
              overhead: ResourceList, pod_level: ResourceList | None) -> ResourceList:
    """Returns a pod's effective requests (or limits) as resourcehelper.PodRequests computes them.

    Containers add up; restartable (sidecar) init containers run beside them and add up too,
    while each ordinary init container needs its own amount plus the sidecars started before it;
    the pod needs the larger of the two. Pod-level values replace cpu, memory and hugepages; overhead is added.
    """
    total: ResourceList = {}
    for c in containers:
        add_into(total, c)
    sidecars: ResourceList = {}
    init_peak: ResourceList = {}
    for c, restartable in init_containers:
        if restartable:
            add_into(total, c)
            add_into(sidecars, c)
            max_into(init_peak, sidecars)
        else:
            need = dict(c)
            add_into(need, sidecars)
            max_into(init_peak, need)
    max_into(total, init_peak)
    for name, v in (pod_level or {}).items():
        if is_pod_level_resource(name):
            total[name] = v
    add_into(total, overhead)
    return total
