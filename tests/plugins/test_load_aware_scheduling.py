"""LoadAwareScheduling, ported from koordinator's pkg/scheduler/plugins/loadaware tests.

- TestFilterExpiredNodeMetric, TestFilterUsage, TestScore in load_aware_test.go (the newest
  version the index holds; upstream's time.Now() is the fixed NOW here, and a podAssignInfo's
  timestamp is the pod's PodScheduled condition). Two adaptations to the newest cache semantics
  (pod_assign_cache.go: "only use prod pod's usage when both pod claims and node metric reports
  it as prod"): the prod pods of the prod-threshold filter cases are bound to the node and
  reported as koord-prod in podsMetric, and so is the assigned pod of "score prod Pod". "score
  request less than limit" is left out: its 88 came from the estimator that scaled a limit above
  the request by 100 %, which the newest estimator no longer does (see "estimate burstable pod").
  The newest Score returns 0 for a NodeMetric without status.nodeMetric, so the score cases whose
  metric had none ("score empty node", "score batch Pod", "score empty pod") report an empty
  nodeUsage, and "score node with nil status.nodeMetric" checks the 0.
- TestDefaultEstimatorEstimatePod, TestDefaultEstimatorEstimateNode in estimator/default_estimator_test.go.
- TestPodAssignCache_OnAdd in pod_assign_cache_test.go (the cached sums nodeDelta, prodDelta,
  nodeEstimated, checked on kplan's per-node rows).
- TestValidateLoadAwareSchedulingArgs in apis/config/validation (validation_pluginargs_test.go),
  except "resourceWeight missing estimatedScalingFactor", only reachable through the internal
  (undefaulted) config API: the versioned API fills cpu and memory factors first.
"""
from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from builders import cluster, container, node, pod
from kplan.api.objects import Node, Pod
from kplan.errors import InputError
from kplan.framework.interfaces import CycleState, Handle
from kplan.framework.status import Code
from kplan.plugins.load_aware_scheduling import (
    DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, DEFAULT_SCALING_FACTORS, LoadAwareScheduling,
    estimate_pod, node_allocatable, parse_args, priority_class,
)
from kplan.sources.snapshot import Snapshot

NOW = datetime(2026, 5, 1, 12, 0, 0, tzinfo=timezone.utc)
GI = 1024**3


def stamp(delta_seconds: float = 0) -> str:
    return (NOW + timedelta(seconds=delta_seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def node_metric(name="test-node-1", *, update=0, usage=None, aggregated=None, pods=None, info=True, interval=60):
    """A NodeMetric dict; update is seconds relative to NOW (None: no updateTime)."""
    status: dict = {}
    if update is not None:
        status["updateTime"] = stamp(update)
    if info:
        status["nodeMetric"] = {"nodeUsage": {"resources": usage or {}}}
        if aggregated:
            status["nodeMetric"]["aggregatedNodeUsages"] = [
                {"duration": d, "usage": {t: {"resources": r} for t, r in by_type.items()}}
                for d, by_type in aggregated.items()]
    if pods:
        status["podsMetric"] = [{"namespace": ns, "name": n, "priority": prio, "podUsage": {"resources": r}}
                                for ns, n, prio, r in pods]
    return {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric", "metadata": {"name": name},
            "spec": {"metricCollectPolicy": {"reportIntervalSeconds": interval}}, "status": status}


def big_node(name="test-node-1", annotations=None):
    return node(name, cpu="96", memory="512Gi", annotations=annotations)


def plugin_for(metrics, args=None):
    handle = Handle(snapshot=Snapshot(objects={"NodeMetric": list(metrics)}), now=NOW)
    return LoadAwareScheduling(args, handle)


def run_filter(plugin, c, p):
    state = CycleState()
    plugin.pre_filter(state, p, c)
    status = plugin.filter(state, p, c)
    return int(status.code[0]), status.reasons_of(0)


def run_score(plugin, c, p):
    state = CycleState()
    plugin.pre_filter(state, p, c)
    return int(plugin.score(state, p, c, np.array([0]))[0])


def scheduled(p: dict, seconds: float) -> dict:
    """Gives a pod a PodScheduled condition `seconds` relative to NOW (the podAssignInfo timestamp)."""
    p["status"]["conditions"] = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp(seconds)}]
    return p


# -- TestFilterExpiredNodeMetric (load_aware_test.go) ------------------------------------------------

@pytest.mark.parametrize("metric, want", [
    pytest.param(node_metric(info=False), None, id="filter healthy nodeMetrics"),
    pytest.param(node_metric(update=None, info=False), "node(s) nodeMetric expired",
                 id="filter unhealthy nodeMetric with nil updateTime"),
    pytest.param(node_metric(update=-180, info=False), "node(s) nodeMetric expired",
                 id="filter unhealthy nodeMetric with expired updateTime"),
])
def test_filter_expired_node_metric(metric, want):
    bare = node("test-node-1")
    bare["status"]["allocatable"] = {}
    bare["status"]["capacity"] = {}
    code, reasons = run_filter(plugin_for([metric]), cluster([bare]), Pod(pod("empty")))
    assert (code, reasons) == ((0, []) if want is None else (Code.UNSCHEDULABLE, [want]))


# -- TestFilterUsage (load_aware_test.go) ---------------------------------------------------------------

PROD_PODS_METRIC = [("default", "prod-pod-1", "koord-prod", {"cpu": "30", "memory": "200Gi"}),
                    ("default", "prod-pod-2", "koord-prod", {"cpu": "33", "memory": "300Gi"})]
HIGH = {"cpu": "63", "memory": "500Gi"}  # cpu usage 65.6%, memory usage 97.6%


def prod_pod(name, node_name=""):
    return pod(name, node_name=node_name, spec={"priority": 9999})


FILTER_USAGE = [
    ("filter normal usage", {}, None, node_metric(usage={"cpu": "60", "memory": "256Gi"}), [], None, None),
    ("filter node missing NodeMetrics", {}, None, None, [], None, None),
    ("filter exceed cpu usage", {}, None, node_metric(usage={"cpu": "70", "memory": "256Gi"}), [], None,
     "node(s) cpu usage exceed threshold"),
    ("filter exceed p95 cpu usage",
     {"aggregated": {"usageThresholds": {"cpu": 60}, "usageAggregationType": "p95", "usageAggregatedDuration": "5m"}},
     None, node_metric(usage={"cpu": "30", "memory": "100Gi"},
                       aggregated={"5m0s": {"p95": {"cpu": "70", "memory": "256Gi"}}}), [], None,
     "node(s) cpu aggregated usage exceed threshold"),
    ("filter exceed memory usage", {}, None, node_metric(usage={"cpu": "30", "memory": "500Gi"}), [], None,
     "node(s) memory usage exceed threshold"),
    ("filter exceed memory usage by custom usage thresholds", {}, {"usageThresholds": {"memory": 60}},
     node_metric(usage={"cpu": "30", "memory": "316Gi"}), [], None, "node(s) memory usage exceed threshold"),
    ("filter exceed p95 cpu usage by custom usage", {},
     {"aggregatedUsage": {"usageThresholds": {"cpu": 60}, "usageAggregationType": "p95",
                          "usageAggregatedDuration": "5m0s"}},
     node_metric(usage={"cpu": "30", "memory": "100Gi"},
                 aggregated={"5m0s": {"p95": {"cpu": "70", "memory": "256Gi"}}}), [], None,
     "node(s) cpu aggregated usage exceed threshold"),
    ("disable filter exceed memory usage", {"usageThresholds": {"memory": 0}}, None,
     node_metric(usage={"cpu": "30", "memory": "500Gi"}), [], None, None),
    ("prod usage filter is not enabled by default", {"usageThresholds": {"cpu": 100, "memory": 100}}, None,
     node_metric(usage=HIGH, pods=PROD_PODS_METRIC),
     [prod_pod("prod-pod-1", "test-node-1"), prod_pod("prod-pod-2", "test-node-1")], None, None),
    ("filter prod cpu usage",
     {"usageThresholds": {"cpu": 100, "memory": 100}, "prodUsageThresholds": {"cpu": 50, "memory": 100}}, None,
     node_metric(usage=HIGH, pods=PROD_PODS_METRIC),
     [prod_pod("prod-pod-1", "test-node-1"), prod_pod("prod-pod-2", "test-node-1")], prod_pod("prod-pod-3"),
     "node(s) cpu usage exceed threshold"),
    ("filter prod memory usage",
     {"usageThresholds": {"cpu": 100, "memory": 100}, "prodUsageThresholds": {"cpu": 100, "memory": 50}}, None,
     node_metric(usage=HIGH, pods=PROD_PODS_METRIC),
     [prod_pod("prod-pod-1", "test-node-1"), prod_pod("prod-pod-2", "test-node-1")], prod_pod("prod-pod-3"),
     "node(s) memory usage exceed threshold"),
    ("filter prod memory usage with custom usage configuration",
     {"usageThresholds": {"cpu": 100, "memory": 100}, "prodUsageThresholds": {"cpu": 100, "memory": 100}},
     {"prodUsageThresholds": {"cpu": 100, "memory": 50}},
     node_metric(usage=HIGH, pods=PROD_PODS_METRIC),
     [prod_pod("prod-pod-1", "test-node-1"), prod_pod("prod-pod-2", "test-node-1")], prod_pod("prod-pod-3"),
     "node(s) memory usage exceed threshold"),
    # Not upstream's: on the threshold. filterNodeUsage rounds the usage to a whole percent and
    # moves on while it is <= the threshold, so a node at exactly 65 % cpu (95 % memory) passes. The
    # empty pod adds the estimator's 250m cpu and 200Mi memory: 62150m + 250m = 65.0 % of 96 cpus,
    # 63150m + 250m = 66.04 %; 486Gi + 200Mi = 94.96 % of 512Gi, rounded to 95.
    ("cpu usage on the threshold passes", {}, None, node_metric(usage={"cpu": "62150m", "memory": "256Gi"}), [],
     None, None),
    ("cpu usage a percent over the threshold", {}, None, node_metric(usage={"cpu": "63150m", "memory": "256Gi"}), [],
     None, "node(s) cpu usage exceed threshold"),
    ("memory usage rounded to the threshold passes", {}, None,
     node_metric(usage={"cpu": "30", "memory": "486Gi"}), [], None, None),
]


@pytest.mark.parametrize("args, custom, metric, pods, test_pod, want",
                         [pytest.param(*case[1:], id=case[0]) for case in FILTER_USAGE])
def test_filter_usage(args, custom, metric, pods, test_pod, want):
    annotations = {"scheduling.koordinator.sh/usage-thresholds": json.dumps(custom)} if custom else None
    c = cluster([big_node(annotations=annotations)], pods)
    plugin = plugin_for([metric] if metric else [], {"filterExpiredNodeMetrics": False, **args})
    code, reasons = run_filter(plugin, c, Pod(test_pod or pod("empty")))
    assert (code, reasons) == ((0, []) if want is None else (Code.UNSCHEDULABLE, [want]))


def test_daemonset_pods_skip_the_filter():
    c = cluster([big_node()])
    plugin = plugin_for([node_metric(usage={"cpu": "90", "memory": "500Gi"})])
    assert run_filter(plugin, c, Pod(pod("ds", owner_kind="DaemonSet")))[0] == 0
    assert run_filter(plugin, c, Pod(pod("rs", owner_kind="ReplicaSet")))[1] == ["node(s) cpu usage exceed threshold"]


# -- TestScore (load_aware_test.go) ------------------------------------------------------------------------

GUARANTEED = {"cpu": "16", "memory": "32Gi"}


def incoming(name="test-pod-1", requests=GUARANTEED, limits=GUARANTEED, priority=None):
    return pod(name, requests=requests, limits=limits, spec={"priority": priority} if priority is not None else None)


P95_ARGS = {"aggregated": {"scoreAggregationType": "p95", "scoreAggregatedDuration": "5m"}}
LOADED = {"cpu": "32", "memory": "10Gi"}
ZERO = {"cpu": "0", "memory": "0Gi"}

SCORE = [
    ("score node with expired nodeMetric", {}, incoming(), [], node_metric(update=-180, info=False), 0),
    ("score node with nil status.nodeMetric", {}, incoming(), [], node_metric(info=False), 0),
    ("score empty node", {}, incoming(), [], node_metric(usage={}), 90),
    ("score node missing NodeMetrics", {}, incoming(), [], None, 0),
    ("score load node", {}, incoming(), [], node_metric(usage=LOADED), 72),
    ("score load node with p95", P95_ARGS, incoming(), [],
     node_metric(usage=ZERO, aggregated={"5m0s": {"p95": LOADED, "p99": {"cpu": "50", "memory": "70Gi"}}}), 72),
    ("score load node with p95 but have not reported usage", P95_ARGS, incoming(), [], node_metric(usage=ZERO), 90),
    ("score load node with p95 but have not reported usage and have assigned pods", P95_ARGS, incoming(),
     [scheduled(pod("assigned-pod-1", node_name="test-node-1", requests=GUARANTEED, limits=GUARANTEED), -600)],
     node_metric(usage=ZERO, pods=[("default", "assigned-pod-1", "", {"cpu": "1", "memory": "1Gi"})]), 81),
    ("score load node with just assigned pod", {}, incoming(),
     [scheduled(pod("assigned-pod-1", node_name="test-node-1", requests=GUARANTEED, limits=GUARANTEED), 0)],
     node_metric(usage=LOADED), 63),
    ("score load node with just assigned pod where after updateTime", {}, incoming(),
     [scheduled(pod("assigned-pod-1", node_name="test-node-1", requests=GUARANTEED, limits=GUARANTEED), 0)],
     node_metric(update=-10, usage=LOADED), 63),
    ("score load node with just assigned pod where before updateTime", {}, incoming(),
     [scheduled(pod("assigned-pod-1", node_name="test-node-1", requests=GUARANTEED, limits=GUARANTEED), -10)],
     node_metric(usage=LOADED), 63),
    # Not upstream's: a pod scheduled long before the metric's last report window (update - 60s) is in the
    # reported usage already, so nothing is estimated for it: the score is that of "score load node".
    ("score load node with a pod assigned before the report window", {}, incoming(),
     [scheduled(pod("assigned-pod-1", node_name="test-node-1", requests=GUARANTEED, limits=GUARANTEED), -600)],
     node_metric(usage=LOADED, pods=[("default", "assigned-pod-1", "", {"cpu": "1", "memory": "1Gi"})]), 72),
    ("score batch Pod", {},
     incoming(requests={"kubernetes.io/batch-cpu": "16000", "kubernetes.io/batch-memory": "32Gi"},
              limits={"kubernetes.io/batch-cpu": "16000", "kubernetes.io/batch-memory": "32Gi"}, priority=5000),
     [], node_metric(usage={}), 90),
    ("score prod Pod", {"scoreAccordingProdUsage": True},
     incoming("prod-pod-1", requests={"cpu": "16000", "memory": "32Gi"}, limits={"cpu": "16000", "memory": "32Gi"},
              priority=9999),
     [scheduled(pod("assign-prod-pod-1", node_name="test-node-1", requests=GUARANTEED, limits=GUARANTEED,
                    spec={"priority": 9999}), 0)],
     node_metric(usage={}, pods=[("default", "assign-prod-pod-1", "koord-prod", {"cpu": "30", "memory": "100Gi"})]),
     38),
    ("score empty pod", {}, pod("test-pod-1"), [], node_metric(usage={}), 99),
]


@pytest.mark.parametrize("args, test_pod_, assigned, metric, want",
                         [pytest.param(*case[1:], id=case[0]) for case in SCORE])
def test_score(args, test_pod_, assigned, metric, want):
    c = cluster([big_node()], assigned)
    plugin = plugin_for([metric] if metric else [], args)
    assert run_score(plugin, c, Pod(test_pod_)) == want


# -- TestDefaultEstimatorEstimatePod / EstimateNode (estimator/default_estimator_test.go) -----------------

ESTIMATE = [
    ("estimate empty pod", pod("p", containers=[container("main")]), None,
     {"cpu": DEFAULT_MILLI_CPU_REQUEST, "memory": DEFAULT_MEMORY_REQUEST}),
    ("estimate guaranteed pod", pod("p", requests={"cpu": "4", "memory": "8Gi"}, limits={"cpu": "4", "memory": "8Gi"}),
     None, {"cpu": 3400, "memory": 6012954214}),
    ("estimate burstable pod", pod("p", requests={"cpu": "4", "memory": "8Gi"}, limits={"cpu": "8", "memory": "8Gi"}),
     None, {"cpu": 6800, "memory": 6012954214}),
    ("estimate guaranteed pod and zoomed cpu factors",
     pod("p", requests={"cpu": "4", "memory": "8Gi"}, limits={"cpu": "4", "memory": "8Gi"}), {"cpu": 110},
     {"cpu": 4000, "memory": 6012954214}),
    ("estimate guaranteed pod and zoomed memory factors",
     pod("p", requests={"cpu": "4", "memory": "8Gi"}, limits={"cpu": "4", "memory": "8Gi"}), {"memory": 110},
     {"cpu": 3400, "memory": 8589934592}),
    ("estimate Batch pod",
     pod("p", labels={"koordinator.sh/qosClass": "BE"}, spec={"priority": 5000},
         requests={"kubernetes.io/batch-cpu": "4000", "kubernetes.io/batch-memory": "8Gi"},
         limits={"kubernetes.io/batch-cpu": "4000", "kubernetes.io/batch-memory": "8Gi"}),
     None, {"cpu": 3400, "memory": 6012954214}),
    ("estimate pod only has request",
     pod("p", labels={"koordinator.sh/qosClass": "LS"}, spec={"priority": 9999},
         requests={"cpu": "4", "memory": "8Gi"}),
     {"cpu": 80, "memory": 80}, {"cpu": 3200, "memory": 6871947674}),
]


@pytest.mark.parametrize("raw, factors, want", [pytest.param(*c[1:], id=c[0]) for c in ESTIMATE])
def test_default_estimator_estimate_pod(raw, factors, want):
    assert estimate_pod(Pod(raw), {**DEFAULT_SCALING_FACTORS, **(factors or {})}) == want


def test_estimate_reads_the_spec_of_a_pod_resized_in_place():
    """The estimator reads PodRequestsAndLimits, blind to status: a bound pod whose containers
    report larger resized requests is estimated from its spec, one container or two."""
    for names in (["a"], ["a", "b"]):
        raw = pod("p", node_name="n", containers=[
            container(name, requests={"cpu": "2", "memory": "4Gi"}, limits={"cpu": "2", "memory": "4Gi"})
            for name in names])
        raw["status"]["containerStatuses"] = [
            {"name": name, "resources": {"requests": {"cpu": "6", "memory": "4Gi"}}} for name in names]
        resized = Pod(raw)
        assert resized.requests["cpu"] == 6000 * len(names)  # what NodeResourcesFit counts
        assert estimate_pod(resized, DEFAULT_SCALING_FACTORS)["cpu"] == 1700 * len(names)


def test_custom_scaling_factors_annotation_needs_allow_customize_estimation():
    raw = pod("p", requests={"cpu": "4", "memory": "8Gi"}, limits={"cpu": "4", "memory": "8Gi"},
              annotations={"scheduling.koordinator.sh/load-estimated-scaling-factors": '{"cpu": 50}'})
    assert estimate_pod(Pod(raw), DEFAULT_SCALING_FACTORS)["cpu"] == 3400
    assert estimate_pod(Pod(raw), DEFAULT_SCALING_FACTORS, allow_customize=True) == {"cpu": 2000, "memory": 6012954214}


@pytest.mark.parametrize("allocatable, annotation, want", [
    pytest.param({"cpu": "32"}, None, {"cpu": 32000}, id="estimate empty node"),
    pytest.param({"cpu": "32", "memory": "42Gi"}, '{"cpu":28,"memory":"32Gi"}', {"cpu": 28000, "memory": 32 * GI},
                 id="estimate node with original allocatable"),
    pytest.param({"cpu": "32", "memory": "42Gi"}, '{"cpu":32,"memory":"42Gi"}', {"cpu": 32000, "memory": 42 * GI},
                 id="estimate node with original allocatable and sames"),
])
def test_default_estimator_estimate_node(allocatable, annotation, want):
    raw = node("n", annotations={"node.koordinator.sh/raw-allocatable": annotation} if annotation else None)
    raw["status"]["allocatable"] = dict(allocatable)
    assert node_allocatable(Node(raw)) == want


# -- TestPodAssignCache_OnAdd (pod_assign_cache_test.go) ------------------------------------------------------

@pytest.mark.parametrize("raw, node_delta, prod_delta", [
    pytest.param(pod("test"), None, None, id="add pending pod"),
    pytest.param(pod("test", node_name="test-node", phase="Failed"), None, None, id="add terminated pod"),
    pytest.param(pod("test", node_name="test-node", phase="Running"),
                 (DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST), (0, 0),
                 id="add scheduled running pod without resources"),
    pytest.param(pod("test", node_name="test-node", requests={"cpu": "1", "memory": "4Gi"}),
                 (1000, 4 * GI), (1000, 4 * GI), id="add prod pod"),
    pytest.param(pod("test", node_name="test-node", spec={"priority": 7000},
                     requests={"kubernetes.io/mid-cpu": "1k", "kubernetes.io/mid-memory": "4Gi"}),
                 (1000, 4 * GI), (0, 0), id="add non prod pod"),
])
def test_pod_assign_cache_on_add(raw, node_delta, prod_delta):
    metric = {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric", "metadata": {"name": "test-node"}}
    plugin = plugin_for([metric], {"estimatedScalingFactors": {"cpu": 100, "memory": 100}})
    t = plugin.table(cluster([node("test-node")], [raw]))
    want = np.array(node_delta or (0, 0))
    assert t.node_delta[0].tolist() == want.tolist()
    assert t.node_estimated[0].tolist() == want.tolist()
    assert t.prod_delta[0].tolist() == list(prod_delta or (0, 0))


# -- TestValidateLoadAwareSchedulingArgs (validation_pluginargs_test.go) ---------------------------------------

@pytest.mark.parametrize("args, ok", [
    pytest.param({}, True, id="empty args"),
    pytest.param({"nodeMetricExpirationSeconds": 180}, True, id="valid nodeMetricExpirationSeconds"),
    pytest.param({"nodeMetricExpirationSeconds": 0}, False, id="zero nodeMetricExpirationSeconds"),
    pytest.param({"nodeMetricExpirationSeconds": -1}, False, id="negative nodeMetricExpirationSeconds"),
    pytest.param({"resourceWeights": {"cpu": 1, "memory": 1}, "estimatedScalingFactors": {"cpu": 85, "memory": 70}},
                 True, id="valid resource weights"),
    pytest.param({"resourceWeights": {"cpu": 0}, "estimatedScalingFactors": {"cpu": 85}}, False,
                 id="resource weight zero"),
    pytest.param({"resourceWeights": {"cpu": 101}, "estimatedScalingFactors": {"cpu": 85}}, False,
                 id="resource weight exceeds 100"),
    pytest.param({"dominantResourceWeight": -1}, False, id="dominantResourceWeight negative"),
    pytest.param({"dominantResourceWeight": 101}, False, id="dominantResourceWeight exceeds 100"),
    pytest.param({"dominantResourceWeight": 100}, True, id="valid dominantResourceWeight boundary"),
    pytest.param({"usageThresholds": {"cpu": -1}}, False, id="usageThreshold negative"),
    pytest.param({"usageThresholds": {"cpu": 101}}, False, id="usageThreshold exceeds 100"),
    pytest.param({"estimatedScalingFactors": {"cpu": 0}}, False, id="estimatedScalingFactor zero"),
    pytest.param({"estimatedScalingFactors": {"cpu": 101}}, False, id="estimatedScalingFactor exceeds 100"),
    pytest.param({"aggregated": {"usageAggregationType": "p95", "usageAggregatedDuration": "1m",
                                 "scoreAggregationType": "p90", "scoreAggregatedDuration": "1m"}}, True,
                 id="valid aggregated args"),
    pytest.param({"aggregated": {"usageAggregationType": "invalid"}}, False, id="invalid aggregation type"),
    pytest.param({"aggregated": {"usageAggregatedDuration": "-1m"}}, False, id="negative aggregated duration"),
])
def test_validate_args(args, ok):
    if ok:
        parse_args(args)
    else:
        with pytest.raises(InputError):
            parse_args(args)


# The bounds the validation above checks, at their edges, and the field each error names (kplan's
# "LoadAwareScheduling args: <field>: ..." line, which must say which field is wrong).
@pytest.mark.parametrize("args", [
    {"nodeMetricExpirationSeconds": 1}, {"resourceWeights": {"cpu": 1, "memory": 100}},
    {"usageThresholds": {"cpu": 0, "memory": 100}}, {"prodUsageThresholds": {"cpu": 0, "memory": 100}},
    {"estimatedScalingFactors": {"cpu": 1, "memory": 100}}, {"dominantResourceWeight": 0},
    {"aggregated": {"usageThresholds": {"cpu": 0, "memory": 100}, "usageAggregationType": "avg"}},
    {"estimatedSecondsAfterPodScheduled": 0, "estimatedSecondsAfterInitialized": 30},
    {"estimator": "default"}, {"supportedResources": ["nvidia.com/gpu"]},
], ids=lambda a: ",".join(a))
def test_args_at_the_bounds_are_valid(args):
    parse_args(args)


INVALID_ARGS = [
    ({"nodeMetricExpirationSeconds": "3m"}, "nodeMetricExpirationSeconds: must be an integer"),
    ({"dominantResourceWeight": 101}, "dominantResourceWeight: Invalid value: 101"),
    ({"resourceWeights": {"cpu": 101}}, r"resourceWeights\[cpu\]: Invalid value: 101"),
    ({"resourceWeights": [1]}, "resourceWeights: must be a map"),
    ({"usageThresholds": {"memory": 101}}, r"usageThresholds\[memory\]: Invalid value: 101"),
    ({"prodUsageThresholds": {"cpu": -1}}, r"prodUsageThresholds\[cpu\]: Invalid value: -1"),
    ({"estimatedScalingFactors": {"cpu": 101}}, r"estimatedScalingFactors\[cpu\]: Invalid value: 101"),
    ({"resourceWeights": {"nvidia.com/gpu": 1}}, r"estimatedScalingFactors\[nvidia.com/gpu\]: Required value"),
    ({"estimator": "custom"}, "estimator: Unsupported value: 'custom'"),
    ({"estimatedSecondsAfterPodScheduled": "1m"}, "estimatedSecondsAfterPodScheduled: must be an integer"),
    ({"estimatedSecondsAfterInitialized": 1.5}, "estimatedSecondsAfterInitialized: must be an integer"),
    ({"aggregated": []}, "aggregated: must be a mapping"),
    ({"aggregated": {"usageThreshold": {}}}, "aggregated: unknown field.s. usageThreshold; known: usageThresholds"),
    ({"aggregated": {"usageThresholds": {"cpu": 101}}}, r"aggregated.usageThresholds\[cpu\]: Invalid value: 101"),
    ({"aggregated": {"usageAggregationType": "p42"}}, "aggregated.usageAggregationType: Unsupported value: 'p42'"),
    ({"aggregated": {"scoreAggregationType": "p42"}}, "aggregated.scoreAggregationType: Unsupported value: 'p42'"),
    ({"aggregated": {"usageAggregatedDuration": "-1m"}}, "aggregated.usageAggregatedDuration: Invalid value"),
    ({"aggregated": {"scoreAggregatedDuration": "soon"}}, "aggregated.scoreAggregatedDuration: "),
    ({"supportedResources": "gpu"}, "supportedResources: must be a list"),
    ({"filterExpiredNodeMetrics": "yes"}, "filterExpiredNodeMetrics: must be true or false"),
    ({"enableScheduleWhenNodeMetricsExpired": 1}, "enableScheduleWhenNodeMetricsExpired: must be true or false"),
    ({"prodUsageIncludeSys": "no"}, "prodUsageIncludeSys: must be true or false"),
    ({"scoreAccordingProdUsage": None}, "scoreAccordingProdUsage: must be true or false"),
    ({"allowCustomizeEstimation": "no"}, "allowCustomizeEstimation: must be true or false"),
]


@pytest.mark.parametrize("args, field", INVALID_ARGS,
                         ids=[re.sub(r"[^\w.]+", "-", field.split(":")[0]).strip("-") for _, field in INVALID_ARGS])
def test_invalid_args_name_their_field(args, field):
    with pytest.raises(InputError, match="^LoadAwareScheduling args: " + field):
        parse_args(args)


def test_args_defaults_follow_v1beta3():
    a = parse_args(None)
    assert (a.filter_expired, a.expiration_seconds, a.schedule_when_expired) == (True, 180, False)
    assert a.resource_weights == {"cpu": 1, "memory": 1} and a.dominant_weight == 0
    assert a.usage_thresholds == {"cpu": 65, "memory": 95}
    assert a.scaling_factors == {"cpu": 85, "memory": 70}
    assert parse_args({"usageThresholds": {"memory": 0}}).usage_thresholds == {"memory": 0}
    assert parse_args({"dominantResourceWeight": 1}).resource_weights == {}
    with pytest.raises(InputError, match="unknown field"):
        parse_args({"usageThreshold": {}})


# -- kplan's incremental cache: Reserve adds the placed pod, the rows follow the node table ------------

def test_reserve_adds_the_placed_pods_estimate_and_rows_follow_forget():
    c = cluster([big_node()])
    plugin = plugin_for([node_metric(usage=LOADED)])
    placed = Pod(incoming("placed-1"))
    before = run_score(plugin, c, Pod(incoming()))
    assert before == 72  # "score load node"
    plugin.reserve(CycleState(), placed, c, 0)
    c.assume(placed, 0)
    assert run_score(plugin, c, Pod(incoming())) == 63  # as "score load node with just assigned pod"
    c.forget(placed, 0)
    assert run_score(plugin, c, Pod(incoming())) == 72
    plugin.reserve(CycleState(), placed, c, 0)  # reserved but never assumed: the table wins
    assert run_score(plugin, c, Pod(incoming())) == 72


def test_unreserve_takes_the_reserved_estimate_off_again():
    # podAssignCache.unAssign: a pod reserved and then unreserved (never assumed) leaves no trace, and
    # its estimate is taken off once (a second subtraction would score the node as idler than it is).
    c = cluster([big_node()])
    plugin = plugin_for([node_metric(usage=LOADED)])
    placed = Pod(incoming("placed-1"))
    assert run_score(plugin, c, Pod(incoming())) == 72
    table = plugin.table(c)
    rows = [m.copy() for m in (table.node_delta, table.node_estimated, table.prod_usage, table.prod_delta)]
    plugin.reserve(CycleState(), placed, c, 0)
    plugin.unreserve(CycleState(), placed, c, 0)
    after = (table.node_delta, table.node_estimated, table.prod_usage, table.prod_delta)
    assert all(np.array_equal(a, b) for a, b in zip(rows, after))
    assert run_score(plugin, c, Pod(incoming())) == 72


# -- --explain: the numbers behind each node's verdict (kplan's, from the filter's own inputs) --------

def explain(plugin, c, p, i=0):
    state = CycleState()
    plugin.pre_filter(state, p, c)
    return plugin.filter(state, p, c).explain(i)


def test_explain_gives_each_resources_usage_with_the_pod_against_its_threshold():
    # 60 cpus used + the empty pod's 250m estimate of 96 = 62.76 %, rounded 63; 256Gi + 200Mi of 512Gi = 50.04 %.
    plugin = plugin_for([node_metric(update=-30, usage={"cpu": "60", "memory": "256Gi"})])
    assert explain(plugin, cluster([big_node()]), Pod(pod("empty"))) == [
        "NodeMetric updated 30s ago (expires after 180s)",
        "cpu: usage of existing pods 60 + pod 250m of 96 = 63% (threshold 65%)",
        "memory: usage of existing pods 256Gi + pod 200Mi of 512Gi = 50% (threshold 95%)"]


def test_explain_says_why_a_node_is_not_filtered_by_load():
    metric = node_metric(update=-30, usage={"cpu": "60", "memory": "256Gi"})
    c = cluster([big_node()])
    assert explain(plugin_for([]), c, Pod(pod("empty"))) == ["no NodeMetric for this node: not filtered by load"]
    assert explain(plugin_for([metric], {"usageThresholds": {"cpu": 0, "memory": 0}}), c, Pod(pod("empty"))) == [
        "NodeMetric updated 30s ago (expires after 180s)", "no usage thresholds apply: not filtered"]
    stale = node_metric(update=-200, usage={"cpu": "60", "memory": "256Gi"})
    assert explain(plugin_for([stale]), c, Pod(pod("empty"))) == ["NodeMetric updated 200s ago (expires after 180s)"]
    assert explain(plugin_for([node_metric(update=None, info=False)]), c, Pod(pod("empty"))) == [
        "NodeMetric updated never (expires after 180s)"]


def test_explain_names_prod_and_aggregated_usage():
    c = cluster([big_node()], [prod_pod("prod-pod-1", "test-node-1"), prod_pod("prod-pod-2", "test-node-1")])
    prod = plugin_for([node_metric(update=-30, usage=HIGH, pods=PROD_PODS_METRIC)],
                      {"usageThresholds": {"cpu": 100, "memory": 100}, "prodUsageThresholds": {"cpu": 50}})
    # The prod pods' reported 63 cpus + the incoming prod pod's 250m of 96 = 65.89 %, rounded 66.
    assert explain(prod, c, Pod(prod_pod("prod-pod-3")))[1] == (
        "cpu: prod usage of existing pods 63 + pod 250m of 96 = 66% (threshold 50%)")
    agg = plugin_for([node_metric(update=-30, usage={"cpu": "30", "memory": "100Gi"},
                                  aggregated={"5m0s": {"p95": {"cpu": "70", "memory": "256Gi"}}})],
                     {"aggregated": {"usageThresholds": {"cpu": 60}, "usageAggregationType": "p95",
                                     "usageAggregatedDuration": "5m"}})
    # The p95 of 70 cpus + 250m of 96 = 73.18 %, rounded 73; memory has no aggregated threshold.
    assert explain(agg, cluster([big_node()]), Pod(pod("empty")))[1:] == [
        "cpu: aggregated usage of existing pods 70 + pod 250m of 96 = 73% (threshold 60%)"]


# -- GetPodPriorityClassWithDefault (koordinator apis/extension): which class a pod's load counts as ------

def labelled(labels=None, priority=None, requests=None):
    spec = {"priority": priority} if priority is not None else None
    return Pod(pod("p", labels=labels, requests=requests, spec=spec))


@pytest.mark.parametrize("p, want", [
    (labelled({"koordinator.sh/priority-class": "koord-mid"}, 9999, {"cpu": "1"}), "koord-mid"),  # the label first
    (labelled({"koordinator.sh/priority-class": "koord-other"}, 9500), "koord-prod"),  # not a class: the priority
    (labelled(priority=9000), "koord-prod"), (labelled(priority=7999), "koord-mid"),
    (labelled(priority=5000), "koord-batch"), (labelled(priority=3999), "koord-free"),
    (labelled({"koordinator.sh/qosClass": "LSE"}, 8000), "koord-prod"),  # between the bands: the QoS class
    (labelled({"koordinator.sh/qosClass": "LSR"}), "koord-prod"),
    (labelled({"koordinator.sh/qosClass": "LS"}), "koord-prod"),
    (labelled({"koordinator.sh/qosClass": "SYSTEM"}), "koord-prod"),
    (labelled({"koordinator.sh/qosClass": "BE"}), "koord-batch"),
    (labelled(), "koord-batch"),  # kube's BestEffort: BE
    (labelled(requests={"cpu": "1"}), "koord-prod"),  # Burstable: LS
], ids=["label", "unknown label", "prod band", "mid band", "batch band", "free band", "LSE", "LSR", "LS", "SYSTEM",
        "BE", "BestEffort", "Burstable"])
def test_priority_class_with_default(p, want):
    assert priority_class(p) == want
