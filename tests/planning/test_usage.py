"""kplan/planning/usage.py and kplan/report/usage.py: node load as LoadAwareScheduling sees it, on samples/loadaware."""
from datetime import datetime, timezone
from pathlib import Path

import pytest

from kplan.cluster.state import ClusterState
from kplan.cli.common import load_profiles
from kplan.planning.place import load_pods
from kplan.planning.usage import load_aware_args, node_usage
from kplan.report.usage import node_usage_report
from kplan.sources.snapshot import load_snapshot

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples" / "loadaware"
NOW = datetime(2026, 5, 1, 12, 0, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def loaded():
    snapshot = load_snapshot([str(SAMPLES / "cluster.yaml")])
    return snapshot, ClusterState(snapshot.nodes, snapshot.pods)


def usage_report(*args, **kwargs):
    return node_usage_report(node_usage(*args, **kwargs))


def rows(report):
    return {r["name"]: r for r in report["nodes"]}


def test_usage_without_a_pod(loaded):
    snapshot, cluster = loaded
    args = load_aware_args(load_profiles(str(SAMPLES / "scheduler-config.yaml")))
    report = usage_report(snapshot, cluster, NOW, args)
    assert report["kind"] == "NodeUsageReport" and report["pod"] is None
    assert report["nodeMetricExpirationSeconds"] == 180
    r = rows(report)
    assert r["stale-1"]["stale"] and r["stale-1"]["metricAge"] == 600.0
    assert not r["cold-1"]["stale"] and r["cold-1"]["metricAge"] == 20.0
    # cold-1 measures 500m; its four just-scheduled pods are estimated at 850m each.
    assert r["cold-1"]["measured"]["cpu"] == "500m" and r["cold-1"]["estimated"]["cpu"] == "3900m"
    assert r["cold-1"]["usagePercent"] == {"cpu": 49, "memory": 30}
    # warm-1's pods are old and reported: nothing is added to what the metric measures.
    assert r["warm-1"]["estimated"] == r["warm-1"]["measured"] == {"cpu": "2", "memory": "8Gi"}
    assert r["hot-1"]["thresholds"] == {"cpu": 65, "memory": 95} and r["hot-1"]["thresholdKind"] == "usage"
    assert r["hot-1"]["allocatable"] == {"cpu": "8", "memory": "32Gi"}
    assert "rejection" not in r["hot-1"]


def test_usage_with_the_pod_that_would_land(loaded):
    snapshot, cluster = loaded
    (pod,) = load_pods([str(SAMPLES / "pod-worker.yaml")])
    r = rows(usage_report(snapshot, cluster, NOW, None, pod))
    assert r["cold-1"]["podEstimate"]["cpu"] == "1700m"
    assert r["cold-1"]["estimatedIfPlaced"]["cpu"] == "5600m"
    assert r["cold-1"]["usagePercentIfPlaced"]["cpu"] == 70
    assert r["cold-1"]["rejection"] == "node(s) cpu usage exceed threshold"
    assert r["stale-1"]["rejection"] == "node(s) nodeMetric expired"
    assert r["warm-1"]["rejection"] is None and r["warm-1"]["usagePercentIfPlaced"]["cpu"] == 46


def test_node_without_metric_and_later_now(loaded):
    snapshot, cluster = loaded
    late = datetime(2026, 5, 1, 12, 10, 0, tzinfo=timezone.utc)
    r = rows(usage_report(snapshot, cluster, late, nodes=["warm-1"]))
    assert list(r) == ["warm-1"] and r["warm-1"]["stale"] and r["warm-1"]["metricAge"] == 615.0
    bare = ClusterState(cluster.nodes, [])
    (row,) = usage_report(type(snapshot)(), bare, NOW, nodes=["hot-1"])["nodes"]
    assert row["metric"] is False and row["metricAge"] is None and row["measured"] is None and not row["stale"]


def test_render_node_usage_flags_stale_metrics_and_rejections(loaded):
    from rich.console import Console

    from kplan.report.table import render_node_usage
    snapshot, cluster = loaded
    (pod,) = load_pods([str(SAMPLES / "pod-worker.yaml")])
    console = Console(record=True, width=200, color_system=None)
    render_node_usage(usage_report(snapshot, cluster, NOW, None, pod), console)
    lines = {line.split()[0]: line for line in console.export_text().splitlines()[1:] if line.strip()}
    assert "600s (stale)" in lines["stale-1"] and "node(s) nodeMetric expired" in lines["stale-1"]
    assert "5.6 (70%)" in lines["cold-1"] and "node(s) cpu usage exceed threshold" in lines["cold-1"]
    assert lines["warm-1"].rstrip().endswith("fits")


def test_aggregated_thresholds_are_said_to_be_on_aggregated_usage():
    # koordinator's filterWithAggregation: with args.aggregated usageThresholds (p95 over 5m), a node
    # is held to them against its aggregated usage, and the row says so.
    from builders import node
    from kplan.sources.snapshot import Snapshot
    metric = {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric", "metadata": {"name": "n1"},
              "spec": {"metricCollectPolicy": {"reportIntervalSeconds": 60}},
              "status": {"updateTime": "2026-05-01T11:59:40Z", "nodeMetric": {
                  "nodeUsage": {"resources": {"cpu": "30", "memory": "100Gi"}},
                  "aggregatedNodeUsages": [{"duration": "5m0s",
                                            "usage": {"p95": {"resources": {"cpu": "70", "memory": "256Gi"}}}}]}}}
    s = Snapshot()
    for obj in (node("n1", cpu="96", memory="512Gi"), metric):
        s.add(obj, "test", 1)
    s = s.finish()
    args = {"aggregated": {"usageThresholds": {"cpu": 60}, "usageAggregationType": "p95",
                           "usageAggregatedDuration": "5m"}}
    (row,) = usage_report(s, ClusterState(s.nodes, s.pods), NOW, args)["nodes"]
    assert row["thresholdKind"] == "aggregated usage" and row["thresholds"] == {"cpu": 60}
