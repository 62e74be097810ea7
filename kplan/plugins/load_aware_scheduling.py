"""LoadAwareScheduling (koordinator): filter hot or silent nodes, prefer the least-used ones.

Follows koordinator's pkg/scheduler/plugins/loadaware (the vectorized version with the pod
assign cache): usage comes from each node's NodeMetric (slo.koordinator.sh/v1alpha1); pods on
the node whose usage the metric does not hold yet (no pod metric, scheduled within the last
report interval, or inside a forced-estimation window) add the part of their estimate above
their reported usage; the incoming pod adds its whole estimate.

- Filter: DaemonSet pods pass. Per node, the thresholds are prodUsageThresholds for a prod pod
  (when set), else the aggregated thresholds (when configured), else usageThresholds; the node
  annotation scheduling.koordinator.sh/usage-thresholds replaces each part it sets. No
  thresholds or no NodeMetric: pass. An expired metric is rejected (unless
  enableScheduleWhenNodeMetricsExpired). Then, resource by resource in name order, the node is
  rejected when round(estimated * 100 / allocatable) is strictly greater than the threshold —
  checked first without and then with the incoming pod, as upstream does.
- Score: 0 without a fresh NodeMetric; else least-used per resource, weighted by
  resourceWeights, plus dominantResourceWeight times the lowest resource score, integer division.
- Reserve: the placed pod's estimate is added to its node's cached rows, so the pods placed next
  see it (upstream's podAssignCache.assign).

Per-node usage, estimate and allocatable matrices are built once per ClusterState and kept in
step with it row by row; the node table itself is never rebuilt.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from datetime import datetime, timezone
from typing import Any, Mapping

import numpy as np

from kplan.api.node_metric import AGGREGATION_TYPES, NodeMetric, parse_duration, parse_time, snapshot_node_metrics
from kplan.api.objects import Pod
from kplan.api.resources import CPU, MEMORY, ResourceList, parse_resource_list, readable_amount
from kplan.cluster.state import ClusterState
from kplan.errors import InputError
from kplan.framework.interfaces import MAX_NODE_SCORE, CycleState, Handle, plugin_args
from kplan.framework.status import Code, NodeStatus, Status

NAME = "LoadAwareScheduling"

ERR_NODE_METRIC_EXPIRED = "node(s) nodeMetric expired"
ERR_USAGE_EXCEED = "node(s) {} usage exceed threshold"
ERR_AGGREGATED_USAGE_EXCEED = "node(s) {} aggregated usage exceed threshold"

INCOMING_ESTIMATED_KEY = "IncomingPodEstimated" + NAME

# Annotations (apis/extension).
ANNOTATION_USAGE_THRESHOLDS = "scheduling.koordinator.sh/usage-thresholds"
ANNOTATION_RAW_ALLOCATABLE = "node.koordinator.sh/raw-allocatable"
ANNOTATION_SCALING_FACTORS = "scheduling.koordinator.sh/load-estimated-scaling-factors"
ANNOTATION_SECONDS_AFTER_SCHEDULED = "scheduling.koordinator.sh/load-estimated-seconds-after-pod-scheduled"
ANNOTATION_SECONDS_AFTER_INITIALIZED = "scheduling.koordinator.sh/load-estimated-seconds-after-initialized"
LABEL_PRIORITY_CLASS = "koordinator.sh/priority-class"
LABEL_QOS = "koordinator.sh/qosClass"

PRIORITY_PROD, PRIORITY_MID, PRIORITY_BATCH, PRIORITY_FREE = "koord-prod", "koord-mid", "koord-batch", "koord-free"
_PRIORITY_RANGES = ((9000, 9999, PRIORITY_PROD), (7000, 7999, PRIORITY_MID), (5000, 5999, PRIORITY_BATCH),
                    (3000, 3999, PRIORITY_FREE))
BATCH_CPU, BATCH_MEMORY = "kubernetes.io/batch-cpu", "kubernetes.io/batch-memory"
MID_CPU, MID_MEMORY = "kubernetes.io/mid-cpu", "kubernetes.io/mid-memory"
_TRANSLATED = {PRIORITY_BATCH: {CPU: BATCH_CPU, MEMORY: BATCH_MEMORY}, PRIORITY_MID: {CPU: MID_CPU, MEMORY: MID_MEMORY}}

# Estimates for a pod that asks for nothing (estimator.DefaultMilliCPURequest / DefaultMemoryRequest).
DEFAULT_MILLI_CPU_REQUEST = 250
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

# LoadAwareSchedulingArgs (v1beta3) fields; None means "defaulted below".
ARGS: dict[str, Any] = {
    "filterExpiredNodeMetrics": True,
    "nodeMetricExpirationSeconds": 180,
    "enableScheduleWhenNodeMetricsExpired": False,
    "resourceWeights": None,
    "dominantResourceWeight": 0,
    "usageThresholds": None,
    "prodUsageThresholds": None,
    "prodUsageIncludeSys": False,
    "scoreAccordingProdUsage": False,
    "estimator": "",
    "estimatedScalingFactors": None,
    "estimatedSecondsAfterPodScheduled": None,
    "estimatedSecondsAfterInitialized": None,
    "allowCustomizeEstimation": False,
    "aggregated": None,
    "supportedResources": None,
}
DEFAULT_RESOURCE_WEIGHTS = {CPU: 1, MEMORY: 1}
DEFAULT_USAGE_THRESHOLDS = {CPU: 65, MEMORY: 95}
DEFAULT_SCALING_FACTORS = {CPU: 85, MEMORY: 70}
AGGREGATED_FIELDS = ("usageThresholds", "usageAggregationType", "usageAggregatedDuration",
                     "scoreAggregationType", "scoreAggregatedDuration")


# -- args ------------------------------------------------------------------------------------------

def _int(value: Any, where: str, low: int | None = None, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{NAME} args: {where}: must be an integer, got {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise InputError(f"{NAME} args: {where}: Invalid value: {value}: must be in {bounds}")
    return value


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise InputError(f"{NAME} args: {where}: must be true or false, got {value!r}")
    return value


def _resource_map(value: Any, where: str, low: int, high: int) -> dict[str, int]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"{NAME} args: {where}: must be a map of resource name to integer")
    return {str(k): _int(v, f"{where}[{k}]", low, high) for k, v in value.items()}


def _aggregation_type(value: Any, where: str) -> str:
    value = value or ""
    if value not in ("", *AGGREGATION_TYPES):
        raise InputError(f"{NAME} args: {where}: Unsupported value: {value!r}: "
                         f"supported values: {', '.join(AGGREGATION_TYPES)}")
    return value


def _duration(value: Any, where: str) -> float:
    if value in (None, ""):
        return 0.0
    try:
        seconds = parse_duration(value)
    except ValueError as err:
        raise InputError(f"{NAME} args: {where}: {err}") from None
    if seconds < 0:
        raise InputError(f"{NAME} args: {where}: Invalid value: {value!r}: must be non-negative")
    return seconds


@dataclass
class Aggregated:
    usage_thresholds: dict[str, int]
    usage_type: str
    usage_duration: float
    score_type: str
    score_duration: float


@dataclass
class LoadAwareArgs:
    """LoadAwareSchedulingArgs after defaulting (v1beta3 SetDefaults) and validation."""

    filter_expired: bool
    expiration_seconds: int | None
    schedule_when_expired: bool
    resource_weights: dict[str, int]
    dominant_weight: int
    usage_thresholds: dict[str, int]
    prod_usage_thresholds: dict[str, int]
    prod_usage_include_sys: bool
    score_according_prod_usage: bool
    scaling_factors: dict[str, int]
    seconds_after_scheduled: int | None
    seconds_after_initialized: int | None
    allow_customize: bool
    aggregated: Aggregated | None
    supported_resources: list[str]

    @property
    def filter_with_aggregation(self) -> bool:
        agg = self.aggregated
        return agg is not None and bool(agg.usage_thresholds) and agg.usage_type != ""


def parse_args(raw: Mapping | None) -> LoadAwareArgs:
    """Defaults and validates LoadAwareSchedulingArgs (ValidateLoadAwareSchedulingArgs)."""
    a = plugin_args(raw, ARGS, NAME)
    expiration = a["nodeMetricExpirationSeconds"]
    if expiration is not None:
        expiration = _int(expiration, "nodeMetricExpirationSeconds", 1)
    dominant = _int(a["dominantResourceWeight"], "dominantResourceWeight", 0, 100)
    weights = _resource_map(a["resourceWeights"], "resourceWeights", 1, 100)
    if not weights and dominant == 0:
        weights = dict(DEFAULT_RESOURCE_WEIGHTS)
    thresholds = _resource_map(a["usageThresholds"], "usageThresholds", 0, 100)
    if not thresholds:
        thresholds = dict(DEFAULT_USAGE_THRESHOLDS)
    factors = _resource_map(a["estimatedScalingFactors"], "estimatedScalingFactors", 1, 100)
    factors = {**DEFAULT_SCALING_FACTORS, **factors}
    missing = sorted(set(weights) - set(factors))
    if missing:
        raise InputError(f"{NAME} args: estimatedScalingFactors[{missing[0]}]: Required value: "
                         "every resource in resourceWeights needs an estimated scaling factor")
    estimator = a["estimator"] or "default"
    if estimator != "default":
        raise InputError(f"{NAME} args: estimator: Unsupported value: {estimator!r}: supported values: default")
    after = {}
    for key in ("estimatedSecondsAfterPodScheduled", "estimatedSecondsAfterInitialized"):
        after[key] = None if a[key] is None else _int(a[key], key)
    aggregated = None
    if a["aggregated"] is not None:
        raw_agg = a["aggregated"]
        if not isinstance(raw_agg, Mapping):
            raise InputError(f"{NAME} args: aggregated: must be a mapping")
        unknown = sorted(set(raw_agg) - set(AGGREGATED_FIELDS))
        if unknown:
            raise InputError(f"{NAME} args: aggregated: unknown field(s) {', '.join(unknown)}; "
                             f"known: {', '.join(AGGREGATED_FIELDS)}")
        aggregated = Aggregated(
            _resource_map(raw_agg.get("usageThresholds"), "aggregated.usageThresholds", 0, 100),
            _aggregation_type(raw_agg.get("usageAggregationType"), "aggregated.usageAggregationType"),
            _duration(raw_agg.get("usageAggregatedDuration"), "aggregated.usageAggregatedDuration"),
            _aggregation_type(raw_agg.get("scoreAggregationType"), "aggregated.scoreAggregationType"),
            _duration(raw_agg.get("scoreAggregatedDuration"), "aggregated.scoreAggregatedDuration"))
    supported = a["supportedResources"] or []
    if not isinstance(supported, list) or not all(isinstance(s, str) for s in supported):
        raise InputError(f"{NAME} args: supportedResources: must be a list of resource names")
    return LoadAwareArgs(
        _bool(a["filterExpiredNodeMetrics"], "filterExpiredNodeMetrics"), expiration,
        _bool(a["enableScheduleWhenNodeMetricsExpired"], "enableScheduleWhenNodeMetricsExpired"),
        weights, dominant, thresholds,
        _resource_map(a["prodUsageThresholds"], "prodUsageThresholds", 0, 100),
        _bool(a["prodUsageIncludeSys"], "prodUsageIncludeSys"),
        _bool(a["scoreAccordingProdUsage"], "scoreAccordingProdUsage"),
        factors, after["estimatedSecondsAfterPodScheduled"], after["estimatedSecondsAfterInitialized"],
        _bool(a["allowCustomizeEstimation"], "allowCustomizeEstimation"), aggregated, list(supported))


def resource_names(args: LoadAwareArgs) -> list[str]:
    """NewResourceVectorizerFromArgs: cpu, memory and every resource the args name, sorted."""
    names = {CPU, MEMORY, *args.resource_weights, *args.usage_thresholds, *args.prod_usage_thresholds,
             *args.scaling_factors, *args.supported_resources}
    if args.aggregated is not None:
        names |= set(args.aggregated.usage_thresholds)
    return sorted(names)


# -- koordinator pod facts ---------------------------------------------------------------------------

def priority_class(pod: Pod) -> str:
    """GetPodPriorityClassWithDefault: the label, else spec.priority's band, else from the QoS class."""
    label = pod.labels.get(LABEL_PRIORITY_CLASS)
    if label in (PRIORITY_PROD, PRIORITY_MID, PRIORITY_BATCH, PRIORITY_FREE):
        return label
    priority = pod.spec.get("priority")
    if isinstance(priority, int):
        for low, high, name in _PRIORITY_RANGES:
            if low <= priority <= high:
                return name
    qos = pod.labels.get(LABEL_QOS)
    if qos in ("LSE", "LSR", "LS", "SYSTEM"):
        return PRIORITY_PROD
    if qos == "BE":
        return PRIORITY_BATCH
    single = pod._single_container
    if single is not None:  # identical containers share one parsed object: compute its QoS once
        kube_qos = _QOS_BY_CONTAINER.get(id(single))
        if kube_qos is None or kube_qos[0] is not single:
            kube_qos = _QOS_BY_CONTAINER[id(single)] = (single, pod.qos_class)
        kube_qos = kube_qos[1]
    else:
        kube_qos = pod.qos_class
    return PRIORITY_BATCH if kube_qos == "BestEffort" else PRIORITY_PROD


_QOS_BY_CONTAINER: dict[int, tuple[Any, str]] = {}


def is_daemonset_pod(pod: Pod) -> bool:
    """Tells whether any owner reference is a DaemonSet (isDaemonSetPod)."""
    return any(isinstance(o, Mapping) and o.get("kind") == "DaemonSet"
               for o in pod._meta.get("ownerReferences") or ())


def _go_round(x: float) -> int:
    """math.Round: half away from zero."""
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def estimate_resource(requests: ResourceList, limits: ResourceList, name: str, factor: int) -> int:
    """estimatedUsedByResource: factor% of max(request, limit), capped at the limit; defaults when zero."""
    limit, request = limits.get(name, 0), requests.get(name, 0)
    quantity = limit if limit > request else request
    if quantity == 0:
        if name in (CPU, BATCH_CPU):
            return DEFAULT_MILLI_CPU_REQUEST
        if name in (MEMORY, BATCH_MEMORY):
            return DEFAULT_MEMORY_REQUEST
        return 0
    estimated = _go_round(float(quantity) * float(factor) / 100)
    return limit if 0 < limit < estimated else estimated


def custom_scaling_factors(pod: Pod) -> dict[str, int]:
    """The pod's scheduling.koordinator.sh/load-estimated-scaling-factors; {} when absent or malformed."""
    text = pod.annotations.get(ANNOTATION_SCALING_FACTORS)
    if not text:
        return {}
    try:
        factors = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(factors, dict) or not all(isinstance(v, int) and not isinstance(v, bool)
                                                for v in factors.values()):
        return {}
    return {str(k): v for k, v in factors.items()}


def estimate_pod(pod: Pod, factors: Mapping[str, int], allow_customize: bool = False,
                 klass: str | None = None) -> dict[str, int]:
    """DefaultEstimator.EstimatePod: per scaling-factor resource, read through the pod's priority class."""
    if allow_customize:
        custom = custom_scaling_factors(pod)
        if custom:
            factors = {**factors, **custom}
    klass = klass or priority_class(pod)
    # The spec's amounts (koordinator reads PodRequestsAndLimits, blind to in-place resize status).
    single = pod._single_container
    requests, limits = (single.requests, single.limits) if single is not None else (pod.spec_requests, pod.limits)
    out = {}
    for name, factor in factors.items():
        if klass in (PRIORITY_BATCH, PRIORITY_MID):
            real = _TRANSLATED[klass].get(name, "")
        elif klass == PRIORITY_FREE:
            real = ""
        else:
            real = name
        out[name] = estimate_resource(requests, limits, real, factor) if real else 0
    return out


def node_allocatable(node) -> ResourceList:
    """EstimateNode: status.allocatable, overridden per key by node.koordinator.sh/raw-allocatable."""
    text = node.annotations.get(ANNOTATION_RAW_ALLOCATABLE)
    if not text:
        return node.allocatable
    try:
        raw = json.loads(text)
        override = parse_resource_list({str(k): str(v) for k, v in raw.items()}) if isinstance(raw, dict) else {}
    except (ValueError, TypeError):
        return node.allocatable
    return {**node.allocatable, **override} if override else node.allocatable


def _condition_time(pod: Pod, kind: str) -> float | None:
    """Returns the lastTransitionTime (epoch seconds) of a True pod condition, or None."""
    for c in (pod.raw.get("status") or {}).get("conditions") or ():
        if isinstance(c, dict) and c.get("type") == kind and c.get("status") == "True" and c.get("lastTransitionTime"):
            return _timestamp(c["lastTransitionTime"])
    return None


@lru_cache(maxsize=65536)
def _timestamp(text: Any) -> float | None:
    try:
        return parse_time(text).timestamp()
    except (ValueError, TypeError):
        return None


def _annotation_seconds(pod: Pod, key: str) -> int:
    try:
        return int(pod.annotations.get(key, ""))
    except ValueError:
        return -1


# -- the per-ClusterState tables ------------------------------------------------------------------------

@dataclass
class _Entry:
    usage: np.ndarray
    prod: bool


class LoadTable:
    """Per-node matrices (N, R) over the plugin's resources, for one ClusterState.

    alloc, node_usage, aggregated usages, and the podAssignCache sums: prod_usage (usage of pods
    prod by both pod and metric), node_delta / prod_delta (estimates above reported usage of pods
    not yet in the metric), node_estimated (full estimates of all assigned pods).
    """

    def __init__(self, plugin: "LoadAwareScheduling", cluster: ClusterState):
        self.plugin = plugin
        self.cluster = cluster
        args = plugin.args
        self.names = plugin.resources
        self.col = {r: k for k, r in enumerate(self.names)}
        n, r = cluster.n, len(self.names)
        self.n = n
        self.alloc = np.zeros((n, r), dtype=np.int64)
        for i, node in enumerate(cluster.nodes):
            self.alloc[i] = self.vec(node_allocatable(node))
        metrics = plugin.metrics
        self.metric: list[NodeMetric | None] = [metrics.get(name) for name in cluster.names]
        self.has_metric = np.array([m is not None for m in self.metric], dtype=bool)
        self.info = np.array([m is not None and m.info for m in self.metric], dtype=bool)
        self.update = np.array([m.update_time.timestamp() if m is not None and m.update_time is not None else np.nan
                                for m in self.metric], dtype=np.float64)
        self.interval = np.array([m.report_interval if m is not None else 60.0 for m in self.metric])
        self.node_usage = np.zeros((n, r), dtype=np.int64)
        self.system_usage = np.zeros((n, r), dtype=np.int64)
        self.pod_usage: dict[int, dict[tuple[str, str], _Entry]] = {}
        self._agg: dict[tuple[str, float], tuple[np.ndarray, np.ndarray]] = {}
        for i in np.flatnonzero(self.has_metric).tolist():
            m = self.metric[i]
            self.node_usage[i] = self.vec(m.node_usage)
            if args.prod_usage_include_sys:
                self.system_usage[i] = self.vec(m.system_usage)
            self.pod_usage[i] = {(p.namespace, p.name): _Entry(self.vec(p.usage), p.priority == PRIORITY_PROD)
                                 for p in m.pods}
        self._profiles()
        self.prod_usage = np.zeros((n, r), dtype=np.int64)
        self.node_delta = np.zeros((n, r), dtype=np.int64)
        self.prod_delta = np.zeros((n, r), dtype=np.int64)
        self.node_estimated = np.zeros((n, r), dtype=np.int64)
        self.counts = cluster.pod_count.copy()
        self._facts: dict[int, tuple[Pod, np.ndarray | None, float, float, bool]] = {}
        self.changed: list[int] = []  # rows changed since the table was built, for cached filter views
        self._rebuild(np.flatnonzero(self.has_metric).tolist())

    def vec(self, amounts: Mapping[str, int]) -> np.ndarray:
        """ToVec/ToFactorVec: names the plugin does not know are ignored."""
        out = np.zeros(len(self.names), dtype=np.int64)
        for name, v in amounts.items():
            k = self.col.get(name)
            if k is not None:
                out[k] = v
        return out

    # -- aggregated usages ------------------------------------------------------------------------

    def aggregated(self, agg_type: str, duration: float) -> tuple[np.ndarray, np.ndarray]:
        """getTargetAggregatedUsage for every node: (usage (N,R), present (N,)).

        Duration 0 means the longest duration the metric reports for that type, falling back to
        the node usage when it reports none.
        """
        key = (agg_type, duration)
        if key not in self._agg:
            usage = np.zeros((self.n, len(self.names)), dtype=np.int64)
            present = np.zeros(self.n, dtype=bool)
            for i in np.flatnonzero(self.info).tolist():
                found = self.metric[i].aggregated
                if duration == 0:
                    durations = [d for (t, d) in found if t == agg_type]
                    if durations:
                        usage[i] = self.vec(found[(agg_type, max(durations))])
                    else:
                        usage[i] = self.node_usage[i]
                    present[i] = True
                elif key in found:
                    usage[i] = self.vec(found[key])
                    present[i] = True
            self._agg[key] = (usage, present)
        return self._agg[key]

    # -- thresholds -------------------------------------------------------------------------------

    def _profiles(self) -> None:
        """generateUsageThresholdsFilterProfile per node: args, replaced part by part by the node annotation."""
        args = self.plugin.args
        n, r = self.n, len(self.names)
        self.thresholds = np.zeros((n, r), dtype=np.int64)
        self.prod_thresholds = np.zeros((n, r), dtype=np.int64)
        self.agg_thresholds = np.zeros((n, r), dtype=np.int64)
        self.agg_code = np.full(n, -1, dtype=np.int32)  # index into agg_keys, -1: no aggregated thresholds
        self.agg_keys: list[tuple[str, float]] = []
        base_agg = ((args.aggregated.usage_thresholds, args.aggregated.usage_type, args.aggregated.usage_duration)
                    if args.filter_with_aggregation else None)
        by_text: dict[str | None, tuple] = {}
        for i, node in enumerate(self.cluster.nodes):
            text = node.annotations.get(ANNOTATION_USAGE_THRESHOLDS)
            if text not in by_text:
                by_text[text] = self._profile(text, args, base_agg)
            usage, prod, agg = by_text[text]
            self.thresholds[i], self.prod_thresholds[i] = usage, prod
            if agg is not None:
                self.agg_thresholds[i] = agg[0]
                key = (agg[1], agg[2])
                if key not in self.agg_keys:
                    self.agg_keys.append(key)
                self.agg_code[i] = self.agg_keys.index(key)

    def _profile(self, text: str | None, args: LoadAwareArgs, base_agg):
        usage, prod, agg = args.usage_thresholds, args.prod_usage_thresholds, base_agg
        custom = None
        if text:
            try:
                custom = json.loads(text)
            except ValueError:
                custom = None
        if isinstance(custom, dict):
            usage = _threshold_map(custom.get("usageThresholds")) or usage
            prod = _threshold_map(custom.get("prodUsageThresholds")) or prod
            custom_agg = custom.get("aggregatedUsage")
            if isinstance(custom_agg, dict):
                thresholds = _threshold_map(custom_agg.get("usageThresholds"))
                agg_type = custom_agg.get("usageAggregationType") or ""
                if thresholds and agg_type:
                    try:
                        duration = parse_duration(custom_agg.get("usageAggregatedDuration") or 0)
                    except ValueError:
                        duration = 0.0
                    agg = (thresholds, agg_type, duration)
        agg_vec = None if agg is None else (self.vec(agg[0]), agg[1], agg[2])
        return self.vec(usage), self.vec(prod), agg_vec

    # -- the pod assign cache -----------------------------------------------------------------------

    def _pod_facts(self, pod: Pod) -> tuple[Pod, np.ndarray | None, float, float, bool]:
        """Returns (pod, estimate or None, assign time, forced-estimation deadline or nan, prod) of an assigned pod.

        The assign time is the PodScheduled condition's lastTransitionTime, else now (a pod kplan
        places); the deadline comes from estimatedSecondsAfterPodScheduled/Initialized (or the
        pod's annotations when allowCustomizeEstimation).
        """
        facts = self._facts.get(id(pod))
        if facts is not None and facts[0] is pod:
            return facts
        plugin = self.plugin
        args = plugin.args
        klass = priority_class(pod)
        estimate = plugin.estimate(pod, klass)
        if not estimate.any():
            estimate = None
        now = plugin.now_ts
        conditions = (pod.raw.get("status") or {}).get("conditions")
        scheduled = _condition_time(pod, "PodScheduled") if conditions else None
        stamp = scheduled if scheduled is not None else now
        after_scheduled = after_initialized = -1
        if args.allow_customize:
            after_scheduled = _annotation_seconds(pod, ANNOTATION_SECONDS_AFTER_SCHEDULED)
            after_initialized = _annotation_seconds(pod, ANNOTATION_SECONDS_AFTER_INITIALIZED)
        if args.seconds_after_scheduled is not None and after_scheduled < 0:
            after_scheduled = args.seconds_after_scheduled
        if args.seconds_after_initialized is not None and after_initialized < 0:
            after_initialized = args.seconds_after_initialized
        deadline = math.nan
        initialized = _condition_time(pod, "Initialized") if after_initialized > 0 and conditions else None
        if initialized is not None:
            deadline = initialized + after_initialized
        elif after_scheduled > 0:
            deadline = stamp + after_scheduled
        facts = (pod, estimate, stamp, deadline, klass == PRIORITY_PROD)
        self._facts[id(pod)] = facts
        return facts

    def _terms(self, i: int, pod: Pod) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None,
                                                 np.ndarray | None]:
        """What one pod on node i adds: (prod usage, node delta, node estimate, prod delta); None adds nothing."""
        _, estimate, stamp, deadline, prod = self._pod_facts(pod)
        entry = self.pod_usage[i].get((pod.namespace, pod.name))
        usage = entry.usage if entry is not None else None
        active_prod = prod and entry is not None and entry.prod
        prod_usage = usage if active_prod else None
        if estimate is None:
            return prod_usage, None, None, None
        update = self.update[i] if not math.isnan(self.update[i]) else -math.inf
        should = (usage is None or update - self.interval[i] < stamp
                  or (not math.isnan(deadline) and deadline > update))
        node_delta = (estimate if usage is None else np.maximum(estimate - usage, 0)) if should else None
        prod_delta = None
        if prod:
            if not active_prod and usage is not None:
                usage, should = None, True
            if should:
                prod_delta = estimate if usage is None else np.maximum(estimate - usage, 0)
        return prod_usage, node_delta, estimate, prod_delta

    def account(self, i: int, pod: Pod, sign: int) -> None:
        """nodeInfo.addPod (sign +1) or deletePod (sign -1) for node i."""
        if not self.has_metric[i]:
            return
        for matrix, term in zip((self.prod_usage, self.node_delta, self.node_estimated, self.prod_delta),
                                self._terms(i, pod)):
            if term is not None:
                matrix[i] += sign * term
        self.changed.append(i)

    def _rebuild(self, rows: list[int]) -> None:
        """Recomputes the cached sums of the given nodes from their pods (NodeMetric add/update)."""
        if not rows:
            return
        rows_arr = np.asarray(rows, dtype=np.intp)
        for m in (self.node_delta, self.prod_delta, self.node_estimated):
            m[rows_arr] = 0
        self.prod_usage[rows_arr] = self.system_usage[rows_arr]
        at: tuple[list[int], list[int], list[int], list[int]] = ([], [], [], [])
        terms: tuple[list, list, list, list] = ([], [], [], [])
        for i in rows:
            for pod in self.cluster.pods_by_node[i]:
                for k, term in enumerate(self._terms(i, pod)):
                    if term is not None:
                        at[k].append(i)
                        terms[k].append(term)
        for k, matrix in enumerate((self.prod_usage, self.node_delta, self.node_estimated, self.prod_delta)):
            if at[k]:
                np.add.at(matrix, np.asarray(at[k], dtype=np.intp), np.vstack(terms[k]))
        self.changed.extend(rows)

    def sync(self) -> None:
        """Rebuilds the rows of nodes whose pods changed behind the plugin's back (forget, a what-if undo)."""
        counts = self.cluster.pod_count
        if len(counts) == len(self.counts) and np.array_equal(counts, self.counts):
            return
        rows = np.flatnonzero(counts != self.counts)
        self._rebuild([i for i in rows.tolist() if self.has_metric[i]])
        self.counts = counts.copy()

    # -- what the extension points read -------------------------------------------------------------

    def expired(self, now: float) -> np.ndarray:
        """isNodeMetricExpired per node (nodes without a metric are not expired: they have none)."""
        seconds = self.plugin.args.expiration_seconds
        if seconds is None:
            return np.zeros(self.n, dtype=bool)
        nil = np.isnan(self.update)
        with np.errstate(invalid="ignore"):
            old = (now - self.update) >= seconds
        return self.has_metric & (nil | old)

    def sources(self, prod: np.ndarray | bool, agg_rows: dict[tuple[str, float], np.ndarray] | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per node: (prod path?, the usage to start from, is that usage reported?).

        `agg_rows` maps an aggregation (type, duration) to the nodes that read it; the rest read
        status.nodeMetric.nodeUsage.
        """
        n = self.n
        prod = np.broadcast_to(np.asarray(prod, dtype=bool), (n,))
        usage = self.node_usage
        present = np.ones(n, dtype=bool)
        if agg_rows:
            usage = usage.copy()
            for key, rows in agg_rows.items():
                agg_usage, agg_present = self.aggregated(*key)
                usage[rows] = agg_usage[rows]
                present[rows] = agg_present[rows]
        return prod, usage, present

    def existing(self, sources: tuple[np.ndarray, np.ndarray, np.ndarray], rows: np.ndarray | None = None
                 ) -> np.ndarray:
        """getEstimatedOfExisting: prod usage + prod delta, usage + delta, or the full estimates (no usage)."""
        prod, usage, present = sources
        sel = slice(None) if rows is None else rows
        out = np.where(present[sel, None], usage[sel] + self.node_delta[sel], self.node_estimated[sel])
        return np.where(prod[sel, None], self.prod_usage[sel] + self.prod_delta[sel], out)


@dataclass
class FilterView:
    """Per node: the thresholds that apply, and usage of existing pods before and after the incoming pod."""

    table: LoadTable
    incoming: np.ndarray
    use_prod: np.ndarray
    use_agg: np.ndarray
    thresholds: np.ndarray
    enabled: np.ndarray  # thresholds apply and a NodeMetric exists
    stale: np.ndarray  # the NodeMetric is expired (whatever filterExpiredNodeMetrics says)
    expired: np.ndarray  # enabled, stale, and filterExpiredNodeMetrics
    check: np.ndarray  # usage is compared
    before: np.ndarray
    after: np.ndarray
    sources: tuple[np.ndarray, np.ndarray, np.ndarray]
    generation: int  # len(table.changed) when before/after were last brought up to date
    dirty: np.ndarray | None = None  # rows updated by the last call (None: all rows are new)
    mask: np.ndarray | None = None  # the Filter's (N, K) reason mask, kept by filter()


FILTER_VIEW_KEY = "FilterView" + NAME


def _threshold_map(value: Any) -> dict[str, int]:
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, int) and not isinstance(v, bool)}


def usage_percent(estimated: np.ndarray, total: np.ndarray) -> np.ndarray:
    """int64(math.Round(float64(estimated) / float64(total) * 100)), 0 where total is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        x = estimated.astype(np.float64) / total.astype(np.float64) * 100
    x = np.where(total == 0, 0.0, x)
    rounded = np.where(x - np.floor(x) >= 0.5, np.ceil(x), np.floor(x))
    return rounded.astype(np.int64)


def least_used_scores(used: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """leastUsedScore per element: (capacity - used) * 100 / capacity, 0 when over or capacity is 0."""
    safe = np.where(capacity == 0, 1, capacity)
    score = (capacity - used) * MAX_NODE_SCORE // safe
    return np.where((capacity == 0) | (used > capacity), 0, score)


def _format(resource: str, amount: int) -> str:
    """Formats for a line of text ("9.6Gi", "1700m"); koordinator's batch and mid memory are bytes too."""
    return readable_amount(MEMORY if resource in (BATCH_MEMORY, MID_MEMORY) else resource, amount, round_up=False)


class LoadAwareScheduling:
    """Rejects nodes whose estimated usage would pass the thresholds or whose metrics are stale; prefers idle nodes."""

    name = NAME

    def __init__(self, args: Mapping | None = None, handle: Handle | None = None):
        self.args = parse_args(args)
        self.handle = handle or Handle()
        self.resources = resource_names(self.args)
        self.weights = np.array([self.args.resource_weights.get(r, 0) for r in self.resources], dtype=np.int64)
        self._now: datetime | None = None
        self._metrics: dict[str, NodeMetric] | None = None
        self._table: LoadTable | None = None
        self._estimates: dict[tuple[int, str], tuple[Any, np.ndarray]] = {}

    # -- shared state ---------------------------------------------------------------------------------

    @property
    def now(self) -> datetime:
        """Handle.now (kplan's --now), else the time of the first question, fixed for the run."""
        if self.handle.now is not None:
            now = self.handle.now
            return now if now.tzinfo else now.replace(tzinfo=timezone.utc)
        if self._now is None:
            self._now = datetime.now(timezone.utc)
        return self._now

    @property
    def now_ts(self) -> float:
        return self.now.timestamp()

    @property
    def metrics(self) -> dict[str, NodeMetric]:
        """The snapshot's NodeMetrics, parsed once per handle (shared by every profile)."""
        if self._metrics is None:
            key = "kplan.NodeMetrics"
            cached = self.handle.extra.get(key)
            if cached is None or cached[0] is not self.handle.snapshot:
                cached = (self.handle.snapshot, snapshot_node_metrics(self.handle.snapshot)[0])
                self.handle.extra[key] = cached
            self._metrics = cached[1]
        return self._metrics

    def table(self, cluster: ClusterState) -> LoadTable:
        """Returns the matrices for this ClusterState, built on first use and kept in step with it."""
        if self._table is None or self._table.cluster is not cluster or self._table.n != cluster.n:
            self._table = LoadTable(self, cluster)
        else:
            self._table.sync()
        return self._table

    def estimate(self, pod: Pod, klass: str | None = None) -> np.ndarray:
        """The pod's estimate as a vector over the plugin's resources (shared between identical pods)."""
        klass = klass or priority_class(pod)
        single = pod._single_container
        key = None
        if single is not None and not (self.args.allow_customize and ANNOTATION_SCALING_FACTORS in pod.annotations):
            key = (id(single), klass)
            cached = self._estimates.get(key)
            if cached is not None and cached[0] is single:
                return cached[1]
        amounts = estimate_pod(pod, self.args.scaling_factors, self.args.allow_customize, klass)
        vec = np.array([amounts.get(r, 0) for r in self.resources], dtype=np.int64)
        vec.setflags(write=False)
        if key is not None:
            self._estimates[key] = (single, vec)
        return vec

    def _incoming(self, state: CycleState, pod: Pod) -> np.ndarray:
        vec = state.get(INCOMING_ESTIMATED_KEY)
        if vec is None:
            vec = self.estimate(pod)
            state.write(INCOMING_ESTIMATED_KEY, vec)
        return vec

    # -- extension points ---------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> Status | None:
        """Estimates the incoming pod once for Filter and Score."""
        self.table(cluster)
        self._incoming(state, pod)
        return None

    def view(self, pod: Pod | None, cluster: ClusterState, incoming: np.ndarray | None = None,
             cached: "FilterView | None" = None) -> "FilterView":
        """Computes, for every node, what Filter compares: thresholds, existing and estimated usage.

        Given the view of an earlier call in the same cycle (preemption re-runs Filter node by
        node), only the rows changed since are recomputed.
        """
        t = self.table(cluster)
        if cached is not None and cached.table is t:
            rows = np.unique(np.asarray(t.changed[cached.generation:], dtype=np.intp))
            if len(rows):
                cached.before[rows] = t.existing(cached.sources, rows)
                cached.after[rows] = cached.before[rows] + cached.incoming
            cached.generation = len(t.changed)
            cached.dirty = rows
            return cached
        args = self.args
        n = t.n
        if incoming is None:
            incoming = self.estimate(pod) if pod is not None else np.zeros(len(self.resources), dtype=np.int64)
        pod_prod = pod is not None and priority_class(pod) == PRIORITY_PROD
        use_prod = pod_prod & t.prod_thresholds.any(axis=1)
        use_agg = ~use_prod & (t.agg_code >= 0)
        thresholds = np.where(use_prod[:, None], t.prod_thresholds,
                              np.where(use_agg[:, None], t.agg_thresholds, t.thresholds))
        enabled = thresholds.any(axis=1) & t.has_metric
        stale = t.expired(self.now_ts)
        expired = enabled & stale if args.filter_expired else np.zeros(n, dtype=bool)
        check = enabled & ~expired & t.info
        sources = t.sources(use_prod, {key: use_agg & (t.agg_code == k) for k, key in enumerate(t.agg_keys)})
        before = t.existing(sources)
        return FilterView(t, incoming, use_prod, use_agg, thresholds, enabled, stale, expired, check, before,
                          before + incoming, sources, len(t.changed))

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> NodeStatus:
        if is_daemonset_pod(pod):
            return NodeStatus.passing(cluster.n)
        args = self.args
        v = self.view(pod, cluster, self._incoming(state, pod), state.get(FILTER_VIEW_KEY))
        state.write(FILTER_VIEW_KEY, v)
        t, incoming, use_prod, use_agg, thresholds = v.table, v.incoming, v.use_prod, v.use_agg, v.thresholds
        enabled, expired, before, after = v.enabled, v.expired, v.before, v.after
        n, r = t.n, len(self.resources)
        # A view reused within the cycle recomputes only the rows that changed since the last call.
        rows = slice(None) if v.mask is None or v.dirty is None else v.dirty
        if v.mask is None:
            v.mask = np.zeros((n, 1 + 2 * r), dtype=bool)
            v.mask[:, 0] = expired if not args.schedule_when_expired else False
        if isinstance(rows, slice) or len(rows):
            alloc, limit = t.alloc[rows], thresholds[rows]
            limited = (limit != 0) & (alloc != 0) & v.check[rows, None]
            over_before = limited & (usage_percent(before[rows], alloc) > limit)
            over_after = limited & (usage_percent(after[rows], alloc) > limit)
            failing = np.where(over_before.any(axis=1)[:, None], over_before, over_after)
            first = np.argmax(failing, axis=1)
            hit = failing.any(axis=1)
            block = np.zeros((len(first), 2 * r), dtype=bool)
            where = np.flatnonzero(hit)
            block[where, first[where] + np.where(use_agg[rows][where], r, 0)] = True
            v.mask[rows, 1:] = block
        mask = v.mask.copy()
        reasons = ([ERR_NODE_METRIC_EXPIRED] + [ERR_USAGE_EXCEED.format(x) for x in self.resources]
                   + [ERR_AGGREGATED_USAGE_EXCEED.format(x) for x in self.resources])
        now = self.now

        def explain(i: int) -> list[str]:
            m = t.metric[i]
            if m is None:
                return ["no NodeMetric for this node: not filtered by load"]
            age = m.age(now)
            lines = [f"NodeMetric updated {'never' if age is None else f'{age:.0f}s ago'}"
                     f" (expires after {args.expiration_seconds}s)"]
            if not enabled[i]:
                return lines + ["no usage thresholds apply: not filtered"]
            if expired[i] or not t.info[i]:
                return lines
            kind = "prod usage" if use_prod[i] else ("aggregated usage" if use_agg[i] else "usage")
            for k, res in enumerate(self.resources):
                if thresholds[i, k] == 0 or t.alloc[i, k] == 0:
                    continue
                pct = int(usage_percent(after[i:i + 1, k], t.alloc[i:i + 1, k])[0])
                lines.append(f"{res}: {kind} of existing pods {_format(res, before[i, k])} "
                             f"+ pod {_format(res, incoming[k])} of {_format(res, t.alloc[i, k])} = {pct}% "
                             f"(threshold {thresholds[i, k]}%)")
            return lines

        return NodeStatus.from_reasons(mask, reasons, Code.UNSCHEDULABLE, explain)

    def score(self, state: CycleState, pod: Pod, cluster: ClusterState, candidates: np.ndarray) -> np.ndarray:
        dominant = self.args.dominant_weight
        if not self.weights.any() and dominant == 0:
            return np.zeros(len(candidates), dtype=np.int64)
        t = self.table(cluster)
        args = self.args
        incoming = self._incoming(state, pod)
        prod = args.score_according_prod_usage and priority_class(pod) == PRIORITY_PROD
        agg = args.aggregated
        key = (agg.score_type, agg.score_duration) if (not prod and agg is not None and agg.score_type) else None
        c = np.asarray(candidates, dtype=np.intp)
        used = t.existing(t.sources(prod, {key: np.ones(t.n, dtype=bool)} if key else None), c) + incoming
        scores = least_used_scores(used, t.alloc[c])
        total = scores @ self.weights
        weight_sum = int(self.weights.sum()) + dominant
        if dominant:
            total = total + dominant * np.minimum(scores.min(axis=1, initial=MAX_NODE_SCORE), MAX_NODE_SCORE)
        out = total // weight_sum if weight_sum > 0 else np.zeros(len(c), dtype=np.int64)
        fresh = t.has_metric[c] & ~t.expired(self.now_ts)[c] & t.info[c]
        return np.where(fresh, out, 0).astype(np.int64)

    def reserve(self, state: CycleState, pod: Pod, cluster: ClusterState, node: int) -> Status | None:
        """Adds the placed pod to its node's estimate (podAssignCache.assign)."""
        t = self.table(cluster)
        t.account(node, pod, +1)
        t.counts[node] += 1
        return None

    def unreserve(self, state: CycleState, pod: Pod, cluster: ClusterState, node: int) -> None:
        """Takes the pod's estimate off its node again (podAssignCache.unAssign). The table is not
        synced first: kplan assumes a pod only after Reserve, so the node table never held it."""
        t = self._table
        if t is not None and t.cluster is cluster:
            t.account(node, pod, -1)
            t.counts[node] -= 1
