"""NodeMetric (slo.koordinator.sh/v1alpha1): the load koordlet reports for one node.

Only what load-aware scheduling reads is kept: the update time and report interval, the node's
usage, its percentile usages over durations, the system usage, and each pod's usage with its
koordinator priority. A malformed object is never fatal: the bad part is dropped and a warning
names the node (an unparsable update time counts as missing, which makes the metric expired).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable, Mapping

from kplan.api.quantity import InvalidQuantity
from kplan.api.resources import ResourceList, parse_resource_list

API_VERSION = "slo.koordinator.sh/v1alpha1"
KIND = "NodeMetric"
# koordlet reports every 60 s unless spec.metricCollectPolicy.reportIntervalSeconds says otherwise.
DEFAULT_REPORT_INTERVAL = 60.0
AGGREGATION_TYPES = ("avg", "p50", "p90", "p95", "p99")

_RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_time(text: Any) -> datetime:
    """Parses an RFC 3339 time ("2026-05-01T12:00:00Z", offsets and fractions allowed) into an aware datetime."""
    if isinstance(text, datetime):
        return text if text.tzinfo else text.replace(tzinfo=timezone.utc)
    m = _RFC3339.match(str(text).strip()) if isinstance(text, str) else None
    if not m:
        raise ValueError(f"{text!r} is not an RFC 3339 time (e.g. 2026-05-01T12:00:00Z)")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    micro = int((m.group(7) or ".0")[1:7].ljust(6, "0"))
    zone = m.group(8)
    if zone in ("Z", "z"):
        tz = timezone.utc
    else:
        sign = 1 if zone[0] == "+" else -1
        tz = timezone(sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    try:
        return datetime(year, month, day, hour, minute, second, micro, tzinfo=tz)
    except ValueError as err:
        raise ValueError(f"{text!r} is not an RFC 3339 time ({err})") from None


def parse_duration(text: Any) -> float:
    """Parses a Go duration ("5m", "1h30m", "300s", "0") into seconds, as metav1.Duration reads it."""
    if isinstance(text, bool):
        raise ValueError(f"{text!r} is not a duration")
    if isinstance(text, (int, float)):
        return float(text) / 1e9  # a bare number in JSON is nanoseconds
    s = str(text).strip()
    sign = -1.0 if s.startswith("-") else 1.0
    body = s.lstrip("+-")
    if body == "0":
        return 0.0
    total, pos = 0.0, 0
    for m in _DURATION_PART.finditer(body):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    if not body or pos != len(body):
        raise ValueError(f"{text!r} is not a duration (e.g. 5m, 1h30m, 300s)")
    return sign * total


@dataclass
class PodUsage:
    """One entry of status.podsMetric."""

    namespace: str
    name: str
    priority: str  # koord-prod, koord-mid, koord-batch, koord-free, or ""
    usage: ResourceList


@dataclass
class NodeMetric:
    """The parts of a NodeMetric that scheduling reads; `info` is False when status.nodeMetric is absent."""

    name: str
    update_time: datetime | None = None
    report_interval: float = DEFAULT_REPORT_INTERVAL
    info: bool = False
    node_usage: ResourceList = field(default_factory=dict)
    system_usage: ResourceList = field(default_factory=dict)
    # (aggregation type, duration in seconds) -> usage; only non-empty usages are kept.
    aggregated: dict[tuple[str, float], ResourceList] = field(default_factory=dict)
    pods: list[PodUsage] = field(default_factory=list)

    def age(self, now: datetime) -> float | None:
        """Returns seconds since status.updateTime, or None when there is none."""
        return None if self.update_time is None else (now - self.update_time).total_seconds()


def _resources(raw: Any, where: str, warnings: list[str]) -> ResourceList | None:
    """Reads a ResourceMap ({resources: {...}}); None (with a warning) when it cannot be read."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        warnings.append(f"{where} is not a mapping")
        return None
    resources = raw.get("resources")
    if resources is None:
        return {}
    if not isinstance(resources, dict):
        warnings.append(f"{where}.resources is not a mapping")
        return None
    try:
        return parse_resource_list({str(k): str(v) for k, v in resources.items()})
    except InvalidQuantity as err:
        warnings.append(f"{where}: invalid quantity: {err}")
        return None


def parse_node_metric(raw: Mapping) -> tuple[NodeMetric | None, list[str]]:
    """Reads one NodeMetric object; returns it (None without a name) and what was wrong with it."""
    warnings: list[str] = []
    meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
    name = meta.get("name") or ""
    if not name:
        return None, ["NodeMetric without metadata.name ignored"]
    metric = NodeMetric(str(name))
    spec = raw.get("spec") if isinstance(raw.get("spec"), dict) else {}
    policy = spec.get("metricCollectPolicy") if isinstance(spec.get("metricCollectPolicy"), dict) else {}
    interval = policy.get("reportIntervalSeconds")
    if interval is not None:
        if isinstance(interval, int) and not isinstance(interval, bool):
            metric.report_interval = float(interval)
        else:
            warnings.append(f"spec.metricCollectPolicy.reportIntervalSeconds {interval!r} is not an integer "
                            f"(default {int(DEFAULT_REPORT_INTERVAL)} s used)")
    status = raw.get("status") if isinstance(raw.get("status"), dict) else {}
    stamp = status.get("updateTime")
    if stamp is None:
        warnings.append("no status.updateTime (the metric counts as expired)")
    else:
        try:
            metric.update_time = parse_time(stamp)
        except ValueError as err:
            warnings.append(f"status.updateTime: {err} (the metric counts as expired)")
    info = status.get("nodeMetric")
    if not isinstance(info, dict):
        warnings.append("no status.nodeMetric (no usage: the node is neither filtered nor scored by load)")
    else:
        metric.info = True
        usage = _resources(info.get("nodeUsage"), "status.nodeMetric.nodeUsage", warnings)
        if usage is None:
            warnings.append("missing usage: status.nodeMetric.nodeUsage (usage taken as zero)")
        metric.node_usage = usage or {}
        metric.system_usage = _resources(info.get("systemUsage"), "status.nodeMetric.systemUsage", warnings) or {}
        for k, entry in enumerate(info.get("aggregatedNodeUsages") or ()):
            where = f"status.nodeMetric.aggregatedNodeUsages[{k}]"
            if not isinstance(entry, dict):
                warnings.append(f"{where} is not a mapping")
                continue
            try:
                duration = parse_duration(entry.get("duration") or 0)
            except ValueError as err:
                warnings.append(f"{where}.duration: {err}")
                continue
            for agg_type, resources in (entry.get("usage") or {}).items():
                parsed = _resources(resources, f"{where}.usage.{agg_type}", warnings)
                if parsed:
                    metric.aggregated[(str(agg_type), duration)] = parsed
    for k, entry in enumerate(status.get("podsMetric") or ()):
        where = f"status.podsMetric[{k}]"
        if not isinstance(entry, dict):
            continue
        usage = _resources(entry.get("podUsage"), f"{where}.podUsage", warnings)
        if usage:
            metric.pods.append(PodUsage(str(entry.get("namespace") or ""), str(entry.get("name") or ""),
                                        str(entry.get("priority") or ""), usage))
    return metric, warnings


def load_node_metrics(objects: Iterable[Mapping]) -> tuple[dict[str, NodeMetric], list[str]]:
    """Reads the snapshot's NodeMetric objects by node name; returns them and one warning per problem.

    A second NodeMetric for the same node is ignored (the first one listed wins).
    """
    metrics: dict[str, NodeMetric] = {}
    warnings: list[str] = []
    for raw in objects:
        metric, problems = parse_node_metric(raw if isinstance(raw, dict) else {})
        if metric is not None and metric.name in metrics:
            problems.append("duplicate NodeMetric ignored (the first one is used)")
        where = f"NodeMetric {metric.name}: " if metric is not None else ""
        warnings.extend(where + p for p in problems)
        if metric is not None and metric.name not in metrics:
            metrics[metric.name] = metric
    return metrics, warnings


def snapshot_node_metrics(snapshot: Any) -> tuple[dict[str, NodeMetric], list[str]]:
    """Returns the NodeMetrics of a Snapshot (kept raw in snapshot.objects["NodeMetric"])."""
    objects = (getattr(snapshot, "objects", None) or {}).get(KIND, []) if snapshot is not None else []
    return load_node_metrics(objects)
