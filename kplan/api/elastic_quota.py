"""ElasticQuota (scheduler-plugins CapacityScheduling): bounds and usage as upstream computes them.

Upstream keeps every amount in a framework.Resource: cpu (milli), memory, ephemeral-storage and
pods always exist, scalar (extended, hugepages, attachable-volume) resources only when named.
Bounds (newElasticQuotaInfo): an absent `min` is 0 and an absent `max` is MaxInt64 for cpu,
memory and ephemeral-storage; a present list bounds every native resource it omits at 0, so a
`max` naming only cpu rejects any pod asking for memory. A scalar missing from a bound is 0 for
min and MaxInt64 for max (the `bound` argument of cmp2).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from kplan.api.objects import Pod
from kplan.api.quantity import InvalidQuantity
from kplan.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, parse_resource_list
from kplan.errors import InputError

KIND = "ElasticQuota"
UPPER_BOUND_OF_MAX = 2**63 - 1  # math.MaxInt64
LOWER_BOUND_OF_MIN = 0
NATIVE = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)  # the fixed fields of framework.Resource
DEFAULTED = (CPU, MEMORY, EPHEMERAL_STORAGE)  # what makeResourceListForBound fills in


def is_scalar(name: str) -> bool:
    """Tells whether framework.Resource keeps a resource as a scalar (IsScalarResourceName)."""
    return "/" in name or name.startswith("hugepages-") or name.startswith("attachable-volumes-")


def as_resource(amounts: Mapping[str, int]) -> dict[str, int]:
    """Returns amounts as a framework.Resource: the four natives always, scalars when named."""
    out = {r: int(amounts.get(r, 0)) for r in NATIVE}
    out.update({r: int(v) for r, v in amounts.items() if r not in NATIVE and is_scalar(r)})
    return out


def quota_request(pod: Pod) -> dict[str, int]:
    """computePodResourceRequest: containers summed, each init container as a floor, plus overhead."""
    total: dict[str, int] = {}
    for c in pod.containers:
        for r, v in c.requests.items():
            total[r] = total.get(r, 0) + v
    for c in pod.init_containers:
        for r, v in c.requests.items():
            total[r] = max(total.get(r, 0), v)
    for r, v in pod.overhead.items():
        total[r] = total.get(r, 0) + v
    return as_resource(total)


def over(x1: Mapping[str, int], x2: Mapping[str, int], y: Mapping[str, int], bound: int) -> bool:
    """cmp2: whether x1 + x2 exceeds y in any native resource or in any scalar x1 names."""
    for r in NATIVE:
        if x1.get(r, 0) + x2.get(r, 0) > y.get(r, 0):
            return True
    return any(v + x2.get(r, 0) > y.get(r, bound) for r, v in x1.items() if r not in NATIVE)


def add(total: dict[str, int], amounts: Mapping[str, int], sign: int = 1) -> None:
    for r, v in amounts.items():
        total[r] = total.get(r, 0) + sign * v


@dataclass
class ElasticQuota:
    """One ElasticQuota object: its bounds as upstream reads them and what the raw spec said."""

    namespace: str
    name: str
    min: dict[str, int]
    max: dict[str, int]
    min_spec: dict[str, int] | None  # None: spec.min absent
    max_spec: dict[str, int] | None
    status_used: dict[str, int] | None
    api_version: str = ""
    source: str = ""

    def surprises(self) -> list[str]:
        """Returns the bounds a reader would not expect: omitted natives bounded at 0, min above max."""
        notes = []
        if self.max_spec is not None:
            omitted = [r for r in DEFAULTED if r not in self.max_spec]
            if omitted:
                notes.append(f"spec.max omits {', '.join(omitted)}: upstream bounds {'it' if len(omitted) == 1 else 'them'} "
                             f"at 0, so any pod requesting {'it' if len(omitted) == 1 else 'them'} is rejected")
        for r, v in (self.min_spec or {}).items():
            if v > self.max.get(r, UPPER_BOUND_OF_MAX if r not in NATIVE else 0):
                notes.append(f"spec.min {r} is above its max")
        return notes


def _bound(raw, default: int, where: str) -> tuple[dict[str, int], dict[str, int] | None]:
    if raw is None:
        return {CPU: default, MEMORY: default, EPHEMERAL_STORAGE: default, PODS: 0}, None
    if not isinstance(raw, Mapping):
        raise InputError(f"{where} must be a resource list")
    try:
        spec = parse_resource_list(raw, f"{where}: ")
    except InvalidQuantity as err:
        raise InputError(f"invalid quantity: {err}") from None
    return as_resource(spec), spec


def parse_elastic_quota(raw: Mapping, source: str = "") -> ElasticQuota:
    """Builds an ElasticQuota from its raw dict; an invalid quantity is an InputError."""
    meta = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    ns, name = meta.get("namespace") or "default", meta.get("name") or ""
    where = f"ElasticQuota {ns}/{name}"
    try:
        lo, lo_spec = _bound(spec.get("min"), LOWER_BOUND_OF_MIN, f"{where} spec.min")
        hi, hi_spec = _bound(spec.get("max"), UPPER_BOUND_OF_MAX, f"{where} spec.max")
        used_raw = (raw.get("status") or {}).get("used")
        used = parse_resource_list(used_raw, f"{where} status.used: ") if used_raw is not None else None
    except InvalidQuantity as err:
        raise InputError(f"invalid quantity: {err}", source or None) from None
    except InputError as err:
        raise InputError(str(err), source or None) from None
    return ElasticQuota(ns, name, lo, hi, lo_spec, hi_spec, used, raw.get("apiVersion") or "", source)


def load_quotas(raws: Iterable[Mapping]) -> tuple[dict[str, ElasticQuota], list[ElasticQuota]]:
    """Returns the quota of each namespace (the first listed wins, as upstream) and the ignored extras."""
    quotas: dict[str, ElasticQuota] = {}
    ignored: list[ElasticQuota] = []
    for raw in raws:
        eq = parse_elastic_quota(raw)
        if eq.namespace in quotas:
            ignored.append(eq)
        else:
            quotas[eq.namespace] = eq
    return quotas, ignored


@dataclass
class QuotaInfo:
    """ElasticQuotaInfo: a namespace's bounds, its usage and the pods counted in it."""

    namespace: str
    min: dict[str, int] | None
    max: dict[str, int] | None
    used: dict[str, int] = field(default_factory=lambda: as_resource({}))
    pods: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, eq: ElasticQuota) -> "QuotaInfo":
        return cls(eq.namespace, dict(eq.min), dict(eq.max))

    def clone(self) -> "QuotaInfo":
        return QuotaInfo(self.namespace, None if self.min is None else dict(self.min),
                         None if self.max is None else dict(self.max), dict(self.used), set(self.pods))

    # A missing Min (None) counts as exceeded, a missing Max as unlimited (upstream's nil pointers).

    def used_over_min_with(self, request: Mapping[str, int]) -> bool:
        return self.min is None or over(request, self.used, self.min, LOWER_BOUND_OF_MIN)

    def used_over_max_with(self, request: Mapping[str, int]) -> bool:
        return self.max is not None and over(request, self.used, self.max, UPPER_BOUND_OF_MAX)

    def used_over_min(self) -> bool:
        return self.min is None or over(self.used, {}, self.min, LOWER_BOUND_OF_MIN)

    def add_pod(self, pod: Pod) -> None:
        """addPodIfNotPresent: counts the pod's request once."""
        if pod.uid not in self.pods:
            self.pods.add(pod.uid)
            add(self.used, quota_request(pod))

    def remove_pod(self, pod: Pod) -> None:
        """deletePodIfPresent."""
        if pod.uid in self.pods:
            self.pods.discard(pod.uid)
            add(self.used, quota_request(pod), -1)


class QuotaInfos(dict):
    """ElasticQuotaInfos: namespace -> QuotaInfo."""

    def clone(self) -> "QuotaInfos":
        return QuotaInfos({ns: info.clone() for ns, info in self.items()})

    def totals(self) -> tuple[dict[str, int], dict[str, int]]:
        """Returns (Σ used, Σ min) over every quota."""
        used, lo = as_resource({}), as_resource({})
        for info in self.values():
            add(used, info.used)
            add(lo, info.min or {})
        return used, lo

    def aggregated_used_over_min_with(self, request: Mapping[str, int]) -> bool:
        used, lo = self.totals()
        add(used, request)
        return over(used, {}, lo, LOWER_BOUND_OF_MIN)


def build_infos(quotas: Mapping[str, ElasticQuota], pods: Iterable[Pod]) -> QuotaInfos:
    """Builds the plugin's cache: each quota with the requests of the given (assigned) pods of its namespace."""
    infos = QuotaInfos({ns: QuotaInfo.of(eq) for ns, eq in quotas.items()})
    for pod in pods:
        info = infos.get(pod.namespace)
        if info is not None:
            info.add_pod(pod)
    return infos


def quota_changes(quotas: Mapping[str, ElasticQuota], pods: Iterable[Pod], pod: Pod,
                  victims: Iterable[Pod]) -> list[dict]:
    """Returns, for the pod's quota and each victim's, its usage before and after the preemption."""
    victims = list(victims)
    namespaces = [pod.namespace] + sorted({v.namespace for v in victims} - {pod.namespace})
    touched = {ns: quotas[ns] for ns in namespaces if ns in quotas}
    if not touched:
        return []
    infos = build_infos(touched, pods)
    changes = []
    for ns in namespaces:
        if ns not in infos:
            continue
        before = dict(infos[ns].used)
        after = infos[ns].clone()
        for v in victims:
            if v.namespace == ns:
                after.remove_pod(v)
        if ns == pod.namespace:
            after.add_pod(pod)
        changes.append({"namespace": ns, "name": touched[ns].name, "min": touched[ns].min,
                        "max": touched[ns].max, "before": before, "after": after.used})
    return changes
