"""ElasticQuota what-ifs: the status of every quota, and whether pods pass the quota checks."""
from __future__ import annotations

from typing import Any, Iterable, Sequence

from kplan.api.elastic_quota import (
    DEFAULTED, KIND, NATIVE, UPPER_BOUND_OF_MAX, ElasticQuota, as_resource, build_infos, load_quotas,
    quota_request,
)
from kplan.api.objects import Pod
from kplan.api.resources import CPU, MEMORY
from kplan.framework.config import Profile, load_config
from kplan.framework.interfaces import CycleState
from kplan.planning.place import Planner
from kplan.plugins.capacity_scheduling import NAME as CAPACITY_SCHEDULING, CapacityScheduling
from kplan.report.model import placement
from kplan.report.units import API_VERSION, quantity
from kplan.sources.snapshot import Snapshot

QUOTA_PROFILE = "capacityscheduler"


def fmt(resource: str, amount: int) -> str:
    return "unlimited" if amount >= UPPER_BOUND_OF_MAX else quantity(resource, amount)


def _resources(eq: ElasticQuota, used: dict[str, int]) -> list[str]:
    """The resources worth a row: those the spec names (the defaults when a bound is absent) and those used."""
    named = set(eq.min_spec or ()) | set(eq.max_spec or ()) | {CPU, MEMORY}
    named |= {r for r, v in used.items() if v}
    native = [r for r in NATIVE if r in named]
    return native + sorted(named - set(native))


def quota_status(snapshot: Snapshot, namespace: str | None = None, pods: Iterable[Pod] | None = None) -> dict[str, Any]:
    """Builds the QuotaStatus report: each quota's min/max/used/borrowed/lendable and the cluster totals.

    `namespace` None lists every namespace. `used` counts what the scheduler's cache counts: the
    requests of the pods bound to a node in the quota's namespace, not Succeeded or Failed. `pods`
    replaces the snapshot's pods on nodes (after a run: the node table's pods, placed ones included).
    """
    quotas, ignored = load_quotas(snapshot.objects.get(KIND, []))
    infos = build_infos(quotas, pods if pods is not None else (p for p in snapshot.pods if p.occupies_node))
    warnings: list[str] = [f"ElasticQuota {eq.namespace}/{eq.name} is ignored: only one ElasticQuota per "
                           f"namespace is used (the first listed, {quotas[eq.namespace].name})" for eq in ignored]
    rows = []
    for ns in sorted(quotas):
        if namespace is not None and ns != namespace:
            continue
        eq, used = quotas[ns], infos[ns].used
        resources = _resources(eq, used)
        entry: dict[str, Any] = {
            "namespace": ns, "name": eq.name, "apiVersion": eq.api_version,
            "min": {r: fmt(r, eq.min.get(r, 0)) for r in resources},
            "max": {r: fmt(r, eq.max.get(r, UPPER_BOUND_OF_MAX if r not in DEFAULTED and r != "pods" else 0))
                    for r in resources},
            "used": {r: quantity(r, used.get(r, 0)) for r in resources},
            "borrowed": {r: quantity(r, max(0, used.get(r, 0) - eq.min.get(r, 0))) for r in resources},
            "lendable": {r: quantity(r, max(0, eq.min.get(r, 0) - used.get(r, 0))) for r in resources},
            "share": {r: (round(used.get(r, 0) / eq.min[r], 4) if eq.min.get(r) else None) for r in resources},
            "overMin": infos[ns].used_over_min(),
            "statusUsed": None,
            "warnings": [],
        }
        entry["borrowing"] = any(used.get(r, 0) > eq.min.get(r, 0) for r in resources)
        for note in eq.surprises():
            entry["warnings"].append(note)
        if eq.status_used is not None:
            entry["statusUsed"] = {r: quantity(r, v) for r, v in sorted(eq.status_used.items())}
            differs = sorted(r for r in set(eq.status_used) | {r for r, v in used.items() if v}
                             if eq.status_used.get(r, 0) != used.get(r, 0))
            if differs:
                entry["warnings"].append(f"status.used differs from the pods' requests for {', '.join(differs)} "
                                         "(the controller counts Running pods only and leaves out overhead)")
        warnings.extend(f"{ns}/{eq.name}: {w}" for w in entry["warnings"])
        rows.append(entry)
    capacity: dict[str, int] = {}
    for node in snapshot.nodes:
        for r, v in node.allocatable.items():
            capacity[r] = capacity.get(r, 0) + v
    total_used, total_min = infos.totals()
    shown = [CPU, MEMORY] + [r for r in sorted((set(total_min) | set(total_used)) - {CPU, MEMORY})
                             if total_min.get(r) or total_used.get(r)]
    for r in shown:
        if total_min.get(r, 0) > capacity.get(r, 0):
            warnings.append(f"the sum of min for {r} ({quantity(r, total_min[r])}) is above the cluster's capacity "
                            f"({quantity(r, capacity.get(r, 0))}): some quota's guaranteed min cannot be met")
    cluster = {
        "capacity": {r: quantity(r, capacity.get(r, 0)) for r in shown},
        "totalMin": {r: quantity(r, total_min.get(r, 0)) for r in shown},
        "totalUsed": {r: quantity(r, total_used.get(r, 0)) for r in shown},
    }
    return {"apiVersion": API_VERSION, "kind": "QuotaStatus", "namespace": namespace, "quotas": rows,
            "cluster": cluster, "warnings": warnings, **snapshot.forbidden_fields()}


def quota_profile() -> Profile:
    """The profile of samples/quota/scheduler-config.yaml: CapacityScheduling instead of DefaultPreemption."""
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"schedulerName": QUOTA_PROFILE, "plugins": {
               "preFilter": {"enabled": [{"name": CAPACITY_SCHEDULING}]},
               "postFilter": {"enabled": [{"name": CAPACITY_SCHEDULING}], "disabled": [{"name": "*"}]},
               "reserve": {"enabled": [{"name": CAPACITY_SCHEDULING}]}}}]}
    return load_config(doc, "built-in quota profile")[0]


def quota_check(snapshot: Snapshot, pods: Sequence[Pod], profiles: Sequence[Profile] | None = None,
                profile: str | None = None, kube_version: str | None = None) -> dict[str, Any]:
    """Checks each pod against its quota (CapacityScheduling PreFilter), then places it in order.

    A pod that only fits by preemption reports whose pods go; later pods see that preemption done.
    """
    profiles = list(profiles or [quota_profile()])
    planner = Planner(snapshot, profiles, profile or profiles[0].scheduler_name, kube_version=kube_version)
    checks = []
    for pod in pods:
        snapshot.resolve_priority(pod)
        plugin = CapacityScheduling(None, planner.handle)
        info = plugin.infos(planner.cluster).get(pod.namespace)
        status = plugin.pre_filter(CycleState(), pod, planner.cluster)
        request = quota_request(pod)
        check: dict[str, Any] = {
            "pod": pod.key, "quota": None,
            "request": {r: quantity(r, v) for r, v in request.items() if v},
            "preFilter": {"passed": status is None or status.is_success,
                          "message": status.message if status is not None else ""},
        }
        if info is not None:
            eq_name = next(eq.name for ns, eq in load_quotas(snapshot.objects.get(KIND, []))[0].items()
                           if ns == pod.namespace)
            keys = [r for r in as_resource(request) if request.get(r) or r in (CPU, MEMORY)]
            check["quota"] = {"namespace": pod.namespace, "name": eq_name,
                              "used": {r: quantity(r, info.used.get(r, 0)) for r in keys},
                              "min": {r: fmt(r, info.min.get(r, 0)) for r in keys},
                              "max": {r: fmt(r, info.max.get(r, UPPER_BOUND_OF_MAX if r not in DEFAULTED else 0))
                                      for r in keys}}
        (check["placement"],) = [placement(result, planner.cluster) for result in planner.place_each([pod])]
        checks.append(check)
    return {"apiVersion": API_VERSION, "kind": "QuotaCheck", "checks": checks, **snapshot.forbidden_fields()}
