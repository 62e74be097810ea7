"""The QuotaStatus and QuotaCheck documents of `kplan quota`, from kplan.planning.quota's results."""
from __future__ import annotations

from typing import Any, Iterable

from kplan.api.elastic_quota import DEFAULTED, NATIVE, UPPER_BOUND_OF_MAX, ElasticQuota, as_resource
from kplan.api.resources import CPU, MEMORY
from kplan.planning.quota import QuotaUsage, QuotaVerdict
from kplan.report.model import placement
from kplan.report.units import API_VERSION, UNLIMITED, quantity


def fmt(resource: str, amount: int) -> str:
    return UNLIMITED if amount >= UPPER_BOUND_OF_MAX else quantity(resource, amount)


def _resources(eq: ElasticQuota, used: dict[str, int]) -> list[str]:
    """The resources worth a row: those the spec names (the defaults when a bound is absent) and those used."""
    named = set(eq.min_spec or ()) | set(eq.max_spec or ()) | {CPU, MEMORY}
    named |= {r for r, v in used.items() if v}
    native = [r for r in NATIVE if r in named]
    return native + sorted(named - set(native))


def quota_status(usage: QuotaUsage, namespace: str | None = None) -> dict[str, Any]:
    """The QuotaStatus report: each quota's min/max/used/borrowed/lendable and the cluster totals, and
    the warnings. `namespace` None lists every namespace."""
    quotas, infos, capacity = usage.quotas, usage.infos, usage.capacity
    warnings: list[str] = [f"ElasticQuota {eq.namespace}/{eq.name} is ignored: only one ElasticQuota per "
                           f"namespace is used (the first listed, {quotas[eq.namespace].name})" for eq in usage.ignored]
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
            "cluster": cluster, "warnings": warnings}


def quota_check(verdicts: Iterable[QuotaVerdict]) -> dict[str, Any]:
    """The QuotaCheck report: per pod its request, the PreFilter's verdict, its quota's used/min/max as
    the pod found them, and its placement (built as each verdict comes, on the table the pod saw)."""
    return {"apiVersion": API_VERSION, "kind": "QuotaCheck", "checks": [_check(v) for v in verdicts]}


def _check(v: QuotaVerdict) -> dict[str, Any]:
    request, info = v.request, v.info
    check: dict[str, Any] = {
        "pod": v.pod.key, "quota": None,
        "request": {r: quantity(r, n) for r, n in request.items() if n},
        "preFilter": {"passed": v.passed, "message": v.pre_filter.message if v.pre_filter is not None else ""},
    }
    if v.quota is not None:
        keys = [r for r in as_resource(request) if request.get(r) or r in (CPU, MEMORY)]
        check["quota"] = {"namespace": v.pod.namespace, "name": v.quota.name,
                          "used": {r: quantity(r, info.used.get(r, 0)) for r in keys},
                          "min": {r: fmt(r, info.min.get(r, 0)) for r in keys},
                          "max": {r: fmt(r, info.max.get(r, UPPER_BOUND_OF_MAX if r not in DEFAULTED else 0))
                                  for r in keys}}
    check["placement"] = placement(v.result, v.cluster)
    return check
