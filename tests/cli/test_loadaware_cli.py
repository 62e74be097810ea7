"""The load-aware scheduling seed stories through `kplan place --config samples/loadaware/... --now`.

Story 1: a hot node is filtered. Story 3: a cold node that just received pods is estimated, not
seen as empty. Story 4: a node whose NodeMetric stopped updating is filtered. Scores are the
plugin's integer arithmetic worked by hand (e.g. warm-1: cpu (8000-2850)*100/8000 = 64, memory
(32Gi-9.4Gi)*100/32Gi = 70, (64+70)/2 = 67).
"""
import json
from functools import partial

from run_kplan import run_kplan

CLUSTER = "samples/loadaware/cluster.yaml"
CONFIG = "samples/loadaware/scheduler-config.yaml"
NOW = "2026-05-01T12:00:00Z"
LA = "LoadAwareScheduling"


kplan = partial(run_kplan, columns=120)


def place(pod_file, *extra, now=NOW):
    code, out, err = kplan("place", pod_file, "-f", CLUSTER, "--config", CONFIG, "--now", now, "-o", "json", *extra)
    assert code in (0, 1), err
    return code, json.loads(out)["placements"]


def by_name(placement):
    return {n["name"]: n for n in placement["nodes"]}


def test_hot_and_stale_nodes_are_filtered_and_the_least_loaded_node_wins():
    code, (p,) = place("samples/loadaware/pod-api.yaml")
    assert code == 0 and p["node"] == "warm-1"
    nodes = by_name(p)
    assert (nodes["hot-1"]["plugin"], nodes["hot-1"]["reasons"]) == (LA, ["node(s) cpu usage exceed threshold"])
    assert (nodes["stale-1"]["plugin"], nodes["stale-1"]["reasons"]) == (LA, ["node(s) nodeMetric expired"])
    assert nodes["warm-1"]["scores"][LA] == 67
    # cold-1 measures 500m but its four just-scheduled pods count 850m each: cpu 4750m -> 40, memory -> 65.
    assert nodes["cold-1"]["scores"][LA] == 52


def test_cold_node_that_just_received_pods_is_estimated_not_empty():
    code, (p,) = place("samples/loadaware/pod-worker.yaml", "--explain", "cold-1")
    assert code == 0 and p["node"] == "warm-1"
    cold = by_name(p)["cold-1"]
    assert (cold["plugin"], cold["reasons"]) == (LA, ["node(s) cpu usage exceed threshold"])
    (step,) = [s for s in p["explain"][0]["steps"] if s["plugin"] == LA]
    assert "cpu: usage of existing pods 3900m + pod 1700m of 8 = 70% (threshold 65%)" in step["details"]
    # Memory in readable units: the metric's 4Gi + four pods at 70% of their 2Gi limit (5.6Gi); the pod 1.4Gi.
    assert "memory: usage of existing pods 9.6Gi + pod 1.4Gi of 32Gi = 34% (threshold 95%)" in step["details"]


def test_placed_replicas_add_their_estimate_until_no_node_is_below_the_threshold():
    code, placements = place("samples/loadaware/pods-burst.yaml")
    assert code == 1
    assert [p["node"] for p in placements] == ["warm-1", "warm-1", "cold-1", "warm-1", None]
    assert [by_name(p)["warm-1"].get("scores", {}).get(LA) for p in placements[:4]] == [67, 59, 52, 52]
    assert placements[4]["message"].startswith("0/4 nodes are available: 1 node(s) nodeMetric expired, "
                                               "3 node(s) cpu usage exceed threshold.")


def test_same_now_gives_the_same_answer_and_a_later_now_expires_the_metrics():
    args = ("place", "samples/loadaware/pods-burst.yaml", "-f", CLUSTER, "--config", CONFIG, "--now", NOW, "-o", "json")
    assert kplan(*args) == kplan(*args)
    code, (p,) = place("samples/loadaware/pod-api.yaml", now="2026-05-01T12:05:00+00:00")
    assert code == 1
    assert p["message"].startswith("0/4 nodes are available: 4 node(s) nodeMetric expired.")


def test_load_aware_scheduling_is_off_in_the_default_profile():
    code, out, _ = kplan("place", "samples/loadaware/pod-api.yaml", "-f", CLUSTER, "--now", NOW, "-o", "json")
    (p,) = json.loads(out)["placements"]
    assert code == 0 and LA not in p["weights"] and all(n["feasible"] for n in p["nodes"])


def test_bad_now_is_an_input_error():
    code, out, err = kplan("place", "samples/loadaware/pod-api.yaml", "-f", CLUSTER, "--now", "yesterday")
    assert code == 2 and out == ""
    assert "--now: 'yesterday' is not an RFC 3339 time" in err and "Traceback" not in err


def test_bad_node_metrics_are_reported_per_node_and_not_fatal(tmp_path):
    bad = tmp_path / "metrics.yaml"
    bad.write_text("""
apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeMetric
metadata: {name: warm-1}
status:
  updateTime: "last tuesday"
  nodeMetric: {nodeUsage: {resources: {cpu: "2", memory: 8Gi}}}
---
apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeMetric
metadata: {name: cold-1}
status: {updateTime: "2026-05-01T11:59:40Z"}
""")
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text("\n---\n".join(
        f"apiVersion: v1\nkind: Node\nmetadata: {{name: {n}}}\n"
        f"status: {{allocatable: {{cpu: '8', memory: 32Gi, pods: '110'}}}}" for n in ("warm-1", "cold-1")))
    code, out, err = kplan("place", "samples/loadaware/pod-api.yaml", "-f", str(nodes), "-f", str(bad),
                           "--config", CONFIG, "--now", NOW, "-o", "json")
    assert code == 0, err
    assert "NodeMetric warm-1: status.updateTime: 'last tuesday' is not an RFC 3339 time" in err
    assert "NodeMetric cold-1: no status.nodeMetric" in err
    (p,) = json.loads(out)["placements"]
    nodes = by_name(p)
    assert nodes["warm-1"]["reasons"] == ["node(s) nodeMetric expired"]
    assert p["node"] == "cold-1" and nodes["cold-1"]["scores"][LA] == 0


def test_nodes_usage_flags_stale_metrics_and_rejections():
    code, out, err = kplan("nodes", "-f", CLUSTER, "--config", CONFIG, "--usage", "--now", NOW,
                           "--pod", "samples/loadaware/pod-worker.yaml", "-o", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["kind"] == "NodeUsageReport"
    nodes = {n["name"]: n for n in report["nodes"]}
    assert nodes["stale-1"]["stale"] is True and nodes["warm-1"]["stale"] is False
    assert nodes["stale-1"]["metricAge"] == 600
    assert nodes["hot-1"]["rejection"] == "node(s) cpu usage exceed threshold"
    # cold-1 measures 6 % CPU, but its four just-scheduled pods are estimated: with the pod it reaches 70 %.
    assert nodes["cold-1"]["usagePercentIfPlaced"]["cpu"] == 70
    assert nodes["warm-1"]["rejection"] in (None, "")


def test_nodes_pod_without_usage_is_a_usage_error():
    code, _, err = kplan("nodes", "-f", CLUSTER, "--pod", "samples/loadaware/pod-worker.yaml")
    assert code == 2 and "--pod goes with --usage" in err
